"""A PostgreSQL connection that speaks the :mod:`sqlite3` dialect the ledger
(:mod:`distprivacy.ledger._postgres`) and the release service's own database
(:mod:`distprivacy.service.store`) are written in, so that each keeps one body of SQL for both
stores (psycopg 3, the ``[postgres]`` extra):

- ``?`` parameters become ``%s`` (the statements hold no other ``?`` or ``%``), ``BLOB``
  becomes ``BYTEA`` and ``AUTOINCREMENT`` goes;
- ``BEGIN`` — a ``REPEATABLE READ`` transaction: one snapshot, as a read transaction of SQLite
  in WAL mode;
- ``BEGIN IMMEDIATE`` — a ``READ COMMITTED`` transaction holding a transaction-scoped advisory
  lock (``lock_id``): taken without waiting (``wait=False``: when another process holds it, the
  transaction is rolled back and ``database is locked`` raised, for a caller that polls as on
  SQLite), or waited for up to ``lock_timeout`` seconds (``wait=True``, as SQLite's busy
  timeout). Under the lock every statement reads the latest committed state;
- ``PRAGMA data_version`` — a number that changes with every commit the caller cares about:
  a digest of what ``version_sql`` selects;
- ``PRAGMA wal_checkpoint`` — nothing to copy: ``COMMIT`` is durable when the server's
  ``synchronous_commit`` and ``fsync`` are on (:meth:`PostgresConnection.durable_commits`);
- ``PRAGMA integrity_check`` — ``ok`` (PostgreSQL checks its own pages); ``journal_mode`` —
  ``wal``; ``busy_timeout`` and ``synchronous`` — nothing.

Every psycopg error is raised as :class:`PostgresError`, an :class:`sqlite3.OperationalError`,
so that the callers' one error path names it in one line; a ``COMMIT`` that PostgreSQL turned
into a ``ROLLBACK`` (after a failed statement) raises too.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from distprivacy.exceptions import DistPrivacyError

#: How long to wait for the server when connecting (seconds).
CONNECT_TIMEOUT = 10
_URL = re.compile(r"^postgres(ql)?://", re.IGNORECASE)
_PASSWORD = re.compile(r"(://[^:/@]*):[^@/]*@")
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def is_postgres_url(text: Any) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://…`` or ``postgres://…``)."""
    return isinstance(text, str) and bool(_URL.match(text))


def redact(url: str) -> str:
    """``url`` without its password (for messages and ``repr``)."""
    return _PASSWORD.sub(r"\1:***@", url)


class PostgresError(sqlite3.OperationalError):
    """A PostgreSQL error, raised as the :mod:`sqlite3` error the callers handle."""


class PostgresUnavailableError(DistPrivacyError):
    """The server could not be reached, or refused the connection (one line, no password)."""


class Rows:
    """What ``execute`` returns: ``fetchone``, ``fetchall``, iteration, and ``lastrowid`` (the
    first column of the first row a ``RETURNING`` clause gave, else None)."""

    def __init__(self, rows: list[tuple[Any, ...]], returning: bool = False) -> None:
        self._rows = rows
        self.lastrowid = rows[0][0] if returning and rows else None

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)


def translate(sql: str) -> str:
    """An SQLite statement in PostgreSQL's words (module docstring)."""
    if "%" in sql:
        raise ValueError(f"an SQL statement holds '%', which it never should: {sql[:60]!r}")
    out = sql.replace("?", "%s").replace(" BLOB", " BYTEA")
    return out.replace(" AUTOINCREMENT", "")


class PostgresConnection:
    """A psycopg 3 connection (autocommit, transactions explicit) with the :mod:`sqlite3`
    interface of the module docstring.

    Parameters
    ----------
    url : str
        A libpq URL, ``postgresql://user@host:port/database``.
    what : str
        What the database holds, for messages ("the ledger's database").
    lock_id : int
        The advisory lock ``BEGIN IMMEDIATE`` takes (one per kind of writer).
    wait : bool
        Wait for the lock (up to ``lock_timeout`` s) instead of failing at once.
    lock_timeout : float
        How long ``wait`` waits before ``database is locked``.
    version_sql : str or None
        What ``PRAGMA data_version`` digests (None: it is not spoken).
    schema : str or None
        A schema to work in (created when missing; its name lower-case letters, digits, ``_``).
    """

    def __init__(
        self,
        url: str,
        *,
        what: str,
        lock_id: int,
        wait: bool = False,
        lock_timeout: float = 30.0,
        version_sql: str | None = None,
        schema: str | None = None,
    ) -> None:
        try:
            import psycopg
        except ImportError:
            from distprivacy.exceptions import MissingExtraError

            raise MissingExtraError(
                what[0].upper() + what[1:] + " in PostgreSQL", "psycopg"
            ) from None
        if not is_postgres_url(url):
            raise PostgresUnavailableError(
                f"{what} must be a PostgreSQL URL (postgresql://user@host:port/name), got "
                f"{url!r:.80}"
            )
        if schema is not None and not _SCHEMA.match(schema):
            raise ValueError(f"not a schema name: {schema!r}")
        self.url, self.what, self.lock_id, self.wait = url, what, int(lock_id), bool(wait)
        self.lock_timeout, self.version_sql = float(lock_timeout), version_sql
        self._psycopg = psycopg
        try:
            self._con = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except psycopg.Error as e:
            raise PostgresUnavailableError(
                f"cannot connect to {what} {redact(url)!r}: {_first_line(e)}"
            ) from None
        if schema is not None:  # created only when missing (CREATE needs a privilege)
            if (
                self._run("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
                is None
            ):
                self._run(f"CREATE SCHEMA IF NOT EXISTS {schema}", ())
            self._run(f"SET search_path TO {schema}", ())

    # -- the sqlite3 interface -------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """Run one statement of the dialect (module docstring)."""
        word = " ".join(sql.split()).upper()
        if word in ("BEGIN", "BEGIN DEFERRED"):
            return self._run("BEGIN ISOLATION LEVEL REPEATABLE READ", ())
        if word == "BEGIN IMMEDIATE":
            return self._begin_write()
        if word in ("COMMIT", "ROLLBACK", "END"):
            return self._run("COMMIT" if word == "END" else word, ())
        if word.startswith("PRAGMA"):
            return self._pragma(word)
        return self._run(translate(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many rows (psycopg sends them in one pipeline)."""
        try:
            with self._con.cursor() as cur:
                cur.executemany(translate(sql), [tuple(r) for r in rows])
        except self._psycopg.Error as e:
            raise PostgresError(f"PostgreSQL: {_first_line(e)}") from None

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> PostgresConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the dialect -------------------------------------------------------------------------

    def _run(self, sql: str, params: Sequence[Any]) -> Rows:
        try:
            cur = self._con.execute(sql, tuple(params) if params else None)
            rows = cur.fetchall() if cur.description is not None else []
            status = cur.statusmessage
        except self._psycopg.Error as e:  # a failed statement aborts the transaction
            raise PostgresError(f"PostgreSQL: {_first_line(e)}") from None
        if sql == "COMMIT" and status != "COMMIT":  # PostgreSQL ends a failed one with ROLLBACK
            raise PostgresError("PostgreSQL: the transaction failed and was rolled back")
        returning = " RETURNING " in sql.upper()
        return Rows([tuple(_plain(v) for v in r) for r in rows], returning)

    def _begin_write(self) -> Rows:
        """``BEGIN IMMEDIATE``: the write lock (module docstring)."""
        self._run("BEGIN ISOLATION LEVEL READ COMMITTED", ())
        try:
            if self.wait:
                ms = max(1, int(self.lock_timeout * 1000))
                self._run(f"SET LOCAL lock_timeout = {ms}", ())
                self._run("SELECT pg_advisory_xact_lock(%s)", (self.lock_id,))
                return Rows([])
            got = self._run("SELECT pg_try_advisory_xact_lock(%s)", (self.lock_id,)).fetchone()
        except PostgresError as e:
            self.execute("ROLLBACK")
            if "lock timeout" in str(e).lower():
                raise sqlite3.OperationalError(f"database is locked ({self.what})") from None
            raise
        if got is None or got[0] is not True:
            self.execute("ROLLBACK")
            raise sqlite3.OperationalError(f"database is locked (another writer of {self.what})")
        return Rows([])

    def _pragma(self, word: str) -> Rows:
        name = word.removeprefix("PRAGMA").strip().split("=")[0].split("(")[0].strip()
        if name == "DATA_VERSION" and self.version_sql is not None:
            row = self._run(self.version_sql, ()).fetchone()
            text = "" if row is None else str(row[0])
            return Rows([(int(hashlib.sha256(text.encode()).hexdigest()[:15], 16),)])
        if name == "WAL_CHECKPOINT":
            return Rows([(0, 0, 0)])  # COMMIT was durable (durable_commits checked)
        if name == "INTEGRITY_CHECK":
            self._run("SELECT 1", ())
            return Rows([("ok",)])
        if name == "JOURNAL_MODE":
            return Rows([("wal",)])
        if name in ("BUSY_TIMEOUT", "SYNCHRONOUS"):
            return Rows([])
        raise PostgresError(f"PostgreSQL does not speak PRAGMA {name.lower()} here")

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
