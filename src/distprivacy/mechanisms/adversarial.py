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

from typing import Any

import numpy as np

from distprivacy.checks import check_array
from distprivacy.exceptions import MoreNoiseWarning, Notice
from distprivacy.mechanisms._calibrator import GaussianProperties, Proposal
from distprivacy.mechanisms.base import (
    covariance_assumption,
    delta_e,
    not_applicable,
    register_mechanism,
)
from distprivacy.mechanisms.gaussian import (
    Convention,
    GaussianMechanism,
    GDPMechanism,
    certify_top_up,
    max_mahalanobis,
    pair_covariances,
    top_up_shape,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.request import GaussianOptions
from distprivacy.targets import Target

_GAUSSIAN = "f_θ is multivariate Gaussian N(μ_θ, Σ_θ) for every θ"


def _cov_text(model: FModel, convention: Convention) -> tuple[str, Notice | None]:
    text, warn = covariance_assumption(model)
    if convention == "average":
        text = text.replace(
            "each θ's own covariance is used in the sup",
            "one covariance per pair, the average of its two fits; the exact profile of the "
            "unequal fits is checked too",
        )
    return text, warn


@register_mechanism
class NoNoise(GDPMechanism):
    """Release F(D) unchanged when the model's own uncertainty suffices.

    Chen & Ohrimenko (2023), Theorem 4.4: M(D) = F(D) is (ε, δ)-distribution private when
    (μ_i − μ_j)ᵀ Σ_θ⁻¹ (μ_i − μ_j) ≤ (ε/c)² for every pair (classic rule; f_θ Gaussian with a
    shared covariance). Under the exact rule the bound is μ*², μ* the exact μ-GDP target
    (:mod:`distprivacy.mechanisms.gaussian`). Not applicable, with the measured values, when the
    test fails.
    """

    name = "NoNoise"
    theorem = "Chen & Ohrimenko 2023, Theorem 4.4"
    #: Thm 4.4's condition uses Σ_θ⁻¹; M(D) = F(D) adds no noise, so a shortfall under the
    #: fitted covariances is refused (adding noise would make it another mechanism).
    properties = GaussianProperties(needs_invertible=True, adds_noise=False)

    def propose(self, model: FModel, mu: float, convention: Convention) -> Proposal:
        pairs = pair_covariances(model, convention)
        q = max_mahalanobis(pairs, None)
        if q > mu:
            raise not_applicable(
                self.name,
                f"the no-noise test fails: max Mahalanobis distance of the mean differences is "
                f"{q:.4g} > μ* = {mu:.4g}",
            )
        cov_text, cov_warn = _cov_text(model, convention)
        return Proposal.of(
            NoiseDistribution.none(model.dim),
            assumptions=(_GAUSSIAN, cov_text),
            warnings=[cov_warn],
            details={"max_mahalanobis": q, "bound": mu},
        )


@register_mechanism
class EigenvectorGaussian(GaussianMechanism):
    """EigM-G: Gaussian noise along the eigenvectors of Σ_θ, topping each eigenvalue up to
    T = (Δ_E,2 / μ*)² (classic: (c Δ_E,2 / ε)²).

    Chen & Ohrimenko (2023), Theorem 4.5 (via Cor. A.2): σ_k² = max_S max(0, T − v_kᵀ S v_k),
    Σ_Z = Σ_k σ_k² v_k v_kᵀ, S ranging over the covariances the pairs' conditions use. The theorem
    assumes every Σ_θ has the same eigenvectors; on real data they differ slightly, so the library
    takes the eigenvectors of their average and then *certifies* the condition the guarantee
    needs, Cor. A.1 (dᵀ(S + Σ_Z)⁻¹d ≤ μ*² for every pair and covariance S, which Cor. A.2
    implies); if it fails, the least τ·R is added, R the model-shaped top-up of
    :func:`~distprivacy.mechanisms.gaussian.top_up_shape` (``details["top_up"]`` = τ). With
    common eigenvectors this is exactly the paper's mechanism (τ = 0). Like the paper's, T is
    one variance for every direction in raw units: EigM-G is not unit-equivariant (DauM-G,
    DirM-G and OptM-G are).
    """

    name = "EigM-G"
    theorem = "Chen & Ohrimenko 2023, Theorem 4.5 (certified by Corollary A.1)"

    def propose(self, model: FModel, mu: float, convention: Convention) -> Proposal:
        d2 = delta_e(model, 2)
        T = (d2 / mu) ** 2
        pairs = pair_covariances(model, convention)
        S = np.array([c for _, covs in pairs for c in covs])
        _, V = np.linalg.eigh(S.mean(axis=0))
        lam = np.einsum("ik,tij,jk->tk", V, S, V)  # v_kᵀ S v_k
        var = np.maximum(0.0, T - lam).max(axis=0)
        Sigma, top_up = certify_top_up(pairs, mu, (V * var) @ V.T, top_up_shape(model))
        cov_text, cov_warn = _cov_text(model, convention)
        warns = [cov_warn]
        if top_up > 0:
            warns.append(
                Notice(
                    "the eigenvectors of Σ_θ differ across θ; added "
                    f"{top_up:.4g} × (the average covariance of F + the mean differences' outer "
                    "products) so that Cor. A.1 holds for every θ",
                    MoreNoiseWarning,
                )
            )
        return Proposal.of(
            NoiseDistribution.gaussian_from_covariance(Sigma),
            sensitivity=d2,
            sensitivity_label="Δ_E,2",
            assumptions=(
                _GAUSSIAN,
                cov_text,
                "the eigenvectors of Σ_θ are the same for every θ (else certified by Cor. A.1)",
            ),
            warnings=warns,
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
    # In unit-free coordinates (each statistic divided by its SD): q, b, a and r are invariant
    # under that map (v and d map with x), and the Cholesky factor stays well conditioned when
    # dollars sit next to shares.
    sd = np.sqrt(np.diag(S))
    sd = np.where(sd > 0, sd, 1.0)
    S, v, d = S / np.outer(sd, sd), v / sd, d / sd
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


@register_mechanism
class DauM(GaussianMechanism):
    """DauM-G: Gaussian noise along one direction v, reduced by the model's own variance.

    Chen & Ohrimenko (2023), Algorithm 1 and Theorem A.1 (directional + adversarial
    uncertainty): Z = Y v, Y ~ N(0, σ²), σ² = max over pairs of σ²_ij with
    σ²_ij = (α_ij/μ*)² − 1/(vᵀ S⁻¹ v), α_ij = (μ_i − μ_j)ᵀ v — the closed form of line 7 with the
    classic μ* = ε/c (no bisection; the condition of Cor. A.1 holds with equality).

    Parameters
    ----------
    v : array (m,), optional
        The direction. Default: the leading right-singular vector of the mean differences, each
        statistic divided by its own scale (:meth:`FModel.statistic_scales`) and mapped back
        (for a single pair, or parallel differences, their direction — the paper's v). When a
        difference is not parallel to v, σ²_ij is the smallest variance satisfying Cor. A.1
        for it (see :func:`daum_variance`); if no variance along v can, the mechanism is not
        applicable.
    """

    name = "DauM-G"
    theorem = "Chen & Ohrimenko 2023, Algorithm 1 / Theorem A.1 (via Corollary A.1)"
    #: Algorithm 1's σ² uses vᵀ Σ_θ⁻¹ v.
    properties = GaussianProperties(needs_invertible=True)

    def __init__(
        self,
        target: Target | None = None,
        options: GaussianOptions | None = None,
        *,
        v: np.ndarray | None = None,
        **old: Any,
    ) -> None:
        super().__init__(target, options, **old)
        self.v = None if v is None else check_array(v, "v", "a direction (a vector of numbers)")

    def _direction(self, model: FModel) -> np.ndarray:
        if self.v is not None:
            if self.v.shape != (model.dim,) or not np.isfinite(self.v).all():
                raise not_applicable(self.name, f"v must be a finite vector of length {model.dim}")
            nv = np.linalg.norm(self.v)
            if nv == 0:
                raise not_applicable(self.name, "v must be non-zero")
            return self.v / nv
        # The leading direction of the mean differences in unit-free coordinates (each
        # statistic divided by its own scale), mapped back: rescaling a statistic rescales v's
        # component, so the noise it gets rescales with it. For one pair (or parallel
        # differences) this is the paper's v = d/‖d‖.
        s = model.statistic_scales()
        D = model.mean_differences() / s
        _, _, Vt = np.linalg.svd(D, full_matrices=False)
        v = Vt[0] * s
        v = v / np.linalg.norm(v)
        return v if v[np.argmax(np.abs(v))] > 0 else -v

    def propose(self, model: FModel, mu: float, convention: Convention) -> Proposal:
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
        return Proposal.of(
            NoiseDistribution("gaussian", v[:, None], np.array([np.sqrt(var)])),
            sensitivity=float(np.abs(D @ v).max()),
            sensitivity_label="max |α_ij|",
            assumptions=(
                _GAUSSIAN,
                cov_text,
                "μ_θi − μ_θj is parallel to v for every pair (measured: smallest |cos| "
                f"{cos.min():.6f}; non-parallel pairs are covered exactly by Cor. A.1)",
            ),
            warnings=[cov_warn],
            details={"direction": v, "sigma2": var, "per_pair_sigma2": per_pair},
        )
