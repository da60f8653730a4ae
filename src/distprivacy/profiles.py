"""Exact privacy profiles of Gaussian mechanisms.

The output of a mechanism is ``P = N(m_P, A)`` under θ_i and ``Q = N(m_Q, B)`` under θ_j. Its
privacy profile (Balle & Wang, ICML 2018, Thm 5; Balle, Barthe & Gaboardi 2018) is

    δ_{P‖Q}(ε) = sup_S P(S) − e^ε Q(S) = E_{x∼P}[(1 − e^{ε − L(x)})₊],   L = log(dP/dQ),

for ε ≥ 0; δ(0) is the total variation distance. The ordered pair is (ε, δ)-distribution
private (Kawamoto & Murakami 2019; Chen & Ohrimenko 2023) iff δ_{P‖Q}(ε) ≤ δ.

Equal covariances (A = B)
    L is normal, N(μ²/2, μ²) with μ² = (m_P − m_Q)ᵀ A⁻¹ (m_P − m_Q): the mechanism is μ-GDP
    (Dong, Roth & Su 2019/2022, Cor. 2.13) and δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
    (Balle & Wang 2018, Thm 8), evaluated here in log space (:func:`gdp_delta`).

Unequal covariances (A ≠ B)
    With A = R Rᵀ and x = m_P + R z, z ∼ N(0, I),

        L = γ + Σ_k (½ λ_k w_k² + β_k w_k),   w = Uᵀ z ∼ N(0, I),

    where U diag(λ) Uᵀ = Rᵀ(B⁻¹ − A⁻¹)R = Rᵀ B⁻¹ R − I, β = Uᵀ Rᵀ B⁻¹ d, d = m_P − m_Q and
    γ = ½ dᵀ B⁻¹ d + ½ (log det B − log det A) (:class:`PrivacyLoss`). Its characteristic
    function is φ(u) = exp(iuγ + Σ_k [−½ log(1 − iuλ_k) − u² β_k² / (2 (1 − iuλ_k))]). Since
    (1 − e^{ε−L})₊ = ∫_ε^∞ e^{ε−t} 1{L > t} dt, the Gil-Pelaez inversion formula (Gil-Pelaez
    1951) integrated against e^{ε−t} gives one integral without cancellation of large terms:

        δ(ε) = ½ + (1/π) ∫_0^∞ h(u) du,   h(u) = Im[φ(u) e^{−iuε} / (u (1 + iu))].

    (For L ≡ a it returns (1 − e^{ε−a})₊.)

Integration scheme (:func:`_profile_integral`)
    * Truncation. |φ(u)| is non-increasing and |1/(u(1 + iu))| = 1/(u √(1 + u²)), so
      |∫_U^∞ h| ≤ |φ(U)| asinh(1/U): U is the smallest point (bisection on log u) where this
      rigorous bound is below π·atol/4.
    * Phase. φ(u) e^{−iuε} = e^{iθu} ψ(u) with θ = γ − ε − Σ' β_k²/(2λ_k), the sum over the
      components whose factor of |φ| does not die out (λ_k ≠ 0, β_k² ≤ 100 λ_k²): then ψ has
      no linear phase as u → ∞ and varies slowly (|φ| decays only like u^{−k/2} when k
      components have β_k ≈ 0, so the range can reach U ~ 10⁸ and more).
    * [0, u₁], u₁ = min(U, 1, 1/σ_L, 4π/|θ|) (σ_L² = Var L, so at most two periods and the
      bulk of φ): adaptive Gauss–Kronrod (QUADPACK QAGS) of h, written as
      sin(θu)/u + Im[e^{iθu} expm1(log ψ(u) − log(1 + iu))/u] so that it is evaluated
      without cancellation near u = 0 (h(0) = E[L] − ε − 1).
    * [u₁, U] in pieces [u₁ 10^j, u₁ 10^{j+1}]: QUADPACK QAWO (modified Clenshaw–Curtis with
      Chebyshev moments of the weight) with weights sin(θu) and cos(θu) applied to Re and Im
      of ψ(u)/(u(1 + iu)); many periods cost no more than one.
    * Each QUADPACK call gets an equal share of π·atol/2 (absolute, no relative tolerance);
      the value returned with δ is (Σ QUADPACK error estimates + truncation bound)/π, and
      :class:`DistPrivacyError` is raised if it exceeds ``atol`` or any call reports failure.

Shortcuts (exact or with a rigorous bound)
    * Tiny eigenvalues: replacing λ_k by 0 changes L by ½ λ_k w_k² and δ(ε) is 1-Lipschitz in
      L, so the smallest |λ_k| with ½ Σ |λ_k| ≤ atol/10 are set to 0 and that sum is added to
      the error. If every λ_k is then 0 (always when A = B exactly), L ∼ N(γ, ‖β‖²) and δ is
      the closed form Φ(z) − e^{ε−γ+‖β‖²/2} Φ(z − ‖β‖), z = (γ − ε)/‖β‖ — the μ-GDP formula
      when A = B (γ = μ²/2, ‖β‖ = μ); P = Q gives δ = 0.
    * Far tail: if the Chernoff bound min_s E[e^{s(L−ε)}] ≥ P(L > ε) ≥ δ(ε) is ≤ atol/2, δ is
      reported as 0 with that bound as its error.

Accuracy and cost: against exact references (m = 1 via the quadratic region {L > ε} in mpmath;
B = cA with equal means via the χ² distribution) the error is ≲ 10⁻¹¹ at atol = 1e-10, and the
reported error exceeded the actual one by a factor ≳ 20 in those checks; atol below ~1e-13 is
usually not reachable in double precision and raises. A profile evaluation takes ~5 ms (median;
≤ 15 ms) for m = 5 — a few hundred to a few thousand integrand evaluations — and
:func:`gaussian_epsilon` ~0.1 s.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, linalg, optimize, special

from distprivacy.accounting import check_delta
from distprivacy.exceptions import DistPrivacyError

__all__ = [
    "PrivacyLoss",
    "common_support",
    "gaussian_epsilon",
    "gaussian_profile",
    "gaussian_profile_psd",
    "gdp_accuracy",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "loss_profile",
    "mu_for_accuracy",
    "profile_upper_bound",
    "total_variation",
]

_RELEVANT_RATIO = 100.0  # β²/λ² above which a component's factor of |φ| decays below e^{-50}
_PIECE_RATIO = 10.0  # ratio of the end points of each QAWO piece
_SQRT2 = math.sqrt(2.0)
_LOG_DELTA_FLOOR = -1e4  # floor of log δ in the μ-GDP root finding (< log 5e-324 ≈ −745)
_CLOSED_FORM_ERROR = 1e-15  # error bound reported for the closed forms (rounding)
_U_MIN, _U_MAX = 1e-8, 1e16  # search range of the truncation point
_QUAD_LIMIT = 400  # QUADPACK subintervals per call
_QAWO_MAXP1 = 100  # Chebyshev moments in QAWO (bounds the bisection depth)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _finite_float(value: float, name: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise DistPrivacyError(f"{name} must be finite, got {value!r}")
    return x


def _check_epsilon(epsilon: float) -> float:
    e = _finite_float(epsilon, "epsilon")
    if e < 0:
        raise DistPrivacyError(f"epsilon must be ≥ 0, got {epsilon!r}")
    return e


def _check_mu(mu: float) -> float:
    x = _finite_float(mu, "mu")
    if x < 0:
        raise DistPrivacyError(f"mu must be ≥ 0, got {mu!r}")
    return x


def _check_atol(atol: float) -> float:
    a = _finite_float(atol, "atol")
    if not 0 < a < 1:
        raise DistPrivacyError(f"atol must lie in (0, 1), got {atol!r}")
    return a


def _as_array(value: ArrayLike, name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be numeric") from None
    if not np.isfinite(arr).all():
        raise DistPrivacyError(f"{name} contains NaN or infinite values")
    return arr


def _check_gaussians(
    mean_p: ArrayLike,
    cov_p: ArrayLike,
    mean_q: ArrayLike,
    cov_q: ArrayLike,
    *,
    definite: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Means as (m,) arrays and symmetric covariances as (m, m) arrays (scalars allowed for
    m = 1), positive definite unless ``definite`` is False."""
    mp = np.atleast_1d(_as_array(mean_p, "mean_p"))
    mq = np.atleast_1d(_as_array(mean_q, "mean_q"))
    if mp.ndim != 1 or mq.ndim != 1 or mp.size == 0:
        raise DistPrivacyError(
            f"means must be vectors of the same length m ≥ 1, got shapes {mp.shape}, {mq.shape}"
        )
    if mp.shape != mq.shape:
        raise DistPrivacyError(f"mean_p has shape {mp.shape} but mean_q has shape {mq.shape}")
    m = mp.size
    covs = []
    for name, value in (("cov_p", cov_p), ("cov_q", cov_q)):
        c = _as_array(value, name)
        if c.ndim == 0 and m == 1:
            c = c.reshape(1, 1)
        if c.shape != (m, m):
            raise DistPrivacyError(f"{name} has shape {c.shape}; expected ({m}, {m}) for m = {m}")
        if not np.allclose(c, c.T, rtol=1e-10, atol=1e-12 * float(np.max(np.abs(c), initial=0))):
            raise DistPrivacyError(
                f"{name} is not symmetric; pass a symmetric positive definite covariance"
            )
        c = (c + c.T) / 2
        if not definite:
            covs.append(c)
            continue
        try:
            linalg.cholesky(c, lower=True)
        except linalg.LinAlgError:
            raise DistPrivacyError(
                f"{name} is not positive definite (Cholesky failed); pass a symmetric positive "
                "definite covariance"
            ) from None
        covs.append(c)
    return mp, covs[0], mq, covs[1]


# ---------------------------------------------------------------------------------------------
# Equal covariances: μ-GDP
# ---------------------------------------------------------------------------------------------


def _log_terms(z: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For δ = Φ(z) − e^{s²/2 − zs} Φ(z − s) (s > 0): a = log Φ(z) and c = log of the ratio
    of the second term to the first (c ≤ 0), so that δ = −e^a expm1(c).

    With log Φ(y) = −y²/2 + log(erfcx(−y/√2)/2) the quadratic terms of c cancel exactly:
    c = log erfcx((s − z)/√2) − log erfcx(−z/√2), which keeps full relative accuracy when δ is
    far below Φ(z) (e.g. μ-GDP with small μ and ε/μ large). For z > 28 (erfcx would overflow,
    and Φ(z) ≈ 1) c is formed directly from log-CDFs."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        a = special.log_ndtr(z)
        stable = np.log(special.erfcx((s - z) / _SQRT2)) - np.log(special.erfcx(-z / _SQRT2))
        direct = s * s / 2 - z * s + special.log_ndtr(z - s) - a
        c = np.where(z <= 28.0, stable, direct)
    return a, np.minimum(c, 0.0)


def _delta_zs(z: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Φ(z) − e^{s²/2 − zs} Φ(z − s) for s > 0, in [0, 1], without overflow or cancellation."""
    a, c = _log_terms(z, s)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.clip(-np.exp(a) * np.expm1(c), 0.0, 1.0)


def _normal_loss_delta(epsilon: float, mean: float, sd: float) -> float:
    """E[(1 − e^{ε − L})₊] for L ∼ N(mean, sd²): Φ(z) − e^{ε − mean + sd²/2} Φ(z − sd) with
    z = (mean − ε)/sd (and (1 − e^{ε − mean})₊ when sd = 0)."""
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
    acc = _finite_float(accuracy, "accuracy")
    if not 0.5 <= acc < 1:
        raise DistPrivacyError(f"accuracy must lie in [0.5, 1), got {accuracy!r}")
    return max(0.0, 2.0 * float(special.ndtri(acc)))


# ---------------------------------------------------------------------------------------------
# Unequal covariances: the privacy loss as a quadratic form
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PrivacyLoss:
    """The privacy loss L = log(dP/dQ) under P as a quadratic form in standard normals:

        L = gamma + Σ_k (½ lambdas[k] w_k² + betas[k] w_k),   w ∼ N(0, I).

    Attributes
    ----------
    gamma : float
        γ = ½ dᵀ B⁻¹ d + ½ (log det B − log det A), d = m_P − m_Q.
    lambdas : ndarray, shape (m,)
        Eigenvalues of Rᵀ B⁻¹ R − I (A = R Rᵀ); all > −1. Zero when A = B.
    betas : ndarray, shape (m,)
        Uᵀ Rᵀ B⁻¹ d in the eigenbasis U.
    """

    gamma: float
    lambdas: np.ndarray
    betas: np.ndarray

    def __post_init__(self) -> None:
        g = _finite_float(self.gamma, "gamma")
        lam = np.array(_as_array(self.lambdas, "lambdas"), dtype=float, ndmin=1)
        beta = np.array(_as_array(self.betas, "betas"), dtype=float, ndmin=1)
        if lam.ndim != 1 or lam.shape != beta.shape:
            raise DistPrivacyError(
                f"lambdas and betas must be vectors of equal length, got shapes {lam.shape} "
                f"and {beta.shape}"
            )
        lam.setflags(write=False)
        beta.setflags(write=False)
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "lambdas", lam)
        object.__setattr__(self, "betas", beta)

    @classmethod
    def from_gaussians(
        cls, mean_p: ArrayLike, cov_p: ArrayLike, mean_q: ArrayLike, cov_q: ArrayLike
    ) -> PrivacyLoss:
        """The loss of P = N(mean_p, cov_p) against Q = N(mean_q, cov_q).

        M = Rᵀ B⁻¹ R − I is formed as Rᵀ B⁻¹ (A − B) R⁻ᵀ = Rᵀ (B⁻¹ − A⁻¹) R from the exact
        difference A − B, so nearly equal covariances give accurately small eigenvalues and
        equal covariances give exactly zero ones.

        Raises
        ------
        DistPrivacyError
            Non-finite entries, shape mismatch, or a covariance that is not symmetric
            positive definite.
        """
        mp, A, mq, B = _check_gaussians(mean_p, cov_p, mean_q, cov_q)
        d = mp - mq
        R = linalg.cholesky(A, lower=True)
        C = linalg.cholesky(B, lower=True)
        X = linalg.solve_triangular(C, R, lower=True)  # C⁻¹ R, so Rᵀ B⁻¹ R = Xᵀ X
        Y = linalg.solve_triangular(C, A - B, lower=True)  # C⁻¹ (A − B)
        Y = linalg.solve_triangular(R, Y.T, lower=True).T  # C⁻¹ (A − B) R⁻ᵀ
        M = X.T @ Y
        M = (M + M.T) / 2
        if np.any(M):
            lam, U = linalg.eigh(M)
        else:
            lam, U = np.zeros(mp.size), np.eye(mp.size)
        c = linalg.solve_triangular(C, d, lower=True)  # C⁻¹ d
        beta = U.T @ (X.T @ c)
        gamma = 0.5 * float(c @ c) + float(np.sum(np.log(np.diag(C))) - np.sum(np.log(np.diag(R))))
        return cls(gamma, np.asarray(lam, dtype=float), np.asarray(beta, dtype=float))

    @property
    def mean(self) -> float:
        """E_P[L] = KL(P‖Q) = γ + Σ λ_k / 2."""
        return self.gamma + float(np.sum(self.lambdas)) / 2

    @property
    def variance(self) -> float:
        """Var_P[L] = Σ (λ_k²/2 + β_k²)."""
        return float(np.sum(self.lambdas**2) / 2 + np.sum(self.betas**2))

    def log_abs_cf(self, u: ArrayLike) -> np.ndarray:
        """log |φ(u)| = Σ_k [−¼ log(1 + u²λ_k²) − u² β_k² / (2 (1 + u²λ_k²))]; non-increasing
        in |u|."""
        uu = np.asarray(u, dtype=float)[..., None]
        v2 = (uu * self.lambdas) ** 2
        return np.sum(-0.25 * np.log1p(v2) - uu**2 * self.betas**2 / (2 * (1 + v2)), axis=-1)

    def characteristic_function(self, u: ArrayLike) -> np.ndarray:
        """φ_L(u) = E_P[e^{iuL}] = exp(iuγ + Σ_k [−½ log(1 − iuλ_k) − u²β_k²/(2(1 − iuλ_k))])
        (principal branch, continuous since Re(1 − iuλ) = 1).

        Parameters
        ----------
        u : float or array_like
            Real arguments.

        Returns
        -------
        complex ndarray
            Same shape as ``u``.
        """
        uu = np.asarray(u, dtype=float)
        x = uu[..., None]
        z = 1 - 1j * x * self.lambdas
        log_phi = 1j * uu * self.gamma + np.sum(
            -0.5 * np.log(z) - x**2 * self.betas**2 / (2 * z), axis=-1
        )
        return np.exp(log_phi)

    def sample(self, size: int, rng: int | np.random.Generator | None = None) -> np.ndarray:
        """Independent draws of L under P (for Monte-Carlo checks).

        Parameters
        ----------
        size : int
            Number of draws.
        rng : int, Generator or None
            Seed or generator.

        Returns
        -------
        ndarray, shape (size,)
        """
        gen = np.random.default_rng(rng)
        n = int(size)
        out = np.empty(n)
        chunk = 1 << 16
        for start in range(0, n, chunk):
            k = min(chunk, n - start)
            w = gen.standard_normal((k, self.lambdas.size))
            out[start : start + k] = self.gamma + (0.5 * w * w) @ self.lambdas + w @ self.betas
        return out


# ---------------------------------------------------------------------------------------------
# The Gil-Pelaez integral
# ---------------------------------------------------------------------------------------------


class _Integrand:
    """h(u) = Im[φ(u) e^{−iuε} / (u (1 + iu))] = Im[e^{iθu} E(u)] and its pieces."""

    def __init__(self, loss: PrivacyLoss, epsilon: float) -> None:
        lam, beta = loss.lambdas, loss.betas
        b2 = beta**2
        nz = lam != 0
        rel = nz & (b2 <= _RELEVANT_RATIO * lam**2)
        # Im log ψ per component: ½ arctan(uλ) − u³β²λ/(2(1+u²λ²)), plus uβ²/(2λ) for the
        # relevant components, with which it combines into uβ²/(2λ(1+u²λ²)) (no cancellation).
        self.lam = lam
        self.half_b2 = b2 / 2
        self.c_rel = np.where(rel, b2 / (2 * np.where(nz, lam, 1.0)), 0.0)
        self.q = np.where(rel, 0.0, b2 * lam / 2)
        self.theta = loss.gamma - epsilon - float(np.sum(self.c_rel))
        self.h0 = loss.mean - epsilon - 1.0
        self._amp: dict[float, tuple[float, float]] = {}  # u -> E(u); QAWO's sin and cos share
        self._components = [
            (float(a), float(b), float(c), float(d))
            for a, b, c, d in zip(self.lam, self.half_b2, self.c_rel, self.q, strict=True)
        ]

    def log_psi_minus(self, u: float) -> tuple[float, float]:
        """log ψ(u) − log(1 + iu) as (real, imaginary) parts.

        Evaluated with scalar ``math`` over the (few) components: QUADPACK calls it point by
        point, where NumPy's per-call overhead would dominate (≈ 5× slower for m ≤ 10)."""
        re = 0.0
        im = 0.0
        uu = u * u
        for lam, hb2, c_rel, q in self._components:
            v = u * lam
            v2 = v * v
            den = 1 + v2
            re += -0.25 * math.log1p(v2) - uu * hb2 / den
            im += 0.5 * math.atan(v) + u * (c_rel - uu * q) / den
        return re - 0.5 * math.log1p(uu), im - math.atan(u)

    def h(self, u: float) -> float:
        """h(u) = sin(θu)/u + Im[e^{iθu} expm1(ℓ(u))/u] (finite at 0)."""
        if u == 0.0:
            return self.h0
        x, y = self.log_psi_minus(u)
        em1_re = math.expm1(x) * math.cos(y) - 2 * math.sin(y / 2) ** 2
        em1_im = math.exp(x) * math.sin(y)
        t = self.theta * u
        s, c = math.sin(t), math.cos(t)
        return (s + s * em1_re + c * em1_im) / u

    def amplitude(self, u: float) -> tuple[float, float]:
        """E(u) = ψ(u)/(u(1 + iu)) as (real, imaginary) parts (memoised)."""
        val = self._amp.get(u)
        if val is None:
            x, y = self.log_psi_minus(u)
            r = math.exp(x) / u
            val = self._amp[u] = (r * math.cos(y), r * math.sin(y))
        return val

    def amp_re(self, u: float) -> float:
        """Re E(u) (weight sin θu)."""
        return self.amplitude(u)[0]

    def amp_im(self, u: float) -> float:
        """Im E(u) (weight cos θu)."""
        return self.amplitude(u)[1]


def _quad(func, a: float, b: float, budget: float, **kw) -> tuple[float, float, bool]:
    """QUADPACK on [a, b] to absolute accuracy ``budget``: (value, error estimate, success)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = integrate.quad(
            func, a, b, epsabs=budget, epsrel=0.0, limit=_QUAD_LIMIT, full_output=1, **kw
        )
    ok = len(res) == 3
    return float(res[0]), float(res[1]), ok


def _truncation_point(loss: PrivacyLoss, bound: float) -> float:
    """Smallest U (to 1%) with |φ(U)| asinh(1/U) ≤ bound, so that |∫_U^∞ h| ≤ bound."""

    def log_tail(u: float) -> float:
        return float(loss.log_abs_cf(u)) + math.log(math.asinh(1 / u))

    target = math.log(bound)
    lo, hi = math.log(_U_MIN), math.log(_U_MAX)
    if log_tail(_U_MAX) > target:
        raise DistPrivacyError(
            "the characteristic function decays too slowly to reach the requested accuracy; "
            "increase atol"
        )
    if log_tail(_U_MIN) <= target:
        return _U_MIN
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        if log_tail(math.exp(mid)) <= target:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _profile_integral(loss: PrivacyLoss, epsilon: float, atol: float) -> tuple[float, float]:
    """δ(ε) = ½ + (1/π) ∫_0^∞ h(u) du by the scheme in the module docstring (no shortcut for
    λ = 0): (value, error estimate)."""
    f = _Integrand(loss, epsilon)
    # Error allotment (in units of the integral, i.e. π × δ): truncation ¼, quadrature ½.
    total = math.pi * atol
    U = _truncation_point(loss, total / 4)
    tail = math.exp(float(loss.log_abs_cf(U))) * math.asinh(1 / U)
    # First piece: at most two periods of e^{iθu} and the scale 1/σ_L of the bulk of φ.
    scale = max(1.0, math.sqrt(loss.variance), abs(f.theta) / (4 * math.pi))
    u1 = min(U, 1.0 / scale)
    cuts = [u1]
    while cuts[-1] < U:
        cuts.append(min(U, cuts[-1] * _PIECE_RATIO))
    n_calls = 1 + 2 * (len(cuts) - 1)
    budget = total / 2 / n_calls
    value, err, ok = _quad(f.h, 0.0, u1, budget)
    failed = not ok
    for a, b in itertools.pairwise(cuts):
        for func, weight in ((f.amp_re, "sin"), (f.amp_im, "cos")):
            v, e, ok = _quad(func, a, b, budget, weight=weight, wvar=f.theta, maxp1=_QAWO_MAXP1)
            value += v
            err += e
            failed |= not ok
    delta = 0.5 + value / math.pi
    bound = (err + tail) / math.pi
    if failed or not bound <= atol:
        raise DistPrivacyError(
            f"the privacy-profile integral did not reach atol = {atol:g} (error estimate "
            f"{bound:.2e} at epsilon = {epsilon:g}); increase atol"
        )
    return delta, bound


def _reduce(loss: PrivacyLoss, budget: float) -> tuple[PrivacyLoss, float]:
    """Set the smallest |λ_k| to 0 while ½ Σ |λ_k| ≤ budget: returns the new loss and that sum
    (δ is 1-Lipschitz in L and E|½ λ_k w_k²| = |λ_k|/2)."""
    lam = loss.lambdas.copy()
    order = np.argsort(np.abs(lam))
    cum = np.cumsum(np.abs(lam[order])) / 2
    k = int(np.searchsorted(cum, budget, side="right"))
    if k == 0:
        return loss, 0.0
    removed = float(cum[k - 1])
    lam[order[:k]] = 0.0
    return PrivacyLoss(loss.gamma, lam, loss.betas), removed


def _log_chernoff(loss: PrivacyLoss, epsilon: float) -> float:
    """log of min_s E[e^{s(L − ε)}] over 0 < s < 1/max(λ), an upper bound on
    log P(L > ε) ≥ log δ(ε) (−inf if ε ≥ sup L)."""
    lam, b2 = loss.lambdas, loss.betas**2
    lam_max = float(np.max(lam))
    s_max = 1e8 if lam_max <= 0 else min(1e8, (1 - 1e-9) / lam_max)

    def g(t: float) -> float:
        s = math.exp(t)
        z = 1 - s * lam
        return float(s * (loss.gamma - epsilon) + np.sum(-0.5 * np.log(z) + s * s * b2 / (2 * z)))

    lo, hi = math.log(min(1e-6, s_max / 2)), math.log(s_max)
    res = optimize.minimize_scalar(g, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6})
    return min(float(res.fun), g(hi), 0.0)


def _profile(loss: PrivacyLoss, epsilon: float, atol: float) -> tuple[float, float]:
    """δ(ε) and its error bound for a validated loss."""
    reduced, removed = _reduce(loss, atol / 10)
    if not np.any(reduced.lambdas):
        sd = float(np.sqrt(np.sum(reduced.betas**2)))
        value = _normal_loss_delta(epsilon, reduced.gamma, sd)
        return value, removed + _CLOSED_FORM_ERROR
    if epsilon > loss.mean:
        # Far in the tail: 0 ≤ δ(ε) ≤ P(L > ε) ≤ the Chernoff bound.
        chernoff = math.exp(_log_chernoff(loss, epsilon))
        if chernoff <= atol / 2:
            return 0.0, chernoff
    value, err = _profile_integral(reduced, epsilon, atol - removed)
    return min(max(value, 0.0), 1.0), err + removed


def gaussian_profile(
    mean_p: ArrayLike,
    cov_p: ArrayLike,
    mean_q: ArrayLike,
    cov_q: ArrayLike,
    epsilon: float,
    *,
    atol: float = 1e-10,
) -> tuple[float, float]:
    """Exact privacy profile δ_{P‖Q}(ε) of P = N(mean_p, cov_p) against Q = N(mean_q, cov_q).

    Equal covariances use the μ-GDP closed form (Balle & Wang 2018, Thm 8; Dong, Roth & Su
    2019); otherwise the Gil-Pelaez integral of the module docstring (Gil-Pelaez 1951) is
    evaluated with QUADPACK to absolute accuracy ``atol``.

    Parameters
    ----------
    mean_p, cov_p, mean_q, cov_q : array_like
        Means of shape (m,) and symmetric positive definite covariances of shape (m, m).
    epsilon : float
        ε ≥ 0.
    atol : float, keyword-only
        Required absolute accuracy of δ, in (0, 1).

    Returns
    -------
    (float, float)
        δ(ε) ∈ [0, 1] and its estimated absolute error (≤ atol): QUADPACK's error estimates
        plus rigorous truncation and eigenvalue-rounding bounds.

    Raises
    ------
    DistPrivacyError
        Invalid inputs, or the requested accuracy was not reached.
    """
    eps = _check_epsilon(epsilon)
    tol = _check_atol(atol)
    loss = PrivacyLoss.from_gaussians(mean_p, cov_p, mean_q, cov_q)
    return _profile(loss, eps, tol)


def gaussian_epsilon(
    mean_p: ArrayLike,
    cov_p: ArrayLike,
    mean_q: ArrayLike,
    cov_q: ArrayLike,
    delta: float,
    *,
    atol: float = 1e-10,
) -> float:
    """Smallest ε ≥ 0 with δ_{P‖Q}(ε) ≤ delta (conservatively: with δ̂(ε) + error ≤ delta).

    The profile is non-increasing in ε, so the root of δ̂(ε) + error − delta is bracketed by
    doubling and found with Brent's method to an absolute tolerance of 1e-10 in ε (then moved
    up to a point where the inequality is verified).

    Parameters
    ----------
    mean_p, cov_p, mean_q, cov_q : array_like
        As in :func:`gaussian_profile`.
    delta : float
        δ ∈ (0, 1); must exceed ``atol``.
    atol : float, keyword-only
        Accuracy of each profile evaluation.

    Returns
    -------
    float
        ε ≥ 0.
    """
    dlt = check_delta(delta)
    tol = _check_atol(atol)
    if dlt <= 2 * tol:
        raise DistPrivacyError(f"delta = {delta!r} must exceed 2·atol = {2 * tol:g}; lower atol")
    loss = PrivacyLoss.from_gaussians(mean_p, cov_p, mean_q, cov_q)

    def g(e: float) -> float:
        value, err = _profile(loss, e, tol)
        return value + err - dlt

    if g(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, max(1.0, loss.mean)
    while g(hi) > 0:
        lo, hi = hi, 2 * hi
        if hi > 1e6:
            raise DistPrivacyError(f"no epsilon ≤ 1e6 reaches delta = {delta!r}")
    eps = optimize.brentq(g, lo, hi, xtol=1e-10, rtol=1e-12)
    step = 1e-10
    while g(eps) > 0:
        eps += step
        step *= 2
    return float(eps)


def total_variation(
    mean_p: ArrayLike, cov_p: ArrayLike, mean_q: ArrayLike, cov_q: ArrayLike
) -> float:
    """Total variation distance TV(P, Q) = δ_{P‖Q}(0) of two Gaussians (symmetric in P, Q).

    Equal covariances: 2Φ(μ/2) − 1 (Dong, Roth & Su 2019); otherwise the Gil-Pelaez integral
    at ε = 0 to absolute accuracy 1e-10.

    Parameters
    ----------
    mean_p, cov_p, mean_q, cov_q : array_like
        As in :func:`gaussian_profile`.

    Returns
    -------
    float
        TV ∈ [0, 1].
    """
    return gaussian_profile(mean_p, cov_p, mean_q, cov_q, 0.0)[0]


# ---------------------------------------------------------------------------------------------
# Singular covariances: supports, and a rigorous upper bound for screening
# ---------------------------------------------------------------------------------------------

#: Eigenvalues below this times the dimension (after each coordinate is scaled so that its
#: larger variance is 1) are exact zeros: linear dependencies between statistics, or no noise in
#: that direction. It sits ~100× above double-precision rounding of such a matrix (eigh's
#: absolute error is ≈ m·2.2e-16 there), so a small but real variance — e.g. a statistic whose
#: scale is 1e-16 of the noise on another — is kept, never dropped.
RANK_RTOL = 1e-14
#: Mean differences along a common zero-variance direction below this (in the same scaled
#: coordinates, relative to max(1, ‖d‖)) are rounding; above it, the supports differ.
SUPPORT_RTOL = 1e-12


@dataclass(frozen=True)
class CommonSupport:
    """Two Gaussians reduced to the affine subspace that supports both (see
    :func:`common_support`).

    Attributes
    ----------
    same : bool
        Whether P and Q have the same affine support (else δ_{P‖Q}(ε) = 1 for every ε: one of
        them puts all its mass on a set the other gives probability 0).
    reason : str
        Why the supports differ ("" when they agree).
    mean_p, cov_p, mean_q, cov_q : ndarray
        The two laws in coordinates of the common support (dimension r ≥ 0; positive definite).
    """

    same: bool
    reason: str
    mean_p: np.ndarray
    cov_p: np.ndarray
    mean_q: np.ndarray
    cov_q: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.mean_p.size)


def common_support(
    mean_p: ArrayLike, cov_p: ArrayLike, mean_q: ArrayLike, cov_q: ArrayLike
) -> CommonSupport:
    """Reduce P = N(mean_p, cov_p) and Q = N(mean_q, cov_q), covariances positive
    *semi*definite, to the affine subspace supporting both.

    δ_{P‖Q} is invariant under an invertible affine map applied to both laws, so each coordinate
    is first divided by the larger of its two standard deviations (this makes every decision
    below independent of the statistics' units). Then, with C = A + B:

    * a direction v with vᵀCv ≤ m·``RANK_RTOL`` carries no variance under P nor Q: if the means
      differ along it (beyond ``SUPPORT_RTOL``) the supports are disjoint, else it is dropped;
    * on the rest, if A or B alone is singular, P's and Q's supports differ (one is a proper
      subspace of, or crosses, the other);
    * otherwise both are positive definite there and the profile is that of the reduced pair.

    Raises
    ------
    DistPrivacyError
        Non-finite entries, shapes, asymmetric or indefinite covariances.
    """
    mp, A, mq, B = _check_gaussians(mean_p, cov_p, mean_q, cov_q, definite=False)
    m = mp.size
    for name, c in (("cov_p", A), ("cov_q", B)):
        scale = np.sqrt(np.maximum(np.diag(c), 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(scale > 0, 1 / np.where(scale > 0, scale, 1), 0.0)
        w = np.linalg.eigvalsh(c * np.outer(inv, inv))
        if np.any(np.diag(c) < 0) or (w.size and w[0] < -1e-8):
            raise DistPrivacyError(
                f"{name} is not positive semidefinite (smallest scaled eigenvalue "
                f"{w[0] if w.size else float(np.min(np.diag(c))):.3g})"
            )
    d = mp - mq
    sd = np.sqrt(np.maximum(np.maximum(np.diag(A), np.diag(B)), 0.0))
    empty = np.zeros(0)

    def differ(reason: str) -> CommonSupport:
        return CommonSupport(False, reason, empty, np.zeros((0, 0)), empty, np.zeros((0, 0)))

    const = sd == 0
    if np.any(const):
        size = np.maximum(np.maximum(np.abs(mp), np.abs(mq)), 1e-300)
        if np.any(np.abs(d[const]) > 1e-12 * size[const]):
            k = int(np.flatnonzero(const & (np.abs(d) > 1e-12 * size))[0])
            return differ(f"output {k} is constant under both laws but with different values")
    keep = ~const
    if not np.any(keep):
        z = np.zeros(0)
        return CommonSupport(True, "", z, np.zeros((0, 0)), z.copy(), np.zeros((0, 0)))
    s = sd[keep]
    As = A[np.ix_(keep, keep)] / np.outer(s, s)
    Bs = B[np.ix_(keep, keep)] / np.outer(s, s)
    ds = d[keep] / s
    w, V = np.linalg.eigh((As + Bs) / 2)
    tol = RANK_RTOL * max(1, As.shape[0])
    null = w <= tol
    if np.any(null):
        along = V[:, null].T @ ds
        if np.any(np.abs(along) > SUPPORT_RTOL * max(1.0, float(np.linalg.norm(ds)))):
            return differ(
                "the means differ along a direction in which neither law varies (the noise "
                "does not cover it)"
            )
    # Whitened by the average covariance on the rest (an invertible map of the support, so δ is
    # unchanged): the reduced pair is well conditioned even when its scales differ by 1e30.
    W = V[:, ~null] / np.sqrt(w[~null])
    Ar, Br = W.T @ As @ W, W.T @ Bs @ W
    Ar, Br = (Ar + Ar.T) / 2, (Br + Br.T) / 2
    for name, c in (("P", Ar), ("Q", Br)):
        if c.size and np.linalg.eigvalsh(c)[0] <= tol:
            return differ(
                f"{name} has no variance in a direction in which the other law varies (their "
                "supports differ; the noise does not cover it)"
            )
    del m
    return CommonSupport(True, "", W.T @ (mp[keep] / s), Ar, W.T @ (mq[keep] / s), Br)


def gaussian_profile_psd(
    mean_p: ArrayLike,
    cov_p: ArrayLike,
    mean_q: ArrayLike,
    cov_q: ArrayLike,
    epsilon: float,
    *,
    atol: float = 1e-10,
) -> tuple[float, float]:
    """δ_{P‖Q}(ε) for Gaussians with positive *semi*definite covariances.

    Different affine supports give δ = 1 at every ε (:func:`common_support`); on a common
    support the exact profile of the reduced pair (:func:`gaussian_profile`); on a support of
    dimension 0 (two equal point masses) δ = 0.

    Returns
    -------
    (float, float)
        δ(ε) and its absolute error bound.
    """
    eps = _check_epsilon(epsilon)
    sup = common_support(mean_p, cov_p, mean_q, cov_q)
    if not sup.same:
        return 1.0, 0.0
    if sup.dim == 0:
        return 0.0, 0.0
    return gaussian_profile(sup.mean_p, sup.cov_p, sup.mean_q, sup.cov_q, eps, atol=atol)


def loss_profile(loss: PrivacyLoss, epsilon: float, *, atol: float = 1e-10) -> tuple[float, float]:
    """δ(ε) of a privacy loss and its absolute error bound (the computation behind
    :func:`gaussian_profile`, for callers that reuse one :class:`PrivacyLoss`).

    Raises
    ------
    DistPrivacyError
        Invalid ε or atol, or the requested accuracy was not reached.
    """
    return _profile(loss, _check_epsilon(epsilon), _check_atol(atol))


def _log_bound_constant(s: np.ndarray) -> np.ndarray:
    """log c(s), c(s) = max_x (1 − e^{−x})₊ e^{−sx} = s^s / (1 + s)^{1+s}."""
    return s * np.log(s) - (1 + s) * np.log1p(s)


def profile_upper_bound(loss: PrivacyLoss, epsilon: float) -> float:
    """A rigorous upper bound on δ(ε), cheap enough to screen many pairs.

    (1 − e^{ε−L})₊ ≤ c(s) e^{s(L−ε)} for every s > 0 with c(s) = s^s/(1 + s)^{1+s} (the
    maximum over x of (1 − e^{−x}) e^{−sx}, attained at e^{−x} = s/(1 + s)), so
    δ(ε) ≤ c(s) e^{−sε} E[e^{sL}] with the moment generating function of the quadratic form
    E[e^{sL}] = e^{sγ} Π_k (1 − sλ_k)^{−½} exp(s²β_k²/(2(1 − sλ_k))) (s λ_k < 1). Any s gives
    a valid bound; the minimum over a logarithmic grid of s is returned (never below the true
    δ; capped at 1).
    """
    lam, b2 = loss.lambdas, loss.betas**2
    lam_max = float(np.max(lam)) if lam.size else 0.0
    s_max = 1e6 if lam_max <= 0 else min(1e6, (1 - 1e-9) / lam_max)
    s = np.geomspace(min(1e-6, s_max / 2), s_max, 240)[:, None]
    z = 1 - s * lam
    log_mgf = s[:, 0] * loss.gamma + np.sum(-0.5 * np.log(z) + s * s * b2 / (2 * z), axis=1)
    log_b = _log_bound_constant(s[:, 0]) - s[:, 0] * epsilon + log_mgf
    best = float(np.min(log_b))
    return 1.0 if not best < 0 else math.exp(best)


# ---------------------------------------------------------------------------------------------
# Many pairs at once: shared per-θ factorisations, vectorised losses and two-sided bounds
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LossBatch:
    """The privacy losses of P ordered pairs (θ_i, θ_j), as arrays (see :class:`PrivacyLoss`).

    Attributes
    ----------
    gamma : ndarray (P,)
    lambdas, betas : ndarray (P, m)
    """

    gamma: np.ndarray
    lambdas: np.ndarray
    betas: np.ndarray

    def __len__(self) -> int:
        return int(self.gamma.size)

    def loss(self, k: int) -> PrivacyLoss:
        return PrivacyLoss(float(self.gamma[k]), self.lambdas[k], self.betas[k])

    def bounds(self, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """Rigorous lower and upper bounds on each pair's δ(ε), vectorised.

        * Upper: :func:`profile_upper_bound`'s c(s)·E[e^{s(L−ε)}], minimised over a grid of s.
        * Both ways: δ is 1-Lipschitz in L ((1 − e^{ε−L})₊ has slope ≤ 1), so replacing L by a
          normal L' changes δ by at most E|L − L'|: L' = γ + Σβ_k w_k (error ≤ ½Σ|λ_k|) or
          L' = γ + ½Σλ_k + Σβ_k w_k (error ≤ (Σλ_k²/2)^½, Cauchy–Schwarz), each with the
          closed form of :func:`_normal_loss_delta`. Nearly equal covariances (small λ) make
          the interval narrow, so most pairs are settled without an integral.
        """
        eps = float(epsilon)
        lam, beta, gam = self.lambdas, self.betas, self.gamma
        sd = np.sqrt(np.sum(beta**2, axis=1))
        half_sum = np.sum(lam, axis=1) / 2
        errs = (np.sum(np.abs(lam), axis=1) / 2, np.sqrt(np.sum(lam**2, axis=1) / 2))
        lower = np.zeros(len(self))
        upper = np.ones(len(self))
        for mean, err in ((gam, errs[0]), (gam + half_sum, errs[1])):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                z = np.where(sd > 0, (mean - eps) / np.where(sd > 0, sd, 1.0), 0.0)
                closed = np.where(
                    sd > 0,
                    _delta_zs(z, np.where(sd > 0, sd, 1.0)),
                    np.clip(-np.expm1(np.minimum(eps - mean, 700.0)), 0.0, 1.0),
                )
            upper = np.minimum(upper, closed + err)
            lower = np.maximum(lower, closed - err)
        # Chernoff-type upper bound, on a per-pair grid of s in (0, 1/max λ).
        lam_max = np.max(lam, axis=1, initial=0.0)
        cap = (1 - 1e-9) / np.maximum(lam_max, 1e-300)
        s_max = np.where(lam_max > 0, np.minimum(1e6, cap), 1e6)
        grid = np.geomspace(1e-9, 1.0, 96)
        s = s_max[:, None] * grid[None, :]  # (P, K)
        zz = 1 - s[:, :, None] * lam[:, None, :]
        log_mgf = s * gam[:, None] + np.sum(
            -0.5 * np.log(zz) + (s[:, :, None] ** 2) * (beta[:, None, :] ** 2) / (2 * zz), axis=2
        )
        log_b = np.min(_log_bound_constant(s) - s * eps + log_mgf, axis=1)
        with np.errstate(over="ignore"):
            upper = np.minimum(upper, np.where(log_b < 0, np.exp(np.minimum(log_b, 0.0)), 1.0))
        return np.clip(lower, 0.0, 1.0), np.clip(np.maximum(upper, lower), 0.0, 1.0)


def gaussian_pair_losses(
    means: np.ndarray,
    covariances: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    *,
    rank_rtol: float = 1e-9,
) -> tuple[LossBatch, np.ndarray]:
    """The losses of P = N(means[i], covariances[i]) against Q = N(means[j], covariances[j])
    for every (i, j) = (first[k], second[k]), sharing one scaled Cholesky factor per θ.

    Coordinates are scaled by the largest standard deviation over θ (δ is invariant, and the
    rank test is unit-free). M = Rᵀ B⁻¹ (A − B) R⁻ᵀ is formed from the exact difference A − B,
    as in :meth:`PrivacyLoss.from_gaussians`.

    Returns
    -------
    (LossBatch, ndarray of bool)
        The losses (rows of pairs not computed are zeros) and which pairs were computed: a pair
        whose θ has a covariance with a scaled eigenvalue ≤ ``rank_rtol`` (singular, or nearly)
        is left to the exact per-pair path (:func:`common_support`).
    """
    means = np.asarray(means, dtype=float)
    covs = np.asarray(covariances, dtype=float)
    m = means.shape[1]
    sc = np.sqrt(np.max(np.diagonal(covs, axis1=1, axis2=2), axis=0))
    sc = np.where(sc > 0, sc, 1.0)
    C = covs / np.outer(sc, sc)
    C = (C + np.swapaxes(C, 1, 2)) / 2
    mu = means / sc
    good = np.linalg.eigvalsh(C)[:, 0] > rank_rtol
    first = np.asarray(first, dtype=int)
    second = np.asarray(second, dtype=int)
    ok = good[first] & good[second]
    P = first.size
    gamma, lam, beta = np.zeros(P), np.zeros((P, m)), np.zeros((P, m))
    if ok.any():
        L = np.zeros_like(C)
        L[good] = np.linalg.cholesky(C[good])
        logdet = 2 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2).clip(1e-300)), axis=1)
        i, j = first[ok], second[ok]
        Li, Lj = L[i], L[j]
        X = np.linalg.solve(Lj, Li)  # C⁻¹ R with B = C Cᵀ, A = R Rᵀ
        Y = np.linalg.solve(Lj, C[i] - C[j])
        Y = np.swapaxes(np.linalg.solve(Li, np.swapaxes(Y, 1, 2)), 1, 2)  # C⁻¹ (A − B) R⁻ᵀ
        M = np.swapaxes(X, 1, 2) @ Y
        M = (M + np.swapaxes(M, 1, 2)) / 2
        w, U = np.linalg.eigh(M)
        c = np.linalg.solve(Lj, (mu[i] - mu[j])[:, :, None])[:, :, 0]
        b = np.einsum("pki,pjk,pj->pi", U, X, c)  # Uᵀ Xᵀ c
        gamma[ok] = 0.5 * np.sum(c * c, axis=1) + 0.5 * (logdet[j] - logdet[i])
        lam[ok], beta[ok] = w, b
    return LossBatch(gamma, lam, beta), ok
