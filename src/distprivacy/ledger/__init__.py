"""A privacy ledger: every release of a secret, recorded before it is revealed — and a record
that cannot be edited, shortened or re-sealed without the ledger's key, nor a steward's
decision added or changed without the steward's.

The ledger is one SQLite file (WAL mode, mode 0600; :mod:`._store`) and its key, ``L.db.key``
(32 random bytes, 0600; :mod:`._keys`). A **steward** declares **secrets** — a protected
property of a population, with its **budget**, a privacy target (:mod:`._budget`) —, registers
dataset files and approves plans, each a signed event (Ed25519; :mod:`._steward`,
:mod:`._registry`, :mod:`._decisions`). Releasers name a registered dataset and an approved
plan (:meth:`Ledger.release`, :mod:`._release`); every release under a secret composes with
every other by exact joint Gaussian accounting (:mod:`._compose`) and is recorded before it is
shown (:meth:`Ledger.record`, :mod:`._record`), or refused — :class:`BudgetExceededError`, the
file byte for byte unchanged — when the cumulative guarantee would not meet the budget.

Each release row holds its plan, **encrypted** under the key (its fitted moments are exact
population statistics), the mechanism, the statistics' names, the guarantee, the noise, the
released values and the cumulative guarantee after it; a keyed **hash chain** covers every row
and the head (count, last chain value, the steward's events, the anchor's record) is MACed
(:mod:`._chain`). Beside the key, ``L.db.anchor`` (:mod:`._anchor`) counts the rows again, so
that a ledger older than its anchor is caught. :meth:`Ledger.verify` (:mod:`._verify`)
recomputes the chain, the events, the head, the anchor, every row's guarantee from its plan and
every running total; :meth:`Ledger.show` (:mod:`._show`) and :meth:`Ledger.backup`
(:mod:`._backup`) read it. A ledger of schema 2 (before secrets) opens read-only
(:mod:`._schema2`).

What it does not resist (docs/ledger.md): someone holding the key file can rewrite the release
rows consistently, anchor included; restoring older copies of the ledger *and* its anchor
together (with the key) rolls the budget back.
"""

from __future__ import annotations

from typing import Any

from distprivacy.ledger._budget import budget_from_dict, budget_to_dict
from distprivacy.ledger._chain import LEDGER_FORMAT, SCHEMA_VERSION, VerifyReport
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import (
    BudgetExceededError,
    LedgerEntry,
    LedgerError,
    LedgerTypeError,
)
from distprivacy.ledger._keys import key_path
from distprivacy.ledger._ledger import Ledger
from distprivacy.ledger._registry import ApprovedPlan, RegisteredDataset, Secret
from distprivacy.ledger._steward import StewardKey, StewardPublicKey

__all__ = [
    "LEDGER_FORMAT",
    "SCHEMA_VERSION",
    "ApprovedPlan",
    "BudgetExceededError",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "LedgerTypeError",
    "RegisteredDataset",
    "Secret",
    "StewardKey",
    "StewardPublicKey",
    "VerifyReport",
    "budget_from_dict",
    "budget_to_dict",
    "data_fingerprint",
    "key_path",
    "plan_composer",
]


def __getattr__(name: str) -> Any:
    """``data_fingerprint`` (:mod:`distprivacy.fingerprint`), imported on first use: it loads
    pandas, which no ledger command needs."""
    if name == "data_fingerprint":
        from distprivacy.fingerprint import data_fingerprint

        return data_fingerprint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
