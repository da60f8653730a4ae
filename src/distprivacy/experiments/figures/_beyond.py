"""Figures beyond the paper: exact accounting against the classic rule, and the audit (see
:mod:`distprivacy.experiments.figures`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.lines import Line2D

from distprivacy.experiments import reference as ref
from distprivacy.experiments.figures import _style
from distprivacy.experiments.figures._style import (
    L2_LABEL,
    _figure,
    _grid_lines,
    _paper_handle,
    _paper_kw,
    mechanism_color,
)

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
    return _style._save(fig, path)


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
    return _style._save(fig, path)
