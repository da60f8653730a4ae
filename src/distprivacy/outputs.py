"""Writing outputs so that an interrupted run never leaves a file or a folder that looks
complete but is not.

Files
    :func:`atomic_write` writes a file as a temporary file in the same directory (named
    ``.distprivacy-tmp-HOST-PID-RANDOM-NAME``), flushed to disk (``fsync``), then renamed over
    the target (``os.replace``, atomic on POSIX and Windows): a reader sees the old file or the
    new one, never a cut one. The temporary files a killed process left are removed by the
    next write of the same file (or the next run into the folder). :func:`write_text`,
    :func:`write_csv` and :func:`save_figure` are the usual cases.
Folders
    :class:`RunFolder` wraps the writing of a run's outputs. On entry it writes the marker
    ``INCOMPLETE`` (which command, when, which process) and deletes the previous run's
    ``manifest.json`` and report; every file written atomically while it is open is recorded;
    on success it writes ``manifest.json`` (each file's size and SHA-256) and only then removes
    the marker. A folder is *complete* exactly when it holds ``manifest.json``, no
    ``INCOMPLETE`` marker, and every file the manifest lists with the listed SHA-256
    (:func:`run_status`).
Checks before computing
    :func:`check_output_dir` and :func:`check_output_file` fail fast, with a one-line
    :class:`OutputError`, when an output path cannot be written: empty, an existing file where
    a directory is expected (or the reverse), a directory that cannot be created or written, a
    disk without free space.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import hashlib
import json
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from distprivacy.exceptions import DistPrivacyError

__all__ = [
    "MANIFEST",
    "MARKER",
    "TMP_PREFIX",
    "FolderStatus",
    "OutputError",
    "RunFolder",
    "atomic_write",
    "check_output_dir",
    "check_output_file",
    "names_a_directory",
    "remove_stale_temporaries",
    "run_status",
    "save_figure",
    "write_csv",
    "write_text",
]

#: Prefix of the temporary files :func:`atomic_write` renames into place.
TMP_PREFIX = ".distprivacy-tmp-"
#: The marker of a folder whose run has started and not finished.
MARKER = "INCOMPLETE"
#: The list of a finished run's files with their SHA-256.
MANIFEST = "manifest.json"
#: Free space a directory must offer before a run starts (bytes), unless told otherwise.
MIN_FREE_BYTES = 1 << 20

_PROBE_BYTES = 4096
_ACTIVE: contextvars.ContextVar[tuple[RunFolder, ...]] = contextvars.ContextVar(
    "distprivacy_run_folders", default=()
)

PathLike = str | os.PathLike[str]
Content = bytes | str | Callable[[Path], object]


class OutputError(DistPrivacyError):
    """An output path cannot be written (one-line message naming the path and the fix)."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return _one_line(exc) or type(exc).__name__


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _fsync_dir(directory: Path) -> None:
    """Flush a directory entry (the rename) to disk; a no-op where unsupported."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _new_file_mode(target: Path) -> int:
    """The mode the file would get without the temporary file: the old file's, or 0o666
    minus the umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


# --------------------------------------------------------------------------------------------
# Atomic files
# --------------------------------------------------------------------------------------------


def _refuse_special(target: Path) -> None:
    """Never write over a path that is not a regular file: renaming onto a device node, a FIFO
    or a socket would replace it (issue 21)."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError:
        return  # the write itself will report it
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a symbolic link"
            if stat.S_ISLNK(mode)
            else "a device, FIFO or socket"
        )
        raise OutputError(
            f"{target} is {kind}, not a regular file: it is never written over; choose another "
            "output path"
        )


def atomic_write(
    path: PathLike, content: Content, *, encoding: str = "utf-8", mode: int | None = None
) -> Path:
    """Write ``path`` atomically: a temporary file in the same directory, ``fsync``, rename.

    Parameters
    ----------
    path
        The file to write (its directory is created if missing).
    content
        ``bytes``; ``str`` (encoded with ``encoding``); or a callable that writes the file at
        the path it is given (e.g. ``lambda p: frame.to_csv(p)``). The temporary path ends with
        the target's name, so writers that infer a format from the suffix (``.png``,
        ``.csv.gz``, ``.npz``) behave as with the target.
    encoding
        Encoding of ``str`` content.
    mode
        The new file's permission bits (e.g. ``0o600`` for a file holding exact statistics or
        a key); default: what ``open`` would give under the process umask.

    Returns
    -------
    Path
        ``path``. It is recorded in the innermost open :class:`RunFolder`, if any.

    Raises
    ------
    OutputError
        The file cannot be written (permissions, full disk, ...); the target is unchanged and
        the temporary file removed.
    """
    if not isinstance(path, Path):
        _refuse_directory_name(path, "the output")
    target = Path(path)
    _refuse_special(target)
    directory = target.parent
    tmp: Path | None = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        mode = _new_file_mode(target) if mode is None else mode
        _remove_stale(directory, target.name)
        fd, tmp_name = tempfile.mkstemp(
            prefix=_tmp_prefix(), suffix="-" + target.name, dir=directory
        )
        tmp = Path(tmp_name)
        if callable(content):
            os.close(fd)
            content(tmp)
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        else:
            data = content.encode(encoding) if isinstance(content, str) else bytes(content)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise OutputError(
            f"cannot write {target}: {_describe(exc)}; free some space, fix the permissions or "
            "choose another output path"
        ) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
    _fsync_dir(directory)
    folders = _ACTIVE.get()
    if folders:
        folders[-1]._record(target)
    return target


def write_text(
    path: PathLike, text: str, *, encoding: str = "utf-8", mode: int | None = None
) -> Path:
    """Write text atomically (:func:`atomic_write`); ``mode`` as there (0o600: private)."""
    return atomic_write(path, text, encoding=encoding, mode=mode)


def write_csv(frame: Any, path: PathLike, **kwargs: Any) -> Path:
    """Write a pandas DataFrame or Series as CSV atomically; ``kwargs`` go to ``to_csv``."""
    return atomic_write(path, lambda p: frame.to_csv(p, **kwargs))


def save_figure(fig: Any, path: PathLike, **kwargs: Any) -> Path:
    """``fig.savefig(path, **kwargs)`` atomically (the format follows the suffix of ``path``)."""
    return atomic_write(path, lambda p: fig.savefig(p, **kwargs))


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]


def _tmp_prefix() -> str:
    """``TMP_PREFIX`` + this host and process: ``.distprivacy-tmp-HOST-PID-``."""
    return f"{TMP_PREFIX}{_host()}-{os.getpid()}-"


def _is_stale(name: str, host: str) -> bool:
    """Whether a temporary file was left by a process of this host that no longer runs."""
    parts = name[len(TMP_PREFIX) :].split("-", 2)
    if len(parts) < 3 or parts[0] != host or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid() or os.name != "posix":  # (on Windows os.kill(pid, 0) would kill it)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def _remove_stale(directory: Path, name: str | None = None) -> list[Path]:
    removed: list[Path] = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return removed
    host = _host()
    for p in entries:
        n = p.name
        if not n.startswith(TMP_PREFIX) or (name is not None and not n.endswith("-" + name)):
            continue
        if _is_stale(n, host) and p.is_file():
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
    return removed


def remove_stale_temporaries(directory: PathLike) -> list[Path]:
    """Delete the temporary files that interrupted writes (:func:`atomic_write`) left in
    ``directory`` (not recursive): those of processes of this host that no longer run (a
    write under way in another process is left alone). Returns the removed paths."""
    return _remove_stale(Path(directory))


# --------------------------------------------------------------------------------------------
# Checks before computing
# --------------------------------------------------------------------------------------------


def _empty(path: PathLike | None) -> bool:
    return path is None or not str(os.fspath(path)).strip()


def names_a_directory(path: PathLike) -> bool:
    """Whether the path *as written* names a directory: it ends with a separator, or its last
    part is ``.`` or ``..`` (``newdir/``, ``out/.``). :class:`~pathlib.Path` drops a trailing
    slash, so such a path must be read before it is converted, or a file ``newdir`` is written
    where the user asked for a directory."""
    text = os.fspath(path)
    text = os.fsdecode(text) if isinstance(text, bytes) else str(text)
    for sep in (os.sep, os.altsep):
        if sep:
            text = text.replace(sep, "/")
    return text.rsplit("/", 1)[-1] in ("", ".", "..")


def _refuse_directory_name(path: PathLike, option: str) -> None:
    if names_a_directory(path):
        text = str(os.fspath(path))
        how = "ends with a path separator" if text.endswith(("/", os.sep)) else "ends with . or .."
        raise OutputError(
            f"{option} {text} {how}: it names a directory, not a file; give a file path, e.g. "
            f"{option} {Path(text) / 'out.json'}"
        )


def _probe(directory: Path, what: str, min_free: int) -> None:
    """Create, write and delete a small file in ``directory``; check its free space."""
    _remove_stale(directory, "probe")
    try:
        fd, name = tempfile.mkstemp(prefix=_tmp_prefix(), suffix="-probe", dir=directory)
    except OSError as exc:
        raise OutputError(
            f"cannot write into {directory} ({what}): {_describe(exc)}; fix its permissions "
            "or choose another path"
        ) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"\0" * _PROBE_BYTES)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OutputError(
            f"cannot write into {directory} ({what}): {_describe(exc)}; free some space or "
            "choose another path"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return
    if free < min_free:
        raise OutputError(
            f"the disk holding {directory} ({what}) has {free:,} bytes free, fewer than the "
            f"{min_free:,} needed; free some space or choose another path"
        )


def _existing_ancestor(p: Path) -> Path:
    a = p
    while not a.exists() and a != a.parent:
        a = a.parent
    return a


def check_output_dir(
    path: PathLike | None, *, option: str = "--out", min_free: int = MIN_FREE_BYTES
) -> Path:
    """Fail fast if ``path`` cannot be used as an output directory; creates nothing.

    Parameters
    ----------
    path
        The directory (it may not exist yet: then its nearest existing ancestor must be a
        writable directory).
    option
        How the user named it, for the message (e.g. ``"--out"``).
    min_free
        Bytes that must be free on its disk.

    Returns
    -------
    Path
        ``path`` as a :class:`~pathlib.Path` (``~`` expanded).

    Raises
    ------
    OutputError
        Empty, an existing non-directory, no writable ancestor, or no free space.
    """
    if _empty(path):
        raise OutputError(f"{option} is empty; give a directory, e.g. {option} out")
    p = Path(os.fspath(path)).expanduser()  # type: ignore[arg-type]
    if p.exists() and not p.is_dir():
        raise OutputError(
            f"{option} {p} exists and is not a directory; remove it or give a directory path"
        )
    anchor = _existing_ancestor(p)
    if not anchor.is_dir():
        raise OutputError(f"{option} {p}: {anchor} is not a directory; give another path")
    _probe(anchor, f"{option} {p}", min_free)
    return p


def check_output_file(
    path: PathLike | None,
    *,
    option: str = "--out",
    create_parents: bool = True,
    min_free: int = MIN_FREE_BYTES,
) -> Path:
    """Fail fast if ``path`` cannot be written as a file (an existing file is replaced).

    Parameters
    ----------
    path
        The file.
    option
        How the user named it, for the message (e.g. ``"--report"``).
    create_parents
        Whether a missing directory will be created (else it must exist).
    min_free
        Bytes that must be free on its disk.

    Returns
    -------
    Path

    Raises
    ------
    OutputError
        Empty, a directory, not a regular file, a missing directory (``create_parents=False``),
        no writable directory, or no free space.
    """
    if _empty(path):
        raise OutputError(f"{option} is empty; give a file path, e.g. {option} out/report.md")
    _refuse_directory_name(path, option)  # type: ignore[arg-type]
    p = Path(os.fspath(path)).expanduser()  # type: ignore[arg-type]
    if p.is_dir():
        raise OutputError(
            f"{option} {p} is a directory; give a file path, e.g. {option} {p / 'report.md'}"
        )
    if p.exists() and not p.is_file():
        raise OutputError(f"{option} {p} exists and is not a regular file; give another path")
    if not create_parents and not p.parent.is_dir():
        raise OutputError(f"{option} {p}: directory {p.parent} does not exist; create it first")
    anchor = _existing_ancestor(p.parent)
    if not anchor.is_dir():
        raise OutputError(f"{option} {p}: {anchor} is not a directory; give another path")
    _probe(anchor, f"{option} {p}", min_free)
    return p


# --------------------------------------------------------------------------------------------
# Run folders
# --------------------------------------------------------------------------------------------


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()


class RunFolder:
    """A run's output folder: marked ``INCOMPLETE`` while written, ``manifest.json`` when done.

    Use as a context manager around the writing of a run's outputs; write every file with
    :func:`atomic_write` (or :func:`write_text`, :func:`write_csv`, :func:`save_figure`), which
    records it here. Files outside the folder (e.g. a report written elsewhere) are recorded
    with a relative path.

    Parameters
    ----------
    path
        The folder (created if missing).
    command
        What started the run (written into the marker and the manifest).
    keep
        Keep the previous manifest's files in the new manifest (a re-rendering that rewrites
        only some files); otherwise the manifest lists only this run's files.
    cache_dirs
        Subfolders holding caches (e.g. ``populations``): files written there are not listed
        and their leftover temporary files are removed on entry.
    clear
        Files of the previous run deleted on entry (after the marker is written) so that they
        cannot pass for this run's: ``report.md`` by default.

    Notes
    -----
    Interrupted by an exception (``KeyboardInterrupt`` included), the marker stays and gains a
    line saying so; killed (SIGKILL, power loss), it stays as written. The next run into the
    same folder starts by rewriting the marker, so it succeeds either way.
    """

    def __init__(
        self,
        path: PathLike,
        command: str,
        *,
        keep: bool = False,
        cache_dirs: Iterable[str] = (),
        clear: Iterable[PathLike] = ("report.md",),
    ) -> None:
        self.path = Path(path)
        self.command = command
        self.keep = keep
        self.cache_dirs = tuple(cache_dirs)
        self.clear = tuple(clear)
        self.started = ""
        self.files: dict[str, Path] = {}
        self._token: contextvars.Token | None = None

    @property
    def marker(self) -> Path:
        """The ``INCOMPLETE`` marker's path."""
        return self.path / MARKER

    @property
    def manifest(self) -> Path:
        """The ``manifest.json`` path."""
        return self.path / MANIFEST

    def _marker_text(self, extra: str = "") -> str:
        lines = [
            "This folder is incomplete: a run started writing into it and has not finished.",
            f"command: {self.command}",
            f"started: {self.started}",
            f"process: {os.getpid()} on {socket.gethostname()}",
            f"A finished run writes {MANIFEST} (its files with their SHA-256) and then removes "
            "this file; run the command again to complete the folder.",
        ]
        if extra:
            lines.append(extra)
        return "\n".join(lines) + "\n"

    def add(self, path: PathLike) -> None:
        """List an existing file (written earlier, e.g. kept by a re-rendering) in the
        manifest."""
        p = Path(path)
        if p.is_file():
            self._record(p)

    def _record(self, path: Path) -> None:
        try:
            rel = path.resolve().relative_to(self.path.resolve())
        except ValueError:
            rel = None
        if rel is not None and rel.parts and rel.parts[0] in self.cache_dirs:
            return
        if rel is not None and rel.as_posix() in (MARKER, MANIFEST):
            return
        self.files[_relative(path, self.path)] = path

    def __enter__(self) -> RunFolder:
        check_output_dir(self.path, option="output folder", min_free=0)
        self.path.mkdir(parents=True, exist_ok=True)
        for d in ("", *self.cache_dirs):
            remove_stale_temporaries(self.path / d)
        if self.keep:
            previous = _read_manifest(self.manifest)
            for rel in previous.get("files", {}) if previous else {}:
                p = self.path / rel
                if p.is_file():
                    self.files[rel] = p
        self.started = _now()
        atomic_write(self.marker, self._marker_text())
        self.manifest.unlink(missing_ok=True)
        if not self.keep:
            for name in self.clear:
                (self.path / name).unlink(missing_ok=True)
        _fsync_dir(self.path)
        self._token = _ACTIVE.set((*_ACTIVE.get(), self))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _ACTIVE.reset(self._token)
            self._token = None
        if exc_type is not None:
            with contextlib.suppress(Exception):
                what = exc_type.__name__ + (f": {_one_line(exc)}" if str(exc) else "")
                atomic_write(self.marker, self._marker_text(f"interrupted at {_now()} by {what}"))
            return
        manifest = {
            "format": "distprivacy.run",
            "version": 1,
            "command": self.command,
            "started": self.started,
            "finished": _now(),
            "files": {
                rel: {"bytes": p.stat().st_size, "sha256": _sha256_file(p)}
                for rel, p in sorted(self.files.items())
            },
        }
        atomic_write(self.manifest, json.dumps(manifest, indent=2) + "\n")
        self.marker.unlink(missing_ok=True)
        _fsync_dir(self.path)


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return None
    return data


@dataclass(frozen=True)
class FolderStatus:
    """What :func:`run_status` found in a folder.

    Attributes
    ----------
    path
        The folder.
    state
        ``"complete"`` (manifest valid, no marker), ``"incomplete"`` (marker present),
        ``"corrupt"`` (no marker, but the manifest is unreadable or a listed file is missing or
        differs), or ``"empty"`` (neither marker nor manifest: no run finished here).
    reason
        One line explaining the state.
    files
        The manifest's files (relative path -> SHA-256), when readable.
    """

    path: Path
    state: str
    reason: str
    files: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether the folder holds a finished run, intact."""
        return self.state == "complete"


def run_status(path: PathLike) -> FolderStatus:
    """Check a run folder: marker, manifest, and every listed file's SHA-256.

    Parameters
    ----------
    path
        The folder.

    Returns
    -------
    FolderStatus
    """
    root = Path(path)
    marker, manifest = root / MARKER, root / MANIFEST
    data = _read_manifest(manifest) if manifest.is_file() else None
    files = (
        {k: str(v.get("sha256")) for k, v in data["files"].items() if isinstance(v, dict)}
        if data
        else {}
    )
    if marker.exists():
        first = ""
        with contextlib.suppress(OSError):
            lines = marker.read_text(encoding="utf-8").splitlines()
            first = next((ln for ln in lines if ln.startswith("command:")), "")
        return FolderStatus(root, "incomplete", f"{marker} is present ({first})", files)
    if not manifest.exists():
        return FolderStatus(root, "empty", f"no {MANIFEST} in {root}: no run finished here")
    if data is None:
        return FolderStatus(root, "corrupt", f"{manifest} is unreadable")
    for rel, digest in files.items():
        p = root / rel
        if not p.is_file():
            return FolderStatus(
                root, "corrupt", f"{rel} is listed in {MANIFEST} but missing", files
            )
        if _sha256_file(p) != digest:
            return FolderStatus(
                root, "corrupt", f"{rel} differs from its SHA-256 in {MANIFEST}", files
            )
    return FolderStatus(root, "complete", f"{len(files)} files match {MANIFEST}", files)
