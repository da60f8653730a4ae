"""The typed request: what to calibrate (:class:`MechanismSpec`) and how f_θ is modelled
(:class:`Modelling`), as frozen values.

A request flows one way, from the caller's settings to the noise::

    flags / settings ──► Target, MechanismSpec, Modelling ──► workflow.plan ──► Plan ──► release

* :class:`MechanismSpec` ``(name, target, options)``: a mechanism's shorthand, the privacy
  :data:`~distprivacy.targets.Target` it must meet, and the options of its family —
  :class:`GaussianOptions` for the Gaussian mechanisms (the calibration rule, how unequal
  covariances are treated, how noise is costed, the δ at which a μ or accuracy target's ε is
  reported); the Laplace-type and Wasserstein mechanisms take none (the options of a request
  naming several mechanisms are read by the Gaussian ones only).
* :class:`Modelling` ``(method, samples, engine, seed, spark_master)``: how the model of f_θ is
  fitted (:func:`distprivacy.models.fit_model`).

Nothing below this module takes a target as loose ``epsilon``/``delta``/``mu``/``max_accuracy``
arguments: mechanisms are made from a target (:func:`distprivacy.mechanisms.make_mechanism`),
and ``tests/test_architecture.py`` enforces it. A command line translates its flags into these
values at its boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distprivacy.checks import (
    check_bool,
    check_delta,
    check_instance,
    check_text,
)
from distprivacy.exceptions import DistPrivacyError
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Rule, Target

__all__ = [
    "COVARIANCE_MODES",
    "DEFAULT_REPORT_DELTA",
    "MODELLING_METHODS",
    "UTILITIES",
    "GaussianOptions",
    "MechanismSpec",
    "Modelling",
    "check_target",
]

#: How the unequal fitted covariances of a pair are treated (see :class:`GaussianOptions`).
COVARIANCE_MODES = ("fitted", "pooled")
#: How noise is costed when a mechanism chooses between noises (see :class:`GaussianOptions`).
UTILITIES = ("scaled", "l2")
#: The δ at which a μ or accuracy target's ε is reported when none is given.
DEFAULT_REPORT_DELTA = 1e-3
#: How f_θ is modelled (:func:`distprivacy.models.fit_model`).
MODELLING_METHODS = ("auto", "exact", "monte-carlo")

_TARGETS = (EpsDelta, GDP, MaxAttackAccuracy)
_TARGET_WHAT = "a privacy target (EpsDelta, GDP or MaxAttackAccuracy: distprivacy.targets)"


def check_target(target: Any, name: str = "target") -> Target:
    """``target`` if it is a privacy target; a one-line type error naming the three otherwise."""
    check_instance(target, name, _TARGETS, _TARGET_WHAT)
    return target


@dataclass(frozen=True)
class GaussianOptions:
    """What a Gaussian mechanism takes besides its target.

    Parameters
    ----------
    rule : Rule or {"exact", "classic"}
        ``exact`` (default): the μ-GDP profile; ``classic``: the paper's c = √(2 ln(1.25/δ))
        (Thm 4.2, proved only for ε < 1; (ε, δ) targets only).
    covariances : {"fitted", "pooled"}
        ``fitted`` (default): under the exact rule the target must also hold for the fitted
        Gaussians with their unequal covariances; ``pooled``: the paper's assumption (one
        covariance per pair), the unequal-covariance figure only reported.
    utility : {"scaled", "l2"}
        How noise is costed where a mechanism chooses: ``scaled`` Σ Var(Z_k)/s_k² (unit-free),
        ``l2`` the paper's raw E‖Z‖₂.
    report_delta : float, optional
        With a μ or accuracy target: the δ at which the (ε, δ) point is reported (default
        1e-3). An (ε, δ) target carries its own δ and refuses this.
    check_profile : bool
        False skips the unequal-covariance profile (only with ``pooled`` or the classic rule).
    """

    rule: Rule = Rule.EXACT
    covariances: str = "fitted"
    utility: str = "scaled"
    report_delta: float | None = None
    check_profile: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule", Rule.parse(self.rule))
        cov = check_text(self.covariances, "covariances mode", choices=COVARIANCE_MODES)
        object.__setattr__(self, "covariances", cov)
        object.__setattr__(self, "utility", check_text(self.utility, "utility", choices=UTILITIES))
        if self.report_delta is not None:
            object.__setattr__(self, "report_delta", check_delta(self.report_delta))
        check_bool(self.check_profile, "check_profile")
        if not self.check_profile and self.rule is Rule.EXACT and self.covariances == "fitted":
            raise DistPrivacyError(
                "covariances='fitted' needs the unequal-covariance profile; use "
                "check_profile=True, or covariances='pooled'"
            )

    def to_dict(self) -> dict[str, Any]:
        """The options as a plan's modelling record keeps them."""
        return {
            "calibration": self.rule.value,
            "covariances": self.covariances,
            "utility": self.utility,
        }


#: The options of any family (the Laplace-type and Wasserstein mechanisms take none).
Options = GaussianOptions


@dataclass(frozen=True)
class MechanismSpec:
    """One mechanism asked for: its shorthand, its target and its family's options.

    Parameters
    ----------
    name : str
        A shorthand of :data:`~distprivacy.mechanisms.MECHANISMS` (case-insensitive),
        e.g. ``"DauM-G"``.
    target : EpsDelta, GDP or MaxAttackAccuracy
        What the calibration must meet (a μ or accuracy target: Gaussian mechanisms only).
    options : GaussianOptions, optional
        The Gaussian family's options (default ``GaussianOptions()``); the other families
        ignore them.

    Examples
    --------
    >>> from distprivacy.targets import EpsDelta
    >>> MechanismSpec("DauM-G", EpsDelta(1.0, 1e-3)).name
    'DauM-G'
    """

    name: str
    target: Target
    options: GaussianOptions | None = None

    def __post_init__(self) -> None:
        check_text(self.name, "the mechanism name")
        check_target(self.target)
        check_instance(self.options, "options", GaussianOptions,
                       "the family's options (GaussianOptions)", optional=True)  # fmt: skip

    @property
    def gaussian(self) -> GaussianOptions:
        """The Gaussian options (the defaults when none were given)."""
        return self.options if self.options is not None else GaussianOptions()

    def named(self, name: str) -> MechanismSpec:
        """The same target and options for mechanism ``name``."""
        return MechanismSpec(name, self.target, self.options)


@dataclass(frozen=True)
class Modelling:
    """How the model of f_θ is fitted (:func:`distprivacy.models.fit_model`).

    Parameters
    ----------
    method : {"auto", "exact", "monte-carlo"}
    samples : int
        Monte-Carlo subsets per θ (≥ 2).
    engine : str or Engine
        ``"auto"``, ``"pandas"``, ``"duckdb"``, ``"spark"`` or an engine already made.
    seed : int
        The seed of the Monte-Carlo draws.
    spark_master : str, optional
        Spark's master URL, with ``engine="spark"``.
    """

    method: str = "auto"
    samples: int = 1000
    engine: Any = "auto"
    seed: int = 0
    spark_master: str | None = None

    def __post_init__(self) -> None:
        # The values are fit_model's and resolve_engine's to check (one message each).
        check_text(self.method, "modeling")
        check_text(self.spark_master, "spark_master", optional=True)

    def to_dict(self) -> dict[str, Any]:
        """The choices a plan records (the engine by name)."""
        engine = self.engine if isinstance(self.engine, str) else getattr(self.engine, "name", "")
        return {
            "requested": self.method,
            "samples": self.samples,
            "seed": self.seed,
            "engine": engine,
        }
