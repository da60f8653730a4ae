"""Privacy targets: what a calibration is asked to meet, as typed values.

A user states a target in one of three forms, each a frozen value that validates itself when it
is made and converts to the others where the conversion is exact:

* :class:`EpsDelta` — (ε, δ)-distribution privacy (Definition 2.2 of Chen & Ohrimenko);
* :class:`GDP` — μ-Gaussian differential privacy (Dong, Roth & Su 2022) of the release under
  every protected pair: the form exact accounting works in;
* :class:`MaxAttackAccuracy` — no attacker who sees the release guesses which of a protected pair
  of distributions it came from (equal priors) with accuracy above a; under μ-GDP the best
  accuracy is Φ(μ/2) (Dong, Roth & Su 2022, §2), so a ↔ μ = 2Φ⁻¹(a) exactly.

:class:`Rule` names how a Gaussian mechanism turns a target into noise: ``EXACT`` (the μ-GDP
profile, default) or ``CLASSIC`` (c = √(2 ln(1.25/δ)), Thm 4.2, proved only for ε < 1).

Conversions:

* ``GDP(μ).delta_at(ε)`` = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm 8), and
  ``epsilon_at(δ)`` its inverse; ``GDP(μ).to_eps_delta(δ)`` the tightest (ε, δ) it implies;
* ``EpsDelta(ε, δ).to_gdp()`` the largest μ whose profile meets (ε, δ) at ε — a μ-GDP
  mechanism with that μ is (ε, δ)-private; the converse does not hold (an (ε, δ) guarantee is
  one point of a curve), so there is no ``EpsDelta`` → μ equivalence, only this sufficient μ;
* ``MaxAttackAccuracy(a).to_gdp()`` and ``GDP(μ).max_attack_accuracy`` are exact inverses.

:func:`as_target` is the one place that turns loose arguments (a command line's ``--epsilon``,
``--delta``, ``--target-mu``, ``--max-attack-accuracy``) into a target, :func:`target_mu` the μ
a Gaussian calibration aims at for a μ or accuracy target (checked), and :func:`met_by` tells
whether a guarantee meets a target. Nothing outside this module and :mod:`distprivacy.request`
takes a target as loose arguments (``tests/test_architecture.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import EnumType, StrEnum
from typing import Any, Protocol, runtime_checkable

from distprivacy.checks import check_delta, check_instance, check_number, check_text, shown
from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError
from distprivacy.profiles import gdp_accuracy, gdp_delta, gdp_epsilon, gdp_mu, mu_for_accuracy

__all__ = [
    "GDP",
    "EpsDelta",
    "GuaranteeLike",
    "MaxAttackAccuracy",
    "Rule",
    "Target",
    "as_target",
    "met_by",
    "target_mu",
]

#: Relative slack allowed when comparing a verified figure with its target (float rounding of
#: the same quantity computed by two routes).
_REL = 1e-9


class _RuleType(EnumType):
    """``Rule(value)`` is :meth:`Rule.parse`: a one-line library error for anything but a rule
    or its name (the enum's own lookup would compare an array with each member)."""

    def __call__(cls, value: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:  # the functional API (Rule("Name", names=...)): not a lookup
            return super().__call__(value, *args, **kwargs)
        return cls.parse(value)  # type: ignore[attr-defined]


class Rule(StrEnum, metaclass=_RuleType):
    """How a Gaussian mechanism's noise is calibrated to a target."""

    EXACT = "exact"
    CLASSIC = "classic"

    @classmethod
    def parse(cls, value: Any) -> Rule:
        """``value`` as a rule (a :class:`Rule` or its name); one-line error otherwise
        (:class:`~distprivacy.exceptions.DistPrivacyTypeError` when it is not a text)."""
        if isinstance(value, cls):
            return value
        names = tuple(r.value for r in cls)
        check_text(value, "calibration rule", choices=names)
        return cls._value2member_map_[value]  # type: ignore[return-value]


@dataclass(frozen=True)
class GDP:
    """μ-Gaussian differential privacy: every protected pair's release laws are at most as
    distinguishable as N(0, 1) and N(μ, 1).

    Parameters
    ----------
    mu : float
        μ > 0 (finite).
    """

    mu: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_number(self.mu, "mu", low=0, low_open=True))

    def delta_at(self, epsilon: float) -> float:
        """δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), ε ≥ 0."""
        eps = check_number(epsilon, "epsilon", low=0)
        return float(gdp_delta(eps, self.mu))

    def epsilon_at(self, delta: float) -> float:
        """The smallest ε ≥ 0 with δ(ε) ≤ ``delta``."""
        return float(gdp_epsilon(check_delta(delta), self.mu))

    def to_eps_delta(self, delta: float) -> EpsDelta:
        """The tightest (ε, δ) this guarantee implies at ``delta`` (ε may be 0 when μ is so
        small that δ(0) = 2Φ(μ/2) − 1 ≤ δ; it is then reported as the smallest positive float)."""
        eps = self.epsilon_at(delta)
        return EpsDelta(max(eps, math.ulp(0.0)), delta)

    @property
    def max_attack_accuracy(self) -> MaxAttackAccuracy:
        """Φ(μ/2): the best accuracy of any attacker with equal priors, as a bound.

        Computed as 1 − Φ(−μ/2) (Φ's lower tail is exact however small). For μ ≳ 16.6 it is
        within 1e-16 of 1 and reads 1.0 in floating point: the bound is then 1.0 (no
        protection, honest: the best attacker errs less than once in 10¹⁶ tries), never a
        refusal. For μ ≲ 1e-15, where it would read 0.5 (a coin flip, which no noise
        reaches), it is the first float above 0.5. A bound of 1.0 is not a valid target
        (``MaxAttackAccuracy(1.0)`` is refused) and has no finite μ
        (:meth:`MaxAttackAccuracy.to_gdp` says so in one line)."""
        from scipy import special  # (lazy: `import distprivacy.targets` stays light)

        a = 1.0 - float(special.ndtr(-self.mu / 2.0))  # Φ(−μ/2): tiny, exact for large μ
        return MaxAttackAccuracy._bound(max(a, math.nextafter(0.5, 1.0)))

    def compose(self, other: GDP) -> GDP:
        """√(μ₁² + μ₂²): μ-GDP composition (Dong, Roth & Su 2022, Cor. 3.3).

        Valid only for guarantees that hold for every pair of datasets (group DP, local DP) or
        for releases whose noises are independent *and* whose statistics are independent under
        every θ. Two distribution-privacy releases of one dataset are correlated through it:
        their joint guarantee is computed by :mod:`distprivacy.composition`, which can be
        larger than this (docs/ledger.md)."""
        check_instance(other, "other", GDP, "a GDP guarantee (GDP composes with GDP)")
        return GDP(math.hypot(self.mu, other.mu))

    def __le__(self, other: GDP) -> bool:
        """``a <= b``: a is at least as private as b (μ_a ≤ μ_b)."""
        if not isinstance(other, GDP):
            return NotImplemented
        return self.mu <= other.mu

    def __lt__(self, other: GDP) -> bool:
        if not isinstance(other, GDP):
            return NotImplemented
        return self.mu < other.mu

    def describe(self) -> str:
        return f"μ = {self.mu:.4g}-GDP"


@dataclass(frozen=True)
class EpsDelta:
    """(ε, δ)-distribution privacy.

    Parameters
    ----------
    epsilon : float
        ε > 0 (finite).
    delta : float
        δ ∈ [0, 1).
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", check_number(self.epsilon, "epsilon", low=0, low_open=True)
        )
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=True))

    def to_gdp(self) -> GDP:
        """The largest μ whose μ-GDP profile meets δ at ε (sufficient: μ-GDP with this μ is
        (ε, δ)-private). δ = 0 has none: no Gaussian noise gives pure privacy."""
        if self.delta == 0:
            raise DistPrivacyError(
                "delta = 0 cannot be met by Gaussian noise; give delta > 0 or use a Laplace "
                "mechanism"
            )
        return GDP(float(gdp_mu(self.epsilon, self.delta)))

    def describe(self) -> str:
        return f"(ε, δ) = ({self.epsilon:.4g}, {self.delta:.3g})"


@dataclass(frozen=True)
class MaxAttackAccuracy:
    """No attacker with equal priors guesses which protected distribution a release came from
    with accuracy above ``accuracy``.

    Parameters
    ----------
    accuracy : float
        In (0.5, 1): 0.5 is a coin flip (no noise can reach it exactly), 1 no protection.
    """

    accuracy: float

    def __post_init__(self) -> None:
        a = check_number(self.accuracy, "max_accuracy", low=0.5, high=1, low_open=True,
                         high_open=True, hint="; e.g. 0.55 (0.5 is a coin flip)")  # fmt: skip
        object.__setattr__(self, "accuracy", a)

    @classmethod
    def _bound(cls, accuracy: float) -> MaxAttackAccuracy:
        """An attack bound derived from a guarantee (:attr:`GDP.max_attack_accuracy`): in
        (0.5, 1], where a target is in (0.5, 1) — 1.0 is an honest bound (no protection)
        but no target."""
        a = check_number(accuracy, "max_accuracy", low=0.5, high=1, low_open=True)
        bound = object.__new__(cls)
        object.__setattr__(bound, "accuracy", a)
        return bound

    def to_gdp(self) -> GDP:
        """μ = 2Φ⁻¹(a): the μ whose best attack accuracy Φ(μ/2) is exactly ``accuracy``."""
        if self.accuracy >= 1.0:
            raise DistPrivacyError(
                "an attack accuracy of 1 (no protection, e.g. the bound of a huge μ) has no "
                "finite μ; state a target below 1, e.g. max_accuracy=0.55"
            )
        from scipy import special

        return GDP(2.0 * float(special.ndtri(self.accuracy)))

    def describe(self) -> str:
        return f"no attacker above {self.accuracy:.1%} accuracy"


#: Any privacy target.
Target = EpsDelta | GDP | MaxAttackAccuracy


def as_target(
    epsilon: float | None = None,
    delta: float | None = None,
    *,
    mu: float | None = None,
    max_accuracy: float | None = None,
) -> Target:
    """The one target stated by loose arguments: ``mu``, or ``max_accuracy``, or
    (``epsilon``, ``delta``). Exactly one form must be given (a one-line error names the
    clash)."""
    forms = [
        name
        for name, given in (
            ("mu", mu is not None),
            ("max_accuracy", max_accuracy is not None),
            ("epsilon/delta", epsilon is not None or delta is not None),
        )
        if given
    ]
    if len(forms) != 1:
        raise DistPrivacyError(
            "state one privacy target: epsilon and delta, or mu, or max_accuracy"
            + (f" (got {' and '.join(forms)})" if forms else "")
        )
    if mu is not None:
        return GDP(mu)
    if max_accuracy is not None:
        return MaxAttackAccuracy(max_accuracy)
    if epsilon is None or delta is None:
        raise DistPrivacyError("an (ε, δ) target needs both epsilon and delta")
    return EpsDelta(epsilon, delta)


#: The smallest target μ accepted: below it the noise a calibration needs overflows (μ = 1e-6 is
#: an attack accuracy of 0.5000004).
MIN_TARGET_MU = 1e-6


def target_mu(
    mu: float | None, max_accuracy: float | None, calibration: str = "exact"
) -> float | None:
    """The μ a Gaussian mechanism is calibrated to when the target is a μ or a maximum attack
    accuracy (None when it is ε), checked: one of the two, the exact rule, and a μ no noise
    in double precision fails to reach (1e-6 ≤ μ ≤ 1e6; accuracy a ↔ μ = 2Φ⁻¹(a))."""
    if mu is not None and max_accuracy is not None:
        raise DistPrivacyError("give a target μ or a target maximum accuracy, not both")
    if mu is None and max_accuracy is None:
        return None
    if calibration != "exact":
        raise DistPrivacyError(
            "targets given as μ or as a maximum attack accuracy need `calibration='exact'`"
        )
    if mu is not None:
        # Above μ = 1e6 nothing is hidden (accuracy Φ(μ/2) = 1) and ε(δ) overflows.
        out = check_number(mu, "target μ", low=0, low_open=True)
        if out > 1e6:
            raise DistPrivacyError(
                f"target μ must be at most 1e6, got {mu!r}: beyond that nothing is "
                "hidden (attack accuracy Φ(μ/2) = 1) and ε(δ) overflows"
            )
    else:
        out = mu_for_accuracy(check_number(max_accuracy, "max_accuracy"))
        if out <= 0:
            raise DistPrivacyError(
                "a maximum attack accuracy of 0.5 allows no information at all; no "
                "finite noise achieves it — choose an accuracy above 0.5"
            )
    if out < MIN_TARGET_MU:
        raise DistPrivacyError(
            f"target μ = {out:.3g} is below {MIN_TARGET_MU:g} (attack accuracy "
            f"{0.5 + out / 5.013:.9f}): the noise it needs is beyond double "
            "precision; choose μ ≥ 1e-6 (or an accuracy ≥ 0.5000004)"
        )
    return out


@runtime_checkable
class GuaranteeLike(Protocol):
    """What :func:`met_by` reads of a guarantee (e.g. :class:`distprivacy.guarantee.Guarantee`)."""

    mu: float | None
    max_attack_accuracy: float | None

    def delta_at(self, epsilon: float) -> float: ...


def met_by(target: Target, guarantee: GuaranteeLike) -> bool:
    """Whether ``guarantee`` meets ``target``: its δ(ε) at the target's ε is at most δ; it is
    μ-GDP (its curve the GDP one) with μ at most the target's (and its attack bound at most
    Φ(μ/2)); its attack bound at most the target's accuracy. A figure the guarantee lacks
    (None, NaN) does not meet anything. One relative tolerance, ``_REL``, for every form.

    A ``GDP`` target is met only by a μ-GDP guarantee (``curve == "gdp"``): a guarantee whose
    fitted Gaussians have unequal covariances carries a μ *label* (the shared-covariance μ it
    was calibrated for), but its exact privacy profile has exponential tails and rises above
    every GDP curve at large ε (:mod:`distprivacy.ledger._budget` gives the argument); a point
    guarantee with δ > 0 keeps δ(ε′) = δ for every ε′ ≥ ε. Neither is μ-GDP for any μ.

    Raises
    ------
    DistPrivacyTypeError
        ``target`` is not a target, or ``guarantee`` has no ``delta_at``, ``mu`` and
        ``max_attack_accuracy`` (a :class:`~distprivacy.guarantee.Guarantee` or a
        calibration has them)."""
    check_instance(target, "target", (EpsDelta, GDP, MaxAttackAccuracy),
                   "a privacy target (EpsDelta, GDP or MaxAttackAccuracy)")  # fmt: skip
    what = "a Guarantee (with delta_at, mu and max_attack_accuracy)"
    if isinstance(guarantee, EpsDelta | GDP | MaxAttackAccuracy):  # a GDP has all three too
        raise DistPrivacyTypeError(f"guarantee must be {what}, got the target {shown(guarantee)}")
    check_instance(guarantee, "guarantee", GuaranteeLike, what)
    if isinstance(target, EpsDelta):
        d = guarantee.delta_at(target.epsilon)
        return bool(d is not None and math.isfinite(d) and d <= target.delta * (1 + _REL))
    if isinstance(target, GDP):
        mu, acc = guarantee.mu, guarantee.max_attack_accuracy
        if mu is None or acc is None or not (math.isfinite(mu) and math.isfinite(acc)):
            return False
        if _curve(guarantee) != "gdp":
            return False
        cap = float(gdp_accuracy(target.mu))  # Φ(μ/2); 1.0 in floating point for μ ≳ 17
        return mu <= target.mu * (1 + _REL) and acc <= cap * (1 + _REL)
    acc = guarantee.max_attack_accuracy
    return bool(acc is not None and math.isfinite(acc) and acc <= target.accuracy * (1 + _REL))


def _curve(guarantee: Any) -> str | None:
    """The guarantee's curve (``"gdp"`` or ``"point"``), or its ``.guarantee``'s (a
    calibration); None when it states none (then it is not known to be μ-GDP)."""
    curve = getattr(guarantee, "curve", None)
    if curve is None:
        curve = getattr(getattr(guarantee, "guarantee", None), "curve", None)
    return curve if isinstance(curve, str) else None
