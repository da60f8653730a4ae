"""Backing up a ledger: a consistent, verified copy of the live ledger, its key and its anchor
(see :mod:`distprivacy.ledger`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from distprivacy.ledger._anchor import anchor_path
from distprivacy.ledger._chain import private_umask, sql_error
from distprivacy.ledger._entry import LedgerError
from distprivacy.ledger._keys import key_path
from distprivacy.ledger._verify import verify_ledger

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger


def refuse_directory_name(path: str | Path, what: str, example: str) -> None:
    """A new ledger file (or backup) at a path naming a directory (``new/``, ``new/.``) is
    refused: :class:`~pathlib.Path` would drop the slash and create a file ``new``."""
    from distprivacy.outputs import names_a_directory

    if names_a_directory(path):
        raise LedgerError(
            f"{str(path)!r} names a directory (it ends with a path separator, . or ..); give "
            f"{what} a file path, e.g. {str(Path(path) / example)!r}"
        )


def backup_ledger(ledger: Ledger, out: str | Path, *, force: bool = False) -> Path:
    """A consistent copy of the live ledger (SQLite's online backup API, WAL content
    included) at ``out``, with its key at ``<out>.key`` and its anchor at ``<out>.anchor``
    (:mod:`._anchor`; read before the copy, so never newer than it), all 0600; refuses
    existing files. Copying the main file alone while the ledger is in use can miss releases
    that are still in its -wal file. Restoring the three together rolls the ledger back to
    the copy: the anchor protects against restoring the ledger alone.

    The ledger is verified first (:func:`verify_ledger`): one that fails is not copied (a
    backup passes for a good ledger), unless ``force`` asks for a copy of the broken ledger
    for forensics — then a :class:`~distprivacy.exceptions.DistPrivacyWarning` says so. A
    failed copy removes what it created (and only that), and says why in one line."""
    if not isinstance(out, str | Path):
        raise LedgerError(f"a backup is a file path, got {type(out).__name__}")
    if not isinstance(force, bool):
        raise LedgerError(f"force must be True or False, got {force!r}")
    refuse_directory_name(out, "the backup", "ledger-backup.db")
    o = Path(out)
    for target in (o, key_path(o), anchor_path(o)):
        if target.exists() or target.is_symlink():
            raise LedgerError(f"{str(target)!r} already exists; back up to a new file")
    if not o.parent.is_dir():
        raise LedgerError(f"the directory of {str(o)!r} does not exist")
    report = verify_ledger(ledger)
    if not report.ok:
        where = f"at release {report.first_bad}" if report.first_bad else "at its head"
        broken = f"{str(ledger.path)!r} fails verification {where} ({report.reason})"
        if not force:
            raise LedgerError(
                f"{broken}: it is not backed up (a backup must be a ledger that verifies); "
                "to copy it anyway for forensics, add `force=True`"
            )
        import warnings

        from distprivacy.exceptions import DistPrivacyWarning

        warnings.warn(
            f"BROKEN LEDGER COPIED (forced): {broken}; the copy {str(o)!r} is for forensics "
            "only: never restore it or release from it",
            DistPrivacyWarning,
            stacklevel=3,
        )
    created: list[Path] = []
    anchor: bytes | None = None
    try:
        with contextlib.suppress(FileNotFoundError):  # none: a ledger from before anchors
            anchor = anchor_path(ledger.path).read_bytes()
        fd = os.open(o, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        created.append(o)
        os.close(fd)
        with private_umask():
            dst = sqlite3.connect(str(o))
        created += [Path(str(o) + "-wal"), Path(str(o) + "-shm")]
        try:
            if ledger.database is None:
                ledger._con.backup(dst)
            else:
                copy_rows(ledger, dst)
        finally:
            dst.close()
        created.append(key_path(o))
        _copy_private(key_path(ledger.path).read_bytes(), key_path(o))
        if anchor is not None:
            created.append(anchor_path(o))
            _copy_private(anchor, anchor_path(o))
    except (OSError, sqlite3.Error) as exc:
        for t in created:  # only what this backup made; a read-only disk refuses this too
            with contextlib.suppress(OSError):
                t.unlink(missing_ok=True)
        raise sql_error(o, exc, "back up the ledger to", "no backup was made") from None
    return o


#: The tables of a ledger of secrets, in the order a copy fills them.
TABLES = ("ledger_meta", "schema_version", "releases", "events", "approved_plans",
          "dataset_records")  # fmt: skip


def copy_rows(ledger: Ledger, dst: sqlite3.Connection) -> None:
    """A PostgreSQL ledger's rows, read on one snapshot, into the new SQLite file ``dst``: the
    backup is an ordinary ledger file (WAL mode, the same tables), which ``ledger verify``
    checks anywhere with the key and the anchor copied beside it."""
    from distprivacy.ledger._store import SCHEMA

    if dst.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
        raise sqlite3.OperationalError("cannot put the copy in WAL mode")
    dst.execute("BEGIN IMMEDIATE")
    for stmt in SCHEMA:
        dst.execute(stmt)
    ledger._con.execute("BEGIN")
    try:
        for table in TABLES:
            rows = ledger._con.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                dst.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    finally:
        ledger._con.execute("COMMIT")
    dst.execute("COMMIT")


def _copy_private(data: bytes, dst: Path) -> None:
    """``data`` into a new file ``dst`` (0600, created exclusively, fsynced)."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
