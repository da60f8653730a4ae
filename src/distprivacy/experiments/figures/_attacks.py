"""Figures of the attack results: Figure 4 (accuracy against ε) and Table 3 (accuracy by ε and
δ) (see :mod:`distprivacy.experiments.figures`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from distprivacy.experiments import reference as ref
from distprivacy.experiments.figures import _style
from distprivacy.experiments.figures._style import (
    ATTACK_TITLES,
    DEFENCES,
    DELTA_COLORS,
    _eps_close,
    _figure,
    _grid_lines,
    _mechanism_legend,
    _paper_handle,
    _paper_kw,
    _present,
    mechanism_color,
)

# -- Figure 4 -----------------------------------------------------------------------------------


def plot_figure4(df: pd.DataFrame, path: str | Path, table3: pd.DataFrame | None = None) -> Path:
    """Figure 4: attack accuracy on income (p = 0.45 vs 0.55) against ε, δ = 0.001.

    One panel per attack (``attack`` column), log x; lines for the defences with 95 % CI bands,
    no defence as a horizontal line with its band, chance (0.5) dotted. On the paper's attack's
    panel the paper's values are hollow diamonds: no defence 0.75 and Table 3's δ = 0.001 cells.

    Parameters
    ----------
    df : DataFrame
        :meth:`PaperReproduction.figure4`: ``attack``, ``mechanism``, ``epsilon``, ``accuracy``,
        ``ci_low``, ``ci_high``.
    path : str or Path
    table3 : DataFrame, optional
        :meth:`PaperReproduction.table3`, whose ``paper`` column is used; by default
        :data:`reference.TABLE3`.

    Returns
    -------
    Path
    """
    attacks = list(dict.fromkeys(df.attack))
    fig, axes = _figure(1, len(attacks), (5.2 * len(attacks), 4.6), sharey=True)
    if table3 is not None:
        t = table3[(table3.attack == "paper") & (table3.mechanism != "none")]
        paper = {
            (m, float(e), float(d)): float(v)
            for m, e, d, v in zip(t.mechanism, t.epsilon, t.delta, t.paper, strict=True)
        }
    else:
        paper = dict(ref.TABLE3)
    defences = _present(DEFENCES, df) + [
        m for m in dict.fromkeys(df.mechanism) if m not in DEFENCES and m != "none"
    ]
    for ax, attack in zip(axes[0], attacks, strict=True):
        g = df[df.attack == attack]
        for m in defences:
            h = g[g.mechanism == m].sort_values("epsilon")
            c = mechanism_color(m)
            ax.fill_between(h.epsilon, h.ci_low, h.ci_high, color=c, alpha=0.18, lw=0)
            ax.plot(h.epsilon, h.accuracy, "-o", color=c, ms=3, lw=1.6)
        none = g[g.mechanism == "none"]
        if not none.empty:
            r = none.iloc[0]
            ax.axhline(r.accuracy, color=mechanism_color("none"), lw=1.4)
            ax.axhspan(r.ci_low, r.ci_high, color=mechanism_color("none"), alpha=0.12, lw=0)
        ax.axhline(0.5, color="0.4", ls=":", lw=1.2)
        if attack == "paper":
            x0 = float(df.epsilon.min(skipna=True))
            ax.plot(x0, ref.NO_DEFENCE_ACCURACY, **_paper_kw())
            ax.annotate(
                f"no defence, paper: {ref.NO_DEFENCE_ACCURACY:g}",
                (x0, ref.NO_DEFENCE_ACCURACY),
                xytext=(8, 6),
                textcoords="offset points",
                fontsize=8,
            )
            for (m, e, d), v in paper.items():
                if np.isclose(d, 1e-3) and m in defences:
                    ax.plot(e, v, **_paper_kw(mechanism_color(m)))
        ax.set_xscale("log")
        ax.set_ylim(0.45, 0.8)
        ax.set_title(ATTACK_TITLES.get(attack, attack), fontsize=10)
        ax.set_xlabel("ε  (log)")
        _grid_lines(ax)
    axes[0, 0].set_ylabel("attack accuracy")
    extra = [
        Line2D([], [], color=mechanism_color("none"), lw=1.4, label="no defence"),
        Line2D([], [], color="0.4", ls=":", label="chance (0.5)"),
        _paper_handle("paper (§5.3, Table 3 δ = 0.001)"),
    ]
    _mechanism_legend(fig, defences, extra)
    fig.suptitle("Figure 4: attack accuracy on income (p = 0.45 vs 0.55), δ = 0.001, 95 % CI bands")
    return _style._save(fig, path)


# -- Table 3 ------------------------------------------------------------------------------------


def plot_table3(df: pd.DataFrame, path: str | Path) -> Path:
    """Table 3 as a figure: attack accuracy by mechanism, ε and δ.

    One panel per mechanism (ExpM-G, EigM-G, DauM-G); ε categorical on x; per δ (colour, offset)
    the paper's attack run by us (filled circle, 95 % CI), the paper's value (hollow diamond) and
    the adaptive attack (light triangle). No defence: ours (solid) and the paper's 0.75 (dotted).

    Parameters
    ----------
    df : DataFrame
        :meth:`PaperReproduction.table3`: ``attack``, ``mechanism``, ``epsilon``, ``delta``,
        ``accuracy``, ``ci_low``, ``ci_high``, ``paper``.
    path : str or Path

    Returns
    -------
    Path
    """
    mechs = [m for m in dict.fromkeys(df.mechanism) if m != "none"]
    eps = sorted(df.epsilon.dropna().unique())
    deltas = sorted(df.delta.dropna().unique())
    fig, axes = _figure(1, len(mechs), (4.6 * len(mechs), 4.6), sharey=True)
    width = 0.7 / max(len(deltas), 1)
    none = df[(df.mechanism == "none") & (df.attack == "paper")]
    for ax, m in zip(axes[0], mechs, strict=True):
        for k, d in enumerate(deltas):
            c = DELTA_COLORS.get(float(d), f"C{k}")
            off = (k - (len(deltas) - 1) / 2) * width
            for j, e in enumerate(eps):
                sel = (df.mechanism == m) & _eps_close(df.epsilon, e) & _eps_close(df.delta, d)
                ours, adap = df[sel & (df.attack == "paper")], df[sel & (df.attack == "adaptive")]
                if not ours.empty:
                    r = ours.iloc[0]
                    ax.errorbar(
                        j + off,
                        r.accuracy,
                        yerr=[[r.accuracy - r.ci_low], [r.ci_high - r.accuracy]],
                        fmt="o",
                        color=c,
                        ms=5,
                        capsize=2,
                    )
                    if np.isfinite(r.paper):
                        ax.plot(j + off + 0.08, r.paper, **_paper_kw(c, 6.5))
                if not adap.empty:
                    ax.plot(j + off - 0.08, adap.iloc[0].accuracy, "^", color=c, alpha=0.35, ms=6)
        if not none.empty:
            ax.axhline(none.iloc[0].accuracy, color="black", lw=1)
        ax.axhline(ref.NO_DEFENCE_ACCURACY, color="black", ls=":", lw=1.2)
        ax.axhline(0.5, color="0.5", ls=":", lw=0.8)
        ax.set_xticks(range(len(eps)), [f"{e:g}" for e in eps])
        ax.set_xlim(-0.5, len(eps) - 0.5)
        ax.set_ylim(0.45, 0.8)
        ax.set_title(m, color=mechanism_color(m), fontweight="bold")
        ax.set_xlabel("ε")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel("attack accuracy")
    handles = [
        Line2D(
            [],
            [],
            marker="s",
            color=DELTA_COLORS.get(float(d), f"C{k}"),
            ls="none",
            label=f"δ = {d:g}",
        )
        for k, d in enumerate(deltas)
    ]
    handles += [
        Line2D([], [], marker="o", color="0.3", ls="none", label="ours, paper's attack (95 % CI)"),
        Line2D([], [], marker="^", color="0.3", alpha=0.35, ls="none", label="ours, adaptive"),
        _paper_handle("paper (Table 3)"),
        Line2D([], [], color="black", lw=1, label="no defence, ours"),
        Line2D([], [], color="black", ls=":", label="no defence, paper (0.75)"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False, fontsize=9)
    fig.suptitle("Table 3: attack accuracy on income (Δp = 0.1) by ε and δ")
    return _style._save(fig, path)
