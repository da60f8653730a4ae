"""The one check of a path the library is asked to read: a regular file, or a directory where
one is expected — never a FIFO, a socket or a device, which would block a read forever or
stream without end (issue 21)."""

from __future__ import annotations

import stat
from pathlib import Path

from distprivacy.exceptions import DistPrivacyError

__all__ = ["check_input_path"]


def check_input_path(path: str | Path, what: str, *, directory_ok: bool = False) -> Path:
    """``path`` as a :class:`Path` if it is a regular file (or a directory when
    ``directory_ok``); one-line DistPrivacyError otherwise. A missing path passes (the caller
    says what is missing, with its own hint); globs are the caller's business."""
    p = Path(path).expanduser()
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        return p
    except OSError as e:
        raise DistPrivacyError(f"cannot read {what} {str(p)!r}: {e.strerror}") from None
    if stat.S_ISREG(mode) or (directory_ok and stat.S_ISDIR(mode)):
        return p
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a directory"
        if stat.S_ISDIR(mode)
        else "not a regular file"
    )
    raise DistPrivacyError(
        f"{what} {str(p)!r} is {kind}; give a regular file (reading it could block forever)"
    )
