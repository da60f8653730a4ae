"""Confidence intervals for a binomial proportion: the one Clopper–Pearson of the library.

:func:`clopper_pearson` (Clopper & Pearson 1934, exact and conservative, from Beta quantiles)
serves the audit of mechanisms (:mod:`distprivacy.mechanism_audit`) and the property-inference game
(:mod:`distprivacy.inference.game`); :func:`binomial_ci` adds the Wilson score interval
(Wilson 1927) and takes a confidence ``level`` instead of α.

The noise interval of a released statistic (:func:`noise_halfwidths`): the half-width h_k
with P(|Z_k| ≤ h_k) = level, so that [M_k − h_k, M_k + h_k] holds the true value with that
probability over the noise.

Z = V y (:class:`~distprivacy.noise.NoiseDistribution`), so Z_k = Σ_j a_j y_j with a_j =
V_kj s_j. Gaussian noise: Z_k ~ N(0, Var Z_k), h_k = z_{(1+level)/2} SD(Z_k) exactly. Laplace
noise: one non-zero a_j gives a Laplace variable, h = |a| ln(1/(1 − level)); several give a sum
of independent Laplace variables, whose distribution follows from its characteristic function
φ(t) = Π_j 1/(1 + a_j² t²) by Gil-Pelaez' inversion, P(|Z_k| ≤ x) = (2/π) ∫₀^∞ sin(tx) φ(t)/t dt,
integrated numerically and solved for x.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, stats

from distprivacy.exceptions import DistPrivacyError

__all__ = [
    "CI_METHODS",
    "binomial_ci",
    "check_ci_method",
    "check_level",
    "clopper_pearson",
    "noise_halfwidths",
]

#: Interval methods :func:`binomial_ci` knows.
CI_METHODS = ("wilson", "clopper-pearson")


def check_level(level: float) -> float:
    """A confidence level strictly between 0 and 1."""
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise DistPrivacyError(f"level must be strictly between 0 and 1, e.g. 0.95, got {level!r}")
    return float(level)


def check_ci_method(method: str) -> str:
    """One of :data:`CI_METHODS`."""
    if method not in CI_METHODS:
        raise DistPrivacyError(f"unknown CI method {method!r}; use one of {', '.join(CI_METHODS)}")
    return method


def clopper_pearson(k, n, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact 1 − α interval (lower, upper) for k successes in n trials; vectorised
    over ``k`` and ``n`` (0 ≤ k ≤ n, n > 0, not checked here: see :func:`binomial_ci`)."""
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = np.where(k_arr > 0, stats.beta.ppf(alpha / 2, k_arr, n_arr - k_arr + 1), 0.0)
        hi = np.where(k_arr < n_arr, stats.beta.ppf(1 - alpha / 2, k_arr + 1, n_arr - k_arr), 1.0)
    return lo, hi


def binomial_ci(k, n, *, level: float = 0.95, method: str = "wilson"):
    """Two-sided confidence interval for a proportion ``k / n`` (vectorised over arrays).

    ``"wilson"``: the Wilson score interval (Wilson 1927). ``"clopper-pearson"``: the exact
    interval from Beta quantiles (:func:`clopper_pearson`), conservative.

    Returns
    -------
    (lo, hi)
        Floats for scalar inputs, arrays otherwise.
    """
    level = check_level(level)
    check_ci_method(method)
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.asarray(n, dtype=np.float64)
    if np.any(n_arr <= 0) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise DistPrivacyError(f"need 0 ≤ k ≤ n and n > 0, got k={k}, n={n}")
    a = 1 - level
    if method == "clopper-pearson":
        lo, hi = clopper_pearson(k_arr, n_arr, a)
    else:
        z = float(stats.norm.ppf(1 - a / 2))
        p = k_arr / n_arr
        den = 1 + z * z / n_arr
        centre = (p + z * z / (2 * n_arr)) / den
        half = z * np.sqrt(p * (1 - p) / n_arr + z * z / (4 * n_arr * n_arr)) / den
        lo, hi = np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)
    if np.ndim(lo) == 0:
        return float(lo), float(hi)
    return lo, hi


def _laplace_sum_coverage(a: np.ndarray, x: float) -> float:
    """P(|Σ a_j y_j| ≤ x) for independent standard Laplace y_j (Gil-Pelaez)."""

    def phi(t: float) -> float:
        return float(np.prod(1.0 / (1.0 + (a * t) ** 2)))

    # sin(tx)/t = x sinc(tx/π): regular at 0. The first part to a few periods; the tail by
    # QUADPACK's Fourier integral (QAWF), where φ(t)/t decays at least like t⁻³.
    cut = 20.0 * math.pi / x
    head, _ = integrate.quad(lambda t: x * np.sinc(t * x / math.pi) * phi(t), 0.0, cut, limit=400)
    tail, _ = integrate.quad(lambda t: phi(t) / t, cut, np.inf, weight="sin", wvar=x)
    return (2.0 / math.pi) * (head + tail)


def _laplace_halfwidth(a: np.ndarray, level: float) -> float:
    a = np.abs(a[a != 0])
    if a.size == 0:
        return 0.0
    if a.size == 1:
        return float(a[0] * math.log(1.0 / (1.0 - level)))
    # Drop coefficients below 1e-9 of the largest (their share of the spread is below float
    # resolution of the result) to keep the integrand smooth.
    a = a[a >= 1e-9 * a.max()]
    if a.size == 1:
        return float(a[0] * math.log(1.0 / (1.0 - level)))
    sd = math.sqrt(2.0 * float(np.sum(a**2)))
    hi = sd / math.sqrt(1.0 - level)  # Chebyshev: coverage there is ≥ level
    return float(
        optimize.brentq(
            lambda x: _laplace_sum_coverage(a, x) - level, 1e-9 * sd, hi, xtol=1e-10 * sd
        )
    )


def noise_halfwidths(noise, level: float = 0.95) -> np.ndarray:
    """Per statistic, the half-width h_k of the central ``level`` interval of the noise Z_k.

    Parameters
    ----------
    noise : NoiseDistribution
        The calibration's noise.
    level : float
        Probability in (0, 1).

    Returns
    -------
    ndarray (m,)
        0 where no noise is added.
    """
    level = check_level(level)
    m = noise.dim
    if noise.family == "none" or noise.scales.size == 0:
        return np.zeros(m)
    if noise.family == "gaussian":
        sd = np.sqrt(np.maximum(np.diag(noise.covariance), 0.0))
        return float(stats.norm.ppf((1.0 + level) / 2.0)) * sd
    coef = np.asarray(noise.basis, dtype=float) * np.asarray(noise.scales, dtype=float)[None, :]
    return np.array([_laplace_halfwidth(coef[k], level) for k in range(m)])
