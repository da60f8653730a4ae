"""Noise distributions: exact expected L2 error, covariance, sampling, randomness sources."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from distprivacy._json import dumps_json
from distprivacy.exceptions import DistPrivacyError
from distprivacy.noise import NoiseDistribution, expected_norm
from distprivacy.randomness import SecureGenerator, check_random_state


@pytest.mark.parametrize("d", [1, 2, 5, 13])
def test_expected_norm_isotropic_gaussian_closed_form(d):
    s = 2.7
    exact = s * math.sqrt(2) * math.exp(special.gammaln((d + 1) / 2) - special.gammaln(d / 2))
    assert expected_norm("gaussian", np.full(d, s)) == pytest.approx(exact, rel=1e-9)


def test_expected_norm_one_direction():
    assert expected_norm("gaussian", np.array([3.0])) == pytest.approx(3 * math.sqrt(2 / math.pi))
    assert expected_norm("laplace", np.array([3.0])) == pytest.approx(3.0)
    assert expected_norm("none", np.array([])) == 0.0


@pytest.mark.parametrize("family", ["gaussian", "laplace"])
def test_expected_norm_two_dims_against_2d_quadrature(family):
    s1, s2 = 5.0, 100.0
    if family == "gaussian":

        def dens(a, b):
            return math.exp(-(a * a + b * b) / 2) / (2 * math.pi)

        lim = 12
    else:

        def dens(a, b):
            return 0.25 * math.exp(-abs(a) - abs(b))

        lim = 45
    val, _ = integrate.dblquad(
        lambda a, b: math.hypot(s1 * a, s2 * b) * dens(a, b),
        -lim,
        lim,
        -lim,
        lim,
        epsabs=1e-10,
        epsrel=1e-10,
    )
    assert expected_norm(family, np.array([s1, s2])) == pytest.approx(val, rel=1e-8)


@pytest.mark.parametrize("family", ["gaussian", "laplace"])
def test_expected_norm_against_monte_carlo(family):
    scales = np.array([0.5, 2.0, 2.0, 7.0, 30.0])
    rng = np.random.default_rng(11)
    R = 400_000
    y = rng.standard_normal((R, 5)) if family == "gaussian" else rng.laplace(size=(R, 5))
    norms = np.linalg.norm(y * scales, axis=1)
    se = norms.std() / math.sqrt(R)
    assert abs(expected_norm(family, scales) - norms.mean()) < 5 * se


def test_covariance_and_rotation():
    V = np.linalg.qr(np.random.default_rng(0).normal(size=(4, 4)))[0][:, :2]
    g = NoiseDistribution("gaussian", V, np.array([2.0, 3.0]))
    np.testing.assert_allclose(g.covariance, V @ np.diag([4.0, 9.0]) @ V.T)
    lap = NoiseDistribution("laplace", V, np.array([2.0, 3.0]))
    np.testing.assert_allclose(lap.covariance, V @ np.diag([8.0, 18.0]) @ V.T)
    assert g.expected_squared_error == pytest.approx(13.0)
    # E‖Z‖ depends only on the scales, not on the (orthonormal) directions.
    assert g.expected_l2_error == pytest.approx(expected_norm("gaussian", np.array([2.0, 3.0])))


def test_gaussian_from_covariance_round_trip():
    A = np.random.default_rng(1).normal(size=(3, 3))
    C = A @ A.T
    np.testing.assert_allclose(
        NoiseDistribution.gaussian_from_covariance(C).covariance, C, atol=1e-12
    )
    with pytest.raises(DistPrivacyError, match="positive semidefinite"):
        NoiseDistribution.gaussian_from_covariance(-C)


def _variance_ratio_ok(samples: np.ndarray, var: float, alpha: float = 1e-6) -> bool:
    """Two-sided chi-square test of a Gaussian sample's variance (mean known to be 0)."""
    R = samples.size
    stat = float((samples**2).sum() / var)
    return stats.chi2.ppf(alpha / 2, R) < stat < stats.chi2.ppf(1 - alpha / 2, R)


@pytest.mark.parametrize("factor,ok", [(1.0, True), (1.05, False), (0.95, False)])
def test_sampled_noise_matches_calibrated_scale_and_a_wrong_scale_is_caught(factor, ok):
    """Draws along each direction have the calibrated variance (χ² test at α = 1e-6); the same
    test rejects a noise distribution whose scale is off by 5 %."""
    V = np.linalg.qr(np.random.default_rng(2).normal(size=(3, 3)))[0]
    scales = np.array([1.0, 4.0, 10.0])
    claimed = NoiseDistribution("gaussian", V, scales)
    actual = NoiseDistribution("gaussian", V, scales * factor)
    Z = actual.sample(100_000, random_state=5)
    coords = Z @ V
    results = [_variance_ratio_ok(coords[:, k], claimed.scales[k] ** 2) for k in range(3)]
    assert all(results) if ok else not any(results)


def test_seeded_sampling_is_reproducible_and_secure_default_is_not():
    n = NoiseDistribution.isotropic("laplace", 3, 2.0)
    assert np.array_equal(n.sample(10, random_state=4), n.sample(10, random_state=4))
    a, b = n.sample(10), n.sample(10)
    assert a.shape == (10, 3) and not np.array_equal(a, b)
    assert isinstance(check_random_state(None, secure=True), SecureGenerator)
    assert n.sample(random_state=1).shape == (3,)


def test_secure_source_distribution():
    """OpenDP's standard draws have mean 0 and variance 1 (Gaussian) / 2 (Laplace)."""
    src = SecureGenerator()
    g = src.standard_normal(4000)
    lap = src.laplace(0.0, 1.0, 4000)
    assert abs(g.mean()) < 6 / math.sqrt(4000)
    assert _variance_ratio_ok(g, 1.0)
    assert abs(lap.mean()) < 6 * math.sqrt(2) / math.sqrt(4000)
    # Laplace(1): E|Y| = 1, Var|Y| = 1.
    assert abs(np.abs(lap).mean() - 1.0) < 6 / math.sqrt(4000)


def test_bad_noise_specs():
    with pytest.raises(DistPrivacyError, match="orthonormal"):
        NoiseDistribution("gaussian", np.ones((2, 1)), np.array([1.0]))
    with pytest.raises(DistPrivacyError, match="non-negative"):
        NoiseDistribution("gaussian", np.eye(2), np.array([1.0, -1.0]))
    with pytest.raises(DistPrivacyError, match="family"):
        NoiseDistribution("cauchy", np.eye(2), np.array([1.0, 1.0]))
    with pytest.raises(DistPrivacyError, match="random_state"):
        check_random_state("seed", secure=True)


def test_noise_round_trip_keeps_the_factor():
    Q = np.linalg.qr(np.random.default_rng(4).normal(size=(4, 4)))[0][:, :2]
    cov = np.array([[4.0, 1.0e3], [1.0e3, 1.0e6]]) + np.diag([0.0, 5.0])
    for noise in (
        NoiseDistribution.gaussian_from_covariance(cov),
        NoiseDistribution.isotropic("laplace", 3, 0.5),
        NoiseDistribution.none(2),
        # Any memory layout of the basis: a noise read back draws the same numbers.
        NoiseDistribution("gaussian", np.ascontiguousarray(Q), np.array([1.0, 3.0])),
        NoiseDistribution("laplace", np.asfortranarray(Q), np.array([0.5, 2.0])),
    ):
        raw = json.loads(dumps_json(noise.to_dict()))
        back = NoiseDistribution.from_dict(raw)
        assert back.family == noise.family
        assert np.array_equal(back.covariance, noise.covariance)
        assert (back.factor is None) == (noise.factor is None)
        np.testing.assert_array_equal(back.sample(4, 3), noise.sample(4, 3))
    with pytest.raises(DistPrivacyError, match="unknown key"):
        NoiseDistribution.from_dict({**noise.to_dict(), "seed": 1})
