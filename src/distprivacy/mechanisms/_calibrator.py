"""One calibrator for every Gaussian mechanism: propose → verify → fix → account.

A Gaussian mechanism only *proposes* noise: given a μ-GDP target μ* it returns the noise of its
own form that meets μ ≤ μ* under its modelling convention (:class:`Proposal`). Everything else —
checking that noise against the fitted Gaussians with their unequal covariances, fixing a
shortfall, and stating the guarantee — is done here, once, for all of them:

1. **verify** (:meth:`Calibrator.verify`): the exact privacy profile of N(μ_θ, Σ_θ + Σ_Z) for
   every ordered protected pair (:class:`FittedProfile`, from
   :func:`~distprivacy.mechanisms._fitted.fitted_profile`), in search mode (stops at the first
   pair shown to miss the target) or in full;
2. **fix** (:meth:`Calibrator.fix`): the cheaper (by the mechanism's cost) of the mechanism's own
   noise at a lowered μ* (:meth:`Calibrator.lower_mu`) and the proposal plus the least τ·R for a
   model-shaped R (:meth:`Calibrator.top_up`) — both by the one bisection of this module
   (:func:`bisect`) after an expanding bracket (:func:`expand`);
3. **account**: the guarantee μ, the (ε, δ) point and the attack bound
   (:class:`~distprivacy.mechanisms._accounting.GaussianAccounting`), with the typed caveats.

:class:`GaussianTarget` is what is verified against: the rule, μ*, and whether the user stated ε
(then δ at ε is checked) or a μ / an attack accuracy (then the attack bound Φ(μ*/2) is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar

import numpy as np

from distprivacy.exceptions import MoreNoiseWarning, NotApplicableError, Notice
from distprivacy.mechanisms._fitted import fitted_profile
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.profiles import gdp_accuracy

__all__ = [
    "Calibrator",
    "FittedProfile",
    "Fixed",
    "GaussianTarget",
    "Proposal",
    "bisect",
    "expand",
]

#: Relative slack when comparing a verified figure with its target: noise that meets μ* exactly
#: (DauM, EigM, OptM do by design) must not count as a violation through rounding or the
#: integral's error bound.
SLACK = 1e-9

T = TypeVar("T")


@dataclass(frozen=True)
class Proposal:
    """A mechanism's noise for a target μ, and what its calibration records.

    Attributes
    ----------
    noise : NoiseDistribution
    fields : Mapping
        Keyword fields of the :class:`~distprivacy.mechanisms.calibration.Calibration`
        (``sensitivity``, ``sensitivity_label``, ``assumptions``, ``details``).
    warnings : tuple of Notice
    """

    noise: NoiseDistribution
    fields: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[Notice, ...] = ()

    @classmethod
    def of(cls, noise: NoiseDistribution, warnings: Any = (), **fields: Any) -> Proposal:
        """A proposal; ``warnings`` may hold None and plain text (made :class:`Notice`)."""
        notes = tuple(w if isinstance(w, Notice) else Notice(w) for w in warnings if w)
        return cls(noise, dict(fields), notes)

    def with_detail(self, key: str, value: Any) -> Proposal:
        """The same proposal with ``details[key] = value`` (nothing is mutated)."""
        details = {**self.fields.get("details", {}), key: value}
        return Proposal(self.noise, {**self.fields, "details": details}, self.warnings)


@dataclass(frozen=True)
class FittedProfile:
    """The exact privacy profile of the fitted Gaussians with a noise, worst ordered pair
    (:func:`~distprivacy.mechanisms._fitted.fitted_profile`, typed).

    Attributes
    ----------
    delta_at_epsilon : float
        An upper bound on the worst pair's δ at ε (exact within ``error_bound``).
    max_attack_accuracy : float or None
        (1 + TV)/2, when computed.
    error_bound : float
    violated : bool
        Search mode: a pair was shown to miss the target.
    worst_pair : tuple of int or None
    support_mismatch : str or None
        Why a pair's output laws have different supports (δ = 1), if one has.
    pairs_exact : int
        How many pairs needed the integral.
    """

    delta_at_epsilon: float
    max_attack_accuracy: float | None
    error_bound: float
    violated: bool
    worst_pair: tuple[int, int] | None
    support_mismatch: str | None
    pairs_exact: int

    @classmethod
    def of(
        cls, model: FModel, noise_covariance: np.ndarray, epsilon: float, **search: Any
    ) -> FittedProfile:
        """:func:`fitted_profile` as a typed value (``search``: its keyword arguments)."""
        raw = fitted_profile(model, noise_covariance, epsilon, **search)
        wp = raw["worst_pair"]
        return cls(
            delta_at_epsilon=raw["delta_at_epsilon"],
            max_attack_accuracy=raw["max_attack_accuracy"],
            error_bound=raw["error_bound"],
            violated=bool(raw["violated"]),
            worst_pair=None if wp is None else (int(wp[0]), int(wp[1])),
            support_mismatch=raw["support_mismatch"],
            pairs_exact=int(raw["pairs_exact"]),
        )

    def to_dict(self) -> dict[str, Any]:
        """The accounting's ``unequal_covariance`` entry (the keys of ``PROFILE_KEYS``)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.worst_pair is not None:
            out["worst_pair"] = self.worst_pair
        return out


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
class Fixed:
    """A proposal made to meet the target under the fitted covariances."""

    proposal: Proposal
    mu_used: float
    warning: Notice


@dataclass
class Calibrator(Generic[T]):
    """Verify, fix and account a Gaussian mechanism's proposals (module docstring).

    Parameters
    ----------
    name : str
        The mechanism's name (for messages).
    target : GaussianTarget
    propose : callable
        ``propose(mu) -> Proposal``: the mechanism's noise for a target μ (raises
        :class:`NotApplicableError` when its form cannot meet it).
    cost : callable
        ``cost(noise) -> float``: what the mechanism minimises when it has a choice of fix.
    top_up_shapes : callable
        ``() -> tuple of ndarray``: the model-shaped directions R a top-up τ·R may take.
    fixable : bool
        False when the mechanism cannot be fixed by more noise (NoNoise): it refuses instead.
    """

    name: str
    model: FModel
    target: GaussianTarget
    propose: Callable[[float], Proposal]
    cost: Callable[[NoiseDistribution], float]
    top_up_shapes: Callable[[], tuple[np.ndarray, ...]]
    fixable: bool = True

    # -- verify ---------------------------------------------------------------------------------

    def verify(self, noise: NoiseDistribution, full: bool = True) -> FittedProfile:
        """The exact profile of the fitted Gaussians with ``noise``. ``full=False`` is the
        search mode: it stops at the first pair shown to miss the target."""
        t = self.target
        if full:
            return FittedProfile.of(self.model, noise.covariance, t.epsilon)
        if t.epsilon_given:
            return FittedProfile.of(
                self.model,
                noise.covariance,
                t.epsilon,
                delta_target=t.delta * (1 + SLACK),
                accuracy=False,
            )
        tv = (2 * gdp_accuracy(t.mu) - 1) * (1 + SLACK)
        return FittedProfile.of(self.model, noise.covariance, t.epsilon, tv_target=tv)

    def misses(self, noise: NoiseDistribution) -> bool:
        """Whether ``noise`` misses the target under the fitted covariances (search mode)."""
        return self.target.missed_by(self.verify(noise, full=False))

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

    def top_up(self, proposal: Proposal) -> tuple[NoiseDistribution, float] | None:
        """Strategy 2: the proposal plus the least τ·R for each model-shaped R (τ unit-free;
        δ(ε) is non-increasing in τ: adding independent noise is post-processing); the cheapest
        by :attr:`cost`. None if no τ ≤ 1e6 verifies for any shape."""
        Z = proposal.noise.covariance
        found = []
        for R in self.top_up_shapes():

            def feasible(tau: float, R: np.ndarray = R) -> tuple[bool, NoiseDistribution]:
                n = NoiseDistribution.gaussian_from_covariance(Z + tau * R)
                return not self.misses(n), n

            start = 1e-3
            bracket = expand(feasible, start, limit=1e6)
            if bracket is None:
                continue
            hi, noise = bracket
            _, hi, noise = bisect(
                feasible,
                0.0 if hi == start else hi / 4,
                hi,
                feasible_high=True,
                done=lambda lo, hi: hi - lo <= 5e-3 * hi,
                best=noise,
            )
            found.append((self.cost(noise), noise, hi))
        if not found:
            return None
        _, noise, tau = min(found, key=lambda f: f[0])
        return noise, tau

    def fix(self, proposal: Proposal) -> Fixed:
        """Meet the target under the fitted covariances: the cheaper of :meth:`lower_mu` and
        :meth:`top_up`; refuses (NotApplicableError, with the figure) when neither can."""
        mu_star = self.target.mu
        lowered = self.lower_mu() if self.fixable else None
        topped = self.top_up(proposal) if self.fixable else None
        options = []
        if lowered is not None:
            options.append((self.cost(lowered[0].noise), "lower"))
        if topped is not None:
            options.append((self.cost(topped[0]), "top-up"))
        if not options:
            prof = self.verify(proposal.noise)
            why = prof.support_mismatch or (
                f"δ = {prof.delta_at_epsilon:.3g} at ε = {self.target.epsilon:g}"
            )
            raise NotApplicableError(
                f"{self.name} is not applicable: no noise of its form meets the target under the "
                f"fitted covariances ({why})"
            )
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
        fixed = Proposal(noise, proposal.fields, ()).with_detail("unequal_covariance_top_up", tau)
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
