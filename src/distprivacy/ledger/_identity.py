"""Which columns identify a dataset in a ledger.

A ledger composes the releases of one dataset (and one protected property). Two releases are
of the same dataset when their targets have the same canonical rows
(:func:`distprivacy.fingerprint.dataset_identity`) over the ledger's **identity columns** —
one set per ledger, whatever statistics a release reads:

* declared at :meth:`Ledger.init` (``identify_by=[...]``, ``ledger init --identify-by``): for
  example a record-id column, or the columns every extract of the population holds;
* otherwise fixed by the ledger's first release, as *all* the columns of its target table.

Every later release's target must hold all of them (it is refused, naming the missing column,
otherwise), so ``mean:age`` and then ``mean:hours_per_week`` of the same records are one
dataset and composed, and dropping columns from the table does not make a new dataset. The
columns are kept in ``ledger_meta`` and covered by the ledger's head MAC: editing or deleting
them fails ``ledger verify`` and refuses every release. A ledger written before identity
columns existed, with releases in it, keeps identifying each release by the columns it reads.

Each release also stores, per column of its target, the keyed identity of that column paired with
the property's (:func:`distprivacy.fingerprint.column_identities`) and of its values alone
(:func:`distprivacy.fingerprint.column_marginals`). A target whose every column *read* holds an
earlier dataset's values record by record with the property, or whose columns *not read* (two
or more) do, or whose columns read hold the same values given to other records, is checked
against that dataset's releases (and recorded with them while its own dataset has none), so
rewriting a column the release does not read, or jittering or shuffling one it reads, does not
make a new budget (:func:`linked_dataset`).

What this does not resist: a value changed in any identity column makes another identity (the
keyed sketch over the same columns warns when it overlaps an earlier one by half or more), and
a table whose columns read *and* all but one of its other columns are changed is not linked;
a narrow, stable set (a record id) is the better choice when the steward has one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distprivacy.checks import shown
from distprivacy.ledger._chain import sql_error
from distprivacy.ledger._entry import LedgerEntry, LedgerError, parse_sketch_field

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger

_META_KEY = "identity_columns"


def check_identify_by(columns: Any) -> tuple[str, ...]:
    """``identify_by`` checked: a non-empty list of distinct non-empty column names (kept in
    name order: the identity does not depend on the order given)."""
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns:
        raise LedgerError(
            "`identify_by` is a non-empty list of column names (e.g. `identify_by=['id']`), "
            f"got {shown(columns)}"
        )
    names = []
    for c in columns:
        if not isinstance(c, str) or not c.strip():
            raise LedgerError(f"`identify_by` holds column names (text), got {shown(c)}")
        names.append(c.strip())
    if len(set(names)) != len(names):
        dup = next(c for c in names if names.count(c) > 1)
        raise LedgerError(f"`identify_by` names column {dup!r} twice; name each column once")
    return tuple(sorted(names))


def read_identity(con: sqlite3.Connection, path: Path) -> tuple[str, ...] | None:
    """The ledger's identity columns, or None while not fixed (an empty ledger without
    declared ones, or a ledger from before they existed)."""
    row = con.execute("SELECT value FROM ledger_meta WHERE key = ?", (_META_KEY,)).fetchone()
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


def write_identity(con: sqlite3.Connection, columns: Sequence[str]) -> None:
    """Store the identity columns (inside the caller's transaction)."""
    con.execute(
        "INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (_META_KEY, json.dumps(list(columns)))
    )


def fix_identity(
    con: sqlite3.Connection, path: Path, entry: LedgerEntry, count: int
) -> tuple[str, ...] | None:
    """Under the write lock: the identity columns once ``entry`` is inserted. The first release
    of a ledger without declared ones fixes them (its target's columns); a release whose
    identity was computed over other columns than the ledger's (another process fixed them
    meanwhile) is refused, to be made again."""
    current = read_identity(con, path)
    wanted = entry.identity_columns
    if current is None and wanted is not None and count == 0:
        write_identity(con, wanted)
        return wanted
    if current != wanted:
        raise LedgerError(
            f"the ledger {str(path)!r} fixed the columns that identify a dataset while this "
            "release was prepared (another process recorded the first release); nothing was "
            "recorded — make the release again"
        )
    return current


def identity_columns(
    ledger: Ledger, target: Any, read: Sequence[str]
) -> tuple[tuple[str, ...] | None, list[str]]:
    """``(identity, columns)``: the ledger's identity columns (None for a ledger written
    before they existed) and the columns to identify ``target`` by. Refuses a target that
    lacks one of them, naming it and the way out."""
    try:
        fixed = read_identity(ledger._con, ledger.path)
        count = ledger._state(ledger._con)[0]
    except sqlite3.Error as exc:
        raise sql_error(ledger.path, exc, "read the ledger") from None
    if fixed is None and count > 0:
        return None, list(dict.fromkeys(read))  # a ledger from before identity columns
    if fixed is None:
        names = [str(c) for c in target.columns]
        if len(set(names)) != len(names) or not all(names):
            raise LedgerError(
                "the first release fixes the columns that identify a dataset as all the "
                "target's columns, but the target has duplicate or empty column names; "
                "rename them, or create the ledger with `identify_by`"
            )
        return tuple(sorted(names)), sorted(names)
    lacking = [c for c in fixed if c not in target.columns]
    if lacking:
        shown = ", ".join(fixed[:6]) + (", …" if len(fixed) > 6 else "")
        raise LedgerError(
            f"the target lacks column {lacking[0]!r}, one of the {len(fixed)} columns by "
            f"which this ledger identifies a dataset ({shown}): give the records with all "
            "of them (the whole table, not a selection of its columns), or keep another "
            "table's releases in a ledger of its own"
        )
    return fixed, list(fixed)


#: Columns a release does not read that must all hold an earlier dataset's values, record by
#: record with the property, for the target to be that dataset's records (two or more: one
#: column of few values agrees with another dataset's by chance more often).
MIN_UNREAD_COLUMNS = 2

#: Distinct values one column read (the property's aside) must hold for the same multisets of
#: values to say "the same records' values": two datasets' counts of a column of few values
#: (the number of women) agree by chance too often to stand for their records.
MIN_DISTINCT_VALUES = 20


def linked_dataset(con: sqlite3.Connection, entry: LedgerEntry) -> tuple[str, int, str] | None:
    """``(fingerprint, release id, why)`` of the earliest recorded *other* dataset (same
    property) that ``entry``'s target is, by one of three tests; else None:

    * ``"read"`` — every column the release reads holds that dataset's values, record by
      record with the property (up to an increasing re-encoding): the same records with other
      columns changed (a column rewritten, replaced by junk to make the table look new);
    * ``"records"`` — every column it does *not* read that both tables hold (two or more)
      does: the same records, with the columns read changed (a value jittered);
    * ``"values"`` — every column it reads holds the same values as a multiset (raw, not
      re-encoded), one of them (the property's aside) with at least
      :data:`MIN_DISTINCT_VALUES` values: the values handed to other records, which leaves a
      mean, a sum or a one-column count as it was.

    Such a target's release is checked against that dataset's releases too
    (:func:`link_warning`)."""
    fps, read = entry.column_fingerprints, entry.read_columns
    if not fps or not read:
        return None
    unread = [c for c in fps if c not in read]
    many = (entry.read_distinct or 0) >= MIN_DISTINCT_VALUES
    marg = (entry.column_marginals or {}) if many else {}
    rows = con.execute(
        "SELECT id, fingerprint, sketch FROM releases WHERE property = ? AND fingerprint != ? "
        "ORDER BY id",
        (entry.property, entry.fingerprint),
    ).fetchall()
    for rid, fp, stored in rows:
        try:
            _, cols, theirs = parse_sketch_field(stored)
        except (TypeError, ValueError):
            continue
        if not cols:
            continue
        if all(c in fps and cols.get(c) == fps[c] for c in read):
            return str(fp), int(rid), "read"
        shared = [c for c in unread if c in cols]
        if len(shared) >= MIN_UNREAD_COLUMNS and all(cols[c] == fps[c] for c in shared):
            return str(fp), int(rid), "records"
        if marg and theirs and all(c in marg and theirs.get(c) == marg[c] for c in read):
            return str(fp), int(rid), "values"
    return None


def link_warning(linked: tuple[str, int, str] | None, adopted: bool) -> tuple[str, ...]:
    """The warning of a release linked to an earlier dataset (``adopted``: recorded with it,
    its own dataset having no release yet)."""
    if linked is None:
        return ()
    why = {
        "read": "every column this release reads holds the values of the dataset of release "
        f"{linked[1]}, record by record with the property (its other columns differ)",
        "records": "the columns this release does not read hold the records of the dataset of "
        f"release {linked[1]}, record by record with the property (the columns read differ)",
        "values": "every column this release reads holds the values of the dataset of release "
        f"{linked[1]}, given to other records (the same statistics)",
    }[linked[2]]
    return (
        f"{why}: the budget is checked against that dataset's releases too"
        + (", and the release is recorded with them" if adopted else ""),
    )
