"""A registered dataset + an approved plan + a ledger of secrets → a recorded release (the
library workflow the CLI calls)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from distprivacy.guarantee import Guarantee, Release
from distprivacy.ledger._budget import EXACT_REFUSED, composer_delta, report_delta
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import BudgetExceededError, LedgerError
from distprivacy.ledger._population import population_refit

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger


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
        Warnings about the release (none at present: kept for callers that print them).
    plan : Plan or None
        The approved plan it was made with (a ledger of secrets).
    dataset : RegisteredDataset or None
        The registered dataset it released (a ledger of secrets).
    secret : Secret or None
        The secret whose budget it spent (a ledger of secrets); ``releases_of_dataset`` then
        counts the secret's releases.
    at_delta : float or None
        The δ the cumulative ε is stated at (:func:`distprivacy.ledger._budget.report_delta`:
        an (ε, δ) budget's δ, else the smallest δ the secret's releases were calibrated for).
    """

    release: Release
    cumulative: Guarantee
    release_id: int
    releases_of_dataset: int
    warnings: tuple[str, ...] = ()
    plan: Any = None
    dataset: Any = None
    secret: Any = None
    at_delta: float | None = None


def release_registered(
    ledger: Ledger,
    plan_name: str,
    dataset_name: str,
    *,
    allow_exact: bool = False,
    random_state: Any = None,
) -> RecordedRelease:
    """Release a registered dataset with an approved plan, recorded in ``ledger`` first
    (record, then reveal) — a ledger of secrets (schema 3).

    The releaser names both; nothing is handed in. The plan is the one the steward approved
    (decrypted from the ledger, its digest the signed one, its self-check passed); the data
    are read from the registered file, refused when its bytes changed since registration; the
    release composes with every earlier release under the plan's secret, whatever dataset they
    read, the datasets' shared records as measured at registration
    (:func:`distprivacy.composition.joint_accounting`). A union of statistics no single plan
    holds is refitted (exact moments) on the secret's own population, never on data the
    releaser gives. Refused with one line: a seed (the noise comes from the secure
    generator), ``allow_exact=True`` (:data:`EXACT_REFUSED`), a dataset of another secret
    than the plan's, a changed file, and a release over budget
    (:class:`~distprivacy.ledger.BudgetExceededError`, nothing recorded).
    """
    from distprivacy.ledger._decisions import read_registered
    from distprivacy.ledger._entry import LedgerEntry

    ledger._refuse_read_only()
    if not isinstance(plan_name, str) or not isinstance(dataset_name, str):
        raise LedgerError(
            "a ledger of secrets releases a registered dataset with an approved plan, both "
            "named: ledger.release('PLAN', 'DATASET') (the steward approves plans with "
            "`ledger approve` and registers datasets with `ledger register`)"
        )
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
    reg = ledger._refresh(ledger._con)
    approved = reg.plan(plan_name)
    dataset = reg.dataset(dataset_name)
    if dataset.secret != approved.secret:
        raise LedgerError(
            f"dataset {dataset.name!r} is registered under secret {dataset.secret!r} and plan "
            f"{plan_name!r} is approved for {approved.secret!r}: a plan releases the datasets "
            "of its own secret"
        )
    secret = reg.secret(approved.secret)
    plan = approved_plan(ledger, plan_name)
    target = read_registered(ledger, dataset)
    values = plan.target_values(target, require_property=True)
    rel = plan.calibration.release(values, None, allow_exact=False)
    if not rel.secure:  # pragma: no cover - guard: random_state None is always secure
        raise LedgerError("the release did not come from the secure generator; not recorded")
    entry = LedgerEntry.from_plan(
        plan,
        np.asarray(rel.published.values, dtype=float),  # what is published (clipped)
        fingerprint=dataset.key,
        property=secret.key,
        property_text=secret.property,
    )
    n = int(plan.n or dataset.rows)

    def shared(a: str, b: str) -> float:
        return min(1.0, reg.shared(a, b) / n)

    compose = plan_composer(
        at_delta=composer_delta(secret.budget),
        fit=population_refit(plan, secret),
        shared=shared,
    )
    cumulative = ledger.record(entry, compose)
    recorded = ledger.releases(None, secret.key)
    count = len(recorded)
    return RecordedRelease(
        release=rel,
        cumulative=cumulative,
        release_id=int(ledger.last_id or 0),
        releases_of_dataset=count,
        warnings=ledger.last_warnings,
        plan=plan,
        dataset=dataset,
        secret=secret,
        at_delta=report_delta(secret.budget, recorded),
    )


def approved_plan(ledger: Ledger, name: str) -> Any:
    """An approved plan, decrypted and checked against its signed digest (and by its own
    self-check)."""
    import json

    from distprivacy.ledger._keys import decrypt
    from distprivacy.mechanisms.plans import Plan

    approved = ledger.registry.plan(name)
    row = ledger._con.execute(
        "SELECT seq, plan FROM approved_plans WHERE name = ?", (name,)
    ).fetchone()
    if row is None or int(row[0]) != approved.seq:
        raise LedgerError(f"the approved plan {name!r} is missing from the ledger")
    text = decrypt(ledger.key, row[1], f"the approved plan {name!r}")
    plan = Plan.from_dict(json.loads(text.decode("utf-8")), f"the approved plan {name!r}")
    if plan.digest != approved.digest:
        raise LedgerError(
            f"the approved plan {name!r} is not the one the steward signed (its digest "
            "differs): the ledger was edited"
        )
    return plan
