"""The ledger's anchor: a second record, beside the key, of how many releases it holds (see
:mod:`distprivacy.ledger` and docs/ledger.md).

``L.db.anchor`` (0600) holds the number of release rows and the chain value of the last one
(the genesis value for none), MACed with the ``anchor`` subkey of the ledger key
(:mod:`distprivacy.ledger._keys`). :meth:`Ledger.record` rewrites it after every commit,
before it returns — atomically (a temporary file, fsync, rename, fsync of the directory),
under an advisory lock on the key file, and only forwards: it never goes back to fewer
releases. A crash between the commit and the anchor leaves the anchor behind the ledger,
which is fine; a ledger *older* than its anchor — fewer rows than it counts, or another chain
value at its count (a fork) — is refused by ``ledger verify`` and by every release: it was
restored from an older copy, or its last rows were deleted and an old head written back, or
the ``-wal`` file that still held its last releases was deleted.

The ledger records that it has an anchor (``ledger_meta`` key ``anchored``, covered by the
head MAC), so deleting the anchor file is caught too. A ledger written before anchors existed
keeps working and is anchored by its next release.

What the anchor does not resist: whoever holds the key can write any anchor, and restoring
older copies of the ledger *and* its anchor together (``ledger backup`` copies both, with the
key) rolls the budget back.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from distprivacy.ledger._chain import BUSY_TIMEOUT, same_mac
from distprivacy.ledger._entry import LedgerError
from distprivacy.ledger._keys import key_path, mac

try:  # POSIX: serialise the writers of the anchor (elsewhere a race can only move it back)
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

#: The marker of an anchor file.
ANCHOR_FORMAT = "distprivacy-ledger-anchor-1"
#: The ``ledger_meta`` key that says the ledger has an anchor (covered by the head MAC).
ANCHORED = "anchored"
_MAX_BYTES = 4096


@dataclass(frozen=True)
class Anchor:
    """An anchor as read from its file.

    Attributes
    ----------
    releases : int
        The number of release rows the ledger had when it was written.
    chain : str
        The chain value of the last of them (the genesis value for none).
    mac : str
        Its MAC under the ledger key's ``anchor`` subkey.
    problem : str
        Why the file cannot be used ("" when it was read).
    """

    releases: int
    chain: str
    mac: str
    problem: str = ""


def anchor_path(ledger: str | Path) -> Path:
    """Where a ledger's anchor lives: beside it, ``<ledger>.anchor``."""
    return Path(str(ledger) + ".anchor")


def _anchor_mac(key: bytes, releases: int, chain: str) -> str:
    return mac(key, "anchor", f"{ANCHOR_FORMAT}|{releases}|{chain}".encode())


def read_anchor(ledger: str | Path) -> Anchor | None:
    """The ledger's anchor, None when there is no file (a malformed or unreadable one is an
    :class:`Anchor` whose ``problem`` says why)."""
    p = anchor_path(ledger)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        return Anchor(-1, "", "", f"cannot be read ({e.strerror})")
    try:
        if len(raw) > _MAX_BYTES:
            raise ValueError("too large")
        d = json.loads(raw.decode("ascii"))
        n, chain, tag = d["releases"], d["chain"], d["mac"]
        if d["format"] != ANCHOR_FORMAT or type(n) is not int or n < 0:
            raise ValueError("not an anchor")
        if not isinstance(chain, str) or not isinstance(tag, str):
            raise ValueError("not an anchor")
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return Anchor(-1, "", "", "is malformed")
    return Anchor(n, chain, tag)


def _valid(key: bytes, anchor: Anchor | None) -> bool:
    return (
        anchor is not None
        and not anchor.problem
        and same_mac(anchor.mac, _anchor_mac(key, anchor.releases, anchor.chain))
    )


def check_anchor(
    key: bytes,
    ledger: str | Path,
    anchor: Anchor | None,
    anchored: bool,
    chains: Sequence[str],
    genesis: str,
) -> str | None:
    """Why the ledger, whose rows have the chain values ``chains`` (verified), does not match
    ``anchor`` (read *before* the rows, so that it is never newer than them), or None.
    ``anchored``: the ledger's head says it has an anchor."""
    name = repr(str(anchor_path(ledger)))
    if anchor is None:
        if not anchored:
            return None  # a ledger from before anchors: anchored by its next release
        return (
            f"its anchor {name} is missing, but the ledger records that it has one: restore "
            "it with the ledger from the same backup (`distprivacy ledger backup` copies it)"
        )
    if anchor.problem:
        return f"its anchor {name} {anchor.problem}"
    if not _valid(key, anchor):
        return f"its anchor {name} fails its MAC: it was edited, or belongs to another ledger"
    n = len(chains)
    if anchor.releases > n:
        return (
            f"the ledger is older than its anchor: {n} releases recorded, the anchor has "
            f"{anchor.releases}: it was restored from an older copy or rows were removed"
        )
    at = genesis if anchor.releases == 0 else chains[anchor.releases - 1]
    if not same_mac(at, anchor.chain):
        return (
            f"the ledger is not the one its anchor recorded: its release number "
            f"{anchor.releases} has another chain value than the anchor's: it was replaced by "
            "another copy, or rewritten"
        )
    return None


@contextlib.contextmanager
def _writers_lock(ledger: str | Path) -> Iterator[bool]:
    """An advisory lock on the key file (it is never replaced) while an anchor is written,
    polled for at most :data:`BUSY_TIMEOUT` s. Yields whether it is held (False where the
    file system has no advisory locks)."""
    if fcntl is None:  # pragma: no cover - not on POSIX
        yield False
        return
    try:
        fd = os.open(key_path(ledger), os.O_RDONLY)
    except OSError as e:
        k = str(key_path(ledger))
        raise LedgerError(f"cannot open the ledger's key {k!r}: {e.strerror}") from None
    try:
        start, delay, held = time.monotonic(), 0.001, True
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - start > BUSY_TIMEOUT:
                    raise LedgerError(
                        f"another process held the lock of {str(anchor_path(ledger))!r} for "
                        f"more than {BUSY_TIMEOUT:g} s"
                    ) from None
                time.sleep(delay)
                delay = min(2 * delay, 0.05)
            except OSError:  # no advisory locks here (a race can only move the anchor back)
                held = False
                break
        yield held
    finally:
        os.close(fd)  # releases the lock


def write_anchor(key: bytes, ledger: str | Path, releases: int, chain: str) -> None:
    """Anchor the ledger at ``releases`` rows whose last chain value is ``chain`` (a committed
    state), unless its anchor is already there or further; atomically, 0600."""
    p = anchor_path(ledger)
    with _writers_lock(ledger) as held:
        if held:  # a temporary file left by a writer killed mid-way (only they create them)
            for stale in p.parent.glob(glob.escape(p.name) + ".*.tmp"):
                stale.unlink(missing_ok=True)
        current = read_anchor(ledger)
        if current is not None and (not _valid(key, current) or current.releases >= releases):
            return  # as far or further (or broken: left for verification to report)
        body = json.dumps(
            {
                "format": ANCHOR_FORMAT,
                "releases": releases,
                "chain": chain,
                "mac": _anchor_mac(key, releases, chain),
            },
            separators=(",", ":"),
        )
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(body.encode("ascii") + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
            _fsync_dir(p.parent)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            why = f"cannot write the ledger's anchor {str(p)!r}: {e.strerror}"
            raise LedgerError(why) from None


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover - a directory that cannot be opened (not POSIX)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - a file system without directory fsync
        pass
    finally:
        os.close(fd)
