"""The reproduction report: every number of ours beside the paper's, with the difference, the
tolerance, and an explanation for every difference beyond it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.experiments import reference as ref


def _f(x: Any, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, float | np.floating):
        return f"{x:.{nd}f}" if abs(x) < 1e4 else f"{x:.1f}"
    return str(x)


def _pct(x: float) -> str:
    return "—" if x is None or math.isnan(x) else f"{x:+.1%}"


def _ok(flag: Any) -> str:
    if flag is None or (isinstance(flag, float) and math.isnan(flag)):
        return ""
    return "✓" if bool(flag) else "✗"


def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def table2_section(df: pd.DataFrame, beyond: list[str]) -> str:
    rows = []
    for r in df.itertuples():
        rows.append(
            [
                r.mechanism,
                _f(r.epsilon, 1),
                _f(r.paper, 2),
                _f(r.l2_exact, 2),
                _f(r.l2_mean_of_draws, 2),
                f"{r.protocol_mean:.2f} ± {r.protocol_sd:.2f}",
                _pct(r.rel_diff_exact),
                f"{r.paper_z_in_protocol:+.2f}",
                _ok(r.within_tolerance),
            ]
        )
        if not bool(r.within_tolerance):
            beyond.append(
                f"Table 2, {r.mechanism} at ε = {r.epsilon:g}: ours {r.l2_exact:.2f} vs paper "
                f"{r.paper:.2f} ({_pct(r.rel_diff_exact)}). The paper's figure is one run of a "
                f"protocol whose spread we measured: {r.protocol_mean:.2f} ± "
                f"{r.protocol_sd:.2f} over modelling seeds, so the paper's value lies "
                f"{r.paper_z_in_protocol:+.2f} SD from its mean; the gap is the protocol's own "
                "sampling noise (Monte-Carlo estimate of Δ_E,2 from 1,000 subsets per θ, and "
                "the mean of 50 noise draws), not a difference in the mechanism."
            )
    tol = (
        f"Tolerance: ±{ref.TABLE2_RTOL:.0%} at ε ∈ {{0.2, 1}} (on the exact value); the same "
        "order of magnitude (within a factor 2) at ε = 5."
    )
    return "\n\n".join(
        [
            "## Table 2 — L2 error, income Δp = 0.1, δ = 0.001",
            "*ours, exact* is E‖Z‖₂ of the calibrated noise (no sampling error); *ours, 50 draws* "
            "is the paper's measurement (mean ‖Z‖₂ of 50 draws) on the same calibration; *paper's "
            "protocol* repeats the paper's whole procedure (Monte-Carlo model with sample moments, "
            "then 50 draws) over several modelling seeds: mean ± SD. *z* places the paper's value "
            "in that distribution.",
            _table(
                [
                    "mechanism",
                    "ε",
                    "paper",
                    "ours, exact",
                    "ours, 50 draws",
                    "paper's protocol",
                    "exact vs paper",
                    "z (paper)",
                    "ok",
                ],
                rows,
            ),
            tol,
        ]
    )


def table3_section(df: pd.DataFrame, beyond: list[str]) -> str:
    p = df[df.attack == "paper"].set_index(["mechanism", "epsilon", "delta"], drop=False)
    extra = {
        a: df[df.attack == a].set_index(["mechanism", "epsilon", "delta"]).accuracy
        for a in ("adaptive", "likelihood-ratio")
    }
    rows = []
    for key, r in p.iterrows():
        half = (r.ci_high - r.ci_low) / 2
        rows.append(
            [
                r.mechanism,
                _f(r.epsilon, 1),
                "—" if math.isnan(r.delta) else f"{r.delta:g}",
                _f(r.paper),
                f"{r.accuracy:.3f} ± {half:.3f}",
                f"{r['diff']:+.3f}",
                _ok(r.within_tolerance),
                _f(extra["adaptive"].get(key, np.nan)),
                _f(extra["likelihood-ratio"].get(key, np.nan)),
            ]
        )
        if r.within_tolerance == 0:
            beyond.append(
                f"Table 3, {r.mechanism} at ε = {r.epsilon:g}, δ = {r.delta:g}: ours "
                f"{r.accuracy:.3f} (95% CI ± {half:.3f}) vs paper {r.paper:.3f}. Each cell is a "
                "mean over repetitions of 200 test datasets; the paper's cell carries the same "
                "sampling error (its own CI half-width is about ±0.01), so differences of "
                "this size are expected for a few of the 28 cells."
            )
    return "\n\n".join(
        [
            "## Table 3 and §5.3 — attack accuracy on income (p = 0.45 vs 0.55)",
            "*ours* follows the paper's protocol: logistic regression trained on the clean "
            "statistics of 200 shadow datasets from the auxiliary data, scored on 200 noisy test "
            "releases, mean over repetitions with a 95 % t-interval. Two stronger attackers the "
            "paper does not run: *adaptive* trains on shadows passed through the same mechanism; "
            "*LR* is the likelihood-ratio test on the attacker's Gaussian model (optimal when the "
            "model holds).",
            _table(["defence", "ε", "δ", "paper", "ours", "diff", "ok", "adaptive", "LR"], rows),
            f"Tolerance: ±{ref.ATTACK_ATOL} (paper's protocol; the first row is §5.3's no-defence "
            "figure of 0.75).",
        ]
    )


def figure3_section(cross: pd.DataFrame, beyond: list[str], png: str | None) -> str:
    rows = []
    for r in cross.itertuples():
        ok = (
            abs(r.crossing_delta_p - r.paper) <= 0.02
            if not math.isnan(r.crossing_delta_p)
            else False
        )
        rows.append(
            [
                str(r.property),
                _f(r.paper, 2),
                _f(r.crossing_delta_p, 3),
                _f(r.largest_grid_delta_p_below_dp, 2),
                _ok(ok),
            ]
        )
        if not ok:
            beyond.append(
                f"Figure 3, {r.property}: DauM-G crosses the DP Gaussian mechanism at Δp = "
                f"{_f(r.crossing_delta_p)} vs the paper's ≈ {r.paper}. The crossing depends on "
                "Δ_E,2 and on the data's ranges (the DP sensitivity), both estimated on a random "
                "modelling split; see the figure."
            )
    parts = [
        "## Figure 3 — error against Δp at ε = 1, δ = 0.001, against the DP Gaussian mechanism",
        "The largest Δp at which DauM-G adds less noise than the DP Gaussian mechanism "
        "(group size 1, which gives no distribution privacy):",
        _table(
            ["property", "paper", "ours, crossing (interpolated)", "ours, largest grid Δp", "ok"],
            rows,
        ),
        "Tolerance: within one grid step (0.02) of the paper's value.",
    ]
    if png:
        parts.append(f"![Figure 3]({png})")
    return "\n\n".join(parts)


_ATTACK_LABEL = {
    "paper": "paper's protocol",
    "adaptive": "adaptive",
    "likelihood-ratio": "likelihood ratio",
}


def figure4_section(df: pd.DataFrame, png: str | None) -> str:
    eps = df.epsilon.dropna()
    lo = float(eps.min()) if len(eps) else math.nan
    first = df[(df.epsilon == lo)]
    rows = [[_ATTACK_LABEL[r.attack], r.mechanism, f"{r.accuracy:.3f}"] for r in first.itertuples()]
    none = df[df.mechanism == "none"]
    parts = [
        "## Figure 4 — attack accuracy against ε (δ = 0.001)",
        "No defence: "
        f"{', '.join(f'{_ATTACK_LABEL[r.attack]} {r.accuracy:.3f}' for r in none.itertuples())} "
        f"(paper: {ref.NO_DEFENCE_ACCURACY}). The paper states that ε = 0.1 brings the attack "
        f"to near 50 %; ours at ε = {lo:g}:",
        _table(["attack", "defence", "accuracy"], rows),
    ]
    big = df[(df.epsilon == df.epsilon.max()) & (df.mechanism != "none")]
    if len(big):
        rows_big = [
            [_ATTACK_LABEL[r.attack], r.mechanism, f"{r.accuracy:.3f}"] for r in big.itertuples()
        ]
        parts += [
            f"At ε = {df.epsilon.max():g} the defence-aware attackers are much stronger "
            "than the paper's protocol suggests:",
            _table(["attack", "defence", "accuracy"], rows_big),
        ]
    if png:
        parts.append(f"![Figure 4]({png})")
    return "\n\n".join(parts)


def figure2_section(df: pd.DataFrame, png: str | None) -> str:
    parts = [
        "## Figure 2 — privacy-utility trade-offs (δ = 0.001)",
        "The paper prints no numbers for Figure 2 beyond Table 2 (marked on panel a). Ours, "
        "exact E‖Z‖₂ at the grid's ends:",
    ]
    rows = []
    for (prop, mech), g in df.groupby(["property", "mechanism"], sort=False):
        g = g.sort_values("epsilon")
        rows.append([str(prop), str(mech), _f(g.l2_exact.iloc[0], 2), _f(g.l2_exact.iloc[-1], 2)])
    e0, e1 = df.epsilon.min(), df.epsilon.max()
    parts.append(_table(["property", "mechanism", f"ε = {e0:g}", f"ε = {e1:g}"], rows))
    if png:
        parts.append(f"![Figure 2]({png})")
    return "\n\n".join(parts)


def figure5_section(df: pd.DataFrame, png: str | None) -> str:
    rows = [
        [r.statistic, f"{r.p:g}", _f(r.mean, 3), _f(r.variance, 3), _f(r.paper_variance, 2)]
        for r in df.itertuples()
    ]
    parts = [
        "## Figure 5 — Gaussian approximations of f_θ (income, p = 0.45 and 0.55)",
        "Sample mean and variance of each statistic over the Monte-Carlo subsets; Appendix C.1 "
        "quotes the variance of the number of women (18.31 at p = 0.45, 18.03 at p = 0.55):",
        _table(["statistic", "p", "mean", "variance", "paper variance"], rows),
    ]
    if png:
        parts.append(f"![Figure 5]({png})")
    return "\n\n".join(parts)


def accounting_section(df: pd.DataFrame, summary: pd.DataFrame, png: str | None) -> str:
    """Beyond the paper: exact accounting against the classic rule."""
    pick = sorted({float(e) for e in df.epsilon if any(np.isclose(e, [0.2, 1.0, 5.0, 10.0]))})
    rows = []
    for r in df[df.epsilon.isin(pick)].itertuples():
        rows.append(
            [
                r.setting,
                r.mechanism,
                f"{r.epsilon:g}",
                _f(r.l2_exact, 2),
                _f(r.paper_l2, 2),
                _f(r.mu, 4),
                f"{r.delta_achieved:.3g}",
                _f(r.max_attack_accuracy, 4),
            ]
        )
    checks = []
    for r in summary.itertuples():
        req = "" if math.isnan(r.required_ratio) else f"≤ {r.required_ratio:g}"
        ok = "" if not req else _ok(r.ratio <= r.required_ratio)
        checks.append(
            [
                r.check,
                r.mechanism,
                f"{r.value:.4g}",
                f"{r.reference:.4g}",
                f"{r.ratio:.3g}",
                req,
                ok,
            ]
        )
    parts = [
        "## Beyond the paper — exact accounting (income, Δp = 0.1, δ = 0.001)",
        "Every Gaussian mechanism is μ-Gaussian-DP with μ = max over Ψ of "
        "√((μ_i − μ_j)ᵀ (S + Σ_Z)⁻¹ (μ_i − μ_j)), and (ε, δ)-distribution private exactly when "
        "δ ≥ Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018). *classic (paper)*: "
        "c = √(2 ln(1.25/δ)), each θ's own covariance; *exact, pooled*: the largest μ meeting "
        "(ε, δ) exactly, one covariance per pair (the paper's modelling assumption); *exact, "
        "fitted* (the library's default): also the exact privacy profile of the two fitted "
        "Gaussians with their unequal covariances meets (ε, δ). δ achieved: the exact δ at ε of "
        "the calibrated noise, the worse of the shared- and unequal-covariance figures. See "
        "`docs/accounting.md`.",
        "Checks:",
        _table(["check", "mechanism", "ours", "reference", "ratio", "required", ""], checks),
        _table(
            [
                "setting",
                "mechanism",
                "ε",
                "E‖Z‖₂",
                "paper",
                "μ",
                "δ achieved",
                "max attack acc.",
            ],
            rows,
        ),
    ]
    if png:
        parts.append(f"![Exact accounting]({png})")
    return "\n\n".join(parts)


def audit_section(df: pd.DataFrame, png: str | None) -> str:
    """Beyond the paper: the audit table."""
    best = (
        df.sort_values("epsilon_lower_bound")
        .groupby(["mechanism", "rule", "epsilon"], sort=False)
        .tail(1)
        .sort_values(["mechanism", "rule", "epsilon"])
    )
    acc = df.groupby(["mechanism", "rule", "epsilon"]).accuracy.idxmax()
    rows = []
    for r in best.itertuples():
        a = df.loc[acc[(r.mechanism, r.rule, r.epsilon)]]
        lb = "none" if not r.epsilon_lower_bound > 0 else f"{r.epsilon_lower_bound:.3f}"
        rows.append(
            [
                r.mechanism,
                r.rule,
                f"{r.epsilon:g}",
                lb,
                r.attack,
                f"{a.accuracy:.3f} [{a.accuracy_low:.3f}, {a.accuracy_high:.3f}]",
                f"{r.accuracy_bound:.3f}",
                _ok(not r.refuted and not (df.loc[acc[(r.mechanism, r.rule, r.epsilon)]]
                                           .accuracy_exceeded)),
            ]
        )  # fmt: skip
    n_ref = int(df.refuted.sum())
    n_acc = int(df.accuracy_exceeded.sum())
    parts = [
        "## Beyond the paper — audit on real samples of F",
        f"{int(df.n_test.iloc[0]):,} test datasets (half at each p) drawn from the test split, "
        "noise from the mechanism; three attacks (likelihood ratio with the attacker's moments, "
        "logistic regression and gradient-boosted trees trained on noisy shadows); threshold "
        "chosen on a separate split; Clopper–Pearson intervals, α = 0.05 split over the attacks "
        "(`distprivacy.mechanism_audit`). A lower bound above the claimed ε, or an accuracy "
        "interval wholly above the bound on any attacker's accuracy, would refute the calibration.",
        f"Refuted claims: {n_ref}; accuracies above their bound: {n_acc} (of {len(best)} audits).",
        _table(
            [
                "mechanism",
                "rule",
                "claimed ε",
                "ε lower bound",
                "strongest attack",
                "best accuracy [95 % CI]",
                "accuracy bound",
                "consistent",
            ],
            rows,
        ),
    ]
    if png:
        parts.append(f"![Audit]({png})")
    return "\n\n".join(parts)


def build_report(
    frames: Mapping[str, Any],
    pngs: Mapping[str, str],
    header: Mapping[str, Any],
) -> str:
    """Markdown report of whichever tables/figures are in ``frames``."""
    beyond: list[str] = []
    sections = []
    if "table2" in frames:
        s = table2_section(frames["table2"], beyond)
        if "table2" in pngs:
            s += f"\n\n![Table 2]({pngs['table2']})"
        sections.append(s)
    if "table3" in frames:
        s = table3_section(frames["table3"], beyond)
        if "table3" in pngs:
            s += f"\n\n![Table 3]({pngs['table3']})"
        sections.append(s)
    if "figure2" in frames:
        sections.append(figure2_section(frames["figure2"], pngs.get("figure2")))
    if "figure3" in frames:
        sections.append(figure3_section(frames["figure3_crossover"], beyond, pngs.get("figure3")))
    if "figure4" in frames:
        sections.append(figure4_section(frames["figure4"], pngs.get("figure4")))
    if "figure5" in frames:
        sections.append(figure5_section(frames["figure5"], pngs.get("figure5")))
    if "accounting" in frames:
        sections.append(
            accounting_section(
                frames["accounting"], frames["accounting_summary"], pngs.get("accounting")
            )
        )
    if "audit" in frames:
        sections.append(audit_section(frames["audit"], pngs.get("audit")))
    head = [
        "# Reproduction of Chen & Ohrimenko (2023), §5",
        f"Generated by `{header['command']}` in {header['seconds']:.1f} s "
        f"(seed {header['seed']}; {header['mode']}). Data: {header['data']}; split at random "
        "into 10,000 auxiliary, 10,000 test and "
        f"{header['modelling_rows']:,} modelling records (§5.1). Models of f_θ: "
        f"{header['model']}.",
        "As in the paper, the Gaussian mechanisms use the classic calibration "
        "c = √(2 ln(1.25/δ)) at every ε, although Theorem 4.2 proves it only for ε < 1: the "
        "guarantees at ε ≥ 1 in these tables are the paper's, not established ones (the "
        "sections *Beyond the paper* compare with exact accounting and audit every mechanism).",
    ]
    diffs = ["## Differences beyond the tolerance"]
    diffs.append(
        "\n".join(f"- {b}" for b in beyond)
        if beyond
        else "None: every compared number is within its tolerance."
    )
    return "\n\n".join([*head, *diffs, *sections]) + "\n"
