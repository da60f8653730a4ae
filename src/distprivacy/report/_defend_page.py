"""The report of ``distprivacy models defend``: what each defence of a model's release costs
(task accuracy) and protects (its guaranteed bound on any attack, and the defence-aware
attacks measured against it). Every number comes from the command's
:class:`~distprivacy.inference.ModelDefendResult`; none is an exact statistic of the data, so
the page is written with the usual file mode (like ``models audit``'s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distprivacy.report._figures import g, pct
from distprivacy.report._html import Page, table
from distprivacy.report._pages import _footer

__all__ = ["models_defend_report"]

#: Says why the page was not written 0600.
NO_EXACT_NOTE = (
    "This file holds no exact statistic of the data, only the accuracies of models and attacks "
    "on models trained on random samples of it: it was written with the usual file mode."
)

_ABOVE = '<span class="verdict-bad">above the bound</span>'

#: Short names of the attacks in the table (the caption says what they are).
_SHORT = {"likelihood-ratio": "likelihood ratio", "meta-classifier": "meta-classifier"}


def _short(name: str) -> str:
    return next((v for k, v in _SHORT.items() if name.startswith(k)), name)


def _share(a: float) -> str:
    return f"{100 * float(a):g} %"


def _statement(result: Any, ctx: Mapping[str, Any]) -> list[str]:
    s = result.settings
    what = (
        f"its probabilities on {s.n_query} public query rows"
        if s.release == "outputs"
        else "its coefficients and intercept"
    )
    shares = [_share(a) for a in result.ratios]
    shares_text = (
        f"{', '.join(shares[:-1])} or {shares[-1]}" if len(shares) > 1 else "".join(shares)
    )
    kind = ctx.get("estimator") or result.estimator
    source = f" on {ctx['data']}" if ctx.get("data") else ""
    verdict = result.verdict.removeprefix("Verdict: ")
    words = [
        f"A model ({kind}) trained{source} releases {what} ({result.dimension} numbers). The "
        f"defences hide whether {shares_text} of its training records satisfy {result.protect}: "
        f"each adds Gaussian noise calibrated to ε = {g(s.epsilon)}, δ = {g(s.delta)} for every "
        "pair of those shares, which bounds the accuracy of any attack.",
        verdict[0].upper() + verdict[1:].rstrip(".") + ".",
        "The bound is a guarantee under the Gaussian model of the release fitted on the "
        "defender's own shadow models; the attacks are a measurement (an attacker who knows the "
        "noise), which would contradict the model if an interval lay wholly above the bound.",
    ]
    return words


def _defences_table(result: Any) -> str:
    level = result.settings.level
    rows = []
    for d in result.defences:
        guarantee = (
            "none"
            if d.epsilon is None
            else f"ε = {g(d.epsilon)}, δ = {g(d.delta)}" + ("" if d.verified else " (not verified)")
        )
        bound = "—" if d.max_attack_accuracy is None else pct(d.max_attack_accuracy)
        for k, a in enumerate(d.attacks):
            lo, hi = a.interval
            rows.append(
                [d.defence if k == 0 else "", guarantee if k == 0 else "",
                 pct(d.task_accuracy) if k == 0 else "", bound if k == 0 else "",
                 f"{_share(a.pair[0])} vs {_share(a.pair[1])}", _short(a.name), pct(a.accuracy),
                 f"[{pct(lo)}, {pct(hi)}]", _ABOVE if a.exceeds_bound else "not above"
                 if d.max_attack_accuracy is not None else "—"]
            )  # fmt: skip
    return table(
        ["defence", "guarantee", "task accuracy", "bound", "shares told apart", "attack",
         "accuracy", f"{g(100 * level)} % interval", "against the bound"],
        rows,
        caption="Per defence: the guarantee it was calibrated to, the defended release's task "
        "accuracy, the guarantee's bound on any attack's accuracy (only when verified), and "
        "each defence-aware attack's measured accuracy with its Clopper–Pearson interval. "
        "Both attacks know the noise: the likelihood-ratio test compares Gaussians fitted on "
        "the adversary's own shadow releases, the noise covariance added; the meta-classifier "
        "is trained on its shadows' noisy releases.",
        numeric=(2, 3, 6, 7),
        raw=(8,),
        table_id="defences-table",
    )  # fmt: skip


def _settings(result: Any, ctx: Mapping[str, Any]) -> str:
    s = result.settings
    rows = [[label, str(ctx[key])] for key, label in (
        ("data", "data"), ("label", "label the models predict"), ("features", "features"),
        ("estimator", "model (estimator)"), ("n_models", "models per share and role"),
        ("n_train", "rows per training set"), ("seed", "seed"),
    ) if ctx.get(key) is not None]  # fmt: skip
    rows += [
        ["protected property", result.protect],
        ["shares of protected records", ", ".join(_share(a) for a in result.ratios)],
        ["release", s.release + (f" ({s.n_query} query rows)" if s.release == "outputs" else "")],
        ["mechanisms", ", ".join(s.mechanisms)],
        ["ε, δ", f"{g(s.epsilon)}, {g(s.delta)}"],
        ["confidence of each interval", pct(s.level)],
    ]
    rows += [[f"{name}: not calibrated", why] for name, why in result.skipped.items()]
    return table(["setting", "value"], rows, caption="What was defended")


def models_defend_report(result: Any, *, context: Mapping[str, Any]) -> str:
    """The report of ``distprivacy models defend``.

    Parameters
    ----------
    result : ModelDefendResult
        What :func:`distprivacy.inference.defend` found.
    context : mapping
        The command's settings (``data``, ``label``, ``features``, ``estimator``,
        ``n_models``, ``n_train``, ``seed``; each optional).

    Returns
    -------
    str
        The HTML page.
    """
    sub = [f"Protecting the share of {result.protect} records in the training data"]
    if context.get("data") is not None:
        sub.append(f"Source: {context['data']}")
    page = Page("Model defence report", sub)
    page.statement(_statement(result, context))
    page.section("Per defence", _defences_table(result))
    page.section("What was defended", _settings(result, context))
    return page.render([*_footer(private=False), NO_EXACT_NOTE])
