"""The calibration of the Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings,
FAccT 2022, Alg. 2): every quilt considered per secret (:class:`QuiltCandidate`), the b_i chosen
(:class:`SecretCalibration`) and the Laplace noise with its guarantee (:class:`QuiltCalibration`,
the :class:`~distprivacy.guarantee.Calibrated` protocol).

Part of :mod:`distprivacy.attribute.markov_quilt` (every name is importable from there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from distprivacy._json import jsonable, number
from distprivacy.attribute._quilt_graph import Influence, MarkovQuilt
from distprivacy.checks import check_epsilon
from distprivacy.exceptions import (
    DistPrivacyError,
    DistPrivacyWarning,
    Notice,
)
from distprivacy.guarantee import Guarantee, Release, noisy_release
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import RandomState

THEOREM = (
    "Zhang, Ohrimenko & Cummings (FAccT 2022), Algorithm 2 (Attribute-Private Markov Quilt "
    "Mechanism), Theorem 3: (ε, 0)-distributional attribute privacy"
)
#: What the guarantee rests on: Θ itself (the max-influences are computed exactly on it).
BASIS = "the class Θ of Bayesian networks given (max-influence computed exactly on it)"
_CALIBRATION_KEYS = frozenset(
    {
        "mechanism", "theorem", "epsilon", "delta", "n_records", "query", "attributes", "scale",
        "binding_secret", "noise", "expected_abs_error", "accuracy_alpha_beta_0.05", "warnings",
        "secrets", "guarantee",
    }
)  # fmt: skip


def _missing(what: str, e: KeyError) -> DistPrivacyError:
    return DistPrivacyError(f"{what} is missing {e.args[0]!r}")


def _influence_from_dict(raw: Mapping[str, Any]) -> Influence:
    sv = raw.get("secret_values")
    return Influence(
        value=float(number(raw["value"])),
        network=raw.get("network"),
        secret_values=None if sv is None else tuple(sv),  # type: ignore[arg-type]
        target_values=None if raw.get("target_values") is None else dict(raw["target_values"]),
    )


@dataclass(frozen=True)
class QuiltCandidate:
    """One Markov quilt considered for a secret, with its numbers.

    status is ``"feasible"`` (e < ε; scale = Δ_{A∩N}F / (ε − e)), ``"infeasible"`` (e ≥ ε),
    ``"pruned"`` (contains a quilt already found infeasible, so e ≥ ε by monotonicity) or
    ``"trivial"`` (the whole-network bound Δ_A F / ε).
    """

    quilt: MarkovQuilt
    status: str
    sensitivity: float
    max_influence: Influence | None
    scale: float | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.quilt.to_dict(),
            "status": self.status,
            "sensitivity": self.sensitivity,
            "max_influence": None if self.max_influence is None else self.max_influence.value,
            "influence_witness": None
            if self.max_influence is None
            else self.max_influence.to_dict(),
            "scale": self.scale,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> QuiltCandidate:
        """Inverse of :meth:`to_dict`."""
        try:
            quilt = MarkovQuilt(
                raw["secret"], tuple(raw["quilt"]), tuple(raw["nearby"]), tuple(raw["remote"])
            )
            witness = raw.get("influence_witness")
            scale = raw.get("scale")
            return cls(
                quilt,
                raw["status"],
                float(number(raw["sensitivity"])),
                None if witness is None else _influence_from_dict(witness),
                None if scale is None else float(number(scale)),
                raw.get("note", ""),
            )
        except KeyError as e:
            raise _missing("a quilt candidate", e) from None


@dataclass(frozen=True)
class SecretCalibration:
    """Algorithm 2's b_i for one sensitive attribute i: the quilt chosen and every candidate."""

    secret: str
    chosen: QuiltCandidate
    candidates: tuple[QuiltCandidate, ...]
    fallback_used: bool
    pinned: bool
    reason: str

    @property
    def scale(self) -> float:
        """b_i."""
        return float(self.chosen.scale)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        return {
            "secret": self.secret,
            "scale": self.scale,
            "chosen": self.chosen.to_dict(),
            "fallback_used": self.fallback_used,
            "pinned": self.pinned,
            "reason": self.reason,
            "candidates": [c.to_dict() for c in self.candidates],
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SecretCalibration:
        """Inverse of :meth:`to_dict` (``scale`` is the chosen quilt's)."""
        try:
            return cls(
                raw["secret"],
                QuiltCandidate.from_dict(raw["chosen"]),
                tuple(QuiltCandidate.from_dict(c) for c in raw["candidates"]),
                bool(raw["fallback_used"]),
                bool(raw["pinned"]),
                raw["reason"],
            )
        except KeyError as e:
            raise _missing("a secret's calibration", e) from None


def quilt_warnings(secrets: Sequence[SecretCalibration]) -> tuple[Notice, ...]:
    """The caveats of a calibration: each secret that fell back to the whole-network bound."""
    return tuple(
        Notice(f"{s.secret}: {s.reason}", DistPrivacyWarning) for s in secrets if s.fallback_used
    )


@dataclass(frozen=True, repr=False)
class QuiltCalibration:
    """Everything the release will do, inspectable before any noise is drawn (the
    :class:`~distprivacy.guarantee.Calibrated` protocol).

    Attributes
    ----------
    epsilon : float
    n_records : int
    query : str
    attributes : tuple of str
        A.
    secrets : tuple of SecretCalibration
        One per i ∈ C.
    scale : float
        The Laplace scale max_{i ∈ C} b_i (0: F(X) is released as it is).
    binding_secret : str
        The i attaining the maximum.
    theorem : str
    warnings : tuple of Notice
        Typed caveats (:func:`quilt_warnings`).
    """

    mechanism: ClassVar[str] = "attribute-private Markov quilt"

    epsilon: float
    n_records: int
    query: str
    attributes: tuple[str, ...]
    secrets: tuple[SecretCalibration, ...]
    scale: float
    binding_secret: str
    theorem: str = THEOREM
    warnings: tuple[Notice, ...] = field(default_factory=tuple)

    @property
    def statistic_names(self) -> tuple[str, ...]:
        """The one released statistic, F (named by its query)."""
        return (self.query,)

    @property
    def guarantee(self) -> Guarantee:
        """(ε, 0)-distributional attribute privacy (Theorem 3)."""
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            theorem=self.theorem,
            notion="attribute privacy",
            curve="point",
            basis=BASIS,
            verified=True,
            assumptions=("the distribution of the parameters φ is one of the networks of Θ",),
        )

    @property
    def adds_noise(self) -> bool:
        return self.scale > 0

    @property
    def noise(self) -> NoiseDistribution:
        """The noise Z: Lap(0, scale), or none when the scale is 0."""
        if self.scale == 0:
            return NoiseDistribution.none(1)
        return NoiseDistribution.isotropic("laplace", 1, self.scale)

    def accuracy(self, beta: float) -> float:
        """α with P(|M(X) − F(X)| > α) = β (Theorem 4's accuracy, two-sided Laplace tail).

        α = b·ln(1/β) for Z ~ Lap(b), since P(|Z| > α) = exp(−α/b); 0 when b = 0.
        """
        if not (0 < beta < 1):
            raise DistPrivacyError(f"beta must be in (0, 1), got {beta}")
        return float(self.scale * math.log(1.0 / beta))

    @property
    def expected_abs_error(self) -> float:
        """E|Z| = b for Z ~ Lap(b)."""
        return float(self.scale)

    def __repr__(self) -> str:
        return (
            f"QuiltCalibration({self.query}, n={self.n_records}, ε={self.epsilon:g}, "
            f"Laplace scale={self.scale:.4g}, binding {self.binding_secret})"
        )

    def summary(self) -> str:
        """A few lines a person can read: the guarantee, each secret's b_i and the noise."""
        lines = [
            f"{self.mechanism} ({self.theorem})",
            f"  guarantee: {self.guarantee.describe()}",
            f"  query {self.query} over n = {self.n_records} records",
        ]
        lines += [
            f"  secret {s.secret}: b = {s.scale:.6g} from {s.chosen.quilt.label()}"
            for s in self.secrets
        ]
        lines.append(
            "  noise: none (F(X) is released as it is)"
            if self.scale == 0
            else f"  noise: Laplace(0, {self.scale:.6g}), E|Z| = {self.expected_abs_error:.6g}"
        )
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def release(
        self,
        value: float | ArrayLike,
        random_state: RandomState = None,
        *,
        allow_exact: bool = False,
        size: int | None = None,
    ) -> Release:
        """M(X) = F(X) + Z, Z ~ Lap(scale), for F(X) = ``value`` (a dataset of n_records).

        Parameters
        ----------
        value : float
            F(X).
        random_state : None, int, Generator or SecureGenerator
            None (default) draws from OpenDP's secure sampler; a seed or generator is
            reproducible (experiments only).
        allow_exact : bool
            Release even when the scale is 0 (F(X) as it is). Off by default.
        size : int, optional
            Draw this many independent releases of the same value (values of shape (size,)).

        Raises
        ------
        ExactReleaseError
            When the scale is 0 and ``allow_exact`` is False.
        """
        v = np.atleast_1d(np.asarray(value, dtype=float))
        if v.shape != (1,) or not np.isfinite(v).all():
            raise DistPrivacyError(f"the value to release must be one finite number, got {value!r}")
        return noisy_release(
            self,
            v,
            random_state=random_state,
            allow_exact=allow_exact,
            size=size,
            exact_reason=(
                "this calibration adds no noise (Laplace scale 0: the secrets do not influence "
                "the query), so the release would publish F(X) (cf. Theorem 4.4 of Chen & "
                "Ohrimenko 2023); pass `allow_exact=True` to release it exactly"
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON output of ``distprivacy attribute quilt``; infinities as "inf")."""
        return jsonable(
            {
                "mechanism": self.mechanism,
                "theorem": self.theorem,
                "epsilon": self.epsilon,
                "delta": 0.0,
                "n_records": self.n_records,
                "query": self.query,
                "attributes": list(self.attributes),
                "scale": self.scale,
                "binding_secret": self.binding_secret,
                "noise": "none" if self.scale == 0 else f"Laplace(0, {self.scale:.6g})",
                "expected_abs_error": self.expected_abs_error,
                "accuracy_alpha_beta_0.05": self.accuracy(0.05),
                "warnings": list(self.warnings),
                "secrets": [s.to_dict() for s in self.secrets],
                "guarantee": self.guarantee.to_dict(),
            }
        )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> QuiltCalibration:
        """Inverse of :meth:`to_dict` (unknown keys refused; the derived numbers and the
        warnings are recomputed from the fields)."""
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a calibration must be an object, got {type(raw).__name__}")
        extra = sorted(set(raw) - _CALIBRATION_KEYS)
        if extra:
            raise DistPrivacyError(f"unknown key(s) in a quilt calibration: {', '.join(extra)}")
        try:
            secrets = tuple(SecretCalibration.from_dict(s) for s in raw["secrets"])
            cal = cls(
                epsilon=check_epsilon(number(raw["epsilon"])),
                n_records=int(raw["n_records"]),
                query=raw["query"],
                attributes=tuple(raw["attributes"]),
                secrets=secrets,
                scale=float(number(raw["scale"])),
                binding_secret=raw["binding_secret"],
                theorem=raw.get("theorem", THEOREM),
                warnings=quilt_warnings(secrets),
            )
        except KeyError as e:
            raise _missing("a quilt calibration", e) from None
        except (TypeError, ValueError) as e:
            raise DistPrivacyError(f"a quilt calibration has a bad field: {e}") from None
        if "guarantee" in raw and Guarantee.from_dict(raw["guarantee"]) != cal.guarantee:
            raise DistPrivacyError("the calibration's guarantee does not match its fields")
        return cal


#: A release of the mechanism is a :class:`distprivacy.guarantee.Release` (``.value``,
#: ``.secure``, ``.calibration.scale``); the name is kept for existing imports.
QuiltRelease = Release
