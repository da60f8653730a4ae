"""The four reports: ``calibrate``, ``release``, ``audit`` and ``ledger show``. Each is one
HTML string (:class:`~distprivacy.report._html.Page`); the numbers come from the objects the
command computed (and, for the curves, :func:`~distprivacy.report._curves.sweep`)."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from typing import Any

from distprivacy._version import __version__
from distprivacy.report._curves import Sweep
from distprivacy.report._figures import (
    accuracy_figure,
    assumptions_section,
    audit_figure,
    g,
    noise_words,
    pct,
    protected_section,
    utility_figure,
)
from distprivacy.report._html import Page, esc, figure, prose, table
from distprivacy.report._interval import noise_halfwidths
from distprivacy.report._svg import DASHED, Series, integer_ticks, legend_html, line_chart

__all__ = ["audit_report", "calibrate_report", "ledger_report", "release_report"]

#: The probability of the noise intervals shown.
LEVEL = 0.95

PRIVATE_NOTE = (
    "This file holds exact statistics of the data (the model's typical values and spreads): "
    "it was written readable by its owner only (mode 0600)."
)

#: Why the ledger's report is 0600 (issue 30): it holds no exact statistic, but the ledger's
#: contents, which the ledger file keeps 0600.
LEDGER_NOTE = (
    "This file holds the ledger's contents (its releases, the datasets' fingerprints, the "
    "protected properties, the budget spent): it was written readable by its owner only (mode "
    "0600), as the ledger is."
)


#: At the top of a page holding exact statistics.
REVIEW_NOTICE = (
    "Internal: this page holds exact statistics of the data (the model's typical values and "
    "spreads) and was written readable by its owner only (mode 0600). Do not publish it; "
    "`release --report FILE` writes the page to publish."
)


def values_hint(spec: Any) -> str:
    """How to choose ``--values``, with this spec's own pairs (the terminal's line too)."""
    text = (
        "Choosing --values: shares of the protected property that bracket the true one, which "
        "an attacker must not tell apart; the guarantee covers exactly the listed pairs"
    )
    if spec is None:
        return text + "."
    pairs = dict.fromkeys(tuple(sorted((float(a), float(b)))) for a, b in spec.pairs)
    return f"{text} (here {'; '.join(f'{a:g} vs {b:g}' for a, b in pairs)})."


#: The footer of a public page (``release --report``).
PUBLIC_NOTE = (
    "This page holds no exact statistic of the data: only the released (noisy) values, their "
    "intervals, the guarantee and the method. It may be published (written with mode 0644)."
)


def _footer(private: bool, public: bool = False) -> list[str]:
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        f"Made by distprivacy {__version__} on {now}. Self-contained: no script, nothing loaded."
    ]
    if private:
        out.append(PRIVATE_NOTE + " Do not publish it: `release --report` writes the page to "
                   "publish.")  # fmt: skip
    if public:
        out.append(PUBLIC_NOTE)
    return out


def _rel(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return pct(x) if x < 10 else f"{x:.3g}×"


def _mechanisms_table(cals: Sequence[Any], chosen: str | None) -> str:
    rows = []
    for c in cals:
        rows.append(
            [
                c.mechanism + (" (chosen)" if c.mechanism == chosen else ""),
                noise_words(c),
                g(c.expected_l2_error),
                g(c.epsilon),
                g(c.delta_achieved, 3),
                "—" if c.mu is None else g(c.mu),
                pct(c.max_attack_accuracy),
                "verified" if c.verified else "assumed",
                c.theorem.split(" (")[0],
            ]
        )
    return table(
        [
            "mechanism",
            "noise",
            "E‖Z‖₂",
            "ε",
            "δ achieved",
            "μ",
            "max. attack acc.",
            "basis",
            "proof",
        ],
        rows,
        caption="Every applicable mechanism, calibrated (E‖Z‖₂: expected L2 error, exact)",
        numeric=(2, 3, 4, 5, 6),
    )


def _per_statistic(c: Any) -> str:
    """Noise SD, the 95 % noise interval, relative error and noise/sampling SD of one
    calibration."""
    h = noise_halfwidths(c.noise, LEVEL)
    rows = [
        [name, g(sd), f"± {g(hw)}", _rel(float(re)), g(ns, 3)]
        for name, sd, hw, re, ns in zip(
            c.statistic_names, c.noise_sd, h, c.relative_error, c.noise_to_sampling, strict=True
        )
    ]
    return table(
        ["statistic", "noise SD", "95 % noise interval", "noise SD / typical value",
         "noise SD / sampling SD"],
        rows,
        caption=f"{c.mechanism}: the noise on each statistic (a released value lies within the "
        "interval of the true one with probability 95 %)",
        numeric=(1, 2, 3, 4),
        table_id="statistics-table",
    )  # fmt: skip


#: Mechanisms per table of the noise matrix: more would make it scroll sideways on a laptop
#: and lose columns on paper.
MATRIX_COLUMNS = 4


def _matrix(cals: Sequence[Any]) -> str:
    """Noise SD per statistic and mechanism: tables of at most :data:`MATRIX_COLUMNS`
    mechanisms each, every one repeating the statistic column."""
    groups = [cals[k : k + MATRIX_COLUMNS] for k in range(0, len(cals), MATRIX_COLUMNS)]
    out = []
    for j, group in enumerate(groups, 1):
        rows = []
        for k, name in enumerate(group[0].statistic_names):
            rows.append(
                [name] + [f"{g(c.noise_sd[k])} ({_rel(float(c.relative_error[k]))})" for c in group]
            )
        part = f", part {j} of {len(groups)}" if len(groups) > 1 else ""
        out.append(
            table(
                ["statistic", *[c.mechanism for c in group]],
                rows,
                caption="Noise SD per statistic and mechanism (in brackets: SD / typical value)"
                + part,
                numeric=tuple(range(1, len(group) + 1)),
            )
        )
    return "".join(out)


def _spec(model: Any) -> Any:
    return getattr(model, "spec_", None)


def calibrate_report(
    calibrations: Sequence[Any],
    *,
    model: Any,
    context: Mapping[str, Any],
    best: str | None,
    sweep: Sweep,
    not_applicable: Mapping[str, str] | None = None,
) -> str:
    """The report of ``distprivacy calibrate``.

    Parameters
    ----------
    calibrations : sequence of Calibration
        Every applicable mechanism's calibration.
    model : FModel
        The model they were calibrated on (its ``spec_`` says what is protected).
    context : mapping
        What the command prints with ``--json`` besides the calibrations (data, spec,
        settings).
    best : str or None
        The mechanism named best (the chosen point of the figures).
    sweep : Sweep
        The curves (:func:`~distprivacy.report.sweep`).
    not_applicable : mapping, optional
        Mechanism → reason it was left out.
    """
    from distprivacy.wording import statement

    spec = _spec(model)
    cals = list(calibrations)
    page = Page("Calibration report", _subtitle(spec, context))
    first = next((c for c in cals if c.mechanism == best), cals[0] if cals else None)
    if first is not None:
        words = statement(spec, first.statistic_names, first.guarantee, released=False)
        page.statement(
            [
                words,
                f"Figures for {first.mechanism}, the recommended mechanism (the least noise "
                "among the verified mechanisms available in this install; release uses it by "
                "default); every applicable mechanism is compared below.",
            ]
        )
    else:
        page.statement(["No mechanism is applicable: nothing can be released with a guarantee."])
    page.notice(REVIEW_NOTICE)
    page.section(
        "What is protected",
        protected_section(spec, context) + f"<p>{prose(values_hint(spec))}</p>",
    )
    if first is not None:
        page.section(
            "Per statistic",
            _per_statistic(first) + "<h3>Every mechanism</h3>" + _matrix(cals),
        )
        page.section("Mechanisms", _mechanisms_table(cals, first.mechanism))
        chosen = (first.mechanism, first.epsilon, first.expected_l2_error)
        page.section(
            "Privacy and utility",
            utility_figure(sweep, chosen)
            + accuracy_figure(sweep, (first.mechanism, first.epsilon, first.max_attack_accuracy)),
        )
    page.section("Assumptions and checks", assumptions_section(cals, not_applicable))
    return page.render(_footer(private=True))


def _subtitle(spec: Any, context: Mapping[str, Any]) -> list[str]:
    out = []
    if spec is not None:
        out.append(f"Protecting {spec.predicate} in datasets of {spec.n} records")
    src = context.get("data") or context.get("model_file") or context.get("plan")
    if src is not None:
        out.append(f"Source: {src}")
    return out


def release_report(
    calibration: Any,
    release: Any,
    *,
    spec: Any,
    context: Mapping[str, Any],
    sweep: Sweep,
    ledger: Mapping[str, Any] | None = None,
    public: bool = False,
) -> str:
    """The report of ``distprivacy release``.

    Parameters
    ----------
    calibration, release
        What the release used and drew.
    spec : ProtectionSpec or None
        What is protected.
    context : mapping
        The command's settings and sources.
    sweep : Sweep
        The curves (:func:`~distprivacy.report.sweep`).
    ledger : mapping, optional
        The ledger's record of the release (its cumulative guarantee).
    public : bool
        The page to publish (``release --report``): the released values with their intervals,
        the guarantee, what is protected and the method — no exact statistic, no column
        relative to the data's own values, no path, no warning quoting the data's spreads;
        written 0644. Otherwise the review page (``--review-report``): every figure, written
        0600.
    """
    from distprivacy.wording import statement

    c, rel = calibration, release
    title = "Release" if public else "Release report (internal review)"
    page = Page(title, _subtitle(spec, {} if public else context))
    demo = "(demonstration)" in str(context.get("target", ""))
    page.statement(
        [statement(spec, rel.statistic_names, c.guarantee, released=True, demonstration=demo)]
    )
    page.notice(PUBLIC_NOTE if public else REVIEW_NOTICE)
    pub = rel.published  # the published values and intervals, as the terminal states them
    rows = []
    for k, (name, v, lo, hi, sd) in enumerate(
        zip(rel.statistic_names, pub.values, pub.low, pub.high, c.noise_sd, strict=True)
    ):
        interval = "—" if math.isnan(lo) or math.isnan(hi) else f"[{lo:.4f}, {hi:.4f}]"
        row = [name, f"{v:.4f}" + (" *" if k in pub.clipped else ""), interval, g(sd)]
        if not public:
            row.append(_rel(float(c.relative_error[k])))
        rows.append(row)
    header = ["statistic", "released value", "95 % interval", "noise SD"]
    released = table(
        header if public else [*header, "noise SD / typical value"],
        rows,
        caption=f"Released by {c.mechanism}: the true value lies in the interval with "
        "probability 95 % over the noise",
        numeric=(1, 2, 3, 4),
        table_id="statistics-table",
    )
    for k in pub.clipped:
        released += (
            f'<p class="small">* {esc(rel.statistic_names[k])}: the noisy value '
            f"{g(pub.raw[k])} was clipped into its range [{g(pub.ranges[k][0])}, "
            f"{g(pub.ranges[k][1])}], and its interval with it; post-processing keeps the "
            "guarantee.</p>"
        )
    if not c.adds_noise:
        released += (
            '<p class="verdict-bad">No noise was added: these are the TRUE statistics '
            "(--allow-exact).</p>"
        )
    else:  # the exactness gate's findings (issue 31), as the terminal says them
        for e in getattr(rel, "exact_statistics", ()):
            kind = "" if e.justified else ' class="verdict-bad"'
            note = e.describe().replace("`allow_exact=True`", "--allow-exact")
            released += f"<p{kind}>{prose(note)}</p>"
    page.section("Released statistics", released)
    if public:
        page.section("The guarantee", _guarantee_section(c) + _verification(c))
        page.section("What is protected", protected_section(spec, _public_context(context)))
        page.section("Method", _method_section(c, rel))
        page.section(
            "Privacy",
            accuracy_figure(sweep, (c.mechanism, c.epsilon, c.max_attack_accuracy)),
        )
    else:
        page.section("What is protected", protected_section(spec, context))
        page.section(
            "Privacy and utility",
            utility_figure(sweep, (c.mechanism, c.epsilon, c.expected_l2_error))
            + accuracy_figure(sweep, (c.mechanism, c.epsilon, c.max_attack_accuracy)),
        )
        checks = [
            (
                "the released dataset looks like one the model describes",
                "support and plausibility checked before the noise was drawn (Mahalanobis "
                "distance to the nearest share within the χ² limit at level 10⁻¹²)",
                "passed",
            ),
            (
                "the noise came from a secure generator",
                "yes" if rel.secure else "no: --seed makes it reproducible (never publish it)",
                "passed" if rel.secure else "FAILED",
            ),
        ]
        page.section(
            "Assumptions and checks", _verification(c) + assumptions_section([c], None, checks)
        )
    if ledger is not None:
        cum = ledger["cumulative"]
        where = "the steward's ledger" if public else f"ledger {ledger['ledger']}"
        budget = "" if public else f" (budget {ledger['budget']})"
        text = (
            f"Recorded in {where}{budget} as release "
            f"{ledger.get('releases_of_this_secret', ledger['releases_of_this_dataset'])} under "
            f"its secret {ledger.get('secret', '')}: all the secret's releases together, "
            "whatever dataset they read, "
            f"give ε = {g(cum['epsilon'])} at δ = {g(cum['delta'], 3)}"
            + (
                ""
                if cum.get("mu") is None or not cum.get("gdp", True)
                else f", μ = {g(cum['mu'])}-GDP"
            )
            + f", no attacker above {pct(cum['max_attack_accuracy'])} accuracy."
        )
        page.section("Ledger", f"<p>{prose(text)}</p>")
    return page.render(_footer(private=not public, public=public))


#: Settings a public page may show (no path, no source).
_PUBLIC_KEYS = ("epsilon", "delta", "calibration", "covariances", "target_mu",
                "max_attack_accuracy")  # fmt: skip


def _public_context(context: Mapping[str, Any]) -> dict[str, Any]:
    return {k: context[k] for k in _PUBLIC_KEYS if context.get(k) is not None}


def _guarantee_section(c: Any) -> str:
    """The guarantee in words and figures, from the release's own guarantee object (the one
    the statement states): (ε, δ) and other points of its curve, μ only when the release is
    μ-GDP (issue 33), the attack bound, verified or not."""
    gu = getattr(c, "guarantee", None) or c
    acc = getattr(gu, "max_attack_accuracy", None)
    acc = c.max_attack_accuracy if acc is None else acc
    rows = [
        ["ε (privacy loss)", g(gu.epsilon)],
        ["δ (probability the ε bound may fail)", g(gu.delta, 3)],
    ]
    if getattr(gu, "mu", None) is not None and getattr(gu, "is_gdp", False):
        rows.append(["μ (Gaussian differential privacy)", g(gu.mu)])
    for eps, dlt in getattr(gu, "curve_points", lambda: ())():
        if eps != gu.epsilon:
            rows.append([f"δ at ε = {g(eps)} (the same noise's exact profile)", g(dlt, 3)])
    verified = bool(getattr(gu, "verified", c.verified))
    rows += [
        ["best accuracy of any attacker", f"{pct(acc)} (50 % is a coin flip)"],
        ["checked for the noise drawn", "verified" if verified else "assumed, not verified"],
    ]
    words = (
        "<p>Whatever an attacker knows besides this release, seeing it cannot tell the protected "
        "shares apart better than the accuracy below. The guarantee rests on the assumptions "
        "listed with the method.</p>"
    )
    return words + table(["guarantee", "value"], rows, caption="The guarantee of this release")


def _method_section(c: Any, rel: Any) -> str:
    """The mechanism, its theorem, the noise's family and what the guarantee assumes."""
    rows = [
        ["mechanism", c.mechanism],
        ["theorem", c.theorem],
        ["noise", noise_words(c)],
        ["expected L2 error E‖Z‖₂", g(c.expected_l2_error)],
        ["noise generator", "secure" if rel.secure else "seeded (not for publication)"],
    ]
    out = table(["method", "value"], rows, caption="How the noise was calibrated and drawn")
    if c.assumptions:
        out += (
            '<h3>What the guarantee assumes</h3><ul class="plain">'
            + "".join(f"<li>{prose(a)}</li>" for a in c.assumptions)
            + "</ul>"
        )
    return out


def _verification(c: Any) -> str:
    """What the guarantee checked on the data and what it assumes, in sentences (the words
    the terminal prints: :func:`distprivacy.mechanisms._verification.checked_and_assumed`)."""
    if not hasattr(c, "basis"):
        return ""
    from distprivacy.mechanisms._verification import checked_and_assumed

    found = checked_and_assumed(c, released=True)
    out = "<p>Checked on the data:</p><ul>" + "".join(f"<li>{esc(x)}</li>" for x in found.checked)
    out += "</ul>"
    if found.assumed:
        items = "".join(f"<li>{esc(x.replace('`', ''))}</li>" for x in found.assumed)
        out += f"<p>Assumed:</p><ul>{items}</ul>"
    return out


def audit_report(
    results: Sequence[Any],
    calibrations: Sequence[Any],
    *,
    model: Any,
    context: Mapping[str, Any],
    sweep: Sweep,
    not_applicable: Mapping[str, str] | None = None,
) -> str:
    """The report of ``distprivacy audit``: per mechanism the claimed ε, the measured lower
    bound and the best attack's accuracy against the bound, on the accuracy curve."""
    from distprivacy.wording import protected_sentence

    spec = _spec(model)
    page = Page("Audit report", _subtitle(spec, context))
    refuted = [r.mechanism for r in results if r.refuted]
    k = context.get("audit_samples")
    what = protected_sentence(spec) if spec is not None else "the model's protected shares"
    words = [
        f"This audit drew {k} real datasets at each value of the hardest protected pair and "
        f"tried to tell them apart from each mechanism's release, to test whether it keeps "
        f"secret {what}."
    ]
    if results:

        def margin(r: Any) -> float:  # how close the best attack came to refuting it
            return max(a.accuracy_interval[0] for a in r.attacks) - r.accuracy_bound

        worst = max(results, key=margin)
        top = max(worst.attacks, key=lambda a: a.accuracy_interval[0])
        lo, hi = top.accuracy_interval
        if refuted:
            words.append(
                f"REFUTED for {', '.join(refuted)}: an attack did better than the guarantee "
                "allows, so the model behind that guarantee fails on the real data."
            )
        else:
            words.append(
                f"No claimed guarantee was refuted. The closest call was {worst.mechanism}: "
                f"its best attack ({top.attack}) guessed right {pct(top.accuracy)} of the time "
                f"(confidence interval {pct(lo)} to {pct(hi)}) against a bound of "
                f"{pct(worst.accuracy_bound)}, where 50 % is a coin flip"
                + (
                    " — above the bound, though not significantly"
                    if top.accuracy > worst.accuracy_bound
                    else ""
                )
                + "; a claim is refuted only when the whole interval lies above the bound or "
                "the ε lower bound exceeds the claimed ε."
            )
    page.statement(words)
    rows = []
    for r in results:
        top = max(r.attacks, key=lambda a: a.accuracy)
        best = max(r.attacks, key=lambda a: a.epsilon_lower_bound)
        lo, hi = top.accuracy_interval
        lb = r.epsilon_lower_bound
        verdict = (
            '<span class="verdict-bad">REFUTED</span>'
            if r.refuted
            else '<span class="verdict-ok">consistent</span>'
        )
        rows.append(
            [
                r.mechanism, g(r.claimed_epsilon), g(r.delta, 3),
                g(lb, 3) if lb > 0 else "none (≤ 0)",
                f"{pct(top.accuracy)} [{pct(lo)}, {pct(hi)}]", pct(r.accuracy_bound),
                best.attack, verdict,
            ]
        )  # fmt: skip
    page.section(
        "Per mechanism",
        table(
            ["mechanism", "claimed ε", "δ", "ε lower bound", "best attack acc. [CI]",
             "acc. bound", "strongest attack", "verdict"],
            rows,
            caption="Empirical lower bounds on ε (each holds with probability ≥ 1 − α; above "
            "the claimed ε it refutes the claim)",
            numeric=(1, 2, 3, 4, 5),
            raw=(7,),
            table_id="statistics-table",
        ),
    )  # fmt: skip
    page.section("What is protected", protected_section(spec, context))
    cals = list(calibrations)
    if cals:
        page.section("Noise per statistic", _matrix(cals))
    page.section(
        "Privacy and utility",
        (audit_figure(results, sweep.mechanisms) if results else "")
        + accuracy_figure(sweep, None)
        + utility_figure(sweep, None),
    )
    page.section("Assumptions and checks", assumptions_section(cals, not_applicable))
    return page.render(_footer(private=True))


def ledger_report(shown: Mapping[str, Any], entries: Sequence[Any], budget: Any) -> str:
    """The report of ``distprivacy ledger show``: the releases, the budget spent per dataset
    after each release (from the cumulative guarantee the ledger recorded then), and the
    cumulative guarantee of each dataset now."""
    from distprivacy.guarantee import Guarantee
    from distprivacy.ledger import budget_from_dict

    page = Page("Privacy ledger report", [f"Ledger {shown.get('ledger', '')}"])
    cum = list(shown.get("cumulative", ()))
    secrets = list(shown.get("secrets", ()))  # a ledger of secrets: a budget per secret
    budgets = {f"secret:{x['secret']}": budget_from_dict(x["budget"]) for x in secrets}
    if secrets:
        words = [
            f"This ledger has recorded {_n(len(entries), 'release')} under "
            f"{_n(len(secrets), 'secret')}: "
            + "; ".join(f"{x['secret']} protects {x['property']} ({x['budget_text']})"
                        for x in secrets) + "."
        ]  # fmt: skip
    else:
        words = [
            f"This ledger has recorded {_n(len(entries), 'release')} of "
            f"{_n(len(cum), 'dataset')} under the budget {budget.describe()}."
        ]
    ids = shown.get("identity_columns")
    if ids:
        words.append(
            f"A dataset is told from another by its values in {', '.join(ids)}: releases of "
            "other statistics of the same records share its budget."
        )
    for c in cum:
        state = "within the budget" if c["within_budget"] else "OVER THE BUDGET"
        what = f"Secret {c['secret']}" if "secret" in c else f"Dataset {_short(c['fingerprint'])}"
        words.append(
            f"{what} (protecting {c['property']}, "
            f"{_n(c['releases'], 'release')}): no one seeing all of them can guess the protected "
            f"share with more than {pct(c['max_attack_accuracy'])} accuracy, where 50 % is a "
            f"coin flip; ε = {g(c['epsilon'])} at δ = {g(c['at_delta'], 3)}; {state}."
        )
    page.statement(words)
    rows = []
    for e in entries:
        gu = e.guarantee
        rows.append(
            [e.id, str(e.time).replace("T", " ")[:19], _short(e.fingerprint), e.property_text
             or e.property, e.mechanism, ", ".join(e.statistics), g(gu.epsilon),
             g(gu.delta, 3), "—" if gu.mu is None else g(gu.mu)]
        )  # fmt: skip
    page.section(
        "Releases",
        table(
            ["id", "time (UTC)", "dataset", "protects", "mechanism", "statistics", "ε", "δ", "μ"],
            rows,
            caption="Every release recorded, oldest first (the dataset is its fingerprint's start)",
            numeric=(0, 6, 7, 8),
            table_id="statistics-table",
        ),
    )
    series, k = [], 0
    groups: dict[tuple[str, str], list[Any]] = {}
    for e in entries:  # a ledger of secrets: per secret, whatever the dataset
        groups.setdefault(("" if secrets else e.fingerprint, e.property), []).append(e)
    last = max((float(e.id) for e in entries), default=0.0)
    for (fp, prop), group in groups.items():
        x, y = [], []
        spend = budgets.get(prop, budget)
        for e in group:
            if e.cumulative is None:
                continue
            x.append(float(e.id))
            y.append(_spent(Guarantee.from_dict(e.cumulative.to_dict()), spend))
        if x and x[-1] < last:  # the level holds until the latest release of the ledger
            x.append(last)
            y.append(y[-1])
        text = group[-1].property_text or prop
        label = f"{prop.removeprefix('secret:')} ({text})" if secrets else f"{_short(fp)} ({text})"
        series.append(Series(label, x, y, style=k, step=True))
        k += 1
    ys = [v for s in series for v in s.y if math.isfinite(v)]
    title = "Budget spent per dataset, release after release"
    svg = line_chart(
        series,
        fig_id="fig-budget",
        title=title,
        xlabel="release number (ledger id, in time order)",
        ylabel="share of the budget spent (%)",
        xlog=False,
        ylog=False,
        hlines=[(100.0, "budget")],
        ylim=(0.0, max(110.0, max(ys, default=0.0) * 1.08)),
        xlim=(0.5, last + 0.5),
        xticks=integer_ticks(last),  # release numbers are whole
    )
    caption = (
        "After each release (marker), the cumulative guarantee of all releases of that "
        + ("secret" if secrets else "dataset")
        + " (exact joint accounting, as recorded) as a share of its budget: "
        + (
            "cumulative μ / budget μ, or cumulative ε at the budget's δ / budget ε."
            if budget is None
            else "(attack bound − 50 %) / (budget accuracy − 50 %)."
            if hasattr(budget, "accuracy")
            else "cumulative μ / budget μ."
            if not hasattr(budget, "delta")
            else f"cumulative ε at δ = {g(budget.delta, 3)} / budget ε."
        )
    )
    page.section(
        "Budget over time",
        figure(svg, legend_html(series, [(DASHED, "the budget (100 %)")]), caption, title=title),
    )
    crow = [
        [_short(c["fingerprint"]), c["property"], c["releases"], "—" if c["mu"] is None else
         g(c["mu"]), g(c["epsilon"]), g(c["at_delta"], 3), pct(c["max_attack_accuracy"]),
         "within budget" if c["within_budget"] else "OVER BUDGET"]
        for c in cum
    ]  # fmt: skip
    page.section(
        "Cumulative guarantee now",
        table(
            ["dataset", "protects", "releases", "μ", "ε", "at δ", "max. attack acc.", "budget"],
            crow,
            caption="Recomputed from every release of each dataset (exact joint accounting "
            "where the releases are Gaussian)",
            numeric=(2, 3, 4, 5, 6),
        ),
    )
    return page.render([*_footer(private=False), LEDGER_NOTE])


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _short(fingerprint: Any) -> str:
    return str(fingerprint).split(":")[-1][:10]


def _spent(gu: Any, budget: Any) -> float:
    """The share of ``budget`` a cumulative guarantee uses, in %."""
    if hasattr(budget, "accuracy"):  # an attack-accuracy budget: the excess over a coin flip
        return 100.0 * (float(gu.max_attack_accuracy) - 0.5) / (float(budget.accuracy) - 0.5)
    if not hasattr(budget, "delta"):  # a μ budget
        return math.inf if gu.mu is None else 100.0 * float(gu.mu) / float(budget.mu)
    eps = gu.epsilon_at(float(budget.delta))
    return 100.0 * float(eps) / float(budget.epsilon)
