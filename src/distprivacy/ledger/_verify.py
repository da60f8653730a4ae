"""Verifying a ledger: its keyed chain, head and anchor (every release checks them first), and
then — ``ledger verify`` — every release's guarantee from its own plan, every running total
from the releases before it, and that each release was one the steward's events allowed when
it was recorded (see :mod:`distprivacy.ledger`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from distprivacy.guarantee import Guarantee
from distprivacy.ledger._anchor import Anchor, check_anchor, read_anchor
from distprivacy.ledger._budget import composer_delta
from distprivacy.ledger._chain import (
    FIELDS,
    VerifyReport,
    genesis2,
    genesis3,
    head_mac,
    row_content,
    same_guarantee,
    same_mac,
    sql_error,
)
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import Composer, LedgerEntry, LedgerError
from distprivacy.ledger._keys import mac
from distprivacy.ledger._population import population_refit
from distprivacy.ledger._registry import check_events, read_events
from distprivacy.ledger._schema2 import read_identity
from distprivacy.ledger._store import anchored, created

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger


def chain_check(
    ledger: Ledger, con: sqlite3.Connection, anchor: Anchor | None
) -> tuple[VerifyReport, list]:
    """The keyed chain and head of every row (fast: one HMAC per row), then the anchor —
    read *before* the transaction ``con`` is in, so that it is never newer than the rows."""
    rows = ledger._rows(con)
    events_text, why_events = None, None
    if ledger.read_only:
        genesis = prev = genesis2(ledger.key, ledger.budget, created(con))
    else:
        genesis = prev = genesis3(ledger.key, created(con), ledger.ledger_id, ledger.steward.hex)
        events = read_events(con)
        events_text = ledger._events_head(events)
        why_events = check_events(events, ledger.ledger_id, ledger.steward)
        if why_events is None:
            late = next((r for r in rows if not 0 < int(r[len(FIELDS)]) <= len(events)), None)
            if late is not None:
                why_events = (
                    f"release {late[0]} was recorded under steward event "
                    f"{late[len(FIELDS)]}, which the ledger no longer holds: the steward's "
                    "events were removed"
                )
    for r in rows:
        want = mac(ledger.key, "chain", prev.encode() + row_content(r[: len(ledger._fields)]))
        if not isinstance(r[-1], str) or not same_mac(r[-1], want):
            why = (
                "its chain value does not match: the row was edited, a row before it was "
                "deleted or reordered, or the budget was changed"
            )
            return VerifyReport(False, len(rows), int(r[0]), why, prev), rows
        prev = want
    head = con.execute("SELECT value FROM ledger_meta WHERE key = 'head'").fetchone()
    try:
        identity = read_identity(con, ledger.path)
    except LedgerError:
        identity = ("(malformed)",)
    has_anchor = anchored(con)
    if why_events is not None:
        return VerifyReport(False, len(rows), None, why_events, prev), rows
    if head is None or not same_mac(
        str(head[0]), head_mac(ledger.key, len(rows), prev, identity, has_anchor, events_text)
    ):
        why = (
            "the ledger's head does not match its rows: releases were deleted from the end, "
            "or the budget, the identity columns or the anchor's record were changed"
        )
        return VerifyReport(False, len(rows), None, why, prev), rows
    chains = [str(r[-1]) for r in rows]
    why = check_anchor(ledger.key, ledger.path, anchor, has_anchor, chains, genesis)
    if why is not None:
        n = anchor.releases if anchor is not None else 0
        fork = 0 < n <= len(rows) and "another chain value" in why
        bad = int(rows[n - 1][0]) if fork else None
        return VerifyReport(False, len(rows), bad, why, prev), rows
    return VerifyReport(True, len(rows), None, "", prev), rows


def verified(ledger: Ledger) -> tuple[VerifyReport, list]:
    """:func:`chain_check` on one snapshot of the ledger (its anchor read first)."""
    anchor = read_anchor(ledger.path)
    try:
        ledger._con.execute("BEGIN")
        try:
            return chain_check(ledger, ledger._con, anchor)
        finally:
            ledger._con.execute("COMMIT")
    except sqlite3.Error as e:
        raise sql_error(ledger.path, e, "read the ledger") from None


def refuse_unverified(ledger: Ledger, report: VerifyReport) -> None:
    """One line, nothing recorded, when the chain, head or anchor fail."""
    if not report.ok:
        where = f"release {report.first_bad}" if report.first_bad else "its head"
        raise LedgerError(
            f"the ledger {str(ledger.path)!r} fails verification at {where}: "
            f"{report.reason}; nothing was recorded (see `distprivacy ledger verify`)"
        )


def verify_ledger(ledger: Ledger, compose: Composer | None = None) -> VerifyReport:
    """Recompute the chain and the head, then every row's guarantee from its own plan and
    every running total from the rows before it (``compose``, default
    :func:`plan_composer`). Returns a :class:`VerifyReport` naming the first bad row."""
    report, rows = verified(ledger)
    if not report.ok:
        return report
    given = compose
    if compose is None and ledger.read_only:
        compose = plan_composer(at_delta=composer_delta(ledger.budget))
    seen: dict[tuple[str, str], list[LedgerEntry]] = {}
    for r in rows:
        rid = int(r[0])
        try:
            e = ledger._entry(r)
        except LedgerError as exc:
            return replace(report, ok=False, first_bad=rid, reason=str(exc))
        if e.plan is not None:
            from distprivacy.mechanisms.plans import Plan, PlanError  # (only with releases)

            try:
                plan = Plan.from_dict(e.plan, f"the plan of release {rid}")
            except PlanError as exc:
                return replace(report, ok=False, first_bad=rid, reason=str(exc))
            if plan.guarantee != e.guarantee:
                why = "its guarantee is not the one its own plan gives"
                return replace(report, ok=False, first_bad=rid, reason=why)
        if not ledger.read_only:
            events = int(r[len(ledger._fields) - 1])
            why = _registered(ledger, e, events)
            if why is not None:
                return replace(report, ok=False, first_bad=rid, reason=why)
            # The composer of the release: its secret's budget as the events then set it.
            compose = given or secret_composer(ledger, ledger.registry.events[:events])
        # Schema 3: every release under a secret composes (whatever its dataset).
        group_key = (e.property, "") if not ledger.read_only else (e.fingerprint, e.property)
        group = seen.setdefault(group_key, [])
        group.append(e)
        if e.unbounded or any(x.unbounded for x in group):
            continue
        try:
            g = compose(group)
        except Exception:
            continue
        c = e.cumulative
        if c is None or not same_guarantee(g, c):
            why = (
                f"its running total (μ = {getattr(c, 'mu', None)}) is not the composition "
                f"of the releases so far (μ = {g.mu:.6g})"
            )
            return replace(report, ok=False, first_bad=rid, reason=why)
    return report


def _registered(ledger: Ledger, e: LedgerEntry, events: int) -> str | None:
    """Why a schema-3 release is not one the steward's events allowed when it was recorded
    (its secret, dataset and approved plan), or None."""
    from distprivacy.ledger._registry import Registry

    reg = Registry.from_events(ledger.registry.events[:events])
    secret = e.property.removeprefix("secret:")
    if secret not in reg.secrets:
        return f"it names secret {secret!r}, which the steward had not declared"
    try:
        d = reg.version(e.fingerprint)
    except LedgerError:
        return f"it names dataset {e.fingerprint!r}, which the steward had not registered"
    ok = any(p.secret == secret and p.digest == e.plan_digest for p in reg.plans.values())
    if d.secret != secret or not ok:
        return "its dataset or plan was not approved for its secret when it was recorded"
    return None


def secret_composer(ledger: Ledger, events: Sequence[Any] | None = None) -> Composer:
    """The composer a schema-3 ledger's releases were recorded with: per secret, at its
    budget's δ (as ``events`` set it; default: all of them), with the datasets' measured
    shared records and a refit on the secret's population
    (:func:`distprivacy.ledger._release.release_registered`)."""
    from distprivacy.ledger._registry import Registry

    reg = ledger.registry if events is None else Registry.from_events(events)

    def compose(entries: list[LedgerEntry]) -> Guarantee:
        from distprivacy.mechanisms.plans import Plan

        last = entries[-1]
        secret = reg.secret(last.property.removeprefix("secret:"))
        plan = Plan.from_dict(last.plan or {}, "a release's plan")
        n = int(plan.n or 1)

        def shared(a: str, b: str) -> float:
            return min(1.0, reg.shared(a, b) / n)

        inner = plan_composer(
            at_delta=composer_delta(secret.budget),
            fit=population_refit(plan, secret),
            shared=shared,
        )
        return inner(entries)

    return compose
