"""The options ``calibrate``, ``release`` and ``audit`` share, typed and validated once.

Click hands a command its options as loose keyword arguments; :meth:`Settings.from_click` turns
them into one frozen value at the command's first line, checks what can be checked without data
(ε, the calibration rule, a μ or accuracy target and its clash with ``--epsilon``), and records
which options the user set (on the command line or in a ``--config`` file). Everything after
reads typed values: the privacy target (:mod:`distprivacy.targets`), the request of a
mechanism and the modelling (:mod:`distprivacy.request`) — the flags become the library's
request here, at the command's boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import click

from distprivacy.checks import check_epsilon, check_rule
from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:  # the library is imported when a command runs, not for its --help
    from distprivacy.request import GaussianOptions, MechanismSpec, Modelling
    from distprivacy.targets import Target

__all__ = ["Settings"]

#: Click's parameter name → the field of :class:`Settings` (where they differ).
_RENAMED = {"values_": "values", "calibration": "rule"}


@dataclass(frozen=True)
class Settings:
    """The shared options of one command run.

    Attributes
    ----------
    data, protect, values, pairs, pairs_within, subset_size, statistics
        Where f_θ comes from and what is protected (``values`` and ``pairs`` as typed: text).
    model_file : str or None
        A user's model of f_θ, which replaces the data options.
    engine, spark_master, modeling, samples
        How the model is fitted.
    epsilon, delta, rule, covariances, utility, target_mu, max_attack_accuracy
        The privacy target and the Gaussian calibration's choices (lower-cased).
    seed : int or None
        None: secure noise (and Monte-Carlo modelling with seed 0).
    as_json : bool
        Machine-readable output.
    given : frozenset of str
        The click parameter names the user set (command line or ``--config``).
    """

    data: str | None
    protect: str
    values: str
    pairs: str | None
    pairs_within: float | None
    subset_size: int
    statistics: str
    model_file: str | None
    engine: str
    spark_master: str | None
    modeling: str
    samples: int
    epsilon: float
    delta: float
    rule: str
    covariances: str
    utility: str
    target_mu: float | None
    max_attack_accuracy: float | None
    seed: int | None
    as_json: bool
    given: frozenset[str]

    @classmethod
    def from_click(cls, ctx: click.Context, options: dict[str, Any]) -> Settings:
        """The settings of ``options`` (the command's ``**p``), validated."""
        values = {_RENAMED.get(k, k): v for k, v in options.items()}
        names = {f.name for f in fields(cls)} - {"given"}
        missing = names - values.keys()
        if missing:  # a programming error: the command lacks common_options
            raise TypeError(f"options missing: {', '.join(sorted(missing))}")
        kwargs = {k: values[k] for k in names}
        for k in ("engine", "covariances", "utility"):
            kwargs[k] = str(kwargs[k]).lower()
        given = frozenset(
            k
            for k in options
            if ctx.get_parameter_source(k)
            in (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.DEFAULT_MAP)
        )
        s = cls(**kwargs, given=given)
        s._validate()
        return s

    def _validate(self) -> None:
        check_epsilon(self.epsilon)
        check_rule(self.rule)
        if self.target_mu is not None and self.max_attack_accuracy is not None:
            raise DistPrivacyError("give --target-mu or --max-attack-accuracy, not both")
        if self.targets_gdp:
            if self.was_given("epsilon"):
                raise DistPrivacyError(
                    "give --epsilon or a target (--target-mu / --max-attack-accuracy), not both"
                )
            if self.rule != "exact":
                raise DistPrivacyError("targets given as μ or accuracy need --calibration exact")
            # The values themselves, before any data is read, as every Gaussian mechanism
            # checks them.
            from distprivacy.targets import target_mu

            target_mu(self.target_mu, self.max_attack_accuracy, self.rule)

    def was_given(self, name: str) -> bool:
        """Whether the user set the option ``name`` (click's parameter name)."""
        return name in self.given

    @property
    def show(self) -> bool:
        """Whether progress and text output are for a person (not ``--json``)."""
        return not self.as_json

    @property
    def model_seed(self) -> int:
        """The seed the model of f_θ is fitted with (0 when the noise is secure)."""
        return 0 if self.seed is None else self.seed

    @property
    def targets_gdp(self) -> bool:
        """Whether the target is a μ or an attack accuracy (instead of ε)."""
        return self.target_mu is not None or self.max_attack_accuracy is not None

    def target(self) -> Target:
        """The privacy target as one typed value (δ, for a μ or accuracy target, is only the
        point at which ε is reported: :meth:`options`)."""
        from distprivacy.targets import as_target

        if self.targets_gdp:
            return as_target(mu=self.target_mu, max_accuracy=self.max_attack_accuracy)
        return as_target(self.epsilon, self.delta)

    def options(self) -> GaussianOptions:
        """What a Gaussian mechanism takes besides its target: the rule, the covariances, the
        utility (and the reported δ where the target does not carry it)."""
        from distprivacy.request import GaussianOptions

        report = self.delta if self.targets_gdp else None
        return GaussianOptions(self.rule, self.covariances, self.utility, report_delta=report)

    def spec(self, name: str) -> MechanismSpec:
        """The request for mechanism ``name``: the settings' target and options."""
        from distprivacy.request import MechanismSpec

        return MechanismSpec(name, self.target(), self.options())

    def modelling(self) -> Modelling:
        """How the model of f_θ is fitted (a plan records it)."""
        from distprivacy.request import Modelling

        return Modelling(self.modeling, self.samples, self.engine, self.model_seed,
                         self.spark_master)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The calibration settings, for ``--json`` output and reports."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "calibration": self.rule,
            "covariances": self.covariances,
            "utility": self.utility,
            "target_mu": self.target_mu,
            "max_attack_accuracy": self.max_attack_accuracy,
        }
