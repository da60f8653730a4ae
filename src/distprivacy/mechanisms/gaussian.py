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

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from distprivacy.accounting import classic_c
from distprivacy.checks import (
    check_delta,
    check_epsilon,
    check_rule,
)
from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.mechanisms._calibrator import (
    CERTIFY,
    CalibrationOptions,
    Calibrator,
    GaussianProperties,
    GaussianTarget,
    Proposal,
    least_top_up,
    steps_for,
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
from distprivacy.mechanisms.base import Calibration, Mechanism
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
    makes every condition hold (τ = 0 when none fails), by the calibrator's one top-up search
    (:func:`~distprivacy.mechanisms._calibrator.least_top_up`, tuned :data:`~distprivacy.
    mechanisms._calibrator.CERTIFY` for this closed-form condition). R is
    :func:`top_up_shape`: the top-up is shaped by the model, never isotropic in raw units.

    Returns
    -------
    (ndarray, float)
        The certified covariance and τ.
    """
    w, V = np.linalg.eigh((Sigma + Sigma.T) / 2)
    Sigma = (V * np.clip(w, 0.0, None)) @ V.T
    if max_mahalanobis(pairs, Sigma) <= mu:
        return Sigma, 0.0

    def feasible(tau: float) -> tuple[bool, np.ndarray]:
        topped = Sigma + tau * R
        return max_mahalanobis(pairs, topped) <= mu, topped

    least = least_top_up(feasible, CERTIFY)
    if least is None:
        raise NotApplicableError(
            "no top-up of the noise meets the condition of Cor. A.1 (a mean difference "
            "lies outside every covariance's range)"
        )
    tau, certified = least
    return certified, tau


class GDPMechanism(Mechanism):
    """Base of the mechanisms whose guarantee is a μ-GDP curve of the fitted Gaussian model,
    calibrated by the :class:`~distprivacy.mechanisms._calibrator.Calibrator` to a target μ*:
    the Gaussian-noise mechanisms (:class:`GaussianMechanism`) and NoNoise (Thm 4.4, which
    releases F(D) itself). It takes a μ or attack-accuracy target as well as an (ε, δ), and the
    Gaussian options (:attr:`targets_gdp`); what it declares in :attr:`properties` chooses the
    calibrator's steps.

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

    #: What the mechanism declares about itself; the calibrator chooses its steps from these
    #: (:class:`~distprivacy.mechanisms._calibrator.GaussianProperties`, :func:`~distprivacy.
    #: mechanisms._calibrator.steps_for`).
    properties: ClassVar[GaussianProperties] = GaussianProperties()
    targets_gdp: ClassVar[bool] = True

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

    def options(self) -> CalibrationOptions:
        """What the user asked of the calibration (rule, covariances, profile check)."""
        return CalibrationOptions(
            rule=self.calibration,
            covariances=self.covariances,
            check_profile=self.check_profile,
            convention=self.convention,
        )

    def calibrator(self, model: FModel) -> Calibrator:
        """The :class:`Calibrator` that verifies, fixes and accounts this mechanism's noise, with
        the steps its declared :attr:`properties` and the user's options choose."""
        conv = self.convention
        options = self.options()
        return Calibrator(
            name=self.name,
            model=model,
            target=self.gaussian_target(),
            propose=lambda mu: self.propose(model, mu, conv),
            cost=lambda noise: self.noise_cost(model, noise),
            top_up_shapes=lambda: top_up_shapes(model),
            options=options,
            steps=steps_for(self.properties, options, self._epsilon_given),
        )

    def _calibrate(self, model: FModel) -> Calibration:
        draft = self.calibrator(model).run()
        for w in draft.emitted:
            w.emit(stacklevel=3)  # at the caller of Mechanism.calibrate
        proposal = draft.proposal
        assert proposal is not None
        return self._make(
            model,
            proposal.noise,
            basis=draft.basis,
            rule=self.calibration,
            accounting=draft.accounting,
            warnings=tuple(dict.fromkeys(draft.notices)),
            sensitivity=proposal.sensitivity,
            sensitivity_label=proposal.sensitivity_label,
            assumptions=proposal.assumptions,
            details=dict(proposal.details),
        )


class GaussianMechanism(GDPMechanism):
    """Base of the Gaussian mechanisms: calibrate the Gaussian noise Σ_Z to a μ-GDP target μ*.

    Parameters
    ----------
    target : EpsDelta, GDP or MaxAttackAccuracy
        As :class:`GDPMechanism`.
    options : GaussianOptions, optional
        As :class:`GDPMechanism` (rule, covariances, utility, check_profile, report_delta).

    Notes
    -----
    A subclass only proposes noise (:meth:`GDPMechanism.propose`); the calibrator verifies,
    fixes and accounts it. A Gaussian mechanism adds noise: its declared :attr:`properties`
    have ``adds_noise=True`` (a mechanism that releases F(D) itself is a
    :class:`GDPMechanism`, as NoNoise is), checked when the subclass is defined.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.properties.adds_noise:
            raise DistPrivacyError(
                f"{cls.__name__} declares adds_noise=False: a mechanism that adds no noise is a "
                "GDPMechanism (as NoNoise is), not a GaussianMechanism"
            )
