"""A ledger kept in PostgreSQL (``Ledger(path, database="postgresql://…")``): several service
processes, on one host or several, share one budget (docs/serve.md, issue 34).

The ledger's logic is written once, on a connection that speaks like :mod:`sqlite3`
(:mod:`distprivacy.postgres`): ``BEGIN`` is a snapshot to compose on; ``BEGIN IMMEDIATE``
takes the database's advisory transaction lock :data:`LOCK_ID` *without waiting* — when another
process holds it, ``database is locked`` is raised at once, so the ledger's polling writer
(:func:`~distprivacy.ledger._store.begin_immediate`) waits and backs off exactly as on SQLite,
and under the lock every statement reads the latest committed state; ``PRAGMA data_version`` is
a digest of the head's MAC, which every commit of the ledger moves (a release, a steward's
event, the first anchor); ``PRAGMA wal_checkpoint`` has nothing to do, since a database whose
commits are not durable is refused when the ledger is opened
(:func:`~distprivacy.ledger._store.open_store`).

The key and the anchor stay files beside ``path`` (0600): the database's administrator can read
the rows but not the plans' moments (encrypted under the key), and cannot edit them without the
chain failing. One database (or schema, chosen by the URL's ``options=-csearch_path=…``) holds
one ledger.
"""

from __future__ import annotations

from distprivacy.ledger._entry import LedgerError
from distprivacy.postgres import (
    PostgresConnection,
    PostgresUnavailableError,
    is_postgres_url,
    redact,
)

#: The advisory lock that serialises the ledger's writers within one database (a constant:
#: one database holds one ledger).
LOCK_ID = 0x6470_6C65_6467_6572 & 0x7FFF_FFFF_FFFF_FFFF  # "dpledger"
#: What ``PRAGMA data_version`` digests: the head's MAC.
VERSION_SQL = "SELECT value FROM ledger_meta WHERE key = 'head'"

__all__ = ["LOCK_ID", "connect_postgres", "is_postgres_url", "redact"]


def connect_postgres(url: str) -> PostgresConnection:
    """An open connection to the ledger's database ``url`` (one line when it cannot be made)."""
    try:
        return PostgresConnection(
            url, what="the ledger's database", lock_id=LOCK_ID, version_sql=VERSION_SQL
        )
    except PostgresUnavailableError as e:
        raise LedgerError(str(e)) from None
