"""Outputs never written over inputs (issue 30, C1): ``ledger show L.db --report L.db`` used to
replace the ledger — its spent budget with it — by an HTML page.

Every command that writes a file lists what it reads and what it writes, each as ``(what,
path)``, and calls :func:`check_apart` before any work: an output that is one of the inputs, lies
inside an input directory, or is another output of the same command is refused in one line
(:class:`~distprivacy.outputs.OutputError`, exit 2), so nothing is read, computed or written.
Paths are compared resolved — ``~``, relative paths, ``..`` and symbolic links
(:func:`os.path.realpath`) — and, for files that exist, by device and inode (hard links, a
case-insensitive file system). The helpers below give the files an option stands for: a ledger
and its key and SQLite files (:func:`ledger_files`), the files ``--data`` reads
(:func:`data_files`), the ``--config`` file (:func:`config_file`) and an estimator's Python file
(:func:`estimator_file`).
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["check_apart", "config_file", "data_files", "estimator_file", "ledger_files"]

Named = tuple[str, Any]
#: Where :func:`config_file` finds the ``--config`` path (set by its option's callback).
CONFIG_KEY = "distprivacy.config_file"


def _resolve(path: Any) -> tuple[str, tuple[int, int] | None, bool]:
    """The path resolved, its (device, inode) if it exists, and whether it is a directory (a
    path no file can have, e.g. with a NUL byte, is left as written: the read or write of it
    refuses it with its own message)."""
    try:
        real = os.path.realpath(os.path.expanduser(os.fspath(path)))
        st = os.stat(real)
    except ValueError:
        return os.fspath(path), None, False
    except OSError:
        return real, None, False
    return real, (st.st_dev, st.st_ino), stat.S_ISDIR(st.st_mode)


def _given(named: Iterable[Named]) -> list[tuple[str, str, tuple[str, Any, bool]]]:
    return [
        (what, os.fspath(p), _resolve(p))
        for what, p in named
        if p is not None and str(os.fspath(p)).strip()
    ]


def _inside(real: str, directory: str) -> bool:
    return real != directory and os.path.commonpath([real, directory]) == directory


def check_apart(inputs: Iterable[Named], outputs: Iterable[Named]) -> None:
    """Refuse, before any work, an output that would write over an input or another output.

    Parameters
    ----------
    inputs
        ``(what, path)`` of everything the command reads (``what`` names it for the message:
        ``"--data"``, ``"the ledger's key"``); a None path is skipped. An input that is an
        existing directory (a Parquet folder) holds every file below it.
    outputs
        ``(what, path)`` of everything it writes (files or folders); None skipped.

    Raises
    ------
    distprivacy.outputs.OutputError
        One line naming the output, the input (or the other output) it is, and the fix.
    """
    from distprivacy.outputs import OutputError

    ins = _given(inputs)
    seen: list[tuple[str, str, tuple[str, Any, bool]]] = []
    for what, path, (real, ident, _) in _given(outputs):
        for other, ipath, (ireal, iident, idir) in ins:
            if real == ireal or (ident is not None and ident == iident):
                raise OutputError(
                    f"{what} {path} is {other} ({ipath}), which this command reads: an output "
                    f"never writes over an input; give {what} another path"
                )
            if idir and _inside(real, ireal):
                raise OutputError(
                    f"{what} {path} lies inside {other} ({ipath}), a directory this command "
                    f"reads: an output never writes into an input; give {what} a path outside it"
                )
        for other, opath, (oreal, oident, _) in seen:
            if real == oreal or (ident is not None and ident == oident):
                raise OutputError(
                    f"{what} {path} and {other} {opath} are the same file: one would overwrite "
                    "the other; give them different paths"
                )
        seen.append((what, path, (real, ident, False)))


def ledger_files(path: Any, what: str = "the ledger") -> list[Named]:
    """A ledger and the files that are part of it: its key (``<ledger>.key``, beside the path
    as given) and its SQLite write-ahead log and shared-memory index (``-wal``, ``-shm``,
    beside the resolved path, which is the one SQLite opens)."""
    if path is None or not str(os.fspath(path)).strip():
        return []  # (refused where the ledger is opened)
    from distprivacy.ledger import key_path

    p = os.fspath(path)
    real = os.path.realpath(os.path.expanduser(p))
    return [
        (what, p),
        (f"the key of {what}", str(key_path(p))),
        (f"the write-ahead log of {what}", real + "-wal"),
        (f"the shared-memory file of {what}", real + "-shm"),
    ]


def data_files(path: Any, what: str = "--data") -> list[Named]:
    """What ``--data PATH`` reads: a directory of the Adult data is its two files (an output
    may be written beside them), a glob its matches, anything else the path itself (a folder of
    Parquet files with everything in it; a table name, which is no file, matches nothing)."""
    if path is None or not str(os.fspath(path)).strip():
        return []
    from distprivacy.datasets import ADULT_FILES

    p = Path(os.fspath(path)).expanduser()
    if p.is_dir() and all((p / name).is_file() for name in ADULT_FILES):
        return [(f"{what}'s {name}", str(p / name)) for name in ADULT_FILES]
    if not p.exists() and glob.has_magic(str(p)):
        return [(what, m) for m in sorted(glob.glob(str(p)))]
    return [(what, str(path))]


def estimator_file(spec: str | None, what: str = "--estimator") -> list[Named]:
    """The Python file of ``torch:FILE.py:make`` (nothing for the other estimators)."""
    if not spec or not spec.startswith("torch:"):
        return []
    from distprivacy.exceptions import DistPrivacyError
    from distprivacy.inference.torch_estimator import parse_factory_spec

    try:
        file, _ = parse_factory_spec(spec)
    except DistPrivacyError:
        return []  # refused where the estimator is made, with the fix
    return [(what, str(file))]


def config_file(ctx: Any) -> list[Named]:
    """The ``--config`` file the command was given, if any (:mod:`.config` records it)."""
    path = (ctx.meta or {}).get(CONFIG_KEY) if ctx is not None else None
    return [] if path is None else [("--config", path)]
