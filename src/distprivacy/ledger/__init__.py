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
budget, and the ledger's head (count, last chain value and identity columns) is MACed too.
:meth:`Ledger.verify` recomputes the chain, the head, every row's guarantee from its plan and
every running total: deleting, reordering or editing a row, raising the budget or editing a
total is caught (``distprivacy ledger verify`` exits 1 naming the first bad row).

:meth:`Ledger.record` is the one way in. Inside a single ``BEGIN IMMEDIATE`` transaction (two
processes serialise on it) it verifies the chain, reads every earlier release of the same
dataset and property, computes the guarantee of all of them together with the new one (a
``compose`` callable, e.g. :func:`plan_composer`), and either refuses —
:class:`BudgetExceededError`, the transaction rolled back, the file byte-for-byte unchanged —
or inserts the row, moves the head and commits (``synchronous=FULL``: durable before it
returns). The caller prints the release only after :meth:`record` returned: record, then reveal.

What it does not resist (docs/ledger.md): someone holding the key file can rewrite the whole
ledger consistently; restoring an older copy of *both* files rolls the budget back (keep the
head that ``ledger verify`` prints elsewhere to notice); a dataset with records changed is
another dataset (the sketch warns when it overlaps an earlier one by half or more).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.fingerprint import data_fingerprint
from distprivacy.guarantee import Guarantee
from distprivacy.ledger import _args
from distprivacy.ledger._chain import (
    _FIELDS,
    BUSY_TIMEOUT,
    LEDGER_FORMAT,
    SCHEMA_VERSION,
    VerifyReport,
    _content,
    _eq,
    _genesis,
    _head_mac,
    _private_umask,
    _sql_error,
    _unbounded_guarantee,
)
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import (
    DEFAULT_REPORT_DELTA,
    Budget,
    BudgetExceededError,
    Composer,
    LedgerEntry,
    LedgerError,
    LedgerTypeError,
    _budget,
    _dumps,
    sketch_field,
)
from distprivacy.ledger._identity import (
    check_identify_by,
    fix_identity,
    link_warning,
    linked_dataset,
    read_identity,
    write_identity,
)
from distprivacy.ledger._keys import (
    create_key,
    encrypt,
    key_path,
    mac,
    read_key,
    subkey,
)
from distprivacy.ledger._maintenance import NEAR_DUPLICATE, near_duplicates
from distprivacy.targets import Target

__all__ = [
    "DEFAULT_REPORT_DELTA",
    "LEDGER_FORMAT",
    "NEAR_DUPLICATE",
    "SCHEMA_VERSION",
    "Budget",
    "BudgetExceededError",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "LedgerTypeError",
    "VerifyReport",
    "data_fingerprint",
    "key_path",
    "plan_composer",
]

#: How often a release is composed again when other releases were recorded meanwhile.
RECORD_ATTEMPTS = 8

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

_COLUMNS = ", ".join(_FIELDS)


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
        try:
            with _private_umask():
                self._con = self._connect(p, "rw")
        except sqlite3.Error as e:
            raise _sql_error(p, e, "open the ledger") from None
        try:
            self._check()
            self.key = read_key(p)
            self._con.execute("PRAGMA synchronous=FULL")
            self.budget = self._read_budget()
        except BaseException:
            self._con.close()
            raise

    @staticmethod
    def _connect(p: Path, mode: str) -> sqlite3.Connection:
        uri = p.resolve().as_uri() + f"?mode={mode}"
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
        con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
        return con

    def _check(self) -> None:
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
                raise _sql_error(self.path, e, "open the ledger") from None
            raise LedgerError(f"{name} is not a distprivacy ledger ({e})") from None
        if fmt is None or fmt[0] != LEDGER_FORMAT or not {"releases", "budget"} <= tables:
            raise LedgerError(f"{name} is an SQLite database but not a distprivacy ledger")
        v = self._con.execute("SELECT version FROM schema_version").fetchall()
        if [r[0] for r in v] != [SCHEMA_VERSION]:
            raise LedgerError(
                f"{name} has ledger schema version {v[0][0] if v else None!r}; this library "
                f"reads version {SCHEMA_VERSION}"
            )
        mode = self._con.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LedgerError(f"{name} is not in WAL mode (journal mode {mode!r})")

    @property
    def identity_columns(self) -> tuple[str, ...] | None:
        """The columns that identify a dataset here (:mod:`._identity`), read from the file:
        None while the first release has not fixed them, or in a ledger from before them."""
        return read_identity(self._con, self.path)

    def _read_budget(self) -> Budget:
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
        return Budget(kind, mu, eps, dlt)

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        budget_mu: float | None = None,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
        budget: Target | None = None,
        identify_by: Sequence[str] | None = None,
    ) -> Ledger:
        """Create a ledger (mode 0600) and its key (``<path>.key``, 0600) with one budget:
        ``budget_mu``, or ``budget_epsilon`` and ``budget_delta``, or typed, ``budget`` =
        ``GDP(μ)``, ``EpsDelta(ε, δ)`` or ``MaxAttackAccuracy(a)`` (:mod:`distprivacy.targets`).
        Refuses an existing file. ``identify_by``: the columns that identify a dataset
        (default: all the columns of the first release's target; :mod:`._identity`)."""
        from distprivacy._version import __version__

        path = _args.path_arg(path)
        identity = None if identify_by is None else check_identify_by(identify_by)
        if budget is not None:
            if not (budget_mu is None and budget_epsilon is None and budget_delta is None):
                raise LedgerError("give the budget once: budget=..., or budget_mu / budget_epsilon")
            the_budget = Budget.of(budget)
        else:
            the_budget = _budget(budget_mu, budget_epsilon, budget_delta)
        budget = the_budget  # type: ignore[assignment]
        p = Path(path)
        if not p.parent.is_dir():
            raise LedgerError(f"the directory of {str(p)!r} does not exist")
        if key_path(p).exists():
            raise LedgerError(f"{str(key_path(p))!r} already exists; a new ledger needs a new key")
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise LedgerError(f"{str(p)!r} already exists; a new ledger needs a new file") from None
        except OSError as e:
            raise _sql_error(p, e, "create the ledger") from None
        os.close(fd)
        try:
            key = create_key(p)
            created = datetime.now(UTC).isoformat(timespec="seconds")
            with _private_umask():
                con = cls._connect(p, "rw")
            try:
                if con.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
                    raise LedgerError(f"cannot put {str(p)!r} in WAL mode")
                con.execute("BEGIN IMMEDIATE")
                for stmt in _SCHEMA:
                    con.execute(stmt)
                genesis = _genesis(key, budget, created)
                con.executemany(
                    "INSERT INTO ledger_meta (key, value) VALUES (?, ?)",
                    [
                        ("format", LEDGER_FORMAT),
                        ("library_version", __version__),
                        ("created", created),
                        ("head", _head_mac(key, 0, genesis, identity)),
                    ],
                )
                if identity is not None:
                    write_identity(con, identity)
                con.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                con.execute(
                    "INSERT INTO budget (kind, mu, epsilon, delta) VALUES (?, ?, ?, ?)",
                    (budget.kind, budget.mu, budget.epsilon, budget.delta),
                )
                con.execute("COMMIT")
            finally:
                con.close()
        except BaseException as exc:
            for suffix in ("", "-wal", "-shm", ".key"):
                Path(str(p) + suffix).unlink(missing_ok=True)
            if isinstance(exc, sqlite3.Error | OSError):
                raise _sql_error(p, exc, "create the ledger") from None
            raise
        return cls(p)

    # -- identity of a release ----------------------------------------------------------------

    # -- reading ------------------------------------------------------------------------------

    def _rows(self, con: sqlite3.Connection, where: str = "", args: Sequence[Any] = ()) -> list:
        try:
            return con.execute(
                f"SELECT {_COLUMNS}, chain FROM releases {where} ORDER BY id", args
            ).fetchall()
        except sqlite3.Error as e:
            raise _sql_error(self.path, e, "read the ledger") from None

    def _entry(self, row: Sequence[Any]) -> LedgerEntry:
        """A row as a :class:`LedgerEntry` (:func:`._maintenance.row_entry`)."""
        from distprivacy.ledger._maintenance import row_entry

        return row_entry(self, row)

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

    def _chain_check(self, con: sqlite3.Connection) -> tuple[VerifyReport, list]:
        """The keyed chain and head of every row (fast: one HMAC per row)."""
        rows = self._rows(con)
        prev = _genesis(self.key, self.budget, self._created(con))
        for r in rows:
            want = mac(self.key, "chain", prev.encode() + _content(r[: len(_FIELDS)]))
            if not isinstance(r[-1], str) or not _eq(r[-1], want):
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
        if head is None or not _eq(str(head[0]), _head_mac(self.key, len(rows), prev, identity)):
            why = (
                "the ledger's head does not match its rows: releases were deleted from the end, "
                "or the budget or the identity columns were changed"
            )
            return VerifyReport(False, len(rows), None, why, prev), rows
        return VerifyReport(True, len(rows), None, "", prev), rows

    # -- writing ------------------------------------------------------------------------------

    #: Called as ``on_wait(seconds_waited, seconds_allowed)`` while another process holds the
    #: write lock (the CLI shows a progress bar); None: wait silently.
    on_wait: Any = None

    def _begin_immediate(self) -> None:
        """``BEGIN IMMEDIATE``, polling every 50 ms for at most :data:`BUSY_TIMEOUT` s while
        another process writes, and reporting the wait to :attr:`on_wait`."""
        start = time.monotonic()
        self._con.execute("PRAGMA busy_timeout=50")
        try:
            while True:
                try:
                    self._con.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as e:
                    waited = time.monotonic() - start
                    text = str(e).lower()
                    if ("locked" not in text and "busy" not in text) or waited > BUSY_TIMEOUT:
                        raise
                    if self.on_wait is not None:
                        self.on_wait(waited, BUSY_TIMEOUT)
                    time.sleep(0.05)
        finally:
            self._con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        try:
            self._begin_immediate()
        except sqlite3.Error as e:
            raise _sql_error(self.path, e, "write to the ledger") from None
        try:
            yield self._con
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                self._con.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _sql_error(self.path, exc, "write to the ledger") from None
            raise
        try:
            self._con.execute("COMMIT")
        except sqlite3.Error as e:
            with contextlib.suppress(sqlite3.Error):
                self._con.execute("ROLLBACK")
            raise _sql_error(self.path, e, "write to the ledger") from None

    def record(self, entry: LedgerEntry, compose: Composer) -> Guarantee:
        """Record ``entry`` if the cumulative guarantee stays within the budget.

        In one ``BEGIN IMMEDIATE`` transaction: verify the chain, read the earlier releases of
        the same dataset and property, ``compose(earlier + [entry])``, then refuse or insert,
        move the head and commit. Reveal the release only after this returns. An ``unbounded``
        entry (an exact release) is recorded whatever the budget, and exhausts it: every
        later release of that dataset and property is refused. Near-duplicate warnings (a
        target whose rows overlap an earlier released dataset's by ≥ :data:`NEAR_DUPLICATE`)
        are left in :attr:`last_warnings`.

        Raises
        ------
        BudgetExceededError
            The budget would be exceeded (the ledger is unchanged).
        LedgerError
            The ledger fails verification, or cannot be written (one line naming the cause).
        DistPrivacyError
            ``compose`` refused (e.g. releases that cannot be composed); the ledger unchanged.
        """
        _args.entry_arg(entry)
        compose = _args.compose_arg(compose)
        fresh = replace(entry, id=None, time=None, cumulative=None)
        for _ in range(RECORD_ATTEMPTS):
            # Outside the write lock: compose on a consistent snapshot (a read transaction).
            snap, prior, linked, extra = self._snapshot(fresh)
            # Linked, with no release of its own dataset yet: recorded with the linked dataset.
            adopted = linked is not None and not extra
            entry_now = replace(fresh, fingerprint=linked[0]) if linked and adopted else fresh
            exhausted = next((e for e in [*extra, *prior] if e.unbounded), None)
            if exhausted is not None:
                raise BudgetExceededError(
                    f"release refused: release {exhausted.id} of this dataset published its "
                    "exact statistics (`allow_exact=True`), which exhausted its budget; nothing "
                    "was recorded"
                )
            if fresh.unbounded:
                g = _unbounded_guarantee()
            else:
                g = compose([*prior, entry_now])
                # With a linked dataset, the budget holds for both datasets' releases together.
                for g_ in (g, compose([*extra, *prior, entry_now])) if extra else (g,):
                    if not isinstance(g_, Guarantee):
                        raise LedgerError(
                            f"compose returned a {type(g_).__name__}, not a Guarantee"
                        )
                    # Rows are only ever appended, so a refusal on a snapshot stays right.
                    why = self.budget.exceeded_by(g_)
                    if why is not None:
                        k = len(prior) + len(extra) * (g_ is not g)
                        raise BudgetExceededError(
                            f"release refused: {why} ({k} earlier release"
                            f"{'' if k == 1 else 's'} of this dataset); nothing was recorded"
                        )
            # Under the write lock: verify the chain, check nothing was added since the
            # snapshot, insert. The time held does not depend on the composition.
            with self._immediate() as con:
                report, _ = self._chain_check(con)
                self._refuse_unverified(report)
                if self._state(con) != snap:
                    continue  # another release came in: compose again on the new state
                identity = fix_identity(con, self.path, fresh, report.releases)
                self.last_warnings = link_warning(linked, adopted) + near_duplicates(entry_now, con)
                now = datetime.now(UTC).isoformat(timespec="microseconds")
                rid = self._insert(con, entry_now, now, g, report, identity)
            self.last_id, self.last_fingerprint = rid, entry_now.fingerprint
            return g
        raise LedgerError(
            f"the ledger {str(self.path)!r} kept receiving other releases while this one was "
            f"composed ({RECORD_ATTEMPTS} attempts); nothing was recorded — try again"
        )

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

    def _snapshot(self, entry: LedgerEntry) -> tuple[Any, list, Any, list]:
        """In one read transaction (a consistent snapshot under WAL; no write lock): the
        ledger's state; the earlier releases of ``entry``'s dataset, or, when it has none, of
        the dataset it is linked to (:func:`._identity.linked_dataset`); that link; and the
        linked dataset's releases when ``entry``'s own has some (checked, not recorded with)."""
        try:
            self._con.execute("BEGIN")
            try:
                state = self._state(self._con)
                self._refuse_unverified(self._chain_check(self._con)[0])
                linked = linked_dataset(self._con, entry)
                prior = self._select(entry.fingerprint, entry.property, self._con)
                extra = [] if linked is None else self._select(linked[0], entry.property, self._con)
                if not prior:
                    prior, extra = extra, []
            finally:
                self._con.execute("COMMIT")
        except sqlite3.Error as e:
            raise _sql_error(self.path, e, "read the ledger") from None
        return state, prior, linked, extra

    def _insert(
        self,
        con: sqlite3.Connection,
        e: LedgerEntry,
        now: str,
        g: Guarantee,
        report: Any,
        identity: Sequence[str] | None,
    ) -> int:
        nxt = con.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM releases").fetchone()[0]
        plan = None if e.plan is None else encrypt(self.key, _dumps(e.plan).encode("utf-8"))
        values = (
            int(nxt),
            now,
            e.fingerprint,
            e.property,
            e.property_text or e.property,
            int(e.complemented),
            e.plan_digest,
            e.mechanism,
            _dumps(list(e.statistics)),
            _dumps(e.guarantee.to_dict()),
            e.noise_family,
            None if e.noise_covariance is None else _dumps(e.noise_covariance),
            _dumps(list(e.values)),
            plan,
            None if e.statistic_indices is None else _dumps(list(e.statistic_indices)),
            _dumps(g.to_dict()),
            sketch_field(e),
            int(e.unbounded),
        )
        chain = mac(self.key, "chain", report.head.encode() + _content(values))
        try:
            con.execute(
                f"INSERT INTO releases ({_COLUMNS}, chain) VALUES "
                f"({', '.join('?' * (len(_FIELDS) + 1))})",
                (*values, chain),
            )
            con.execute(
                "UPDATE ledger_meta SET value = ? WHERE key = 'head'",
                (_head_mac(self.key, report.releases + 1, chain, identity),),
            )
        except sqlite3.Error as exc:
            raise _sql_error(self.path, exc, "write to the ledger") from None
        return int(nxt)

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

    def backup(self, out: str | Path) -> Path:
        """A consistent copy of the live ledger (SQLite's online backup API, WAL content
        included) at ``out``, with its key at ``<out>.key``, both 0600; refuses existing
        files. Copying the main file alone while the ledger is in use can miss releases that
        are still in its -wal file."""
        from distprivacy.ledger._maintenance import backup_ledger

        return backup_ledger(self, out)

    def release(
        self,
        plan: Any,
        target: Any,
        *,
        random_state: Any = None,
        allow_exact: bool = False,
        require_seal: bool = True,
        fit: Any = None,
    ) -> Any:
        """Release ``target`` with ``plan``, recorded here first (record, then reveal):
        :func:`distprivacy.ledger._release.release_recorded`."""
        from distprivacy.ledger._release import release_recorded

        _args.target_args(plan, target, require_seal=require_seal, fit=fit)
        return release_recorded(
            self,
            plan,
            target,
            random_state=random_state,
            allow_exact=allow_exact,
            require_seal=require_seal,
            fit=fit,
        )

    def seal(self, plan: Any) -> Any:
        """``plan`` sealed with this ledger's key (a steward's approval; see
        :meth:`~distprivacy.mechanisms.plans.Plan.seal`)."""
        return _args.plan_arg(plan).seal(subkey(self.key, "seal"))

    def verify_seal(self, plan: Any) -> None:
        """Refuse a plan not sealed with this ledger's key (PlanError, one line)."""
        _args.plan_arg(plan).verify_seal(subkey(self.key, "seal"))

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
        return f"Ledger({str(self.path)!r}, budget {self.budget.describe()}, {n} releases)"
