"""Figures of the model-inference reproduction: Figure 1 (Census panels), Ganju et al.'s two
cases beside the paper's numbers, the ratio regression and the defence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import require_extra
from distprivacy.experiments.model_inference.config import (
    BLACKBOX,
    PAPER,
    PIN,
    PROPERTIES,
    SORTED,
    Config,
)
from distprivacy.outputs import save_figure

__all__ = [
    "ATTACK_STYLE",
    "DPI",
    "plot_all",
    "plot_cases",
    "plot_defence",
    "plot_figure1",
    "plot_regression",
]

DPI = 150
ATTACK_STYLE: dict[str, dict[str, Any]] = {
    "loss test": {"color": "#ff7f0e", "marker": "x", "label": "loss test"},
    "threshold test": {"color": "#2ca02c", "marker": "o", "label": "threshold test (mean ± sd)"},
    SORTED: {"color": "#9467bd", "marker": "s", "label": "sorted-weights meta-classifier"},
    BLACKBOX: {"color": "#7f7f7f", "marker": "^", "label": "black-box meta-classifier"},
}


def _summary(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    g = df.groupby([*keys, "attack"], sort=False)["accuracy"]
    return g.agg(["mean", "std", "count"]).reset_index()


def plot_figure1(df: pd.DataFrame, path: Path) -> Path:
    """Figure 1 (Census panels): per α, box plots of the permutation-invariant meta-classifier
    over repetitions, the loss test (crosses), the threshold test (mean ± sd) and our two
    other meta-classifiers."""
    require_extra("matplotlib", "drawing the figures")
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    props = list(dict.fromkeys(df["property"]))
    fig = Figure(figsize=(6.2 * len(props), 4.6))
    axes = fig.subplots(1, len(props), squeeze=False)[0]
    for ax, prop in zip(axes, props, strict=True):
        d = df[df["property"] == prop]
        alphas = sorted(d["alpha"].unique())
        width = min(0.06, 0.6 * (min(np.diff(alphas)) if len(alphas) > 1 else 0.1))
        pin = [d[(d.alpha == a) & (d.attack == PIN)]["accuracy"].to_numpy() for a in alphas]
        ax.boxplot(
            pin,
            positions=alphas,
            widths=width,
            patch_artist=True,
            boxprops={"facecolor": "#aec7e8", "edgecolor": "#1f77b4"},
            medianprops={"color": "#1f77b4"},
            whiskerprops={"color": "#1f77b4"},
            capprops={"color": "#1f77b4"},
            flierprops={"markeredgecolor": "#1f77b4", "markersize": 3},
            manage_ticks=False,
        )
        offsets = {"loss test": 0, "threshold test": 0.25, SORTED: -0.25, BLACKBOX: 0.4}
        for attack, st in ATTACK_STYLE.items():
            s = _summary(d[d.attack == attack], ["alpha"])
            if s.empty:
                continue
            x = s["alpha"].to_numpy() + offsets[attack] * width
            if attack == "threshold test":
                ax.errorbar(
                    x,
                    s["mean"],
                    yerr=s["std"].fillna(0),
                    fmt=st["marker"],
                    color=st["color"],
                    capsize=3,
                    ms=4,
                    label=st["label"],
                )
            else:
                ax.plot(
                    x,
                    s["mean"],
                    st["marker"],
                    color=st["color"],
                    ms=6,
                    label=st["label"],
                    mfc="none" if attack != "loss test" else st["color"],
                )
        ax.axhline(0.5, color="k", lw=0.8, ls=":")
        ax.set_xlim(min(alphas) - 0.08, max(alphas) + 0.08)
        ax.set_ylim(min(0.4, float(d["accuracy"].min()) - 0.03), 1.02)
        ax.set_xlabel(f"α: share of {PROPERTIES[prop][1]} under G1 (G0: 0.5)")
        ax.set_ylabel("accuracy on the victim's models")
        ax.set_title(f"Census, ratio of {PROPERTIES[prop][1]}")
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        handles.insert(0, Patch(facecolor="#aec7e8", edgecolor="#1f77b4"))
        labels.insert(0, "permutation-invariant meta-classifier")
        ax.legend(handles, labels, fontsize=7, loc="upper center")
    fig.suptitle(
        "Distinguishing G0 from G1 (Suri & Evans, Fig. 1 left and middle) — our reproduction",
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    return path


def plot_cases(df: pd.DataFrame, path: Path) -> Path:
    """Ganju et al.'s cases A and B: our accuracies (mean ± sd) beside the paper's."""
    require_extra("matplotlib", "drawing the figures")
    from matplotlib.figure import Figure

    cases = list(dict.fromkeys(df["case"]))
    attacks = ["loss test", "threshold test", PIN, SORTED, BLACKBOX]
    short = [
        "loss",
        "threshold",
        "perm.-inv.\nmeta-clf",
        "sorted-w.\nmeta-clf",
        "black-box\nmeta-clf",
    ]
    fig = Figure(figsize=(5.6 * len(cases), 4.2))
    axes = fig.subplots(1, len(cases), squeeze=False)[0]
    for ax, case in zip(axes, cases, strict=True):
        d = df[df.case == case]
        s = _summary(d, []).set_index("attack")
        x = np.arange(len(attacks))
        ours = [s["mean"].get(a, np.nan) for a in attacks]
        sd = [0 if pd.isna(s["std"].get(a, np.nan)) else s["std"].get(a) for a in attacks]
        ax.bar(x - 0.18, ours, 0.36, yerr=sd, capsize=3, color="#1f77b4", label="ours")
        pv = [PAPER[case].get(a, (np.nan, None)) for a in attacks]
        pm = [np.nan if v[0] is None else v[0] / 100 for v in pv]
        ps = [0 if v[1] is None else v[1] / 100 for v in pv]
        ax.bar(
            x + 0.18,
            pm,
            0.36,
            yerr=ps,
            capsize=3,
            color="none",
            edgecolor="#d62728",
            hatch="//",
            label="paper (Suri & Evans §3.3)",
        )
        ax.axhline(
            PAPER[case]["ganju"] / 100,
            color="#d62728",
            ls="--",
            lw=0.8,
            label=f"Ganju et al.'s setting ({PAPER[case]['ganju']:g} %)",
        )
        ax.axhline(0.5, color="k", ls=":", lw=0.8)
        r0, r1 = PAPER[case]["ratios"]
        what = PROPERTIES[PAPER[case]["property"]][1]
        ax.set_title(f"case {case}: {r0:.0%} vs {r1:.0%} {what}")
        ax.set_xticks(x, short, fontsize=8)
        ax.set_ylim(0.4, 1.05)
        ax.set_ylabel("accuracy on the victim's models")
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    return path


def plot_regression(preds: pd.DataFrame, summary: pd.DataFrame, path: Path) -> Path:
    """Predicted α per true α (box plots; filled: ratios trained on, hollow: unseen)."""
    require_extra("matplotlib", "drawing the figures")
    from matplotlib.figure import Figure

    props = list(dict.fromkeys(preds["property"]))
    fig = Figure(figsize=(5.6 * len(props), 4.4))
    axes = fig.subplots(1, len(props), squeeze=False)[0]
    for ax, prop in zip(axes, props, strict=True):
        d = preds[preds.property == prop]
        alphas = sorted(d["alpha"].unique())
        for seen, color in ((True, "#aec7e8"), (False, "white")):
            al = [a for a in alphas if bool(d[d.alpha == a]["seen"].iloc[0]) == seen]
            if not al:
                continue
            ax.boxplot(
                [d[d.alpha == a]["prediction"].to_numpy() for a in al],
                positions=al,
                widths=0.05,
                patch_artist=True,
                boxprops={"facecolor": color, "edgecolor": "#1f77b4"},
                medianprops={"color": "#1f77b4"},
                flierprops={"markersize": 2},
                manage_ticks=False,
            )
        ax.plot([0, 1], [0, 1], "k--", lw=0.8, label="prediction = true α")
        s = summary[summary.property == prop]
        mse_seen = s[s.seen_in_training]["mse"].mean()
        mse_unseen = s[~s.seen_in_training]["mse"].mean()
        ax.set_title(
            f"ratio of {PROPERTIES[prop][1]}: MSE {mse_seen:.4f} (trained ratios), "
            f"{mse_unseen:.4f} (unseen)",
            fontsize=9,
        )
        ax.set_xlabel("true α of the victim's training distribution")
        ax.set_ylabel("predicted α")
        ax.set_xlim(-0.08, 1.08)
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(alpha=0.3)
    fig.suptitle(
        "Ratio regression with the permutation-invariant network (after Suri & Evans, Fig. 2 "
        "right); blue boxes: ratios trained on, white: unseen",
        fontsize=9,
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    return path


def plot_defence(df: pd.DataFrame, info: dict[str, Any], path: Path) -> Path:
    """Attack accuracy against ε (with each calibration's bound) and against task accuracy."""
    require_extra("matplotlib", "drawing the figures")
    from matplotlib.figure import Figure

    from distprivacy.experiments.figures import mechanism_color

    fig = Figure(figsize=(12, 4.6))
    ax1, ax2 = fig.subplots(1, 2)
    none = df[df.mechanism == "none"].iloc[0]
    for mech in [m for m in dict.fromkeys(df.mechanism) if m != "none"]:
        d = df[df.mechanism == mech].sort_values("epsilon")
        c = mechanism_color("DP-G" if mech == "DP-range-G" else mech)
        label = "DP (range sensitivity)" if mech == "DP-range-G" else mech
        ax1.plot(d.epsilon, d.likelihood_ratio, "-o", color=c, ms=4, label=f"{label}: LR attack")
        ax1.plot(
            d.epsilon,
            d.meta_classifier,
            "--^",
            color=c,
            ms=4,
            mfc="none",
            label=f"{label}: meta-classifier",
        )
        ax1.plot(
            d.epsilon, d.max_attack_accuracy, ":", color=c, lw=1.2, label=f"{label}: bound Φ(μ/2)"
        )
        best = np.maximum(d.likelihood_ratio, d.meta_classifier)
        ax2.plot(d.task_accuracy, best, "-o", color=c, ms=4, label=label)
        for _, r in d.iterrows():
            ax2.annotate(
                f"{r.epsilon:g}",
                (r.task_accuracy, max(r.likelihood_ratio, r.meta_classifier)),
                fontsize=6,
                xytext=(2, 2),
                textcoords="offset points",
            )
    for ax in (ax1,):
        ax.axhline(
            max(none.likelihood_ratio, none.meta_classifier),
            color="k",
            lw=1,
            label="no defence (best attack)",
        )
        ax.axhline(0.5, color="k", lw=0.6, ls=":")
        ax.set_xscale("log")
        eps = sorted(df.epsilon.dropna().unique())
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.minorticks_off()
        ax.set_xlabel(
            "ε (δ = {:g}); dotted: each calibration's bound Φ(μ/2)".format(
                df.delta.dropna().iloc[0] if df.delta.notna().any() else float("nan")
            )
        )
        ax.set_ylabel("attack accuracy on released outputs")
        ax.legend(fontsize=6, ncol=2)
        ax.grid(alpha=0.3)
    ax2.plot(
        [none.task_accuracy],
        [max(none.likelihood_ratio, none.meta_classifier)],
        "k*",
        ms=10,
        label="no defence",
    )
    ax2.axhline(0.5, color="k", lw=0.6, ls=":")
    ax2.set_xlabel("task accuracy of the noisy outputs (query labels)")
    ax2.set_ylabel("best attack accuracy")
    ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    what = PROPERTIES[info["property"]][1]
    fig.suptitle(
        f"Defending outputs on {info['query_size']} query points: {info['g0']:.0%} vs "
        f"{info['g1']:.0%} {what} (labels on the right: ε)",
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    return path


def plot_all(frames: dict[str, Any], cfg: Config, out: Path) -> dict[str, str]:
    """Write every PNG; returns name -> file name (relative to ``out``)."""
    made: dict[str, Path] = {}
    if "figure1" in frames:
        made["figure1"] = plot_figure1(frames["figure1"], out / "figure1.png")
    if "cases" in frames:
        made["cases"] = plot_cases(frames["cases"], out / "cases.png")
    if "regression" in frames:
        made["regression"] = plot_regression(
            frames["regression_predictions"], frames["regression"], out / "regression.png"
        )
    info = {
        "property": cfg.defence_property,
        "g0": cfg.g0_ratio,
        "g1": cfg.defence_alpha,
        "query_size": cfg.query_size,
    }
    if "defence" in frames:
        made["defence"] = plot_defence(frames["defence"], info, out / "defence.png")
    return {k: v.name for k, v in made.items()}
