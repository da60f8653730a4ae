"""When noise swamps a statistic — the same test for every mechanism (issue 23, item 3).

A statistic is swamped when its noise SD is at least its spread across the datasets the model
describes (its SD under f_θ averaged over θ, :attr:`Calibration.noise_to_sampling` ≥ 1: the
release then says less about this dataset than the population does), or, for a proportion or a
count, when the noise's ±2 SD interval covers the statistic's whole range. Both are unit-free:
rescaling a column rescales its noise and its spread alike.

:func:`flag_swamped` is applied by :meth:`Mechanism.calibrate` to every calibration (and to a
plan's, when it is loaded for a release), so Python users and the command line see the same
caveat.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from distprivacy.exceptions import Notice, SwampedWarning

__all__ = [
    "RANGE_SHARE",
    "flag_swamped",
    "range_text",
    "statistic_ranges",
    "swamped_items",
    "swamped_statistics",
]

#: A bounded statistic is swamped when its noise's ±2 SD interval is at least this share of
#: its range (the interval then covers every possible value).
RANGE_SHARE = 1.0


def statistic_ranges(cal: Any) -> list[tuple[float, float] | None]:
    """Each statistic's possible values, as its kind states them
    (:meth:`~distprivacy.query.Statistic.value_range`: [0, 1] for a proportion, [0, n] for a
    count, n the dataset size), None otherwise or when the query or n is not known (a user's
    model file)."""
    query = getattr(cal, "query", None)
    stats = getattr(query, "statistics", None)
    if stats is None or len(stats) != len(cal.statistic_names) or cal.n is None:
        return [None] * len(cal.statistic_names)
    return [s.value_range(cal.n) for s in stats]


def range_text(r: tuple[float, float]) -> str:
    return f"[{r[0]:g}, {r[1]:g}]"


def swamped_items(cal: Any) -> list[tuple[str, float, str]]:
    """Per swamped statistic: its name, noise SD over spread, and what covers its range."""
    ratio = np.asarray(cal.noise_to_sampling, dtype=float)
    sd = np.asarray(cal.noise_sd, dtype=float)
    out = []
    for name, r, s, rng in zip(cal.statistic_names, ratio, sd, statistic_ranges(cal), strict=True):
        share = None if rng is None or rng[1] <= rng[0] else 4 * s / (rng[1] - rng[0])
        whole = share is not None and share >= RANGE_SHARE
        if (np.isfinite(r) and r >= 1) or whole:
            note = f"±2 SD covers all of {range_text(rng)}" if whole else ""  # type: ignore[arg-type]
            out.append((name, float(r), note))
    return out


def item_text(name: str, r: float, note: str) -> str:
    """One swamped statistic in words: its name, noise SD over spread, the range note."""
    ratio = f" {r:.3g}×" if np.isfinite(r) and r >= 1 else ""
    return f"{name}{ratio}" + (f" ({note})" if note else "")


def swamped_statistics(cal: Any) -> list[str]:
    """The statistics whose noise swamps them, each with by how much (module docstring)."""
    return [item_text(*item) for item in swamped_items(cal)]


def flag_swamped(cal: Any) -> Any:
    """``cal`` with its "swamped" caveat (:class:`~distprivacy.exceptions.SwampedWarning`)
    recomputed by this module's test, replacing any earlier one."""
    kept = tuple(w for w in cal.warnings if getattr(w, "category", None) is not SwampedWarning)
    bad = swamped_statistics(cal)
    if bad:
        kept += (Notice(f"{SwampedWarning.prefix}: {', '.join(bad)}", SwampedWarning),)
    return dataclasses.replace(cal, warnings=kept)
