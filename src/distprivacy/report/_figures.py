"""The report's figures and the sections every report shares: the privacy–utility curve, the
attack bound against ε, what is protected, and the assumptions with their checks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from distprivacy.report._curves import Sweep
from distprivacy.report._html import esc, figure, prose, table, unsci
from distprivacy.report._svg import DASHED, RING, Mark, Series, legend_html, line_chart

__all__ = [
    "accuracy_figure",
    "assumptions_section",
    "audit_figure",
    "g",
    "noise_words",
    "pct",
    "protected_section",
    "utility_figure",
]


def g(x: Any, digits: int = 4) -> str:
    """A number in ``digits`` significant digits, as the terminal prints it, never in
    e-notation: 9.82e-05 is written 9.82 × 10⁻⁵ ('—' for None or NaN)."""
    if x is None:
        return "—"
    x = float(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return unsci(f"{x:.{digits}g}" if abs(x) < 1e5 else f"{x:.{digits - 1}e}")


def pct(x: Any, digits: int = 1) -> str:
    """A share as a percentage."""
    if x is None or not math.isfinite(float(x)):
        return "—"
    return f"{100 * float(x):.{digits}f} %"


def utility_figure(
    sw: Sweep, chosen: tuple[str, float, float] | None, *, fig_id: str = "fig-utility"
) -> str:
    """Expected L2 error against ε for each mechanism, the chosen point ringed."""
    series = [
        Series(name, sw.epsilon[name], sw.error[name], style=k)
        for k, name in enumerate(sw.mechanisms)
    ]
    marks = []
    extra = []
    if chosen is not None:
        name, eps, err = chosen
        marks.append(Mark(eps, err, f"{name}, ε = {g(eps, 3)}"))
        extra.append((RING, f"chosen: {name} at ε = {g(eps, 3)}"))
    title = "Privacy–utility curve: expected error against ε"
    svg = line_chart(
        series,
        fig_id=fig_id,
        title=title,
        xlabel="ε (privacy loss; smaller protects more)",
        ylabel="expected L2 error E‖Z‖₂",
        xlog=True,
        ylog=True,
        marks=marks,
    )
    caption = (
        f"Each mechanism recalibrated at {_grid_size(sw)} values of ε with δ = {g(sw.delta, 3)} "
        "(log scales). E‖Z‖₂ is the expected Euclidean length of the added noise in the "
        "statistics' own units (the paper's Table 2 metric); lower is more useful."
    )
    return figure(svg, legend_html(series, extra), caption, title=title)


def _grid_size(sw: Sweep) -> int:
    return max((len(v) for v in sw.epsilon.values()), default=1) - 1


#: Accuracy bounds closer than this (0.1 percentage point everywhere) share one line.
SAME_CURVE = 1e-3


#: Appended to the label of a curve that rests on an unverified calibration.
_ASSUMED = " (assumed, not verified)"


def _groups(sw: Sweep) -> list[tuple[list[str], np.ndarray, np.ndarray, int]]:
    """Mechanisms whose accuracy curves coincide within :data:`SAME_CURVE`, merged (never a
    verified curve with an assumed one); each group keeps the colour of its first mechanism
    (as in the utility figure)."""
    out: list[tuple[list[str], np.ndarray, np.ndarray, int]] = []
    for k, name in enumerate(sw.mechanisms):
        e, a = sw.epsilon[name], sw.accuracy[name]
        for names, e2, a2, _ in out:
            if (
                sw.assumed.get(name, False) == sw.assumed.get(names[0], False)
                and e.shape == e2.shape
                and np.allclose(e, e2)
                and np.allclose(a, a2, rtol=0, atol=SAME_CURVE, equal_nan=True)
            ):
                names.append(name)
                break
        else:
            out.append(([name], e, a, k))
    return out


def accuracy_figure(
    sw: Sweep,
    chosen: tuple[str, float, float] | None,
    measured: Sequence[tuple[str, float, float, float, float]] = (),
    *,
    fig_id: str = "fig-accuracy",
) -> str:
    """The bound on any attacker's accuracy against ε (mechanisms with the same curve share a
    line); ``measured`` (name, ε, accuracy, low, high) adds an audit's attacks with intervals."""
    series = [
        Series(", ".join(names) + _ASSUMED * sw.assumed.get(names[0], False), e, a, style=k,
               dashed=sw.assumed.get(names[0], False))
        for names, e, a, k in _groups(sw)
    ]  # fmt: skip
    for j, (name, eps, acc, lo, hi) in enumerate(measured):
        series.append(
            Series(
                f"measured: best attack on {name}",
                [eps],
                [acc],
                style=len(sw.mechanisms) + j,
                low=[lo],
                high=[hi],
                line=False,
            )
        )
    marks, extra = [], [(DASHED, "50 %: a coin flip")]
    if chosen is not None:
        name, eps, acc = chosen
        marks.append(Mark(eps, acc, f"{name}: {pct(acc)}" + _ASSUMED * sw.assumed.get(name, False)))
        extra.insert(0, (RING, f"chosen: {name} at ε = {g(eps, 3)}"))
    ys = [v for s in series for v in (*s.y, *(s.high or ()))]
    ys = [v for v in ys if math.isfinite(v)]
    top = min(1.0, max(ys, default=1.0) + 0.03)
    title = "Attack bound: the best any attacker can guess, against ε"
    svg = line_chart(
        series,
        fig_id=fig_id,
        title=title,
        xlabel="ε (privacy loss; smaller protects more)",
        ylabel="max. attack accuracy",
        xlog=True,
        ylog=False,
        marks=marks,
        hlines=[(0.5, "coin flip")],
        ylim=(0.48, top),
    )
    caption = (
        "Upper bound on the accuracy of any attacker guessing which of two protected shares "
        "is true (equally likely a priori) from one release; 50 % is a coin flip. Mechanisms "
        "whose bounds agree within 0.1 percentage point share a line."
        + (
            " A dashed line marked “assumed, not verified” is not a guarantee: it rests on a "
            "modelling assumption the library could not check for this data (the table says "
            "which)."
            if any(sw.assumed.get(m, False) for m in sw.mechanisms)
            else ""
        )
        + (
            " Points: the best attack measured by the audit, with its confidence interval."
            if measured
            else ""
        )
    )
    return figure(svg, legend_html(series, extra), caption, title=title)


def audit_figure(
    results: Sequence[Any], mechanisms: Sequence[str], *, fig_id: str = "fig-audit"
) -> str:
    """Per mechanism, the best attack's measured accuracy (with its interval) against the
    bound its guarantee claims; points below the diagonal are consistent with the claim."""
    order = {m: k for k, m in enumerate(mechanisms)}
    series = []
    lows, highs = [0.5], [0.5]
    for j, r in enumerate(results):
        top = max(r.attacks, key=lambda a: a.accuracy)
        lo, hi = top.accuracy_interval
        series.append(
            Series(r.mechanism, [r.accuracy_bound], [top.accuracy],
                   style=order.get(r.mechanism, len(mechanisms) + j), low=[lo], high=[hi],
                   line=False)
        )  # fmt: skip
        lows += [lo, r.accuracy_bound]
        highs += [hi, r.accuracy_bound]
    a, b = min(lows) - 0.01, min(1.0, max(highs) + 0.02)
    diagonal = Series("measured = bound", [a, b], [a, b], style=20, markers=False)
    title = "Audit: measured attack accuracy against the claimed bound"
    svg = line_chart(
        [diagonal, *series],
        fig_id=fig_id,
        title=title,
        xlabel="claimed bound on attack accuracy",
        ylabel="best measured accuracy",
        xlog=False,
        ylog=False,
        ylim=(a, b),
    )
    caption = (
        "Each mechanism's best attack on real samples (point, with its confidence interval) "
        "against the accuracy its guarantee allows. A claim is refuted when the whole interval "
        "lies above the diagonal."
    )
    return figure(svg, legend_html([diagonal, *series]), caption, title=title)


def protected_section(spec: Any, context: Mapping[str, Any]) -> str:
    """What is protected, on which data, with which model."""
    from distprivacy.wording import protected_sentence

    rows: list[list[str]] = []
    if spec is not None:
        head = f"<p>The release must not reveal {prose(protected_sentence(spec))}.</p>"
        rows += [
            ["protected property", str(spec.predicate)],
            ["candidate shares p", ", ".join(f"{float(v):g}" for v in spec.values)],
            ["records n", str(spec.n)],
            ["protected pairs", "; ".join(f"{a:g} vs {b:g}" for a, b in spec.pairs)],
        ]
    else:
        head = "<p>The model was read from a file; it names no protected property in words.</p>"
    for key, label in (
        ("data", "data"),
        ("model_file", "model file"),
        ("engine", "engine"),
        ("modeling", "model of F under each share"),
        ("plan", "plan"),
        ("target", "released dataset"),
    ):
        if context.get(key) is not None:
            rows.append([label, str(context[key])])
    for key, label in (
        ("epsilon", "ε asked for"),
        ("delta", "δ asked for"),
        ("calibration", "calibration rule"),
        ("covariances", "covariances"),
        ("target_mu", "target μ"),
        ("max_attack_accuracy", "target attack accuracy"),
    ):
        if context.get(key) is not None:
            rows.append([label, str(context[key])])
    return head + table(["setting", "value"], rows, caption="What is protected, and how")


def assumptions_section(
    cals: Sequence[Any],
    not_applicable: Mapping[str, str] | None = None,
    checks: Sequence[tuple[str, str, str]] = (),
) -> str:
    """Each mechanism's basis with its measured check (δ achieved against δ asked), the
    assumptions (each once, with the mechanisms resting on it), the warnings, the mechanisms
    left out and their reasons, and any further ``checks`` (what, measured, verdict)."""
    rows = []
    for c in cals:
        ok = bool(c.verified)
        verdict = (
            '<span class="verdict-ok">verified</span>'
            if ok
            else '<span class="verdict-bad">assumed, not verified</span>'
        )
        measured = (
            f"δ achieved at ε = {g(c.epsilon)}: {g(c.delta_achieved, 3)} (asked: {g(c.delta, 3)})"
        )
        rows.append([c.mechanism, c.basis or "—", measured, verdict])
    for what, measured, verdict in checks:
        rows.append(["(release)", what, measured, esc(verdict)])
    out = table(
        ["mechanism", "the guarantee rests on", "measured check", "status"],
        rows,
        caption="What each guarantee rests on, and the check made for the noise actually used",
        raw=(3,),
    )
    shared: dict[str, list[str]] = {}
    for c in cals:
        for a in c.assumptions:
            shared.setdefault(str(a), []).append(c.mechanism)
    if shared:
        out += "<h3>Assumptions of the theorems</h3>" + table(
            ["assumption", "mechanisms"],
            [[a, ", ".join(m)] for a, m in shared.items()],
            caption="The modelling assumptions each theorem makes (words first, then symbols)",
        )
    from distprivacy.exceptions import SwampedWarning

    notes, swamped = [], False
    for c in cals:
        for w in c.warnings:
            text = str(w)
            if text.startswith(SwampedWarning.prefix):  # its explanation said once, below
                swamped = True
                text = "noise swamps " + text[len(SwampedWarning.prefix) + 2 :]
            notes.append((c.mechanism, text))
    if notes:
        out += "<h3>Warnings</h3>"
        if swamped:
            out += f"<p>{esc(SwampedWarning.prefix[0].upper() + SwampedWarning.prefix[1:])}.</p>"
        out += table(["mechanism", "warning"], notes, caption="Where an assumption is visibly off")
    if not_applicable:
        out += (
            '<h3>Mechanisms not applicable</h3><ul class="plain">'
            + "".join(f"<li>{prose(r)}</li>" for r in not_applicable.values())
            + "</ul>"
        )
    return out


def noise_words(c: Any) -> str:
    """The noise in a few words: family, scale (or its range) and directions."""
    n = c.noise
    if n.family == "none" or n.scales.size == 0:
        return "none"
    what = "σ" if n.family == "gaussian" else "b"
    square = n.basis.shape == (n.dim, n.dim)
    dirs = (
        "all coords" if square and np.allclose(n.basis, np.eye(n.dim)) else f"{n.scales.size} dir."
    )
    if np.allclose(n.scales, n.scales[0]):
        return f"{n.family} {what} = {g(n.scales[0])} on {dirs}"
    return f"{n.family} {what} ∈ [{g(n.scales.min())}, {g(n.scales.max())}] on {dirs}"
