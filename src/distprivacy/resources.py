"""Resource limits: refuse a request whose memory would not fit, before allocating it.

Every large allocation the library makes from a user-given size (Monte-Carlo samples, audit
datasets, grids of locations, transition matrices, model populations, noise draws) is estimated
first and passed to :func:`check_memory`, which raises :class:`ResourceLimitError` naming the
request, the estimate and the limit, instead of letting NumPy fail (or the machine swap) midway.

The limit
---------
``DISTPRIVACY_MEMORY_LIMIT`` (bytes, or with a unit: ``512MiB``, ``8GiB``, ``2GB``) when set;
otherwise 80 % of the memory available when the check runs (``MemAvailable`` of
``/proc/meminfo``; elsewhere the available physical pages, or 4 GiB when neither is known).
"""

from __future__ import annotations

import os
import re

from distprivacy.exceptions import ResourceLimitError

#: Share of the available memory one request may use.
AVAILABLE_FRACTION = 0.8
#: The limit when the available memory cannot be read.
FALLBACK_LIMIT = 4 * 2**30
#: The environment variable that overrides the limit.
LIMIT_VARIABLE = "DISTPRIVACY_MEMORY_LIMIT"

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 2**10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 2**20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 2**30,
    "t": 10**12,
    "tb": 10**12,
    "tib": 2**40,
}


def parse_size(text: str) -> int:
    """``"8GiB"`` → 8589934592; plain numbers are bytes.

    Raises
    ------
    ResourceLimitError
        When the text is not a size.
    """
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise ResourceLimitError(
            f"{LIMIT_VARIABLE}={text!r} is not a size; write bytes or e.g. 512MiB, 8GiB"
        )
    return int(float(m.group(1)) * _UNITS[unit])


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now, or None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def memory_limit() -> tuple[int, str]:
    """The limit in bytes and how it was set (for the message)."""
    env = os.environ.get(LIMIT_VARIABLE)
    if env:
        return parse_size(env), f"set by {LIMIT_VARIABLE}"
    avail = available_memory()
    if avail is None:
        return FALLBACK_LIMIT, f"available memory unknown; set {LIMIT_VARIABLE} to change"
    return (
        int(AVAILABLE_FRACTION * avail),
        f"{AVAILABLE_FRACTION:.0%} of the {format_bytes(avail)} available; "
        f"set {LIMIT_VARIABLE} to change",
    )


def format_bytes(n: float) -> str:
    """1536 → '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def check_memory(bytes_needed: float, what: str) -> None:
    """Refuse a request needing more memory than the limit (see the module docstring).

    Parameters
    ----------
    bytes_needed : float
        The estimate (a float, so that products of user-given sizes cannot overflow).
    what : str
        The request, as the user would name it, e.g. ``"--samples 1000000000 (Monte-Carlo
        subsets per θ)"``.

    Raises
    ------
    ResourceLimitError
        When ``bytes_needed`` exceeds the limit.
    """
    need = float(bytes_needed)
    limit, how = memory_limit()
    if not need <= limit:
        raise ResourceLimitError(
            f"{what} needs about {format_bytes(need)} of memory, above the limit of "
            f"{format_bytes(limit)} ({how}); ask for less"
        )


__all__ = [
    "AVAILABLE_FRACTION",
    "LIMIT_VARIABLE",
    "available_memory",
    "check_memory",
    "format_bytes",
    "memory_limit",
    "parse_size",
]
