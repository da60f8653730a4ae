"""Privacy accounting: the classic Gaussian calibration, the Gaussian-model conditions of Chen &
Ohrimenko (2023) and their relaxed-assumption guarantees (the input checks are
:mod:`distprivacy.checks`).

* ``exact`` (default): the Gaussian mechanisms calibrated to the exact μ-GDP target for (ε, δ)
  (:mod:`distprivacy.mechanisms.gaussian`, :mod:`distprivacy.profiles`).
* ``classic``: c = √(2 ln(1.25/δ)) (Thm 4.2, 4.4, 4.5, A.1; Dwork & Roth 2014, Thm A.1), valid for
  ε < 1; the paper's experiments use it for every ε.
* Cor. A.1: F + Z with Z ~ N(0, Σ_Z) is (ε, δ)-distribution private when
  (μ_i − μ_j)ᵀ (Σ_θ + Σ_Z)⁻¹ (μ_i − μ_j) ≤ (ε/c)² for every pair — checked here with the
  covariance of each member of the pair (worst case), since on real data Σ_θi ≠ Σ_θj.
* Thm 4.6 / 4.7: the weaker (ε′, δ′) when the model f̃_θ only approximates f_θ.
"""

from __future__ import annotations

import math

import numpy as np

from distprivacy.checks import check_delta, check_epsilon, check_number
from distprivacy.exceptions import DistPrivacyError


def classic_c(delta: float) -> float:
    """c = √(2 ln(1.25/δ)) of the classic Gaussian mechanism (Thm 4.2)."""
    return math.sqrt(2.0 * math.log(1.25 / check_delta(delta)))


def classic_warning(epsilon: float) -> str | None:
    """The caveat for ε ≥ 1 under the classic rule, or None."""
    if epsilon >= 1:
        return (
            f"epsilon={epsilon:g} ≥ 1: the classic rule c = √(2 ln(1.25/δ)) is proven only for "
            "ε < 1 (Thm 4.2); the paper applies it anyway, and the guarantee is not established"
        )
    return None


def mahalanobis_sq(d: np.ndarray, S: np.ndarray) -> float:
    """dᵀ S⁻¹ d via a Cholesky solve; raises if S is not positive definite."""
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        raise DistPrivacyError(
            "a covariance matrix is singular or not positive definite; the Gaussian-model "
            "conditions need Σ_θ + Σ_Z ≻ 0"
        ) from None
    y = np.linalg.solve(L, d)
    return float(y @ y)


def pair_mahalanobis(
    means: np.ndarray,
    covariances: np.ndarray,
    pair_indices: tuple[tuple[int, int], ...],
    noise_covariance: np.ndarray | None = None,
) -> np.ndarray:
    """max over {Σ_θi, Σ_θj} of (μ_i − μ_j)ᵀ (Σ + Σ_Z)⁻¹ (μ_i − μ_j), for each pair.

    Using both members' covariances makes the check the worst case when the equal-covariance
    assumption of Thm 4.4 / Cor. A.1 does not hold exactly.
    """
    m = means.shape[1]
    Z = np.zeros((m, m)) if noise_covariance is None else np.asarray(noise_covariance)
    out = []
    for i, j in pair_indices:
        d = means[i] - means[j]
        out.append(max(mahalanobis_sq(d, covariances[t] + Z) for t in (i, j)))
    return np.array(out)


def corollary_a1_holds(
    means: np.ndarray,
    covariances: np.ndarray,
    pair_indices: tuple[tuple[int, int], ...],
    noise_covariance: np.ndarray | None,
    epsilon: float,
    delta: float,
    rtol: float = 1e-9,
) -> bool:
    """Whether Cor. A.1 certifies F + N(0, Σ_Z) at (ε, δ) under the classic rule."""
    bound = float(np.float64(check_epsilon(epsilon) / classic_c(delta)) ** 2)  # may be inf
    q = pair_mahalanobis(means, covariances, pair_indices, noise_covariance)
    return bool(np.all(q <= bound * (1 + rtol)))


def corollary_a2_holds(
    covariances: np.ndarray,
    noise_covariance: np.ndarray,
    delta_e2: float,
    epsilon: float,
    delta: float,
    rtol: float = 1e-9,
) -> bool:
    """Whether λ_min(Σ_θ + Σ_Z) ≥ (c Δ_E,2 / ε)² for every θ (Cor. A.2)."""
    T = float(np.float64(classic_c(delta) * delta_e2 / check_epsilon(epsilon)) ** 2)
    lam = np.linalg.eigvalsh(covariances + noise_covariance[None])[:, 0]
    return bool(np.all(lam >= T * (1 - rtol)))


def relaxed_guarantee_max_divergence(
    epsilon: float, delta: float, lam: float, eta: float
) -> tuple[float, float]:
    """Thm 4.6: guarantee of a mechanism calibrated on approximations f̃_θ.

    If the mechanism is (ε, δ)-distribution private for f̃ and both η-approximate max-divergences
    between f̃_θ and f_θ are at most λ, it is (ε + 2λ, (1 + e^{ε+λ}) η + e^λ δ)-distribution
    private for the true f_θ.
    """
    e, d = check_epsilon(epsilon), check_delta(delta, allow_zero=True)
    lam = check_number(lam, "lambda", low=0)
    eta = check_delta(eta, allow_zero=True)
    try:
        out = e + 2 * lam, (1 + math.exp(e + lam)) * eta + math.exp(lam) * d
    except OverflowError:
        out = (math.inf, math.inf)
    if not all(math.isfinite(x) for x in out):
        raise DistPrivacyError(
            f"the relaxed guarantee overflows for epsilon={e:g}, lambda={lam:g}: e^(ε+λ) is not "
            "a finite number; the guarantee is vacuous"
        )
    return out


def relaxed_guarantee_wasserstein(
    epsilon: float, delta: float, W: float, lam: float
) -> tuple[float, float, float]:
    """Thm 4.7: extra Laplace noise covering a model error W = sup_θ W∞(f_θ, f̃_θ).

    Adding Lap(W/λ) to every coordinate of an (ε, δ) mechanism calibrated on f̃ gives
    (ε + 2λ, e^λ δ)-distribution privacy for the true f_θ.

    Returns
    -------
    (epsilon', delta', laplace_scale)
    """
    e, d = check_epsilon(epsilon), check_delta(delta, allow_zero=True)
    W = check_number(W, "W", low=0)
    lam = check_number(lam, "lambda", low=0, low_open=True)
    if lam > 700:
        raise DistPrivacyError(
            f"lambda={lam:g} makes e^λ·δ overflow; the guarantee is vacuous (use lambda ≤ 700)"
        )
    return e + 2 * lam, math.exp(lam) * d, W / lam
