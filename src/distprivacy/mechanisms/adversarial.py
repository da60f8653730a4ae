"""Mechanisms exploiting adversarial uncertainty (Chen & Ohrimenko 2023, §4.3 and App. A).

The model: f_θ = N(μ_θ, Σ_θ) with Σ_θi = Σ_θj for every pair. Adding Z ~ N(0, Σ_Z) is
(ε, δ)-distribution private when (μ_i − μ_j)ᵀ (Σ_θ + Σ_Z)⁻¹ (μ_i − μ_j) ≤ (ε/c)² for every pair
(Cor. A.1). On real data the two members of a pair have slightly different covariances
(Appendix C.1); every condition here is imposed with *each* member's covariance (the worst case),
and the calibration reports how far apart they are.
"""

from __future__ import annotations

import numpy as np

from distprivacy.accounting import classic_c, pair_mahalanobis, warn_classic
from distprivacy.mechanisms.base import (
    Calibration,
    Mechanism,
    covariance_assumption,
    delta_e,
    not_applicable,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution

_GAUSSIAN = "f_θ is multivariate Gaussian N(μ_θ, Σ_θ) for every θ"


def _warnings(*items: str | None) -> tuple[str, ...]:
    return tuple(w for w in items if w)


class NoNoise(Mechanism):
    """Release F(D) unchanged when the model's own uncertainty suffices.

    Chen & Ohrimenko (2023), Theorem 4.4: M(D) = F(D) is (ε, δ)-distribution private when
    (μ_i − μ_j)ᵀ Σ_θi⁻¹ (μ_i − μ_j) ≤ (ε/c)² for every pair (c = √(2 ln(1.25/δ)), ε < 1), with f_θ
    Gaussian and Σ_θi = Σ_θj. Not applicable (with the measured values) when the test fails.
    """

    name = "NoNoise"
    theorem = "Chen & Ohrimenko 2023, Theorem 4.4"

    def _calibrate(self, model: FModel) -> Calibration:
        model.require_invertible()
        bound = (self.epsilon / classic_c(self.delta)) ** 2
        q = pair_mahalanobis(model.means_, model.covariances_, model.pair_indices_)
        if q.max() > bound:
            raise not_applicable(
                self.name,
                f"the no-noise test fails: max Mahalanobis² of the mean differences is "
                f"{q.max():.4g} > (ε/c)² = {bound:.4g}",
            )
        cov_text, cov_warn = covariance_assumption(model)
        return self._make(
            model,
            NoiseDistribution.none(model.dim),
            rule=self.calibration,
            assumptions=(_GAUSSIAN, cov_text),
            warnings=_warnings(warn_classic(self.epsilon), cov_warn),
            details={"max_mahalanobis_sq": float(q.max()), "bound": bound},
        )


class EigenvectorGaussian(Mechanism):
    """EigM-G: Gaussian noise along the eigenvectors of Σ_θ, topping each eigenvalue up to
    (c Δ_E,2 / ε)².

    Chen & Ohrimenko (2023), Theorem 4.5 (via Cor. A.2): σ_k² = max_θ max(0, T − v_kᵀ Σ_θ v_k)
    with T = (c Δ_E,2/ε)², Σ_Z = Σ_k σ_k² v_k v_kᵀ. The theorem assumes every Σ_θ has the same
    eigenvectors; on real data they differ slightly, so the library takes the eigenvectors of the
    average Σ_θ, then *certifies* Cor. A.2 (λ_min(Σ_θ + Σ_Z) ≥ T for every θ) and, if it fails,
    adds the shortfall as isotropic variance (reported in ``details["top_up"]``). With common
    eigenvectors this is exactly the paper's mechanism (top-up 0).
    """

    name = "EigM-G"
    theorem = "Chen & Ohrimenko 2023, Theorem 4.5 (certified by Corollary A.2)"

    def _calibrate(self, model: FModel) -> Calibration:
        d2 = delta_e(model, 2)
        T = (classic_c(self.delta) * d2 / self.epsilon) ** 2
        S = model.covariances_
        _, V = np.linalg.eigh(S.mean(axis=0))
        lam = np.einsum("ik,tij,jk->tk", V, S, V)  # v_kᵀ Σ_θ v_k, shape (T, m)
        var = np.maximum(0.0, T - lam).max(axis=0)
        short = T - np.linalg.eigvalsh(S + ((V * var) @ V.T)[None])[:, 0].min()
        top_up = float(short) if short > 1e-9 * max(T, 1e-300) else 0.0
        var = var + top_up
        cov_text, cov_warn = covariance_assumption(model)
        warns = [warn_classic(self.epsilon), cov_warn]
        if top_up > 0:
            warns.append(
                f"the eigenvectors of Σ_θ differ across θ; added isotropic variance {top_up:.4g} "
                "so that Cor. A.2 holds for every θ"
            )
        return self._make(
            model,
            NoiseDistribution("gaussian", V, np.sqrt(var)),
            sensitivity=d2,
            sensitivity_label="Δ_E,2",
            rule=self.calibration,
            assumptions=(
                _GAUSSIAN,
                cov_text,
                "the eigenvectors of Σ_θ are the same for every θ (else certified by Cor. A.2)",
            ),
            warnings=_warnings(*warns),
            details={
                "target_variance": T,
                "variances": var,
                "eigen_directions": V.T,
                "top_up": top_up,
            },
        )


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


class DauM(Mechanism):
    """DauM-G: Gaussian noise along one direction v, reduced by the model's own variance.

    Chen & Ohrimenko (2023), Algorithm 1 and Theorem A.1 (directional + adversarial uncertainty):
    Z = Y v, Y ~ N(0, σ²), σ² = max over pairs of σ²_ij with σ²_ij = (α_ij c/ε)² − 1/(vᵀΣ_θi⁻¹v),
    α_ij = (μ_i − μ_j)ᵀ v — the closed form of line 7 (no bisection; the condition of Cor. A.1
    holds with equality). Each pair is taken with both members' covariances.

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

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        calibration: str = "classic",
        v: np.ndarray | None = None,
    ) -> None:
        super().__init__(epsilon, delta, calibration)
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
        _, _s, Vt = np.linalg.svd(D, full_matrices=False)
        v = Vt[0]
        return v if v[np.argmax(np.abs(v))] > 0 else -v

    def _calibrate(self, model: FModel) -> Calibration:
        model.require_invertible()
        v = self._direction(model)
        bound = (self.epsilon / classic_c(self.delta)) ** 2
        D = model.mean_differences()
        per_pair = []
        for (i, j), d in zip(model.pair_indices_, D, strict=True):
            worst = 0.0
            for t in (i, j):
                s2 = daum_variance(d, model.covariances_[t], v, bound)
                if s2 is None:
                    raise not_applicable(
                        self.name,
                        f"the mean difference of pair ({model.theta_label(i)}, "
                        f"{model.theta_label(j)}) is too far from the direction v for noise "
                        "along v to mask it; use DirM-G/EigM-G or give v",
                    )
                worst = max(worst, s2)
            per_pair.append(worst)
        var = float(max(per_pair))
        cos = np.abs(D @ v) / np.maximum(np.linalg.norm(D, axis=1), 1e-300)
        cov_text, cov_warn = covariance_assumption(model)
        alpha = float(np.abs(D @ v).max())
        return self._make(
            model,
            NoiseDistribution("gaussian", v[:, None], np.array([np.sqrt(var)])),
            sensitivity=alpha,
            sensitivity_label="max |α_ij|",
            rule=self.calibration,
            assumptions=(
                _GAUSSIAN,
                cov_text,
                "μ_θi − μ_θj is parallel to v for every pair (measured: smallest |cos| "
                f"{cos.min():.6f}; non-parallel pairs are covered exactly by Cor. A.1)",
            ),
            warnings=_warnings(warn_classic(self.epsilon), cov_warn),
            details={"direction": v, "sigma2": var, "per_pair_sigma2": per_pair},
        )
