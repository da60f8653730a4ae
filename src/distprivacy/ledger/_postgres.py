"""A ledger kept in PostgreSQL (``Ledger(path, database="postgresql://…")``): several service
processes, on one host or several, share one budget (docs/serve.md, issue 34).

The ledger's logic is written once, on a connection that speaks like :mod:`sqlite3`: ``?``
parameters, ``BEGIN`` for a consistent read, ``BEGIN IMMEDIATE`` for the write lock, and the
few ``PRAGMA`` statements it uses. :class:`PostgresConnection` speaks that dialect to
PostgreSQL (through psycopg 3, the ``[postgres]`` extra):

- ``BEGIN`` — a ``REPEATABLE READ`` transaction: one snapshot, as a read transaction of SQLite
  in WAL mode;
- ``BEGIN IMMEDIATE`` — a ``READ COMMITTED`` transaction holding the database's advisory
  transaction lock :data:`LOCK_ID`, taken without waiting: when another process holds it, the
  transaction is rolled back and ``database is locked`` raised, so the ledger's polling writer
  (:func:`~distprivacy.ledger._store.begin_immediate`) waits and backs off exactly as on SQLite.
  Under the lock every statement reads the latest committed state, so the writer sees every
  release recorded before it took the lock;
- ``PRAGMA data_version`` — a number that changes with every commit of the ledger: every commit
  (a release, a steward's event, the first anchor) moves the head's MAC, so a digest of the
  head is that number;
- ``PRAGMA wal_checkpoint`` — nothing to copy: with ``synchronous_commit`` on (checked when the
  ledger is opened), ``COMMIT`` returns only once the commit is in the server's WAL on disk;
- ``PRAGMA integrity_check``: PostgreSQL checks its own pages; the ledger's chain is the check
  of the content.

Every psycopg error is raised as :class:`PostgresError`, an :class:`sqlite3.OperationalError`,
so that the ledger's one error path (:func:`~distprivacy.ledger._chain.sql_error`) names it in
one line and records nothing. The key and the anchor stay files beside ``path`` (0600): the
database's administrator can read the rows but not the plans' moments (encrypted under the
key), and cannot edit them without the chain failing. One database (or schema, chosen by the
URL's ``options=-csearch_path=…``) holds one ledger.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from distprivacy.ledger._entry import LedgerError

#: The advisory lock that serialises the ledger's writers within one database (a constant:
#: one database holds one ledger).
LOCK_ID = 0x6470_6C65_6467_6572 & 0x7FFF_FFFF_FFFF_FFFF  # "dpledger"
#: How long to wait for the server when connecting (seconds).
CONNECT_TIMEOUT = 10
_URL = re.compile(r"^postgres(ql)?://", re.IGNORECASE)
_PASSWORD = re.compile(r"(://[^:/@]*):[^@/]*@")


def is_postgres_url(text: Any) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://…`` or ``postgres://…``)."""
    return isinstance(text, str) and bool(_URL.match(text))


def redact(url: str) -> str:
    """``url`` without its password (for messages and ``repr``)."""
    return _PASSWORD.sub(r"\1:***@", url)


class PostgresError(sqlite3.OperationalError):
    """A PostgreSQL error, raised as the :mod:`sqlite3` error the ledger handles."""


class _Rows:
    """What ``execute`` returns: ``fetchone``, ``fetchall`` and iteration over the rows."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)


def translate(sql: str) -> str:
    """The ledger's SQLite statement in PostgreSQL's words: ``?`` parameters become ``%s``
    (the ledger's statements hold no ``?``, ``%`` or quotes other than parameters and plain
    literals), ``BLOB`` becomes ``BYTEA`` and ``AUTOINCREMENT`` goes (ids are given)."""
    if "%" in sql:
        raise LedgerError(f"a ledger statement holds '%', which it never should: {sql[:60]!r}")
    out = sql.replace("?", "%s").replace(" BLOB", " BYTEA")
    return out.replace(" AUTOINCREMENT", "")


class PostgresConnection:
    """A psycopg 3 connection (autocommit, transactions explicit) with the :mod:`sqlite3`
    interface the ledger uses (module docstring).

    Parameters
    ----------
    url : str
        A libpq URL, ``postgresql://user@host:port/database``.
    """

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            from distprivacy.exceptions import MissingExtraError

            raise MissingExtraError("a ledger in PostgreSQL", "psycopg") from None
        self.url = url
        self._psycopg = psycopg
        try:
            self._con = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except psycopg.Error as e:
            raise LedgerError(
                f"cannot connect to the ledger's database {redact(url)!r}: {_first_line(e)}"
            ) from None
        self.in_transaction = False

    # -- the sqlite3 interface -------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Rows:
        """Run one statement of the ledger's dialect (module docstring)."""
        word = sql.strip().upper()
        if word == "BEGIN":
            return self._run("BEGIN ISOLATION LEVEL REPEATABLE READ", (), begin=True)
        if word == "BEGIN IMMEDIATE":
            return self._begin_write()
        if word in ("COMMIT", "ROLLBACK"):
            out = self._run(word, ())
            self.in_transaction = False
            return out
        if word.startswith("PRAGMA"):
            return self._pragma(word)
        return self._run(translate(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        for r in rows:
            self._run(translate(sql), r)

    def close(self) -> None:
        self._con.close()

    # -- the dialect -------------------------------------------------------------------------

    def _run(self, sql: str, params: Sequence[Any], *, begin: bool = False) -> _Rows:
        try:
            cur = self._con.execute(sql, tuple(params) if params else None)
            rows = cur.fetchall() if cur.description is not None else []
            status = cur.statusmessage
        except self._psycopg.Error as e:  # a failed statement aborts the transaction
            raise PostgresError(f"PostgreSQL: {_first_line(e)}") from None
        if sql == "COMMIT" and status != "COMMIT":  # PostgreSQL ends a failed one with ROLLBACK
            raise PostgresError("PostgreSQL: the transaction failed and was rolled back")
        if begin:
            self.in_transaction = True
        return _Rows([tuple(_plain(v) for v in r) for r in rows])

    def _begin_write(self) -> _Rows:
        """``BEGIN IMMEDIATE``: the write lock, or ``database is locked`` at once."""
        self._run("BEGIN ISOLATION LEVEL READ COMMITTED", (), begin=True)
        try:
            got = self._run("SELECT pg_try_advisory_xact_lock(%s)", (LOCK_ID,)).fetchone()
        except PostgresError:
            self.execute("ROLLBACK")
            raise
        if got is None or got[0] is not True:
            self.execute("ROLLBACK")
            raise sqlite3.OperationalError("database is locked (another writer of the ledger)")
        return _Rows([])

    def _pragma(self, word: str) -> _Rows:
        name = word.removeprefix("PRAGMA").strip().split("=")[0].split("(")[0].strip()
        if name == "DATA_VERSION":
            row = self._run("SELECT value FROM ledger_meta WHERE key = 'head'", ()).fetchone()
            head = "" if row is None else str(row[0])
            return _Rows([(int(hashlib.sha256(head.encode()).hexdigest()[:15], 16),)])
        if name == "WAL_CHECKPOINT":
            return _Rows([(0, 0, 0)])  # COMMIT was durable (synchronous_commit checked)
        if name == "INTEGRITY_CHECK":
            self._run("SELECT 1", ())
            return _Rows([("ok",)])
        if name == "JOURNAL_MODE":
            return _Rows([("wal",)])
        if name in ("BUSY_TIMEOUT", "SYNCHRONOUS"):
            return _Rows([])
        raise LedgerError(f"the PostgreSQL ledger does not speak PRAGMA {name.lower()}")

    # -- PostgreSQL's own questions ------------------------------------------------------------

    def tables(self) -> set[str]:
        """The tables of the connection's schema (what ``sqlite_master`` lists on SQLite)."""
        rows = self._run(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema()",
            (),
        )
        return {str(r[0]) for r in rows}

    def durable_commits(self) -> bool:
        """Whether ``COMMIT`` waits for the server's WAL to reach its disk."""
        row = self._run("SHOW synchronous_commit", ()).fetchone()
        fsync = self._run("SHOW fsync", ()).fetchone()
        return (
            row is not None
            and str(row[0]).lower() not in ("off", "local")
            and fsync is not None
            and str(fsync[0]).lower() == "on"
        )


def _plain(v: Any) -> Any:
    """A value as :mod:`sqlite3` returns it (``bytes`` for ``BYTEA``'s ``memoryview``)."""
    return bytes(v) if isinstance(v, memoryview) else v


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def connect_postgres(url: str) -> PostgresConnection:
    """An open connection to the ledger's database ``url`` (one line when it cannot be made)."""
    if not is_postgres_url(url):
        raise LedgerError(
            f"database must be a PostgreSQL URL (postgresql://user@host:port/name), got {url!r:.80}"
        )
    return PostgresConnection(url)
