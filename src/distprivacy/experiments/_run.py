"""The shared tail of every reproduction's run: write its tables, figures and report into the
run folder, time the writing, and finish the folder with its manifest.

Every reproduction (the main paper's ``distprivacy reproduce`` targets, ``attribute-privacy``,
``local-distp``, ``model-inference``) ends the same way: inside a
:class:`~distprivacy.outputs.RunFolder` (marked ``INCOMPLETE`` until ``manifest.json`` lists the
files with their SHA-256), write each data frame as ``OUT/<name>.csv``, draw the figures, record
how long that took and the run's total, write ``report.md`` and ``timings.csv``.
:func:`write_run` does exactly that, once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from distprivacy.outputs import PathLike, RunFolder, write_csv, write_text

__all__ = ["write_run"]


def write_run(
    out_dir: PathLike,
    command: str,
    *,
    timings: dict[str, float],
    started: float,
    report: Callable[[Mapping[str, Any]], str],
    frames: Mapping[str, Any] | None = None,
    figures: Callable[[Path], Mapping[str, Any]] | None = None,
    report_path: PathLike | None = None,
    stage: str = "outputs",
    clear: Iterable[PathLike] = ("report.md",),
    cache_dirs: Iterable[str] = (),
    timings_csv: bool = True,
) -> dict[str, Any]:
    """Write a run's outputs into ``out_dir`` as one :class:`~distprivacy.outputs.RunFolder`.

    In order, inside the run folder (every file written atomically and listed in
    ``manifest.json``):

    1. each :class:`pandas.DataFrame` of ``frames`` as ``out_dir/<name>.csv`` (no index; other
       values, e.g. arrays of samples, are left to ``figures``);
    2. ``figures(out_dir)``, which writes the PNGs (and any other file) and returns what the
       report links to, e.g. ``{"figure2": "figure2.png"}``;
    3. ``timings[stage]`` = seconds spent on steps 1–2, ``timings["total"]`` = seconds since
       ``started``;
    4. ``report(made)`` — ``made`` is what ``figures`` returned (``{}`` without it) — whose
       markdown is written to ``report_path``; it may read ``timings`` (e.g. the total);
    5. ``timings`` as ``out_dir/timings.csv`` (a ``seconds`` column), unless ``timings_csv`` is
       false.

    Parameters
    ----------
    out_dir
        The run folder (created if missing; check it beforehand with
        :func:`distprivacy.outputs.check_output_dir` to fail before any computation).
    command
        The command line that started the run (written into the marker and the manifest).
    timings
        Seconds per stage so far; updated in place (``stage`` and ``total``).
    started
        :func:`time.perf_counter` at the start of the run.
    report
        Builds the report's markdown from what ``figures`` returned.
    frames
        Data frames to write as CSV, by file stem.
    figures
        Writes the figures into the folder it is given and returns what the report links to.
    report_path
        Where the report goes (default ``out_dir/report.md``); a path outside the folder is
        listed in the manifest with a relative path.
    stage
        The name of the writing stage in ``timings`` (``"outputs"``; the main paper's is
        ``"plots"``).
    clear
        Files of a previous run deleted on entry (:class:`~distprivacy.outputs.RunFolder`);
        ``report.md`` by default.
    cache_dirs
        Subfolders holding caches, not listed in the manifest (e.g. ``("populations",)``).
    timings_csv
        Whether to write ``timings.csv``.

    Returns
    -------
    dict
        ``{"report": Path, "timings": timings}``.
    """
    out = Path(out_dir)
    report_file = Path(report_path) if report_path is not None else out / "report.md"
    t0 = time.perf_counter()
    with RunFolder(out, command, clear=clear, cache_dirs=cache_dirs):
        for name, frame in (frames or {}).items():
            if isinstance(frame, pd.DataFrame):
                write_csv(frame, out / f"{name}.csv", index=False)
        made: Mapping[str, Any] = figures(out) if figures is not None else {}
        timings[stage] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - started
        write_text(report_file, report(made))
        if timings_csv:
            write_csv(pd.Series(timings, name="seconds"), out / "timings.csv")
    return {"report": report_file, "timings": timings}
