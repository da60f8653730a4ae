"""Figures of the reproduction of Chen & Ohrimenko (2023), §5 and Appendix C, as PNG files.

Each ``plot_*`` function takes the data frame(s) computed by
:class:`distprivacy.experiments.paper.PaperReproduction` (or read back from their CSV files),
writes one PNG and returns its path. The figures are built on :class:`matplotlib.figure.Figure`
objects without :mod:`matplotlib.pyplot`, so no global state (current figure, backend) is touched
and nothing is left open. Every mechanism has one colour throughout (:data:`MECHANISM_COLORS`);
the numbers the paper prints are drawn beside ours as hollow diamonds labelled "paper".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from distprivacy.experiments import reference as ref
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
    return _save(fig, path)


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
    return _save(fig, path)


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
    return _save(fig, path)


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
    return _save(fig, path)


# -- Beyond the paper: accounting and audit ------------------------------------------------------

SETTING_STYLES: dict[str, str] = {
    "classic (paper)": ":",
    "exact, pooled": "--",
    "exact, fitted": "-",
}


def plot_accounting(df: pd.DataFrame, path: str | Path) -> Path:
    """Exact accounting against the classic rule (income, Δp = 0.1).

    Left: expected L2 error against ε, one colour per mechanism and one line style per setting
    (classic dotted, exact pooled dashed, exact fitted solid), the paper's Table 2 as diamonds.
    Right: the δ the classic calibration actually achieves at ε (exact, shared covariance)
    against the nominal δ.

    Parameters
    ----------
    df : DataFrame
        :func:`distprivacy.experiments.beyond.accounting`.
    path : str or Path
    """
    fig, axes = _figure(1, 2, (12.5, 4.8))
    ax = axes[0, 0]
    for (setting, mech), g in df.groupby(["setting", "mechanism"], sort=False):
        g = g.sort_values("epsilon")
        ax.plot(
            g.epsilon,
            g.l2_exact,
            SETTING_STYLES.get(setting, "-"),
            color=mechanism_color(mech),
            lw=1.6,
        )
    for (m, e), v in ref.TABLE2.items():
        if m in set(df.mechanism):
            ax.plot(e, v, **_paper_kw(mechanism_color(m)))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε  (log)")
    ax.set_ylabel(L2_LABEL + "  (log)")
    ax.set_title("Noise needed for the same (ε, δ = 0.001)", fontsize=10)
    _grid_lines(ax)
    handles = [
        Line2D([], [], color=mechanism_color(m), lw=2, label=m) for m in dict.fromkeys(df.mechanism)
    ]
    handles += [
        Line2D([], [], color="0.3", ls=st, lw=1.6, label=lab) for lab, st in SETTING_STYLES.items()
    ]
    handles.append(_paper_handle("paper (Table 2)"))
    ax.legend(handles=handles, fontsize=7.5, loc="lower left", ncol=2)
    ax = axes[0, 1]
    classic = df[df.rule == "classic"]
    for mech, g in classic.groupby("mechanism", sort=False):
        g = g.sort_values("epsilon")
        ax.plot(g.epsilon, g.delta_shared, ":o", color=mechanism_color(mech), ms=3, label=mech)
    nominal = float(df.delta.iloc[0])
    ax.axhline(nominal, color="black", lw=1.2, label=f"nominal δ = {nominal:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε  (log)")
    ax.set_ylabel("exact δ achieved at ε  (log)")
    ax.set_title("The classic rule c = √(2 ln(1.25/δ)): δ it really achieves", fontsize=10)
    _grid_lines(ax)
    ax.legend(fontsize=8)
    fig.suptitle("Exact μ-GDP accounting vs the paper's classic calibration (income, Δp = 0.1)")
    return _save(fig, path)


def plot_audit(df: pd.DataFrame, path: str | Path) -> Path:
    """The audit: each mechanism's empirical ε lower bound (strongest attack) against its claimed
    ε (left; a point above the diagonal refutes the claim), and the best measured accuracy
    against the calibration's bound on any attacker's accuracy (right)."""
    fig, axes = _figure(1, 2, (12.5, 4.8))
    best = (
        df.sort_values("epsilon_lower_bound")
        .groupby(["mechanism", "rule", "epsilon"], sort=False)
        .tail(1)
    )
    top = df.sort_values("accuracy").groupby(["mechanism", "rule", "epsilon"], sort=False).tail(1)
    markers = {"classic": "s", "exact": "o", "pure ε": "^"}
    ax = axes[0, 0]
    for (mech, rule), g in best.groupby(["mechanism", "rule"], sort=False):
        ax.plot(
            g.epsilon,
            g.epsilon_lower_bound.clip(lower=0),
            markers.get(rule, "o"),
            color=mechanism_color(mech),
            ms=6,
            mfc="none" if rule == "classic" else mechanism_color(mech),
        )
    lim = float(df.epsilon.max()) * 1.1
    ax.plot([0, lim], [0, lim], color="black", lw=1, label="lower bound = claimed ε")
    ax.set_xlabel("claimed ε")
    ax.set_ylabel("empirical ε lower bound (≥ 0)")
    ax.set_title("Audit: no bound may exceed the claim", fontsize=10)
    _grid_lines(ax)
    ax = axes[0, 1]
    for (mech, rule), g in top.groupby(["mechanism", "rule"], sort=False):
        ax.errorbar(
            g.accuracy_bound,
            g.accuracy,
            yerr=[g.accuracy - g.accuracy_low, g.accuracy_high - g.accuracy],
            fmt=markers.get(rule, "o"),
            color=mechanism_color(mech),
            mfc="none" if rule == "classic" else mechanism_color(mech),
            ms=5,
            capsize=2,
        )
    ax.plot([0.5, 1.0], [0.5, 1.0], color="black", lw=1)
    ax.set_xlabel("bound on any attacker's accuracy (Φ(μ/2); pure ε: e^ε/(1+e^ε))")
    ax.set_ylabel("best measured accuracy (95 % CI)")
    ax.set_title("Measured accuracy against the exact bound", fontsize=10)
    _grid_lines(ax)
    handles = [
        Line2D([], [], color=mechanism_color(m), lw=0, marker="o", label=m)
        for m in dict.fromkeys(df.mechanism)
    ] + [
        Line2D([], [], color="0.3", lw=0, marker=mk, mfc="none" if r == "classic" else "0.3",
               label=f"rule: {r}")
        for r, mk in markers.items()
        if r in set(df.rule)
    ]  # fmt: skip
    fig.legend(
        handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=8
    )
    fig.suptitle("Audit on real samples of F (income, p = 0.45 vs 0.55, test split)")
    return _save(fig, path)


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
    return _save(fig, path)


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
    return _save(fig, path)


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
