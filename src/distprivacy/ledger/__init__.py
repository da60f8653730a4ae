"""A privacy ledger: every release of a dataset, recorded before it is revealed — and a record
that cannot be edited, shortened or re-sealed without the ledger's key.

The ledger is one SQLite file (the standard library's :mod:`sqlite3`, WAL mode, mode 0600) and
its key, ``L.db.key`` (32 random bytes, 0600; :mod:`distprivacy.ledger._keys`). It holds a
budget — μ, or (ε, δ) — and one row per release: when; the dataset's keyed identity (an HMAC of
its values in the ledger's identity columns, whatever the release reads, canonical: row order
and number spelling do not matter; :mod:`distprivacy.ledger._identity`); the protected
property's canonical key (a predicate and its complement, or two spellings of one comparison,
are one property: :func:`distprivacy.fingerprint.canonical_property`); a keyed sketch of the
rows (to notice near-duplicates); the plan, **encrypted** under the key (its fitted moments are
exact population statistics); the mechanism, the statistics' names, the guarantee, the noise,
the released values and the cumulative guarantee after it; and a keyed **hash chain**: each
row's HMAC covers the previous row's and the row's whole content, the first one covers the
budget, and the ledger's head (count, last chain value, identity columns, and that it has an
anchor) is MACed too. Beside the key, ``L.db.anchor`` (0600; :mod:`distprivacy.ledger._anchor`)
holds the number of rows and the last chain value again, MACed, moved forward after every
release. :meth:`Ledger.verify` recomputes the chain, the head, the anchor, every row's guarantee
from its plan and every running total: deleting, reordering or editing a row, raising the
budget or editing a total is caught (``distprivacy ledger verify`` exits 1 naming the first bad
row), and so is a ledger older than its anchor — an old copy restored, its last rows deleted
with an old head written back, or its ``-wal`` deleted — or one whose anchor was deleted.

:meth:`Ledger.record` is the one way in. On a snapshot (a read transaction, no lock) it verifies
the chain and the anchor, reads every earlier release of the same dataset and property and
computes the guarantee of all of them together with the new one (a ``compose`` callable, e.g.
:func:`plan_composer`); it refuses — :class:`BudgetExceededError`, the file byte-for-byte
unchanged — or takes the write lock (``BEGIN IMMEDIATE``: processes serialise on it) and, if
nothing was committed since the snapshot, inserts the row, moves the head and commits. Others
having overtaken it :data:`OPTIMISTIC_ATTEMPTS` times, it composes under the lock: contention
costs latency, never a refusal. Then, before it returns, the release is made durable: a WAL
checkpoint copies it into the main database file and fsyncs it (so deleting ``-wal``/``-shm``
cannot remove it), and the anchor moves to it. The caller prints the release only after
:meth:`record` returned: record, then reveal.

What it does not resist (docs/ledger.md): someone holding the key file can rewrite the whole
ledger consistently, anchor included; restoring older copies of the ledger *and* its anchor
together (with the key) rolls the budget back; a dataset with records changed is another
dataset (the sketch warns when it overlaps an earlier one by half or more).
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.guarantee import Guarantee
from distprivacy.ledger import _args
from distprivacy.ledger._anchor import (
    ANCHORED,
    Anchor,
    anchor_path,
    check_anchor,
    read_anchor,
    write_anchor,
)
from distprivacy.ledger._budget import (
    budget_from_dict,
    budget_refusal,
    budget_text,
    budget_to_dict,
)
from distprivacy.ledger._chain import (
    BUSY_TIMEOUT,
    FIELDS,
    FIELDS3,
    LEDGER_FORMAT,
    LEGACY_SCHEMA,
    SCHEMA_VERSION,
    VerifyReport,
    genesis2,
    genesis3,
    head_mac,
    private_umask,
    row_content,
    same_mac,
    sql_error,
    unbounded_guarantee,
)
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import (
    BudgetExceededError,
    Composer,
    LedgerEntry,
    LedgerError,
    LedgerTypeError,
    dumps,
    sketch_field,
)
from distprivacy.ledger._identity import (
    fix_identity,
    link_warning,
    linked_dataset,
    read_identity,
)
from distprivacy.ledger._keys import (
    create_key,
    encrypt,
    key_path,
    mac,
    read_key,
)
from distprivacy.ledger._maintenance import (
    NEAR_DUPLICATE,
    near_duplicates,
    refuse_directory_name,
)
from distprivacy.ledger._registry import (
    REGISTRY_SCHEMA,
    ApprovedPlan,
    Event,
    RegisteredDataset,
    Registry,
    Secret,
    append_event,
    check_events,
    read_events,
)
from distprivacy.ledger._release import EXACT_REFUSED
from distprivacy.ledger._steward import StewardKey, StewardPublicKey
from distprivacy.targets import Target

__all__ = [
    "LEDGER_FORMAT",
    "NEAR_DUPLICATE",
    "SCHEMA_VERSION",
    "ApprovedPlan",
    "BudgetExceededError",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "LedgerTypeError",
    "RegisteredDataset",
    "Secret",
    "StewardKey",
    "StewardPublicKey",
    "VerifyReport",
    "budget_from_dict",
    "budget_to_dict",
    "data_fingerprint",
    "key_path",
    "plan_composer",
]


def __getattr__(name: str) -> Any:
    """``data_fingerprint`` (:mod:`distprivacy.fingerprint`), imported on first use: it loads
    pandas, which no ledger command needs."""
    if name == "data_fingerprint":
        from distprivacy.fingerprint import data_fingerprint

        return data_fingerprint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: How often a release is composed on a snapshot, outside the write lock, before it is composed
#: under the lock (guaranteed progress: contention costs latency, never a refusal).
OPTIMISTIC_ATTEMPTS = 3

_JITTER = random.SystemRandom()  # for back-off delays only

_SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = (
    "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    "CREATE TABLE budget (kind TEXT NOT NULL CHECK (kind IN ('mu', 'epsilon-delta')), "
    "mu REAL, epsilon REAL, delta REAL)",
    "CREATE TABLE releases ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " time TEXT NOT NULL,"
    " fingerprint TEXT NOT NULL,"
    " property TEXT NOT NULL,"
    " property_text TEXT NOT NULL,"
    " complemented INTEGER NOT NULL,"
    " plan_digest TEXT,"
    " mechanism TEXT NOT NULL,"
    " statistics TEXT NOT NULL,"
    " guarantee TEXT NOT NULL,"
    " noise_family TEXT,"
    " noise_covariance TEXT,"
    " release_values TEXT NOT NULL,"
    " plan TEXT,"
    " statistic_indices TEXT,"
    " cumulative TEXT NOT NULL,"
    " sketch TEXT NOT NULL,"
    " unbounded INTEGER NOT NULL,"
    " chain TEXT NOT NULL)",
    "CREATE INDEX releases_by_dataset ON releases (fingerprint, property, id)",
)

_COLUMNS = ", ".join(FIELDS)

#: A schema-3 ledger: no budget table (each secret's budget is a signed event), the releases
#: with the number of events in force, and the steward's tables (:mod:`._registry`).
_SCHEMA3 = (
    *(t for t in _SCHEMA if not t.startswith("CREATE TABLE budget")),
    *REGISTRY_SCHEMA,
)
_SCHEMA3 = tuple(
    t.replace(" chain TEXT NOT NULL)", " events INTEGER NOT NULL, chain TEXT NOT NULL)")
    for t in _SCHEMA3
)


@dataclass(frozen=True)
class _View:
    """What a release is composed on (:meth:`Ledger._view`): one verified state of the ledger.

    ``state``: (rows, last id, ``PRAGMA data_version``); ``report``: the chain check;
    ``entry``: the new release as it would be recorded (under the linked dataset when adopted);
    ``prior``/``extra``: the earlier releases it is composed with / also checked against;
    ``linked``, ``adopted``: the link (:func:`._identity.linked_dataset`); ``near``: the
    near-duplicate warnings; ``budget``: the budget the release is checked against (a
    schema-3 ledger: its secret's, as the snapshot's events set it); ``events``: the number of
    the steward's events in that snapshot."""

    state: tuple[int, int, int]
    report: VerifyReport
    entry: LedgerEntry
    prior: list[LedgerEntry]
    extra: list[LedgerEntry]
    linked: tuple[str, int, str] | None
    adopted: bool
    near: tuple[str, ...]
    budget: Target
    events: int = 0


def _private_companions(p: Path) -> None:
    """A ``-wal``/``-shm`` left without its owner's write bit by a past permission error goes
    back to 0600 — owner only, never wider — when the ledger itself is ours and writable by
    us: SQLite creates them with the database's mode, so a release attempted while the ledger
    was 0400 leaves them 0400, and every later release would fail "read-only"."""
    try:
        st = os.stat(p)
    except OSError:
        return
    if st.st_uid != os.geteuid() or not st.st_mode & stat.S_IWUSR or not os.access(p, os.W_OK):
        return
    for suffix in ("-wal", "-shm"):
        c = Path(str(p) + suffix)
        try:
            cst = os.lstat(c)
        except OSError:
            continue
        if stat.S_ISREG(cst.st_mode) and cst.st_uid == st.st_uid and not cst.st_mode & stat.S_IWUSR:
            with contextlib.suppress(OSError):
                os.chmod(c, 0o600)


class Ledger:
    """An open privacy ledger (module docstring). Use :meth:`init` to create one.

    Parameters
    ----------
    path : str or Path
        An existing ledger file (its key ``<path>.key`` beside it).

    Raises
    ------
    LedgerError
        (one line) The file or its key does not exist, is not an SQLite database, is not a
        distprivacy ledger, was written by another schema version, or cannot be opened.
    """

    def __init__(self, path: str | Path) -> None:
        p = _args.path_arg(path)
        self.path = p
        self.last_id: int | None = None
        #: The dataset the last release was recorded under (an earlier one's, when linked).
        self.last_fingerprint: str | None = None
        self.last_warnings: tuple[str, ...] = ()
        #: Decrypted rows by (id, chain value): a row is immutable once its chain verifies.
        self._entries: dict[tuple[Any, Any], LedgerEntry] = {}
        if not p.is_file():
            if p.exists():
                raise LedgerError(f"{str(p)!r} is not a regular file; a ledger is a file")
            raise LedgerError(
                f"no ledger at {str(p)!r}; create one with `distprivacy ledger init {str(p)!r}`"
            )
        try:
            with open(p, "rb") as fh:
                head = fh.read(len(_SQLITE_HEADER))
        except OSError as e:
            raise LedgerError(f"cannot read the ledger {str(p)!r}: {e.strerror}") from None
        if head != _SQLITE_HEADER:
            raise LedgerError(f"{str(p)!r} is not a distprivacy ledger (not an SQLite database)")
        _private_companions(p)
        try:
            with private_umask():
                self._con = self._connect(p, "rw")
        except sqlite3.Error as e:
            raise sql_error(p, e, "open the ledger") from None
        try:
            self.version = self._check()
            #: A ledger of schema 2 (before secrets): read and verified, never written.
            self.read_only = self.version == LEGACY_SCHEMA
            self._fields = FIELDS if self.read_only else FIELDS3
            self._columns = ", ".join(self._fields)
            self.key = read_key(p)
            # A commit appends to the WAL without an fsync (none under the write lock); the
            # checkpoint that follows it in record() fsyncs the WAL, then the main file, before
            # anything is revealed (SQLite keeps a WAL consistent across power loss either way).
            self._con.execute("PRAGMA synchronous=NORMAL")
            if self.read_only:
                self._budget = self._read_budget()
            else:
                self.ledger_id = self._meta("ledger_id")
                self.steward = StewardPublicKey(self._meta("steward_public_key"))
                self._refresh(self._con)
        except BaseException:
            self._con.close()
            raise

    @staticmethod
    def _connect(p: Path, mode: str) -> sqlite3.Connection:
        uri = p.resolve().as_uri() + f"?mode={mode}"
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
        con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
        return con

    def _check(self) -> int:
        name = repr(str(self.path))
        try:
            tables = {r[0] for r in self._con.execute("SELECT name FROM sqlite_master")}
            fmt = None
            if "ledger_meta" in tables:
                fmt = self._con.execute(
                    "SELECT value FROM ledger_meta WHERE key = 'format'"
                ).fetchone()
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.OperationalError):
                raise sql_error(self.path, e, "open the ledger") from None
            raise LedgerError(f"{name} is not a distprivacy ledger ({e})") from None
        if fmt is None or fmt[0] != LEDGER_FORMAT or "releases" not in tables:
            raise LedgerError(f"{name} is an SQLite database but not a distprivacy ledger")
        v = self._con.execute("SELECT version FROM schema_version").fetchall()
        versions = [r[0] for r in v]
        if versions not in ([SCHEMA_VERSION], [LEGACY_SCHEMA]):
            raise LedgerError(
                f"{name} has ledger schema version {v[0][0] if v else None!r}; this library "
                f"reads versions {LEGACY_SCHEMA} and {SCHEMA_VERSION}"
            )
        need = {"budget"} if versions == [LEGACY_SCHEMA] else {"events", "approved_plans"}
        if not need <= tables:
            raise LedgerError(f"{name} is an SQLite database but not a distprivacy ledger")
        mode = self._con.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LedgerError(f"{name} is not in WAL mode (journal mode {mode!r})")
        return int(versions[0])

    def _meta(self, key: str) -> str:
        row = self._con.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
        if row is None or not isinstance(row[0], str):
            raise LedgerError(f"{str(self.path)!r} has no {key} (a damaged ledger)")
        return row[0]

    @property
    def budget(self) -> Target:
        """The budget: a schema-2 ledger's one budget, or the only secret's (a ledger of
        several secrets has one per secret: :attr:`registry`)."""
        if self.read_only:
            return self._budget
        return self.registry.secret(None).budget

    def _refresh(self, con: sqlite3.Connection) -> Registry:
        """Read and replay the steward's events (signatures unchecked here: every write and
        :meth:`verify` check them with the chain)."""
        self.registry = Registry.from_events(read_events(con))
        return self.registry

    def _events_head(self, events: list[Event]) -> str:
        last = events[-1].digest(self.ledger_id) if events else "-"
        return f"{len(events)}:{last}"

    def _refuse_read_only(self) -> None:
        if self.read_only:
            raise LedgerError(
                f"{str(self.path)!r} is a ledger of schema 2 (one budget, datasets recognised by "
                "their values): it opens read-only — show, verify and back it up. To release, "
                "the steward starts a ledger of secrets (`distprivacy ledger init`, Ledger.init) "
                "and registers the datasets (`distprivacy ledger register`, Ledger.register)"
            )

    @property
    def identity_columns(self) -> tuple[str, ...] | None:
        """The columns that identify a dataset here (:mod:`._identity`), read from the file:
        None while the first release has not fixed them, or in a ledger from before them."""
        return read_identity(self._con, self.path)

    def _read_budget(self) -> Target:
        rows = self._con.execute("SELECT kind, mu, epsilon, delta FROM budget").fetchall()
        if len(rows) != 1:
            raise LedgerError(f"{str(self.path)!r} has {len(rows)} budgets; a ledger has one")
        kind, mu, eps, dlt = rows[0]
        ok = kind in ("mu", "epsilon-delta") and all(
            v is None or (isinstance(v, int | float) and not isinstance(v, bool))
            for v in (mu, eps, dlt)
        )
        if not ok or (kind == "mu" and mu is None) or (kind != "mu" and None in (eps, dlt)):
            raise LedgerError(f"{str(self.path)!r} has a malformed budget row ({kind!r})")
        return budget_from_dict({"kind": kind, "mu": mu, "epsilon": eps, "delta": dlt})

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        steward: StewardKey | str | Path | None = None,
        secret: str | None = None,
        protect: str | None = None,
        budget: Target | None = None,
        population: str | Path | None = None,
        **legacy: Any,
    ) -> Ledger:
        """Create a ledger (mode 0600), its key (``<path>.key``, 0600) and its anchor, with its
        first secret: ``protect`` (a predicate) of ``population`` (a file or directory, or
        None: the verified UCI Adult files) under ``budget`` — a typed target, ``GDP(μ)``,
        ``EpsDelta(ε, δ)`` or ``MaxAttackAccuracy(a)`` (:mod:`distprivacy.targets`). The
        steward's key (:class:`StewardKey`, or the path of its file) signs the secret; the
        ledger keeps only its public half. Refuses an existing file."""
        from distprivacy._version import __version__
        from distprivacy.ledger._decisions import secret_payload

        given = {"steward": steward, "secret": secret, "protect": protect, "budget": budget}
        missing = [k for k, v in given.items() if v is None]
        if legacy or missing:
            raise LedgerTypeError(
                (f"Ledger.init takes no {', '.join(sorted(legacy))}: " if legacy else
                 f"Ledger.init needs {', '.join(missing)}: ")
                + "a ledger of secrets is made with steward=KEY, secret=NAME, "
                "protect=PREDICATE and budget=GDP(mu) (or EpsDelta, MaxAttackAccuracy), "
                "population=PATH optional"
            )  # fmt: skip

        checked = _args.path_arg(path)  # a wrong type first, then a path naming a directory
        refuse_directory_name(path, "the ledger", "ledger.db")
        path = checked
        key_s = StewardKey.load(steward)
        first = secret_payload(secret, protect, budget, population)
        p = Path(path)
        if not p.parent.is_dir():
            raise LedgerError(f"the directory of {str(p)!r} does not exist")
        if key_path(p).exists():
            raise LedgerError(f"{str(key_path(p))!r} already exists; a new ledger needs a new key")
        if anchor_path(p).exists() or anchor_path(p).is_symlink():
            raise LedgerError(
                f"{str(anchor_path(p))!r} already exists (the anchor of an earlier ledger?); "
                "a new ledger needs a new anchor: remove it, or choose another path"
            )
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise LedgerError(f"{str(p)!r} already exists; a new ledger needs a new file") from None
        except OSError as e:
            raise sql_error(p, e, "create the ledger") from None
        os.close(fd)
        try:
            key = create_key(p)
            created = datetime.now(UTC).isoformat(timespec="seconds")
            ledger_id = os.urandom(16).hex()
            public = key_s.public
            with private_umask():
                con = cls._connect(p, "rw")
            try:
                if con.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
                    raise LedgerError(f"cannot put {str(p)!r} in WAL mode")
                con.execute("BEGIN IMMEDIATE")
                for stmt in _SCHEMA3:
                    con.execute(stmt)
                genesis = genesis3(key, created, ledger_id, public.hex)
                event = append_event(con, key_s, ledger_id, public, "secret", secret, first)
                events = f"1:{event.digest(ledger_id)}"
                con.executemany(
                    "INSERT INTO ledger_meta (key, value) VALUES (?, ?)",
                    [
                        ("format", LEDGER_FORMAT),
                        ("library_version", __version__),
                        ("created", created),
                        ("ledger_id", ledger_id),
                        ("steward_public_key", public.hex),
                        ("head", head_mac(key, 0, genesis, None, anchored=True, events=events)),
                        (ANCHORED, "1"),
                    ],
                )
                con.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                write_anchor(key, p, 0, genesis)  # before the commit: never missing after it
                con.execute("COMMIT")
            finally:
                con.close()
        except BaseException as exc:
            for suffix in ("", "-wal", "-shm", ".key", ".anchor"):
                Path(str(p) + suffix).unlink(missing_ok=True)
            if isinstance(exc, sqlite3.Error | OSError):
                raise sql_error(p, exc, "create the ledger") from None
            raise
        return cls(p)

    # -- identity of a release ----------------------------------------------------------------

    # -- reading ------------------------------------------------------------------------------

    def _rows(self, con: sqlite3.Connection, where: str = "", args: Sequence[Any] = ()) -> list:
        try:
            return con.execute(
                f"SELECT {self._columns}, chain FROM releases {where} ORDER BY id", args
            ).fetchall()
        except sqlite3.Error as e:
            raise sql_error(self.path, e, "read the ledger") from None

    def _entry(self, row: Sequence[Any]) -> LedgerEntry:
        """A row as a :class:`LedgerEntry` (:func:`._maintenance.row_entry`), its plan
        decrypted once per row: kept by (id, chain value), which the row's content determines."""
        from distprivacy.ledger._maintenance import row_entry

        key = (row[0], row[len(self._fields)])
        hit = self._entries.get(key)
        if hit is None:
            hit = self._entries[key] = row_entry(self, row)
        return hit

    def _select(
        self, fingerprint: str | None, property: str | None, con: sqlite3.Connection
    ) -> list[LedgerEntry]:
        where, args = [], []
        if fingerprint is not None:
            where.append("fingerprint = ?")
            args.append(fingerprint)
        if property is not None:
            where.append("property = ?")
            args.append(property)
        clause = ("WHERE " + " AND ".join(where)) if where else ""
        return [self._entry(r) for r in self._rows(con, clause, args)]

    def releases(
        self, fingerprint: str | None = None, property: str | None = None
    ) -> list[LedgerEntry]:
        """The recorded releases (oldest first), optionally of one fingerprint / property."""
        _args.keys_arg(fingerprint, property, optional=True)
        return self._select(fingerprint, property, self._con)

    def cumulative(self, fingerprint: str, property: str, compose: Composer) -> Guarantee:
        """The guarantee of every recorded release of (``fingerprint``, ``property``) together
        (nothing is written)."""
        _args.keys_arg(fingerprint, property)
        compose = _args.compose_arg(compose)
        entries = self.releases(fingerprint, property)
        if not entries:
            raise LedgerError(f"no release of {fingerprint} about {property} is recorded")
        return compose(entries)

    def show(self, compose: Composer | None = None) -> dict[str, Any]:
        """Plain data: ``budget``, ``releases`` and ``cumulative`` per dataset and property,
        recomputed by the exact joint accounting (see
        :func:`distprivacy.ledger._maintenance.show_ledger`)."""
        from distprivacy.ledger._maintenance import show_ledger

        compose = _args.compose_arg(compose, optional=True)
        return show_ledger(self, compose)

    # -- verifying ----------------------------------------------------------------------------

    def _created(self, con: sqlite3.Connection) -> str:
        row = con.execute("SELECT value FROM ledger_meta WHERE key = 'created'").fetchone()
        return "" if row is None else str(row[0])

    def _anchored(self, con: sqlite3.Connection) -> bool:
        """Whether the ledger records that it has an anchor (:mod:`._anchor`)."""
        row = con.execute("SELECT 1 FROM ledger_meta WHERE key = ?", (ANCHORED,)).fetchone()
        return row is not None

    def _chain_check(
        self, con: sqlite3.Connection, anchor: Anchor | None
    ) -> tuple[VerifyReport, list]:
        """The keyed chain and head of every row (fast: one HMAC per row), then the anchor —
        read *before* the transaction ``con`` is in, so that it is never newer than the rows."""
        rows = self._rows(con)
        events_text, why_events = None, None
        if self.read_only:
            genesis = prev = genesis2(self.key, self.budget, self._created(con))
        else:
            genesis = prev = genesis3(
                self.key, self._created(con), self.ledger_id, self.steward.hex
            )
            events = read_events(con)
            events_text = self._events_head(events)
            why_events = check_events(events, self.ledger_id, self.steward)
            if why_events is None:
                late = next((r for r in rows if not 0 < int(r[len(FIELDS)]) <= len(events)), None)
                if late is not None:
                    why_events = (
                        f"release {late[0]} was recorded under steward event "
                        f"{late[len(FIELDS)]}, which the ledger no longer holds: the steward's "
                        "events were removed"
                    )
        for r in rows:
            want = mac(self.key, "chain", prev.encode() + row_content(r[: len(self._fields)]))
            if not isinstance(r[-1], str) or not same_mac(r[-1], want):
                why = (
                    "its chain value does not match: the row was edited, a row before it was "
                    "deleted or reordered, or the budget was changed"
                )
                return VerifyReport(False, len(rows), int(r[0]), why, prev), rows
            prev = want
        head = con.execute("SELECT value FROM ledger_meta WHERE key = 'head'").fetchone()
        try:
            identity = read_identity(con, self.path)
        except LedgerError:
            identity = ("(malformed)",)
        anchored = self._anchored(con)
        if why_events is not None:
            return VerifyReport(False, len(rows), None, why_events, prev), rows
        if head is None or not same_mac(
            str(head[0]), head_mac(self.key, len(rows), prev, identity, anchored, events_text)
        ):
            why = (
                "the ledger's head does not match its rows: releases were deleted from the end, "
                "or the budget, the identity columns or the anchor's record were changed"
            )
            return VerifyReport(False, len(rows), None, why, prev), rows
        chains = [str(r[-1]) for r in rows]
        why = check_anchor(self.key, self.path, anchor, anchored, chains, genesis)
        if why is not None:
            n = anchor.releases if anchor is not None else 0
            fork = 0 < n <= len(rows) and "another chain value" in why
            bad = int(rows[n - 1][0]) if fork else None
            return VerifyReport(False, len(rows), bad, why, prev), rows
        return VerifyReport(True, len(rows), None, "", prev), rows

    def _verified(self) -> tuple[VerifyReport, list]:
        """:meth:`_chain_check` on one snapshot of the ledger (its anchor read first)."""
        anchor = read_anchor(self.path)
        try:
            self._con.execute("BEGIN")
            try:
                return self._chain_check(self._con, anchor)
            finally:
                self._con.execute("COMMIT")
        except sqlite3.Error as e:
            raise sql_error(self.path, e, "read the ledger") from None

    # -- writing ------------------------------------------------------------------------------

    #: Called as ``on_wait(seconds_waited, seconds_allowed)`` while another process holds the
    #: write lock (the CLI shows a progress bar); None: wait silently.
    on_wait: Any = None

    def _begin_immediate(self) -> None:
        """``BEGIN IMMEDIATE``, polling every 50 ms while another process writes, and
        reporting the wait to :attr:`on_wait`. It gives up only when the ledger made no
        progress for :data:`BUSY_TIMEOUT` s (a stuck holder): while other releases are being
        recorded meanwhile, contention costs latency, never a refusal."""
        start = time.monotonic()
        self._con.execute("PRAGMA busy_timeout=50")
        try:
            seen = self._data_version()
            while True:
                try:
                    self._con.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as e:
                    text = str(e).lower()
                    if "locked" not in text and "busy" not in text:
                        raise
                    now = self._data_version()
                    if now != seen:  # another process committed: progress, not a stuck holder
                        seen, start = now, time.monotonic()
                    waited = time.monotonic() - start
                    if waited > BUSY_TIMEOUT:
                        raise
                    if self.on_wait is not None:
                        self.on_wait(waited, BUSY_TIMEOUT)
                    time.sleep(_JITTER.uniform(0.025, 0.05))
        finally:
            self._con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")

    def _data_version(self) -> int:
        """Changes whenever another connection commits (``PRAGMA data_version``)."""
        return int(self._con.execute("PRAGMA data_version").fetchone()[0])

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """The write lock: ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception)."""
        try:
            self._begin_immediate()
        except sqlite3.Error as e:
            raise sql_error(self.path, e, "write to the ledger") from None
        try:
            yield self._con
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                self._con.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise sql_error(self.path, exc, "write to the ledger") from None
            raise
        try:
            self._con.execute("COMMIT")
        except sqlite3.Error as e:
            with contextlib.suppress(sqlite3.Error):
                self._con.execute("ROLLBACK")
            raise sql_error(self.path, e, "write to the ledger") from None

    def record(self, entry: LedgerEntry, compose: Composer) -> Guarantee:
        """Record ``entry`` if the cumulative guarantee stays within the budget.

        On a snapshot (a read transaction, no lock): verify the chain and the anchor, read the
        earlier releases of the same dataset and property, ``compose(earlier + [entry])`` and
        refuse, or take the write lock and insert if nothing was recorded since the snapshot.
        After :data:`OPTIMISTIC_ATTEMPTS` snapshots that others overtook, compose under the
        write lock (guaranteed progress). Then, before returning, make the release durable:
        copy it into the main database file (a checkpoint, so deleting ``-wal``/``-shm``
        cannot remove it) and move the anchor (:mod:`._anchor`). Reveal the release only after
        this returns. An ``unbounded`` entry (exact: μ = ∞) is refused; one an older ledger
        holds exhausts its dataset and property (every later release of them refused).
        Near-duplicate warnings (a target whose rows overlap an earlier released dataset's by
        ≥ :data:`NEAR_DUPLICATE`) are left in :attr:`last_warnings`.

        Raises
        ------
        BudgetExceededError
            The budget would be exceeded (the ledger is unchanged).
        LedgerError
            The ledger fails verification, or cannot be written (one line naming the cause;
            nothing recorded), or — after the commit — the release could not be made durable
            (it is recorded, its budget spent, and must not be revealed).
        DistPrivacyError
            ``compose`` refused (e.g. releases that cannot be composed); the ledger unchanged.
        """
        self._refuse_read_only()
        _args.entry_arg(entry)
        compose = _args.compose_arg(compose)
        if entry.unbounded:
            raise BudgetExceededError(EXACT_REFUSED)
        fresh = replace(entry, id=None, time=None, cumulative=None)
        for attempt in range(OPTIMISTIC_ATTEMPTS):
            view = self._snapshot(fresh)
            g = self._cumulative(fresh, view, compose)
            written = self._write_if_unchanged(view, self._row(view, g))
            if written is not None:
                break
            time.sleep(_JITTER.uniform(0.0, 0.01 * 2**attempt))  # others overtook: back off
        else:
            view, g, written = self._record_locked(fresh, compose, view.near)
        rid, releases, chain = written
        self.last_id, self.last_fingerprint = rid, view.entry.fingerprint
        self.last_warnings = link_warning(view.linked, view.adopted) + view.near
        self._make_durable(rid, releases, chain)
        return g

    def _refuse_unverified(self, report: VerifyReport) -> None:
        if not report.ok:
            where = f"release {report.first_bad}" if report.first_bad else "its head"
            raise LedgerError(
                f"the ledger {str(self.path)!r} fails verification at {where}: "
                f"{report.reason}; nothing was recorded (see `distprivacy ledger verify`)"
            )

    def _state(self, con: sqlite3.Connection) -> tuple[int, int]:
        row = con.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM releases").fetchone()
        return int(row[0]), int(row[1])

    def _snapshot(self, entry: LedgerEntry) -> _View:
        """:meth:`_view` in one read transaction (a consistent snapshot under WAL; no write
        lock), the anchor read before it."""
        anchor = read_anchor(self.path)
        try:
            self._con.execute("BEGIN")
            try:
                return self._view(self._con, entry, anchor, None)
            finally:
                self._con.execute("COMMIT")
        except sqlite3.Error as e:
            raise sql_error(self.path, e, "read the ledger") from None

    def _view(
        self,
        con: sqlite3.Connection,
        entry: LedgerEntry,
        anchor: Anchor | None,
        near: tuple[str, ...] | None,
    ) -> _View:
        """Inside a transaction of ``con``: the ledger's state, verified (chain, head and
        ``anchor``); the earlier releases of ``entry``'s dataset, or, when it has none, of the
        dataset it is linked to (:func:`._identity.linked_dataset`), with which it is then
        recorded; that link; the linked dataset's releases when ``entry``'s own has some
        (checked, not recorded with); and the near-duplicate warnings (``near``, or scanned)."""
        state = self._current(con)
        report = self._chain_check(con, anchor)[0]
        self._refuse_unverified(report)
        if not self.read_only:  # a secret: every release under it, whatever its dataset
            reg = self._refresh(con)
            name = entry.property.removeprefix("secret:")
            budget = reg.secret(name).budget
            prior = self._select(None, entry.property, con)
            return _View(state, report, entry, prior, [], None, False, (), budget, reg.head)
        linked = linked_dataset(con, entry)
        prior = self._select(entry.fingerprint, entry.property, con)
        extra = [] if linked is None else self._select(linked[0], entry.property, con)
        if not prior:
            prior, extra = extra, []
        # Linked, with no release of its own dataset yet: recorded with the linked dataset.
        adopted = linked is not None and not extra
        entry_now = replace(entry, fingerprint=linked[0]) if linked and adopted else entry
        if near is None:
            near = near_duplicates(entry_now, con)
        return _View(state, report, entry_now, prior, extra, linked, adopted, near, self.budget)

    def _cumulative(self, fresh: LedgerEntry, view: _View, compose: Composer) -> Guarantee:
        """The guarantee of ``view``'s earlier releases with the new one, or a refusal
        (:class:`BudgetExceededError`). Rows are only ever appended, so a refusal on a
        snapshot stays right."""
        prior, extra, entry_now = view.prior, view.extra, view.entry
        exhausted = next((e for e in [*extra, *prior] if e.unbounded), None)
        if exhausted is not None:
            raise BudgetExceededError(
                f"release refused: release {exhausted.id} of this dataset published its "
                "exact statistics (`allow_exact=True`), which exhausted its budget; nothing "
                "was recorded"
            )
        if fresh.unbounded:
            return unbounded_guarantee()
        g = compose([*prior, entry_now])
        # With a linked dataset, the budget holds for both datasets' releases together.
        for g_ in (g, compose([*extra, *prior, entry_now])) if extra else (g,):
            if not isinstance(g_, Guarantee):
                raise LedgerError(f"compose returned a {type(g_).__name__}, not a Guarantee")
            why = budget_refusal(view.budget, g_)
            if why is not None:
                k = len(prior) + len(extra) * (g_ is not g)
                whose = "this dataset" if self.read_only else "this secret"
                raise BudgetExceededError(
                    f"release refused: {why} ({k} earlier release"
                    f"{'' if k == 1 else 's'} of {whose}); nothing was recorded"
                )
        return g

    def _write_if_unchanged(
        self, view: _View, row: tuple[tuple[Any, ...], str]
    ) -> tuple[int, int, str] | None:
        """Under the write lock, if nothing was committed since the snapshot ``view`` (its
        state and ``PRAGMA data_version`` unchanged: the verified snapshot is the ledger):
        :meth:`_write` the ``row`` made on it. None when other releases came in (seen first
        without the lock, so as not to wait for it in vain): compose again."""
        if self._current(self._con) != view.state:
            return None
        with self._immediate() as con:
            if self._current(con) != view.state:
                return None
            return self._write(con, view, row)

    def _current(self, con: sqlite3.Connection) -> tuple[int, int, int]:
        """(rows, last id, ``PRAGMA data_version``): changes with every other commit."""
        return (*self._state(con), self._data_version())

    def _record_locked(
        self, fresh: LedgerEntry, compose: Composer, near: tuple[str, ...]
    ) -> tuple[_View, Guarantee, tuple[int, int, str]]:
        """Verify, compose and write under the write lock (after others overtook the
        snapshots); ``near``: the near-duplicate warnings of the last snapshot."""
        anchor = read_anchor(self.path)
        with self._immediate() as con:
            view = self._view(con, fresh, anchor, near)
            g = self._cumulative(fresh, view, compose)
            return view, g, self._write(con, view, self._row(view, g))

    def _write(
        self, con: sqlite3.Connection, view: _View, row: tuple[tuple[Any, ...], str]
    ) -> tuple[int, int, str]:
        """Under the write lock, on the verified state ``view``: fix the identity columns,
        anchor a ledger from before anchors, insert ``row`` (:meth:`_row`) and move the head.
        Returns (id, rows now, the new row's chain value)."""
        report = view.report
        identity = (
            fix_identity(con, self.path, view.entry, report.releases) if self.read_only else None
        )
        if not self._anchored(con):
            # The committed state first (never missing once the flag is committed), then the flag.
            write_anchor(self.key, self.path, report.releases, report.head)
            con.execute("INSERT INTO ledger_meta (key, value) VALUES (?, '1')", (ANCHORED,))
        rid, chain = self._insert(con, *row, report, identity)
        return rid, report.releases + 1, chain

    def _make_durable(self, rid: int, releases: int, chain: str) -> None:
        """After the commit of release ``rid``: copy it into the main database file
        (:meth:`_checkpoint`) and anchor the ledger at it (:func:`._anchor.write_anchor`; even
        when the copy failed: the anchor then counts a release only the -wal file holds).
        Refuses (one line) when either cannot be done: the release is recorded and must not
        be revealed."""
        failed: BaseException | None = None
        for step in (self._checkpoint, lambda: write_anchor(self.key, self.path, releases, chain)):
            try:
                step()
            except (LedgerError, sqlite3.Error, OSError) as exc:
                failed = failed or exc
        if failed is not None:
            raise LedgerError(
                f"release {rid} was recorded in {str(self.path)!r} (its budget is spent) but "
                f"must not be revealed: {failed}"
            )

    def _checkpoint(self) -> None:
        """Copy the WAL into the main file and fsync it — ``PRAGMA wal_checkpoint(PASSIVE)``
        (it waits for no one), its result checked and retried, with back-off, while a reader's
        older snapshot or another checkpoint holds it back; at most :data:`BUSY_TIMEOUT` s.

        Done when every frame up to the WAL's end as first seen (which holds this release's
        commit) is copied, or when the WAL has restarted (SQLite restarts it only once every
        frame of it is in the main file)."""
        start, delay, target = time.monotonic(), 0.001, None
        while True:
            busy, log, done = self._con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if not busy and log >= 0:
                target = log if target is None else target
                if done >= target or log < target:
                    return
            if time.monotonic() - start > BUSY_TIMEOUT:
                raise LedgerError(
                    f"another process kept a read transaction open on the ledger for more "
                    f"than {BUSY_TIMEOUT:g} s, so the release could not be copied from its -wal "
                    "file into the ledger (close that reader)"
                )
            time.sleep(delay)
            delay = min(2 * delay, 0.05)

    def _row(self, view: _View, g: Guarantee) -> tuple[tuple[Any, ...], str]:
        """The new release's row on the state ``view`` — its fields (the plan encrypted, the
        sketch serialised; id = the last id + 1) and chain value —, made before the write lock
        is taken (:meth:`_write_if_unchanged` writes it only on that same state)."""
        e, nxt = view.entry, view.state[1] + 1
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        plan = None if e.plan is None else encrypt(self.key, dumps(e.plan).encode("utf-8"))
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
            sketch_field(e),
            int(e.unbounded),
        )
        if not self.read_only:
            values = (*values, int(view.events))
        return values, mac(self.key, "chain", view.report.head.encode() + row_content(values))

    def _insert(
        self,
        con: sqlite3.Connection,
        values: tuple[Any, ...],
        chain: str,
        report: VerifyReport,
        identity: Sequence[str] | None,
    ) -> tuple[int, str]:
        """Under the write lock: insert the row made by :meth:`_row` and move the head."""
        try:
            con.execute(
                f"INSERT INTO releases ({self._columns}, chain) VALUES "
                f"({', '.join('?' * (len(self._fields) + 1))})",
                (*values, chain),
            )
            self._move_head(con, report.releases + 1, chain, identity)
        except sqlite3.Error as exc:
            raise sql_error(self.path, exc, "write to the ledger") from None
        return int(values[0]), chain

    def _move_head(
        self, con: sqlite3.Connection, releases: int, last: str, identity: Sequence[str] | None
    ) -> None:
        """Set the head's MAC to the ledger's state in ``con`` (releases, last chain value,
        identity columns, anchor; a schema-3 ledger: the steward's events too)."""
        events = None if self.read_only else self._events_head(read_events(con))
        head = head_mac(self.key, releases, last, identity, anchored=True, events=events)
        con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", (head,))

    # -- the steward's decisions (schema 3; :mod:`._decisions`) -----------------------------

    @contextmanager
    def _steward_write(self, steward: StewardKey) -> Iterator[sqlite3.Connection]:
        """The write lock for a steward's decision: the ledger verified (chain, events, head,
        anchor) and its events re-read first; the head moved over the new event after; then
        made durable like a release."""
        self._refuse_read_only()
        if steward.public != self.steward:
            raise LedgerError(
                f"this steward key ({steward.public.fingerprint}) is not the ledger's steward "
                f"({self.steward.fingerprint}): only the steward who created the ledger can "
                "sign its decisions"
            )
        anchor = read_anchor(self.path)
        with self._immediate() as con:
            report = self._chain_check(con, anchor)[0]
            self._refuse_unverified(report)
            self._refresh(con)
            yield con
            self._move_head(con, report.releases, report.head, None)
        self._checkpoint()

    def _event(
        self,
        con: sqlite3.Connection,
        steward: StewardKey,
        kind: str,
        subject: str,
        payload: Any,
        *,
        apply: bool = True,
    ) -> Event:
        """Sign and insert one event (inside :meth:`_steward_write`), applied to
        :attr:`registry` unless ``apply`` is False (then the caller applies it)."""
        event = append_event(con, steward, self.ledger_id, self.steward, kind, subject, payload)
        if apply:
            self._apply(event)
        return event

    def _apply(self, event: Event) -> None:
        self.registry = Registry.from_events([*self.registry.events, event])

    def _dataset_hashes(self, con: sqlite3.Connection, dataset: RegisteredDataset) -> np.ndarray:
        """A registered dataset's keyed record hashes, checked against the digest its signed
        registration holds."""
        from distprivacy.ledger._decisions import records_digest

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

    def _approved_plan(self, name: str) -> Any:
        """An approved plan, decrypted and checked against its signed digest (and by its own
        self-check)."""
        import json

        from distprivacy.ledger._keys import decrypt
        from distprivacy.mechanisms.plans import Plan

        approved = self.registry.plan(name)
        row = self._con.execute(
            "SELECT seq, plan FROM approved_plans WHERE name = ?", (name,)
        ).fetchone()
        if row is None or int(row[0]) != approved.seq:
            raise LedgerError(f"the approved plan {name!r} is missing from the ledger")
        text = decrypt(self.key, row[1], f"the approved plan {name!r}")
        plan = Plan.from_dict(json.loads(text.decode("utf-8")), f"the approved plan {name!r}")
        if plan.digest != approved.digest:
            raise LedgerError(
                f"the approved plan {name!r} is not the one the steward signed (its digest "
                "differs): the ledger was edited"
            )
        return plan

    def add_secret(
        self,
        steward: StewardKey | str | Path,
        name: str,
        protect: str,
        budget: Target,
        *,
        population: str | Path | None = None,
    ) -> Secret:
        """Declare another secret (:func:`._decisions.add_secret`)."""
        from distprivacy.ledger._decisions import add_secret

        return add_secret(self, steward, name, protect, budget, population)

    def register(
        self,
        steward: StewardKey | str | Path,
        name: str,
        path: str | Path,
        *,
        secret: str | None = None,
        same_records_as: str | None = None,
        independent: bool = False,
        confirm_overlap: str | None = None,
    ) -> tuple[RegisteredDataset, tuple[str, ...]]:
        """Register a dataset file under a secret (:func:`._decisions.register_dataset`)."""
        from distprivacy.ledger._decisions import register_dataset

        return register_dataset(
            self, steward, name, path, secret=secret, same_records_as=same_records_as,
            independent=independent, confirm_overlap=confirm_overlap,
        )  # fmt: skip

    def approve(
        self,
        steward: StewardKey | str | Path,
        plan: Any,
        name: str,
        *,
        secret: str | None = None,
    ) -> ApprovedPlan:
        """Approve a plan for a secret under ``name`` (:func:`._decisions.approve_plan`)."""
        from distprivacy.ledger._decisions import approve_plan

        return approve_plan(self, steward, plan, name, secret=secret)

    def set_budget(
        self, steward: StewardKey | str | Path, secret: str | None, budget: Target, reason: str
    ) -> Secret:
        """Set a secret's budget anew, with the reason (:func:`._decisions.set_budget`)."""
        from distprivacy.ledger._decisions import set_budget

        return set_budget(self, steward, secret, budget, reason)

    # -- keeping ------------------------------------------------------------------------------

    def entry(
        self,
        plan: Any,
        values: Sequence[float] | np.ndarray,
        target: Any,
        *,
        unbounded: bool = False,
    ) -> LedgerEntry:
        """The entry of a release (:func:`distprivacy.ledger._maintenance.entry_for`)."""
        self._refuse_read_only()
        if not self.read_only:
            raise LedgerError(
                "a ledger of secrets makes each release's entry itself from the registered "
                "dataset and the approved plan: call ledger.release('PLAN', 'DATASET')"
            )
        from distprivacy.ledger._maintenance import entry_for

        _args.target_args(plan, target, unbounded=unbounded)
        return entry_for(self, plan, values, target, unbounded=unbounded)

    def verify(self, compose: Composer | None = None) -> VerifyReport:
        """Recompute the chain and the head, then every row's guarantee from its own plan and
        every running total from the rows before it (``compose``, default
        :func:`plan_composer`). Returns a :class:`VerifyReport` naming the first bad row."""
        from distprivacy.ledger._maintenance import verify_ledger

        compose = _args.compose_arg(compose, optional=True)
        return verify_ledger(self, compose)

    def backup(self, out: str | Path, *, force: bool = False) -> Path:
        """A consistent, verified copy of the live ledger (SQLite's online backup API, WAL
        content included) at ``out``, with its key at ``<out>.key`` and its anchor at
        ``<out>.anchor``, all 0600; refuses existing files; ``force``: copy a ledger that
        fails :meth:`verify`, for forensics, with a warning
        (:func:`distprivacy.ledger._maintenance.backup_ledger`). Restoring the three together
        rolls the ledger back to the copy; restoring the ledger alone is refused."""
        from distprivacy.ledger._maintenance import backup_ledger

        return backup_ledger(self, out, force=force)

    def release(
        self,
        plan: str,
        dataset: str,
        *,
        allow_exact: bool = False,
        random_state: Any = None,
    ) -> Any:
        """Release the registered ``dataset`` (a name) with the approved ``plan`` (a name),
        recorded here first (record, then reveal):
        :func:`distprivacy.ledger._release.release_registered`."""
        from distprivacy.ledger._release import release_registered

        return release_registered(
            self, plan, dataset, allow_exact=allow_exact, random_state=random_state
        )

    def seal(self, plan: Any) -> Any:
        """Refused: plans are approved with the steward's own key (:meth:`approve`)."""
        raise LedgerError(
            "plans are no longer sealed with the ledger's key (whoever releases holds it): the "
            "steward approves them with a key of their own: `distprivacy ledger approve` "
            "(Ledger.approve)"
        )

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        return "; ".join(r[0] for r in self._con.execute("PRAGMA integrity_check"))

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        n = self._con.execute("SELECT COUNT(*) FROM releases").fetchone()[0]
        if self.read_only:
            what = f"schema 2, read-only, budget {budget_text(self.budget)}"
        else:
            what = ", ".join(
                f"secret {s.name}: {budget_text(s.budget)}" for s in self.registry.secrets.values()
            )
        return f"Ledger({str(self.path)!r}, {what}, {n} releases)"
