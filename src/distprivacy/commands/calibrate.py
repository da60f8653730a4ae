"""``distprivacy calibrate``: every applicable mechanism's noise and error side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from distprivacy.commands import dumps_json
from distprivacy.commands._common import (
    common_options,
    err_console,
    mechanism_specs,
    plan_all,
    released_size,
    warn_large_delta,
)
from distprivacy.commands._display import (
    fmt,
    legend,
    model_dict,
    name_column,
    noise_summary,
    per_statistic_tables,
    print_fitted,
    print_header,
    print_not_applicable,
    print_setting,
    print_short,
    print_statement,
    recommend,
    short_name,
    short_theorem,
    spec_of,
    swamped_summary,
    values_hint,
)
from distprivacy.commands._files import check_apart, config_file, data_files
from distprivacy.commands._report import report_option, write_calibrate
from distprivacy.commands._settings import Settings
from distprivacy.commands.config import config_option
from distprivacy.exceptions import ClassicRuleWarning, DistPrivacyError, SwampedWarning
from distprivacy.outputs import check_output_file

if TYPE_CHECKING:  # the library is imported when the command runs, not for its --help
    from distprivacy.mechanisms import Calibration
    from distprivacy.mechanisms.plans import Plan

#: ``model`` of ``calibrate --json`` without ``--include-model`` (issue 30): the fitted θ-means
#: and covariances are exact statistics of the population, which a plan keeps 0600.
MODEL_OMITTED = "omitted: exact population statistics; pass --include-model"


def _best(cals: list[Calibration], utility: str) -> dict[str, Any] | None:
    """The recommended mechanism (:func:`~distprivacy.commands._display.recommend`)."""
    return recommend(cals, utility)


def _print_warnings(console: Console, cals: list[Calibration]) -> None:
    """Each calibration's caveats; the classic rule's, the same for every Gaussian mechanism,
    once; the swamped statistics under one explanation."""
    notes = [(c.mechanism, w) for c in cals for w in c.warnings]
    if not notes:
        return
    console.print("[bold yellow]Warnings[/]")
    seen: set = set()
    swamped = []
    for name, w in notes:
        if getattr(w, "category", None) is SwampedWarning:
            cal = next(c for c in cals if c.mechanism == name)
            rest = str(w)[len(SwampedWarning.prefix) + 2 :]
            swamped.append(f"  {name}: {swamped_summary(cal) or rest}")
            continue
        shared = getattr(w, "category", None) is ClassicRuleWarning
        key = str(w) if shared else (name, str(w))
        if key in seen:
            continue
        seen.add(key)
        who = "Gaussian mechanisms" if shared else name
        console.print(f"  {who}: {w}")
    if swamped:
        text = SwampedWarning.prefix
        console.print(f"  {text[0].upper()}{text[1:]}:")
        for line in swamped:
            console.print(f"  {line}")


def _save_plan(path: str, plan: Plan) -> dict[str, str]:
    """Write ``plan`` (one mechanism's) and say where."""
    plan.save(path)
    return {
        "path": str(path),
        "digest": plan.digest,
        "reads": "--target DATA" if plan.query else "--value a,b,…",
    }


def _calibrations_table(cals: list[Calibration], abbreviate: bool) -> Table:
    """Every calibration on one row: noise, error, (ε, δ), μ, δ achieved, accuracy, proof."""
    table = Table(title="Calibrations (expected L2 error = E‖Z‖₂, exact)")
    numeric = ("E‖Z‖₂", "ε", "δ", "μ", "δ achieved", "max acc.")
    name_column(table, "mechanism")
    table.add_column("noise")
    for col in numeric:
        table.add_column(col, justify="right")
    table.add_column("proof")
    for c in cals:
        table.add_row(
            short_name(c.mechanism, abbreviate),
            noise_summary(c),
            fmt(c.expected_l2_error),
            f"{c.epsilon:.4g}",
            f"{c.delta:g}",
            _mu_cell(c),
            f"{c.delta_achieved:.3g}",
            f"{c.max_attack_accuracy:.4f}",
            short_theorem(c.theorem),
        )
    return table


def _mu_cell(c: Calibration) -> str:
    """μ, marked † where the calibration is not μ-GDP (:attr:`Guarantee.is_gdp`)."""
    if c.mu is None:
        return "—"
    return f"{c.mu:.4g}" + ("" if c.guarantee.is_gdp else "†")


def _calibrations_split(cals: list[Calibration], abbreviate: bool) -> list[Table]:
    """The calibrations as two narrower tables: the figures (ε and δ are the header's), then
    the noise and the proof."""
    figures = Table(title="Calibrations (expected L2 error = E‖Z‖₂, exact)")
    name_column(figures, "mechanism")
    for col in ("E‖Z‖₂", "μ", "δ achieved", "max acc."):
        figures.add_column(col, justify="right")
    how = Table(title="The noise of each mechanism and its proof")
    name_column(how, "mechanism")
    how.add_column("noise")
    how.add_column("proof")
    for c in cals:
        name = short_name(c.mechanism, abbreviate)
        figures.add_row(
            name,
            fmt(c.expected_l2_error),
            _mu_cell(c),
            f"{c.delta_achieved:.3g}",
            f"{c.max_attack_accuracy:.4f}",
        )
        how.add_row(name, noise_summary(c), short_theorem(c.theorem))
    return [figures, how]


def _check_gdp_target(names: list[str], s: Settings) -> None:
    """A μ or attack-accuracy target is met by Gaussian mechanisms only: asked of pure-ε ones
    alone, it is refused in one line naming the Gaussian mechanisms and --epsilon."""
    if not s.targets_gdp:
        return
    from distprivacy.mechanisms import MECHANISMS

    gdp = [n for n, cls in MECHANISMS.items() if cls.targets_gdp]
    if any(n in gdp for n in names):
        return
    # The ones to suggest add noise (NoNoise releases F(D) itself).
    gaussian = [n for n in gdp if MECHANISMS[n].properties.adds_noise]
    flag = "--target-mu" if s.target_mu is not None else "--max-attack-accuracy"
    chosen = ", ".join(names)
    raise DistPrivacyError(
        f"{flag} applies to the Gaussian mechanisms ({', '.join(gaussian)}); {chosen} "
        f"{'is a' if len(names) == 1 else 'are'} pure-ε (Laplace-type) mechanism"
        f"{'' if len(names) == 1 else 's'}: target {'it' if len(names) == 1 else 'them'} "
        f"with --epsilon (e.g. --epsilon 1), or choose a Gaussian --mechanism"
    )


@click.command()
@config_option
@common_options
@click.option(
    "--mechanism",
    "mechanisms",
    multiple=True,
    help="Only these mechanisms (repeatable; default: all).",
)
@click.option(
    "--save",
    "save",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write a plan (with exactly one --mechanism): the spec, statistics, model, noise, "
    "verified guarantee, data fingerprint and a digest, for `release --plan` later.",
)
@click.option(
    "--include-model",
    "include_model",
    is_flag=True,
    help="With --json: also print the fitted model (each θ's means and covariances of the "
    "statistics: exact population statistics, kept 0600 in a plan). Without it `model` says "
    "it was omitted. Never read from a --config file.",
)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Show the full tables (every mechanism's noise, μ, δ achieved, proof and noise per "
    "statistic, the warnings and the mechanisms not applicable). Default: the recommended "
    "mechanism and a compact comparison.",
)
@report_option
@click.pass_context
def calibrate(
    ctx: click.Context,
    mechanisms: tuple[str, ...],
    save: str | None,
    include_model: bool,
    show_all: bool,
    report: str | None,
    **p: Any,
) -> None:
    """Recommend a mechanism (the best verified one available in this install, which
    `release` uses by default) and compare every applicable one; --all for the full tables."""
    check_apart(
        [*data_files(ctx.params.get("data")), ("--model", ctx.params.get("model_file")),
         *config_file(ctx)],
        [("--save", save), ("--report", report)],
    )  # fmt: skip
    _check_save(mechanisms, save)
    s = Settings.from_click(ctx, p)
    specs = mechanism_specs(mechanisms, s)
    names = [m.name for m in specs]
    _check_gdp_target(names, s)  # before the model is fitted
    planned, info, _ = plan_all(s, specs, fingerprint=save is not None)
    cals, skipped, model = planned.calibrations, planned.not_applicable, planned.model
    from distprivacy.mechanisms import MECHANISMS

    if any(MECHANISMS[n].uses_delta for n in names):
        warn_large_delta(s.delta, released_size(model))
    if not cals:  # never a table without a row and exit 0
        raise DistPrivacyError(f"no mechanism could be calibrated: {'; '.join(skipped.values())}")
    if save is not None:
        info["plan"] = _save_plan(save, planned.plans[0])
    context = {**info, **s.to_dict()}
    write_calibrate(report, cals, skipped, model, context, _best(cals, s.utility), not s.as_json)
    if s.as_json:
        _print_json(cals, skipped, model, info, s, include_model)
    else:
        _print_text(Console(), cals, skipped, model, info, s, show_all)


def _check_save(mechanisms: tuple[str, ...], save: str | None) -> None:
    """``--save`` writes one mechanism's plan, to a file it may write."""
    if save is not None:
        if len(mechanisms) != 1:
            raise DistPrivacyError(
                "--save writes one mechanism's plan: give exactly one --mechanism NAME"
            )
        check_output_file(save, option="--save")


def _print_json(
    cals: list[Calibration],
    skipped: dict[str, str],
    model: Any,
    info: dict[str, Any],
    s: Settings,
    include_model: bool,
) -> None:
    """``--json``: the calibrations, the best, the others and (with --include-model) the
    model."""
    click.echo(
        dumps_json(
            {
                **info,
                **s.to_dict(),
                "model": model_dict(model) if include_model else MODEL_OMITTED,
                "mechanisms": [c.to_dict() for c in cals],
                "best": _best(cals, s.utility),
                "not_applicable": skipped,
            }
        )
    )
    if include_model:
        err_console.print(
            "note: stdout holds exact population statistics (the fitted θ-means and "
            "covariances, --include-model): keep it as private as a plan (mode 0600)",
            highlight=False,
            markup=False,
            soft_wrap=True,  # one line, whatever the terminal's width
        )


def _print_text(
    console: Console,
    cals: list[Calibration],
    skipped: dict[str, str],
    model: Any,
    info: dict[str, Any],
    s: Settings,
    show_all: bool,
) -> None:
    """The calibrations for a person: the statement, then the recommended mechanism and a
    compact comparison, or (``--all``) the tables, the best and the caveats."""
    if cals:
        from distprivacy.wording import statement

        best = _best(cals, s.utility)
        first = next((c for c in cals if best and c.mechanism == best["mechanism"]), cals[0])
        words = statement(spec_of(model), model.statistic_names_, first.guarantee, released=False)
        print_statement(
            console, f"{words.rstrip('.')} (with {first.mechanism}, recommended below)."
        )
    if not show_all:
        print_setting(console, info, s)
        print_short(console, cals, _best(cals, s.utility), skipped, spec_of(model))
        _print_plan(console, info)
        return
    print_header(console, model, info, s)
    layouts = [
        lambda: [_calibrations_table(cals, False)],
        lambda: [_calibrations_table(cals, True)],
        lambda: _calibrations_split(cals, False),
        lambda: _calibrations_split(cals, True),
    ]
    abbreviate = print_fitted(console, layouts) % 2 == 1
    console.print(
        "μ: the μ-GDP parameter († not μ-GDP: the fitted covariances differ, μ is only the "
        "shared-covariance figure and the guarantee is δ achieved with max acc.); δ achieved: "
        "exact δ at ε (worse of the shared-covariance and the fitted unequal-covariance "
        "Gaussians); max acc.: the best any attacker can do between two equally likely θ."
    )
    if cals:
        _print_best(console, cals, s, abbreviate)
    _print_warnings(console, cals)
    print_not_applicable(console, skipped)
    console.print(values_hint(spec_of(model)), highlight=False)
    _print_plan(console, info)


def _print_plan(console: Console, info: dict[str, Any]) -> None:
    """Where ``--save`` wrote the plan, and how to release it."""
    if "plan" in info:
        console.print(
            f"Plan saved to {info['plan']['path']} (digest {info['plan']['digest'][:19]}…); "
            f"release it with: distprivacy release --plan {info['plan']['path']} "
            f"{info['plan']['reads']}"
        )


def _print_best(console: Console, cals: list[Calibration], s: Settings, abbreviate: bool) -> None:
    """Each statistic's noise, the legend, the best mechanism and what rests on an
    assumption."""
    for t in per_statistic_tables(cals, console.width, abbreviate):
        console.print(t)
    if abbreviate and (words := legend(c.mechanism for c in cals)):
        console.print(words)
    best = _best(cals, s.utility)
    if best is not None:
        console.print(
            f"Recommended, the best utility among the {best['among']} calibrations "
            f"available in this install ({best['objective']}): [bold]{best['mechanism']}[/]"
        )
    unverified = sorted({c.basis for c in cals if not c.verified})
    if unverified:
        console.print("Guarantees resting on an assumption (not verified):")
        for b in unverified:
            who = ", ".join(c.mechanism for c in cals if c.basis == b and not c.verified)
            console.print(f"  {who}: {b}")
