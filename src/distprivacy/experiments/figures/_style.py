"""The figures' shared style: one colour per mechanism, the paper's markers, figure and legend
helpers, and :func:`_save` (every figure is written through it; see
:mod:`distprivacy.experiments.figures`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from distprivacy.outputs import save_figure

#: One colour per mechanism (and for no defence), shared by every figure.
MECHANISM_COLORS: dict[str, str] = {
    "ExpM-L": "#1f77b4",  # blue
    "DirM-L": "#17becf",  # cyan
    "ExpM-G": "#ff7f0e",  # orange
    "DirM-G": "#bcbd22",  # olive
    "EigM-G": "#2ca02c",  # green
    "DauM-G": "#d62728",  # red
    "OptM-G": "#e377c2",  # pink
    "GroupDP-G": "#9467bd",  # purple
    "DP-G": "#7f7f7f",  # grey
    "none": "#000000",  # black
}
#: Table 1's five variants of the Expected Value Mechanism (the order of the legends).
TABLE1 = ("ExpM-L", "DirM-L", "ExpM-G", "EigM-G", "DauM-G")
#: Defences of Figure 4.
DEFENCES = ("ExpM-G", "EigM-G", "DauM-G", "GroupDP-G")
#: Colours of δ in the Table 3 figure.
DELTA_COLORS: dict[float, str] = {1e-4: "#440154", 1e-3: "#21918c", 1e-2: "#e5a00d"}
#: Colours of p in Figure 5 (the paper's green and purple).
P_COLORS: dict[float, str] = {0.45: "#2e8b57", 0.55: "#8e44ad"}
#: Titles of the attacks of Figure 4.
ATTACK_TITLES = {
    "paper": "paper's attack (meta-classifier)",
    "adaptive": "adaptive attack (shadows through the mechanism)",
    "likelihood-ratio": "likelihood-ratio attack (Gaussian model)",
}
DPI = 150
L2_LABEL = "L2 error  E‖Z‖₂"


def mechanism_color(name: str) -> str:
    """The colour of mechanism ``name`` (grey-brown for an unknown one)."""
    return MECHANISM_COLORS.get(name, "#8c564b")


def _paper_kw(color: str = "black", size: float = 8.0) -> dict[str, Any]:
    """Style of a value printed in the paper: a hollow diamond edged in the series' colour."""
    return {
        "marker": "D",
        "markersize": size,
        "markerfacecolor": "none",
        "markeredgecolor": color,
        "markeredgewidth": 1.6,
        "linestyle": "none",
        "zorder": 6,
    }


def _paper_handle(label: str = "paper") -> Line2D:
    return Line2D([], [], label=label, **_paper_kw())


def _figure(nrows: int, ncols: int, size: tuple[float, float], **kw: Any) -> tuple[Figure, Any]:
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False, **kw)


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    save_figure(fig, path, dpi=DPI, facecolor="white")  # temporary file + rename
    fig.clear()
    return path


def _grid_lines(ax: Axes, axis: str = "both") -> None:
    ax.grid(axis=axis, which="major", alpha=0.35)
    ax.grid(axis=axis, which="minor", alpha=0.1)


def _present(names: Iterable[str], frame: pd.DataFrame, column: str = "mechanism") -> list[str]:
    have = set(frame[column])
    return [n for n in names if n in have]


def _eps_close(a: Any, b: float) -> np.ndarray:
    return np.isclose(np.asarray(a, dtype=float), b, rtol=1e-9, atol=1e-12)


def _mechanism_legend(fig: Figure, names: Sequence[str], extra: Sequence[Line2D] = ()) -> None:
    """One legend for the whole figure, below the panels: a line per mechanism, then ``extra``."""
    handles = [Line2D([], [], color=mechanism_color(n), label=n, lw=2) for n in names]
    handles += list(extra)
    fig.legend(
        handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=9
    )
