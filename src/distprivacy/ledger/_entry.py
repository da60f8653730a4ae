"""Ledger entries and errors (see :mod:`distprivacy.ledger`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from distprivacy._json import jsonable
from distprivacy.checks import check_array
from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError
from distprivacy.guarantee import Guarantee

if TYPE_CHECKING:
    import numpy as np


class LedgerError(DistPrivacyError):
    """A ledger file is missing, not a ledger, of another version, or misused."""


class LedgerTypeError(LedgerError, DistPrivacyTypeError):
    """An argument of the wrong type given to the ledger (a number for its path, a table for
    a plan, ...): a :class:`LedgerError` and a ``TypeError``."""


class BudgetExceededError(DistPrivacyError):
    """A release would take the cumulative guarantee past the ledger's budget (nothing was
    recorded)."""


def dumps(x: Any) -> str:
    return json.dumps(jsonable(x), sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class LedgerEntry:
    """One release, as recorded.

    Attributes
    ----------
    fingerprint : str
        The dataset's fingerprint (:func:`data_fingerprint`).
    property : str
        The protected property (e.g. ``income==>50K``).
    mechanism : str
    statistics : tuple of str
        The released statistics' names.
    guarantee : Guarantee
        The release's own guarantee.
    values : tuple of float
        The released values.
    noise_family : str or None
        ``gaussian``, ``laplace`` or ``none``.
    noise_covariance : ndarray or None
        Cov(Z) of the release.
    plan : mapping or None
        The plan's JSON (spec, query, fitted moments ``model``, calibration, ...).
    plan_digest : str or None
    statistic_indices : tuple of int or None
        Indices of the statistics in the plan's model (default: all, in order).
    id, time : int, str
        Set by the ledger.
    cumulative : Guarantee or None
        The cumulative guarantee after this release (set by the ledger).
    property_text : str
        The property as the release spelled it (``property`` is its canonical key).
    complemented : bool
        The release's predicate is the complement of the canonical property (p ↦ 1 − p).
    unbounded : bool
        An exact release (``allow_exact``): nothing about the dataset is hidden any more. A
        ledger of secrets never records one (a schema-2 ledger may hold one).
    """

    fingerprint: str
    property: str
    mechanism: str
    statistics: tuple[str, ...]
    guarantee: Guarantee
    values: tuple[float, ...] = ()
    noise_family: str | None = None
    noise_covariance: np.ndarray | None = field(default=None, compare=False)
    plan: Mapping[str, Any] | None = field(default=None, compare=False)
    plan_digest: str | None = None
    statistic_indices: tuple[int, ...] | None = None
    id: int | None = None
    time: str | None = None
    cumulative: Guarantee | None = None
    property_text: str = ""
    complemented: bool = False
    unbounded: bool = False

    def __post_init__(self) -> None:
        import numpy as np

        for name in ("fingerprint", "property", "mechanism"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise LedgerError(f"a ledger entry needs a non-empty {name}, got {v!r}")
        if not isinstance(self.guarantee, Guarantee):
            raise LedgerError("a ledger entry's guarantee must be a Guarantee")
        if isinstance(self.statistics, str):
            raise LedgerError("a ledger entry's statistics are a list of names, not one string")
        object.__setattr__(self, "statistics", tuple(str(s) for s in self.statistics))
        try:
            vals = np.asarray(self.values, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise LedgerError(
                f"a ledger entry's values must be numbers, got {self.values!r}"
            ) from None
        if not np.isfinite(vals).all():
            raise LedgerError("a ledger entry's released values must be finite numbers")
        object.__setattr__(self, "values", tuple(float(v) for v in vals))
        if self.noise_covariance is not None:
            object.__setattr__(
                self, "noise_covariance", np.asarray(self.noise_covariance, dtype=float)
            )
        if self.statistic_indices is not None:
            object.__setattr__(
                self, "statistic_indices", tuple(int(i) for i in self.statistic_indices)
            )

    @classmethod
    def from_plan(
        cls,
        plan: Any,
        values: Sequence[float] | np.ndarray,
        *,
        fingerprint: str | None = None,
        property: str | None = None,
        **extra: Any,
    ) -> LedgerEntry:
        """The entry of releasing ``values`` with a :class:`distprivacy.mechanisms.plans.Plan`.

        ``fingerprint`` defaults to the plan's data fingerprint and ``property`` to its
        protected property."""
        raw = plan.to_dict()
        cal = plan.calibration
        fp = fingerprint if fingerprint is not None else plan.data_fingerprint
        prop = property if property is not None else plan.protected_property
        if not fp or not prop:
            raise LedgerError(
                "a ledger entry needs the dataset's fingerprint and the protected property; "
                "this plan has "
                + ("no fingerprint" if not fp else "no protected property (a user's model)")
            )
        return cls(
            fingerprint=fp,
            property=prop,
            mechanism=cal.mechanism,
            statistics=tuple(cal.statistic_names),
            guarantee=plan.guarantee,
            values=check_array(values, "values", "the released values (numbers)"),
            noise_family=getattr(getattr(cal, "noise", None), "family", None),
            noise_covariance=getattr(cal, "noise_covariance", None),
            plan=raw,
            plan_digest=raw.get("digest"),
            **extra,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (``ledger show --json``; the plan itself is left out, its digest kept)."""
        return jsonable(
            {
                "id": self.id,
                "time": self.time,
                "fingerprint": self.fingerprint,
                "property": self.property,
                "plan_digest": self.plan_digest,
                "mechanism": self.mechanism,
                "statistics": list(self.statistics),
                "values": list(self.values),
                "guarantee": self.guarantee.to_dict(),
                "noise_family": self.noise_family,
                "noise_covariance": self.noise_covariance,
                "cumulative": None if self.cumulative is None else self.cumulative.to_dict(),
                "property_text": self.property_text,
                "complemented": self.complemented,
                "unbounded": self.unbounded,
            }
        )


Composer = Callable[[list[LedgerEntry]], Guarantee]
