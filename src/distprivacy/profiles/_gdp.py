"""Equal covariances: μ-GDP (Dong, Roth & Su 2019/2022; Balle & Wang 2018, Thm 8), in log
space so that δ neither overflows nor underflows prematurely."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from distprivacy.checks import check_delta
from distprivacy.exceptions import DistPrivacyError
from distprivacy.profiles._checks import _as_array, _check_epsilon, _check_mu, _finite_float

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

_SQRT2 = math.sqrt(2.0)
_LOG_DELTA_FLOOR = -1e4  # floor of log δ in the μ-GDP root finding (< log 5e-324 ≈ −745)


def _log_terms(z: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For δ = Φ(z) − e^{s²/2 − zs} Φ(z − s) (s > 0): a = log Φ(z) and c = log of the ratio
    of the second term to the first (c ≤ 0), so that δ = −e^a expm1(c).

    With log Φ(y) = −y²/2 + log(erfcx(−y/√2)/2) the quadratic terms of c cancel exactly:
    c = log erfcx((s − z)/√2) − log erfcx(−z/√2), which keeps full relative accuracy when δ is
    far below Φ(z) (e.g. μ-GDP with small μ and ε/μ large). For z > 28 (erfcx would overflow,
    and Φ(z) ≈ 1) c is formed directly from log-CDFs."""
    import numpy as np
    from scipy import special  # (lazy: a ledger command never loads SciPy)

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        a = special.log_ndtr(z)
        stable = np.log(special.erfcx((s - z) / _SQRT2)) - np.log(special.erfcx(-z / _SQRT2))
        direct = s * s / 2 - z * s + special.log_ndtr(z - s) - a
        c = np.where(z <= 28.0, stable, direct)
    return a, np.minimum(c, 0.0)


def _delta_zs(z: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Φ(z) − e^{s²/2 − zs} Φ(z − s) for s > 0, in [0, 1], without overflow or cancellation."""
    import numpy as np

    a, c = _log_terms(z, s)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.clip(-np.exp(a) * np.expm1(c), 0.0, 1.0)


def _normal_loss_delta(epsilon: float, mean: float, sd: float) -> float:
    """E[(1 − e^{ε − L})₊] for L ∼ N(mean, sd²): Φ(z) − e^{ε − mean + sd²/2} Φ(z − sd) with
    z = (mean − ε)/sd (and (1 − e^{ε − mean})₊ when sd = 0)."""
    import numpy as np

    if sd == 0:
        return max(-math.expm1(epsilon - mean), 0.0)
    return float(_delta_zs(np.float64((mean - epsilon) / sd), np.float64(sd)))


def gdp_delta(epsilon: ArrayLike, mu: ArrayLike) -> float | np.ndarray:
    """Privacy profile of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

    This is the exact profile of two Gaussians with the same covariance at Mahalanobis distance
    μ (Balle & Wang 2018, Thm 8; Dong, Roth & Su 2019, Cor. 2.13). With z = μ/2 − ε/μ it is
    evaluated as −Φ(z) expm1(c), log Φ(z) from :func:`scipy.special.log_ndtr` and
    c = log erfcx((ε/μ + μ/2)/√2) − log erfcx((ε/μ − μ/2)/√2) (the e^ε factor cancels
    analytically), so it neither overflows nor underflows prematurely and keeps ~1e-13 relative
    accuracy for ε up to ~50 and μ from 1e-4 to ~50.

    Parameters
    ----------
    epsilon : float or array_like
        ε ≥ 0 (finite).
    mu : float or array_like
        μ ≥ 0 (finite); broadcast against ``epsilon``. δ = 0 where μ = 0.

    Returns
    -------
    float or ndarray
        δ(ε) ∈ [0, 1]; a float when both inputs are scalars.
    """
    import numpy as np

    eps = _as_array(epsilon, "epsilon")
    mus = _as_array(mu, "mu")
    if np.any(eps < 0):
        raise DistPrivacyError("epsilon must be ≥ 0")
    if np.any(mus < 0):
        raise DistPrivacyError("mu must be ≥ 0")
    e, m = np.broadcast_arrays(eps, mus)
    out = np.zeros(e.shape)
    pos = m > 0
    if np.any(pos):
        out[pos] = _delta_zs(m[pos] / 2 - e[pos] / m[pos], m[pos])
    if out.ndim == 0:
        return float(out)
    return out


def _gdp_log_delta(epsilon: float, mu: float) -> float:
    """log δ(ε) of μ-GDP (μ > 0), accurate where δ underflows in linear scale; clipped below
    at −10⁴ (far below log of the smallest double) so that root finders see finite values."""
    import numpy as np

    a, c = _log_terms(np.float64(mu / 2 - epsilon / mu), np.float64(mu))
    if not c < 0:  # δ below the resolution of the log-CDFs: far below any representable δ
        return _LOG_DELTA_FLOOR
    return max(float(a + np.log(-np.expm1(c))), _LOG_DELTA_FLOOR)


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest μ such that μ-GDP is (ε, δ)-DP, i.e. ``gdp_delta(epsilon, μ) ≤ delta``.

    δ(ε; μ) increases continuously from 0 to 1 in μ (Dong, Roth & Su 2019, Cor. 2.13), so the
    root of log δ(ε; μ) = log δ is found with Brent's method on log μ; the result is then
    nudged down, if needed, so that ``gdp_delta(epsilon, result) ≤ delta`` holds exactly. This
    is the calibration of the analytic Gaussian mechanism (Balle & Wang 2018, Alg. 1):
    σ = Δ/μ for sensitivity Δ.

    Parameters
    ----------
    epsilon : float
        ε ≥ 0.
    delta : float
        δ ∈ (0, 1).

    Returns
    -------
    float
        μ > 0.
    """
    import numpy as np
    from scipy import optimize

    eps = _check_epsilon(epsilon)
    dlt = check_delta(delta)
    log_d = math.log(dlt)

    def f(t: float) -> float:
        return _gdp_log_delta(eps, math.exp(t)) - log_d

    t_lo = t_hi = 0.0  # bracket in t = log μ, scanning from μ = 1 in steps of e
    if f(0.0) > 0:
        while f(t_lo) > 0:
            t_hi, t_lo = t_lo, t_lo - 1.0
    else:
        while f(t_hi) <= 0:
            t_lo, t_hi = t_hi, t_hi + 1.0
            if t_hi > math.log(1e6):
                raise DistPrivacyError(f"no μ ≤ 1e6 reaches delta = {dlt!r} at epsilon = {eps!r}")
    t = optimize.brentq(f, t_lo, t_hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    mu = math.exp(t)
    step = np.finfo(float).eps
    while gdp_delta(eps, mu) > dlt:  # guarantee the inequality despite rounding
        mu *= 1 - step
        step *= 2
    return mu


def gdp_epsilon(delta: float, mu: float) -> float:
    """Smallest ε ≥ 0 with ``gdp_delta(ε, mu) ≤ delta`` (0 if δ(0) ≤ delta already).

    δ(ε; μ) is continuous and strictly decreasing in ε (Dong, Roth & Su 2019, Cor. 2.13) and
    δ(ε; μ) ≤ Φ(−ε/μ + μ/2), so the root lies in [0, μ²/2 − μ Φ⁻¹(δ)]; Brent's method on
    log δ finds it, and the result is nudged up so that the inequality holds exactly.

    Parameters
    ----------
    delta : float
        δ ∈ (0, 1).
    mu : float
        μ ≥ 0.

    Returns
    -------
    float
        ε ≥ 0.
    """
    import numpy as np
    from scipy import optimize, special

    dlt = check_delta(delta)
    m = _check_mu(mu)
    if m == 0 or gdp_delta(0.0, m) <= dlt:
        return 0.0
    log_d = math.log(dlt)

    def f(e: float) -> float:
        return _gdp_log_delta(e, m) - log_d

    hi = max(m * m / 2 - m * float(special.ndtri(dlt)), 1e-300) * (1 + 1e-12)
    eps = optimize.brentq(f, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    step = np.finfo(float).eps
    while gdp_delta(eps, m) > dlt:  # guarantee the inequality despite rounding
        eps = eps * (1 + step) + step
        step *= 2
    return float(eps)


def gdp_accuracy(mu: float) -> float:
    """Φ(μ/2): the best accuracy of any test between N(0, 1) and N(μ, 1) with equal priors.

    Equals (1 + TV)/2 with TV = δ(0) = 2Φ(μ/2) − 1 (Dong, Roth & Su 2019, §2): the largest
    accuracy of a property inference attack against a μ-GDP release.

    Parameters
    ----------
    mu : float
        μ ≥ 0.

    Returns
    -------
    float
        Accuracy in [0.5, 1).
    """
    from scipy import special

    return float(special.ndtr(_check_mu(mu) / 2))


def mu_for_accuracy(accuracy: float) -> float:
    """The μ whose best attack accuracy is ``accuracy``: μ = 2 Φ⁻¹(accuracy) (inverse of
    :func:`gdp_accuracy`).

    Parameters
    ----------
    accuracy : float
        In [0.5, 1); 0.5 gives μ = 0.

    Returns
    -------
    float
        μ ≥ 0.
    """
    from scipy import special

    acc = _finite_float(accuracy, "accuracy")
    if not 0.5 <= acc < 1:
        raise DistPrivacyError(f"accuracy must lie in [0.5, 1), got {accuracy!r}")
    return max(0.0, 2.0 * float(special.ndtri(acc)))
