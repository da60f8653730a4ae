"""Ledgers of schema 2 (before secrets): read, verified, shown and backed up, never written.

A schema-2 ledger has one budget (its ``budget`` table, covered by the chain's genesis) and
identified each dataset by the keyed identity of its values in the ledger's identity columns
(``ledger_meta`` key ``identity_columns``, covered by the head MAC). This library reads both
to verify and show such a ledger (tests/data/ledger_schema2); the code that wrote them — a
dataset's identity, its keyed sketch, the link to an earlier dataset — is gone with the
schema: a steward carries on with a ledger of secrets (`distprivacy ledger init`).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from distprivacy.ledger._budget import budget_from_dict
from distprivacy.ledger._entry import LedgerError
from distprivacy.targets import Target

#: The ``ledger_meta`` key of a schema-2 ledger's identity columns.
IDENTITY_KEY = "identity_columns"


def read_budget(con: sqlite3.Connection, path: Path) -> Target:
    """The one budget of a schema-2 ledger (one line when its row is malformed)."""
    rows = con.execute("SELECT kind, mu, epsilon, delta FROM budget").fetchall()
    if len(rows) != 1:
        raise LedgerError(f"{str(path)!r} has {len(rows)} budgets; a ledger has one")
    kind, mu, eps, dlt = rows[0]
    ok = kind in ("mu", "epsilon-delta") and all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool))
        for v in (mu, eps, dlt)
    )
    if not ok or (kind == "mu" and mu is None) or (kind != "mu" and None in (eps, dlt)):
        raise LedgerError(f"{str(path)!r} has a malformed budget row ({kind!r})")
    return budget_from_dict({"kind": kind, "mu": mu, "epsilon": eps, "delta": dlt})


def read_identity(con: sqlite3.Connection, path: Path) -> tuple[str, ...] | None:
    """A schema-2 ledger's identity columns, or None while not fixed (an empty ledger without
    declared ones, a ledger from before they existed, or a ledger of secrets)."""
    row = con.execute("SELECT value FROM ledger_meta WHERE key = ?", (IDENTITY_KEY,)).fetchone()
    if row is None:
        return None
    try:
        cols = json.loads(row[0])
    except (TypeError, ValueError):
        cols = None
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) and c for c in cols):
        raise LedgerError(
            f"{str(path)!r} has malformed identity columns; run `distprivacy ledger verify`"
        )
    return tuple(cols)
