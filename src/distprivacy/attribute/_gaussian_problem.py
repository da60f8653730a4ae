"""A user's dataset-attribute-privacy problem for §4.2 of Zhang, Ohrimenko & Cummings (FAccT
2022), from a dict or a JSON / TOML file (used by ``distprivacy attribute gaussian``).

Part of :mod:`distprivacy.attribute.gaussian` (every name is importable from there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distprivacy.attribute._gaussian_mechanism import APGMCalibration, AttributeGaussianMechanism
from distprivacy.attribute._gaussian_terms import PAIR_READINGS, RULES
from distprivacy.attribute._gaussian_theta import GaussianTheta, RegressionTheta
from distprivacy.attribute.framework import AttributeFramework
from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError
from distprivacy.files import (
    AnyOf,
    Array,
    Bool,
    Field,
    Int,
    ListOf,
    MapOf,
    Number,
    Pair,
    Str,
    Table,
    read_mapping_file,
    validate,
)
from distprivacy.targets import EpsDelta

if TYPE_CHECKING:
    from distprivacy.attribute.pufferfish import WassersteinCalibration

# ---------------------------------------------------------------------------------------------
# A user's problem, from a dict / JSON / TOML file (used by ``distprivacy attribute gaussian``)
# ---------------------------------------------------------------------------------------------


def _problem_schema() -> Table:
    """The schema of a problem (file or dict): every key, its type and shape."""
    value_or_range = AnyOf(
        Number(), Pair(Number(), example="[low, high]"), noun="a number or [low, high]"
    )
    per_attribute = MapOf(
        value_or_range,
        noun="an object mapping query attributes to a number or [low, high]",
        example='{"bp": [6, 10]}',
        min_len=1,
    )
    # shapes against the attributes are checked by GaussianTheta (which names them)
    matrix = Array((None, None), noun="a matrix of finite numbers (a list of rows)")
    return Table(
        {
            "attributes": Field(
                ListOf(Str(), min_len=1, unique=True, noun="names", example='["g", "w"]')
            ),
            "sensitive": Field(Str()),
            "query": Field(
                AnyOf(
                    Str(),
                    ListOf(Str(), min_len=1, noun="names", example='["bp"]'),
                    noun='an attribute name or a list of them, such as "bp" or ["bp", "w"]',
                )
            ),
            "n": Field(Int(minimum=1)),
            "secrets": Field(
                ListOf(
                    AnyOf(Str(), Number(), noun="a value or an interval string"),
                    min_len=2,
                    noun="secrets",
                    example='["(0.25,0.5)", "(0.5,0.75)"]',
                )
            ),
            "pairs": Field(
                ListOf(
                    Pair(Int(minimum=0), example="[0, 1]"),
                    min_len=1,
                    noun="pairs of secret indices",
                    example="[[0, 1]]",
                )
            ),
            "binary": Field(Bool()),
            "parameter_range": Field(Pair(Number(finite=False), example="[low, high]")),
            "means": Field(
                AnyOf(
                    Array((None,)),
                    Array((None, None)),
                    noun="a list of m numbers or one such list per covariance",
                )
            ),
            "covariances": Field(
                AnyOf(
                    matrix,
                    Array((None, None, None)),
                    noun="a matrix or a list of matrices of finite numbers",
                )
            ),
            "cov_low": Field(matrix),
            "cov_high": Field(matrix),
            "slopes": Field(per_attribute),
            "residual_variances": Field(per_attribute),
            "epsilon": Field(Number()),
            "delta": Field(Number()),
            "rule": Field(Str(RULES)),
            "pair_distance": Field(Str(PAIR_READINGS)),
        },
        noun="an object (the problem format of docs/attribute_privacy.md)",
    )


#: The schema of a problem (:meth:`GaussianProblem.from_dict`, and a problem file completed by
#: command-line options).
PROBLEM_SCHEMA = _problem_schema()
#: The schema of a problem file read on its own (:meth:`GaussianProblem.from_file`).
PROBLEM_FILE_SCHEMA = Table(
    {
        k: Field(f.schema, required=k in ("sensitive", "query", "n", "secrets"))
        for k, f in PROBLEM_SCHEMA.fields.items()
    },
    noun=PROBLEM_SCHEMA.noun,
)
_PROBLEM_KEYS = frozenset(PROBLEM_SCHEMA.fields)


@dataclass(frozen=True)
class GaussianProblem:
    """A dataset-attribute-privacy problem for §4.2: who is sensitive, what is released, the
    secrets, n and Θ (covariance list, covariance box, or slope / residual-variance ranges).

    Keys of :meth:`from_dict` (JSON or TOML files hold the same):
    ``sensitive`` (str), ``query`` (str or list), ``n`` (int), ``secrets`` (≥ 2 values or
    intervals such as "(0.25,0.5)"), optional ``pairs`` (index pairs; default all),
    ``binary`` (the sensitive column is 0/1; default false), ``parameter_range`` ([low, high] of
    φ over Θ), and Θ as one of: ``attributes`` + ``covariances`` (one m×m matrix or a list of
    them; optional ``means``), ``attributes`` + ``cov_low`` + ``cov_high``, or ``slopes`` +
    ``residual_variances`` (maps query attribute -> value or [low, high]). Optional
    ``epsilon``, ``delta``, ``rule``, ``pair_distance``.
    """

    framework: AttributeFramework
    theta: GaussianTheta | RegressionTheta
    query: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> GaussianProblem:
        from distprivacy.attribute.framework import (
            AttributeDomain,
            DatasetAttributeFramework,
            pairs_from_sets,
        )

        raw = validate(raw, PROBLEM_SCHEMA, "the problem")
        for key in ("sensitive", "query", "n", "secrets"):
            if raw.get(key) in (None, "", []):
                raise DistPrivacyError(f"the problem needs {key!r}")
        sensitive = str(raw["sensitive"])
        query = raw["query"]
        query = (query,) if isinstance(query, str) else tuple(query)
        n = raw["n"]
        binary = raw.get("binary", False)
        prange = raw.get("parameter_range")
        if prange is None:
            prange = (0.0, 1.0) if binary else (-math.inf, math.inf)
        dom = AttributeDomain(sensitive, binary=binary, parameter_range=tuple(prange))
        pair_idx = raw.get("pairs")
        pairs = pairs_from_sets(
            sensitive,
            list(raw["secrets"]),
            pairs=pair_idx,
        )
        fw = DatasetAttributeFramework(pairs=pairs, domains=(dom,), n=n)
        forms = [k for k in ("covariances", "cov_low", "slopes") if raw.get(k) is not None]
        if len(forms) != 1:
            raise DistPrivacyError(
                "give Θ in exactly one form: covariances, cov_low + cov_high, or slopes + "
                "residual_variances"
            )
        if forms[0] == "slopes":
            if raw.get("residual_variances") is None:
                raise DistPrivacyError("slopes need residual_variances too")
            for key in ("slopes", "residual_variances"):
                lacking = [q for q in query if q not in raw[key]]
                if lacking:
                    raise DistPrivacyError(
                        f"{key} gives no value for the query attribute(s) {lacking}; give one "
                        f"per query attribute ({', '.join(query)})"
                    )
            theta: GaussianTheta | RegressionTheta = RegressionTheta(
                {(sensitive, q): v for q, v in raw["slopes"].items()},
                {(sensitive, q): v for q, v in raw["residual_variances"].items()},
            )
        else:
            names = raw.get("attributes")
            if not names:
                raise DistPrivacyError("a covariance form of Θ needs 'attributes' (their order)")
            names = tuple(names)
            unknown = [a for a in (sensitive, *query) if a not in names]
            if unknown:
                raise DistPrivacyError(
                    f"unknown attribute {unknown[0]!r} (sensitive or queried); the attributes "
                    f"are {', '.join(names)}"
                )
            if forms[0] == "covariances":
                theta = GaussianTheta(names, raw["covariances"], raw.get("means"))
            else:
                if raw.get("cov_high") is None:
                    raise DistPrivacyError("cov_low needs cov_high too")
                theta = GaussianTheta.from_ranges(
                    names, raw["cov_low"], raw["cov_high"], sensitive=sensitive, query=query
                )
        settings = {k: raw[k] for k in ("epsilon", "delta", "rule", "pair_distance") if k in raw}
        return cls(fw, theta, query, settings)

    @classmethod
    def from_file(cls, path: str) -> GaussianProblem:
        """Read a JSON (.json) or TOML (.toml) problem file (checked against
        :data:`PROBLEM_SCHEMA`, with ``sensitive``, ``query``, ``n`` and ``secrets``
        required); every error names the file."""
        source = f"problem file {Path(path).name!r}"
        raw = read_mapping_file(path, "problem file", PROBLEM_FILE_SCHEMA)
        try:
            return cls.from_dict(raw)
        except DistPrivacyError as e:
            raise type(e)(f"{source}: {e}") from None

    def calibrate(
        self,
        target: EpsDelta | None = None,
        *,
        rule: str | None = None,
        pair_distance: str | None = None,
        **old: Any,
    ) -> APGMCalibration:
        """Algorithm 1 on this problem.

        Parameters
        ----------
        target : EpsDelta, optional
            The (ε, δ) to meet; default: the problem's own ``epsilon`` and ``delta``.
        rule, pair_distance : str, optional
            Override the problem's own settings.

        Returns
        -------
        APGMCalibration
        """
        if old:
            given = ", ".join(f"{k}={v!r}" for k, v in old.items())
            raise DistPrivacyTypeError(
                "GaussianProblem.calibrate takes an (ε, δ) target: calibrate(EpsDelta(1.0, "
                f"1e-3)) (distprivacy.targets); got {given}"
            )
        s = self.settings
        if target is None:
            eps, dlt = s.get("epsilon"), s.get("delta")
            if eps is None or dlt is None:
                raise DistPrivacyError(
                    "give the target (e.g. `calibrate(EpsDelta(1, 0.001))`) or the problem's "
                    "epsilon and delta"
                )
            target = EpsDelta(eps, dlt)
        mech = AttributeGaussianMechanism(target, rule=rule or s.get("rule", "exact"))
        return mech.calibrate(
            self.framework,
            self.theta,
            self.query,
            pair_distance=pair_distance or s.get("pair_distance", "sup"),
        )

    def calibrate_wasserstein(
        self, *, epsilon: float | None = None, pair_distance: str | None = None
    ) -> WassersteinCalibration:
        """The Pufferfish Wasserstein Mechanism (Song et al. 2017) on this problem: Laplace noise
        of scale W/ε with W = max over θ (and sensitive attributes) of W∞ between the Gaussian
        conditionals of F, which is ‖β_θ‖₁ d(U) (their covariances are equal)."""
        from distprivacy.attribute.pufferfish import PufferfishWassersteinMechanism

        eps = epsilon if epsilon is not None else self.settings.get("epsilon")
        if eps is None:
            raise DistPrivacyError("give epsilon (e.g. `epsilon=1`)")
        reading = pair_distance or self.settings.get("pair_distance", "sup")
        if reading not in PAIR_READINGS:
            raise DistPrivacyError(f"pair_distance must be one of {PAIR_READINGS}")
        conds: dict[str, dict[str, Any]] = {}
        for a in self.framework.sensitive:
            d = self.framework.diameter(a, reading)
            for label, c in self.theta.conditionals(a, self.query, self.framework.n, d).items():
                conds[f"{a}:{label}"] = c
        return PufferfishWassersteinMechanism(epsilon=eps).calibrate(
            conds, [("a", "b")], [f"mean({q})" for q in self.query]
        )


def read_problem_file(path: str) -> dict[str, Any]:
    """The problem of a JSON (.json) or TOML (.toml) file, checked against
    :data:`PROBLEM_SCHEMA` (errors name the file and the key), for
    :meth:`GaussianProblem.from_dict`."""
    return read_mapping_file(path, "problem file", PROBLEM_SCHEMA)
