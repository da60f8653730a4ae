"""The ledger's keyed hash chain, its head, and the one-line fault messages (see
:mod:`distprivacy.ledger`)."""

from __future__ import annotations

import hmac
import json
import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distprivacy.guarantee import Guarantee
from distprivacy.ledger._budget import budget_to_dict
from distprivacy.ledger._entry import LedgerError
from distprivacy.ledger._keys import mac
from distprivacy.targets import Target

#: The marker in the ``ledger_meta`` table of every distprivacy ledger.
LEDGER_FORMAT = "distprivacy-ledger"
#: The schema version this library writes and reads (2: keyed chain, encrypted plans).
SCHEMA_VERSION = 3
#: Ledgers of schema 2 (one budget, datasets identified by their values, plans sealed with the
#: ledger key) are still read and verified, never written (:mod:`distprivacy.ledger`).
LEGACY_SCHEMA = 2
#: A release row's fields, in the order the chain covers them (then ``chain`` itself).
FIELDS = (
    "id", "time", "fingerprint", "property", "property_text", "complemented", "plan_digest",
    "mechanism", "statistics", "guarantee", "noise_family", "noise_covariance",
    "release_values", "plan", "statistic_indices", "cumulative", "sketch", "unbounded",
)  # fmt: skip

#: How long a release waits for another process's transaction (seconds).
BUSY_TIMEOUT = 60.0


@dataclass(frozen=True)
class VerifyReport:
    """What :meth:`Ledger.verify` found.

    Attributes
    ----------
    ok : bool
    releases : int
        Rows read.
    first_bad : int or None
        The id of the first row that fails (None when the fault is the budget or the head).
    reason : str
        Why it fails ("" when ``ok``).
    head : str
        The ledger's head (chain value of the last row): keep it elsewhere to notice a roll-back.
    """

    ok: bool
    releases: int
    first_bad: int | None
    reason: str
    head: str


def sql_error(
    path: Path, exc: BaseException, doing: str, outcome: str = "nothing was recorded"
) -> LedgerError:
    """One line naming the cause of an SQLite or OS failure (the ledger is unchanged)."""
    text = str(exc).lower()
    if "full" in text or "no space" in text or getattr(exc, "errno", None) == 28:
        why = "the disk is full"
    elif "readonly" in text or "read-only" in text or "permission" in text:
        why = f"{str(path)!r} or its directory is read-only"
    elif "locked" in text or "busy" in text:
        why = f"another process held the ledger for more than {BUSY_TIMEOUT:g} s"
    elif "unable to open" in text:
        why = (
            "the file or its -wal/-shm companions cannot be opened (check the directory's "
            "permissions)"
        )
    elif "too large" in text or "file size" in text:
        why = "a file-size limit was reached"
    else:
        why = f"{type(exc).__name__}: {exc}"
    return LedgerError(f"cannot {doing} {str(path)!r}: {why}; {outcome}")


@contextmanager
def private_umask() -> Iterator[None]:
    """New files (the database's -wal and -shm included) readable by the owner only."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def row_content(values: Sequence[Any]) -> bytes:
    """A row's fields, canonically, as the chain covers them."""
    return json.dumps(list(values), separators=(",", ":"), ensure_ascii=True).encode()


#: A schema-3 release row's fields: a schema-2 row's, then the number of the steward's events
#: in force when it was recorded (so that removing a later budget change is caught).
FIELDS3 = (*FIELDS, "events")


def genesis3(key: bytes, created: str, ledger_id: str, steward: str) -> str:
    """The first chain value of a schema-3 ledger: its id and its steward's public key."""
    body = json.dumps(
        [LEDGER_FORMAT, SCHEMA_VERSION, created, ledger_id, steward],
        separators=(",", ":"),
    )
    return mac(key, "chain", b"genesis3|" + body.encode())


def genesis2(key: bytes, budget: Target, created: str) -> str:
    body = json.dumps(
        [LEDGER_FORMAT, LEGACY_SCHEMA, created, budget_to_dict(budget)],
        sort_keys=True,
        separators=(",", ":"),
    )
    return mac(key, "chain", b"genesis|" + body.encode())


def head_mac(
    key: bytes,
    count: int,
    last: str,
    identity: Sequence[str] | None = None,
    anchored: bool = False,
    events: str | None = None,
) -> str:
    """The head's MAC: the number of rows, the last chain value, — once fixed — the columns
    that identify a dataset, and whether the ledger has an anchor (:mod:`._anchor`), so that
    editing or deleting either is caught. A ledger from before them has neither in its MAC."""
    body = f"{count}|{last}"
    if identity is not None:
        body += "|identity=" + json.dumps(list(identity), separators=(",", ":"))
    if anchored:
        body += "|anchored"
    if events is not None:  # schema 3: the steward's events (count and last digest)
        body += "|events=" + events
    return mac(key, "head", body.encode())


def same_mac(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def same_guarantee(a: Guarantee, b: Guarantee) -> bool:
    """Whether the stored running total ``b`` is the recomputed ``a``: the same μ, and the
    same (ε, δ) point — or, when ``b`` was stated at another δ (a ledger that stated every μ
    budget's total at δ = 0.001), a point on ``a``'s curve."""

    def close(x: float | None, y: float | None) -> bool:
        if x is None or y is None:
            return x is y
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))

    if not close(a.mu, b.mu):
        return False
    if close(a.delta, b.delta) and close(a.epsilon, b.epsilon):
        return True
    return math.isfinite(b.epsilon) and close(a.delta_at(b.epsilon), b.delta)


def unbounded_guarantee() -> Guarantee:
    """What is left after an exact release: nothing (μ = ∞, accuracy 1)."""
    return Guarantee(
        epsilon=math.inf,
        delta=1.0,
        theorem="an exact release (allow_exact): nothing about the dataset is hidden any more",
        mu=math.inf,
        curve="gdp",
        max_attack_accuracy=1.0,
        basis="none: the exact statistics were published",
        verified=True,
    )
