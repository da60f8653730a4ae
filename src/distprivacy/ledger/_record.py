"""Recording a release: record, then reveal (see :mod:`distprivacy.ledger`).

:func:`record` is the one way in (:meth:`Ledger.record`). On a snapshot (a read transaction,
no lock) it verifies the chain and the anchor, reads every earlier release under the same
secret and computes the guarantee of all of them together with the new one (a ``compose``
callable, e.g. :func:`~distprivacy.ledger.plan_composer`); it refuses —
:class:`~distprivacy.ledger.BudgetExceededError`, the file byte-for-byte unchanged — or takes
the write lock (``BEGIN IMMEDIATE``: processes serialise on it) and, if nothing was committed
since the snapshot, inserts the row, moves the head and commits. Others having overtaken it
:data:`OPTIMISTIC_ATTEMPTS` times, it composes under the lock: contention costs latency, never
a refusal. Then, before it returns, the release is made durable: a WAL checkpoint copies it
into the main database file and fsyncs it (so deleting ``-wal``/``-shm`` cannot remove it),
and the anchor moves to it. The caller prints the release only after :func:`record`
returned.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from distprivacy.guarantee import Guarantee
from distprivacy.ledger._anchor import ANCHORED, Anchor, read_anchor, write_anchor
from distprivacy.ledger._args import compose_arg, entry_arg
from distprivacy.ledger._budget import EXACT_REFUSED, budget_refusal
from distprivacy.ledger._chain import VerifyReport, head_mac, row_content, sql_error
from distprivacy.ledger._entry import (
    BudgetExceededError,
    Composer,
    LedgerEntry,
    LedgerError,
    dumps,
)
from distprivacy.ledger._keys import encrypt, mac
from distprivacy.ledger._read import select
from distprivacy.ledger._registry import read_events
from distprivacy.ledger._store import anchored, checkpoint, data_version, immediate
from distprivacy.ledger._verify import chain_check, refuse_unverified
from distprivacy.targets import Target

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger

#: How often a release is composed on a snapshot, outside the write lock, before it is composed
#: under the lock (guaranteed progress: contention costs latency, never a refusal).
OPTIMISTIC_ATTEMPTS = 3

_JITTER = random.SystemRandom()  # for back-off delays only


@dataclass(frozen=True)
class View:
    """What a release is composed on (:func:`view`): one verified state of the ledger.

    ``state``: (rows, last id, ``PRAGMA data_version``); ``report``: the chain check;
    ``entry``: the new release as it will be recorded; ``prior``: the earlier releases under
    its secret; ``budget``: the secret's budget as the snapshot's events set it; ``events``:
    the number of the steward's events in that snapshot."""

    state: tuple[int, int, int]
    report: VerifyReport
    entry: LedgerEntry
    prior: list[LedgerEntry]
    budget: Target
    events: int


def record(ledger: Ledger, entry: LedgerEntry, compose: Composer) -> Guarantee:
    """:meth:`Ledger.record` (module docstring)."""
    ledger._refuse_read_only()
    entry_arg(entry)
    compose = compose_arg(compose)
    if entry.unbounded:
        raise BudgetExceededError(EXACT_REFUSED)
    fresh = replace(entry, id=None, time=None, cumulative=None)
    for attempt in range(OPTIMISTIC_ATTEMPTS):
        v = snapshot(ledger, fresh)
        g = cumulative(v, compose)
        written = write_if_unchanged(ledger, v, row(ledger, v, g))
        if written is not None:
            break
        time.sleep(_JITTER.uniform(0.0, 0.01 * 2**attempt))  # others overtook: back off
    else:
        v, g, written = record_locked(ledger, fresh, compose)
    rid, releases, chain = written
    ledger.last_id, ledger.last_fingerprint = rid, v.entry.fingerprint
    make_durable(ledger, rid, releases, chain)
    return g


def state(con: sqlite3.Connection) -> tuple[int, int]:
    """(rows, last id)."""
    r = con.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM releases").fetchone()
    return int(r[0]), int(r[1])


def current(con: sqlite3.Connection) -> tuple[int, int, int]:
    """(rows, last id, ``PRAGMA data_version``): changes with every other commit."""
    return (*state(con), data_version(con))


def snapshot(ledger: Ledger, entry: LedgerEntry) -> View:
    """:func:`view` in one read transaction (a consistent snapshot under WAL; no write lock),
    the anchor read before it."""
    anchor = read_anchor(ledger.path)
    try:
        ledger._con.execute("BEGIN")
        try:
            return view(ledger, ledger._con, entry, anchor)
        finally:
            ledger._con.execute("COMMIT")
    except sqlite3.Error as e:
        raise sql_error(ledger.path, e, "read the ledger") from None


def view(
    ledger: Ledger, con: sqlite3.Connection, entry: LedgerEntry, anchor: Anchor | None
) -> View:
    """Inside a transaction of ``con``: the ledger's state, verified (chain, head and
    ``anchor``), the steward's events replayed, and every earlier release under ``entry``'s
    secret, whatever its dataset."""
    now = current(con)
    report = chain_check(ledger, con, anchor)[0]
    refuse_unverified(ledger, report)
    reg = ledger._refresh(con)
    budget = reg.secret(entry.property.removeprefix("secret:")).budget
    prior = select(ledger, None, entry.property, con)
    return View(now, report, entry, prior, budget, reg.head)


def cumulative(v: View, compose: Composer) -> Guarantee:
    """The guarantee of ``v``'s earlier releases with the new one, or a refusal
    (:class:`BudgetExceededError`). Rows are only ever appended, so a refusal on a snapshot
    stays right."""
    exhausted = next((e for e in v.prior if e.unbounded), None)
    if exhausted is not None:  # (a ledger of secrets never records one: fail closed)
        raise BudgetExceededError(
            f"release refused: release {exhausted.id} published its exact statistics, which "
            "exhausted the secret's budget; nothing was recorded"
        )
    g = compose([*v.prior, v.entry])
    if not isinstance(g, Guarantee):
        raise LedgerError(f"compose returned a {type(g).__name__}, not a Guarantee")
    why = budget_refusal(v.budget, g)
    if why is not None:
        k = len(v.prior)
        raise BudgetExceededError(
            f"release refused: {why} ({k} earlier release{'' if k == 1 else 's'} of this "
            "secret); nothing was recorded"
        )
    return g


def write_if_unchanged(
    ledger: Ledger, v: View, new: tuple[tuple[Any, ...], str]
) -> tuple[int, int, str] | None:
    """Under the write lock, if nothing was committed since the snapshot ``v`` (its state and
    ``PRAGMA data_version`` unchanged: the verified snapshot is the ledger): :func:`write` the
    row ``new`` made on it. None when other releases came in (seen first without the lock, so
    as not to wait for it in vain): compose again."""
    if current(ledger._con) != v.state:
        return None
    with immediate(ledger) as con:
        if current(con) != v.state:
            return None
        return write(ledger, con, v, new)


def record_locked(
    ledger: Ledger, fresh: LedgerEntry, compose: Composer
) -> tuple[View, Guarantee, tuple[int, int, str]]:
    """Verify, compose and write under the write lock (after others overtook the
    snapshots)."""
    anchor = read_anchor(ledger.path)
    with immediate(ledger) as con:
        v = view(ledger, con, fresh, anchor)
        g = cumulative(v, compose)
        return v, g, write(ledger, con, v, row(ledger, v, g))


def row(ledger: Ledger, v: View, g: Guarantee) -> tuple[tuple[Any, ...], str]:
    """The new release's row on the state ``v`` — its fields (the plan encrypted; id = the
    last id + 1) and chain value —, made before the write lock is taken (:func:`write` writes
    it only on that same state)."""
    e, nxt = v.entry, v.state[1] + 1
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    plan = None if e.plan is None else encrypt(ledger.key, dumps(e.plan).encode("utf-8"))
    values = (
        int(nxt),
        now,
        e.fingerprint,
        e.property,
        e.property_text or e.property,
        int(e.complemented),
        e.plan_digest,
        e.mechanism,
        dumps(list(e.statistics)),
        dumps(e.guarantee.to_dict()),
        e.noise_family,
        None if e.noise_covariance is None else dumps(e.noise_covariance),
        dumps(list(e.values)),
        plan,
        None if e.statistic_indices is None else dumps(list(e.statistic_indices)),
        dumps(g.to_dict()),
        "[]",  # the sketch of a schema-2 row (ledgers of secrets identify datasets by name)
        int(e.unbounded),
        int(v.events),
    )
    return values, mac(ledger.key, "chain", v.report.head.encode() + row_content(values))


def write(
    ledger: Ledger, con: sqlite3.Connection, v: View, new: tuple[tuple[Any, ...], str]
) -> tuple[int, int, str]:
    """Under the write lock, on the verified state ``v``: anchor a ledger that records no
    anchor (its committed state first, then the record), insert the row ``new`` and move the
    head. Returns (id, rows now, the new row's chain value)."""
    values, chain = new
    if not anchored(con):
        write_anchor(ledger.key, ledger.path, v.report.releases, v.report.head)
        con.execute("INSERT INTO ledger_meta (key, value) VALUES (?, '1')", (ANCHORED,))
    try:
        con.execute(
            f"INSERT INTO releases ({ledger._columns}, chain) VALUES "
            f"({', '.join('?' * (len(ledger._fields) + 1))})",
            (*values, chain),
        )
        move_head(ledger, con, v.report.releases + 1, chain)
    except sqlite3.Error as exc:
        raise sql_error(ledger.path, exc, "write to the ledger") from None
    return int(values[0]), v.report.releases + 1, chain


def move_head(
    ledger: Ledger,
    con: sqlite3.Connection,
    releases: int,
    last: str,
    identity: Sequence[str] | None = None,
) -> None:
    """Set the head's MAC to the ledger's state in ``con``: releases, last chain value, the
    steward's events, anchored (``identity``: a schema-2 ledger's identity columns, which no
    ledger of secrets has)."""
    events = ledger._events_head(read_events(con))
    head = head_mac(ledger.key, releases, last, identity, anchored=True, events=events)
    con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", (head,))


def make_durable(ledger: Ledger, rid: int, releases: int, chain: str) -> None:
    """After the commit of release ``rid``: copy it into the main database file
    (:func:`~distprivacy.ledger._store.checkpoint`) and anchor the ledger at it (even when the
    copy failed: the anchor then counts a release only the -wal file holds). Refuses (one line)
    when either cannot be done: the release is recorded and must not be revealed."""
    failed: BaseException | None = None
    for step in (
        lambda: checkpoint(ledger),
        lambda: write_anchor(ledger.key, ledger.path, releases, chain),
    ):
        try:
            step()
        except (LedgerError, sqlite3.Error, OSError) as exc:
            failed = failed or exc
    if failed is not None:
        raise LedgerError(
            f"release {rid} was recorded in {str(ledger.path)!r} (its budget is spent) but "
            f"must not be revealed: {failed}"
        )
