"""Shown output against printed output, for the README and the docs (tests/test_readme.py,
tests/test_docs.py): a shown line matches a printed line when they are equal but for ``…``
(anything), runs of spaces, and what differs at every run (keys, digests, times; released
values in a release table)."""

from __future__ import annotations

import re

#: What differs at every run, as (pattern in the shown line, regular expression it stands for).
VOLATILE = [
    (r"sha256:[0-9a-f]{12}", r"sha256:[0-9a-f]{12}"),
    (r"\b[0-9a-f]{16}\b", r"[0-9a-f]{16}"),
    (r"\b[0-9a-f]{12}(?=…)", r"[0-9a-f]{12}"),
    (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"),
]


def line_pattern(shown: str, released_cell: bool = False) -> re.Pattern[str]:
    """A regular expression for one shown line: ``…`` matches anything, runs of spaces any
    run of spaces, the volatile parts (:data:`VOLATILE`) their kind; with ``released_cell``
    the table row's second cell (a released value, random) any number, and its third (the
    value's 95 % interval) any interval."""
    marks: list[tuple[int, int, str]] = []
    for pattern, regex in VOLATILE:
        marks += [(m.start(), m.end(), regex) for m in re.finditer(pattern, shown)]
    if released_cell:
        cells = [m.start() for m in re.finditer("│", shown)]
        if len(cells) >= 3:
            marks.append((cells[1] + 1, cells[2], r"\s*-?[0-9.e+]+( \*)?\s*"))
        if len(cells) >= 4 and "[" in shown[cells[2] : cells[3]]:  # its 95 % interval
            marks.append((cells[2] + 1, cells[3], r"\s*\[-?[0-9.e+]+, -?[0-9.e+]+\]\s*"))
    out, pos = "", 0
    for start, end, regex in sorted(marks):
        if start < pos:
            continue
        out += _literal(shown[pos:start]) + regex
        pos = end
    out += _literal(shown[pos:])
    return re.compile(out)


def _literal(text: str) -> str:
    parts = [re.escape(p) for p in re.split(r"\s*…\s*", text)]
    return r"\s+".join(".*".join(parts).split(r"\ "))


def normalise(text: str) -> str:
    return re.sub(r"[ \t]+", " ", text)


def missing_lines(shown_block: str, printed: str) -> list[str]:
    """The shown output lines (not the ``$ command`` lines) that no printed line matches."""
    printed_lines = [normalise(x).strip() for x in printed.splitlines()]
    missing, in_release_table = [], False
    for raw in shown_block.splitlines():
        if raw.startswith("$ ") or not raw.strip():
            in_release_table = False
            continue
        if "released value" in raw:
            in_release_table = True
        pattern = line_pattern(normalise(raw).strip(), released_cell=in_release_table)
        if not any(pattern.fullmatch(x) for x in printed_lines):
            missing.append(raw)
    return missing
