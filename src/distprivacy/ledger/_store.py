"""The ledger's file: one SQLite database (the standard library's :mod:`sqlite3`, WAL mode,
mode 0600) — its tables, opening and checking it, creating a ledger with its key and anchor,
the write lock and the checkpoint that makes a commit durable (see :mod:`distprivacy.ledger`).
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distprivacy.ledger._anchor import ANCHORED, anchor_path, write_anchor
from distprivacy.ledger._chain import (
    BUSY_TIMEOUT,
    LEDGER_FORMAT,
    LEGACY_SCHEMA,
    SCHEMA_VERSION,
    genesis3,
    head_mac,
    private_umask,
    sql_error,
)
from distprivacy.ledger._entry import LedgerError
from distprivacy.ledger._keys import create_key, key_path
from distprivacy.ledger._registry import REGISTRY_SCHEMA, append_event
from distprivacy.ledger._steward import StewardKey

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger


_JITTER = random.SystemRandom()  # for back-off delays only

#: The tables of a ledger of secrets (schema 3): its metadata, the release rows (with the
#: number of the steward's events in force when each was recorded) and the steward's tables
#: (:mod:`._registry`). A schema-2 ledger had a ``budget`` table instead of the events.
SCHEMA = (
    "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
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
    " events INTEGER NOT NULL,"
    " chain TEXT NOT NULL)",
    "CREATE INDEX releases_by_dataset ON releases (fingerprint, property, id)",
    *REGISTRY_SCHEMA,
)


def connect(p: Path, mode: str) -> sqlite3.Connection:
    """A connection to the database at ``p`` (``mode``: ``rw``), autocommit, waiting up to
    :data:`BUSY_TIMEOUT` for another writer."""
    uri = p.resolve().as_uri() + f"?mode={mode}"
    con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
    con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    return con


def private_companions(p: Path) -> None:
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


def open_database(p: Path) -> sqlite3.Connection:
    """A connection to the existing ledger file ``p``; one line when it does not exist, is not
    a regular file or not an SQLite database, or cannot be opened."""
    if not p.is_file():
        if p.exists():
            raise LedgerError(f"{str(p)!r} is not a regular file; a ledger is a file")
        raise LedgerError(
            f"no ledger at {str(p)!r}; create one with `distprivacy ledger init {str(p)!r}`"
        )
    if not os.access(p, os.R_OK):
        raise LedgerError(f"cannot read the ledger {str(p)!r}: permission denied")
    private_companions(p)
    try:
        with private_umask():
            con = connect(p, "rw")
    except sqlite3.Error as e:
        raise sql_error(p, e, "open the ledger") from None
    # The header is read by SQLite, never through a descriptor of our own: closing any other
    # descriptor of the file drops every POSIX lock this process holds on it, including the
    # locks of another thread's SQLite connection (two service threads, issue 34).
    try:
        con.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError:
        con.close()
        raise LedgerError(
            f"{str(p)!r} is not a distprivacy ledger (not an SQLite database)"
        ) from None
    return con


def open_store(p: Path, database: str | None) -> Any:
    """The ledger's connection: the SQLite file ``p`` (:func:`open_database`), or the
    PostgreSQL database ``database`` (:mod:`._postgres`), refused in one line when its commits
    are not durable (``synchronous_commit`` or ``fsync`` off: a release could be answered, then
    lost with the server)."""
    if database is None:
        return open_database(p)
    from distprivacy.ledger._postgres import connect_postgres, redact

    con = connect_postgres(database)
    try:
        if not con.durable_commits():
            raise LedgerError(
                f"the database {redact(database)!r} does not wait for its disk at COMMIT "
                "(synchronous_commit or fsync is off): a release could be answered and then "
                "lost; set synchronous_commit = on and fsync = on"
            )
        if "ledger_meta" not in con.tables():
            raise LedgerError(
                f"the database {redact(database)!r} holds no distprivacy ledger; create one "
                "with Ledger.init(..., database=URL), as the release service does on its first "
                "secret"
            )
    except BaseException:
        con.close()
        raise
    return con


def table_names(con: Any) -> set[str]:
    """The tables of the ledger's database (SQLite's ``sqlite_master``, or PostgreSQL's
    catalogue for the current schema)."""
    if hasattr(con, "tables"):
        return set(con.tables())
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master")}


def check_schema(con: sqlite3.Connection, path: Path) -> int:
    """The ledger's schema version (2 or 3), after checking it is a distprivacy ledger in WAL
    mode with the tables of its version (one line otherwise)."""
    name = repr(str(path))
    try:
        tables = table_names(con)
        fmt = None
        if "ledger_meta" in tables:
            fmt = con.execute("SELECT value FROM ledger_meta WHERE key = 'format'").fetchone()
    except sqlite3.DatabaseError as e:
        if isinstance(e, sqlite3.OperationalError):
            raise sql_error(path, e, "open the ledger") from None
        raise LedgerError(f"{name} is not a distprivacy ledger ({e})") from None
    if fmt is None or fmt[0] != LEDGER_FORMAT or "releases" not in tables:
        raise LedgerError(f"{name} is an SQLite database but not a distprivacy ledger")
    v = con.execute("SELECT version FROM schema_version").fetchall()
    versions = [r[0] for r in v]
    if versions not in ([SCHEMA_VERSION], [LEGACY_SCHEMA]):
        raise LedgerError(
            f"{name} has ledger schema version {v[0][0] if v else None!r}; this library "
            f"reads versions {LEGACY_SCHEMA} and {SCHEMA_VERSION}"
        )
    need = {"budget"} if versions == [LEGACY_SCHEMA] else {"events", "approved_plans"}
    if not need <= tables:
        raise LedgerError(f"{name} is an SQLite database but not a distprivacy ledger")
    mode = con.execute("PRAGMA journal_mode").fetchone()[0]
    if str(mode).lower() != "wal":
        raise LedgerError(f"{name} is not in WAL mode (journal mode {mode!r})")
    return int(versions[0])


def meta(con: sqlite3.Connection, path: Path, key: str) -> str:
    """A ``ledger_meta`` value that every ledger has (one line when it is missing)."""
    row = con.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
    if row is None or not isinstance(row[0], str):
        raise LedgerError(f"{str(path)!r} has no {key} (a damaged ledger)")
    return row[0]


def created(con: sqlite3.Connection) -> str:
    """When the ledger was created ("" when it does not say: its chain then fails)."""
    row = con.execute("SELECT value FROM ledger_meta WHERE key = 'created'").fetchone()
    return "" if row is None else str(row[0])


def anchored(con: sqlite3.Connection) -> bool:
    """Whether the ledger records that it has an anchor (:mod:`._anchor`)."""
    row = con.execute("SELECT 1 FROM ledger_meta WHERE key = ?", (ANCHORED,)).fetchone()
    return row is not None


def create(
    p: Path,
    steward: StewardKey,
    secret: str,
    first: dict[str, Any],
    database: str | None = None,
) -> None:
    """Create a ledger of secrets at ``p`` (mode 0600, created exclusively) — or, with
    ``database``, in that empty PostgreSQL database (:mod:`._postgres`) —, its key
    (``<p>.key``) and its anchor (``<p>.anchor``), with the signed event of its first secret
    (``first``: its checked payload). Everything created is removed again when any step
    fails (a PostgreSQL transaction that did not commit leaves nothing)."""
    if not p.parent.is_dir():
        raise LedgerError(f"the directory of {str(p)!r} does not exist")
    if key_path(p).exists():
        raise LedgerError(f"{str(key_path(p))!r} already exists; a new ledger needs a new key")
    if anchor_path(p).exists() or anchor_path(p).is_symlink():
        raise LedgerError(
            f"{str(anchor_path(p))!r} already exists (the anchor of an earlier ledger?); "
            "a new ledger needs a new anchor: remove it, or choose another path"
        )
    ours = (".key", ".anchor") if database is not None else ("", "-wal", "-shm", ".key", ".anchor")
    if database is None:
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise LedgerError(f"{str(p)!r} already exists; a new ledger needs a new file") from None
        except OSError as e:
            raise sql_error(p, e, "create the ledger") from None
        os.close(fd)
    try:
        key = create_key(p)
        if database is None:
            with private_umask():
                con = connect(p, "rw")
        else:
            from distprivacy.ledger._postgres import connect_postgres

            con = connect_postgres(database)
        try:
            _fill(con, p, key, steward, secret, first, database)
        finally:
            con.close()
    except BaseException as exc:
        for suffix in ours:
            Path(str(p) + suffix).unlink(missing_ok=True)
        if isinstance(exc, sqlite3.Error | OSError):
            raise sql_error(p, exc, "create the ledger") from None
        raise


def _fill(
    con: Any,
    p: Path,
    key: bytes,
    steward: StewardKey,
    secret: str,
    first: dict[str, Any],
    database: str | None,
) -> None:
    """The new ledger's tables, metadata and first event, in one transaction of ``con``; its
    anchor written before the commit (never missing after it)."""
    from distprivacy._version import __version__

    when = datetime.now(UTC).isoformat(timespec="seconds")
    ledger_id = os.urandom(16).hex()
    public = steward.public
    if database is None:
        if con.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
            raise LedgerError(f"cannot put {str(p)!r} in WAL mode")
    elif not con.durable_commits():
        raise LedgerError(
            "the database does not wait for its disk at COMMIT (synchronous_commit or fsync "
            "is off): a release could be answered and then lost; set both on"
        )
    con.execute("BEGIN IMMEDIATE")
    if database is not None and "ledger_meta" in table_names(con):
        con.execute("ROLLBACK")
        from distprivacy.ledger._postgres import redact

        raise LedgerError(
            f"the database {redact(database)!r} already holds a distprivacy ledger; a new "
            "ledger needs an empty database (or schema)"
        )
    for stmt in SCHEMA:
        con.execute(stmt)
    genesis = genesis3(key, when, ledger_id, public.hex)
    event = append_event(con, steward, ledger_id, public, "secret", secret, first)
    events = f"1:{event.digest(ledger_id)}"
    con.executemany(
        "INSERT INTO ledger_meta (key, value) VALUES (?, ?)",
        [
            ("format", LEDGER_FORMAT),
            ("library_version", __version__),
            ("created", when),
            ("ledger_id", ledger_id),
            ("steward_public_key", public.hex),
            ("head", head_mac(key, 0, genesis, None, anchored=True, events=events)),
            (ANCHORED, "1"),
        ],
    )
    con.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    write_anchor(key, p, 0, genesis)  # before the commit: never missing after it
    con.execute("COMMIT")


# -- the write lock and durability -----------------------------------------------------------


def data_version(con: sqlite3.Connection) -> int:
    """Changes whenever another connection commits (``PRAGMA data_version``)."""
    return int(con.execute("PRAGMA data_version").fetchone()[0])


def begin_immediate(ledger: Ledger) -> None:
    """``BEGIN IMMEDIATE``, polling every 50 ms while another process writes, and reporting
    the wait to ``ledger.on_wait``. It gives up only when the ledger made no progress for
    :data:`BUSY_TIMEOUT` s (a stuck holder): while other releases are being recorded
    meanwhile, contention costs latency, never a refusal."""
    con = ledger._con
    start = time.monotonic()
    con.execute("PRAGMA busy_timeout=50")
    try:
        seen = data_version(con)
        while True:
            try:
                con.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:
                text = str(e).lower()
                if "locked" not in text and "busy" not in text:
                    raise
                now = data_version(con)
                if now != seen:  # another process committed: progress, not a stuck holder
                    seen, start = now, time.monotonic()
                waited = time.monotonic() - start
                if waited > BUSY_TIMEOUT:
                    raise
                if ledger.on_wait is not None:
                    ledger.on_wait(waited, BUSY_TIMEOUT)
                time.sleep(_JITTER.uniform(0.025, 0.05))
    finally:
        con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")


@contextmanager
def immediate(ledger: Ledger) -> Iterator[sqlite3.Connection]:
    """The write lock: ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception)."""
    con = ledger._con
    try:
        begin_immediate(ledger)
    except sqlite3.Error as e:
        raise sql_error(ledger.path, e, "write to the ledger") from None
    try:
        yield con
    except BaseException as exc:
        with contextlib.suppress(sqlite3.Error):
            con.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise sql_error(ledger.path, exc, "write to the ledger") from None
        raise
    try:
        con.execute("COMMIT")
    except sqlite3.Error as e:
        with contextlib.suppress(sqlite3.Error):
            con.execute("ROLLBACK")
        raise sql_error(ledger.path, e, "write to the ledger") from None


def checkpoint(ledger: Ledger) -> None:
    """Copy the WAL into the main file and fsync it — ``PRAGMA wal_checkpoint(PASSIVE)`` (it
    waits for no one), its result checked and retried, with back-off, while a reader's older
    snapshot or another checkpoint holds it back; at most :data:`BUSY_TIMEOUT` s.

    Done when every frame up to the WAL's end as first seen (which holds this release's
    commit) is copied, or when the WAL has restarted (SQLite restarts it only once every frame
    of it is in the main file)."""
    start, delay, target = time.monotonic(), 0.001, None
    while True:
        busy, log, done = ledger._con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if not busy and log >= 0:
            target = log if target is None else target
            if done >= target or log < target:
                return
        if time.monotonic() - start > BUSY_TIMEOUT:
            raise LedgerError(
                f"another process kept a read transaction open on the ledger for more than "
                f"{BUSY_TIMEOUT:g} s, so the release could not be copied from its -wal file "
                "into the ledger (close that reader)"
            )
        time.sleep(delay)
        delay = min(2 * delay, 0.05)
