"""Plan + target + ledger → a recorded release (the library workflow the CLI calls)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from distprivacy.guarantee import Guarantee, Release
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import BudgetExceededError, LedgerError

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger

#: Why a ledger refuses an exact release (issue 30): its μ is ∞, above every finite budget, so
#: recording one would spend the budget and reveal the true statistics all the same.
EXACT_REFUSED = (
    "`allow_exact=True` refused: an exact release exceeds every budget; a ledger does not "
    "record one: publish outside the ledger or add noise"
)


@dataclass(frozen=True)
class RecordedRelease:
    """A release recorded in a ledger before it was revealed.

    Attributes
    ----------
    release : Release
        The noisy statistics (never the true ones: a ledger records no exact release).
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
    (:class:`~distprivacy.ledger.BudgetExceededError`, nothing recorded). ``allow_exact=True``
    is refused (BudgetExceededError, :data:`EXACT_REFUSED`): an exact release has μ = ∞ and
    exceeds every budget, so a ledger never records one.
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
    if allow_exact:
        raise BudgetExceededError(EXACT_REFUSED)
    if require_seal:
        ledger.verify_seal(plan)
    values = plan.target_values(target, require_property=True)
    cal = plan.calibration
    rel = cal.release(values, None, allow_exact=False)  # no noise: ExactReleaseError
    if not rel.secure:  # pragma: no cover - guard: random_state None is always secure
        raise LedgerError("the release did not come from the secure generator; not recorded")
    entry = ledger.entry(plan, np.asarray(rel.values, dtype=float), target)
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
