"""The service's own database: users, token hashes, browser sessions, plans awaiting
approval, the analysts' releases and the audit log.

Two backends, one body of SQL (written in SQLite's dialect; :mod:`distprivacy.postgres` speaks
it to PostgreSQL):

- ``DIR/service.db`` (SQLite, mode 0600), without ``--database``: every function opens its own
  connection (the server's worker threads share nothing), in WAL mode with a busy timeout, and
  commits before it returns;
- with ``--database URL``, the schema ``distprivacy_service`` of the ledger's PostgreSQL
  database (the ledger's tables are in the default schema; both have a ``releases`` table):
  every function opens a connection and works in one ``READ COMMITTED`` transaction under the
  advisory lock :data:`LOCK_ID` (waited for, as SQLite's busy timeout); the tables are created
  under that lock, so two processes starting at once are safe. A database whose commits are
  not durable is refused, as the ledger refuses it.

In PostgreSQL, whoever can write the database could insert a user, a token hash or a session
of their choosing. Every ``users``, ``tokens`` and ``sessions`` row and the ``meta`` rows there
carry an HMAC-SHA256 under :data:`KEY_NAME` (a key file in ``DIR``, never in the database),
checked on every authentication: a row without its valid MAC is refused
(:class:`TamperedError`). The ``meta`` table keeps the steward's public key (shared by every
host) and a check value of that key (a host with another key is refused at start).

The ``audit`` and ``releases`` rows there are keyed hash chains (:mod:`.chain`) under subkeys
of the same key, appended under the write lock, anchored per host (``DIR/service.anchor``)
and verified in full at start and every :data:`FULL_EVERY` seconds, incrementally on every
authentication; a token whose revocation the verified audit log records is refused whatever
its row says. A failed verification is remembered: :class:`~.chain.ChainError` on every
request after it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets as _secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from distprivacy.service import chain as ch

#: The schema of the service's tables in PostgreSQL.
SCHEMA = "distprivacy_service"
#: The advisory lock of the service's writers in PostgreSQL (the ledger's is another).
LOCK_ID = 0x6470_7365_7276_6963 & 0x7FFF_FFFF_FFFF_FFFF  # "dpservic"
#: The file in the state directory holding the key of the rows' MACs (PostgreSQL only).
KEY_NAME = "service.key"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " role TEXT NOT NULL CHECK (role IN ('steward', 'analyst')), secrets TEXT NOT NULL,"
    " created TEXT NOT NULL, mac TEXT)",
    "CREATE TABLE IF NOT EXISTS tokens (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL"
    " REFERENCES users(id), hash TEXT NOT NULL UNIQUE, created TEXT NOT NULL, revoked TEXT,"
    " wrapped BLOB, mac TEXT)",
    "CREATE TABLE IF NOT EXISTS sessions (hash TEXT PRIMARY KEY, token_id INTEGER NOT NULL"
    " REFERENCES tokens(id), csrf TEXT NOT NULL, expires REAL NOT NULL, wrapped BLOB, mac TEXT)",
    "CREATE TABLE IF NOT EXISTS pending (id INTEGER PRIMARY KEY, secret TEXT NOT NULL,"
    " file TEXT NOT NULL, uploaded_by TEXT NOT NULL, time TEXT NOT NULL,"
    " status TEXT NOT NULL, name TEXT, plan TEXT, mac TEXT)",
    "CREATE TABLE IF NOT EXISTS releases (id INTEGER PRIMARY KEY, ledger_id INTEGER NOT NULL,"
    ' "user" TEXT NOT NULL, secret TEXT NOT NULL, dataset TEXT NOT NULL, plan TEXT NOT NULL,'
    " time TEXT NOT NULL, body TEXT NOT NULL, chain TEXT)",
    "CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY, time TEXT NOT NULL,"
    ' "user" TEXT NOT NULL, role TEXT NOT NULL, action TEXT NOT NULL, subject TEXT NOT NULL,'
    " outcome TEXT NOT NULL, detail TEXT NOT NULL, chain TEXT)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, mac TEXT)",
)
#: Columns added since the first SQLite layout (added to an older ``service.db`` at open).
_ADDED = (
    ("users", "mac"),
    ("tokens", "mac"),
    ("sessions", "mac"),
    ("pending", "plan"),
    ("pending", "mac"),
    ("releases", "chain"),
    ("audit", "chain"),
)

#: How often (seconds) an authentication also verifies the whole audit log and releases, not
#: only the rows added since the last verification.
FULL_EVERY = 60.0
#: The ``meta`` key recording that the chains were started (and over how many older rows).
CHAINED_KEY = "chained"

#: How long a browser session lasts (seconds).
SESSION_SECONDS = 8 * 3600


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def postgres_ddl(stmt: str) -> str:
    """A ``CREATE TABLE`` of :data:`_SCHEMA` in PostgreSQL's types: an identity key for
    ``INTEGER PRIMARY KEY``, 64-bit references, a double for ``REAL`` (``BLOB`` →
    ``BYTEA`` is :func:`distprivacy.postgres.translate`'s)."""
    out = stmt.replace("INTEGER PRIMARY KEY", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    return out.replace(" INTEGER NOT NULL", " BIGINT NOT NULL").replace(
        " REAL ", " DOUBLE PRECISION "
    )


class StoreError(Exception):
    """The service's database cannot be used as it is (one line naming the fix)."""


class TamperedError(StoreError):
    """A row of the service's database fails its MAC: written outside the service."""


class Store:
    """The service's database: the SQLite file ``path`` (created 0600 with its tables when
    missing), or — with ``database`` — the schema :data:`SCHEMA` of that PostgreSQL database,
    its rows' MACs under the key file ``key_file`` (created when the database has no service
    yet; a host joining one must hold a copy)."""

    def __init__(
        self, path: Path, database: str | None = None, key_file: Path | None = None
    ) -> None:
        self.path, self.database = path, database
        self._key: bytes | None = None
        self.key_file = key_file or path.with_name(KEY_NAME)
        self.anchor_file = self.key_file.with_name(ch.ANCHOR_NAME)
        self._vlock = threading.Lock()
        self._heads: dict[str, ch.Head] = {}
        self._revoked: set[int] = set()
        self._broken: str | None = None
        self._full_at = 0.0
        if database is not None:
            self._open_postgres(database, self.key_file)
            self.verify()
            return
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        con = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            con.execute("PRAGMA busy_timeout=30000")
            con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()
        with self.db() as con:
            for stmt in _SCHEMA:
                con.execute(stmt)
            for table, column in _ADDED:
                have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    con.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")

    def _connect(self, schema: str | None = SCHEMA) -> Any:
        from distprivacy.postgres import PostgresConnection, PostgresUnavailableError

        assert self.database is not None
        try:
            return PostgresConnection(
                self.database,
                what="the service's database",
                lock_id=LOCK_ID,
                wait=True,
                schema=schema,
            )
        except PostgresUnavailableError as e:
            raise StoreError(str(e)) from None

    def _open_postgres(self, database: str, key_file: Path) -> None:
        """The tables (under the lock: two processes may start at once), the durability check,
        and the MAC key: made with the service's first ``meta`` row, else read from
        ``key_file`` and checked against the database's check value."""
        from distprivacy.postgres import redact

        con = self._connect(schema=None)
        try:
            if not con.durable_commits():
                raise StoreError(
                    f"the database {redact(database)} does not wait for its disk at COMMIT "
                    "(synchronous_commit or fsync is off): a user or a token could be made and "
                    "then lost; set synchronous_commit = on and fsync = on"
                )
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
                con.execute(f"SET LOCAL search_path TO {SCHEMA}")
                for stmt in _SCHEMA:
                    con.execute(postgres_ddl(stmt))
                for table in ch.CHAINED:  # a schema made before the chains
                    con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS chain TEXT")
                row = con.execute("SELECT value FROM meta WHERE key = 'key check'").fetchone()
                if row is None:
                    users = con.execute("SELECT COUNT(*) FROM users").fetchone()[0]
                    if users:
                        raise StoreError(
                            f"the database {redact(database)} holds the service's users without "
                            "their key's check value: it was edited outside the service"
                        )
                    self._key = _make_key(key_file)
                    con.execute(
                        "INSERT INTO meta (key, value) VALUES ('key check', ?)",
                        (_check_value(self._key),),
                    )
                else:
                    self._key = _read_key(key_file)
                    if not hmac.compare_digest(str(row[0]), _check_value(self._key)):
                        raise StoreError(
                            f"{key_file.name} in the state directory is not the key of the "
                            f"service in {redact(database)}: copy {key_file.name} from the state "
                            "directory of a host already serving it"
                        )
                self._start_chains(con)
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        finally:
            con.close()

    @contextmanager
    def db(self) -> Iterator[Any]:
        if self.database is not None:
            pg = self._connect()
            try:
                pg.execute("BEGIN IMMEDIATE")
                try:
                    yield pg
                except BaseException:
                    pg.execute("ROLLBACK")
                    raise
                pg.execute("COMMIT")
            finally:
                pg.close()
            return
        old = os.umask(0o077)
        try:
            con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        finally:
            os.umask(old)
        try:
            con.execute("PRAGMA busy_timeout=30000")
            con.execute("PRAGMA synchronous=FULL")
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        finally:
            con.close()

    def _insert(self, con: Any, sql: str, args: tuple[Any, ...]) -> int:
        """An ``INSERT`` and the new row's id: ``RETURNING id`` on PostgreSQL; ``lastrowid`` on
        SQLite (whose ``RETURNING`` came in 3.35, newer than some systems' SQLite)."""
        cur = con.execute(sql + (" RETURNING id" if self.database is not None else ""), args)
        return int(cur.lastrowid or 0)

    # -- the rows' MACs -----------------------------------------------------------------------

    def _mac(self, kind: str, *fields: Any) -> str | None:
        """The MAC of a row's fields (None without a key: SQLite, where whoever writes the file
        holds every key anyway)."""
        if self._key is None:
            return None
        data = json.dumps([kind, *[_plain(f) for f in fields]], separators=(",", ":"))
        return hmac.new(self._key, data.encode("utf-8"), hashlib.sha256).hexdigest()

    def _check(self, mac: Any, kind: str, *fields: Any) -> None:
        want = self._mac(kind, *fields)
        if want is None:
            return
        if not isinstance(mac, str) or not hmac.compare_digest(mac, want):
            raise TamperedError(
                f"a {kind} row of the service's database fails its MAC (written outside the "
                "service): refused"
            )

    def _user_mac(self, uid: int, name: str, role: str, secrets: str) -> str | None:
        return self._mac("user", uid, name, role, secrets)

    def _token_mac(
        self, tid: int, uid: int, hashed: str, revoked: str | None, wrapped: bytes | None
    ) -> str | None:
        return self._mac("token", tid, uid, hashed, revoked, wrapped)

    # -- the chains over the audit log and the releases (:mod:`.chain`) ------------------------

    def _start_chains(self, con: Any) -> None:
        """At open, under the write lock: the first time the service runs with chains, chain
        the rows written before them (never protected until then) and record it in ``meta``;
        after that a row without a chain value is one written outside the service."""
        assert self._key is not None
        row = con.execute("SELECT value, mac FROM meta WHERE key = ?", (CHAINED_KEY,)).fetchone()
        if row is not None:
            self._check(row[1], "meta", CHAINED_KEY, row[0])
            return
        for table in ch.CHAINED:
            if con.execute(f"SELECT COUNT(*) FROM {table} WHERE chain IS NOT NULL").fetchone()[0]:
                raise StoreError(
                    f"the service's {table} rows carry chain values but the database does not "
                    "record that its chains were started: it was edited outside the service; "
                    + ch.SEE
                )
        anchor = ch.read_anchor(self._key, self.anchor_file)
        if anchor is not None and any(n for n, _ in anchor.tables.values()):
            raise StoreError(
                "the database's audit log is not chained but this host's anchor records a chained "
                f"one: its chain values were removed outside the service; {ch.SEE}"
            )
        counts = [f"{table}:{self._chain_all(con, table)}" for table in ch.CHAINED]
        value = ",".join(counts)
        con.execute(
            "INSERT INTO meta (key, value, mac) VALUES (?, ?, ?)",
            (CHAINED_KEY, value, self._mac("meta", CHAINED_KEY, value)),
        )

    def _chain_all(self, con: Any, table: str) -> int:
        """Chain every row of ``table`` in id order (the rows from before the chains)."""
        assert self._key is not None
        cols = ", ".join(ch.CHAINED[table])
        prev = ch.genesis(self._key, table)
        rows = con.execute(f"SELECT {cols} FROM {table} ORDER BY id").fetchall()
        for r in rows:
            prev = ch.link(self._key, table, prev, r)
            con.execute(f"UPDATE {table} SET chain = ? WHERE id = ?", (prev, r[0]))
        return len(rows)

    def _read_new(
        self, con: Any, table: str, head: ch.Head, below: int | None = None
    ) -> ch.Verified:
        """The rows of ``table`` after ``head`` (and ``head``'s own last row again: it must
        still be there, unchanged), verified; :class:`~.chain.ChainError` otherwise."""
        assert self._key is not None
        cols = ", ".join(ch.CHAINED[table])
        sql = f"SELECT {cols}, chain FROM {table} WHERE id >= ?"
        args: list[Any] = [head.last_id]
        if below is not None:
            sql += " AND id < ?"
            args.append(below)
        rows = con.execute(sql + " ORDER BY id", args).fetchall()
        return self._check_new(table, head, rows)

    def _check_new(self, table: str, head: ch.Head, rows: list[Any]) -> ch.Verified:
        """``rows`` (from ``head``'s last row on, in id order) verified after ``head``."""
        assert self._key is not None
        if head.last_id:
            if not rows or int(rows[0][0]) != head.last_id:
                raise ch.bad_row(table, head.last_id, "it was removed after it was verified")
            again = ch.Head(head.count - 1, 0, head.prev, head.prev)
            ch.extend(self._key, table, again, rows[:1])
            rows = rows[1:]
        return ch.extend(self._key, table, head, rows)

    def _read_new_both(self, con: Any) -> dict[str, ch.Verified]:
        """:meth:`_read_new` of both chained tables in one query (one round trip: this runs
        on every authentication)."""
        audit, rel = self._head("audit"), self._head("releases")
        cols = ", ".join(ch.CHAINED["audit"])
        rcols = ", ".join(ch.CHAINED["releases"]).replace("ledger_id", "CAST(ledger_id AS TEXT)")
        rows = con.execute(
            f"SELECT 'audit', {cols}, chain FROM audit WHERE id >= ? UNION ALL"
            f" SELECT 'releases', {rcols}, chain FROM releases WHERE id >= ? ORDER BY 1, 2",
            (audit.last_id, rel.last_id),
        ).fetchall()
        split: dict[str, list[Any]] = {"audit": [], "releases": []}
        for r in rows:
            row = list(r[1:])
            if r[0] == "releases":
                row[1] = int(row[1])  # the ledger's id, as the chain's content has it
            split[str(r[0])].append(row)
        return {t: self._check_new(t, self._head(t), split[t]) for t in ch.CHAINED}

    def _head(self, table: str) -> ch.Head:
        assert self._key is not None
        return self._heads.get(table) or ch.empty_head(self._key, table)

    def _refuse_if_broken(self) -> None:
        if self._broken is not None:
            raise ch.ChainError(self._broken)

    def _advance(self, con: Any) -> bool:
        """Verify the rows added since this process last did (inside ``con``'s transaction,
        which holds the write lock: they are committed); whether any were. A failure is
        remembered: from then on every request is refused."""
        if self._key is None:
            return False
        with self._vlock:
            self._refuse_if_broken()
            try:
                got = self._read_new_both(con)
            except ch.ChainError as e:
                self._broken = str(e)
                raise
            moved = any(got[t].head.count != self._head(t).count for t in ch.CHAINED)
            for t, v in got.items():
                self._heads[t] = v.head
                self._revoked |= v.revoked
            return moved

    def _after_read(self, moved: bool) -> None:
        """After a verification: the anchor moved forward, and — every :data:`FULL_EVERY`
        seconds — the whole log verified again."""
        if self._key is None:
            return
        if time.monotonic() - self._full_at > FULL_EVERY:
            self.verify()
        elif moved:
            self._write_anchor()

    def _write_anchor(self) -> None:
        assert self._key is not None
        with self._vlock:
            heads = dict(self._heads)
        ch.write_anchor(self._key, self.anchor_file, self.key_file, heads)

    def _append(self, con: Any, table: str, sql: str, args: tuple[Any, ...]) -> int:
        """Insert a row into a chained table (inside ``con``'s transaction, under the write
        lock) with its chain value, after verifying the rows before it."""
        rid = self._insert(con, sql, args)
        if self._key is None:
            return rid
        with self._vlock:
            self._refuse_if_broken()
            try:
                prev = self._read_new(con, table, self._head(table), below=rid).head.chain
            except ch.ChainError as e:
                self._broken = str(e)
                raise
        cols = ", ".join(ch.CHAINED[table])
        row = con.execute(f"SELECT {cols} FROM {table} WHERE id = ?", (rid,)).fetchone()
        con.execute(
            f"UPDATE {table} SET chain = ? WHERE id = ?",
            (ch.link(self._key, table, prev, row), rid),
        )
        return rid

    def verify(self) -> dict[str, Any]:
        """Verify the whole audit log and the releases (their chains, this host's anchor, and
        that nothing this process verified before is gone or changed); move the anchor
        forward. :class:`~.chain.ChainError` (remembered: every request refused after it)."""
        if self._key is None:
            with self.db() as con:
                n = con.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
            return {"ok": True, "chained": False, "entries": int(n)}
        try:
            anchor = ch.read_anchor(self._key, self.anchor_file)  # before the rows: never newer
        except ch.ChainError as e:
            self._broken = str(e)
            raise
        with self.db() as con:
            with self._vlock:
                self._refuse_if_broken()
                try:
                    got = {t: self._verify_table(con, t, anchor) for t in ch.CHAINED}
                except ch.ChainError as e:
                    self._broken = str(e)
                    raise
                for t, v in got.items():
                    self._heads[t] = v.head
                    self._revoked |= v.revoked
                self._full_at = time.monotonic()
        self._write_anchor()
        return {
            "ok": True,
            "chained": True,
            "entries": got["audit"].head.count,
            "releases": got["releases"].head.count,
            "chain": got["audit"].head.chain,
        }

    def _verify_table(self, con: Any, table: str, anchor: ch.Anchor | None) -> ch.Verified:
        assert self._key is not None
        cols = ", ".join(ch.CHAINED[table])
        rows = con.execute(f"SELECT {cols}, chain FROM {table} ORDER BY id").fetchall()
        start = ch.empty_head(self._key, table)
        got = ch.extend(self._key, table, start, rows)
        chains = [str(r[-1]) for r in rows]
        ch.check_anchor(anchor, table, chains, start.chain)
        seen = self._heads.get(table)
        if (
            seen is not None
            and seen.count
            and (len(chains) < seen.count or chains[seen.count - 1] != seen.chain)
        ):
            raise ch.bad_row(
                table, seen.last_id, "a row this process verified was removed or rewritten"
            )
        return got

    def audit_state(self) -> dict[str, Any]:
        """What this process verified of the audit log (cheap: no full verification)."""
        if self._key is None:
            with self.db() as con:
                n = con.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
            return {"chained": False, "entries": int(n)}
        with self._vlock:
            self._refuse_if_broken()
            return {"chained": True, "entries": self._head("audit").count}

    def _log_revocation(self, token_id: int) -> str | None:
        """What a token's listing says when only the audit log records its revocation."""
        return "recorded in the audit log" if self.revoked_in_log(int(token_id)) else None

    def revoked_in_log(self, token_id: int) -> bool:
        """Whether the verified audit log records this token's revocation."""
        with self._vlock:
            return token_id in self._revoked

    # -- the shared steward --------------------------------------------------------------------

    def first_steward(
        self, hashed: str, wrapped: bytes, public_hex: str, fingerprint: str
    ) -> int | None:
        """The steward user and their first token, made only when there is no user yet (one
        transaction under the write lock: two processes starting at once make one steward);
        returns the token's id, or None when a steward existed."""
        with self.db() as con:
            if con.execute("SELECT COUNT(*) FROM users").fetchone()[0] > 0:
                return None
            uid = self._insert_user(con, "steward", "steward", [])
            tid = self._insert_token(con, uid, hashed, wrapped)
            con.execute(
                "INSERT INTO meta (key, value, mac) VALUES ('steward.pub', ?, ?)",
                (public_hex, self._mac("meta", "steward.pub", public_hex)),
            )
            self._audit(
                con,
                "steward",
                "steward",
                "service started",
                "steward",
                "first token made",
                {"token": tid, "steward_key": fingerprint},
            )
            return tid

    def steward_public(self) -> str | None:
        """The steward's public key (hex) as the database keeps it (None before the first
        start wrote it, or on an SQLite store made before it was kept there)."""
        with self.db() as con:
            row = con.execute("SELECT value, mac FROM meta WHERE key = 'steward.pub'").fetchone()
        if row is None:
            return None
        self._check(row[1], "meta", "steward.pub", row[0])
        return str(row[0])

    # -- users and tokens -------------------------------------------------------------------

    def has_users(self) -> bool:
        with self.db() as con:
            return con.execute("SELECT COUNT(*) FROM users").fetchone()[0] > 0

    def _insert_user(self, con: Any, name: str, role: str, secrets: list[str]) -> int:
        text = json.dumps(secrets)
        uid = self._insert(
            con,
            "INSERT INTO users (name, role, secrets, created) VALUES (?, ?, ?, ?)",
            (name, role, text, now()),
        )
        if self._key is not None:
            con.execute(
                "UPDATE users SET mac = ? WHERE id = ?",
                (self._user_mac(uid, name, role, text), uid),
            )
        return uid

    def _insert_token(self, con: Any, user_id: int, hashed: str, wrapped: bytes | None) -> int:
        tid = self._insert(
            con,
            "INSERT INTO tokens (user_id, hash, created, wrapped) VALUES (?, ?, ?, ?)",
            (user_id, hashed, now(), wrapped),
        )
        if self._key is not None:
            con.execute(
                "UPDATE tokens SET mac = ? WHERE id = ?",
                (self._token_mac(tid, user_id, hashed, None, wrapped), tid),
            )
        return tid

    def add_user(self, name: str, role: str, secrets: list[str]) -> int:
        with self.db() as con:
            return self._insert_user(con, name, role, secrets)

    def user(self, name: str) -> dict[str, Any] | None:
        with self.db() as con:
            row = con.execute(
                "SELECT id, name, role, secrets, created, mac FROM users WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            return None
        self._check(row[5], "user", row[0], row[1], row[2], row[3])
        return _user(row)

    def users(self) -> list[dict[str, Any]]:
        with self.db() as con:
            rows = con.execute(
                "SELECT id, name, role, secrets, created, mac FROM users ORDER BY id"
            ).fetchall()
            tokens = con.execute(
                "SELECT id, created, revoked, hash, wrapped, mac, user_id FROM tokens ORDER BY id"
            ).fetchall()  # one query for every user's tokens
        by_user: dict[Any, list[dict[str, Any]]] = {}
        for t in tokens:
            by_user.setdefault(t[6], []).append(
                {
                    "id": t[0],
                    "created": t[1],
                    "revoked": t[2] or self._log_revocation(t[0]),
                    "verified": self._valid(t[5], "token", t[0], t[6], t[3], t[2], t[4]),
                }
            )
        users = []
        for r in rows:
            u = _user(r)
            u["verified"] = self._valid(r[5], "user", r[0], r[1], r[2], r[3])
            u["tokens"] = by_user.get(u["id"], [])
            users.append(u)
        return users

    def _valid(self, mac: Any, kind: str, *fields: Any) -> bool:
        try:
            self._check(mac, kind, *fields)
        except TamperedError:
            return False
        return True

    def add_token(self, user_id: int, hashed: str, wrapped: bytes | None) -> int:
        with self.db() as con:
            return self._insert_token(con, user_id, hashed, wrapped)

    def by_token(self, hashed: str) -> dict[str, Any] | None:
        """The live (not revoked) token with this hash, with its user (both rows' MACs
        checked: :class:`TamperedError`)."""
        with self.db() as con:
            moved = self._advance(con)
            row = con.execute(
                "SELECT t.id, t.wrapped, u.id, u.name, u.role, u.secrets, u.created, t.mac,"
                " t.hash, u.mac FROM tokens t JOIN users u ON u.id = t.user_id"
                " WHERE t.hash = ? AND t.revoked IS NULL",
                (hashed,),
            ).fetchone()
        self._after_read(moved)
        if row is None:
            return None
        self._check(row[7], "token", row[0], row[2], row[8], None, row[1])
        self._check(row[9], "user", row[2], row[3], row[4], row[5])
        if self.revoked_in_log(int(row[0])):  # its row restored to before the revocation
            return None
        return {"token_id": row[0], "wrapped": row[1], **_user(row[2:])}

    def token_owner(self, token_id: int) -> dict[str, Any] | None:
        with self.db() as con:
            row = con.execute(
                "SELECT t.id, t.revoked, u.name, u.role FROM tokens t JOIN users u"
                " ON u.id = t.user_id WHERE t.id = ?",
                (token_id,),
            ).fetchone()
        if row is None:
            return None
        revoked = row[1]
        if revoked is None and self.revoked_in_log(int(row[0])):
            revoked = "recorded in the audit log"
        return {"id": row[0], "revoked": revoked, "user": row[2], "role": row[3]}

    def revoke(self, token_id: int, by: str, role: str, owner: str) -> None:
        """Revoke a token and record it in the audit log, in one transaction (the log's record
        is what refuses the token should its row be restored: :meth:`by_token`)."""
        with self.db() as con:
            when = now()
            con.execute(
                "UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", (when, token_id)
            )
            if self._key is not None:
                row = con.execute(
                    "SELECT id, user_id, hash, revoked, wrapped FROM tokens WHERE id = ?",
                    (token_id,),
                ).fetchone()
                if row is not None:
                    con.execute(
                        "UPDATE tokens SET mac = ? WHERE id = ?", (self._token_mac(*row), token_id)
                    )
            con.execute("DELETE FROM sessions WHERE token_id = ?", (token_id,))
            self._audit(con, by, role, "revoke token", owner, "done", {"token": token_id})

    def live_steward_tokens(self) -> int:
        """The steward tokens neither revoked in their rows nor in the audit log."""
        with self.db() as con:
            ids = con.execute(
                "SELECT t.id FROM tokens t JOIN users u ON u.id = t.user_id"
                " WHERE u.role = 'steward' AND t.revoked IS NULL"
            ).fetchall()
        return sum(1 for (tid,) in ids if not self.revoked_in_log(int(tid)))

    # -- sessions ---------------------------------------------------------------------------

    def add_session(self, hashed: str, token_id: int, csrf: str, wrapped: bytes | None) -> None:
        expires = time.time() + SESSION_SECONDS
        with self.db() as con:
            con.execute("DELETE FROM sessions WHERE expires < ?", (time.time(),))
            con.execute(
                "INSERT INTO sessions (hash, token_id, csrf, expires, wrapped, mac)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    hashed,
                    token_id,
                    csrf,
                    expires,
                    wrapped,
                    self._mac("session", hashed, token_id, csrf, repr(expires), wrapped),
                ),
            )

    def session(self, hashed: str) -> dict[str, Any] | None:
        """The live session with this hash, its token and user (the three rows' MACs checked:
        :class:`TamperedError`)."""
        with self.db() as con:
            moved = self._advance(con)
            row = con.execute(
                "SELECT s.csrf, s.wrapped, t.id, u.id, u.name, u.role, u.secrets, u.created,"
                " s.expires, s.mac, t.hash, t.wrapped, t.mac, u.mac"
                " FROM sessions s JOIN tokens t ON t.id = s.token_id JOIN users u"
                " ON u.id = t.user_id WHERE s.hash = ? AND s.expires > ? AND t.revoked IS NULL",
                (hashed, time.time()),
            ).fetchone()
        self._after_read(moved)
        if row is None:
            return None
        self._check(row[9], "session", hashed, row[2], row[0], repr(float(row[8])), row[1])
        self._check(row[12], "token", row[2], row[3], row[10], None, row[11])
        self._check(row[13], "user", row[3], row[4], row[5], row[6])
        if self.revoked_in_log(int(row[2])):  # its token's row restored to before the revocation
            return None
        return {"csrf": row[0], "session_wrapped": row[1], "token_id": row[2], **_user(row[3:])}

    def token_wrapped(self, token_id: int) -> bytes | None:
        with self.db() as con:
            row = con.execute("SELECT wrapped FROM tokens WHERE id = ?", (token_id,)).fetchone()
        return None if row is None else row[0]

    def end_session(self, hashed: str) -> None:
        with self.db() as con:
            con.execute("DELETE FROM sessions WHERE hash = ?", (hashed,))

    # -- plans awaiting approval --------------------------------------------------------------

    def add_pending(self, secret: str, file: str, user: str, plan: str | None = None) -> int:
        """A plan awaiting review: its file's name in ``DIR/pending`` and its JSON text (so that
        another host, whose ``pending`` lacks the file, can review and approve it)."""
        with self.db() as con:
            pid = self._insert(
                con,
                "INSERT INTO pending (secret, file, uploaded_by, time, status, plan)"
                " VALUES (?, ?, ?, ?, 'pending', ?)",
                (secret, file, user, now(), plan),
            )
            if self._key is not None:
                con.execute(
                    "UPDATE pending SET mac = ? WHERE id = ?",
                    (self._mac("pending", pid, secret, file, user, plan), pid),
                )
            return pid

    def pending(self, pid: int | None = None) -> list[dict[str, Any]]:
        where, args = ("WHERE id = ?", (pid,)) if pid is not None else ("", ())
        with self.db() as con:
            rows = con.execute(
                "SELECT id, secret, file, uploaded_by, time, status, name, plan, mac FROM pending"
                f" {where} ORDER BY id",
                args,
            ).fetchall()
        keys = ("id", "secret", "file", "uploaded_by", "time", "status", "name", "plan")
        out = []
        for r in rows:
            row = dict(zip(keys, r[:8], strict=True))
            row["verified"] = self._valid(r[8], "pending", r[0], r[1], r[2], r[3], r[7])
            out.append(row)
        return out

    def settle_pending(self, pid: int, status: str, name: str | None) -> None:
        with self.db() as con:
            con.execute("UPDATE pending SET status = ?, name = ? WHERE id = ?", (status, name, pid))

    # -- releases and the audit log ------------------------------------------------------------

    def add_release(
        self, ledger_id: int, user: str, secret: str, dataset: str, plan: str, body: dict[str, Any]
    ) -> int:
        with self.db() as con:
            return self._append(
                con,
                "releases",
                'INSERT INTO releases (ledger_id, "user", secret, dataset, plan, time, body)'
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (ledger_id, user, secret, dataset, plan, body.get("time", now()), json.dumps(body)),
            )

    def releases(self, user: str | None = None, rid: int | None = None) -> list[dict[str, Any]]:
        where, args = [], []
        if user is not None:
            where.append('"user" = ?')
            args.append(user)
        if rid is not None:
            where.append("id = ?")
            args.append(rid)
        clause = ("WHERE " + " AND ".join(where)) if where else ""
        with self.db() as con:
            rows = con.execute(
                f'SELECT id, "user", body FROM releases {clause} ORDER BY id', args
            ).fetchall()
        return [{**json.loads(r[2]), "id": r[0], "user": r[1]} for r in rows]

    def audit(
        self,
        user: str,
        role: str,
        action: str,
        subject: str,
        outcome: str,
        detail: dict[str, Any] | None = None,
    ) -> None:
        with self.db() as con:
            self._audit(con, user, role, action, subject, outcome, detail)

    def _audit(
        self,
        con: Any,
        user: str,
        role: str,
        action: str,
        subject: str,
        outcome: str,
        detail: dict[str, Any] | None = None,
    ) -> None:
        self._append(
            con,
            "audit",
            'INSERT INTO audit (time, "user", role, action, subject, outcome, detail)'
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (now(), user, role, action, subject, outcome, json.dumps(detail or {})),
        )

    def events(self, limit: int = 500) -> list[dict[str, Any]]:
        with self.db() as con:
            rows = con.execute(
                'SELECT id, time, "user", role, action, subject, outcome, detail FROM audit'
                " ORDER BY id DESC LIMIT ?",
                (limit,),
            ).fetchall()
        keys = ("id", "time", "user", "role", "action", "subject", "outcome")
        return [{**dict(zip(keys, r[:7], strict=True)), "detail": json.loads(r[7])} for r in rows]


def _user(row: Any) -> dict[str, Any]:
    return {
        "id": row[0],
        "name": row[1],
        "role": row[2],
        "secrets": json.loads(row[3]),
        "created": row[4],
    }


def _plain(value: Any) -> Any:
    """A field as the MAC covers it (bytes by their SHA-256)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "sha256:" + hashlib.sha256(bytes(value)).hexdigest()
    return value


def _check_value(key: bytes) -> str:
    """What the database keeps to tell a host holding the wrong key (not the key)."""
    return hmac.new(key, b"distprivacy-service|key check", hashlib.sha256).hexdigest()


def _make_key(path: Path) -> bytes:
    """The rows' MAC key: a new one written to ``path`` (0600, exclusive), or the one a process
    on the same state directory wrote a moment ago."""
    key = _secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.hex().encode() + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    return key


def _read_key(path: Path) -> bytes:
    if not path.is_file() or path.is_symlink():
        raise StoreError(
            f"{path.name} is not in the state directory but the database holds the service's "
            f"users: copy {path.name} (with ledger.db.key and ledger.db.anchor, once a secret is "
            "declared) from the state directory of a host already serving this database"
        )
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        key = b""
    if len(key) != 32:
        raise StoreError(f"{path.name} in the state directory is not a 32-byte key")
    return key
