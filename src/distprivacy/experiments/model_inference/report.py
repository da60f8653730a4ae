"""The report of the model-inference reproduction (our numbers beside the paper's, the
differences discussed), and :func:`render`, which rebuilds it and the figures from a finished
run's CSVs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError
from distprivacy.experiments.model_inference.config import (
    BLACKBOX,
    PAPER,
    PIN,
    PROPERTIES,
    SORTED,
    Config,
)
from distprivacy.experiments.model_inference.figures import _summary, plot_all
from distprivacy.intervals import clopper_pearson
from distprivacy.outputs import MARKER, RunFolder, write_text

__all__ = ["FRAMES", "build_report", "render"]


def _pct(x: float) -> str:
    return "—" if x is None or pd.isna(x) else f"{100 * x:.1f}"


def _mean_sd(v: pd.Series) -> str:
    if v.empty:
        return "—"
    if len(v) == 1:
        return f"{100 * v.iloc[0]:.1f}"
    return f"{100 * v.mean():.1f} ± {100 * v.std(ddof=1):.1f}"


def _figure1_table(df: pd.DataFrame, prop: str) -> list[str]:
    d = df[df.property == prop]
    lines = [
        "| α | loss test | threshold test | perm.-inv. meta-classifier | sorted-weights "
        "meta-clf | black-box meta-clf | victim models | test-set rows |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in sorted(d.alpha.unique()):
        x = d[d.alpha == a]
        cells = [
            _mean_sd(x[x.attack == k]["accuracy"])
            for k in ("loss test", "threshold test", PIN, SORTED, BLACKBOX)
        ]
        lines.append(
            f"| {a:g} | " + " | ".join(cells) + f" | {int(x.n.iloc[0])} | {int(x.n_test.iloc[0])} |"
        )
    return lines


def _figure1_findings(df: pd.DataFrame, cfg: Config) -> list[str]:
    """The paper's statements about Figure 1 (§3.3, Census), each checked on our numbers."""
    out = []
    s = _summary(df, ["property", "alpha"])
    piv = s.pivot_table(index=["property", "alpha"], columns="attack", values="mean")
    g0 = cfg.g0_ratio
    off = piv[piv.index.get_level_values("alpha") != g0]
    if off.empty:
        return out
    loss_mean = off["loss test"].mean()
    out.append(
        f'* *"The loss test performs marginally better than random in most cases"*: our loss '
        f"test averages {_pct(loss_mean)} % over the α ≠ {g0:g} settings (range "
        f"{_pct(off['loss test'].min())}–{_pct(off['loss test'].max())} %)."
    )
    wins = int((off["threshold test"] > off[PIN]).sum())
    out.append(
        f'* *"The threshold test often outperforms meta-classifiers"*: ours beats the '
        f"permutation-invariant meta-classifier's mean in {wins} of {len(off)} settings."
    )
    for prop in cfg.properties:
        if prop not in off.index.get_level_values("property"):
            continue
        p = off.loc[prop]
        lo, hi = min(p.index), max(p.index)
        out.append(
            f"* {PROPERTIES[prop][1]}: meta-classifier at α = {lo:g}: {_pct(p.loc[lo, PIN])} %, "
            f"at α = {hi:g}: {_pct(p.loc[hi, PIN])} %; closest to 0.5 "
            f"(α = {p.index[np.argmin(np.abs(p.index - g0))]:g}): "
            f"{_pct(p.loc[p.index[np.argmin(np.abs(p.index - g0))], PIN])} %."
        )
    if "sex" in off.index.get_level_values("property"):
        p = off.loc["sex"]
        if 0.0 in p.index and 1.0 in p.index:
            a0, a1 = p.loc[0.0, PIN], p.loc[1.0, PIN]
            verdict = "as in the paper" if a0 > a1 else "unlike the paper"
            out.append(
                f'* *"The adversary performs better on α = 0.0 than α = 1.0"* (women): ours '
                f"{_pct(a0)} % vs {_pct(a1)} % — {verdict}."
            )
    if "race" in off.index.get_level_values("property"):
        p = off.loc["race"]
        inner = p[(p.index > 0.0) & (p.index < 1.0)][PIN]
        ext = p[(p.index == 0.0) | (p.index == 1.0)][PIN]
        if not inner.empty and not ext.empty:
            out.append(
                f'* *"For race the meta-classifiers barely do better than random guessing '
                f'except at the two extremes"*: ours average {_pct(inner.mean())} % for '
                f"0 < α < 1 and {_pct(ext.mean())} % at α ∈ {{0, 1}}."
            )
    out += _transfer_summary(df[df.alpha != g0])
    if g0 in piv.index.get_level_values("alpha"):
        same = piv.xs(g0, level="alpha")
        out.append(
            f"* Sanity check, α = {g0:g} (G1 = G0, separately trained populations): every attack "
            f"should be at chance; ours range {_pct(same.min().min())}–"
            f"{_pct(same.max().max())} %."
        )
    return out


def _property_weights_section(pw: pd.DataFrame) -> list[str]:
    L = [
        "## A tell in the weights: the property's own feature",
        "",
        "The 42 features include the indicators `sex==Female` and `race==White` (the encoding "
        "is ours; the paper does not list its columns). Under G1 with α = 0 that indicator is 0 "
        "in every training row, so the first-layer weights leaving it receive no gradient from "
        "the data: only the L2 penalty moves them, and Adam's normalised steps turn even a tiny "
        "penalty gradient into steps of about lr each, so they shrink steadily towards 0; at "
        "α = 1 it is a constant 1 and is trained like a bias. The size of those weights "
        "(L2 norm over the 32 first-layer neurons, victim's models, mean ± sd):",
        "",
        "| property | α | norm of the property feature's weights | median norm of the "
        "other features' |",
        "|---|---|---|---|",
    ]
    for _, r in pw.iterrows():
        L.append(
            f"| {r.property} | {r.alpha:g} (G{r.b}) | {r.mean_norm:.3f} ± {r.sd_norm:.3f} | "
            f"{r.median_norm_other_features:.3f} |"
        )
    L += [
        "",
        "Where this norm at α = 0 stands apart from its value at the other ratios, a "
        "white-box meta-classifier has an easy signal — a candidate explanation for the "
        "paper's observation that α = 0.0 is easier than α = 1.0 for women, and for the high "
        "accuracy at 0 % whites, which does not rely on the model having learnt anything "
        "about the distribution.",
        "",
    ]
    return L


def _cases_table(df: pd.DataFrame) -> list[str]:
    lines = [
        "| case | attack | ours (%, mean ± sd) | 95 % CI (run 1) | paper (%) | difference "
        "(points) | on the adversary's own models (%) |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in dict.fromkeys(df.case):
        d = df[df.case == case]
        r0, r1 = PAPER[case]["ratios"]
        what = PROPERTIES[PAPER[case]["property"]][1]
        for attack in ("loss test", "threshold test", PIN, SORTED, BLACKBOX):
            x = d[d.attack == attack]
            if x.empty:
                continue
            paper = PAPER[case].get(attack)
            ptxt = (
                "—"
                if paper is None
                else (f"{paper[0]:g}" + ("" if paper[1] is None else f" ± {paper[1]:g}"))
            )
            diff = "—" if paper is None else f"{100 * x.accuracy.mean() - paper[0]:+.1f}"
            ci = f"[{_pct(x.ci_lo.iloc[0])}, {_pct(x.ci_hi.iloc[0])}]"
            lines.append(
                f"| {case}: {r0:.0%} vs {r1:.0%} {what} | {attack} | "
                f"{_mean_sd(x.accuracy)} | {ci} | {ptxt} | {diff} | "
                f"{_mean_sd(x.adversary_accuracy)} |"
            )
    return lines


def _overfit_findings(df: pd.DataFrame, keys: list[str], gap: float = 0.15) -> list[str]:
    """Attacks that fit the adversary's own models far better than the victim's."""
    out = []
    g = df.groupby([*keys, "attack"], sort=False)
    for key, x in g:
        own, vic = x.adversary_accuracy.mean(), x.accuracy.mean()
        if own - vic < gap:
            continue
        *where, attack = key if isinstance(key, tuple) else (key,)
        share = max(x.g0_pool_share.iloc[0], x.g1_pool_share.iloc[0])
        why = (
            f"each dataset takes up to {share:.0%} of a (property, label) stratum of the "
            "adversary's half, so its models of one distribution share most of their training "
            "rows: the attack has learnt those rows (dataset inference), not the ratio"
            if share >= 0.5
            else f"the datasets overlap little (at most {share:.0%} of a stratum each), so this "
            "is plain overfitting of the attack to the adversary's models"
        )
        out.append(
            f"* {', '.join(f'{k} {v}' for k, v in zip(keys, where, strict=True))}: the {attack} "
            f"scores {_pct(own)} % on the adversary's own models but {_pct(vic)} % on the "
            f"victim's; {why}."
        )
    return out


def _config_from(header: dict[str, Any]) -> Config:
    return Config(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in header["config"].items()}
    )


#: The CSV files a run writes (``render`` reads them back).
FRAMES = (
    "figure1",
    "property_weights",
    "cases",
    "regression",
    "regression_predictions",
    "defence",
)


def render(out_dir: str | Path) -> Path:
    """Rebuild the PNGs and ``report.md`` of a finished run from its CSVs and ``run.json``
    (no training, no attacks), atomically, with a new ``manifest.json``; returns the report's
    path. A folder marked ``INCOMPLETE`` is refused."""
    out = Path(out_dir)
    meta = out / "run.json"
    if (out / MARKER).exists():
        raise DistPrivacyError(
            f"{out} holds an unfinished run (marked {MARKER}); run the reproduction again"
        )
    if not meta.is_file():
        raise DistPrivacyError(f"{out} holds no finished run (no run.json); run it first")
    from distprivacy.files import read_mapping_file

    header = read_mapping_file(meta, "run file")
    csvs = [out / f"{n}.csv" for n in FRAMES if (out / f"{n}.csv").is_file()]
    with RunFolder(out, f"distprivacy models render {out}", keep=True) as folder:
        # The files kept from the run (listed even when an older run wrote no manifest).
        for p in (meta, out / "timings.csv", *csvs):
            folder.add(p)
        try:
            frames = {p.stem: pd.read_csv(p) for p in csvs}
            pngs = plot_all(frames, _config_from(header), out)
            text = build_report(frames, header, pngs)
        except DistPrivacyError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:160]
            raise DistPrivacyError(
                f"{out}: run.json or a CSV is not as 'distprivacy models reproduce' wrote it "
                f"({why}); rerun the reproduction"
            ) from None
        report = write_text(out / "report.md", text)
    return report


def _transfer_summary(df: pd.DataFrame) -> list[str]:
    """Per property and attack: accuracy on the adversary's own models vs the victim's, and
    the settings where heavy dataset overlap explains a gap."""
    out = []
    for (prop, attack), x in df.groupby(["property", "attack"], sort=False):
        own, vic = x.adversary_accuracy.mean(), x.accuracy.mean()
        if own - vic >= 0.15:
            out.append(
                f"* {PROPERTIES[prop][1]}, {attack}: {_pct(own)} % on the adversary's own models "
                f"vs {_pct(vic)} % on the victim's (mean over α ≠ G0) — it fits its training "
                "models far better than it generalises."
            )
    heavy = df[np.maximum(df.g0_pool_share, df.g1_pool_share) >= 0.5]
    for (prop, a), x in heavy.groupby(["property", "alpha"], sort=False):
        share = max(x.g0_pool_share.max(), x.g1_pool_share.max())
        gaps = x.groupby("attack")[["adversary_accuracy", "accuracy"]].mean()
        worst = (gaps.adversary_accuracy - gaps.accuracy).idxmax()
        out.append(
            f"* {PROPERTIES[prop][1]} at α = {a:g}: each dataset takes up to {share:.0%} of a "
            "(property, label) stratum of the adversary's half, so the adversary's models of "
            f"that distribution share most of their rows; the {worst} scores "
            f"{_pct(gaps.adversary_accuracy[worst])} % on them but "
            f"{_pct(gaps.accuracy[worst])} % on the victim's — it learnt those rows (dataset "
            "inference, the confound of Suri & Evans' Appendix A.1), not the ratio."
        )
    return out


def build_report(frames: dict[str, Any], header: dict[str, Any], pngs: dict[str, str]) -> str:
    """The Markdown report: our numbers beside the paper's, differences discussed."""
    cfg = _config_from(header)
    t = header["timings"]
    L: list[str] = []
    L += [
        "# Distribution inference on trained models — Suri & Evans, *Formalizing Distribution "
        "Inference Risks*, on Census (UCI Adult)",
        "",
        f"Command: `{header['command']}` — {t['total']:.1f} s on this machine "
        f"({header['populations']['trained']} populations trained in "
        f"{t['training (inside the stages above)']:.1f} s, {header['populations']['loaded']} "
        "loaded from `populations/`).",
        "",
        f"Settings: {cfg.n_victim:,} victim and {cfg.n_adversary:,} adversary models per "
        f"distribution; MLPs {cfg.hidden} (ReLU) on the 42 Census features, each trained on "
        f"{cfg.n_train:,} rows for {cfg.epochs} epochs (Adam, lr {cfg.lr:g}, batch "
        f"{cfg.batch_size}); G0 at ratio {cfg.g0_ratio:g}, G1 at α ∈ "
        f"{{{', '.join(f'{a:g}' for a in cfg.alphas)}}}; label ratios preserved; victim and "
        f"adversary data disjoint and stratified on sex, race and income (split sizes "
        f"{header['splits']}). {cfg.repetitions} repetitions of the threshold test (choice of "
        f"its {cfg.n_select} selection models per distribution) and of the permutation-invariant "
        f"meta-classifier (seed; {cfg.pin_epochs} epochs). Seed {cfg.seed}.",
        "",
        "Accuracies are over all the victim's models of both distributions (equal numbers, so "
        "chance is 50 %); mean ± sd over repetitions, and the 95 % Clopper–Pearson interval of "
        "one run.",
        "",
    ]
    if "figure1" in frames:
        L += ["## Figure 1 (Census panels)", "", f"![Figure 1]({pngs['figure1']})", ""]
        for prop in cfg.properties:
            L += [f"**Ratio of {PROPERTIES[prop][1]}** (accuracy, %)", ""]
            L += _figure1_table(frames["figure1"], prop)
            L.append("")
        L += [
            "The paper gives Figure 1 only as a plot; its statements about it, checked on ours:",
            "",
            *_figure1_findings(frames["figure1"], cfg),
            "",
        ]
    if "property_weights" in frames and not frames["property_weights"].empty:
        L += _property_weights_section(frames["property_weights"])
    if "cases" in frames:
        L += [
            "## Ganju et al.'s two cases (§3.3)",
            "",
            f"![cases]({pngs['cases']})",
            "",
            *_cases_table(frames["cases"]),
            "",
            "Why the numbers differ (what we know, and what we can only suspect):",
            "",
            "* **Training details the paper does not state.** The size of each training set, the "
            "epochs and optimiser of the Census models, and the meta-classifier's architecture "
            'and training (beyond "permutation-invariant") are not given; ours are listed '
            "above. Both the size of a training set (a larger set pins the property's effect "
            "down more precisely) and the training length change how strongly a model's weights "
            "reflect the ratio, so accuracies can move by many points.",
            "* **How ratios are imposed.** The authors' filter keeps, among random subsamples, "
            "the one closest to α; ours draws datasets with exactly round(α·n) rows with the "
            "property and the pool's label ratio (Appendix A.1), from strata of the adversary's "
            "or victim's half. Their victim/adversary split and ours are both disjoint and "
            "stratified, but the split fractions are ours.",
            "* **Features.** The paper reports 42 one-hot features without naming the columns; "
            "our encoder's choice (see `distprivacy.inference.features`) includes the sex and "
            "race indicators themselves, so a model can weight the property directly.",
            "* **Spread.** The paper's ± is the sd over ten runs; ours is over "
            f"{cfg.repetitions} repetitions with the same trained populations (only the "
            "attack's randomness varies), so our sd leaves out the variation from retraining the "
            "models. The 95 % interval of one run (n victim models) is the binomial part.",
            "* **Ganju et al.'s 97 % / 100 %** (the paper's footnote 2) came from a setting with "
            "victim/adversary overlap and unequal sizes; neither this reproduction nor the "
            "paper's numbers use it.",
            "",
        ]
        over = _overfit_findings(frames["cases"], ["case"])
        if over:
            L += [
                "**Measured: attacks that fit the adversary's models far better than the "
                "victim's** (by more than 15 points). When a ratio leaves few rows to draw from "
                "(0 % whites: only the non-white rows of the adversary's half), all of the "
                "adversary's datasets for it overlap heavily, and a flexible meta-classifier "
                "can separate the adversary's own G0 and G1 models by what those particular "
                "rows did to them; that does not carry over to the victim, whose rows are "
                "disjoint — the dataset-inference confound Suri & Evans guard against in "
                "Appendix A.1:",
                "",
                *over,
                "",
            ]
    if "regression" in frames:
        s = frames["regression"]
        L += [
            "## Ratio regression (§3.3, Fig. 2 right — there on ogbn-arxiv)",
            "",
            f"![regression]({pngs['regression']})",
            "",
            "| property | α | trained on this α | MSE | mean prediction ± sd |",
            "|---|---|---|---|---|",
        ]
        for _, r in s.iterrows():
            L.append(
                f"| {r.property} | {r.alpha:g} | {'yes' if r.seen_in_training else 'no'} | "
                f"{r.mse:.4f} | {r.mean_prediction:.3f} ± {r.sd_prediction:.3f} |"
            )
        L += [
            "",
            "The paper reports the regression only for the mean node degree of ogbn-arxiv (MSE "
            "0.393 ± 0.360 on degrees 9–17, 0.076 on the unseen degrees 12.5 and 13.5); on "
            "Census it gives no number, and a degree's MSE is on another scale than a ratio's, "
            "so there is nothing to compare directly. The ratios not trained on measure the "
            "same generalisation to unseen distributions.",
            "",
        ]
    if "defence" in frames:
        L += _defence_section(frames["defence"], header, pngs)
    L += ["## Timings (seconds)", "", "| stage | s |", "|---|---|"]
    L += [f"| {k} | {v:.1f} |" for k, v in t.items()]
    L.append("")
    return "\n".join(L)


def _bound_check(defended: pd.DataFrame, none: pd.Series) -> list[str]:
    """Is any attack significantly above its calibration's bound Φ(μ/2)? One-sided
    Clopper–Pearson lower limits at 5 % with a Bonferroni correction over every (defence,
    attack) comparison; nominal 95 % exceedances are listed as such."""
    k_total = 2 * len(defended)
    alpha = 0.05 / max(k_total, 1)
    sig, nominal = [], []
    for _, r in defended.iterrows():
        for col in ("likelihood_ratio", "meta_classifier"):
            n = int(r.n_victim)
            k = round(r[col] * n)
            # one-sided lower limits: the lower ends of two-sided intervals at twice the level
            lo = float(clopper_pearson(k, n, 2 * alpha)[0])
            lo95 = float(clopper_pearson(k, n, 0.05)[0])
            name = f"{r.defence} ({col.replace('_', ' ')} {_pct(r[col])} % vs bound "
            name += f"{_pct(r.max_attack_accuracy)} %)"
            if lo > r.max_attack_accuracy:
                sig.append(name)
            elif lo95 > r.max_attack_accuracy:
                nominal.append(name)
    text = (
        f"Undefended, the best attack on the outputs reaches "
        f"{_pct(max(none.likelihood_ratio, none.meta_classifier))} % at task accuracy "
        f"{_pct(none.task_accuracy)} %. "
    )
    if sig:
        text += (
            f"Significantly above the bound (one-sided 5 %, Bonferroni over {k_total} "
            f"comparisons): {'; '.join(sig)} — the Gaussian model of F fitted on the "
            "defender's models does not hold well enough there."
        )
    else:
        text += (
            "No attack accuracy is significantly above its calibration's bound (one-sided "
            f"Clopper–Pearson at 5 %, Bonferroni over {k_total} comparisons)."
        )
    if nominal:
        text += (
            " Above it at the uncorrected 95 % level only (expected now and then among "
            f"{k_total} comparisons): {'; '.join(nominal)}."
        )
    return [text, ""]


def _defence_section(d: pd.DataFrame, header: dict[str, Any], pngs: dict[str, str]) -> list[str]:
    info = header["defence"]
    none = d[d.mechanism == "none"].iloc[0]
    L: list[str] = []
    L += [
        "## Defence: model outputs as a distribution-private release",
        "",
        f"![defence]({pngs['defence']})",
        "",
        f"The released statistic F is a model's vector of probabilities on {info['query_size']} "
        f"fixed query points (from the victim's test split); the pair is {info['g0']:.0%} vs "
        f"{info['g1']:.0%} {PROPERTIES[info['property']][1]}. The mechanisms are calibrated "
        "(exact accounting, fitted covariances) on a Gaussian model of F fitted on half of the "
        "victim's models and evaluated on the other half; the adversary attacks with its own "
        "models, knowing the noise distribution (a likelihood-ratio test between Gaussians "
        "fitted on its models plus the noise covariance, and a logistic-regression "
        "meta-classifier trained on its own noisy outputs). The DP baseline is the Gaussian "
        "mechanism with the output range as sensitivity (any two training sets), at the same "
        "(ε, δ).",
        "",
        "| defence | E‖Z‖₂ | bound Φ(μ/2) | LR attack (%) | meta-classifier (%) | task accuracy "
        "(%) |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in d.iterrows():
        L.append(
            f"| {r.defence} | {r.expected_l2_error:.3g} | {_pct(r.max_attack_accuracy)} | "
            f"{_pct(r.likelihood_ratio)} [{_pct(r.likelihood_ratio_lo)}, "
            f"{_pct(r.likelihood_ratio_hi)}] | {_pct(r.meta_classifier)} | "
            f"{_pct(r.task_accuracy)} |"
        )
    defended = d[d.mechanism != "none"]
    L += ["", *_bound_check(defended, none)]
    if header.get("skipped"):
        L += ["Not applicable:", ""] + [f"* {k}: {v}" for k, v in header["skipped"].items()]
        L.append("")
    return L
