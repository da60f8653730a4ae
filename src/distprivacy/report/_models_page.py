"""The report of ``distprivacy models audit``: how well attacks told apart models trained at
different shares of protected records (Suri & Evans' game on the user's table). Every number
comes from what the command computed — the populations of
:func:`~distprivacy.inference.models_audit.audit_ratios`, the attacks' scores and the regression of
the share — and none is an exact statistic of the data: the page is written with the usual
file mode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from distprivacy.report._figures import g, pct
from distprivacy.report._html import Page, figure, table
from distprivacy.report._pages import _footer
from distprivacy.report._svg import DASHED, Series, legend_html, line_chart

__all__ = ["models_audit_report"]

#: Says why the page was not written 0600 (the other reports say why they were).
NO_EXACT_NOTE = (
    "This file holds no exact statistic of the data, only the accuracies of attacks on models "
    "trained on random samples of it: it was written with the usual file mode."
)

#: The verdict cell of an attack (raw HTML: the classes of the page's CSS).
_REVEALS = '<span class="verdict-bad">reveals the share</span>'
_BELOW = "below a coin flip (erred consistently)"
_COIN = "not measurably better than a coin flip"


def _share(a: float) -> str:
    return f"{100 * float(a):g} %"


def _pair(ratios: Sequence[float]) -> str:
    return f"{_share(ratios[0])} vs {_share(ratios[1])}"


def _reveals(score: Any) -> bool:
    """Whether the whole 95 % interval of an attack's accuracy lies above a coin flip."""
    return float(score.interval[0]) > 0.5


def _strongest(games: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], Any]:
    """The game and attack whose accuracy interval lies highest (its lower end)."""
    return max(
        ((game, s) for game in games for s in game["attacks"]), key=lambda gs: gs[1].interval[0]
    )


def _statement(
    audit: Any, games: Sequence[Mapping[str, Any]], regression: Sequence[Any], ctx: Mapping
) -> list[str]:
    """The steward's words: what was audited, the verdict, what it does not show."""
    protect = ctx.get("protect") or audit.prep.protect
    trained = sum(p.n_models for p in (*audit.adversary, *audit.victim))
    shares = ", ".join(_share(a) for a in dict.fromkeys(audit.ratios))  # 0.4, 0.4: once
    kind = ctx.get("estimator") or "classifier"
    label = f" to predict {ctx['label']}" if ctx.get("label") else ""
    source = f" on {ctx['data']}" if ctx.get("data") else " on this table"
    n_attacks = len(games[0]["attacks"]) if games else 0
    words = [
        f"This audit asked whether a model ({kind}) trained{source}{label} reveals what share "
        f"of its training records satisfy {protect}. It trained {trained} shadow models on "
        f"samples in which {shares} of the records do, and let {n_attacks} attacks guess, from "
        "each victim model, which share it was trained at."
    ]
    if games:
        game, best = _strongest(games)
        lo, hi = best.interval
        measured = (
            f"the {best.name} guessed right {pct(best.accuracy)} of the time (confidence "
            f"interval {pct(lo)} to {pct(hi)}, {best.n} victim models), where 50 % is a coin flip"
        )
        revealed = [gm for gm in games if any(_reveals(s) for s in gm["attacks"])]
        if revealed:
            where = "" if len(games) == 1 else f" for {len(revealed)} of the {len(games)} pairs"
            words.append(
                f"THE SHARE LEAKS{where}: telling {_pair(game['ratios'])} apart, {measured}. The "
                "whole interval lies above 50 %, so a model trained on this data reveals the "
                "share to an attacker who can train models like it."
            )
            above = sum(_reveals(s) for gm in games for s in gm["attacks"])
            total = sum(len(gm["attacks"]) for gm in games)
            if total > 1:
                words.append(
                    f"{above} of the {total} intervals {'lies' if above == 1 else 'lie'} "
                    "wholly above 50 %. Each holds with 95 % confidence on its own, so among "
                    "this many one may lie there by chance: confirm a lone one with more "
                    "shadow models (--n-models)."
                )
        else:
            where = "" if len(games) == 1 else f" (of the {len(games)} pairs of shares)"
            words.append(
                "No attack did measurably better than a coin flip: every confidence interval "
                f"reaches 50 % or lies below it. The closest call{where}: telling "
                f"{_pair(game['ratios'])} apart, {measured}."
            )
    if regression:
        r = max(regression, key=lambda r: r.gain_interval[0])
        verdict = (
            "it reveals the share"
            if r.gain_interval[0] > 0
            else "it is not measurably better than that guess"
        )
        words.append(
            f"Predicting the share itself, the {r.name} errs by {g(r.mae, 3)} on average "
            f"(confidence interval {g(r.mae_interval[0], 3)} to {g(r.mae_interval[1], 3)}) "
            f"against {g(r.baseline_mae, 3)} for always guessing the mean share: {verdict}."
        )
    words.append(
        "This is a measurement, not a guarantee: other attacks, or more shadow models, may do "
        "better. distprivacy models defend releases a model's outputs with a guaranteed bound."
    )
    return words


def _attacks_table(games: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for game in games:
        for k, s in enumerate(game["attacks"], start=1):
            lo, hi = s.interval
            verdict = _REVEALS if _reveals(s) else (_BELOW if hi < 0.5 else _COIN)
            rows.append(
                [_pair(game["ratios"]), k, s.name, pct(s.accuracy), f"[{pct(lo)}, {pct(hi)}]",
                 g(s.advantage, 3), s.n, verdict]
            )  # fmt: skip
    return table(
        ["shares told apart", "#", "attack", "accuracy", "95 % interval", "advantage",
         "victim models", "verdict"],
        rows,
        caption="Each attack's accuracy at telling the victim's models of one share from those "
        "of the other (half of each; 50 % is a coin flip), with its Clopper–Pearson interval. "
        "A share is revealed when the whole interval lies above 50 %. Advantage: "
        "|P(guess the second share | it is) − P(guess the second share | it is not)|, from 0 "
        "to 1. The audit measures attacks; it computes no bound (models defend does).",
        numeric=(1, 3, 4, 5, 6),
        raw=(7,),
        table_id="statistics-table",
    )  # fmt: skip


def _regression_table(regression: Sequence[Any]) -> str:
    rows = []
    for r in regression:
        lo, hi = r.mae_interval
        glo, ghi = r.gain_interval
        verdict = _REVEALS if glo > 0 else "no better than guessing the mean"
        rows.append(
            [r.name, g(r.mae, 3), f"[{g(lo, 3)}, {g(hi, 3)}]", g(r.baseline_mae, 3),
             f"[{g(glo, 3)}, {g(ghi, 3)}]", r.n, verdict]
        )  # fmt: skip
    return table(
        ["predictor", "mean abs. error", "95 % interval", "guessing the mean", "gain [95 %]",
         "victim models", "verdict"],
        rows,
        caption="The share itself predicted from each victim model (ridge meta-regression), "
        "against always guessing the mean share; a gain interval above 0 reveals the share.",
        numeric=(1, 2, 3, 4, 5),
        raw=(6,),
        table_id="regression-table",
    )  # fmt: skip


def _figure(games: Sequence[Mapping[str, Any]]) -> str:
    """Each attack's accuracy with its 95 % interval, per pair of shares, against a coin
    flip (the attacks numbered as in the table; pairs side by side within an attack)."""
    n = max(len(gm["attacks"]) for gm in games)
    width = min(0.15, 0.6 / len(games))
    offsets = (np.arange(len(games)) - (len(games) - 1) / 2) * width
    series = []
    for j, game in enumerate(games):
        acc = 100 * np.array([s.accuracy for s in game["attacks"]], dtype=float)
        ci = 100 * np.array([s.interval for s in game["attacks"]], dtype=float).reshape(-1, 2)
        label = (
            "accuracy with its 95 % interval"
            if len(games) == 1
            else f"{_pair(game['ratios'])}: accuracy, 95 % interval"
        )
        x = np.arange(1, acc.size + 1) + offsets[j]
        series.append(
            Series(label, x, acc, style=j, low=ci[:, 0], high=ci[:, 1], line=False)
        )  # fmt: skip
    lows = np.concatenate([np.asarray(s.low) for s in series])
    highs = np.concatenate([np.asarray(s.high) for s in series])
    ylim = (
        max(0.0, min(45.0, float(lows.min()) - 3)),
        min(100.0, max(55.0, float(highs.max()) + 3)),
    )
    title = "Measured attack accuracy against a coin flip"
    svg = line_chart(
        series,
        fig_id="fig-models-audit",
        title=title,
        xlabel="attack (numbered as in the table)",
        ylabel="attack accuracy (%)",
        xlog=False,
        ylog=False,
        hlines=[(50.0, "coin flip")],
        ylim=ylim,
        xlim=(0.5, n + 0.5),
        xticks=range(1, n + 1),
    )
    names = "; ".join(f"{k} {s.name}" for k, s in enumerate(games[0]["attacks"], start=1))
    caption = (
        f"Attacks: {names}. Each point is the share of victim models whose training share an "
        "attack guessed right, with its 95 % Clopper–Pearson interval; 50 % is a coin flip. An "
        "interval wholly above the dashed line reveals the share."
    )
    return figure(svg, legend_html(series, [(DASHED, "50 %: a coin flip")]), caption, title=title)


def _given(value: Any) -> str:
    return "—" if value is None else str(value)


def _settings(audit: Any, ctx: Mapping[str, Any]) -> str:
    """What was audited: the data, the property, the models."""
    rows: list[list[str]] = []
    for key, label in (
        ("data", "data"),
        ("protect", "protected property"),
        ("label", "label the models predict"),
        ("features", "features"),
        ("estimator", "model (estimator)"),
    ):
        value = ctx.get(key)
        if key == "features" and value is None:
            value = "every column but the label (the protected column included)"
        if value is not None:
            rows.append([label, str(value)])
    rows.append(["shares of protected records", ", ".join(_share(a) for a in audit.ratios)])
    return table(["setting", "value"], rows, caption="What was audited")


def _checks(
    audit: Any, games: Sequence[Mapping[str, Any]], regression: Sequence[Any], ctx: Mapping
) -> str:
    """What the numbers rest on: models, samples, seeds, the intervals."""
    adv = sorted({p.n_models for p in audit.adversary})
    vic = sorted({p.n_models for p in audit.victim})
    trained = sum(p.n_models for p in (*audit.adversary, *audit.victim))
    tests = sorted({int(np.shape(t[0])[0]) for t in audit.tests})
    scored = sorted({s.n for gm in games for s in gm["attacks"]})
    n_intervals = sum(len(gm["attacks"]) for gm in games)
    white = audit.adversary[0].n_parameters if audit.adversary else 0
    join = ", ".join
    rows = [
        ["shadow models",
         f"{trained} trained: per share, {join(map(str, adv))} for the adversary and "
         f"{join(map(str, vic))} for the victim",
         "the table's rows split at random into two halves; the adversary's models train on "
         "one, the victim's on the other"],
        ["rows per training set", _given(ctx.get("n_train")),
         "drawn from each half with the ratio filter: the share of protected records is fixed"],
        ["adversary's test rows per share", join(map(str, tests)),
         "the data the loss and threshold tests and the black-box meta-classifier query"],
        ["victim models scored per pair of shares", join(map(str, scored)),
         "half trained at each share of the pair"],
        ["white-box attack",
         f"run ({white} parameters per model)" if white > 0 else "not applicable",
         "the sorted-weights meta-classifier needs one parameter vector layout (not trees)"],
        ["confidence intervals", f"{n_intervals} at 95 % (Clopper–Pearson)",
         "each holds on its own: with this many, about one in twenty may miss by chance"],
        ["seed", _given(ctx.get("seed")),
         "the samples, models and attacks are reproducible from it"],
    ]  # fmt: skip
    if regression:
        rows.append(
            ["share regression", f"{len(regression)} predictor(s), {regression[0].n} victim "
             "models", "95 % Student-t intervals over the victim models"]
        )  # fmt: skip
    return table(
        ["what", "value", "what it rests on"],
        rows,
        caption="What the numbers rest on (all from this run)",
    )


def models_audit_report(
    audit: Any,
    games: Sequence[Mapping[str, Any]],
    regression: Sequence[Any] = (),
    *,
    context: Mapping[str, Any],
) -> str:
    """The report of ``distprivacy models audit``.

    Parameters
    ----------
    audit : RatioAudit
        The populations (:func:`~distprivacy.inference.models_audit.audit_ratios`).
    games : sequence of mapping
        One entry per pair of shares, ``{"ratios": [α0, α1], "attacks": [AttackScore]}``
        (:func:`~distprivacy.inference.models_audit.run_attacks` or
        :func:`~distprivacy.inference.models_audit.pairwise_attacks`).
    regression : sequence of RatioRegression, optional
        The regression of the share (three ratios or more).
    context : mapping
        The command's settings: ``protect``, ``data``, ``label``, ``features``,
        ``estimator``, ``n_train``, ``seed`` (each optional: one missing is left out or shown
        as "—").

    Returns
    -------
    str
        The HTML page.
    """
    protect = context.get("protect") or audit.prep.protect
    sub = [f"Protecting the share of {protect} records in the training data"]
    if context.get("data") is not None:
        sub.append(f"Source: {context['data']}")
    page = Page("Model audit report", sub)
    page.statement(_statement(audit, games, regression, context))
    if games:
        tables = _attacks_table(games)
        if regression:
            tables += "<h3>The share itself</h3>" + _regression_table(regression)
        page.section("Per attack", tables)
        page.section("Attack accuracy", _figure(games))
    page.section("What was audited", _settings(audit, context))
    page.section("Assumptions and checks", _checks(audit, games, regression, context))
    return page.render([*_footer(private=False), NO_EXACT_NOTE])
