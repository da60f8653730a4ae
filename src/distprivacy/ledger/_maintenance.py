"""Verifying, backing up and identifying releases for a ledger (methods of
:class:`distprivacy.ledger.Ledger`, kept apart to keep that module small)."""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from distprivacy._json import jsonable
from distprivacy.ledger._chain import (
    VerifyReport,
    _private_umask,
    _same_guarantee,
    _sql_error,
    _unbounded_guarantee,
)
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import Composer, LedgerEntry, LedgerError
from distprivacy.ledger._keys import key_path, subkey

#: Estimated Jaccard similarity of two targets' rows from which a release is flagged as a
#: near-duplicate of an earlier released dataset (the sketch's standard error is ≈ 0.044).
NEAR_DUPLICATE = 0.5

if TYPE_CHECKING:
    from collections.abc import Sequence

    from distprivacy.ledger import Ledger


def verify_ledger(ledger: Ledger, compose: Composer | None = None) -> VerifyReport:
    """Recompute the chain and the head, then every row's guarantee from its own plan and
    every running total from the rows before it (``compose``, default
    :func:`plan_composer`). Returns a :class:`VerifyReport` naming the first bad row."""
    report, rows = ledger._chain_check(ledger._con)
    if not report.ok:
        return report
    from distprivacy.mechanisms.plans import Plan, PlanError

    compose = compose if compose is not None else plan_composer(delta=ledger.budget.report_delta)
    seen: dict[tuple[str, str], list[LedgerEntry]] = {}
    for r in rows:
        rid = int(r[0])
        try:
            e = ledger._entry(r)
        except LedgerError as exc:
            return replace(report, ok=False, first_bad=rid, reason=str(exc))
        if e.plan is not None:
            try:
                plan = Plan.from_dict(e.plan, f"the plan of release {rid}")
            except PlanError as exc:
                return replace(report, ok=False, first_bad=rid, reason=str(exc))
            if plan.guarantee != e.guarantee:
                why = "its guarantee is not the one its own plan gives"
                return replace(report, ok=False, first_bad=rid, reason=why)
        group = seen.setdefault((e.fingerprint, e.property), [])
        group.append(e)
        if e.unbounded or any(x.unbounded for x in group):
            continue
        try:
            g = compose(group)
        except Exception:
            continue
        c = e.cumulative
        if c is None or not _same_guarantee(g, c):
            why = (
                f"its running total (μ = {getattr(c, 'mu', None)}) is not the composition "
                f"of the releases so far (μ = {g.mu:.6g})"
            )
            return replace(report, ok=False, first_bad=rid, reason=why)
    return report


def backup_ledger(ledger: Ledger, out: str | Path) -> Path:
    """A consistent copy of the live ledger (SQLite's online backup API, WAL content
    included) at ``out``, with its key at ``<out>.key``, both 0600; refuses existing
    files. Copying the main file alone while the ledger is in use can miss releases that
    are still in its -wal file."""
    if not isinstance(out, str | Path):
        raise LedgerError(f"a backup is a file path, got {type(out).__name__}")
    o = Path(out)
    for target in (o, key_path(o)):
        if target.exists() or target.is_symlink():
            raise LedgerError(f"{str(target)!r} already exists; back up to a new file")
    if not o.parent.is_dir():
        raise LedgerError(f"the directory of {str(o)!r} does not exist")
    try:
        fd = os.open(o, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        with _private_umask():
            dst = sqlite3.connect(str(o))
        try:
            ledger._con.backup(dst)
        finally:
            dst.close()
        kfd = os.open(key_path(o), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(kfd, "wb") as fh, open(key_path(ledger.path), "rb") as src:
            shutil.copyfileobj(src, fh)
            fh.flush()
            os.fsync(fh.fileno())
    except (OSError, sqlite3.Error) as exc:
        for t in (o, key_path(o), Path(str(o) + "-wal"), Path(str(o) + "-shm")):
            t.unlink(missing_ok=True)
        raise _sql_error(o, exc, "back up the ledger to") from None
    return o


def entry_for(
    ledger: Ledger,
    plan: Any,
    values: Sequence[float] | np.ndarray,
    target: Any,
    *,
    unbounded: bool = False,
) -> LedgerEntry:
    """The ledger entry of releasing ``values`` of ``target`` (a DataFrame) with ``plan``:
    the dataset's keyed identity over the columns the release reads (the statistics' and
    the property's), the canonical property key, a keyed sketch of the rows."""
    import pandas as pd

    from distprivacy.fingerprint import canonical_property, dataset_identity, dataset_sketch
    from distprivacy.spec import Predicate

    if not isinstance(target, pd.DataFrame):
        raise LedgerError(
            "a ledger keys each release on the dataset it is about: give the target "
            f"records (a table), got {type(target).__name__}"
        )
    if plan.protected_property is None:
        raise LedgerError(
            "this plan names no protected property (a user's model): the ledger cannot "
            "tell which property of which dataset its releases reveal"
        )
    pred = Predicate.parse(plan.protected_property)
    columns = [*plan.columns, pred.column]
    missing = [c for c in dict.fromkeys(columns) if c not in target.columns]
    if missing:
        raise LedgerError(
            f"the target lacks column {missing[0]!r}: with a ledger the target must hold "
            "the protected property's column too (it identifies the dataset)"
        )
    k = subkey(ledger.key, "identity")
    prop = canonical_property(pred, target[pred.column], key=k)
    return LedgerEntry.from_plan(
        plan,
        values,
        fingerprint=dataset_identity(target, columns, key=k),
        property=prop.key,
        property_text=prop.text,
        complemented=prop.complemented,
        sketch=tuple(dataset_sketch(target, columns, key=k)),
        unbounded=unbounded,
    )


def near_duplicates(entry: LedgerEntry, con: sqlite3.Connection) -> tuple[str, ...]:
    from distprivacy.fingerprint import sketch_similarity

    if not entry.sketch:
        return ()
    rows = con.execute(
        "SELECT id, fingerprint, sketch FROM releases WHERE property = ? AND fingerprint != ?",
        (entry.property, entry.fingerprint),
    ).fetchall()
    best: tuple[float, int] | None = None
    for rid, _, sk in rows:
        try:
            sim = sketch_similarity(entry.sketch, json.loads(sk))
        except (ValueError, TypeError):
            continue
        if best is None or sim > best[0]:
            best = (sim, int(rid))
    if best is None or best[0] < NEAR_DUPLICATE:
        return ()
    return (
        f"this target shares about {best[0]:.0%} of its records with the dataset of release "
        f"{best[1]} (same property): the ledger counts it as another dataset, but releasing "
        "near-copies of one dataset reveals it as repeated releases would; release the "
        "same records again to have them composed exactly",
    )


def show_ledger(ledger: Ledger, compose: Composer | None = None) -> dict[str, Any]:
    """Plain data: ``budget``, ``releases`` (a list) and ``cumulative`` (a list, one per
    dataset and property: ``mu``, ``epsilon`` at the budget's δ, ``delta``,
    ``max_attack_accuracy``, the theorem and the number of releases). The cumulative
    guarantee is recomputed with ``compose`` (default :func:`plan_composer` at the budget's
    δ: the exact profile, so ε(δ) and δ(ε) are the true figures), or, when that cannot be
    done without the data, the one stored at the last release (``recomputed`` false)."""
    entries = ledger.releases()
    groups: dict[tuple[str, str], list[LedgerEntry]] = {}
    for e in entries:
        groups.setdefault((e.fingerprint, e.property), []).append(e)
    d = ledger.budget.report_delta
    if compose is None:
        compose = plan_composer(delta=d)
    cumulative = []
    for key, group in groups.items():
        last = group[-1]
        recomputed = True
        if any(e.unbounded for e in group):
            g = _unbounded_guarantee()
        else:
            try:
                g = compose(group)
            except Exception:
                g, recomputed = last.cumulative, False
        assert g is not None
        eps = g.epsilon_at(d)
        cumulative.append(
            {
                "fingerprint": key[0],
                "property": last.property_text or key[1],
                "releases": len(group),
                "mu": g.mu,
                "epsilon": eps,
                "delta": g.delta_at(eps) if math.isfinite(eps) else 1.0,
                "at_delta": d,
                "delta_at_budget_epsilon": (
                    g.delta_at(ledger.budget.epsilon) if ledger.budget.epsilon else None
                ),
                "max_attack_accuracy": g.max_attack_accuracy,
                "within_budget": ledger.budget.exceeded_by(g) is None,
                "theorem": g.theorem,
                "recomputed": recomputed,
                "exhausted_by_exact_release": any(e.unbounded for e in group),
            }
        )
    return jsonable(
        {
            "ledger": str(ledger.path),
            "budget": ledger.budget.to_dict(),
            "releases": [e.to_dict() for e in entries],
            "cumulative": cumulative,
        }
    )
