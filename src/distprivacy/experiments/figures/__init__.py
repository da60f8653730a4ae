"""Figures of the reproduction of Chen & Ohrimenko (2023), §5 and Appendix C, as PNG files.

Each ``plot_*`` function takes the data frame(s) computed by
:class:`distprivacy.experiments.paper.PaperReproduction` (or read back from their CSV files),
writes one PNG and returns its path. The figures are built on :class:`matplotlib.figure.Figure`
objects without :mod:`matplotlib.pyplot`, so no global state (current figure, backend) is touched
and nothing is left open. Every mechanism has one colour throughout (:data:`MECHANISM_COLORS`);
the numbers the paper prints are drawn beside ours as hollow diamonds labelled "paper".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# First (imports sort it first): without matplotlib, the [figures] extra, one line says so.
from distprivacy.experiments.figures import _requires  # noqa: F401
from distprivacy.experiments.figures._approximation import plot_figure5
from distprivacy.experiments.figures._attacks import plot_figure4, plot_table3
from distprivacy.experiments.figures._beyond import SETTING_STYLES, plot_accounting, plot_audit
from distprivacy.experiments.figures._errors import plot_figure2, plot_figure3, plot_table2
from distprivacy.experiments.figures._style import (
    ATTACK_TITLES,
    DEFENCES,
    DELTA_COLORS,
    DPI,
    L2_LABEL,
    MECHANISM_COLORS,
    P_COLORS,
    TABLE1,
    mechanism_color,
)
from distprivacy.experiments.figures._style import _save as _save

__all__ = [
    "ATTACK_TITLES",
    "DEFENCES",
    "DELTA_COLORS",
    "DPI",
    "L2_LABEL",
    "MECHANISM_COLORS",
    "P_COLORS",
    "SETTING_STYLES",
    "TABLE1",
    "mechanism_color",
    "plot_accounting",
    "plot_all",
    "plot_audit",
    "plot_figure2",
    "plot_figure3",
    "plot_figure4",
    "plot_figure5",
    "plot_table2",
    "plot_table3",
]

# The shared style (colours, markers, ``_save``) is in ``_style``; the figures by subject in
# ``_errors`` (Table 2, Figures 2 and 3), ``_attacks`` (Figure 4, Table 3), ``_approximation``
# (Figure 5) and ``_beyond`` (accounting, audit). Every figure is written through
# ``_style._save``.

# -- all ----------------------------------------------------------------------------------------


def plot_all(frames_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Every figure from the CSV files of a full run (``table2.csv``, ``figure2.csv``, ...,
    ``figure5_samples.npz`` with arrays ``p0.45``, ``p0.55``); skips the missing ones.

    Returns
    -------
    list of Path
        The PNGs written to ``out_dir``.
    """
    src, out = Path(frames_dir), Path(out_dir)

    def load(name: str) -> pd.DataFrame | None:
        f = src / f"{name}.csv"
        return pd.read_csv(f) if f.is_file() else None

    t2, t3 = load("table2"), load("table3")
    f2, f3, cr, f4, f5 = (
        load(n) for n in ("figure2", "figure3", "figure3_crossover", "figure4", "figure5")
    )
    written = []
    if t2 is not None:
        written.append(plot_table2(t2, out / "table2.png"))
    if f2 is not None:
        written.append(plot_figure2(f2, out / "figure2.png", t2))
    if f3 is not None and cr is not None:
        written.append(plot_figure3(f3, cr, out / "figure3.png"))
    if f4 is not None:
        written.append(plot_figure4(f4, out / "figure4.png", t3))
    if t3 is not None:
        written.append(plot_table3(t3, out / "table3.png"))
    npz = src / "figure5_samples.npz"
    if f5 is not None and npz.is_file():
        with np.load(npz) as z:
            samples = {float(k.removeprefix("p")): z[k] for k in z.files}
        written.append(plot_figure5(f5, samples, out / "figure5.png"))
    return written
