"""The keyed hash chains over the service's audit log and its analysts' releases, and the
per-host anchor of both (docs/serve.md, "The database's administrator").

Each row of ``audit`` and of ``releases`` carries ``chain = HMAC-SHA256(subkey, prev || "|" ||
content)``: ``prev`` is the chain value of the table's previous row (by id; the table's genesis
value for the first), ``content`` the row's every column as a JSON list (the table's name
first, ASCII, no spaces: one text per row, none shared by two), and ``subkey`` a subkey of the
service's MAC key (``DIR/service.key``) for that table. Without the key one cannot write a row
that verifies; an edited, inserted or removed row breaks the chain at the first row after it.

What a chain cannot tell by itself — its last rows removed, or the whole table restored to an
earlier state — the anchor tells: ``DIR/service.anchor`` (0600, per host) holds each table's
number of rows and last chain value as this host last verified them, MACed, rewritten
atomically (a temporary file, fsync, rename, fsync of the directory) and only forwards. A
database with fewer rows than the anchor, or another chain value at its position, is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # POSIX: serialise the writers of the anchor (elsewhere a race can only move it back)
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

#: The chained tables and their columns, in the order the chain's content lists them.
CHAINED: dict[str, tuple[str, ...]] = {
    "audit": ("id", "time", '"user"', "role", "action", "subject", "outcome", "detail"),
    "releases": ("id", "ledger_id", '"user"', "secret", "dataset", "plan", "time", "body"),
}
#: The file in the state directory holding this host's anchor.
ANCHOR_NAME = "service.anchor"
ANCHOR_FORMAT = "distprivacy-service-anchor-1"
_MAX_BYTES = 4096
_LOCK_SECONDS = 30.0
#: Where to read more, in every refusal.
SEE = "see docs/serve.md (distprivacy serve), 'The database's administrator'"


class ChainError(Exception):
    """The audit log (or the releases) fails verification: the service refuses to serve.

    Attributes
    ----------
    row : int
        The id of the first row that fails (0 when the refusal is about the whole table).
    """

    def __init__(self, message: str, row: int = 0) -> None:
        super().__init__(message)
        self.row = row


def subkey(key: bytes, purpose: str) -> bytes:
    """A subkey of the service's MAC key for one ``purpose`` (a table's chain, the anchor)."""
    return hmac.new(key, f"distprivacy-service|{purpose}".encode(), hashlib.sha256).digest()


def genesis(key: bytes, table: str) -> str:
    """The chain value before a table's first row."""
    return hmac.new(subkey(key, f"chain|{table}"), b"genesis", hashlib.sha256).hexdigest()


def content(table: str, row: Sequence[Any]) -> bytes:
    """A row's canonical content: the table's name, then every column, as a JSON list."""
    return json.dumps([table, *row], separators=(",", ":"), ensure_ascii=True).encode("ascii")


def link(key: bytes, table: str, prev: str, row: Sequence[Any]) -> str:
    """The chain value of ``row`` (every column of :data:`CHAINED`) after ``prev``."""
    data = prev.encode("ascii") + b"|" + content(table, row)
    return hmac.new(subkey(key, f"chain|{table}"), data, hashlib.sha256).hexdigest()


@dataclass
class Head:
    """How far a table's chain is verified.

    Attributes
    ----------
    count : int
        The number of rows verified.
    last_id : int
        The id of the last of them (0 for none).
    chain : str
        Its chain value (the genesis value for none).
    prev : str
        The chain value before it (to verify it again).
    """

    count: int
    last_id: int
    chain: str
    prev: str


def empty_head(key: bytes, table: str) -> Head:
    g = genesis(key, table)
    return Head(0, 0, g, g)


@dataclass
class Verified:
    """What a verification read: the new head, and the tokens the audit rows revoke."""

    head: Head
    revoked: set[int] = field(default_factory=set)


def bad_row(table: str, row_id: int, why: str) -> ChainError:
    what = "audit log" if table == "audit" else "analysts' releases"
    return ChainError(
        f"the service's {what} fails verification at row {row_id}: {why}; {SEE}", row_id
    )


def extend(key: bytes, table: str, head: Head, rows: Sequence[Sequence[Any]]) -> Verified:
    """Verify ``rows`` (``CHAINED[table]`` columns, then ``chain``; in id order) after
    ``head``: the verified head after them and the token ids their revocations name
    (:class:`ChainError` at the first row that fails)."""
    out = Verified(Head(head.count, head.last_id, head.chain, head.prev))
    h = out.head
    for r in rows:
        rid, cols, stored = int(r[0]), tuple(r[:-1]), r[-1]
        if rid <= h.last_id:
            raise bad_row(table, rid, "rows out of order")
        if not isinstance(stored, str):
            raise bad_row(table, rid, "it has no chain value (written outside the service)")
        want = link(key, table, h.chain, cols)
        if not hmac.compare_digest(stored, want):
            raise bad_row(
                table,
                rid,
                "its chain value does not match (edited, inserted, or a row before it removed)",
            )
        h.count, h.last_id, h.prev, h.chain = h.count + 1, rid, h.chain, want
        if table == "audit":
            out.revoked |= revocation(cols)
    return out


def revocation(cols: Sequence[Any]) -> set[int]:
    """The token an audit row revokes (``revoke token``, ``done``), as a set of 0 or 1 id."""
    if cols[4] != "revoke token" or cols[6] != "done":
        return set()
    try:
        tid = json.loads(cols[7]).get("token")
    except (ValueError, AttributeError):
        return set()
    return {tid} if type(tid) is int else set()


# -- the anchor ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Anchor:
    """This host's record of each chained table: ``{table: (count, chain)}``."""

    tables: dict[str, tuple[int, str]]


def _anchor_mac(key: bytes, tables: dict[str, tuple[int, str]]) -> str:
    body = json.dumps([ANCHOR_FORMAT, sorted(tables.items())], separators=(",", ":"))
    return hmac.new(subkey(key, "anchor"), body.encode("ascii"), hashlib.sha256).hexdigest()


def read_anchor(key: bytes, path: Path) -> Anchor | None:
    """This host's anchor (None when there is none yet); :class:`ChainError` when it is a
    link, unreadable, malformed or fails its MAC."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ChainError(
            f"the service's anchor {path.name} cannot be read ({e.strerror}); {SEE}"
        ) from None
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(_MAX_BYTES + 1)
    try:
        d = json.loads(raw.decode("ascii"))
        tables = {t: (int(d[t][0]), str(d[t][1])) for t in CHAINED}
        if d["format"] != ANCHOR_FORMAT or len(raw) > _MAX_BYTES:
            raise ValueError("not an anchor")
        tag = d["mac"]
    except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError):
        raise ChainError(f"the service's anchor {path.name} is malformed; {SEE}") from None
    if not isinstance(tag, str) or not hmac.compare_digest(tag, _anchor_mac(key, tables)):
        raise ChainError(
            f"the service's anchor {path.name} fails its MAC (edited, or another service's); {SEE}"
        )
    return Anchor(tables)


def check_anchor(anchor: Anchor | None, table: str, chains: Sequence[str], gen: str) -> None:
    """Refuse a table whose verified chain values ``chains`` fall short of the anchor or
    differ at its position (:class:`ChainError`)."""
    if anchor is None:
        return
    n, value = anchor.tables[table]
    what = "audit log" if table == "audit" else "analysts' releases"
    if len(chains) < n:
        raise ChainError(
            f"the service's {what} has {len(chains)} entries, fewer than the {n} this host's "
            f"anchor recorded (rows removed, or the database restored from an older copy); {SEE}"
        )
    at = gen if n == 0 else chains[n - 1]
    if not hmac.compare_digest(at, value):
        raise ChainError(
            f"the service's {what} is not the one this host's anchor recorded: entry {n} has "
            f"another chain value (rewritten, or another database); {SEE}",
            0,
        )


@contextlib.contextmanager
def _writers_lock(lock_file: Path) -> Iterator[None]:
    """An advisory lock on ``lock_file`` (the key: never replaced) while the anchor is written."""
    if fcntl is None:  # pragma: no cover - not on POSIX
        yield
        return
    fd = os.open(lock_file, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - start > _LOCK_SECONDS:
                    raise ChainError(
                        f"another process held the anchor's lock for {_LOCK_SECONDS:g} s"
                    ) from None
                time.sleep(0.005)
            except OSError:  # no advisory locks here: a race can only move the anchor back
                break
        yield
    finally:
        os.close(fd)


def write_anchor(key: bytes, path: Path, lock_file: Path, heads: dict[str, Head]) -> None:
    """Move this host's anchor forward to ``heads`` (never back: a table the anchor counts
    further keeps its entry); atomically, 0600, never through a link."""
    with _writers_lock(lock_file):
        try:
            current = read_anchor(key, path)
        except ChainError:
            return  # left for verification to report
        tables = {t: (h.count, h.chain) for t, h in heads.items()}
        if current is not None:
            tables = {t: max(current.tables[t], tables[t], key=lambda x: x[0]) for t in CHAINED}
            if tables == current.tables:
                return
        body = {t: list(v) for t, v in tables.items()}
        body.update(format=ANCHOR_FORMAT, mac=_anchor_mac(key, tables))
        _replace(path, json.dumps(body, separators=(",", ":")).encode("ascii") + b"\n")


def _replace(path: Path, data: bytes) -> None:
    """``path`` replaced by ``data`` atomically, 0600 (:func:`distprivacy.outputs.atomic_write`:
    a temporary file, fsync, rename, fsync of the directory; a link or any other non-regular
    file at ``path`` is refused, never written through)."""
    from distprivacy.outputs import OutputError, atomic_write

    try:
        atomic_write(path, data, mode=0o600)
    except OutputError as e:
        raise ChainError(f"cannot write the service's anchor {path.name}: {e}") from None
