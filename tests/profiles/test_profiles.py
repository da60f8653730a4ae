"""Tests of distprivacy.profiles: μ-GDP closed forms and exact Gaussian privacy profiles.

References used here are independent of the module: mpmath (50 digits) for the μ-GDP formula,
the exact region {log p/q > ε} of two 1-D Gaussians (a quadratic inequality) for m = 1, the
χ² distribution for B = cA with equal means, closed-form KL divergence and variance of the
privacy loss, and Monte-Carlo estimates from 10⁶ draws of L.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from distprivacy import profiles
from distprivacy.exceptions import DistPrivacyError
from distprivacy.profiles import (
    PrivacyLoss,
    gaussian_epsilon,
    gaussian_profile,
    gdp_accuracy,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    mu_for_accuracy,
    total_variation,
)

ATOL = 1e-10  # default accuracy of gaussian_profile


# ---------------------------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------------------------


def mp_gdp_delta(eps: float, mu: float, dps: int = 50) -> mpmath.mpf:
    """Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) in 50-digit arithmetic."""
    with mpmath.workdps(dps):
        e, m = mpmath.mpf(eps), mpmath.mpf(mu)
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


def exact_1d(a: float, var_a: float, b: float, var_b: float, eps: float) -> float:
    """δ_{P‖Q}(ε) = P(S) − e^ε Q(S), S = {x: log p(x)/q(x) > ε}, P = N(a, var_a),
    Q = N(b, var_b): S is given by the quadratic c2 x² + c1 x + c0 > 0 (mpmath, 40 digits)."""
    with mpmath.workdps(40):
        a, b, eps = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(eps)
        s1, s2 = mpmath.sqrt(var_a), mpmath.sqrt(var_b)
        c2 = 1 / (2 * s2**2) - 1 / (2 * s1**2)
        c1 = a / s1**2 - b / s2**2
        c0 = -(a**2) / (2 * s1**2) + b**2 / (2 * s2**2) + mpmath.log(s2 / s1) - eps

        def p_cdf(x):
            return mpmath.ncdf((x - a) / s1)

        def q_cdf(x):
            return mpmath.ncdf((x - b) / s2)

        if c2 == 0:
            r = -c0 / c1
            ps, qs = (1 - p_cdf(r), 1 - q_cdf(r)) if c1 > 0 else (p_cdf(r), q_cdf(r))
        else:
            disc = c1**2 - 4 * c2 * c0
            if disc <= 0:
                ps = qs = 1 if c2 > 0 else 0
            else:
                r1, r2 = sorted(
                    [(-c1 - mpmath.sqrt(disc)) / (2 * c2), (-c1 + mpmath.sqrt(disc)) / (2 * c2)]
                )
                if c2 > 0:
                    ps, qs = p_cdf(r1) + 1 - p_cdf(r2), q_cdf(r1) + 1 - q_cdf(r2)
                else:
                    ps, qs = p_cdf(r2) - p_cdf(r1), q_cdf(r2) - q_cdf(r1)
        return float(ps - mpmath.exp(eps) * qs)


def exact_scaled(m: int, c: float, eps: float) -> float:
    """δ for P = N(0, I_m), Q = N(0, c I_m): L = (m/2) log c + ½ (1/c − 1) W with W ∼ χ²_m
    under P and W ∼ c χ²_m under Q."""
    with mpmath.workdps(40):
        c, eps = mpmath.mpf(c), mpmath.mpf(eps)
        g = mpmath.mpf(m) / 2 * mpmath.log(c)
        lam = 1 / c - 1
        t = 2 * (eps - g) / lam  # L > ε  ⇔  λ W > 2 (ε − γ)

        def cdf(x):
            return mpmath.gammainc(mpmath.mpf(m) / 2, 0, max(x, 0) / 2, regularized=True)

        if lam > 0:
            ps, qs = 1 - cdf(t), 1 - cdf(t / c)
        else:
            ps, qs = cdf(t), cdf(t / c)
        return float(ps - mpmath.exp(eps) * qs)


def random_model(rng: np.random.Generator, m: int, distortion: float, shift: float):
    """Random means and unequal SPD covariances: B = R V diag(e^{s g}) Vᵀ Rᵀ with A = R Rᵀ."""
    G = rng.standard_normal((m, m))
    A = G @ G.T / m + 0.2 * np.eye(m)
    R = np.linalg.cholesky(A)
    V, _ = np.linalg.qr(rng.standard_normal((m, m)))
    B = R @ (V * np.exp(distortion * rng.standard_normal(m))) @ V.T @ R.T
    B = (B + B.T) / 2
    mean_p = rng.standard_normal(m)
    mean_q = mean_p + shift * (R @ rng.standard_normal(m))
    return mean_p, A, mean_q, B


# ---------------------------------------------------------------------------------------------
# μ-GDP closed form
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 2.0, 5.0])
def test_gdp_delta_matches_mpmath(eps, mu):
    ref = float(mp_gdp_delta(eps, mu))
    # log-space evaluation: relative error ~ 1e-15 |log Φ| / (1 − e^{b−a}); 1e-11 is ample here
    assert gdp_delta(eps, mu) == pytest.approx(ref, rel=1e-11, abs=1e-300)


def test_gdp_delta_matches_scipy_norm():
    eps = np.linspace(0, 4, 9)[:, None]
    mu = np.array([0.3, 1.0, 2.5])[None, :]
    ref = stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    # the direct formula loses ~1e-16 · e^ε absolutely; δ here is ≥ 1e-6
    np.testing.assert_allclose(gdp_delta(eps, mu), ref, rtol=1e-9, atol=1e-15)


def test_gdp_delta_extreme_range_is_stable():
    eps = np.linspace(0, 50, 101)[:, None]
    mu = np.logspace(-4, math.log10(50), 60)[None, :]
    d = gdp_delta(eps, mu)
    assert d.shape == (101, 60)
    assert np.all(np.isfinite(d)) and np.all((d >= 0) & (d <= 1))
    assert np.all(np.diff(d, axis=0) <= 1e-15)  # non-increasing in ε
    assert np.all(np.diff(d, axis=1) >= -1e-15)  # non-decreasing in μ
    for e, m in [(50.0, 50.0), (50.0, 10.0), (20.0, 5.0), (1.0, 1e-4), (0.0, 1e-4), (5.0, 50.0)]:
        ref = float(mp_gdp_delta(e, m))
        assert gdp_delta(e, m) == pytest.approx(ref, rel=1e-9, abs=1e-300)


def test_gdp_delta_shapes_and_special_values():
    assert isinstance(gdp_delta(1.0, 1.0), float)
    assert gdp_delta(1.0, 0.0) == 0.0
    assert gdp_delta([0.0, 1.0, 2.0], [[1.0], [2.0]]).shape == (2, 3)
    for mu in [1e-4, 0.3, 2.0, 10.0]:  # δ(0) = TV = 2Φ(μ/2) − 1 = erf(μ / 2√2)
        assert gdp_delta(0.0, mu) == pytest.approx(math.erf(mu / (2 * math.sqrt(2))), rel=1e-12)


def test_gdp_mu_analytic_gaussian_mechanism():
    # Balle & Wang (2018): ε = 1, δ = 1e-5 needs σ/Δ ≈ 3.73, i.e. μ = Δ/σ ≈ 0.268.
    with mpmath.workdps(50):
        ref = mpmath.findroot(lambda m: mp_gdp_delta(1, m) - mpmath.mpf("1e-5"), 0.27)
    mu = gdp_mu(1.0, 1e-5)
    assert mu == pytest.approx(float(ref), rel=1e-12)
    assert 1 / mu == pytest.approx(3.7306, abs=1e-4)
    assert mu == pytest.approx(0.268051, abs=1e-6)
    assert gdp_delta(1.0, mu) <= 1e-5 < gdp_delta(1.0, mu * (1 + 1e-10))


@pytest.mark.parametrize("eps", [0.0, 0.01, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.1, 0.6])
def test_gdp_mu_and_gdp_epsilon_invert_gdp_delta(eps, delta):
    mu = gdp_mu(eps, delta)
    assert gdp_delta(eps, mu) <= delta
    assert gdp_delta(eps, mu) == pytest.approx(delta, rel=1e-9)
    assert gdp_epsilon(delta, mu) == pytest.approx(eps, rel=1e-8, abs=1e-8)
    e = gdp_epsilon(delta, 1.5)
    assert gdp_delta(e, 1.5) <= delta
    if e > 0:
        assert gdp_delta(e, 1.5) == pytest.approx(delta, rel=1e-9)


def test_gdp_mu_monotone():
    eps = [0.1, 0.5, 1.0, 2.0, 4.0]
    mus = [gdp_mu(e, 1e-5) for e in eps]
    assert all(a < b for a, b in itertools.pairwise(mus))  # larger ε allows larger μ
    mus_d = [gdp_mu(1.0, d) for d in [1e-9, 1e-6, 1e-3, 0.1]]
    assert all(a < b for a, b in itertools.pairwise(mus_d))


def test_gdp_epsilon_zero_cases():
    assert gdp_epsilon(1e-5, 0.0) == 0.0
    tv = gdp_delta(0.0, 0.5)
    assert gdp_epsilon(tv * 1.01, 0.5) == 0.0
    assert gdp_epsilon(tv * 0.99, 0.5) > 0.0


def test_accuracy_round_trip():
    for mu in [0.0, 0.1, 1.0, 3.0, 8.0]:
        acc = gdp_accuracy(mu)
        assert acc == pytest.approx((1 + gdp_delta(0.0, mu)) / 2, rel=1e-14)
        assert mu_for_accuracy(acc) == pytest.approx(mu, abs=1e-12, rel=1e-12)
    assert mu_for_accuracy(0.5) == 0.0
    assert gdp_accuracy(0.0) == 0.5


# ---------------------------------------------------------------------------------------------
# The privacy loss
# ---------------------------------------------------------------------------------------------


def test_loss_moments_match_closed_forms():
    rng = np.random.default_rng(1)
    for m in [1, 3, 5]:
        mp_, A, mq, B = random_model(rng, m, 0.7, 1.0)
        loss = PrivacyLoss.from_gaussians(mp_, A, mq, B)
        d = mp_ - mq
        BiA = np.linalg.solve(B, A)
        kl = (
            0.5 * (np.trace(BiA) + d @ np.linalg.solve(B, d) - m + np.linalg.slogdet(B)[1])
            - 0.5 * np.linalg.slogdet(A)[1]
        )
        Bid = np.linalg.solve(B, d)
        var = 0.5 * np.trace((BiA - np.eye(m)) @ (BiA - np.eye(m))) + Bid @ A @ Bid
        assert loss.mean == pytest.approx(kl, rel=1e-10)
        assert loss.variance == pytest.approx(var, rel=1e-10)
        assert np.all(loss.lambdas > -1)


def test_loss_sample_matches_log_density_ratio():
    rng = np.random.default_rng(2)
    mp_, A, mq, B = random_model(rng, 3, 0.8, 1.0)
    loss = PrivacyLoss.from_gaussians(mp_, A, mq, B)
    x = stats.multivariate_normal(mp_, A).rvs(20000, random_state=3)
    direct = stats.multivariate_normal(mp_, A).logpdf(x) - stats.multivariate_normal(mq, B).logpdf(
        x
    )
    assert stats.ks_2samp(direct, loss.sample(20000, 4)).pvalue > 1e-3


def test_characteristic_function():
    rng = np.random.default_rng(5)
    mp_, A, mq, B = random_model(rng, 4, 0.6, 0.8)
    loss = PrivacyLoss.from_gaussians(mp_, A, mq, B)
    assert complex(loss.characteristic_function(0.0)) == pytest.approx(1.0)
    h = 1e-6  # φ'(0) = i E[L]
    deriv = (loss.characteristic_function(h) - loss.characteristic_function(-h)) / (2 * h)
    assert complex(deriv) == pytest.approx(1j * loss.mean, rel=1e-6)
    u = np.array([0.1, 0.5, 1.0, 3.0])
    phi = loss.characteristic_function(u)
    np.testing.assert_allclose(np.abs(phi), np.exp(loss.log_abs_cf(u)), rtol=1e-12)
    L = loss.sample(200_000, 6)
    emp = np.exp(1j * np.outer(u, L)).mean(axis=1)
    assert np.all(np.abs(emp - phi) < 5 / math.sqrt(L.size))  # |e^{iuL}| = 1


# ---------------------------------------------------------------------------------------------
# General profiles against exact references
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "var_b"),
    [(0.0, 2.0), (0.0, 0.3), (1.0, 1.5), (-2.0, 0.5), (0.3, 1.0001), (3.0, 10.0), (0.0, 1e-3)],
)
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0, 2.0, 5.0])
def test_profile_1d_matches_exact_region(b, var_b, eps):
    d, err = gaussian_profile([0.0], [[1.0]], [b], [[var_b]], eps)
    assert err <= ATOL
    assert d == pytest.approx(exact_1d(0.0, 1.0, b, var_b, eps), abs=ATOL)


@pytest.mark.parametrize("m", [2, 5, 20])
@pytest.mark.parametrize("c", [0.01, 0.5, 0.99, 1.01, 3.0, 100.0])
def test_profile_scaled_covariance_matches_chi2(m, c):
    for eps in [0.0, 1.0, 4.0]:
        d, err = gaussian_profile(np.zeros(m), np.eye(m), np.zeros(m), c * np.eye(m), eps)
        assert d == pytest.approx(exact_scaled(m, c, eps), abs=ATOL)
        assert err <= ATOL


def test_acceptance_profiles_match_monte_carlo():
    """The issue's acceptance test: random models, δ(ε) and TV within 5 MC standard errors."""
    rng = np.random.default_rng(20240611)
    n_draws = 1_000_000
    checked_abs_form = 0
    for trial, (distortion, shift) in enumerate(
        [(0.1, 0.5), (0.5, 0.0), (0.5, 1.0), (1.0, 0.5), (1.0, 1.5), (0.3, 2.0), (1.5, 0.2)]
    ):
        m = int(rng.choice([1, 2, 3, 5]))
        mp_, A, mq, B = random_model(rng, m, distortion, shift)
        loss = PrivacyLoss.from_gaussians(mp_, A, mq, B)
        L = loss.sample(n_draws, 1000 + trial)
        for eps in [0.0, 0.5, 1.0, 2.0]:
            d, err = gaussian_profile(mp_, A, mq, B, eps)
            x = np.maximum(-np.expm1(eps - L), 0.0)
            se = x.std() / math.sqrt(n_draws)
            assert abs(d - x.mean()) <= 5 * se + err, (m, distortion, shift, eps, d, x.mean(), se)
        tv = total_variation(mp_, A, mq, B)
        # ½ E_P|1 − e^{−L}| has finite variance iff E_P[e^{−2L}] < ∞ iff all λ_k > −½
        if np.all(loss.lambdas > -0.25):
            y = 0.5 * np.abs(-np.expm1(-L))
            checked_abs_form += 1
        else:
            y = np.maximum(-np.expm1(-L), 0.0)  # same mean, bounded
        se = y.std() / math.sqrt(n_draws)
        assert abs(tv - y.mean()) <= 5 * se + ATOL, (m, distortion, shift, tv, y.mean(), se)
    assert checked_abs_form >= 3


@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_equal_covariances_general_integral_equals_closed_form(mu):
    rng = np.random.default_rng(7)
    m = 4
    G = rng.standard_normal((m, m))
    A = G @ G.T + np.eye(m)
    v = rng.standard_normal(m)
    d = v * mu / math.sqrt(v @ np.linalg.solve(A, v))  # Mahalanobis distance exactly μ
    loss = PrivacyLoss.from_gaussians(d, A, np.zeros(m), A)
    assert not np.any(loss.lambdas)
    for eps in [0.0, 0.5, 1.0, 2.0, 5.0]:
        value, err = profiles._profile_integral(loss, eps, 1e-11)  # forced: no closed form
        assert value == pytest.approx(gdp_delta(eps, mu), abs=1e-9)
        assert err <= 1e-11
        closed, _ = gaussian_profile(d, A, np.zeros(m), A, eps)
        assert closed == pytest.approx(gdp_delta(eps, mu), abs=1e-14)


def test_nearly_equal_covariances_are_continuous():
    rng = np.random.default_rng(8)
    G = rng.standard_normal((3, 3))
    A = G @ G.T + np.eye(3)
    d = np.array([0.5, -0.2, 0.1])
    mu = math.sqrt(d @ np.linalg.solve(A, d))
    for rel in [1e-15, 1e-13]:
        B = A * (1 + rel)  # λ = 1/(1 + rel) − 1: removed within the error budget
        for eps in [0.0, 1.0]:
            value, err = gaussian_profile(d, A, np.zeros(3), B, eps)
            assert value == pytest.approx(gdp_delta(eps, mu), abs=1e-11)
            assert err <= ATOL


def test_identical_distributions_and_far_tail():
    A = np.diag([1.0, 2.0])
    assert gaussian_profile([1.0, 2.0], A, [1.0, 2.0], A, 0.0)[0] == 0.0
    assert total_variation([1.0, 2.0], A, [1.0, 2.0], A) == 0.0
    # Q wider than P in every direction and equal means: L ≤ γ = ½ log 4 < 1, so δ(1) = 0
    value, err = gaussian_profile([0.0, 0.0], A, [0.0, 0.0], 2 * A, 1.0)
    assert value == 0.0 and err <= ATOL
    # deep tail with a heavy side: δ is tiny but the bound stays within atol
    value, err = gaussian_profile([0.0], [[1.0]], [0.0], [[0.5]], 40.0)
    assert value <= err <= ATOL


# ---------------------------------------------------------------------------------------------
# Structural facts
# ---------------------------------------------------------------------------------------------


def test_symmetry_monotonicity_and_range():
    rng = np.random.default_rng(9)
    for m, distortion, shift in [(1, 0.8, 1.0), (3, 0.5, 0.5), (5, 1.2, 0.3)]:
        mp_, A, mq, B = random_model(rng, m, distortion, shift)
        assert total_variation(mp_, A, mq, B) == pytest.approx(
            total_variation(mq, B, mp_, A), abs=2 * ATOL
        )
        eps_grid = np.linspace(0.0, 4.0, 9)
        values = np.array([gaussian_profile(mp_, A, mq, B, e)[0] for e in eps_grid])
        assert np.all((values >= 0) & (values <= 1))
        assert np.all(np.diff(values) <= 2 * ATOL)
        assert values[0] == pytest.approx(total_variation(mp_, A, mq, B), abs=1e-15)


def test_gaussian_epsilon_round_trip():
    rng = np.random.default_rng(10)
    mp_, A, mq, B = random_model(rng, 3, 0.6, 1.0)
    for delta in [1e-2, 1e-5]:
        eps = gaussian_epsilon(mp_, A, mq, B, delta)
        value, err = gaussian_profile(mp_, A, mq, B, eps)
        assert value + err <= delta  # conservative
        assert value == pytest.approx(delta, abs=1e-9)
        assert gaussian_profile(mp_, A, mq, B, max(eps - 1e-4, 0.0))[0] > delta
    # equal covariances: the μ-GDP inverse
    mu = math.sqrt((mp_ - mq) @ np.linalg.solve(A, mp_ - mq))
    assert gaussian_epsilon(mp_, A, mq, A, 1e-4) == pytest.approx(gdp_epsilon(1e-4, mu), abs=1e-7)
    # already private at ε = 0
    tv = total_variation(mp_, A, mq, B)
    assert gaussian_epsilon(mp_, A, mq, B, min(0.99, tv + 0.01)) == 0.0


def test_unreachable_accuracy_raises():
    with pytest.raises(DistPrivacyError, match="atol"):
        gaussian_profile([0.0], [[1.0]], [0.0], [[2.0]], 0.0, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------

I2 = np.eye(2)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: gdp_delta(-1.0, 1.0), "epsilon"),
        (lambda: gdp_delta(float("nan"), 1.0), "epsilon"),
        (lambda: gdp_delta(1.0, -0.5), "mu"),
        (lambda: gdp_delta(1.0, float("inf")), "mu"),
        (lambda: gdp_mu(-1.0, 1e-5), "epsilon"),
        (lambda: gdp_mu(1.0, 0.0), "delta"),
        (lambda: gdp_mu(1.0, 1.0), "delta"),
        (lambda: gdp_mu(1.0, float("nan")), "delta"),
        (lambda: gdp_epsilon(1.5, 1.0), "delta"),
        (lambda: gdp_epsilon(1e-5, -1.0), "mu"),
        (lambda: gdp_accuracy(-0.1), "mu"),
        (lambda: mu_for_accuracy(0.4), "accuracy"),
        (lambda: mu_for_accuracy(1.0), "accuracy"),
        (lambda: mu_for_accuracy(float("nan")), "accuracy"),
        (lambda: gaussian_profile([0, 0], I2, [0, 0, 0], I2, 1.0), "shape"),
        (lambda: gaussian_profile([0, 0], I2, [0, 0], np.eye(3), 1.0), "cov_q"),
        (lambda: gaussian_profile([0, 0], [[1, 0.5], [0, 1]], [0, 0], I2, 1.0), "cov_p"),
        (lambda: gaussian_profile([0, 0], I2, [0, 0], [[1, 2], [2, 1]], 1.0), "cov_q"),
        (lambda: gaussian_profile([0, 0], I2, [0, 0], -I2, 1.0), "cov_q"),
        (lambda: gaussian_profile([0, float("nan")], I2, [0, 0], I2, 1.0), "mean_p"),
        (lambda: gaussian_profile([0, 0], I2, [0, 0], [[1, np.inf], [np.inf, 1]], 1.0), "cov_q"),
        (lambda: gaussian_profile([0, 0], I2, [1, 0], I2, -0.1), "epsilon"),
        (lambda: gaussian_profile([0, 0], I2, [1, 0], I2, 1.0, atol=0.0), "atol"),
        (lambda: gaussian_epsilon([0, 0], I2, [1, 0], I2, 0.0), "delta"),
        (lambda: gaussian_epsilon([0, 0], I2, [1, 0], 2 * I2, 1e-11), "delta"),
        (lambda: total_variation([0, 0], I2, [1, 0], [[0, 0], [0, 0]]), "cov_q"),
        (lambda: PrivacyLoss(0.0, np.zeros(2), np.zeros(3)), "lambdas"),
    ],
)
def test_bad_inputs_raise_one_line_errors(call, match):
    with pytest.raises(DistPrivacyError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_every_name_stays_importable_from_the_package():
    """profiles.py became a package; every name other modules import is still there."""
    for name in (
        "PrivacyLoss", "LossBatch", "CommonSupport", "RANK_RTOL", "SUPPORT_RTOL",
        "common_support", "gaussian_epsilon", "gaussian_pair_losses", "gaussian_profile",
        "gaussian_profile_psd", "gdp_accuracy", "gdp_delta", "gdp_epsilon", "gdp_mu",
        "loss_profile", "mu_for_accuracy", "profile_upper_bound", "total_variation",
        "_profile_integral",
    ):  # fmt: skip
        assert hasattr(profiles, name), name


def test_privacy_loss_sample_takes_a_seed_or_a_generator():
    loss = PrivacyLoss(0.3, [0.2, -0.1], [0.5, 1.0])
    a = loss.sample(100, random_state=4)
    assert np.array_equal(a, loss.sample(100, np.random.default_rng(4)))
    with pytest.raises(DistPrivacyError, match="random_state"):
        loss.sample(10, random_state="4")
