"""Theorem-based guarantees against exact profiles: DP ⇒ DistP, Laplace with ε·W∞, KL with
c·W1, the Hoeffding bound for tupling, composition and its counter-example, W∞ / W1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from distprivacy.distances import wasserstein_inf as winf_l1
from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.local.distp import (
    distp_epsilon,
    epsilon_for_delta,
    privacy_profile,
    tupling_profile_exact,
)
from distprivacy.local.domains import grid, line
from distprivacy.local.guarantees import (
    compose_independent,
    compose_same_input,
    coupling_within,
    domain_wasserstein_1,
    domain_wasserstein_inf,
    dp_distp_for_relation,
    dp_implies_distp,
    gaussian_local_dp,
    kl_distp,
    kl_divergence,
    kl_xdp_constant,
    laplace_distp,
    laplace_kl_1d,
    local_dp_delta,
    local_dp_epsilon,
    local_guarantee,
    post_process,
    tupling_hoeffding,
    xdp_epsilon,
)
from distprivacy.local.mechanisms import (
    FiniteMechanism,
    RandomizedResponse,
    SnappedGaussian,
    SnappedLaplace,
    TuplingMechanism,
)


def _sparse_pair(rng, n):
    """Random pair with random supports (so W∞ is not trivially the diameter)."""
    out = []
    for _ in range(2):
        w = rng.dirichlet(np.full(n, 0.7)) * (rng.random(n) < 0.5)
        w[rng.integers(n)] += 0.1
        out.append(w / w.sum())
    return out


def test_wasserstein_inf_matches_the_core_bottleneck_and_the_line():
    rng = np.random.default_rng(0)
    g = grid(4, metric="manhattan")
    for _ in range(5):
        a, b = rng.integers(0, 6, 16), rng.integers(0, 6, 16)
        a[0] += 1
        b[5] += 1
        want = winf_l1(g.points, g.points, x_weights=a, y_weights=b)
        assert domain_wasserstein_inf(a / a.sum(), b / b.sum(), g) == pytest.approx(want)
    L = line(12)
    for _ in range(5):
        p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
        # W∞ on the line: sup_t |F⁻¹(t) − G⁻¹(t)| over a fine grid of t
        t = np.linspace(1e-9, 1 - 1e-9, 200_001)
        Fi = np.searchsorted(np.cumsum(p), t)
        Gi = np.searchsorted(np.cumsum(q), t)
        assert domain_wasserstein_inf(p, q, L) == pytest.approx(np.max(np.abs(Fi - Gi)))
        assert domain_wasserstein_1(p, q, L) == pytest.approx(
            stats.wasserstein_distance(np.arange(12), np.arange(12), p, q), abs=1e-9
        )


@pytest.mark.parametrize("seed", range(4))
def test_laplace_winf_bound_holds_against_the_exact_profile(seed):
    rng = np.random.default_rng(seed)
    g = grid(4)
    lam, lam2 = _sparse_pair(rng, 16)
    W = domain_wasserstein_inf(lam, lam2, g)
    for eps in (0.3, 1.0, 2.0):
        mech = SnappedLaplace(g, eps)
        bound = laplace_distp(eps, lam, lam2, g)
        assert bound.epsilon == pytest.approx(eps * W) and bound.delta == 0
        P, Q = mech.lift(lam), mech.lift(lam2)
        assert epsilon_for_delta(P, Q, 0.0) <= bound.epsilon + 1e-9
        assert privacy_profile(P, Q, [bound.epsilon])[0] <= 1e-12
        # snapping is post-processing: the XDP level of the matrix is at most ε
        assert xdp_epsilon(mech, g.distances) <= eps + 1e-9


def test_a_too_large_laplace_epsilon_breaks_the_bound():
    """The check has teeth: the matrix of Laplace at 3ε violates the ε·W∞ guarantee."""
    rng = np.random.default_rng(7)
    g = grid(4)
    lam, lam2 = _sparse_pair(rng, 16)
    bound = laplace_distp(0.5, lam, lam2, g)
    wrong = SnappedLaplace(g, 1.5)
    assert epsilon_for_delta(wrong.lift(lam), wrong.lift(lam2), 0.0) > bound.epsilon


@pytest.mark.parametrize("seed", range(4))
def test_dp_implies_distp_on_random_instances(seed):
    rng = np.random.default_rng(100 + seed)
    n, m = 6, 5
    M = rng.dirichlet(np.full(m, 2.0), size=n)  # a random finite mechanism
    mech = FiniteMechanism(M)
    eps = np.array([0.0, 0.2, 0.5, 1.0])
    ldp = local_dp_delta(M, eps)
    pure = local_dp_epsilon(M)
    for _ in range(10):
        lam, lam2 = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        P, Q = mech.lift(lam), mech.lift(lam2)
        assert (privacy_profile(P, Q, eps) <= ldp + 1e-12).all()
        assert epsilon_for_delta(P, Q, 0.0) <= pure + 1e-12
    g = dp_implies_distp(pure)
    assert g.holds_for_every_input and g.delta == 0


def test_dp_on_a_relation_gives_distp_on_coupled_pairs():
    rng = np.random.default_rng(3)
    L = line(6)
    phi = L.distances <= 1  # adjacent points
    mech = SnappedLaplace(L, 0.8)
    # exact DP level of the mechanism on Φ only
    M = mech.matrix_
    eps_phi = max(
        float(np.max(np.log(M[i]) - np.log(M[j]))) for i, j in zip(*np.nonzero(phi), strict=True)
    )
    for _ in range(5):
        lam = rng.dirichlet(np.ones(6))
        lam2 = np.zeros(6)
        lam2[1:] += lam[:-1]  # each point moves one step right (the last one stays)
        lam2[-1] += lam[-1]
        assert coupling_within(lam, lam2, phi)
        gdp = dp_distp_for_relation(lam, lam2, phi, eps_phi)
        assert epsilon_for_delta(mech.lift(lam), mech.lift(lam2), 0.0) <= gdp.epsilon + 1e-9
    far = np.zeros(6)
    far[5] = 1.0
    near = np.zeros(6)
    near[0] = 1.0
    with pytest.raises(NotApplicableError, match="no coupling"):
        dp_distp_for_relation(near, far, phi, eps_phi)


def test_kl_bound_with_w1():
    rng = np.random.default_rng(4)
    g = grid(4)
    for eps in (0.3, 1.0):
        mech = SnappedLaplace(g, eps)
        c = kl_xdp_constant(mech, g.distances)
        for _ in range(3):
            lam, lam2 = _sparse_pair(rng, 16)
            bound = kl_distp(c, lam, lam2, g)
            assert kl_divergence(mech.lift(lam), mech.lift(lam2)) <= bound + 1e-12
    # 1-D Laplace closed form ≤ εΔ
    assert laplace_kl_1d(0.5, 2.0) == pytest.approx(1.0 + math.exp(-1.0) - 1.0)
    assert laplace_kl_1d(0.5, 2.0) <= 1.0


def test_gaussian_local_dp_bounds_exact_distp():
    rng = np.random.default_rng(5)
    g = grid(4)
    mech = SnappedGaussian(g, 1.5)
    guar = gaussian_local_dp(1.5, g.diameter, 2.0)
    assert guar.holds_for_every_input
    for _ in range(5):
        lam, lam2 = _sparse_pair(rng, 16)
        assert privacy_profile(mech.lift(lam), mech.lift(lam2), [2.0])[0] <= guar.delta + 1e-12


def test_tupling_hoeffding_bound_is_valid_where_not_vacuous():
    rng = np.random.default_rng(6)
    lam, lam2 = rng.dirichlet(np.ones(2)), rng.dirichlet(np.ones(2))
    base = RandomizedResponse(2, 1.0)
    for k in (200, 400):
        g = tupling_hoeffding(base.lift(lam), base.lift(lam2), k, 1e-3)
        assert math.isfinite(g.epsilon)
        exact = distp_epsilon(TuplingMechanism(base, k), lam, lam2, 1e-3).epsilon
        assert exact <= g.epsilon
    assert math.isinf(tupling_hoeffding(base.lift(lam), base.lift(lam2), 1, 1e-3).epsilon)


def test_the_counter_example_and_same_input_composition_refused():
    """Notes: X = {a, b, c, d}, A0 = 1[x ∈ {a, c}], A1 = 1[x ∈ {a, b}], λ = ½(a + d),
    λ′ = ½(b + c): each part is 0-DistP, together they reveal the distribution."""
    A0 = FiniteMechanism([[0, 1], [1, 0], [0, 1], [1, 0]])  # column 1 = "in {a, c}"
    A1 = FiniteMechanism([[0, 1], [0, 1], [1, 0], [1, 0]])  # column 1 = "in {a, b}"
    lam = np.array([0.5, 0, 0, 0.5])
    lam2 = np.array([0, 0.5, 0.5, 0])
    for A in (A0, A1):
        assert epsilon_for_delta(A.lift(lam), A.lift(lam2), 0.0) == 0.0
    joint = FiniteMechanism(np.einsum("xi,xj->xij", A0.matrix_, A1.matrix_).reshape(4, 4))
    P, Q = joint.lift(lam), joint.lift(lam2)
    assert privacy_profile(P, Q, [0.0, 5.0, 50.0]).tolist() == [1.0, 1.0, 1.0]
    g0 = local_guarantee(0.0, 0.0, "A0 exact")
    g1 = local_guarantee(0.0, 0.0, "A1 exact")
    with pytest.raises(DistPrivacyError, match="one of them must be local DP") as info:
        compose_same_input(g0, g1)
    assert "\n" not in str(info.value)


def test_same_input_composition_with_a_local_dp_side_holds():
    rng = np.random.default_rng(8)
    n = 5
    A0 = FiniteMechanism(rng.dirichlet(np.full(3, 0.5), size=n))
    A1 = RandomizedResponse(n, 0.7)
    joint = FiniteMechanism(np.einsum("xi,xj->xij", A0.matrix_, A1.matrix_).reshape(n, -1))
    for _ in range(5):
        lam, lam2 = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        d0 = 0.01
        e0 = epsilon_for_delta(A0.lift(lam), A0.lift(lam2), d0)
        comp = compose_same_input(local_guarantee(e0, d0, "A0"), dp_implies_distp(0.7))
        assert comp.epsilon == pytest.approx(e0 + 0.7)
        assert comp.delta == pytest.approx(math.exp(0.7) * d0)
        exact = privacy_profile(joint.lift(lam), joint.lift(lam2), [comp.epsilon])[0]
        assert exact <= comp.delta + 1e-12
        # either order
        assert compose_same_input(dp_implies_distp(0.7), local_guarantee(e0, d0, "A0")) == comp


def test_independent_composition_and_post_processing():
    rng = np.random.default_rng(9)
    A0, A1 = RandomizedResponse(3, 1.0), FiniteMechanism(rng.dirichlet(np.ones(4), size=3))
    lam0, lam0b = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    lam1, lam1b = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    g0 = local_guarantee(epsilon_for_delta(A0.lift(lam0), A0.lift(lam0b), 0.01), 0.01, "A0")
    g1 = local_guarantee(epsilon_for_delta(A1.lift(lam1), A1.lift(lam1b), 0.02), 0.02, "A1")
    comp = compose_independent(g0, g1)
    P = np.outer(A0.lift(lam0), A1.lift(lam1)).ravel()
    Q = np.outer(A0.lift(lam0b), A1.lift(lam1b)).ravel()
    assert privacy_profile(P, Q, [comp.epsilon])[0] <= comp.delta + 1e-12
    pp = post_process(g0)
    assert (pp.epsilon, pp.delta) == (g0.epsilon, g0.delta)
    # post-processing by a random channel does not increase the exact profile
    K = rng.dirichlet(np.ones(2), size=3)
    assert privacy_profile(A0.lift(lam0) @ K, A0.lift(lam0b) @ K, [g0.epsilon])[0] <= 0.01 + 1e-12


def test_tupling_point_privacy_equals_the_base():
    base = RandomizedResponse(3, 1.2)
    # point privacy = DistP on Dirac pairs; tupling's equals the base's (dummies ignore x)
    for x, y in [(0, 1), (1, 2)]:
        dx, dy = np.eye(3)[x], np.eye(3)[y]
        e_base = epsilon_for_delta(base.lift(dx), base.lift(dy), 0.0)
        prof = tupling_profile_exact(TuplingMechanism(base, 2), dx, dy, [e_base - 1e-6, e_base])
        assert prof[1] <= 1e-12  # never worse than the base
        assert local_dp_epsilon(base) == pytest.approx(1.2)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: domain_wasserstein_inf([0.5, 0.5], [0.5, 0.5], grid(2)),
            "2 entries but the domain has 4 points",
        ),
        (lambda: domain_wasserstein_inf([0.5, 0.5], [0.5, 0.4], line(2)), "sums to 0.9"),
        (lambda: laplace_distp(0.0, [0.5, 0.5], [0.5, 0.5], line(2)), "positive"),
        (lambda: dp_implies_distp(-1.0), "positive"),
        (lambda: tupling_hoeffding([0.5, 0.5], [0.5, 0.5], -3, 0.01), "≥ 0"),
        (lambda: local_guarantee(-1.0, 0.0, "x"), "ε must be a number ≥ 0"),
        (lambda: coupling_within([1.0, 0.0], [0.0, 1.0], np.ones((3, 3))), "3×3|2×2"),
    ],
)
def test_bad_inputs_give_one_line_errors(call, match):
    with pytest.raises(DistPrivacyError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
