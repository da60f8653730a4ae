"""Figure 5: the Gaussian approximations of f_θ (see :mod:`distprivacy.experiments.figures`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from distprivacy.experiments.figures import _style
from distprivacy.experiments.figures._style import (
    P_COLORS,
    _eps_close,
    _figure,
)

# -- Figure 5 -----------------------------------------------------------------------------------


def _samples_for(samples: Mapping[float, np.ndarray], p: float) -> np.ndarray | None:
    for key, arr in samples.items():
        if np.isclose(float(key), p):
            return np.asarray(arr)
    return None


def _bins(columns: Sequence[np.ndarray]) -> np.ndarray | int:
    """Unit-width bins centred on the integers for counts, else 30 common bins."""
    x = np.concatenate([np.asarray(c, dtype=float) for c in columns]) if columns else np.zeros(0)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return 30
    if np.allclose(x, np.round(x)) and x.max() - x.min() <= 200:
        return np.arange(x.min() - 0.5, x.max() + 1.5)
    return np.linspace(x.min(), x.max(), 31)


def _gaussian_pdf(mean: float, variance: float) -> tuple[np.ndarray, np.ndarray]:
    sd = float(np.sqrt(variance))
    grid = np.linspace(mean - 4 * sd, mean + 4 * sd, 200)
    return grid, np.exp(-0.5 * ((grid - mean) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))


def plot_figure5(
    summary: pd.DataFrame,
    samples: Mapping[float, np.ndarray],
    path: str | Path,
    statistic_names: Sequence[str] | None = None,
) -> Path:
    """Figure 5: the Gaussian approximations of the statistics of a subset (income, n = 100).

    One panel per statistic: density histograms of the Monte-Carlo samples at p = 0.45 (green)
    and p = 0.55 (purple), each with the pdf of N(mean, variance) from ``summary``. Where the
    paper prints a variance (count(sex==Female): 18.31, 18.03) a text box compares it to ours.

    Parameters
    ----------
    summary : DataFrame
        :meth:`PaperReproduction.figure5` (first item): ``statistic``, ``p``, ``mean``,
        ``variance``, optionally ``paper_variance``.
    samples : mapping of float to ndarray of shape (R, k)
        The samples per p, columns in the order of ``statistic_names``.
    path : str or Path
    statistic_names : sequence of str, optional
        Names of the columns of the samples; by default the statistics of ``summary`` in order.

    Returns
    -------
    Path
    """
    names = list(statistic_names or dict.fromkeys(summary.statistic))
    ps = sorted(float(p) for p in summary.p.unique())
    arrays = {p: _samples_for(samples, p) for p in ps}
    ncols = 3
    nrows = -(-len(names) // ncols)
    fig, axes = _figure(nrows, ncols, (4.6 * ncols, 3.5 * nrows))
    for k, (ax, name) in enumerate(zip(axes.flat, names, strict=False)):
        cols = [x[:, k] for x in arrays.values() if x is not None]
        bins, handles, notes = _bins(cols), [], []
        for i, p in enumerate(ps):
            c, x = P_COLORS.get(p, f"C{i}"), arrays[p]
            patch = None
            if x is not None:
                patch = ax.hist(x[:, k], bins=bins, density=True, color=c, alpha=0.35)[2][0]
            row = summary[(summary.statistic == name) & _eps_close(summary.p, p)]
            if row.empty:
                continue
            r = row.iloc[0]
            (line,) = ax.plot(*_gaussian_pdf(r["mean"], r.variance), color=c, lw=1.8)
            handles.append(
                (
                    (patch, line) if patch is not None else line,
                    f"p = {p:g}: N({r['mean']:.4g}, {r.variance:.3g})",
                )
            )
            pv = r.get("paper_variance", np.nan)
            if pd.notna(pv):
                notes.append(f"p = {p:g}: ours {r.variance:.2f}, paper {pv:.2f}")
        if notes:
            ax.text(
                0.02,
                0.97,
                "variance\n" + "\n".join(notes),
                transform=ax.transAxes,
                va="top",
                fontsize=7.5,
                bbox={"fc": "white", "ec": "0.6", "alpha": 0.9},
            )
        ax.set_ylim(0, ax.get_ylim()[1] * 1.35)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("value of the statistic")
        ax.set_ylabel("density")
        if handles:
            ax.legend(*zip(*handles, strict=True), fontsize=7.5, loc="upper right")
    for ax in list(axes.flat)[len(names) :]:
        ax.set_axis_off()
    n = {p: len(x) for p, x in arrays.items() if x is not None}
    sizes = ", ".join(f"{v:,} at p = {p:g}" for p, v in n.items())
    fig.suptitle(
        "Figure 5: Gaussian approximations of the statistics of a subset (income, "
        f"n = 100)\nhistograms: Monte-Carlo subsets ({sizes}); lines: N(mean, variance)",
        fontsize=11,
    )
    return _style._save(fig, path)
