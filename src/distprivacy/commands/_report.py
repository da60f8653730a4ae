"""``--report FILE.html`` of ``calibrate``, ``release``, ``audit``, ``ledger show`` and
``models audit``: the option (its path checked before any work) and one call per command that
computes the curves (with a progress bar on a terminal) and writes the report
(:mod:`distprivacy.report`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import click


def _check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a bad report path before any work (one line, exit 2)."""
    if value is not None:
        from distprivacy.outputs import check_output_file

        check_output_file(value, option=param.opts[0] if param.opts else "--report")
    return value


def _option(help_text: str, flag: str = "--report", name: str = "report") -> Callable:
    """``--report FILE.html``, received as ``report``, its path checked before any work."""
    return click.option(
        flag,
        name,
        type=click.Path(),  # checked by _check (a directory: one line naming --report)
        default=None,
        callback=_check,
        help=help_text,
    )


#: The option of ``calibrate``, ``release``, ``audit`` and ``ledger show``.
report_option: Callable = _option(
    "Also write a self-contained HTML report (steward's statement, per-statistic table, "
    "privacy–utility curve, attack bound against ε, assumptions and checks) to this file."
)

#: ``release --report``: the page to publish.
release_report_option: Callable = _option(
    "Also write the PUBLIC HTML page of the release to this file (mode 0644, it may be "
    "published): the released values with their 95 % intervals, the guarantee, what is "
    "protected and the method; no exact statistic of the data."
)

#: ``release --review-report``: the internal page.
review_report_option: Callable = _option(
    "Also write the INTERNAL review page of the release to this file (mode 0600: it holds "
    "exact statistics of the data): every mechanism's curves, the noise against each "
    "statistic's typical value, the assumptions with their measured checks and the warnings.",
    flag="--review-report",
    name="review_report",
)

#: The option of ``models audit``.
models_report_option: Callable = _option(
    "Also write a self-contained HTML report (steward's statement, per-attack table, "
    "accuracy against a coin flip, assumptions and checks) to this file."
)


def _sweep(model: Any, cals: list[Any], settings: Mapping[str, Any], show: bool) -> Any:
    from distprivacy.commands._common import LazyProgress
    from distprivacy.report import sweep

    bar = LazyProgress("report: recalibrating at 8 values of ε", enabled=show)
    try:
        return sweep(
            model,
            cals,
            # δ as asked (a pure-ε mechanism's own δ is 0, which the others cannot take).
            delta=float(settings.get("delta") or max((c.delta for c in cals), default=0.0)),
            rule=str(settings.get("calibration") or "exact"),
            covariances=str(settings.get("covariances") or "fitted").lower(),
            utility=str(settings.get("utility") or "scaled").lower(),
            progress=bar,
        )
    finally:
        bar.close()


def _done(path: str) -> None:
    """Say where the report is, on stderr (stdout stays the command's output)."""
    from distprivacy.commands._common import err_console

    err_console.print(f"Report written to {path}", highlight=False, markup=False)


def write_calibrate(
    path: str | None,
    cals: list[Any],
    skipped: Mapping[str, str],
    model: Any,
    context: Mapping[str, Any],
    best: Mapping[str, Any] | None,
    show: bool,
) -> None:
    """The report of ``calibrate`` (nothing when ``path`` is None)."""
    if path is None:
        return
    from distprivacy.report import calibrate_report, write_report

    sw = _sweep(model, cals, context, show)
    html = calibrate_report(
        cals,
        model=model,
        context=context,
        best=None if best is None else best["mechanism"],
        sweep=sw,
        not_applicable=skipped,
    )
    write_report(path, html, private=True)
    _done(path)


def write_release(
    path: str | None,
    cal: Any,
    rel: Any,
    model: Any,
    plan_spec: Mapping[str, Any] | None,
    context: Mapping[str, Any],
    show: bool,
    *,
    review: str | None = None,
) -> None:
    """The reports of ``release`` (written after the release is shown: a failure to write
    one never hides a release): the public page at ``path`` (0644, the published values
    (``rel.published``: clipped into their ranges, as the terminal states them) with their
    intervals, the guarantee, what is protected, the
    method) and the internal review page at ``review`` (0600, the curves of every mechanism
    applicable to the model, the exact figures, the checks)."""
    if path is None and review is None:
        return
    from distprivacy.commands._display import spec_of
    from distprivacy.report import release_report, write_report

    spec = spec_of(cal.model_ or model, plan_spec)
    settings = {**dict(context.get("modelling") or {}), **context}
    if review is not None:
        from distprivacy.mechanisms import MECHANISMS, calibrate_all

        others, _ = _calibrate_others(model, cal, settings, list(MECHANISMS), calibrate_all)
        sw = _sweep(model, [cal, *others], settings, show)
        html = release_report(cal, rel, spec=spec, context=context, sweep=sw,
                              ledger=context.get("ledger"))  # fmt: skip
        write_report(review, html, private=True)
        _done(review)
    if path is not None:
        sw = _sweep(model, [cal], settings, show)
        html = release_report(cal, rel, spec=spec, context=context, sweep=sw,
                              ledger=context.get("ledger"), public=True)  # fmt: skip
        write_report(path, html, private=False, public=True)
        _done(path)


def _calibrate_others(
    model: Any, cal: Any, settings: Mapping[str, Any], names: list[str], calibrate_all: Any
) -> tuple[list[Any], dict[str, str]]:
    """The other mechanisms at the release's own ε and δ (for the curves)."""
    import warnings

    names = [n for n in names if n != cal.mechanism]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from distprivacy.request import GaussianOptions
        from distprivacy.targets import EpsDelta

        options = GaussianOptions(
            str(settings.get("calibration") or "exact"),
            str(settings.get("covariances") or "fitted").lower(),
            str(settings.get("utility") or "scaled").lower(),
        )
        target = EpsDelta(float(cal.epsilon), float(cal.delta))
        return calibrate_all(model, target, options, names)


def write_audit(
    path: str | None,
    results: list[Any],
    cals: list[Any],
    skipped: Mapping[str, str],
    model: Any,
    context: Mapping[str, Any],
    show: bool,
) -> None:
    """The report of ``audit``."""
    if path is None:
        return
    from distprivacy.report import audit_report, write_report

    sw = _sweep(model, cals, context, show)
    html = audit_report(
        results, cals, model=model, context=context, sweep=sw, not_applicable=skipped
    )
    write_report(path, html, private=True)
    _done(path)


def write_ledger(path: str | None, led: Any, shown: Mapping[str, Any], show: bool) -> None:
    """The report of ``ledger show``: no exact statistic, but the ledger's contents (its
    releases, datasets, properties and budget spent), written 0600 as the ledger is."""
    if path is None:
        return
    from distprivacy.report import ledger_report, write_report

    budget = led.budget if led.read_only or len(led.registry.secrets) == 1 else None
    html = ledger_report(shown, led.releases(), budget)
    write_report(path, html, private=True)
    _done(path)


def write_models_audit(
    path: str | None,
    audit: Any,
    games: list[dict[str, Any]],
    regression: list[Any],
    context: Mapping[str, Any],
) -> None:
    """The report of ``models audit`` (nothing when ``path`` is None). It holds the attacks'
    measured accuracies, no exact statistic of the data: written with the usual mode."""
    if path is None:
        return
    from distprivacy.report import models_audit_report, write_report

    html = models_audit_report(audit, games, regression, context=context)
    write_report(path, html, private=False)
    _done(path)


#: The option of ``models defend``.
models_defend_report_option: Callable = _option(
    "Also write a self-contained HTML report (steward's statement, per-defence table of task "
    "accuracy, guaranteed bound and measured attacks, settings) to this file."
)


def write_models_defend(path: str | None, result: Any, context: Mapping[str, Any]) -> None:
    """The report of ``models defend`` (nothing when ``path`` is None): accuracies of models
    and attacks, no exact statistic of the data, written with the usual mode."""
    if path is None:
        return
    from distprivacy.report import write_report
    from distprivacy.report._defend_page import models_defend_report

    write_report(path, models_defend_report(result, context=context), private=False)
    _done(path)
