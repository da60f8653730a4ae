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

:func:`as_target` is the one place that turns the loose arguments of the command line and the
older Python API (``epsilon``, ``delta``, ``mu``, ``max_accuracy``) into a target, and
:func:`met_by` tells whether a guarantee meets a target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from scipy import special

from distprivacy.checks import check_delta, check_number
from distprivacy.exceptions import DistPrivacyError
from distprivacy.profiles import gdp_accuracy, gdp_delta, gdp_epsilon, gdp_mu

__all__ = [
    "GDP",
    "EpsDelta",
    "GuaranteeLike",
    "MaxAttackAccuracy",
    "Rule",
    "Target",
    "as_target",
    "met_by",
]

#: Relative slack allowed when comparing a verified figure with its target (float rounding of
#: the same quantity computed by two routes).
_REL = 1e-9


class Rule(StrEnum):
    """How a Gaussian mechanism's noise is calibrated to a target."""

    EXACT = "exact"
    CLASSIC = "classic"

    @classmethod
    def parse(cls, value: Any) -> Rule:
        """``value`` as a rule (a :class:`Rule` or its name); one-line error otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for r in cls:
                if r.value == value:
                    return r
        names = ", ".join(r.value for r in cls)
        raise DistPrivacyError(f"unknown calibration rule {value!r}; available: {names}")


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
        """Φ(μ/2): the best accuracy of any attacker with equal priors."""
        return MaxAttackAccuracy(float(gdp_accuracy(self.mu)))

    def compose(self, other: GDP) -> GDP:
        """√(μ₁² + μ₂²): μ-GDP composition (Dong, Roth & Su 2022, Cor. 3.3).

        Valid only for guarantees that hold for every pair of datasets (group DP, local DP) or
        for releases whose noises are independent *and* whose statistics are independent under
        every θ. Two distribution-privacy releases of one dataset are correlated through it:
        their joint guarantee is computed by :mod:`distprivacy.composition`, which can be
        larger than this (docs/ledger.md)."""
        if not isinstance(other, GDP):
            raise DistPrivacyError(f"GDP composes with GDP, not {type(other).__name__}")
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

    def to_gdp(self) -> GDP:
        """μ = 2Φ⁻¹(a): the μ whose best attack accuracy Φ(μ/2) is exactly ``accuracy``."""
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


class GuaranteeLike(Protocol):
    """What :func:`met_by` reads of a guarantee (e.g. :class:`distprivacy.guarantee.Guarantee`)."""

    mu: float | None
    max_attack_accuracy: float | None

    def delta_at(self, epsilon: float) -> float: ...


def met_by(target: Target, guarantee: GuaranteeLike) -> bool:
    """Whether ``guarantee`` meets ``target``: its δ(ε) at the target's ε is at most δ; its μ
    at most the target's μ (and its attack bound at most Φ(μ/2), which covers guarantees with
    unequal covariances whose μ alone does not bound the attack); its attack bound at most the
    target's accuracy. A figure the guarantee lacks (None, NaN) does not meet anything."""
    if isinstance(target, EpsDelta):
        d = guarantee.delta_at(target.epsilon)
        return bool(d is not None and math.isfinite(d) and d <= target.delta * (1 + _REL))
    if isinstance(target, GDP):
        mu, acc = guarantee.mu, guarantee.max_attack_accuracy
        if mu is None or acc is None or not (math.isfinite(mu) and math.isfinite(acc)):
            return False
        cap = float(gdp_accuracy(target.mu))  # Φ(μ/2); 1.0 in floating point for μ ≳ 17
        return mu <= target.mu * (1 + _REL) and acc <= cap * (1 + _REL)
    if isinstance(target, MaxAttackAccuracy):
        acc = guarantee.max_attack_accuracy
        return bool(acc is not None and math.isfinite(acc) and acc <= target.accuracy * (1 + _REL))
    raise DistPrivacyError(f"not a privacy target: {type(target).__name__}")
