"""OptM-G: the Gaussian noise of least expected squared error meeting the μ-GDP target.

Minimise tr(W Σ_Z) over Σ_Z ⪰ 0 subject to (μ_i − μ_j)ᵀ (S + Σ_Z)⁻¹ (μ_i − μ_j) ≤ μ*² for every
pair and each covariance S its condition uses — by the Schur complement, the linear matrix
inequalities [[S + Σ_Z, d], [dᵀ, μ*²]] ⪰ 0: a semidefinite program, solved with cvxpy (Clarabel,
else SCS). Every other Gaussian mechanism of the papers (ExpM-G, DirM-G, EigM-G, DauM-G, no noise)
is a feasible point of the same program (Cor. A.1/A.2 are these constraints), so the optimum's
tr(W Σ_Z) is never larger than theirs — up to the solver's accuracy: the program is scaled so that
its entries are of order one, and the certification below can only add noise, never remove it
(``details["top_up"]`` says how much; tests compare OptM-G with DauM-G and EigM-G on Adult and on
random models).

The solver's answer is not trusted: Σ_Z is symmetrised and its negative eigenvalues (solver
tolerance) set to zero, then the constraints are *certified* by direct computation; if any
violation remains, the smallest isotropic top-up τ·I that removes it is added (reported in
``details``).
"""

from __future__ import annotations

import math

import numpy as np

from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.mechanisms.adversarial import _GAUSSIAN, _cov_text
from distprivacy.mechanisms.gaussian import (
    Convention,
    GaussianMechanism,
    max_mahalanobis,
    pair_covariances,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution


def _solve_sdp(
    pairs: list[tuple[np.ndarray, list]], mu: float, W: np.ndarray
) -> tuple[np.ndarray, str, str]:
    import cvxpy as cp

    m = W.shape[0]
    # Scaled so that every entry is of order one: with s = max ‖d‖²/μ² and Σ = s·X, the LMI
    # [[S + Σ, d], [dᵀ, μ²]] ⪰ 0 is [[S/s + X, d/(μ√s)], [·, 1]] ⪰ 0 (both say
    # dᵀ(S + Σ)⁻¹d ≤ μ²). Unscaled, μ² ≈ 1e-3 beside entries of 1e7 lets the solver report
    # "optimal" for points that break the constraints by a percent.
    s = max(float(d @ d) for d, _ in pairs) / mu**2
    X = cp.Variable((m, m), PSD=True)
    w_scale = float(np.abs(W).max()) or 1.0
    cons = []
    for d, covs in pairs:
        dcol = (d / (mu * math.sqrt(s))).reshape(-1, 1)
        for S in covs:
            block = cp.bmat([[S / s + X, dcol], [dcol.T, np.ones((1, 1))]])
            cons.append((block + block.T) / 2 >> 0)
    prob = cp.Problem(cp.Minimize(cp.trace((W / w_scale) @ X)), cons)
    Sigma = X
    last = ""
    for solver in ("CLARABEL", "SCS"):
        if solver not in cp.installed_solvers():
            continue
        try:
            prob.solve(solver=solver)
        except cp.error.SolverError as e:  # pragma: no cover - solver-specific
            last = str(e).splitlines()[0]
            continue
        if prob.status in ("optimal", "optimal_inaccurate") and Sigma.value is not None:
            return s * np.asarray(Sigma.value), solver, prob.status
        last = prob.status
    raise NotApplicableError(f"OptM-G is not applicable: the SDP solver failed ({last})")


def _certify(
    pairs: list[tuple[np.ndarray, list]], mu: float, Sigma: np.ndarray
) -> tuple[np.ndarray, float]:
    """Project to the PSD cone and add the least τ·I making every constraint hold."""
    w, V = np.linalg.eigh((Sigma + Sigma.T) / 2)
    Sigma = (V * np.clip(w, 0.0, None)) @ V.T
    if max_mahalanobis(pairs, Sigma) <= mu:
        return Sigma, 0.0
    eye = np.eye(Sigma.shape[0])
    hi = 1e-12 * max(1.0, float(np.trace(Sigma)))
    while max_mahalanobis(pairs, Sigma + hi * eye) > mu:
        hi *= 4
        if hi > 1e30:  # pragma: no cover - cannot happen for finite d
            raise DistPrivacyError("OptM-G: could not certify the solution")
    lo = 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if max_mahalanobis(pairs, Sigma + mid * eye) <= mu:
            hi = mid
        else:
            lo = mid
    return Sigma + hi * eye, hi


class OptimalGaussian(GaussianMechanism):
    """OptM-G: minimum expected squared L2 error Gaussian noise (an SDP; module docstring).

    Parameters
    ----------
    epsilon, delta, calibration, mu, max_accuracy
        As for every Gaussian mechanism (:class:`~distprivacy.mechanisms.GaussianMechanism`).
    weights : array (m,) or (m, m), optional
        W in tr(W Σ_Z): per-statistic weights (a positive vector, or a PSD matrix); default the
        identity (expected squared L2 error).
    """

    name = "OptM-G"
    theorem = (
        "Chen & Ohrimenko 2023, Corollary A.1 as SDP constraints (exact μ-GDP accounting: "
        "Dong, Roth & Su 2019; Balle & Wang 2018)"
    )

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float = 1e-3,
        calibration: str = "exact",
        weights: np.ndarray | None = None,
        **targets: float | None,
    ) -> None:
        super().__init__(epsilon, delta, calibration, **targets)  # type: ignore[arg-type]
        self.weights = None if weights is None else np.asarray(weights, dtype=float)

    def _weight_matrix(self, m: int) -> np.ndarray:
        if self.weights is None:
            return np.eye(m)
        W = np.diag(self.weights) if self.weights.ndim == 1 else self.weights
        if W.shape != (m, m) or not np.isfinite(W).all():
            raise DistPrivacyError(f"OptM-G weights must be {m} numbers or an {m}×{m} matrix")
        if not np.allclose(W, W.T) or np.linalg.eigvalsh(W)[0] < 0:
            raise DistPrivacyError("OptM-G weights must be symmetric positive semidefinite")
        return W

    def _noise(self, model: FModel, mu: float, convention: Convention):
        W = self._weight_matrix(model.dim)
        pairs = pair_covariances(model, convention)
        if max_mahalanobis(pairs, None) <= mu:
            Sigma, solver, status, tau = np.zeros((model.dim,) * 2), "none needed", "optimal", 0.0
        else:
            raw, solver, status = _solve_sdp(pairs, mu, W)
            Sigma, tau = _certify(pairs, mu, raw)
        cov_text, cov_warn = _cov_text(model, convention)
        q = max_mahalanobis(pairs, Sigma)
        return NoiseDistribution.gaussian_from_covariance(Sigma), {
            "sensitivity": float(np.linalg.norm(model.mean_differences(), axis=1).max()),
            "sensitivity_label": "Δ_E,2",
            "assumptions": (_GAUSSIAN, cov_text),
            "warnings": [cov_warn],
            "details": {
                "objective": float(np.trace(W @ Sigma)),
                "solver": solver,
                "status": status,
                "certified_max_mu": q if math.isfinite(q) else None,
                "top_up": tau,
            },
        }
