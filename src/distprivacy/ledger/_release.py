"""Plan + target + ledger → a recorded release (the library workflow the CLI calls)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.guarantee import Guarantee, Release
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import LedgerError

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger


@dataclass(frozen=True)
class RecordedRelease:
    """A release recorded in a ledger before it was revealed.

    Attributes
    ----------
    release : Release
        The noisy statistics (never the true ones, unless an exact release was asked for).
    cumulative : Guarantee
        The guarantee of every recorded release of this dataset and property together.
    release_id : int
        The row in the ledger.
    releases_of_dataset : int
        How many releases of this dataset and property the ledger now holds.
    warnings : tuple of str
        Near-duplicate warnings (:data:`distprivacy.ledger.NEAR_DUPLICATE`).
    """

    release: Release
    cumulative: Guarantee
    release_id: int
    releases_of_dataset: int
    warnings: tuple[str, ...] = ()


def release_recorded(
    ledger: Ledger,
    plan: Any,
    target: Any,
    *,
    random_state: Any = None,
    allow_exact: bool = False,
    require_seal: bool = True,
    fit: Any = None,
) -> RecordedRelease:
    """Release ``target`` (the n records, a DataFrame) with ``plan``, recorded in ``ledger``
    first (record, then reveal).

    Refused with one line: a plan not sealed by this ledger (unless ``require_seal`` is False,
    for a plan the caller has just computed itself), a seeded or non-secure ``random_state``
    (seeds are for experiments: a recorded release draws from the secure generator), a target
    without the columns the release reads or the ledger's identity columns
    (:mod:`distprivacy.ledger._identity`) or of the wrong size, and a release over budget
    (:class:`~distprivacy.ledger.BudgetExceededError`, nothing recorded). ``allow_exact`` with
    a noiseless calibration records an exact release, which exhausts the dataset's budget.
    """
    from distprivacy.mechanisms.plans import Plan

    if not isinstance(plan, Plan):
        raise LedgerError(f"release_recorded takes a Plan, got {type(plan).__name__}")
    if random_state is not None:
        raise LedgerError(
            "a release recorded in a ledger draws its noise from the secure generator; a seed "
            "(or a generator) makes the noise reproducible, so anyone with it could subtract "
            "the noise: drop the seed (seeds are for experiments)"
        )
    if not isinstance(allow_exact, bool):
        raise LedgerError(f"allow_exact must be True or False, got {allow_exact!r}")
    if require_seal:
        ledger.verify_seal(plan)
    values = plan.target_values(target, require_property=True)
    cal = plan.calibration
    rel = cal.release(values, None, allow_exact=allow_exact)
    if not rel.secure:  # pragma: no cover - guard: random_state None is always secure
        raise LedgerError("the release did not come from the secure generator; not recorded")
    exact = not cal.adds_noise
    entry = ledger.entry(plan, np.asarray(rel.values, dtype=float), target, unbounded=exact)
    compose = plan_composer(delta=ledger.budget.report_delta, fit=fit)
    cumulative = ledger.record(entry, compose)
    count = len(ledger.releases(ledger.last_fingerprint, entry.property))
    return RecordedRelease(
        release=rel,
        cumulative=cumulative,
        release_id=int(ledger.last_id or 0),
        releases_of_dataset=count,
        warnings=ledger.last_warnings,
    )


class PlanRefit:
    """The ``fit`` a plan's recorded release needs when earlier releases of its dataset used
    other statistics: the ledger composes them on one model of every released statistic
    (:func:`~distprivacy.ledger._compose.plan_composer`), refitted on the population the
    plans were calibrated on.

    ``data`` (a path as ``--data`` takes it, a DataFrame or an engine) is checked to be that
    population before anything is recorded: its fingerprint over the plan's columns must be
    the plan's (:func:`~distprivacy.fingerprint.source_fingerprint`, on the engine the plan
    recorded), and, when the refit is used, every composed release's plan's too
    (:meth:`verify_entries`). The refit uses the plan's specification and modelling choices
    (method, samples, seed, engine), so the model of each plan's own statistics is the one
    its calibration rests on.
    """

    def __init__(self, plan: Any, data: Any) -> None:
        from pathlib import Path

        from distprivacy.engines import load_source, resolve_engine
        from distprivacy.spec import ProtectionSpec

        if plan.spec is None or not plan.query:
            raise LedgerError(
                "this plan names no statistics of a dataset (it was made from a user's model): "
                "there is nothing to refit, so give no data with it"
            )
        self.modelling = dict(plan.modelling or {})
        source = load_source(data) if isinstance(data, str | Path) else data
        self.what = str(data) if isinstance(data, str | Path) else type(data).__name__
        self.engine = resolve_engine(str(self.modelling.get("engine") or "auto"), source)
        sp = plan.spec
        self.spec = ProtectionSpec(
            sp["property"],
            int(sp["n"]),
            sp["values"],
            pairs=[tuple(x) for x in sp["pairs"]],
        )
        self._fingerprints: dict[tuple[str, ...], str | None] = {}
        self._check(plan.data_fingerprint, plan.columns, "the plan")

    def fingerprint(self, columns: Any) -> str | None:
        """The data's fingerprint over ``columns``, as a plan records it (cached)."""
        from distprivacy.fingerprint import source_fingerprint

        key = tuple(sorted(str(c) for c in columns))
        if key not in self._fingerprints:
            try:
                self._fingerprints[key] = source_fingerprint(self.engine, key)
            except (DistPrivacyError, OSError, KeyError) as exc:
                raise LedgerError(
                    f"the data {self.what} cannot be fingerprinted over {', '.join(key)} ({exc})"
                    "; give the population the plans were calibrated on"
                ) from None
        return self._fingerprints[key]

    def _check(self, expected: Any, columns: Any, whose: str) -> None:
        if not expected:
            raise LedgerError(
                f"{whose} records no fingerprint of its data: the refit population cannot be "
                "checked against it; release the statistics together from the data instead"
            )
        if self.fingerprint(columns) != expected:
            raise LedgerError(
                f"the data {self.what} is not the population {whose} was calibrated on (its "
                "fingerprint differs); give the data it was calibrated on (calibrate's data)"
            )

    def verify_entries(self, entries: Any) -> None:
        """Every composed release's plan was calibrated on this data (one line if not)."""
        for e in entries:
            plan = e.plan or {}
            who = f"the plan of release {e.id}" if e.id else "the plan"
            self._check(plan.get("data_fingerprint"), plan.get("columns") or (), who)

    def __call__(self, text: str) -> Any:
        """The model of the statistics ``text`` (a query's text) on the data."""
        from distprivacy.models import fit_model
        from distprivacy.query import Query

        query = Query.parse(text)
        self.engine.validate(query, self.spec)
        m = self.modelling
        return fit_model(
            self.engine,
            self.spec,
            query,
            engine=self.engine,
            method=str(m.get("requested") or m.get("method") or "auto"),
            n_samples=int(m.get("samples") or 1000),
            random_state=int(m.get("seed") or 0),
        )
