"""Figures of the main paper's error results: Table 2, Figure 2 (error against ε) and Figure 3
(error against Δp) (see :mod:`distprivacy.experiments.figures`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from distprivacy.experiments import reference as ref
from distprivacy.experiments.figures import _style
from distprivacy.experiments.figures._style import (
    L2_LABEL,
    TABLE1,
    _eps_close,
    _figure,
    _grid_lines,
    _paper_handle,
    _paper_kw,
    mechanism_color,
)

# -- Table 2 ------------------------------------------------------------------------------------


def plot_table2(df: pd.DataFrame, path: str | Path) -> Path:
    """Table 2 as a dot plot: L2 error protecting income (Δp = 0.1, δ = 0.001).

    Left: for each mechanism × ε, our exact E‖Z‖₂ (filled circle), the paper's protocol repeated
    over modelling seeds (mean ± sd, hollow square with error bar) and the paper's value (hollow
    diamond), on a log axis. Right: the same divided by the paper's value, with the ±10 %
    tolerance band.

    Parameters
    ----------
    df : DataFrame
        :meth:`PaperReproduction.table2`: ``mechanism``, ``epsilon``, ``l2_exact``,
        ``protocol_mean``, ``protocol_sd``, ``paper``.
    path : str or Path
        The PNG to write.

    Returns
    -------
    Path
    """
    mechs = list(dict.fromkeys(df.mechanism))
    eps = sorted(df.epsilon.unique())
    fig, ((ax, rax),) = _figure(1, 2, (12, 4.8), width_ratios=[1.25, 1])
    ticks, labels = [], []
    for i, m in enumerate(mechs):
        c = mechanism_color(m)
        for j, e in enumerate(eps):
            row = df[(df.mechanism == m) & _eps_close(df.epsilon, e)]
            if row.empty:
                continue
            r = row.iloc[0]
            x = i * (len(eps) + 1) + j
            ticks.append(x)
            labels.append(f"{e:g}")
            paper = float(r.paper)
            for a, scale in ((ax, 1.0), (rax, paper)):
                a.plot(x - 0.22, r.l2_exact / scale, "o", color=c, ms=7)
                a.errorbar(
                    x,
                    r.protocol_mean / scale,
                    yerr=r.protocol_sd / scale,
                    fmt="s",
                    mfc="none",
                    color=c,
                    ms=6,
                    capsize=3,
                    lw=1.2,
                )
                if np.isfinite(paper):
                    a.plot(x + 0.22, paper / scale, **_paper_kw(c))
        for a in (ax, rax):
            a.text(
                i * (len(eps) + 1) + (len(eps) - 1) / 2,
                1.01,
                m,
                color=c,
                ha="center",
                va="bottom",
                fontweight="bold",
                transform=a.get_xaxis_transform(),
            )
    ax.set_yscale("log")
    ax.set_ylabel(f"{L2_LABEL}  (log)")
    ax.set_title("Table 2: L2 error, income Δp = 0.1, δ = 0.001", pad=18)
    rax.axhline(1, color="black", lw=0.8)
    rax.axhspan(
        1 - ref.TABLE2_RTOL,
        1 + ref.TABLE2_RTOL,
        color="0.9",
        zorder=0,
        label=f"±{ref.TABLE2_RTOL:.0%} tolerance (ε < 5)",
    )
    rax.set_ylabel("ours / paper's value")
    rax.set_title("relative to the paper", pad=18)
    for a in (ax, rax):
        a.set_xticks(ticks, labels)
        a.set_xlabel("ε  (grouped by mechanism)")
        _grid_lines(a, "y")
    handles = [
        Line2D([], [], marker="o", color="0.3", ls="none", label="ours: exact E‖Z‖₂"),
        Line2D(
            [],
            [],
            marker="s",
            mfc="none",
            color="0.3",
            label="paper's protocol run by us: mean ± sd",
        ),
        _paper_handle("paper (printed)"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    rax.legend(loc="best", fontsize=8)
    return _style._save(fig, path)


# -- Figure 2 -----------------------------------------------------------------------------------


def _l2_panel(ax: Axes, df: pd.DataFrame, x: str, mechs: Sequence[str]) -> bool:
    """Lines of ``l2_exact`` and small hollow markers of ``l2_mean_of_draws`` against ``x``, on a
    log y axis; an error of exactly 0 (no noise needed) is a triangle on the bottom edge.

    Returns
    -------
    bool
        Whether any exact error is 0.
    """
    zeros = False
    for m in mechs:
        g = df[df.mechanism == m].sort_values(x)
        if g.empty:
            continue
        c = mechanism_color(m)
        ls = "--" if m == "DP-G" else "-"
        ax.plot(g[x], g.l2_exact.where(g.l2_exact > 0), color=c, lw=1.8, ls=ls, label=m)
        ax.plot(
            g[x],
            g.l2_mean_of_draws.where(g.l2_mean_of_draws > 0),
            "o",
            color=c,
            ms=3,
            mfc="none",
            mew=0.8,
            alpha=0.8,
        )
        z = g[g.l2_exact <= 0]
        if not z.empty:
            zeros = True
            ax.plot(
                z[x],
                np.full(len(z), 0.015),
                "v",
                color=c,
                ms=5,
                clip_on=False,
                transform=ax.get_xaxis_transform(),
            )
    ax.set_yscale("log")
    _grid_lines(ax)
    return zeros


def _l2_legend(fig: Figure, mechs: Sequence[str], zeros: bool, paper: str | None) -> None:
    handles = [
        Line2D([], [], color=mechanism_color(m), lw=2, label=m, ls="--" if m == "DP-G" else "-")
        for m in mechs
    ]
    handles.append(
        Line2D(
            [],
            [],
            marker="o",
            color="0.3",
            ms=3,
            mfc="none",
            ls="none",
            label="mean of noise draws",
        )
    )
    if zeros:
        handles.append(
            Line2D(
                [],
                [],
                marker="v",
                color="0.3",
                ms=5,
                ls="none",
                label="exact error 0 (no noise needed)",
            )
        )
    if paper:
        handles.append(_paper_handle(paper))
    fig.legend(
        handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=9
    )


def plot_figure2(df: pd.DataFrame, path: str | Path, table2: pd.DataFrame | None = None) -> Path:
    """Figure 2: L2 error against ε (log-log), δ = 0.001.

    Panels: (a) income, Δp = 0.1, the five mechanisms of Table 1; (b) work class, Δp = 0.04,
    Laplace mechanisms; (c) work class, Gaussian mechanisms. Lines are the exact E‖Z‖₂, small
    hollow circles the mean of the noise draws; on (a) the paper's Table 2 values (ExpM-G,
    EigM-G, DauM-G at ε = 0.2, 1, 5) are hollow diamonds.

    Parameters
    ----------
    df : DataFrame
        :meth:`PaperReproduction.figure2`: ``property``, ``delta_p``, ``mechanism``, ``epsilon``,
        ``l2_exact``, ``l2_mean_of_draws``.
    path : str or Path
    table2 : DataFrame, optional
        :meth:`PaperReproduction.table2`, whose ``paper`` column is used; by default
        :data:`reference.TABLE2`.

    Returns
    -------
    Path
    """
    if table2 is not None:
        paper = {
            (m, float(e)): float(v)
            for m, e, v in zip(table2.mechanism, table2.epsilon, table2.paper, strict=True)
        }
    else:
        paper = dict(ref.TABLE2)
    fig, axes = _figure(1, 3, (15, 4.9), sharey=False)
    lap = [m for m in TABLE1 if m.endswith("-L")]
    gau = [m for m in TABLE1 if m.endswith("-G")]
    panels = [
        ("income", TABLE1, "(a) income"),
        ("workclass", lap, "(b) work class, Laplace"),
        ("workclass", gau, "(c) work class, Gaussian (δ = 0.001)"),
    ]
    zeros = False
    for ax, (prop, mechs, title) in zip(axes[0], panels, strict=True):
        g = df[df.property == prop]
        if g.empty:
            ax.set_axis_off()
            continue
        zeros |= _l2_panel(ax, g, "epsilon", mechs)
        ax.set_xscale("log")
        ax.set_title(f"{title},  Δp = {g.delta_p.iloc[0]:g}")
        ax.set_xlabel("ε  (log)")
        ax.set_ylabel(f"{L2_LABEL}  (log)")
        if prop == "income":
            for (m, e), v in paper.items():
                if m in mechs and np.isfinite(v):
                    ax.plot(e, v, **_paper_kw(mechanism_color(m)))
    _l2_legend(fig, TABLE1, zeros, "paper (Table 2)")
    fig.suptitle("Figure 2: privacy–utility trade-off (lines: exact E‖Z‖₂)")
    return _style._save(fig, path)


# -- Figure 3 -----------------------------------------------------------------------------------


def plot_figure3(df: pd.DataFrame, crossover: pd.DataFrame, path: str | Path) -> Path:
    """Figure 3: L2 error against Δp at ε = 1, δ = 0.001, beside the DP Gaussian mechanism.

    One panel per property (income, work class), log y; the five mechanisms of Table 1 and
    DP-G (dashed; constant in Δp). Vertical lines mark where DauM-G crosses DP-G: ours (solid,
    DauM-G's colour) and the paper's stated Δp (dotted black).

    Parameters
    ----------
    df : DataFrame
        :meth:`PaperReproduction.figure3`.
    crossover : DataFrame
        :meth:`PaperReproduction.crossover`: ``property``, ``crossing_delta_p``, ``paper``.
    path : str or Path

    Returns
    -------
    Path
    """
    props = list(dict.fromkeys(df.property))
    fig, axes = _figure(1, len(props), (6.2 * len(props), 4.9))
    mechs = [*TABLE1, "DP-G"]
    cross = crossover.set_index("property") if len(crossover) else crossover
    zeros = False
    for ax, prop in zip(axes[0], props, strict=True):
        g = df[df.property == prop]
        zeros |= _l2_panel(ax, g, "delta_p", mechs)
        ax.set_xlabel("Δp  (protected p = 0.5 ± Δp/2)")
        ax.set_ylabel(f"{L2_LABEL}  (log)")
        ax.set_title(
            f"{'work class' if prop == 'workclass' else prop},  "
            f"ε = {g.epsilon.iloc[0]:g}, δ = 0.001"
        )
        if prop in cross.index:
            ours, theirs = cross.loc[prop, "crossing_delta_p"], cross.loc[prop, "paper"]
            if np.isfinite(ours):
                ax.axvline(
                    ours,
                    color=mechanism_color("DauM-G"),
                    lw=1.2,
                    label=f"DauM-G = DP-G, ours: Δp ≈ {ours:.3f}",
                )
            if np.isfinite(theirs):
                ax.axvline(
                    theirs,
                    color="black",
                    ls=":",
                    lw=1.5,
                    label=f"paper: DauM-G < DP-G for Δp ≤ {theirs:g}",
                )
            ax.legend(
                handles=[
                    h for h in ax.get_lines() if h.get_label().startswith(("DauM-G =", "paper"))
                ],
                loc="lower right",
                fontsize=8,
                framealpha=0.9,
            )
    _l2_legend(fig, mechs, zeros, None)
    fig.suptitle(
        "Figure 3: error against Δp, beside the DP Gaussian mechanism "
        "(which gives no distribution privacy)"
    )
    return _style._save(fig, path)
