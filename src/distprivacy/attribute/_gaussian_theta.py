"""Θ for the multivariate Gaussian instantiation of the Attribute-Private Gaussian Mechanism
(Zhang, Ohrimenko & Cummings, FAccT 2022, §4.2): a finite list or a box of covariances
(:class:`GaussianTheta`) or ranges of the regression slope and residual variance
(:class:`RegressionTheta`), each giving Alg. 1's :class:`SensitivityTerm` and, for the Pufferfish
Wasserstein Mechanism, the Gaussian conditionals of F.

Part of :mod:`distprivacy.attribute.gaussian` (every name is importable from there).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from distprivacy.attribute._gaussian_terms import SensitivityTerm, _as_matrix, _check_n
from distprivacy.exceptions import DistPrivacyError

_MAX_BOX_ENTRIES = 16  # 2**16 vertices at most when Θ is a box of covariance entries

# ---------------------------------------------------------------------------------------------
# Θ for the multivariate Gaussian instantiation (§4.2)
# ---------------------------------------------------------------------------------------------


def conditional_mean(
    mean: ArrayLike, cov: ArrayLike, i: int, j: int | Sequence[int], a: float
) -> np.ndarray:
    """E[mean of X_J | mean of X_i = a] = μ_J + (V_Ji/V_ii)(a − μ_i) (§4.2)."""
    mu = _as_matrix(mean, "mean")
    V = _as_matrix(cov, "covariance")
    J = np.atleast_1d(j)
    return mu[J] + V[J, i] / V[i, i] * (float(a) - mu[i])


def conditional_covariance(cov: ArrayLike, i: int, j: int | Sequence[int], n: int) -> np.ndarray:
    """Cov(mean of X_J | mean of X_i) = (V_JJ − V_Ji V_iJ / V_ii)/n (§4.2)."""
    V = _as_matrix(cov, "covariance")
    J = np.atleast_1d(j)
    v = V[J, i]
    return (V[np.ix_(J, J)] - np.outer(v, v) / V[i, i]) / _check_n(n)


def _slopes_and_residuals(V: np.ndarray, i: int, J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a stack of covariances V (T, m, m): slopes V_Ji/V_ii (T, k) and residual covariances
    V_JJ − V_Ji V_iJ/V_ii (T, k, k)."""
    vii = V[:, i, i]
    vJi = V[:, J, i]
    beta = vJi / vii[:, None]
    resid = V[:, J][:, :, J] - vJi[:, :, None] * vJi[:, None, :] / vii[:, None, None]
    return beta, resid


def _check_pd(V: np.ndarray, names: Sequence[str], where: str) -> None:
    w = np.linalg.eigvalsh(V)
    bad = np.flatnonzero(w[:, 0] <= 1e-12 * np.maximum(1.0, np.abs(w[:, -1])))
    if bad.size:
        raise DistPrivacyError(
            f"{where} {int(bad[0])} over ({', '.join(names)}) is not positive definite "
            f"(smallest eigenvalue {w[bad[0], 0]:.3g}); a covariance needs positive variances "
            "and |V_ij| < √(V_ii V_jj)"
        )


@dataclass(frozen=True)
class GaussianTheta:
    """Θ: multivariate Gaussian record distributions N(μ, V), a finite list of V (§4.2).

    Only V enters the mechanism (Δ and the conditional variance do not depend on μ).

    Parameters
    ----------
    names : sequence of str
        The m attributes.
    covariances : array (T, m, m) or (m, m)
        The covariance of each θ ∈ Θ; each must be positive definite.
    means : array (T, m) or (m,), optional
        The means (used by :func:`conditional_mean` and for simulation only).
    """

    names: tuple[str, ...]
    covariances: np.ndarray
    means: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = tuple(self.names)
        if len(set(names)) != len(names) or not names:
            raise DistPrivacyError("attribute names must be distinct and non-empty")
        V = _as_matrix(self.covariances, "covariance")
        if V.ndim == 2:
            V = V[None]
        m = len(names)
        if V.ndim != 3 or V.shape[1:] != (m, m):
            raise DistPrivacyError(
                f"covariance has shape {V.shape[1:] if V.ndim == 3 else V.shape}, expected "
                f"({m}, {m}) for attributes {list(names)}"
            )
        if not np.allclose(V, np.swapaxes(V, 1, 2), atol=1e-12 * (1 + abs(V).max())):
            raise DistPrivacyError("covariance matrices must be symmetric")
        if (np.diagonal(V, axis1=1, axis2=2) <= 0).any():
            raise DistPrivacyError("variances on the covariance diagonal must be positive")
        _check_pd(V, names, "covariance")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "covariances", V)
        if self.means is not None:
            mu = _as_matrix(self.means, "mean")
            mu = np.broadcast_to(mu, (V.shape[0], m)) if mu.ndim == 1 else mu
            if mu.shape != (V.shape[0], m):
                raise DistPrivacyError(
                    f"means have shape {mu.shape}, expected ({V.shape[0]}, {m}) or ({m},)"
                )
            object.__setattr__(self, "means", np.array(mu))

    @classmethod
    def from_ranges(
        cls,
        names: Sequence[str],
        cov_low: ArrayLike,
        cov_high: ArrayLike,
        *,
        sensitive: str,
        query: Sequence[str],
    ) -> GaussianTheta:
        """Θ = every covariance with V_ab ∈ [low_ab, high_ab] (only the entries among the
        sensitive and query attributes matter). sup_Θ |V_ij|/V_ii, min_Θ λ_min of the residual
        covariance and hence Alg. 1's noise are attained at vertices of the box (each is
        monotone or concave in every entry), so Θ is represented by its vertices, each of which
        must be positive definite."""
        names = tuple(names)
        lo, hi = _as_matrix(cov_low, "cov_low"), _as_matrix(cov_high, "cov_high")
        m = len(names)
        if lo.shape != (m, m) or hi.shape != (m, m):
            raise DistPrivacyError(f"covariance ranges must have shape ({m}, {m})")
        if (lo > hi).any():
            raise DistPrivacyError("a covariance range has low > high")
        if not (np.allclose(lo, lo.T) and np.allclose(hi, hi.T)):
            raise DistPrivacyError("covariance ranges must be symmetric")
        idx = [_index(names, sensitive), *(_index(names, q) for q in query)]
        entries = [(a, b) for x, a in enumerate(idx) for b in idx[x:]]
        free = [(a, b) for a, b in entries if lo[a, b] != hi[a, b]]
        if len(free) > _MAX_BOX_ENTRIES:
            raise DistPrivacyError(
                f"{len(free)} covariance entries vary; at most {_MAX_BOX_ENTRIES} (release fewer "
                "attributes at once or give Θ as a list of covariances)"
            )
        base = (lo + hi) / 2
        verts = np.repeat(base[None], 2 ** len(free), axis=0)
        for v, corner in enumerate(itertools.product((0, 1), repeat=len(free))):
            for (a, b), c in zip(free, corner, strict=True):
                verts[v, a, b] = verts[v, b, a] = hi[a, b] if c else lo[a, b]
        sub = verts[:, idx][:, :, idx]
        _check_pd(sub, [names[i] for i in idx], "the covariance-range vertex")
        # attributes outside the problem are irrelevant: keep the sub-problem only
        return cls(tuple(names[i] for i in idx), sub)

    def term(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> SensitivityTerm:
        """Δ_i F = max_θ ‖V_Ji/V_ii‖ d(U) and the floor min_θ (V_JJ − V_Ji V_iJ/V_ii)/n."""
        n = _check_n(n)
        i = _index(self.names, sensitive)
        J = np.array([_index(self.names, q) for q in query])
        beta, resid = _slopes_and_residuals(self.covariances, i, J)
        norms = np.linalg.norm(beta, axis=1)
        t = int(np.argmax(norms))
        if len(J) == 1:
            floor = np.array([[resid[:, 0, 0].min()]])
        elif len(resid) == 1:
            floor = resid[0]
        else:
            floor = np.eye(len(J)) * float(np.linalg.eigvalsh(resid)[:, 0].min())
        return SensitivityTerm(
            sensitive,
            float(norms[t]) * float(diameter),
            floor / n,
            {
                "max_slope": float(norms[t]),
                "slope_worst_theta": beta[t].tolist(),
                "diameter": float(diameter),
                "n": n,
                "thetas": len(self.covariances),
            },
        )

    def conditionals(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> dict[str, dict[str, Any]]:
        """For the Pufferfish Wasserstein Mechanism: per θ, the Gaussian laws of F (up to a
        common shift) given two secrets at distance d(U): N(β_θ a, R_θ/n), a ∈ {0, d}."""
        from distprivacy.attribute.pufferfish import GaussianConditional

        n = _check_n(n)
        i = _index(self.names, sensitive)
        J = np.array([_index(self.names, q) for q in query])
        beta, resid = _slopes_and_residuals(self.covariances, i, J)
        return {
            f"theta{t}": {
                "a": GaussianConditional(np.zeros(len(J)), resid[t] / n),
                "b": GaussianConditional(beta[t] * diameter, resid[t] / n),
            }
            for t in range(len(beta))
        }


def _index(names: Sequence[str], name: str) -> int:
    try:
        return list(names).index(name)
    except ValueError:
        raise DistPrivacyError(
            f"unknown attribute {name!r}; the attributes are {', '.join(names)}"
        ) from None


def _interval(value: Any, name: str) -> tuple[float, float]:
    if isinstance(value, int | float | np.floating | np.integer):
        lo = hi = float(value)
    else:
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise DistPrivacyError(f"{name} must be a number or a [low, high] range") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise DistPrivacyError(f"{name} must be a finite range with low ≤ high, got {value!r}")
    return lo, hi


@dataclass(frozen=True)
class RegressionTheta:
    """Θ given by ranges of the two §4.2 quantities, per (sensitive i, query j):

    * the slope V_ij/V_ii (for a 0/1 sensitive attribute: E[X_j | X_i = 1] − E[X_j | X_i = 0]);
    * the residual variance V_jj − V_ij²/V_ii = Var(X_j | X_i) per record.

    Any slope with any positive residual variance is a valid Gaussian, so every box is a valid Θ.
    Residuals of different query attributes are taken as independent given X_i (a vector query
    gets a diagonal residual covariance).

    Parameters
    ----------
    slopes : mapping (i, j) -> float or (low, high)
    residual_variances : mapping (i, j) -> float or (low, high), each > 0
    """

    slopes: Mapping[tuple[str, str], tuple[float, float]]
    residual_variances: Mapping[tuple[str, str], tuple[float, float]]

    def __post_init__(self) -> None:
        s = {tuple(k): _interval(v, f"slope of {k}") for k, v in self.slopes.items()}
        r = {
            tuple(k): _interval(v, f"residual variance of {k}")
            for k, v in self.residual_variances.items()
        }
        if set(s) != set(r):
            raise DistPrivacyError("give a slope and a residual variance for the same pairs (i, j)")
        for k, (lo, _) in r.items():
            if lo <= 0:
                raise DistPrivacyError(
                    f"the residual variance of {k[1]!r} given {k[0]!r} must be positive, got {lo:g}"
                )
        object.__setattr__(self, "slopes", s)
        object.__setattr__(self, "residual_variances", r)

    def term(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> SensitivityTerm:
        """Δ_i F = ‖(max |slope_ij|)_j‖ d(U); floor = diag(min residual variance_ij)/n."""
        n = _check_n(n)
        missing = [q for q in query if (sensitive, q) not in self.slopes]
        if missing:
            raise DistPrivacyError(
                f"Θ gives no slope/residual variance for {missing} given {sensitive!r}"
            )
        slope = np.array([max(abs(v) for v in self.slopes[(sensitive, q)]) for q in query])
        resid = np.array([self.residual_variances[(sensitive, q)][0] for q in query])
        return SensitivityTerm(
            sensitive,
            float(np.linalg.norm(slope)) * float(diameter),
            np.diag(resid) / n,
            {
                "max_slope": slope.tolist(),
                "min_residual_variance": resid.tolist(),
                "diameter": float(diameter),
                "n": n,
            },
        )

    def conditionals(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> dict[str, dict[str, Any]]:
        """For the Pufferfish Wasserstein Mechanism: per vertex of the slope box, the Gaussian
        laws of F given two secrets at distance d(U) (W∞ = ‖slope‖₁ d is convex in the slopes,
        so its maximum over the box is at a vertex)."""
        from distprivacy.attribute.pufferfish import GaussianConditional

        n = _check_n(n)
        self.term(sensitive, query, n, diameter)  # validates the attributes
        cov = np.diag([self.residual_variances[(sensitive, q)][0] for q in query]) / n
        out: dict[str, dict[str, Any]] = {}
        for corner in itertools.product(*(self.slopes[(sensitive, q)] for q in query)):
            slope = np.array(corner, dtype=float)
            label = "slopes=(" + ", ".join(f"{v:g}" for v in corner) + ")"
            out[label] = {
                "a": GaussianConditional(np.zeros(len(query)), cov),
                "b": GaussianConditional(slope * diameter, cov),
            }
        return out
