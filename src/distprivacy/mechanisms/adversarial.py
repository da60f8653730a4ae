"""Mechanisms exploiting adversarial uncertainty (Chen & Ohrimenko 2023, §4.3 and App. A).

The model: f_θ = N(μ_θ, Σ_θ) with Σ_θi = Σ_θj for every pair. Adding Z ~ N(0, Σ_Z) is
(ε, δ)-distribution private when (μ_i − μ_j)ᵀ (Σ_θ + Σ_Z)⁻¹ (μ_i − μ_j) ≤ (ε/c)² for every pair
(Cor. A.1), i.e. when the mechanism's μ-GDP parameter is at most ε/c. On real data the two
members of a pair have slightly different covariances (Appendix C.1): under the classic rule every
condition is imposed with *each* member's covariance (the worst case); under the exact rule with
their average, followed by the exact profile of the unequal fits
(:mod:`distprivacy.mechanisms.gaussian`).
"""

from __future__ import annotations

import numpy as np

from distprivacy.mechanisms.base import covariance_assumption, delta_e, not_applicable
from distprivacy.mechanisms.gaussian import (
    Convention,
    GaussianMechanism,
    max_mahalanobis,
    pair_covariances,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution

_GAUSSIAN = "f_θ is multivariate Gaussian N(μ_θ, Σ_θ) for every θ"


def _cov_text(model: FModel, convention: Convention) -> tuple[str, str | None]:
    text, warn = covariance_assumption(model)
    if convention == "average":
        text = text.replace(
            "each θ's own covariance is used in the sup",
            "one covariance per pair, the average of its two fits; the exact profile of the "
            "unequal fits is checked too",
        )
    return text, warn


class NoNoise(GaussianMechanism):
    """Release F(D) unchanged when the model's own uncertainty suffices.

    Chen & Ohrimenko (2023), Theorem 4.4: M(D) = F(D) is (ε, δ)-distribution private when
    (μ_i − μ_j)ᵀ Σ_θ⁻¹ (μ_i − μ_j) ≤ (ε/c)² for every pair (classic rule; f_θ Gaussian with a
    shared covariance). Under the exact rule the bound is μ*², μ* the exact μ-GDP target
    (:mod:`distprivacy.mechanisms.gaussian`). Not applicable, with the measured values, when the
    test fails.
    """

    name = "NoNoise"
    theorem = "Chen & Ohrimenko 2023, Theorem 4.4"
    requires_invertible = True

    def _noise(self, model: FModel, mu: float, convention: Convention):
        pairs = pair_covariances(model, convention)
        q = max_mahalanobis(pairs, None)
        if q > mu:
            raise not_applicable(
                self.name,
                f"the no-noise test fails: max Mahalanobis distance of the mean differences is "
                f"{q:.4g} > μ* = {mu:.4g}",
            )
        cov_text, cov_warn = _cov_text(model, convention)
        return NoiseDistribution.none(model.dim), {
            "assumptions": (_GAUSSIAN, cov_text),
            "warnings": [cov_warn],
            "details": {"max_mahalanobis": q, "bound": mu},
        }


class EigenvectorGaussian(GaussianMechanism):
    """EigM-G: Gaussian noise along the eigenvectors of Σ_θ, topping each eigenvalue up to
    T = (Δ_E,2 / μ*)² (classic: (c Δ_E,2 / ε)²).

    Chen & Ohrimenko (2023), Theorem 4.5 (via Cor. A.2): σ_k² = max_S max(0, T − v_kᵀ S v_k),
    Σ_Z = Σ_k σ_k² v_k v_kᵀ, S ranging over the covariances the pairs' conditions use. The theorem
    assumes every Σ_θ has the same eigenvectors; on real data they differ slightly, so the library
    takes the eigenvectors of their average, then *certifies* Cor. A.2 (λ_min(S + Σ_Z) ≥ T for
    every S) and, if it fails, adds the shortfall as isotropic variance (``details["top_up"]``).
    With common eigenvectors this is exactly the paper's mechanism (top-up 0).
    """

    name = "EigM-G"
    theorem = "Chen & Ohrimenko 2023, Theorem 4.5 (certified by Corollary A.2)"

    def _noise(self, model: FModel, mu: float, convention: Convention):
        d2 = delta_e(model, 2)
        T = (d2 / mu) ** 2
        S = np.array([c for _, covs in pair_covariances(model, convention) for c in covs])
        _, V = np.linalg.eigh(S.mean(axis=0))
        lam = np.einsum("ik,tij,jk->tk", V, S, V)  # v_kᵀ S v_k
        var = np.maximum(0.0, T - lam).max(axis=0)
        short = T - np.linalg.eigvalsh(S + ((V * var) @ V.T)[None])[:, 0].min()
        top_up = float(short) if short > 1e-9 * max(T, 1e-300) else 0.0
        var = var + top_up
        cov_text, cov_warn = _cov_text(model, convention)
        warns = [cov_warn]
        if top_up > 0:
            warns.append(
                f"the eigenvectors of Σ_θ differ across θ; added isotropic variance {top_up:.4g} "
                "so that Cor. A.2 holds for every θ"
            )
        return NoiseDistribution("gaussian", V, np.sqrt(var)), {
            "sensitivity": d2,
            "sensitivity_label": "Δ_E,2",
            "assumptions": (
                _GAUSSIAN,
                cov_text,
                "the eigenvectors of Σ_θ are the same for every θ (else certified by Cor. A.2)",
            ),
            "warnings": warns,
            "details": {
                "target_variance": T,
                "variances": var,
                "eigen_directions": V.T,
                "top_up": top_up,
            },
        }


def daum_variance(d: np.ndarray, S: np.ndarray, v: np.ndarray, bound: float) -> float | None:
    """Smallest σ² ≥ 0 with dᵀ (S + σ² v vᵀ)⁻¹ d ≤ bound, or None if none exists.

    Writing q = vᵀS⁻¹v, b = vᵀS⁻¹d and r = (d − (b/q)v)ᵀ S⁻¹ (d − (b/q)v) (the part of d that
    noise along v cannot mask), Sherman–Morrison gives dᵀ(S + σ²vvᵀ)⁻¹d = r + (b²/q)/(1 + σ²q),
    so σ² = b²/(q²(bound − r)) − 1/q when r < bound. For d = α v this is the paper's closed
    form σ² = (α c/ε)² − 1/(vᵀ Σ⁻¹ v) (Algorithm 1, line 7: Σ + t v vᵀ ≻ 0 ⇔ t > −1/(vᵀΣ⁻¹v)).
    """
    L = np.linalg.cholesky(S)
    Si_v = np.linalg.solve(L.T, np.linalg.solve(L, v))
    Si_d = np.linalg.solve(L.T, np.linalg.solve(L, d))
    q = float(v @ Si_v)
    b = float(v @ Si_d)
    a = float(d @ Si_d)
    if a <= bound:
        return 0.0
    perp = d - (b / q) * v
    y = np.linalg.solve(L, perp)
    r = float(y @ y)
    if r >= bound * (1 - 1e-12):
        return None
    return max(0.0, b * b / (q * q * (bound - r)) - 1.0 / q)


class DauM(GaussianMechanism):
    """DauM-G: Gaussian noise along one direction v, reduced by the model's own variance.

    Chen & Ohrimenko (2023), Algorithm 1 and Theorem A.1 (directional + adversarial
    uncertainty): Z = Y v, Y ~ N(0, σ²), σ² = max over pairs of σ²_ij with
    σ²_ij = (α_ij/μ*)² − 1/(vᵀ S⁻¹ v), α_ij = (μ_i − μ_j)ᵀ v — the closed form of line 7 with the
    classic μ* = ε/c (no bisection; the condition of Cor. A.1 holds with equality).

    Parameters
    ----------
    v : array (m,), optional
        The direction. Default: the leading right-singular vector of the mean differences (for a
        single pair, their direction). When a difference is not parallel to v, σ²_ij is the
        smallest variance satisfying Cor. A.1 for it (see :func:`daum_variance`); if no variance
        along v can, the mechanism is not applicable.
    """

    name = "DauM-G"
    theorem = "Chen & Ohrimenko 2023, Algorithm 1 / Theorem A.1 (via Corollary A.1)"
    requires_invertible = True

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float = 1e-3,
        calibration: str = "exact",
        v: np.ndarray | None = None,
        **targets: float | None,
    ) -> None:
        super().__init__(epsilon, delta, calibration, **targets)  # type: ignore[arg-type]
        self.v = None if v is None else np.asarray(v, dtype=float)

    def _direction(self, model: FModel) -> np.ndarray:
        if self.v is not None:
            if self.v.shape != (model.dim,) or not np.isfinite(self.v).all():
                raise not_applicable(self.name, f"v must be a finite vector of length {model.dim}")
            nv = np.linalg.norm(self.v)
            if nv == 0:
                raise not_applicable(self.name, "v must be non-zero")
            return self.v / nv
        D = model.mean_differences()
        _, _, Vt = np.linalg.svd(D, full_matrices=False)
        v = Vt[0]
        return v if v[np.argmax(np.abs(v))] > 0 else -v

    def _noise(self, model: FModel, mu: float, convention: Convention):
        v = self._direction(model)
        bound = mu**2
        per_pair = []
        for d, covs in pair_covariances(model, convention):
            worst = 0.0
            for S in covs:
                s2 = daum_variance(d, S, v, bound)
                if s2 is None:
                    raise not_applicable(
                        self.name,
                        "a pair's mean difference is too far from the direction v for noise "
                        "along v to mask it; use DirM-G, EigM-G or OptM-G, or give v",
                    )
                worst = max(worst, s2)
            per_pair.append(worst)
        var = float(max(per_pair))
        D = model.mean_differences()
        cos = np.abs(D @ v) / np.maximum(np.linalg.norm(D, axis=1), 1e-300)
        cov_text, cov_warn = _cov_text(model, convention)
        return NoiseDistribution("gaussian", v[:, None], np.array([np.sqrt(var)])), {
            "sensitivity": float(np.abs(D @ v).max()),
            "sensitivity_label": "max |α_ij|",
            "assumptions": (
                _GAUSSIAN,
                cov_text,
                "μ_θi − μ_θj is parallel to v for every pair (measured: smallest |cos| "
                f"{cos.min():.6f}; non-parallel pairs are covered exactly by Cor. A.1)",
            ),
            "warnings": [cov_warn],
            "details": {"direction": v, "sigma2": var, "per_pair_sigma2": per_pair},
        }
