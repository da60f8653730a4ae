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
violation remains, the smallest top-up τ·R that removes it is added, R the model-shaped
matrix of :func:`~distprivacy.mechanisms.gaussian.top_up_shape` (reported in ``details``).
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np

from distprivacy.checks import check_array
from distprivacy.exceptions import DistPrivacyError, NotApplicableError, require_extra
from distprivacy.mechanisms._calibrator import Proposal
from distprivacy.mechanisms.adversarial import _GAUSSIAN, _cov_text
from distprivacy.mechanisms.base import register_mechanism
from distprivacy.mechanisms.gaussian import (
    Convention,
    GaussianMechanism,
    certify_top_up,
    mahalanobis_all,
    max_mahalanobis,
    pair_covariances,
    top_up_shape,
)
from distprivacy.models import MODEL_MEMORY_LIMIT, FModel, model_file_memory
from distprivacy.noise import NoiseDistribution
from distprivacy.request import GaussianOptions
from distprivacy.targets import Target


@functools.cache
def _installed_solvers() -> frozenset[str]:
    """cvxpy's installed solvers, asked once per process: each ``cp.installed_solvers()`` tries
    to import every solver cvxpy knows (about thirty, most absent: a search of ``sys.path``
    each), about 1 ms a call, nine calls in the default ``calibrate``."""
    cp = require_extra("cvxpy", "OptM-G")
    return frozenset(cp.installed_solvers())


def _solve_sdp(
    pairs: list[tuple[np.ndarray, list]], mu: float, W: np.ndarray
) -> tuple[np.ndarray, str, str]:
    cp = require_extra("cvxpy", "OptM-G")

    m = W.shape[0]
    lmis = sum(len(covs) for _, covs in pairs)
    need = model_file_memory(m, lmis)
    if need > MODEL_MEMORY_LIMIT:
        # The interior-point solver aborts the whole process when an allocation fails.
        raise NotApplicableError(
            f"OptM-G is not applicable: its semidefinite program ({lmis} inequalities of size "
            f"{m + 1}) needs about {need / 2**30:.3g} GiB, above the limit of "
            f"{MODEL_MEMORY_LIMIT / 2**30:.3g} GiB; use fewer statistics, or DauM-G / EigM-G"
        )
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
        if solver not in _installed_solvers():
            continue
        try:
            with warnings.catch_warnings():
                # "Solution may be inaccurate": the answer is certified below either way (and
                # the status is kept in the calibration's details).
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=solver)
        except cp.error.SolverError as e:  # pragma: no cover - solver-specific
            last = str(e).splitlines()[0]
            continue
        if prob.status in ("optimal", "optimal_inaccurate") and Sigma.value is not None:
            return s * np.asarray(Sigma.value), solver, prob.status
        last = prob.status
    raise NotApplicableError(f"OptM-G is not applicable: the SDP solver failed ({last})")


def _solve_with_cuts(
    pairs: list[tuple[np.ndarray, list]], mu: float, W: np.ndarray
) -> tuple[np.ndarray, str, str, int]:
    """The SDP over every condition, solved by constraint generation: solve with the few
    conditions hardest without noise, add the conditions the solution breaks, repeat. When no
    condition is broken the relaxed optimum is feasible for the full program, hence optimal
    for it; many pairs (a fine grid of values) then cost a few small SDPs instead of one large.

    Returns
    -------
    (ndarray, str, str, int)
        Σ_Z, solver, status, and the number of conditions in the last program.
    """
    conditions = [(d, [S]) for d, covs in pairs for S in covs]
    m = W.shape[0]
    order = np.argsort(-mahalanobis_all(conditions, None), kind="stable")
    batch = max(4, 2 * m)
    active = list(order[:batch])
    for _ in range(25):
        Sigma, solver, status = _solve_sdp([conditions[k] for k in active], mu, W)
        q = mahalanobis_all(conditions, Sigma)
        broken = [int(k) for k in np.argsort(-q, kind="stable") if q[k] > mu * (1 + 1e-6)]
        broken = [k for k in broken if k not in set(active)]
        if not broken:
            return Sigma, solver, status, len(active)
        active += broken[:batch]
    Sigma, solver, status = _solve_sdp(conditions, mu, W)
    return Sigma, solver, status, len(conditions)


@register_mechanism
class OptimalGaussian(GaussianMechanism):
    """OptM-G: minimum expected squared L2 error Gaussian noise (an SDP; module docstring).

    Parameters
    ----------
    epsilon, delta, calibration, mu, max_accuracy
        As for every Gaussian mechanism (:class:`~distprivacy.mechanisms.GaussianMechanism`).
    weights : array (m,) or (m, m), optional
        W in tr(W Σ_Z): per-statistic weights (a positive vector, or a PSD matrix). Default by
        ``utility``: ``scaled`` (default) W = diag(1/s_k²), s_k each statistic's own sampling
        scale (:meth:`FModel.statistic_scales`) — each statistic's noise variance relative to
        its own scale, unit-free (rescale a statistic by c and its noise rescales by c, nothing
        else moves); ``l2`` the identity (the paper's expected squared L2 error, mixed units).

    The program is solved in unit-free coordinates (each statistic divided by s_k), which also
    keeps it well conditioned when dollars sit next to proportions.
    """

    name = "OptM-G"
    extras = ("cvxpy",)
    theorem = (
        "Chen & Ohrimenko 2023, Corollary A.1 as SDP constraints (exact μ-GDP accounting: "
        "Dong, Roth & Su 2019; Balle & Wang 2018)"
    )

    def __init__(
        self,
        target: Target | None = None,
        options: GaussianOptions | None = None,
        *,
        weights: np.ndarray | None = None,
        **old: Any,
    ) -> None:
        super().__init__(target, options, **old)
        self.weights = None if weights is None else check_array(weights, "weights", "a matrix")

    def _weight_matrix(self, model: FModel) -> np.ndarray:
        m = model.dim
        if self.weights is None:
            if self.utility == "l2":
                return np.eye(m)
            return np.diag(1.0 / model.statistic_scales() ** 2)
        W = np.diag(self.weights) if self.weights.ndim == 1 else self.weights
        if W.shape != (m, m) or not np.isfinite(W).all():
            raise DistPrivacyError(f"OptM-G weights must be {m} numbers or an {m}×{m} matrix")
        if not np.allclose(W, W.T) or np.linalg.eigvalsh(W)[0] < 0:
            raise DistPrivacyError("OptM-G weights must be symmetric positive semidefinite")
        return W

    def propose(self, model: FModel, mu: float, convention: Convention) -> Proposal:
        W = self._weight_matrix(model)
        pairs = pair_covariances(model, convention)
        m = model.dim
        if max_mahalanobis(pairs, None) <= mu:
            Sigma, solver, status, tau = np.zeros((m, m)), "none needed", "optimal", 0.0
            n_cons = 0
        else:
            # Unit-free coordinates x/s: S → S/(s sᵀ), d → d/s, W → s W s, Σ = s Σ' s.
            sc = model.statistic_scales()
            outer = np.outer(sc, sc)
            scaled = [(d / sc, [S / outer for S in covs]) for d, covs in pairs]
            raw, solver, status, n_cons = _solve_with_cuts(scaled, mu, W * outer)
            Sigma, tau = certify_top_up(scaled, mu, raw, top_up_shape(model) / outer)
            Sigma = Sigma * outer
            if max_mahalanobis(pairs, Sigma) > mu * (1 + 1e-9):
                Sigma, more = certify_top_up(pairs, mu, Sigma, top_up_shape(model))
                tau += more
        cov_text, cov_warn = _cov_text(model, convention)
        q = max_mahalanobis(pairs, Sigma)
        return Proposal.of(
            NoiseDistribution.gaussian_from_covariance(Sigma),
            sensitivity=float(np.linalg.norm(model.mean_differences(), axis=1).max()),
            sensitivity_label="Δ_E,2",
            assumptions=(_GAUSSIAN, cov_text),
            warnings=[cov_warn],
            details={
                "objective": float(np.trace(W @ Sigma)),
                "utility": "weights" if self.weights is not None else self.utility,
                "solver": solver,
                "status": status,
                "sdp_conditions": n_cons,
                "certified_max_mu": q if math.isfinite(q) else None,
                "top_up": tau,
            },
        )
