"""One calibrator for every Gaussian mechanism: a pipeline of small typed steps.

A Gaussian mechanism only *proposes* noise: given a μ-GDP target μ* it returns the noise of its
own form that meets μ ≤ μ* under its modelling convention (:class:`Proposal`). Everything else —
checking that noise against the fitted Gaussians with their unequal covariances, fixing a
shortfall, stating the guarantee and its caveats — is done here, once, for all of them, by a
pipeline of steps (:class:`Step`) that :func:`steps_for` chooses from what the mechanism
*declares* about itself (:class:`GaussianProperties`) and what the user asked for
(:class:`CalibrationOptions`), never from flags read inside one long function:

* :class:`RequireInvertible` — the mechanism's conditions use Σ_θ⁻¹ (Thm 4.4, Alg. 1);
* :class:`Propose` — the mechanism's own theorem;
* :class:`EnforceFitted` / :class:`RefuseUnfitted` — the exact profile of N(μ_θ, Σ_θ + Σ_Z) in
  search mode and, when it misses, the cheaper (by the mechanism's cost) of the mechanism's own
  noise at a lowered μ* (:meth:`Calibrator.lower_mu`) and the proposal plus the least τ·R
  (:meth:`Calibrator.top_up`); a mechanism that adds no noise (NoNoise) is refused instead;
* :class:`VerifyFitted` — the full profile (:class:`~distprivacy.mechanisms._fitted.
  FittedProfile`), a last fail-closed guard when it is enforced;
* :class:`NoteSupportMismatch` — the assumption a pooled calibration rests on, when visible;
* :class:`AccountModelMu` / :class:`AccountTheoremMu` — μ, the (ε, δ) point and the attack
  bound (:class:`~distprivacy.mechanisms._accounting.GaussianAccounting`);
* :class:`ClassicCaveat`, :class:`ShortfallNotice` — the typed caveats;
* :class:`SetBasis` — what the guarantee rests on.

Every search is the one bisection of this module (:func:`bisect`) after an expanding bracket
(:func:`expand`); every top-up is the one search :func:`least_top_up`, tuned by a
:class:`TopUpSearch` (:data:`CERTIFY` for the closed-form Cor. A.1 check inside a proposal,
:data:`VERIFY` for the fitted profile's integrals).

:class:`GaussianTarget` is what is verified against: the rule, μ*, and whether the user stated ε
(then δ at ε is checked) or a μ / an attack accuracy (then the attack bound Φ(μ*/2) is).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, Protocol, TypeVar

import numpy as np

from distprivacy.accounting import classic_warning
from distprivacy.exceptions import (
    AssumptionWarning,
    ClassicRuleWarning,
    ClassicShortfallWarning,
    MoreNoiseWarning,
    NotApplicableError,
    Notice,
    ShortfallWarning,
)
from distprivacy.mechanisms._accounting import GaussianAccounting
from distprivacy.mechanisms._fitted import FittedProfile, fitted_profile
from distprivacy.mechanisms._mahalanobis import Convention, max_mahalanobis, pair_covariances
from distprivacy.mechanisms.calibration import (
    BASIS_EQUAL_COVARIANCES,
    BASIS_FITTED,
    BASIS_UNCONDITIONAL,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.profiles import gdp_accuracy

__all__ = [
    "CERTIFY",
    "VERIFY",
    "CalibrationOptions",
    "Calibrator",
    "Draft",
    "FittedProfile",
    "Fixed",
    "GaussianProperties",
    "GaussianTarget",
    "Proposal",
    "Step",
    "TopUpSearch",
    "bisect",
    "expand",
    "least_top_up",
    "steps_for",
]

#: Relative slack when comparing a verified figure with its target: noise that meets μ* exactly
#: (DauM, EigM, OptM do by design) must not count as a violation through rounding or the
#: integral's error bound.
SLACK = 1e-9

T = TypeVar("T")


# -- what a mechanism proposes ------------------------------------------------------------------


@dataclass(frozen=True)
class Proposal:
    """A mechanism's noise for a target μ, and what its calibration records.

    Attributes
    ----------
    noise : NoiseDistribution
    sensitivity : float or None
        The distance the noise is scaled to, named by ``sensitivity_label``.
    sensitivity_label : str
    assumptions : tuple of str
        What the guarantee rests on (the theorem's hypotheses).
    details : mapping
        Mechanism-specific intermediate quantities (variances, directions, top-ups, ...).
    warnings : tuple of Notice
    """

    noise: NoiseDistribution
    sensitivity: float | None = None
    sensitivity_label: str = ""
    assumptions: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[Notice, ...] = ()

    @classmethod
    def of(
        cls,
        noise: NoiseDistribution,
        warnings: Iterable[Notice | str | None] = (),
        *,
        sensitivity: float | None = None,
        sensitivity_label: str = "",
        assumptions: Iterable[str] = (),
        details: Mapping[str, Any] | None = None,
    ) -> Proposal:
        """A proposal; ``warnings`` may hold None and plain text (made :class:`Notice`)."""
        notes = tuple(w if isinstance(w, Notice) else Notice(w) for w in warnings if w)
        return cls(
            noise, sensitivity, sensitivity_label, tuple(assumptions), dict(details or {}), notes
        )

    def with_detail(self, key: str, value: Any) -> Proposal:
        """The same proposal with ``details[key] = value`` (nothing is mutated)."""
        return replace(self, details={**self.details, key: value})


# -- what a mechanism declares, what the user asks, what is verified against --------------------


@dataclass(frozen=True)
class GaussianProperties:
    """What a Gaussian mechanism declares about itself; :func:`steps_for` chooses the
    calibration's steps from these (and from :class:`CalibrationOptions`).

    Attributes
    ----------
    needs_invertible : bool
        Its conditions use Σ_θ⁻¹ (NoNoise's Thm 4.4, DauM-G's Alg. 1): a singular Σ_θ is refused
        before anything is proposed.
    guarantee : {"model", "theorem", "every-input"}
        Where μ comes from: ``model`` — the largest Mahalanobis distance of the mean
        differences under the fitted covariances plus the noise (Cor. A.1); ``theorem`` — the
        μ* the noise was built for, by a theorem that does not read the covariances
        (translation, Thm 4.2/4.3); ``every-input`` — like ``theorem``, and the guarantee holds
        for every dataset (group DP, Dwork & Roth Thm A.1), so no fitted profile is checked.
    adds_noise : bool
        False for a mechanism that releases F(D) itself (NoNoise, Thm 4.4): a shortfall under
        the fitted covariances is refused, since adding noise would make it another mechanism.
    """

    needs_invertible: bool = False
    guarantee: Literal["model", "theorem", "every-input"] = "model"
    adds_noise: bool = True

    @property
    def reads_model(self) -> bool:
        """Whether the guarantee rests on the fitted model (then its profile is checked)."""
        return self.guarantee != "every-input"


@dataclass(frozen=True)
class CalibrationOptions:
    """What the user asked of a Gaussian calibration (see
    :class:`~distprivacy.mechanisms.GaussianMechanism`).

    Attributes
    ----------
    rule : {"exact", "classic"}
    covariances : {"fitted", "pooled"}
    check_profile : bool
        Compute the unequal-covariance profile (False only with ``pooled`` or ``classic``).
    convention : {"average", "own"}
        The covariance each pair's conditions use (the rule's).
    """

    rule: str
    covariances: str
    check_profile: bool
    convention: Convention


@dataclass(frozen=True)
class GaussianTarget:
    """What a Gaussian calibration is verified against.

    Attributes
    ----------
    rule : str
        ``"exact"`` or ``"classic"``.
    mu : float
        μ*, the μ-GDP target.
    epsilon, delta : float
        The (ε, δ) point reported (and checked when ``epsilon_given``).
    epsilon_given : bool
        True: the user stated ε, so δ(ε) ≤ δ is checked; False: the user stated μ or an attack
        accuracy, so the attack bound ≤ Φ(μ*/2) is.
    """

    rule: str
    mu: float
    epsilon: float
    delta: float
    epsilon_given: bool

    def missed_by(self, profile: FittedProfile | None, mu: float | None = None) -> bool:
        """Whether ``profile`` misses the target (at ``mu``, μ* by default)."""
        if profile is None:
            return False
        if profile.violated:
            return True
        if self.epsilon_given:
            return profile.delta_at_epsilon > self.delta * (1 + SLACK)
        acc = profile.max_attack_accuracy
        cap = gdp_accuracy(self.mu if mu is None else mu)
        return acc is not None and acc > cap * (1 + SLACK)


# -- the one bisection, the one top-up search ---------------------------------------------------


def expand(
    feasible: Callable[[float], tuple[bool, T]], start: float, limit: float, factor: float = 4.0
) -> tuple[float, T] | None:
    """The first of start, start·factor, start·factor², … ≤ ``limit`` that is feasible, with
    its payload; None when none is."""
    x = start
    while True:
        ok, payload = feasible(x)
        if ok:
            return x, payload
        x *= factor
        if x > limit:
            return None


def bisect(
    feasible: Callable[[float], tuple[bool, T]],
    lo: float,
    hi: float,
    *,
    feasible_high: bool,
    done: Callable[[float, float], bool],
    skip: Callable[[float], bool] | None = None,
    max_iter: int = 40,
    best: T | None = None,
) -> tuple[float, float, T | None]:
    """The one bisection of the calibrations: shrink [lo, hi] around the feasibility boundary
    of a monotone predicate.

    ``feasible_high``: feasibility holds above the boundary (hi is kept feasible; e.g. more
    noise τ) or below it (lo is kept feasible; e.g. a lower μ*). ``feasible(x)`` returns
    (ok, payload), or raises :class:`NotApplicableError` (the mechanism's form cannot be built
    there: counted infeasible, and the step is not a candidate for stopping). After each other
    step ``done(lo, hi)`` may stop the search; ``skip(mid)`` stops it before evaluating a
    midpoint. The payload of the last feasible point is returned with the final bracket
    (``best`` if none was met).
    """
    for _ in range(max_iter):
        mid = (lo + hi) / 2
        if skip is not None and skip(mid):
            break
        try:
            ok, payload = feasible(mid)
        except NotApplicableError:
            if feasible_high:
                lo = mid
            else:
                hi = mid
            continue
        if ok:
            best = payload
        if ok == feasible_high:
            hi = mid
        else:
            lo = mid
        if done(lo, hi):
            break
    return lo, hi, best


@dataclass(frozen=True)
class TopUpSearch:
    """How :func:`least_top_up` brackets the least τ: the first τ tried, the largest, the
    relative width at which it stops, and its most steps. The answer is always the feasible
    end of the bracket, so a looser tolerance only means more noise, never an unverified one."""

    start: float
    limit: float
    rtol: float
    max_iter: int


#: Relative margin by which an infeasible τ's cost must exceed the cost to beat before
#: :meth:`Calibrator.top_up` gives a shape up (far above the costs' rounding, ~1e-10).
HOPELESS_MARGIN = 1e-6

#: For the closed-form condition of Cor. A.1 (max Mahalanobis ≤ μ*), cheap to test: tight.
CERTIFY = TopUpSearch(start=1e-12, limit=1e12, rtol=1e-6, max_iter=60)
#: For the exact profile of the fitted Gaussians (integrals per pair), costly: looser.
VERIFY = TopUpSearch(start=1e-3, limit=1e6, rtol=5e-3, max_iter=40)


class _HopelessError(Exception):
    """Raised inside :func:`least_top_up` when its ``hopeless`` test stops the search."""


def least_top_up(
    feasible: Callable[[float], tuple[bool, T]],
    search: TopUpSearch,
    hopeless: Callable[[float], bool] | None = None,
) -> tuple[float, T] | None:
    """The one top-up search: the least τ ≥ 0 (within ``search.rtol``, from above) at which
    ``feasible(τ)`` holds, with its payload — an expanding bracket from ``search.start``, then
    :func:`bisect`. ``feasible`` must be monotone in τ (adding independent noise is
    post-processing: no condition of Cor. A.1 and no δ(ε) grows with it). None when no τ ≤
    ``search.limit`` is feasible.

    ``hopeless(τ)``, asked of each τ found infeasible, may stop the search (None is returned):
    the τ returned is always above every τ found infeasible (the expanding bracket only grows
    past them, the bisection keeps them at its low end), so a caller that only wants τ whose
    cost beats a bound stops as soon as an infeasible τ already costs more (a cost that grows
    with τ). Until it says so the search is the same, step for step."""

    def checked(tau: float) -> tuple[bool, T]:
        ok, payload = feasible(tau)
        if not ok and hopeless is not None and hopeless(tau):
            raise _HopelessError
        return ok, payload

    try:
        bracket = expand(checked, search.start, limit=search.limit)
        if bracket is None:
            return None
        hi, payload = bracket
        _, hi, found = bisect(
            checked,
            0.0 if hi == search.start else hi / 4,
            hi,
            feasible_high=True,
            done=lambda lo, hi: hi - lo <= search.rtol * hi,
            max_iter=search.max_iter,
            best=payload,
        )
    except _HopelessError:
        return None
    assert found is not None  # hi is feasible throughout: its payload is kept
    return hi, found


# -- the state a calibration passes from step to step -------------------------------------------


@dataclass(frozen=True)
class Draft:
    """A calibration in the making: what each step reads and returns (never mutated).

    Attributes
    ----------
    proposal : Proposal or None
        The noise and what the calibration records (None before :class:`Propose`).
    mu_used : float
        The μ* the noise was built for (below μ* when the fix lowered it).
    profile : FittedProfile or None
        The full profile of the fitted Gaussians, when checked.
    notices : tuple of Notice
        The caveats so far, in order.
    mu : float or None
        The μ of the guarantee (after accounting).
    accounting : GaussianAccounting or None
    basis : str
    """

    mu_used: float
    proposal: Proposal | None = None
    profile: FittedProfile | None = None
    notices: tuple[Notice, ...] = ()
    mu: float | None = None
    accounting: GaussianAccounting | None = None
    basis: str = ""

    @property
    def noise(self) -> NoiseDistribution:
        assert self.proposal is not None, "no noise proposed yet"
        return self.proposal.noise

    def noting(self, *notices: Notice) -> Draft:
        return replace(self, notices=(*self.notices, *notices))

    @property
    def emitted(self) -> tuple[Notice, ...]:
        """The notices also issued as Python warnings: the classic rule's (outside its range,
        and a shortfall it causes)."""
        kinds = (ClassicRuleWarning, ClassicShortfallWarning)
        return tuple(w for w in self.notices if w.category in kinds)


@dataclass(frozen=True)
class Fixed:
    """A proposal made to meet the target under the fitted covariances."""

    proposal: Proposal
    mu_used: float
    warning: Notice


class Step(Protocol):
    """One step of a calibration: reads the draft, returns the next one (or raises
    :class:`NotApplicableError`, failing closed). Its docstring names the result it
    implements."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft: ...


# -- the steps ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequireInvertible:
    """Refuse a singular Σ_θ: the mechanism's conditions use Σ_θ⁻¹ (Chen & Ohrimenko 2023,
    Thm 4.4 for NoNoise, Algorithm 1 / Thm A.1 for DauM-G)."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        cal.model.require_invertible()
        return draft


@dataclass(frozen=True)
class Propose:
    """The mechanism's own noise for μ* (its theorem: :attr:`Mechanism.theorem`)."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        proposal = cal.propose(draft.mu_used)
        return replace(draft, proposal=proposal).noting(*proposal.warnings)


@dataclass(frozen=True)
class EnforceFitted:
    """Meet the target under the fitted Gaussians as they are (unequal covariances): their exact
    privacy profile (Dong, Roth & Su 2019; Balle & Wang 2018 for the Gaussian case) in search
    mode and, if it misses, the cheaper fix — the mechanism's own noise at a lowered μ*, or the
    least model-shaped top-up (adding independent noise is post-processing, so δ(ε) does not
    grow); refused, with the figure, when neither verifies."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        if not cal.misses(draft.noise):
            return draft
        assert draft.proposal is not None
        fixed = cal.fix(draft.proposal)
        return replace(draft, proposal=fixed.proposal, mu_used=fixed.mu_used).noting(
            *fixed.proposal.warnings, fixed.warning
        )


@dataclass(frozen=True)
class RefuseUnfitted:
    """For a mechanism that adds no noise (Thm 4.4): its release must meet the target under the
    fitted Gaussians as they are (exact profile, as :class:`EnforceFitted`) or it is refused —
    adding noise would make it another mechanism."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        if cal.misses(draft.noise):
            raise cal.refusal(draft.noise)
        return draft


@dataclass(frozen=True)
class VerifyFitted:
    """The full exact privacy profile of the fitted Gaussians N(μ_θ, Σ_θ + Σ_Z), worst ordered
    pair: δ(ε) = E_P[(1 − e^{ε − L})₊] of the privacy loss L (Balle & Wang 2018, Thm 5 for
    equal covariances; the Gil-Pelaez integral otherwise) and the attack bound (1 + TV)/2
    (:func:`~distprivacy.mechanisms._fitted.fitted_profile`). ``enforced``: the target must
    hold for it — a last fail-closed guard."""

    enforced: bool

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        profile = cal.verify(draft.noise)
        if self.enforced and cal.target.missed_by(profile):  # pragma: no cover - guard
            raise NotApplicableError(
                f"{cal.name} is not applicable: the noise found could not be verified against "
                "the fitted covariances"
            )
        return replace(draft, profile=profile)


@dataclass(frozen=True)
class NoteSupportMismatch:
    """When the fitted profile is computed but not enforced (pooled covariances, classic rule):
    say so if a pair's output laws have different supports (δ = 1 under the fitted model), the
    guarantee then resting entirely on the paper's equal-covariance assumption (Chen &
    Ohrimenko 2023, Cor. A.1 with Σ_θi = Σ_θj)."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        profile = draft.profile
        if profile is None or not profile.support_mismatch:
            return draft
        return draft.noting(
            Notice(
                "under the fitted covariances a pair's output laws have different supports ("
                + profile.support_mismatch
                + "): the guarantee rests entirely on the equal-covariance assumption",
                AssumptionWarning,
            )
        )


def _account(cal: Calibrator, draft: Draft, mu: float) -> Draft:
    if not math.isfinite(mu):
        raise NotApplicableError(
            f"{cal.name} is not applicable: the noise does not cover a mean difference of "
            "a protected pair (μ = ∞)"
        )
    t = cal.target
    profile = None if draft.profile is None else draft.profile.to_dict()
    acct = GaussianAccounting.of(t.rule, mu, t.mu, draft.mu_used, t.epsilon, t.delta, profile)
    return replace(draft, mu=mu, accounting=acct)


@dataclass(frozen=True)
class AccountModelMu:
    """μ = max over the protected pairs of √(dᵀ(S + Σ_Z)⁻¹d) under the rule's covariance
    convention (Chen & Ohrimenko 2023, Cor. A.1, as μ-GDP: Dong, Roth & Su 2019), then the
    (ε, δ) point and the attack bound Φ(μ/2), the worse of it and the fitted profile's
    (:class:`~distprivacy.mechanisms._accounting.GaussianAccounting`); μ = ∞ is refused."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        mu = max_mahalanobis(
            pair_covariances(cal.model, cal.options.convention), draft.noise.covariance
        )
        return _account(cal, draft, mu)


@dataclass(frozen=True)
class AccountTheoremMu:
    """μ = the μ* the noise was built for, by a theorem that does not read the fitted covariances
    (the Gaussian mechanism with sensitivity Δ is (Δ/σ)-GDP: Dong, Roth & Su 2019, Thm 2.7;
    translation, Chen & Ohrimenko 2023 Thm 4.2/4.3; group DP, Dwork & Roth 2014 Thm A.1), then
    the accounting as :class:`AccountModelMu`."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        return _account(cal, draft, draft.mu_used)


@dataclass(frozen=True)
class ClassicCaveat:
    """The classic rule c = √(2 ln(1.25/δ)) is proven only for ε < 1 (Dwork & Roth 2014,
    Thm A.1; the paper's Thm 4.2): a typed caveat (issued as a Python warning too) beyond it."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        caveat = classic_warning(cal.target.epsilon)
        return draft.noting(Notice(caveat, ClassicRuleWarning)) if caveat else draft


@dataclass(frozen=True)
class ShortfallNotice:
    """When the user stated ε: the δ the noise achieves at ε by exact accounting (Balle & Wang
    2018; the fitted profile's when worse) against the nominal δ — a typed caveat naming the
    cause (the classic rule, issued as a Python warning too, or the equal-covariance
    assumption)."""

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        t, acct = cal.target, draft.accounting
        assert acct is not None
        if acct.delta_achieved <= t.delta * (1 + SLACK):
            return draft
        by_rule = acct.shared.delta_at_epsilon > t.delta * (1 + SLACK)
        why = (
            "the classic rule"
            if by_rule
            else "the equal-covariance assumption (the fitted covariances differ)"
        )
        return draft.noting(
            Notice(
                f"exact accounting: at ε = {t.epsilon:g} this noise achieves only "
                f"δ = {acct.delta_achieved:.3g} > the nominal {t.delta:g}; the shortfall comes "
                f"from {why}",
                ClassicShortfallWarning if by_rule else ShortfallWarning,
            )
        )


@dataclass(frozen=True)
class SetBasis:
    """What the guarantee rests on (one of the ``BASIS_*`` texts of
    :mod:`distprivacy.mechanisms.calibration`)."""

    basis: str

    def __call__(self, cal: Calibrator, draft: Draft) -> Draft:
        return replace(draft, basis=self.basis)


def steps_for(
    properties: GaussianProperties, options: CalibrationOptions, epsilon_given: bool
) -> tuple[Step, ...]:
    """The calibration's steps, chosen by the mechanism's declared ``properties`` and the
    user's ``options`` (module docstring). The fitted profile is enforced under the exact rule
    with ``covariances="fitted"`` for a guarantee that reads the model; computed (and only
    reported) otherwise when ``check_profile``; never for a guarantee that holds for every
    input."""
    check = properties.reads_model and options.check_profile
    enforce = check and options.rule == "exact" and options.covariances == "fitted"
    model_mu = properties.guarantee == "model"
    chosen: tuple[tuple[bool, Step], ...] = (
        (properties.needs_invertible, RequireInvertible()),
        (True, Propose()),
        (enforce and properties.adds_noise, EnforceFitted()),
        (enforce and not properties.adds_noise, RefuseUnfitted()),
        (check, VerifyFitted(enforced=enforce)),
        (check and not enforce, NoteSupportMismatch()),
        (model_mu, AccountModelMu()),
        (not model_mu, AccountTheoremMu()),
        (options.rule == "classic", ClassicCaveat()),
        (epsilon_given, ShortfallNotice()),
        (True, SetBasis(_basis(properties, enforce))),
    )
    return tuple(step for wanted, step in chosen if wanted)


def _basis(properties: GaussianProperties, enforced: bool) -> str:
    if not properties.reads_model:
        return BASIS_UNCONDITIONAL
    return BASIS_FITTED if enforced else BASIS_EQUAL_COVARIANCES


# -- the calibrator -----------------------------------------------------------------------------


@dataclass
class Calibrator:
    """Run a Gaussian mechanism's calibration: its :attr:`steps` on its proposals (module
    docstring).

    Parameters
    ----------
    name : str
        The mechanism's name (for messages).
    model : FModel
    target : GaussianTarget
    propose : callable
        ``propose(mu) -> Proposal``: the mechanism's noise for a target μ (raises
        :class:`NotApplicableError` when its form cannot meet it).
    cost : callable
        ``cost(noise) -> float``: what the mechanism minimises when it has a choice of fix.
    top_up_shapes : callable
        ``() -> tuple of ndarray``: the model-shaped directions R a top-up τ·R may take.
    options : CalibrationOptions
    steps : tuple of Step
        What :meth:`run` does, in order (:func:`steps_for`).
    """

    name: str
    model: FModel
    target: GaussianTarget
    propose: Callable[[float], Proposal]
    cost: Callable[[NoiseDistribution], float]
    top_up_shapes: Callable[[], tuple[np.ndarray, ...]]
    options: CalibrationOptions
    steps: tuple[Step, ...]

    #: The exhaustive list of step types (what a test checks :func:`steps_for` chooses from).
    STEP_TYPES: ClassVar[tuple[type, ...]] = (
        RequireInvertible, Propose, EnforceFitted, RefuseUnfitted, VerifyFitted,
        NoteSupportMismatch, AccountModelMu, AccountTheoremMu, ClassicCaveat, ShortfallNotice,
        SetBasis,
    )  # fmt: skip

    def run(self) -> Draft:
        """Every step in order, from μ*: the finished draft (noise, accounting, notices,
        basis)."""
        draft = Draft(mu_used=self.target.mu)
        for step in self.steps:
            draft = step(self, draft)
        return draft

    # -- verify ---------------------------------------------------------------------------------

    def verify(self, noise: NoiseDistribution, full: bool = True) -> FittedProfile:
        """The exact profile of the fitted Gaussians with ``noise``. ``full=False`` is the
        search mode: it stops at the first pair shown to miss the target."""
        t = self.target
        if full:
            return fitted_profile(self.model, noise.covariance, t.epsilon)
        if t.epsilon_given:
            return fitted_profile(
                self.model,
                noise.covariance,
                t.epsilon,
                delta_target=t.delta * (1 + SLACK),
                accuracy=False,
            )
        tv = (2 * gdp_accuracy(t.mu) - 1) * (1 + SLACK)
        return fitted_profile(self.model, noise.covariance, t.epsilon, tv_target=tv)

    def misses(self, noise: NoiseDistribution) -> bool:
        """Whether ``noise`` misses the target under the fitted covariances (search mode)."""
        return self.target.missed_by(self.verify(noise, full=False))

    def refusal(self, noise: NoiseDistribution) -> NotApplicableError:
        """The refusal when no noise of the mechanism's form meets the target, with the
        figure."""
        prof = self.verify(noise)
        why = prof.support_mismatch or (
            f"δ = {prof.delta_at_epsilon:.3g} at ε = {self.target.epsilon:g}"
        )
        return NotApplicableError(
            f"{self.name} is not applicable: no noise of its form meets the target under the "
            f"fitted covariances ({why})"
        )

    # -- fix ------------------------------------------------------------------------------------

    def lower_mu(self) -> tuple[Proposal, float] | None:
        """Strategy 1: the mechanism's own noise at a lowered μ* (bisection on μ, first
        bracketed in [0.8 μ*, μ*], where the answer usually lies)."""
        mu_star = self.target.mu

        def feasible(mu: float) -> tuple[bool, tuple[Proposal, float]]:
            p = self.propose(mu)
            return not self.misses(p.noise), (p, mu)

        first = 0.8 * mu_star
        try:
            ok, best = feasible(first)
        except NotApplicableError:
            ok, best = False, None
        lo, hi = (first, mu_star) if ok else (0.0, first)
        _, _, found = bisect(
            feasible,
            lo,
            hi,
            feasible_high=False,
            skip=lambda mid: mid <= 1e-6 * mu_star,
            done=lambda lo, hi: hi - lo <= 2e-3 * lo,
            best=best if ok else None,
        )
        return found

    def top_up(
        self, proposal: Proposal, beat: float = math.inf
    ) -> tuple[NoiseDistribution, float] | None:
        """Strategy 2: the proposal plus the least τ·R for each model-shaped R (τ unit-free;
        δ(ε) is non-increasing in τ: adding independent noise is post-processing), by
        :func:`least_top_up` (:data:`VERIFY`); the cheapest by :attr:`cost`. None if no τ ≤ 1e6
        verifies for any shape.

        ``beat``: the cost of an alternative chosen on a tie (:meth:`fix`'s lowered μ*). A shape
        whose search meets an infeasible τ that already costs more than it (and than a shape
        found before) is given up: the τ it would return lies above that one, and the cost
        Σ_k Var(Z_k)/s_k² or E‖Z‖₂ of Z + τ·R grows with τ (R is positive semidefinite), so
        it could not be chosen. The margin :data:`HOPELESS_MARGIN` covers the rounding of the
        noise's factorisation and of E‖Z‖₂'s quadrature (relative ~1e-10): what is chosen, and
        every figure, is what the full search gives."""
        Z = proposal.noise.covariance
        found = []
        for R in self.top_up_shapes():

            def feasible(tau: float, R: np.ndarray = R) -> tuple[bool, NoiseDistribution]:
                n = NoiseDistribution.gaussian_from_covariance(Z + tau * R)
                return not self.misses(n), n

            bound = min([beat, *(f[0] for f in found)])

            def hopeless(tau: float, R: np.ndarray = R, bound: float = bound) -> bool:
                if not math.isfinite(bound):
                    return False
                cost = self.cost(NoiseDistribution.gaussian_from_covariance(Z + tau * R))
                return cost > bound + HOPELESS_MARGIN * abs(bound)

            least = least_top_up(feasible, VERIFY, hopeless)
            if least is not None:
                tau, noise = least
                found.append((self.cost(noise), noise, tau))
        if not found:
            return None
        _, noise, tau = min(found, key=lambda f: f[0])
        return noise, tau

    def fix(self, proposal: Proposal) -> Fixed:
        """Meet the target under the fitted covariances: the cheaper of :meth:`lower_mu` and
        :meth:`top_up`; refuses (NotApplicableError, with the figure) when neither can."""
        mu_star = self.target.mu
        lowered = self.lower_mu()
        options = []
        if lowered is not None:
            options.append((self.cost(lowered[0].noise), "lower"))
        # A top-up that cannot cost less than the lowered μ* (chosen on a tie) is given up early.
        topped = self.top_up(proposal, beat=options[0][0] if options else math.inf)
        if topped is not None:
            options.append((self.cost(topped[0]), "top-up"))
        if not options:
            raise self.refusal(proposal.noise)
        _, how = min(options, key=lambda o: o[0])
        if how == "lower":
            assert lowered is not None
            fixed, mu_used = lowered
            return Fixed(
                fixed,
                mu_used,
                Notice(
                    "the statistics vary differently under the two shares of a protected pair: "
                    "keeping the promise needed more noise everywhere, a stricter target "
                    f"(μ* lowered from {mu_star:.4g} to {mu_used:.4g})",
                    MoreNoiseWarning,
                ),
            )
        assert topped is not None
        noise, tau = topped
        fixed = replace(proposal, noise=noise, warnings=()).with_detail(
            "unequal_covariance_top_up", tau
        )
        return Fixed(
            fixed,
            mu_star,
            Notice(
                "the statistics vary differently under the two shares of a protected pair: "
                "keeping the promise needed extra noise shaped like their own variation, "
                f"cheaper than more noise everywhere (added: {tau:.4g} × (the statistics' "
                "average covariance + the mean differences' outer products))",
                MoreNoiseWarning,
            ),
        )
