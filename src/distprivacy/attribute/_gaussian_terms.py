"""The general form of the Attribute-Private Gaussian Mechanism's inputs (Zhang, Ohrimenko &
Cummings, FAccT 2022, Alg. 1, Eq. 1): per sensitive attribute i, the sensitivity Δ_i F and the
conditional covariance floor L_i (:class:`SensitivityTerm`), from conditional moments over a
finite Θ (:func:`conditional_moments_term`), and the exact δ of a calibrated noise when Thm 1's
equal-covariance hypothesis is off (:func:`~distprivacy.attribute.gaussian.delta_with_moments`).

Part of :mod:`distprivacy.attribute.gaussian` (every name is importable from there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from distprivacy.checks import CALIBRATION_RULES
from distprivacy.exceptions import DistPrivacyError

#: The calibration rules of Alg. 1 (the paper's classic c, or exact μ-GDP accounting).
RULES = CALIBRATION_RULES
#: Readings of d(U) for interval secrets (supremum of |a − b|, or the centres' distance).
PAIR_READINGS = ("sup", "centres")
THEOREM = "Zhang, Ohrimenko & Cummings 2022, Alg. 1 / Thm 1 (privacy), Thm 2 (accuracy)"


def _as_matrix(x: ArrayLike, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be numeric") from None
    if not np.isfinite(a).all():
        raise DistPrivacyError(f"{name} has NaN or infinite entries")
    return a


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise DistPrivacyError(f"the number of records n must be a positive integer, got {n!r}")
    return int(n)


# ---------------------------------------------------------------------------------------------
# The general mechanism: per sensitive attribute, a sensitivity and a covariance floor
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SensitivityTerm:
    """What Algorithm 1 needs about one sensitive attribute i.

    Attributes
    ----------
    attribute : str
    sensitivity : float
        Δ_i F (Eq. 1; ℓ2 for vector-valued F).
    floor : ndarray (k, k)
        L_i with Cov(F(X) | g_i(X_i), θ) ⪰ L_i for every θ ∈ Θ (k = 1: min_θ Var).
    details : mapping
        How both were obtained (worst θ, slopes, d(U), ...).
    """

    attribute: str
    sensitivity: float
    floor: np.ndarray
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        d = float(self.sensitivity)
        if not (math.isfinite(d) and d >= 0):
            raise DistPrivacyError(f"the sensitivity of {self.attribute!r} must be finite ≥ 0")
        L = np.atleast_2d(_as_matrix(self.floor, f"the conditional covariance of {self.attribute}"))
        if L.shape[0] != L.shape[1] or not np.allclose(L, L.T, atol=1e-10 * (1 + abs(L).max())):
            raise DistPrivacyError(
                f"the conditional covariance of {self.attribute!r} must be a symmetric matrix"
            )
        w = np.linalg.eigvalsh(L)
        if w[0] < -1e-12 * max(1.0, abs(w[-1])):
            raise DistPrivacyError(
                f"the conditional variance of {self.attribute!r} is negative "
                f"(smallest eigenvalue {w[0]:.3g}); variances must be ≥ 0"
            )
        object.__setattr__(self, "sensitivity", d)
        object.__setattr__(self, "floor", (L + L.T) / 2)


def conditional_moments_term(
    attribute: str,
    means: ArrayLike,
    covariances: ArrayLike,
    pairs: Sequence[tuple[int, int]],
) -> SensitivityTerm:
    """Δ_i F and the covariance floor from conditional moments over a finite Θ (Eq. 1).

    Parameters
    ----------
    attribute : str
    means : array (T, S, k) or (T, S)
        E[F(X) | s, θ] for each of T distributions θ and S secrets (k statistics).
    covariances : array (T, S, k, k) or (T, S)
        Cov(F(X) | s, θ) (variances when F is real-valued).
    pairs : sequence of (a, b)
        Secret pairs, as indices into the S secrets.

    Notes
    -----
    Thm 1 assumes Cov(F | s, θ) does not depend on the secret; the floor is the minimum over
    secrets and θ (λ_min times the identity when the matrices differ and k > 1), which is
    what Alg. 1 uses.
    """
    m = _as_matrix(means, "the conditional means")
    if m.ndim == 2:
        m = m[..., None]
    if m.ndim != 3:
        raise DistPrivacyError("conditional means must have shape (thetas, secrets[, k])")
    T, S, k = m.shape
    c = _as_matrix(covariances, "the conditional covariances")
    if c.ndim == 2:
        c = c[..., None, None]
    if c.shape != (T, S, k, k):
        raise DistPrivacyError(
            f"conditional covariances have shape {c.shape}, expected {(T, S, k, k)} to match "
            f"the means {m.shape}"
        )
    if not pairs:
        raise DistPrivacyError("give at least one secret pair")
    for a, b in pairs:
        if not (0 <= a < S and 0 <= b < S) or a == b:
            raise DistPrivacyError(f"secret pair ({a}, {b}) is invalid for {S} secrets")
    diag = np.diagonal(c, axis1=2, axis2=3)
    if (diag < 0).any():
        raise DistPrivacyError(f"a conditional variance of {attribute!r} is negative")
    ia = np.array([p[0] for p in pairs])
    ib = np.array([p[1] for p in pairs])
    dist = np.linalg.norm(m[:, ia] - m[:, ib], axis=-1)  # (T, P)
    t, p = np.unravel_index(int(np.argmax(dist)), dist.shape)
    flat = c.reshape(T * S, k, k)
    if k == 1:
        floor = np.array([[flat[:, 0, 0].min()]])
    elif np.allclose(flat, flat[0]):
        floor = flat[0]
    else:
        floor = np.eye(k) * float(np.linalg.eigvalsh(flat)[:, 0].min())
    # how far Cov(F | s, θ) varies with the secret s (Thm 1 assumes it does not)
    spread = np.abs(c - c[:, :1]).max(axis=(1, 2, 3)) / np.maximum(np.abs(c).max(), 1e-300)
    return SensitivityTerm(
        attribute,
        float(dist[t, p]),
        floor,
        {
            "worst_theta": int(t),
            "worst_pair": [int(ia[p]), int(ib[p])],
            "covariance_mismatch": float(spread.max()),
        },
    )


def _lmin(t: SensitivityTerm) -> float:
    return float(np.linalg.eigvalsh(t.floor)[0])


def _top_up(floor: np.ndarray, target: float) -> np.ndarray:
    """The least Σ_Z along floor's eigenvectors with floor + Σ_Z ⪰ target·I."""
    w, U = np.linalg.eigh(floor)
    return (U * np.clip(target - w, 0.0, None)) @ U.T
