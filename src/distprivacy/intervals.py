"""Confidence intervals for a binomial proportion: the one Clopper–Pearson of the library.

:func:`clopper_pearson` (Clopper & Pearson 1934, exact and conservative, from Beta quantiles)
serves the audit of mechanisms (:mod:`distprivacy.mechanism_audit`) and the property-inference game
(:mod:`distprivacy.inference.game`); :func:`binomial_ci` adds the Wilson score interval
(Wilson 1927) and takes a confidence ``level`` instead of α.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from distprivacy.exceptions import DistPrivacyError

__all__ = ["CI_METHODS", "binomial_ci", "check_ci_method", "check_level", "clopper_pearson"]

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
