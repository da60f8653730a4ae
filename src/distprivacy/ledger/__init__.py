"""A privacy ledger: every release of a dataset, recorded before it is revealed.

The ledger is one SQLite file (the standard library's :mod:`sqlite3`, WAL mode) holding a budget
— μ, or (ε, δ) — and one row per release: when, the dataset's fingerprint, the protected
property, the plan (its digest and JSON: specification, statistics, fitted moments), the
mechanism, the statistics' names, the guarantee, the noise covariance, the released values and
the cumulative guarantee after it.

:meth:`Ledger.record` is the one way in. Inside a single ``BEGIN IMMEDIATE`` transaction (two
processes serialise on it) it reads every earlier release of the same fingerprint and property,
computes the guarantee of all of them together with the new one (a ``compose`` callable, e.g.
:func:`plan_composer`), and either refuses — :class:`BudgetExceededError`, the transaction rolled
back, the file byte-for-byte unchanged — or inserts the row and commits (``synchronous=FULL``:
durable before it returns). The caller prints the release only after :meth:`record` returned:
record, then reveal — a crash between the two can lose an output, never a ledger entry.

The dataset fingerprint is :func:`data_fingerprint` (SHA-256 of the columns used, see
:func:`distprivacy.fingerprint.data_fingerprint`).

Plans, models and the joint accounting are imported when they are used.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from distprivacy._json import jsonable
from distprivacy.fingerprint import data_fingerprint
from distprivacy.guarantee import Guarantee
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import (
    DEFAULT_REPORT_DELTA,
    Budget,
    BudgetExceededError,
    Composer,
    LedgerEntry,
    LedgerError,
    _budget,
)

__all__ = [
    "DEFAULT_REPORT_DELTA",
    "LEDGER_FORMAT",
    "SCHEMA_VERSION",
    "Budget",
    "BudgetExceededError",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "data_fingerprint",
    "plan_composer",
]

#: The marker in the ``ledger_meta`` table of every distprivacy ledger.
LEDGER_FORMAT = "distprivacy-ledger"
#: The schema version this library writes and reads.
SCHEMA_VERSION = 1
#: How long a release waits for another process's transaction (seconds).
BUSY_TIMEOUT = 60.0

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
    " plan_digest TEXT,"
    " mechanism TEXT NOT NULL,"
    " statistics TEXT NOT NULL,"
    " guarantee TEXT NOT NULL,"
    " noise_family TEXT,"
    " noise_covariance TEXT,"
    " release_values TEXT NOT NULL,"
    " plan TEXT,"
    " statistic_indices TEXT,"
    " cumulative TEXT NOT NULL)",
    "CREATE INDEX releases_by_dataset ON releases (fingerprint, property, id)",
)

_COLUMNS = (
    "id, time, fingerprint, property, plan_digest, mechanism, statistics, guarantee, "
    "noise_family, noise_covariance, release_values, plan, statistic_indices, cumulative"
)


class Ledger:
    """An open privacy ledger (module docstring). Use :meth:`init` to create one.

    Parameters
    ----------
    path : str or Path
        An existing ledger file.

    Raises
    ------
    LedgerError
        (one line) The file does not exist, is not an SQLite database, is not a distprivacy
        ledger, or was written by another schema version.
    """

    def __init__(self, path: str | Path) -> None:
        p = Path(path)
        self.path = p
        self.last_id: int | None = None
        if not p.is_file():
            raise LedgerError(
                f"no ledger at {str(p)!r}; create one with `distprivacy ledger init {p}`"
            )
        with open(p, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
        if head != _SQLITE_HEADER:
            raise LedgerError(f"{str(p)!r} is not a distprivacy ledger (not an SQLite database)")
        self._con = self._connect(p, "rw")
        try:
            self._check()
        except BaseException:
            self._con.close()
            raise
        self._con.execute("PRAGMA synchronous=FULL")
        self.budget = self._read_budget()

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

    def _read_budget(self) -> Budget:
        rows = self._con.execute("SELECT kind, mu, epsilon, delta FROM budget").fetchall()
        if len(rows) != 1:
            raise LedgerError(f"{str(self.path)!r} has {len(rows)} budgets; a ledger has one")
        kind, mu, eps, dlt = rows[0]
        return Budget(kind, mu, eps, dlt)

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        budget_mu: float | None = None,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
    ) -> Ledger:
        """Create a ledger with one budget: ``budget_mu``, or ``budget_epsilon`` and
        ``budget_delta``. Refuses an existing file."""
        from distprivacy._version import __version__

        budget = _budget(budget_mu, budget_epsilon, budget_delta)
        p = Path(path)
        if not p.parent.is_dir():
            raise LedgerError(f"the directory of {str(p)!r} does not exist")
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise LedgerError(f"{str(p)!r} already exists; a new ledger needs a new file") from None
        os.close(fd)
        try:
            con = cls._connect(p, "rw")
            try:
                if con.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
                    raise LedgerError(f"cannot put {str(p)!r} in WAL mode")
                con.execute("BEGIN IMMEDIATE")
                for stmt in _SCHEMA:
                    con.execute(stmt)
                con.executemany(
                    "INSERT INTO ledger_meta (key, value) VALUES (?, ?)",
                    [
                        ("format", LEDGER_FORMAT),
                        ("library_version", __version__),
                        ("created", datetime.now(UTC).isoformat(timespec="seconds")),
                    ],
                )
                con.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                con.execute(
                    "INSERT INTO budget (kind, mu, epsilon, delta) VALUES (?, ?, ?, ?)",
                    (budget.kind, budget.mu, budget.epsilon, budget.delta),
                )
                con.execute("COMMIT")
            finally:
                con.close()
        except BaseException:
            for suffix in ("", "-wal", "-shm"):
                Path(str(p) + suffix).unlink(missing_ok=True)
            raise
        return cls(p)

    # -- reading ----------------------------------------------------------------------------

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
        sql = f"SELECT {_COLUMNS} FROM releases"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [LedgerEntry._from_row(r) for r in con.execute(sql + " ORDER BY id", args)]

    def releases(
        self, fingerprint: str | None = None, property: str | None = None
    ) -> list[LedgerEntry]:
        """The recorded releases (oldest first), optionally of one fingerprint / property."""
        return self._select(fingerprint, property, self._con)

    def cumulative(self, fingerprint: str, property: str, compose: Composer) -> Guarantee:
        """The guarantee of every recorded release of (``fingerprint``, ``property``) together
        (nothing is written)."""
        entries = self.releases(fingerprint, property)
        if not entries:
            raise LedgerError(f"no release of {fingerprint} about {property} is recorded")
        return compose(entries)

    def show(self, compose: Composer | None = None) -> dict[str, Any]:
        """Plain data: ``budget``, ``releases`` (a list) and ``cumulative`` (a list, one per
        fingerprint and property: ``mu``, ``epsilon`` at the budget's δ, ``delta``,
        ``max_attack_accuracy``, the theorem and the number of releases). The cumulative
        guarantee is the one stored at the last release, or recomputed with ``compose``."""
        entries = self.releases()
        last: dict[tuple[str, str], LedgerEntry] = {}
        count: dict[tuple[str, str], int] = {}
        for e in entries:
            key = (e.fingerprint, e.property)
            last[key] = e
            count[key] = count.get(key, 0) + 1
        d = self.budget.report_delta
        cumulative = []
        for key, e in last.items():
            g = compose(self.releases(*key)) if compose is not None else e.cumulative
            assert g is not None
            eps = g.epsilon_at(d)
            cumulative.append(
                {
                    "fingerprint": key[0],
                    "property": key[1],
                    "releases": count[key],
                    "mu": g.mu,
                    "epsilon": eps,
                    "delta": g.delta_at(eps) if math.isfinite(eps) else 1.0,
                    "at_delta": d,
                    "max_attack_accuracy": g.max_attack_accuracy,
                    "within_budget": self.budget.exceeded_by(g) is None,
                    "theorem": g.theorem,
                }
            )
        return jsonable(
            {
                "ledger": str(self.path),
                "budget": self.budget.to_dict(),
                "releases": [e.to_dict() for e in entries],
                "cumulative": cumulative,
            }
        )

    # -- writing ----------------------------------------------------------------------------

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        try:
            self._con.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise LedgerError(
                f"the ledger {str(self.path)!r} is busy or not writable ({e}); nothing was recorded"
            ) from None
        try:
            yield self._con
        except BaseException:
            self._con.execute("ROLLBACK")
            raise
        self._con.execute("COMMIT")

    def record(self, entry: LedgerEntry, compose: Composer) -> Guarantee:
        """Record ``entry`` if the cumulative guarantee stays within the budget.

        In one ``BEGIN IMMEDIATE`` transaction: read the earlier releases of the same
        fingerprint and property, ``compose(earlier + [entry])``, then refuse or insert and
        commit. Reveal the release only after this returns.

        Returns
        -------
        Guarantee
            The cumulative guarantee, now recorded.

        Raises
        ------
        BudgetExceededError
            The budget would be exceeded (the ledger is unchanged).
        DistPrivacyError
            ``compose`` refused (e.g. releases that cannot be composed); the ledger is
            unchanged.
        """
        if not isinstance(entry, LedgerEntry):
            raise LedgerError(f"record takes a LedgerEntry, got {type(entry).__name__}")
        fresh = replace(entry, id=None, time=None, cumulative=None)
        with self._immediate() as con:
            prior = self._select(entry.fingerprint, entry.property, con)
            g = compose([*prior, fresh])
            if not isinstance(g, Guarantee):
                raise LedgerError(f"compose returned a {type(g).__name__}, not a Guarantee")
            why = self.budget.exceeded_by(g)
            if why is not None:
                raise BudgetExceededError(
                    f"release refused: {why} ({len(prior)} earlier release"
                    f"{'' if len(prior) == 1 else 's'} of this dataset); nothing was recorded"
                )
            now = datetime.now(UTC).isoformat(timespec="microseconds")
            cur = con.execute(
                "INSERT INTO releases (time, fingerprint, property, plan_digest, mechanism, "
                "statistics, guarantee, noise_family, noise_covariance, release_values, plan, "
                "statistic_indices, cumulative) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                fresh._row(now, g),
            )
            rid = cur.lastrowid
        self.last_id = rid
        return g

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
