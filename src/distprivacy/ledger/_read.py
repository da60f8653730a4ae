"""Reading a ledger's releases: its rows, as :class:`~distprivacy.ledger.LedgerEntry`
(the plan decrypted), oldest first (see :mod:`distprivacy.ledger`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from distprivacy._json import number
from distprivacy.guarantee import Guarantee
from distprivacy.ledger._chain import FIELDS, sql_error
from distprivacy.ledger._entry import LedgerEntry, LedgerError
from distprivacy.ledger._keys import decrypt

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger


def rows(
    ledger: Ledger, con: sqlite3.Connection, where: str = "", args: Sequence[Any] = ()
) -> list:
    """The release rows (every field, then the chain value), in id order."""
    try:
        return con.execute(
            f"SELECT {ledger._columns}, chain FROM releases {where} ORDER BY id", args
        ).fetchall()
    except sqlite3.Error as e:
        raise sql_error(ledger.path, e, "read the ledger") from None


def select(
    ledger: Ledger, fingerprint: str | None, property: str | None, con: sqlite3.Connection
) -> list[LedgerEntry]:
    """The entries of one dataset and/or property (all of them when both are None)."""
    where, args = [], []
    if fingerprint is not None:
        where.append("fingerprint = ?")
        args.append(fingerprint)
    if property is not None:
        where.append("property = ?")
        args.append(property)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    return [ledger._entry(r) for r in rows(ledger, con, clause, args)]


def row_entry(ledger: Ledger, row: Sequence[Any]) -> LedgerEntry:
    """A row as a :class:`LedgerEntry` (the plan decrypted); one line naming the row when
    it is malformed."""
    import numpy as np

    rid = row[0]
    try:
        (_, time, fp, prop, ptext, comp, digest, mech, stats, g, fam, cov, vals, plan,
         idx, cum, _sketch, unb) = row[: len(FIELDS)]  # fmt: skip
        cov_v = None if cov is None else np.array(json.loads(cov), dtype=float)
        plan_v = None
        if plan is not None:
            text = decrypt(ledger.key, plan, f"the plan of release {rid}")
            plan_v = json.loads(text.decode("utf-8"))
        return LedgerEntry(
            fingerprint=fp,
            property=prop,
            mechanism=mech,
            statistics=tuple(json.loads(stats)),
            guarantee=Guarantee.from_dict(json.loads(g)),
            values=tuple(number(v) for v in json.loads(vals)),
            noise_family=fam,
            noise_covariance=cov_v,
            plan=plan_v,
            plan_digest=digest,
            statistic_indices=None if idx is None else tuple(json.loads(idx)),
            id=int(rid),
            time=time,
            cumulative=Guarantee.from_dict(json.loads(cum)),
            property_text=str(ptext),
            complemented=bool(comp),
            unbounded=bool(unb),
        )
    except LedgerError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise LedgerError(
            f"release {rid} of {str(ledger.path)!r} is malformed ({type(e).__name__}: {e}); "
            "run `distprivacy ledger verify`"
        ) from None
