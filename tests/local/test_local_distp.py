"""Exact DistP profiles: randomized response's closed form, brute force over events, tupling
enumeration against the definition and against Monte Carlo (bounds derived from the math)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.local.distp import (
    TuplingMonteCarlo,
    bisect_epsilon,
    count_vectors,
    delta_profile,
    distp_epsilon,
    distp_profile,
    epsilon_for_delta,
    monte_carlo_epsilon,
    multisets,
    n_count_vectors,
    privacy_profile,
    rr_lift,
    rr_pure_epsilon,
    tupling_profile_exact,
)
from distprivacy.local.mechanisms import FiniteMechanism, RandomizedResponse, TuplingMechanism


def _pair(rng, n, alpha=1.0):
    return rng.dirichlet(np.full(n, alpha)), rng.dirichlet(np.full(n, alpha))


def _brute_delta(P, Q, eps):
    """sup over all events R of P(R) − e^ε Q(R) (2^n subsets)."""
    best = 0.0
    for mask in itertools.product([0, 1], repeat=P.size):
        m = np.array(mask, dtype=bool)
        best = max(best, P[m].sum() - math.exp(eps) * Q[m].sum())
    return best


def test_profile_matches_brute_force_over_events():
    rng = np.random.default_rng(1)
    for _ in range(5):
        P, Q = _pair(rng, 7, 0.5)
        Q[0] = 0.0  # an output with infinite likelihood ratio
        Q /= Q.sum()
        eps = np.array([0.0, 0.1, 0.5, 1.3, 3.0])
        got = delta_profile(P, Q, eps)
        want = [_brute_delta(P, Q, e) for e in eps]
        np.testing.assert_allclose(got, want, atol=1e-14)


def test_epsilon_for_delta_is_exact_and_agrees_with_bisection():
    rng = np.random.default_rng(2)
    for _ in range(10):
        P, Q = _pair(rng, 12)
        for d in (0.0, 1e-3, 0.05):
            e = epsilon_for_delta(P, Q, d)
            # δ(ε) = δ exactly at the answer (or 0 already reached), and not below it
            assert privacy_profile(P, Q, [e])[0] <= d + 1e-12
            if e > 1e-9:
                assert privacy_profile(P, Q, [e - 1e-7])[0] > d
            b = bisect_epsilon(lambda x, P=P, Q=Q: privacy_profile(P, Q, [x])[0], d)
            assert b == pytest.approx(e, abs=1e-8)


def test_infinite_epsilon_when_support_mass_exceeds_delta():
    P = np.array([0.5, 0.5, 0.0])
    Q = np.array([0.0, 0.5, 0.5])
    assert math.isinf(epsilon_for_delta(P, Q, 0.1))
    assert epsilon_for_delta(P, Q, 0.5) == 0.0


def test_randomized_response_exact_matches_closed_form():
    rng = np.random.default_rng(3)
    for n in (2, 5, 30):
        lam, lam2 = _pair(rng, n)
        for eps in (0.1, 1.0, 4.0):
            rr = RandomizedResponse(n, eps)
            # lifting: matrix product = closed form (1 + (e^ε − 1)λ[y])/(n − 1 + e^ε)
            closed = (1 + math.expm1(eps) * lam) / (n - 1 + math.exp(eps))
            np.testing.assert_allclose(lam @ rr.matrix_, closed, rtol=1e-13)
            np.testing.assert_allclose(rr_lift(lam, eps), closed, rtol=1e-13)
            # pure level: exact enumeration on the generic matrix = the notes' closed form
            generic = FiniteMechanism(rr.matrix_)
            exact = distp_epsilon(generic, lam, lam2, 0.0).epsilon
            assert exact == pytest.approx(rr_pure_epsilon(lam, lam2, eps), rel=1e-12)
            assert distp_epsilon(rr, lam, lam2, 0.0).method == "closed-form"
            # whole profile: closed-form path = matrix path
            e = np.linspace(0, exact, 7)
            np.testing.assert_allclose(
                distp_profile(rr, lam, lam2, e).delta,
                distp_profile(generic, lam, lam2, e).delta,
                atol=1e-14,
            )


def test_wrong_keep_probability_is_caught():
    """A deliberately wrong RR (ε/2 in the keep probability) does not match the closed form."""
    rng = np.random.default_rng(4)
    lam, lam2 = _pair(rng, 6)
    wrong = FiniteMechanism(RandomizedResponse(6, 0.5).matrix_)
    got = distp_epsilon(wrong, lam, lam2, 0.0).epsilon
    assert abs(got - rr_pure_epsilon(lam, lam2, 1.0)) > 1e-3


def test_enumeration_helpers():
    assert multisets(3, 4).shape == (math.comb(6, 3), 3)
    c = count_vectors(4, 3)
    assert c.shape == (n_count_vectors(3, 3), 3)
    assert (c.sum(axis=1) == 4).all()
    assert len({tuple(r) for r in c}) == c.shape[0]


def _tupling_by_definition(r_lift, nu, k):
    """Output law of tupling over all ordered (k+1)-tuples, straight from the definition:
    Q[ȳ] = Σ_pos (1/(k+1)) A#λ[y_pos] Π_{j≠pos} ν[y_j]."""
    m = nu.size
    tuples = np.array(list(itertools.product(range(m), repeat=k + 1)))
    prob = np.zeros(len(tuples))
    for pos in range(k + 1):  # positions of the real entry
        others = np.delete(tuples, pos, axis=1)
        prob += r_lift[tuples[:, pos]] * np.prod(nu[others], axis=1) / (k + 1)
    return prob


def test_tupling_enumeration_matches_the_definition():
    rng = np.random.default_rng(5)
    lam, lam2 = _pair(rng, 3)
    base = RandomizedResponse(3, 1.5)
    nu = np.array([0.2, 0.3, 0.5])
    for k in (0, 1, 2, 3):
        mech = TuplingMechanism(base, k, nu=nu)
        P = _tupling_by_definition(base.lift(lam), nu, k)
        Q = _tupling_by_definition(base.lift(lam2), nu, k)
        assert P.sum() == pytest.approx(1.0)
        eps = np.array([0.0, 0.05, 0.2, 0.6])
        np.testing.assert_allclose(
            tupling_profile_exact(mech, lam, lam2, eps), privacy_profile(P, Q, eps), atol=1e-13
        )
        assert distp_epsilon(mech, lam, lam2, 0.01).epsilon == pytest.approx(
            epsilon_for_delta(P, Q, 0.01), abs=1e-10
        )


def test_tupling_k0_is_the_base_and_dummies_help():
    rng = np.random.default_rng(6)
    lam, lam2 = _pair(rng, 5)
    base = RandomizedResponse(5, 3.0)
    e0 = distp_epsilon(TuplingMechanism(base, 0), lam, lam2, 1e-3).epsilon
    assert e0 == pytest.approx(distp_epsilon(base, lam, lam2, 1e-3).epsilon, rel=1e-10)
    es = [distp_epsilon(TuplingMechanism(base, k), lam, lam2, 1e-3).epsilon for k in (1, 4, 8)]
    assert e0 > es[0] > es[1] > es[2]


@pytest.mark.parametrize("seed", [0, 1])
def test_monte_carlo_agrees_with_enumeration_within_its_bound(seed):
    """The empirical-Bernstein interval (simultaneous, α = 1e-6) contains the exact profile;
    the bound is derived from the math (summands in [0, R_ε]), not tuned."""
    rng = np.random.default_rng(10 + seed)
    lam, lam2 = _pair(rng, 4)
    mech = TuplingMechanism(RandomizedResponse(4, 2.0), 4, nu=[0.1, 0.2, 0.3, 0.4])
    eps = np.array([0.0, 0.02, 0.05, 0.1, 0.2])
    exact = tupling_profile_exact(mech, lam, lam2, eps)
    mc = TuplingMonteCarlo(mech, lam, lam2, n_samples=200_000, random_state=seed).profile(
        eps, alpha=1e-6
    )
    assert (mc.delta_lower <= exact + 1e-15).all() and (exact <= mc.delta_upper + 1e-15).all()
    assert np.max(mc.delta_upper - mc.delta_lower) < 0.01  # and the interval is informative


def test_monte_carlo_catches_a_wrong_number_of_dummies():
    rng = np.random.default_rng(12)
    lam, lam2 = _pair(rng, 4)
    base = RandomizedResponse(4, 2.0)
    eps = np.array([0.02, 0.05])
    exact_k2 = tupling_profile_exact(TuplingMechanism(base, 2), lam, lam2, eps)
    mc_k6 = TuplingMonteCarlo(
        TuplingMechanism(base, 6), lam, lam2, n_samples=200_000, random_state=0
    )
    prof = mc_k6.profile(eps, alpha=1e-6)
    assert ((exact_k2 > prof.delta_upper) | (exact_k2 < prof.delta_lower)).any()


def test_certified_epsilon_bounds_the_exact_one():
    rng = np.random.default_rng(13)
    lam, lam2 = _pair(rng, 5)
    mech = TuplingMechanism(RandomizedResponse(5, 3.0), 5)
    exact = distp_epsilon(mech, lam, lam2, 1e-2, method="enumeration").epsilon
    res = monte_carlo_epsilon(mech, lam, lam2, 1e-2, n_samples=100_000, random_state=3, alpha=1e-3)
    assert res.epsilon_upper >= exact
    assert res.epsilon == pytest.approx(exact, rel=0.05)
    assert res.guaranteed == res.epsilon_upper
    again = distp_epsilon(
        mech, lam, lam2, 1e-2, method="monte-carlo", n_samples=100_000, random_state=3
    )
    assert again.epsilon == res.epsilon  # reproducible bit for bit


def test_affine_reuse_equals_fresh_sampling_for_rr():
    rng = np.random.default_rng(14)
    m = 6
    lam, lam2 = _pair(rng, m)
    ident = TuplingMonteCarlo(
        TuplingMechanism(FiniteMechanism(np.eye(m)), 7), lam, lam2, n_samples=5000, random_state=9
    )
    rr = RandomizedResponse(m, 2.5)
    direct = TuplingMonteCarlo(TuplingMechanism(rr, 7), lam, lam2, n_samples=5000, random_state=9)
    other = (1 - rr.keep_probability) / (m - 1)
    reused = ident.affine(rr.keep_probability - other, m * other)
    np.testing.assert_allclose(reused.a_, direct.a_, rtol=1e-12)
    np.testing.assert_allclose(reused.b_, direct.b_, rtol=1e-12)


def test_auto_method_switches_to_monte_carlo_and_needs_a_seed():
    rng = np.random.default_rng(15)
    lam, lam2 = _pair(rng, 50)
    mech = TuplingMechanism(RandomizedResponse(50, 3.0), 30)
    with pytest.raises(DistPrivacyError, match="needs a seed"):
        distp_profile(mech, lam, lam2, [0.1])
    prof = distp_profile(mech, lam, lam2, [0.1], n_samples=2000, random_state=0)
    assert prof.method == "monte-carlo" and prof.delta_upper is not None
    with pytest.raises(DistPrivacyError, match="count vectors"):
        distp_profile(mech, lam, lam2, [0.1], method="enumeration")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: delta_profile([0.5, 0.6], [0.5, 0.5], [0.1]), "sums to 1.1"),
        (lambda: delta_profile([0.5, 0.5], [0.2, 0.3, 0.5], [0.1]), "has 3 entries"),
        (lambda: delta_profile([0.5, 0.5], [0.5, 0.5], [-0.1]), "≥ 0"),
        (lambda: epsilon_for_delta([0.5, 0.5], [0.5, 0.5], 1.5), "delta must be in"),
        (lambda: rr_pure_epsilon([0.5, 0.5], [0.5, 0.5], 0.0), "positive"),
        (lambda: rr_pure_epsilon([0.5, 0.5], [0.5, 0.5], -1.0), "positive"),
        (lambda: distp_profile("rr", [0.5, 0.5], [0.5, 0.5], [0.1]), "finite mechanism"),
    ],
)
def test_bad_inputs_give_one_line_errors(call, match):
    with pytest.raises(DistPrivacyError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_bayes_factor_reading_bounds_the_exact_tail():
    """P_λ[one output moves the odds by more than e^{2ε}] ≤ δ/(1 − e^{−ε}) at the exact
    (ε, δ) of random finite pairs, and the pure reading is e^ε."""
    from distprivacy.local.utility import bayes_factor_reading, bayes_factor_tail

    rng = np.random.default_rng(20)
    for _ in range(20):
        P, Q = _pair(rng, 10, 0.5)
        for d in (1e-3, 1e-2, 0.1):
            e = epsilon_for_delta(P, Q, d)
            reading = bayes_factor_reading(e, d)
            assert bayes_factor_tail(P, Q, reading["factor"]) <= reading["tail"] + 1e-12
            assert bayes_factor_tail(Q, P, reading["factor"]) <= reading["tail"] + 1e-12
        e0 = epsilon_for_delta(P, Q, 0.0)
        assert bayes_factor_reading(e0, 0.0)["max_factor"] == pytest.approx(math.exp(e0))
        assert bayes_factor_tail(P, Q, math.exp(e0) * (1 + 1e-9)) == 0.0
    with pytest.raises(DistPrivacyError, match="threshold must be > 0"):
        bayes_factor_tail(P, Q, 0.0)
