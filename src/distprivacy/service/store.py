"""The service's own database (``DIR/service.db``, SQLite, mode 0600): users, token hashes,
browser sessions, plans awaiting approval, the analysts' releases and the audit log.

The ledger (``DIR/ledger.db``) stays the record of the budget; this database says who asked
for what. Every function opens its own connection (the server's worker threads share nothing),
in WAL mode with a busy timeout, and commits before it returns.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " role TEXT NOT NULL CHECK (role IN ('steward', 'analyst')), secrets TEXT NOT NULL,"
    " created TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tokens (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL"
    " REFERENCES users(id), hash TEXT NOT NULL UNIQUE, created TEXT NOT NULL, revoked TEXT,"
    " wrapped BLOB)",
    "CREATE TABLE IF NOT EXISTS sessions (hash TEXT PRIMARY KEY, token_id INTEGER NOT NULL"
    " REFERENCES tokens(id), csrf TEXT NOT NULL, expires REAL NOT NULL, wrapped BLOB)",
    "CREATE TABLE IF NOT EXISTS pending (id INTEGER PRIMARY KEY, secret TEXT NOT NULL,"
    " file TEXT NOT NULL, uploaded_by TEXT NOT NULL, time TEXT NOT NULL,"
    " status TEXT NOT NULL, name TEXT)",
    "CREATE TABLE IF NOT EXISTS releases (id INTEGER PRIMARY KEY, ledger_id INTEGER NOT NULL,"
    " user TEXT NOT NULL, secret TEXT NOT NULL, dataset TEXT NOT NULL, plan TEXT NOT NULL,"
    " time TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY, time TEXT NOT NULL,"
    " user TEXT NOT NULL, role TEXT NOT NULL, action TEXT NOT NULL, subject TEXT NOT NULL,"
    " outcome TEXT NOT NULL, detail TEXT NOT NULL)",
)

#: How long a browser session lasts (seconds).
SESSION_SECONDS = 8 * 3600


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    """The database at ``path`` (created 0600 with its tables when missing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
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

    @contextmanager
    def db(self) -> Iterator[sqlite3.Connection]:
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

    # -- users and tokens -------------------------------------------------------------------

    def has_users(self) -> bool:
        with self.db() as con:
            return con.execute("SELECT COUNT(*) FROM users").fetchone()[0] > 0

    def add_user(self, name: str, role: str, secrets: list[str]) -> int:
        with self.db() as con:
            cur = con.execute(
                "INSERT INTO users (name, role, secrets, created) VALUES (?, ?, ?, ?)",
                (name, role, json.dumps(secrets), now()),
            )
            return int(cur.lastrowid or 0)

    def user(self, name: str) -> dict[str, Any] | None:
        with self.db() as con:
            row = con.execute(
                "SELECT id, name, role, secrets, created FROM users WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else _user(row)

    def users(self) -> list[dict[str, Any]]:
        with self.db() as con:
            rows = con.execute("SELECT id, name, role, secrets, created FROM users ORDER BY id")
            users = [_user(r) for r in rows.fetchall()]
            for u in users:
                u["tokens"] = [
                    {"id": t[0], "created": t[1], "revoked": t[2]}
                    for t in con.execute(
                        "SELECT id, created, revoked FROM tokens WHERE user_id = ? ORDER BY id",
                        (u["id"],),
                    )
                ]
        return users

    def add_token(self, user_id: int, hashed: str, wrapped: bytes | None) -> int:
        with self.db() as con:
            cur = con.execute(
                "INSERT INTO tokens (user_id, hash, created, wrapped) VALUES (?, ?, ?, ?)",
                (user_id, hashed, now(), wrapped),
            )
            return int(cur.lastrowid or 0)

    def by_token(self, hashed: str) -> dict[str, Any] | None:
        """The live (not revoked) token with this hash, with its user."""
        with self.db() as con:
            row = con.execute(
                "SELECT t.id, t.wrapped, u.id, u.name, u.role, u.secrets, u.created FROM tokens t"
                " JOIN users u ON u.id = t.user_id WHERE t.hash = ? AND t.revoked IS NULL",
                (hashed,),
            ).fetchone()
        if row is None:
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
        return {"id": row[0], "revoked": row[1], "user": row[2], "role": row[3]}

    def revoke(self, token_id: int) -> None:
        with self.db() as con:
            con.execute(
                "UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", (now(), token_id)
            )
            con.execute("DELETE FROM sessions WHERE token_id = ?", (token_id,))

    def live_steward_tokens(self) -> int:
        with self.db() as con:
            return int(
                con.execute(
                    "SELECT COUNT(*) FROM tokens t JOIN users u ON u.id = t.user_id"
                    " WHERE u.role = 'steward' AND t.revoked IS NULL"
                ).fetchone()[0]
            )

    # -- sessions ---------------------------------------------------------------------------

    def add_session(self, hashed: str, token_id: int, csrf: str, wrapped: bytes | None) -> None:
        with self.db() as con:
            con.execute("DELETE FROM sessions WHERE expires < ?", (time.time(),))
            con.execute(
                "INSERT INTO sessions (hash, token_id, csrf, expires, wrapped)"
                " VALUES (?, ?, ?, ?, ?)",
                (hashed, token_id, csrf, time.time() + SESSION_SECONDS, wrapped),
            )

    def session(self, hashed: str) -> dict[str, Any] | None:
        with self.db() as con:
            row = con.execute(
                "SELECT s.csrf, s.wrapped, t.id, u.id, u.name, u.role, u.secrets, u.created"
                " FROM sessions s JOIN tokens t ON t.id = s.token_id JOIN users u"
                " ON u.id = t.user_id WHERE s.hash = ? AND s.expires > ? AND t.revoked IS NULL",
                (hashed, time.time()),
            ).fetchone()
        if row is None:
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

    def add_pending(self, secret: str, file: str, user: str) -> int:
        with self.db() as con:
            cur = con.execute(
                "INSERT INTO pending (secret, file, uploaded_by, time, status)"
                " VALUES (?, ?, ?, ?, 'pending')",
                (secret, file, user, now()),
            )
            return int(cur.lastrowid or 0)

    def pending(self, pid: int | None = None) -> list[dict[str, Any]]:
        where, args = ("WHERE id = ?", (pid,)) if pid is not None else ("", ())
        with self.db() as con:
            rows = con.execute(
                f"SELECT id, secret, file, uploaded_by, time, status, name FROM pending {where}"
                " ORDER BY id",
                args,
            ).fetchall()
        keys = ("id", "secret", "file", "uploaded_by", "time", "status", "name")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def settle_pending(self, pid: int, status: str, name: str | None) -> None:
        with self.db() as con:
            con.execute("UPDATE pending SET status = ?, name = ? WHERE id = ?", (status, name, pid))

    # -- releases and the audit log ------------------------------------------------------------

    def add_release(
        self, ledger_id: int, user: str, secret: str, dataset: str, plan: str, body: dict[str, Any]
    ) -> int:
        with self.db() as con:
            cur = con.execute(
                "INSERT INTO releases (ledger_id, user, secret, dataset, plan, time, body)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (ledger_id, user, secret, dataset, plan, body.get("time", now()), json.dumps(body)),
            )
            return int(cur.lastrowid or 0)

    def releases(self, user: str | None = None, rid: int | None = None) -> list[dict[str, Any]]:
        where, args = [], []
        if user is not None:
            where.append("user = ?")
            args.append(user)
        if rid is not None:
            where.append("id = ?")
            args.append(rid)
        clause = ("WHERE " + " AND ".join(where)) if where else ""
        with self.db() as con:
            rows = con.execute(
                f"SELECT id, user, body FROM releases {clause} ORDER BY id", args
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
            con.execute(
                "INSERT INTO audit (time, user, role, action, subject, outcome, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (now(), user, role, action, subject, outcome, json.dumps(detail or {})),
            )

    def events(self, limit: int = 500) -> list[dict[str, Any]]:
        with self.db() as con:
            rows = con.execute(
                "SELECT id, time, user, role, action, subject, outcome, detail FROM audit"
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
