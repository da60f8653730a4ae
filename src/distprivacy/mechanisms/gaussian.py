"""Gaussian mechanisms as μ-GDP calibrations, with exact accounting.

The key fact (issue #4; Dong, Roth & Su 2019; Balle & Wang 2018): if f_θ = N(μ_θ, S) for both
members of a pair and the mechanism adds Z ~ N(0, Σ_Z), distinguishing θ_i from θ_j from the
output is exactly testing N(0, 1) against N(μ_ij, 1) with
μ_ij = √((μ_i − μ_j)ᵀ (S + Σ_Z)⁻¹ (μ_i − μ_j)). The mechanism is μ-GDP with μ = max_Ψ μ_ij and
(ε, δ)-distribution private exactly when δ ≥ Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2); no attacker
between two equally likely θ does better than Φ(μ/2).

Every Gaussian mechanism here is therefore "choose Σ_Z so that μ ≤ μ*":

* rule ``classic`` (the paper's): μ* = ε/c with c = √(2 ln(1.25/δ)) — this is what
  σ = cΔ/ε and the bound (ε/c)² of Thm 4.4/4.5/A.1 amount to; each pair's conditions use each
  member's own covariance (worst case);
* rule ``exact`` (default): μ* is the largest μ with δ(ε; μ) ≤ δ (or a μ given directly, or
  2Φ⁻¹(a) for a target maximum attack accuracy a); each pair uses one covariance, the average of
  its two members' (the paper's modelling assumption, as its code does), and then the exact
  privacy profile of the two fitted Gaussians *as they are* (unequal covariances, noise included)
  is computed; if it is worse than the target, μ* is lowered until it is not.

Every calibration reports its guarantee in three forms: μ, the (ε, δ) curve, and the maximum
attack accuracy (a typed :class:`~distprivacy.mechanisms._accounting.GaussianAccounting`). The
profile of the unequal fits is :func:`fitted_profile` (in :mod:`distprivacy.mechanisms._fitted`,
importable from here); the caveats are typed warnings (``Notice`` with a category: the classic
rule's are also issued as Python warnings, by category).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar

import numpy as np

from distprivacy.accounting import classic_c, classic_warning
from distprivacy.checks import (
    check_delta,
    check_epsilon,
    check_rule,
)
from distprivacy.exceptions import (
    AssumptionWarning,
    ClassicRuleWarning,
    ClassicShortfallWarning,
    DistPrivacyError,
    NotApplicableError,
    Notice,
    ShortfallWarning,
)
from distprivacy.mechanisms._accounting import GaussianAccounting
from distprivacy.mechanisms._calibrator import (
    Calibrator,
    FittedProfile,
    GaussianTarget,
    Proposal,
    bisect,
    expand,
)
from distprivacy.mechanisms._fitted import fitted_profile as fitted_profile  # re-exported
from distprivacy.mechanisms._mahalanobis import (  # re-exported
    Convention as Convention,
)
from distprivacy.mechanisms._mahalanobis import (
    mahalanobis_all as mahalanobis_all,
)
from distprivacy.mechanisms._mahalanobis import (
    max_mahalanobis as max_mahalanobis,
)
from distprivacy.mechanisms._mahalanobis import (
    pair_covariances as pair_covariances,
)
from distprivacy.mechanisms.base import (
    BASIS_EQUAL_COVARIANCES,
    BASIS_FITTED,
    Calibration,
    Mechanism,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.profiles import gdp_epsilon, gdp_mu
from distprivacy.request import DEFAULT_REPORT_DELTA, GaussianOptions
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Target, target_mu
from distprivacy.targets import MIN_TARGET_MU as MIN_TARGET_MU  # re-exported


def top_up_shape(model: FModel) -> np.ndarray:
    """R = S̄ + Ḡ: the average covariance of F over θ plus the average outer product of the
    protected pairs' mean differences.

    Every top-up τ·R is shaped in the geometry of the model (rescale a statistic by c and its
    row and column of R scale by c, so its noise does and nothing else moves), never isotropic
    in raw units. As τ → ∞ any pair's two output laws share the support range(R) ⊇ range(S_θ)
    + span(d) and their divergence tends to 0, so a large enough τ always verifies."""
    S = model.covariances_.mean(axis=0)
    D = model.mean_differences()
    G = D.T @ D / max(len(D), 1)
    R = S + G
    return (R + R.T) / 2


def top_up_shapes(model: FModel) -> tuple[np.ndarray, ...]:
    """The shapes a top-up τ·R may take (unit-equivariant, containing the mean differences and
    every Σ_θ's range, so that a large enough τ verifies): R = S̄ + Ḡ (:func:`top_up_shape`).
    Its diagonal (isotropic in unit-free coordinates) is cheaper in some cases but was seen to
    leave a real attack just above the bound when the moments are estimated (the defence test
    of ``tests/test_inference_defence.py``); it is not offered."""
    return (top_up_shape(model),)


def certify_top_up(
    pairs: list[tuple[np.ndarray, list]], mu: float, Sigma: np.ndarray, R: np.ndarray
) -> tuple[np.ndarray, float]:
    """Make a candidate noise covariance meet Cor. A.1 (max Mahalanobis ≤ μ) *by computation*:
    symmetrise, clip negative eigenvalues (solver rounding) to 0, then add the least τ·R that
    makes every condition hold (τ = 0 when none fails). R is :func:`top_up_shape`: the top-up
    is shaped by the model, never isotropic in raw units.

    Returns
    -------
    (ndarray, float)
        The certified covariance and τ.
    """
    w, V = np.linalg.eigh((Sigma + Sigma.T) / 2)
    Sigma = (V * np.clip(w, 0.0, None)) @ V.T
    if max_mahalanobis(pairs, Sigma) <= mu:
        return Sigma, 0.0

    def feasible(tau: float) -> tuple[bool, None]:
        return max_mahalanobis(pairs, Sigma + tau * R) <= mu, None

    start = 1e-12
    bracket = expand(feasible, start, limit=1e12)
    if bracket is None:
        raise NotApplicableError(
            "no top-up of the noise meets the condition of Cor. A.1 (a mean difference "
            "lies outside every covariance's range)"
        )
    hi = bracket[0]
    _, hi, _ = bisect(
        feasible,
        0.0 if hi == start else hi / 4,
        hi,
        feasible_high=True,
        done=lambda lo, hi: hi - lo <= 1e-6 * hi,
        max_iter=60,
    )
    return Sigma + hi * R, hi


class GaussianMechanism(Mechanism):
    """Base of the Gaussian mechanisms: calibrate Σ_Z to a μ-GDP target μ*.

    Parameters
    ----------
    target : EpsDelta, GDP or MaxAttackAccuracy
        The target (:mod:`distprivacy.targets`): an (ε, δ), or μ* directly, or no attacker
        above an accuracy between two equally likely θ (μ and accuracy: exact rule only; δ
        then only chooses the reported point of the (ε, δ) curve, ``report_delta``).
    options : GaussianOptions, optional
        The rule (``exact``, default, or the paper's ``classic``: module docstring) and:

    covariances : {"fitted", "pooled"}
        ``fitted`` (default): under the exact rule the target must also hold for the fitted
        Gaussians with their *unequal* covariances (noise included); if it does not, the cheaper
        of two fixes is applied — the mechanism's own noise at a lowered μ*, or an isotropic
        top-up. ``pooled``: the paper's modelling assumption (one covariance per pair, the
        average of the two fits); the unequal-covariance profile is still computed and reported
        (with a warning when it falls short), but not enforced. The classic rule never enforces.
    utility : {"scaled", "l2"}
        How noise is costed when the mechanism has a choice (which fix of an unequal-covariance
        shortfall, OptM-G's objective): ``scaled`` (default) Σ_k Var(Z_k)/s_k², each
        statistic's noise variance relative to its own sampling variance s_k² (unit-free);
        ``l2`` the paper's raw E‖Z‖₂ (mixed units).
    check_profile : bool
        False skips computing the unequal-covariance profile (only with ``pooled`` or the
        classic rule; faster, for experiments that do not report it).
    report_delta : float, optional
        With a μ or accuracy target, the δ of the reported (ε, δ) point (default 1e-3).
    """

    #: Whether the mechanism's conditions need every Σ_θ invertible (NoNoise, DauM-G).
    requires_invertible: ClassVar[bool] = False
    #: Whether the unequal-covariance profile of the model is checked (not for group DP, whose
    #: guarantee does not depend on the model).
    checks_model_profile: ClassVar[bool] = True

    def _set_target(self, target: Target, options: GaussianOptions | None) -> None:
        """ε, δ, the rule and the options: ε and δ of an (ε, δ) target, or μ* of a μ or
        accuracy target with ε reported at the options' ``report_delta`` (default 1e-3)."""
        opts = options if options is not None else GaussianOptions()
        self.calibration = check_rule(opts.rule.value)
        self.utility = opts.utility
        self.covariances = opts.covariances
        self.check_profile = opts.check_profile
        if isinstance(target, EpsDelta):
            if opts.report_delta is not None:
                raise DistPrivacyError(
                    "an (ε, δ) target states its δ; report_delta is for a μ or accuracy target"
                )
            self._mu = None
            self.epsilon = check_epsilon(target.epsilon)
            self.delta = check_delta(target.delta)
            self._epsilon_given = True
            return
        mu = target.mu if isinstance(target, GDP) else None
        acc = target.accuracy if isinstance(target, MaxAttackAccuracy) else None
        self._mu = target_mu(mu, acc, self.calibration)
        report = DEFAULT_REPORT_DELTA if opts.report_delta is None else opts.report_delta
        self.delta = check_delta(report)
        self.epsilon = gdp_epsilon(self.delta, self._mu)
        self._epsilon_given = False

    @property
    def convention(self) -> Convention:
        return "own" if self.calibration == "classic" else "average"

    def target_mu(self) -> float:
        """μ*: ε/c (classic), the exact μ for (ε, δ), or the μ given."""
        if self._mu is not None:
            return self._mu
        if self.calibration == "classic":
            return self.epsilon / classic_c(self.delta)
        return gdp_mu(self.epsilon, self.delta)

    # Subclasses --------------------------------------------------------------------------------

    @abstractmethod
    def propose(self, model: FModel, mu: float, convention: Convention) -> Proposal:
        """The noise of this mechanism's form meeting μ ≤ ``mu`` under ``convention``, and what
        its calibration records (raises NotApplicableError when the form cannot meet it)."""

    def _guarantee_mu(
        self, model: FModel, noise: NoiseDistribution, mu_star: float, convention: Convention
    ) -> float:
        """The μ the mechanism guarantees (by default, from the Gaussian model)."""
        return max_mahalanobis(pair_covariances(model, convention), noise.covariance)

    # Accounting --------------------------------------------------------------------------------

    def noise_cost(self, model: FModel, noise: NoiseDistribution) -> float:
        """The cost the mechanism minimises when it has a choice: Σ_k Var(Z_k)/s_k² (``scaled``)
        or E‖Z‖₂ (``l2``)."""
        if self.utility == "l2":
            return noise.expected_l2_error
        s = model.statistic_scales()
        return float(np.sum(np.diag(noise.covariance) / s**2))

    def gaussian_target(self) -> GaussianTarget:
        """What the noise is verified against (rule, μ*, and the (ε, δ) point)."""
        return GaussianTarget(
            rule=self.calibration,
            mu=self.target_mu(),
            epsilon=self.epsilon,
            delta=self.delta,
            epsilon_given=isinstance(self.target, EpsDelta),  # (ε, δ) stated: δ(ε) is checked
        )

    def calibrator(self, model: FModel) -> Calibrator:
        """The :class:`Calibrator` that verifies, fixes and accounts this mechanism's noise."""
        conv = self.convention
        return Calibrator(
            name=self.name,
            model=model,
            target=self.gaussian_target(),
            propose=lambda mu: self.propose(model, mu, conv),
            cost=lambda noise: self.noise_cost(model, noise),
            top_up_shapes=lambda: top_up_shapes(model),
            fixable=not self.no_noise_fix,
        )

    #: NoNoise cannot be fixed by adding noise: it refuses instead.
    no_noise_fix: ClassVar[bool] = False

    def _calibrate(self, model: FModel) -> Calibration:
        if self.requires_invertible:
            model.require_invertible()
        cal = self.calibrator(model)
        target = cal.target
        mu_star = target.mu
        conv = self.convention
        proposal = self.propose(model, mu_star, conv)
        mu_used = mu_star
        warnings_: list[Notice] = list(proposal.warnings)
        enforce = self.calibration == "exact" and self.covariances == "fitted"
        check = self.checks_model_profile and self.check_profile
        if enforce and check and cal.misses(proposal.noise):
            fixed = cal.fix(proposal)
            proposal, mu_used = fixed.proposal, fixed.mu_used
            warnings_ += [*proposal.warnings, fixed.warning]
        noise = proposal.noise
        profile = cal.verify(noise) if check else None
        if enforce and check and target.missed_by(profile):  # pragma: no cover - guard
            raise NotApplicableError(
                f"{self.name} is not applicable: the noise found could not be verified against "
                "the fitted covariances"
            )
        if profile is not None and profile.support_mismatch and not enforce:
            warnings_.append(
                Notice(
                    "under the fitted covariances a pair's output laws have different supports ("
                    + profile.support_mismatch
                    + "): the guarantee rests entirely on the equal-covariance assumption",
                    AssumptionWarning,
                )
            )
        mu = self._guarantee_mu(model, noise, mu_used, conv)
        if not math.isfinite(mu):
            raise NotApplicableError(
                f"{self.name} is not applicable: the noise does not cover a mean difference of "
                "a protected pair (μ = ∞)"
            )
        acct = self._accounting(mu, mu_star, mu_used, profile)
        if self.calibration == "classic" and (caveat := classic_warning(self.epsilon)):
            warnings_.append(Notice(caveat, ClassicRuleWarning))
        # Issued as Python warnings too: the classic rule's caveats (outside its range, and a
        # shortfall it causes).
        emit = [w for w in warnings_ if w.category is ClassicRuleWarning]
        achieved = acct.delta_achieved
        if self._epsilon_given and achieved > self.delta * (1 + 1e-9):
            by_rule = acct.shared.delta_at_epsilon > self.delta * (1 + 1e-9)
            why = (
                "the classic rule"
                if by_rule
                else "the equal-covariance assumption (the fitted covariances differ)"
            )
            shortfall = Notice(
                f"exact accounting: at ε = {self.epsilon:g} this noise achieves only "
                f"δ = {achieved:.3g} > the nominal {self.delta:g}; the shortfall comes from {why}",
                ClassicShortfallWarning if by_rule else ShortfallWarning,
            )
            warnings_.append(shortfall)
            if by_rule:
                emit.append(shortfall)
        for w in emit:
            w.emit(stacklevel=3)  # at the caller of Mechanism.calibrate
        if not self.checks_model_profile:
            basis = self.basis
        elif enforce and check:
            basis = BASIS_FITTED
        else:
            basis = BASIS_EQUAL_COVARIANCES
        return self._make(
            model,
            noise,
            basis=basis,
            rule=self.calibration,
            accounting=acct,
            warnings=tuple(dict.fromkeys(warnings_)),
            **proposal.fields,
        )

    def _accounting(
        self, mu: float, mu_star: float, mu_used: float, profile: FittedProfile | None
    ) -> GaussianAccounting:
        return GaussianAccounting.of(
            self.calibration,
            mu,
            mu_star,
            mu_used,
            self.epsilon,
            self.delta,
            None if profile is None else profile.to_dict(),
        )
