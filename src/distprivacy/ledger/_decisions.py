"""The steward's decisions on a ledger of schema 3: secrets, registered datasets, approved
plans and budgets (methods of :class:`distprivacy.ledger.Ledger`; the events they sign are
:mod:`distprivacy.ledger._registry`'s).

Every function here needs the steward's signing key and the ledger key: the steward holds
both; a releaser holds only the ledger key and can call none of them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distprivacy.ledger._anchor import read_anchor
from distprivacy.ledger._budget import NOT_GDP, budget_text, budget_to_dict, check_budget
from distprivacy.ledger._entry import LedgerError, LedgerTypeError, dumps
from distprivacy.ledger._keys import encrypt, subkey
from distprivacy.ledger._population import (
    ADULT,
    load_population,
    population_record,
    property_text,
)
from distprivacy.ledger._record import move_head
from distprivacy.ledger._registry import (
    Event,
    RegisteredDataset,
    Secret,
    append_event,
    canonical_json,
    check_name,
    source_fingerprint,
)
from distprivacy.ledger._steward import StewardKey
from distprivacy.ledger._store import checkpoint, immediate
from distprivacy.ledger._verify import chain_check, refuse_unverified
from distprivacy.targets import GDP

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from distprivacy.ledger import Ledger
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.targets import Target

#: A column counts toward "the same records re-expressed" only with at least this many distinct
#: values: a column of few values (the number of women) agrees between different samples by
#: chance.
MIN_DISTINCT = 20
#: How many such columns two tables must share, as multisets of values up to units and order,
#: before a registration asks the steward whether they hold the same records.
LINKED_COLUMNS = 2


@contextmanager
def steward_write(ledger: Ledger, steward: StewardKey) -> Iterator[sqlite3.Connection]:
    """The write lock for a steward's decision: the ledger verified (chain, events, head,
    anchor) and its events re-read first; the head moved over the new event after; then made
    durable like a release."""
    ledger._refuse_read_only()
    if steward.public != ledger.steward:
        raise LedgerError(
            f"this steward key ({steward.public.fingerprint}) is not the ledger's steward "
            f"({ledger.steward.fingerprint}): only the steward who created the ledger can "
            "sign its decisions"
        )
    anchor = read_anchor(ledger.path)
    with immediate(ledger) as con:
        report = chain_check(ledger, con, anchor)[0]
        refuse_unverified(ledger, report)
        ledger._refresh(con)
        yield con
        move_head(ledger, con, report.releases, report.head)
    checkpoint(ledger)


def signed_event(
    ledger: Ledger,
    con: sqlite3.Connection,
    steward: StewardKey,
    kind: str,
    subject: str,
    payload: Any,
    *,
    apply: bool = True,
) -> Event:
    """Sign and insert one event (inside :func:`steward_write`), applied to the ledger's
    registry unless ``apply`` is False (then the caller applies it)."""
    event = append_event(con, steward, ledger.ledger_id, ledger.steward, kind, subject, payload)
    if apply:
        ledger._apply(event)
    return event


def dataset_hashes(
    ledger: Ledger, con: sqlite3.Connection, dataset: RegisteredDataset
) -> np.ndarray:
    """A registered dataset's keyed record hashes, checked against the digest its signed
    registration holds."""
    import numpy as np

    row = con.execute(
        "SELECT hashes FROM dataset_records WHERE name = ? AND version = ?",
        (dataset.name, dataset.version),
    ).fetchone()
    hashes = None if row is None else np.frombuffer(row[0], dtype="<u8")
    if hashes is None or records_digest(hashes) != dataset.records_digest:
        raise LedgerError(
            f"the stored records of dataset {dataset.key} do not match their signed "
            "registration: the ledger was edited"
        )
    return hashes


def add_secret(
    ledger: Ledger,
    steward: StewardKey | str | Path,
    name: str,
    protect: str,
    budget: Target,
    population: str | Path | None = None,
) -> Secret:
    """Declare a secret: a protected property of a population, with its budget (a typed
    target: ``GDP(μ)``, ``EpsDelta(ε, δ)`` or ``MaxAttackAccuracy(a)``)."""
    key = StewardKey.load(steward)
    payload = secret_payload(name, protect, budget, population)
    with steward_write(ledger, key) as con:
        if name in ledger.registry.secrets:
            raise LedgerError(f"this ledger already has a secret named {name!r}")
        signed_event(ledger, con, key, "secret", name, payload)
    return ledger.registry.secret(name)


def secret_payload(
    name: str, protect: str, budget: Target, population: str | Path | None
) -> dict[str, Any]:
    """A ``secret`` event's payload, every part checked (one line naming the bad one)."""
    check_name(name, "secret")
    if not isinstance(protect, str):
        raise LedgerError(f"the protected property is a predicate text, got {protect!r:.80}")
    return {
        "property": property_text(protect),
        "population": population_record(population),
        "budget": budget_to_dict(check_budget(budget)),
    }


def set_budget(
    ledger: Ledger,
    steward: StewardKey | str | Path,
    secret: str | None,
    budget: Target,
    reason: str,
) -> Secret:
    """Set a secret's budget anew (raised or lowered), with the steward's reason (recorded).
    A lower budget than already spent refuses every later release; nothing recorded is
    undone."""
    from distprivacy.checks import check_text

    key = StewardKey.load(steward)
    check_text(secret, "secret", optional=True)
    if not isinstance(reason, str) or not reason.strip():
        raise LedgerError("say why the budget changes (reason='…'): the ledger records it")
    new = budget_to_dict(check_budget(budget))
    with steward_write(ledger, key) as con:
        s = ledger.registry.secret(secret)
        payload = {
            "secret": s.name,
            "budget": new,
            "previous": budget_to_dict(s.budget),
            "reason": reason.strip(),
        }
        signed_event(ledger, con, key, "budget", s.name, payload)
    return ledger.registry.secret(s.name)


# -- datasets ---------------------------------------------------------------------------------


def _keyed_signatures(data: pd.DataFrame, key: bytes) -> dict[str, str]:
    """Keyed per-column signatures of the columns with at least :data:`MIN_DISTINCT` values."""
    import hashlib
    import hmac

    from distprivacy.fingerprint import column_signatures

    k = subkey(key, "column-signatures")
    out = {}
    for c, sig in column_signatures(data).items():
        if data[c].nunique(dropna=True) >= MIN_DISTINCT:
            out[c] = hmac.new(k, sig.encode(), hashlib.sha256).hexdigest()
    return out


def register_dataset(
    ledger: Ledger,
    steward: StewardKey | str | Path,
    name: str,
    path: str | Path,
    *,
    secret: str | None = None,
    same_records_as: str | None = None,
    independent: bool = False,
    confirm_overlap: str | None = None,
) -> tuple[RegisteredDataset, tuple[str, ...]]:
    """Register a file (CSV, Parquet, or an Adult directory) as a dataset under a secret, or a
    new version of a registered dataset (same name). Returns the registration and the notices
    for the steward.

    The ledger measures how many records the file shares with every dataset registered under
    the same secret (exactly, by keyed record hashes) — the releases of all of them compose
    with those shares (:func:`distprivacy.composition.joint_accounting`). A table that holds
    two or more of an earlier dataset's columns (each with ≥ :data:`MIN_DISTINCT` values) as
    the same values up to order and units, but not the same records, is most likely those
    records re-expressed: registration is refused until the steward says which it is —
    ``same_records_as=NAME`` (composed as that dataset's records) or ``independent=True``
    (composed with the shares measured). A table that shares records, or such columns, with a
    dataset of *another* secret (the same records protecting a re-expressed property) needs
    ``confirm_overlap="reason"``. Each decision is recorded in the signed event.
    """
    from distprivacy.datasets import load_data
    from distprivacy.fingerprint import record_hashes, shared_records

    ledger._refuse_read_only()  # before the file is read
    from distprivacy.checks import check_bool, check_path, check_text

    key = StewardKey.load(steward)
    check_name(name, "dataset")
    check_text(secret, "secret", optional=True)
    check_text(same_records_as, "same_records_as", optional=True)
    check_text(confirm_overlap, "confirm_overlap", optional=True)
    check_bool(independent, "independent")
    path = check_path(path, "the dataset's path", error=LedgerTypeError)  # type: ignore[assignment]
    if independent and same_records_as is not None:
        raise LedgerError("say one: same_records_as=NAME or independent=True, not both")
    if not isinstance(path, str | Path):
        raise LedgerError(f"a dataset to register is a file path, got {type(path).__name__}")
    p = Path(path).expanduser()
    if not p.exists():
        raise LedgerError(f"no file at {str(p)!r} to register")
    if not (p.is_file() or p.is_dir()):
        raise LedgerError(f"{str(p)!r} is not a regular file; register a CSV or Parquet file")
    p = p.resolve()
    fingerprint = source_fingerprint(p)
    table = load_data(p)
    hashes = record_hashes(table, key=subkey(ledger.key, "identity"))
    signatures = _keyed_signatures(table, ledger.key)
    notices: list[str] = []
    with steward_write(ledger, key) as con:
        reg = ledger.registry
        versions = reg.datasets.get(name, [])
        owner = reg.secret(versions[-1].secret if versions else secret)
        if versions and secret is not None and secret != owner.name:
            raise LedgerError(
                f"dataset {name!r} is registered under secret {owner.name!r}; a new version "
                "stays under it"
            )
        if versions and versions[-1].fingerprint == fingerprint:
            raise LedgerError(
                f"{str(p)!r} is already registered as {name!r} version {versions[-1].version}"
            )
        shared: dict[str, int] = {}
        links: list[tuple[RegisteredDataset, int, int]] = []
        # Its own earlier versions are the same dataset by the steward's word (the same name):
        # their shared records are measured, never asked about.
        for other in [d for vs in reg.datasets.values() for d in vs]:
            theirs = dataset_hashes(ledger, con, other)
            k = shared_records(hashes, theirs)
            same_cols = _shared_columns(signatures, other, con, ledger)
            if other.secret == owner.name:
                shared[other.key] = k
                own = other.name == name
                if not own and same_cols >= LINKED_COLUMNS and k < min(len(hashes), other.rows):
                    links.append((other, k, same_cols))
            elif (k > 0 or same_cols >= LINKED_COLUMNS) and not confirm_overlap:
                raise LedgerError(
                    f"{str(p)!r} shares {k} records and {same_cols} columns with dataset "
                    f"{other.name!r} of secret {other.secret!r}: the same records protecting "
                    "another property? Register it only if that is intended "
                    "(`confirm_overlap='reason'`)"
                )
            elif k > 0 or same_cols >= LINKED_COLUMNS:
                notices.append(
                    f"shares {k} records and {same_cols} columns with dataset {other.name!r} of "
                    f"secret {other.secret!r}: registered as the steward confirmed"
                )
        if same_records_as is not None:
            target = reg.dataset(same_records_as)
            if target.secret != owner.name:
                raise LedgerError(
                    f"dataset {same_records_as!r} is under another secret ({target.secret!r})"
                )
            for d in reg.datasets[same_records_as]:
                shared[d.key] = min(len(hashes), d.rows)
        elif links and not independent:
            other, k, cols = links[0]
            raise LedgerError(
                f"{str(p)!r} holds {cols} columns of dataset {other.name!r} with the same "
                f"values but shares {k} of its records exactly: the same records re-expressed? "
                f"Say which: `same_records_as=NAME` ({other.name}), or `independent=True`"
            )
        decision = {
            "same_records_as": same_records_as,
            "independent": bool(independent),
            "confirm_overlap": confirm_overlap,
        }
        payload = {
            "secret": owner.name,
            "version": len(versions) + 1,
            "path": str(p),
            "fingerprint": fingerprint,
            "rows": len(table),
            "columns": [str(c) for c in table.columns],
            "records_digest": records_digest(hashes),
            "signatures": signatures,
            "shared": shared,
            "decision": decision,
        }
        con.execute(
            "INSERT INTO dataset_records (name, version, hashes) VALUES (?, ?, ?)",
            (name, len(versions) + 1, hashes.astype("<u8").tobytes()),
        )
        signed_event(ledger, con, key, "dataset", name, payload)
    return ledger.registry.dataset(name), tuple(notices)


def records_digest(hashes: np.ndarray) -> str:
    import hashlib

    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(hashes, dtype="<u8").tobytes()).hexdigest()


def _shared_columns(
    signatures: Mapping[str, str], other: RegisteredDataset, con: Any, ledger: Ledger
) -> int:
    event = ledger.registry.events[other.seq - 1]
    theirs = set(dict(event.payload.get("signatures") or {}).values())
    return len(set(signatures.values()) & theirs)


def read_registered(ledger: Ledger, dataset: RegisteredDataset) -> pd.DataFrame:
    """The registered file's table, refused in one line when its bytes changed since it was
    registered (or it is gone, or no longer a regular file)."""
    from distprivacy.datasets import load_data

    p = Path(dataset.path)
    if not p.exists():
        raise LedgerError(
            f"the file of dataset {dataset.name!r} ({dataset.path}) is gone; restore it, or "
            "the steward registers the new version (`distprivacy ledger register`)"
        )
    if source_fingerprint(p) != dataset.fingerprint:
        raise LedgerError(
            f"the file of dataset {dataset.name!r} ({dataset.path}) changed since it was "
            f"registered: the steward registers the new version of {dataset.name!r} "
            "(`distprivacy ledger register`, Ledger.register), which shares its secret's budget"
        )
    return load_data(p)


# -- plans ------------------------------------------------------------------------------------


def approve_plan(
    ledger: Ledger,
    steward: StewardKey | str | Path,
    plan: Plan,
    name: str,
    *,
    secret: str | None = None,
) -> Any:
    """Approve ``plan`` for a secret under ``name``: its protected property must be the
    secret's, its model fitted on the secret's population, its specification (n, shares,
    pairs) the one every plan of the secret shares, and its noise composable (Gaussian, or a
    guarantee that holds for every dataset). The plan is stored encrypted in the ledger:
    releasers name it, they never hand one in."""
    from distprivacy.fingerprint import data_fingerprint
    from distprivacy.mechanisms.plans import Plan

    ledger._refuse_read_only()  # a schema-2 ledger has no registry: refused up front
    from distprivacy.checks import check_text

    key = StewardKey.load(steward)
    check_name(name, "plan")
    check_text(secret, "secret", optional=True)
    if not isinstance(plan, Plan):
        from distprivacy.checks import shown

        raise LedgerTypeError(f"plan must be a Plan (Plan.load), got {shown(plan)}")
    reg = ledger.registry
    s = reg.secret(secret)
    if plan.protected_property is None or plan.spec is None:
        raise LedgerError("this plan protects no property (a user's model): it cannot be approved")
    if property_text(plan.protected_property) != s.property:
        raise LedgerError(
            f"the plan protects {plan.protected_property}; secret {s.name!r} protects "
            f"{s.property}: calibrate protecting {s.property}"
        )
    if s.spec is not None and canonical_json(s.spec) != canonical_json(plan.spec):
        raise LedgerError(
            f"the plan's specification (n, shares, pairs) differs from the one of the plans "
            f"already approved for {s.name!r} ({_spec_text(s.spec)}): calibrate with the same "
            "`n`, `values` and `pairs`"
        )
    cal = plan.calibration
    family = getattr(getattr(cal, "noise", None), "family", None)
    if family not in ("gaussian", "none") and not plan.guarantee.holds_for_every_input:
        raise LedgerError(
            f"{cal.mechanism} adds {family} noise whose guarantee rests on the model alone: "
            "its releases cannot be composed exactly with the secret's others; approve a "
            "Gaussian mechanism's plan (DauM-G, OptM-G, EigM-G, ExpM-G, DirM-G)"
        )
    if isinstance(s.budget, GDP) and plan.guarantee.curve != "gdp":
        raise LedgerError(
            f"secret {s.name!r} has a μ budget ({budget_text(s.budget)}), and this plan's "
            f"guarantee {NOT_GDP}"
        )
    fp = plan.data_fingerprint
    if s.population.get("name") == ADULT or not str(fp or "").startswith("file-sha256:"):
        population = load_population(s.population)
        ok = fp == data_fingerprint(population, plan.columns) if fp else False
    else:
        ok = fp == s.population["fingerprint"]
    if not ok:
        raise LedgerError(
            f"the plan's model was not fitted on secret {s.name!r}'s population: calibrate "
            f"on it (`data=DATA`: {s.population.get('path', ADULT)})"
        )
    body = plan.to_dict()
    body.pop("seal", None)
    summary = {
        "mechanism": cal.mechanism,
        "statistics": list(cal.statistic_names),
        "guarantee": plan.guarantee.to_dict(),
    }
    with steward_write(ledger, key) as con:
        if name in ledger.registry.plans:
            raise LedgerError(f"a plan named {name!r} is already approved in this ledger")
        payload = {"secret": s.name, "digest": plan.digest, "spec": plan.spec, "summary": summary}
        event = signed_event(ledger, con, key, "plan", name, payload, apply=False)
        con.execute(
            "INSERT INTO approved_plans (name, seq, plan) VALUES (?, ?, ?)",
            (name, event.seq, encrypt(ledger.key, dumps(body).encode("utf-8"))),
        )
        ledger._apply(event)
    return ledger.registry.plan(name)


def _spec_text(spec: Mapping[str, Any]) -> str:
    values = ", ".join(f"{float(v):g}" for v in spec.get("values", []))
    return f"n = {spec.get('n')}, shares {values}"
