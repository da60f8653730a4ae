"""``distprivacy audit``: attack each mechanism on real samples and bound its ε from below."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from distprivacy.commands import PROBABILITY_OPEN, Number, dumps_json
from distprivacy.commands._common import (
    LazyProgress,
    check_model_file,
    common_options,
    mechanism_specs,
    plan_all,
    warn_large_delta,
)
from distprivacy.commands._display import (
    legend,
    name_column,
    print_fitted,
    print_header,
    print_not_applicable,
    print_statement,
    short_name,
)
from distprivacy.commands._files import check_apart, data_files
from distprivacy.commands._names import AUDIT_ATTACKS
from distprivacy.commands._names import DEFAULT_AUDIT_ATTACKS as DEFAULT_ATTACKS
from distprivacy.commands._report import report_option, write_audit
from distprivacy.commands._settings import Settings
from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:  # the library is imported when the command runs, not for its --help
    from distprivacy.mechanism_audit import AuditResult


def _audit_rows(r: AuditResult) -> dict[str, str]:
    """The cells of one mechanism's audit."""
    best = max(r.attacks, key=lambda a: a.epsilon_lower_bound)
    top = max(r.attacks, key=lambda a: a.accuracy)
    lb = r.epsilon_lower_bound
    low, high = top.accuracy_interval
    verdict = "[red]REFUTED[/]" if r.refuted else "consistent"
    if r.accuracy_exceeded:
        verdict += " [red](accuracy above bound)[/]"
    elif not r.refuted and top.accuracy > r.accuracy_bound:  # the words follow the numbers
        verdict = "not refuted (above bound, not significantly)"
    return {
        "claimed ε": f"{r.claimed_epsilon:.4g}",
        "δ": f"{r.delta:g}",
        "ε lower bound": f"{lb:.3f}" if lb > 0 else "none (≤ 0)",
        "best acc. [CI]": f"{top.accuracy:.3f} [{low:.3f}, {high:.3f}]",
        "acc. bound": f"{r.accuracy_bound:.3f}",
        "strongest attack": best.attack,
        "verdict": verdict,
    }


_NUMERIC = ("claimed ε", "δ", "ε lower bound", "best acc. [CI]", "acc. bound")


def _audit_table(
    results: list[AuditResult], title: str, columns: tuple[str, ...], abbreviate: bool
) -> Table:
    table = Table(title=title)
    name_column(table, "mechanism")
    for col in columns:
        if col == "strongest attack":
            name_column(table, col)
        else:
            table.add_column(col, justify="right" if col in _NUMERIC else "left")
    for r in results:
        cells = _audit_rows(r)
        table.add_row(short_name(r.mechanism, abbreviate), *(cells[c] for c in columns))
    return table


def _print_audit(console: Console, results: list[AuditResult]) -> None:
    """One row per mechanism: claimed ε, the lower bound, the strongest attack, the verdict
    (in two stacked tables, or with abbreviated names, where one does not fit)."""
    title = "Empirical lower bounds on ε (strongest attack)"
    full = (*_NUMERIC, "strongest attack", "verdict")
    first = ("claimed ε", "ε lower bound", "verdict")
    second = ("best acc. [CI]", "acc. bound", "strongest attack")

    def split(abbreviate: bool) -> list[Table]:
        return [
            _audit_table(results, title, first, abbreviate),
            _audit_table(results, "The attacks' accuracy and its bound", second, abbreviate),
        ]

    chosen = print_fitted(
        console,
        [
            lambda: [_audit_table(results, title, full, False)],
            lambda: [_audit_table(results, title, full, True)],
            lambda: split(False),
            lambda: split(True),
        ],
    )
    if chosen % 2 == 1 and (words := legend(r.mechanism for r in results)):
        console.print(words)
    console.print(
        "ε lower bound: holds with probability ≥ 1 − α; a bound above the claimed ε refutes "
        "the claim (the model behind it fails on the real data)."
    )


@click.command()
@common_options
@click.option(
    "--mechanism",
    "mechanisms",
    multiple=True,
    help="Only these mechanisms (repeatable; default: every applicable one).",
)
@click.option(
    "--attack",
    "attacks",
    multiple=True,
    type=click.Choice(list(AUDIT_ATTACKS), case_sensitive=False),
    help=f"Attacks to run (repeatable; default: {', '.join(DEFAULT_ATTACKS)}).",
)
@click.option(
    "--audit-samples",
    type=Number(integer=True, low=80),
    default=20_000,
    show_default=True,
    help="Real datasets drawn at each value of the audited pair (half for the test split).",
)
@click.option(
    "--alpha",
    type=PROBABILITY_OPEN,
    default=0.05,
    show_default=True,
    help="Error probability of each mechanism's ε lower bound (Clopper–Pearson, Bonferroni "
    "over the attacks).",
)
@report_option
@click.pass_context
def audit(
    ctx: click.Context,
    mechanisms: tuple[str, ...],
    attacks: tuple[str, ...],
    audit_samples: int,
    alpha: float,
    report: str | None,
    **p: Any,
) -> None:
    """Attack each mechanism on real samples of F and bound its ε from below.

    Exit status 1 when some mechanism's claimed ε is refuted (its lower bound is larger)."""
    from distprivacy.mechanism_audit import audit_calibrations

    check_apart(
        [*data_files(ctx.params.get("data")), ("--model", ctx.params.get("model_file"))],
        [("--report", report)],
    )
    s = Settings.from_click(ctx, p)
    specs = mechanism_specs(mechanisms, s)
    if s.model_file is not None:
        check_model_file(s)
        raise DistPrivacyError(
            "the audit needs real samples of F: give the data options (--data …) instead of --model"
        )
    planned, info, (spec, query) = plan_all(s, specs, fingerprint=False)  # type: ignore[misc]
    cals, skipped, model, data = (
        planned.calibrations, planned.not_applicable, planned.model, planned.data
    )  # fmt: skip
    from distprivacy.mechanisms import MECHANISMS  # not for --help: lazy

    if any(MECHANISMS[m.name].uses_delta for m in specs):
        warn_large_delta(s.delta, spec.n)
    seed = s.model_seed
    chosen = [a.lower() for a in attacks] or list(DEFAULT_ATTACKS)
    total = len(cals) * (1 + len(chosen))  # per mechanism: its datasets, then each attack
    bar = LazyProgress("auditing", enabled=s.show, delay=0.0)  # minutes, not seconds
    steps = iter(range(total))

    def on_step(text: str) -> None:
        bar(next(steps, total), total)
        bar.describe(f"auditing {text}")

    try:
        results = audit_calibrations(
            cals,
            model,
            data,
            spec,
            query,
            samples_per_value=audit_samples,
            attacks=chosen,
            alpha=alpha,
            random_state=seed,
            on_step=on_step,
        )
    finally:
        bar.close()
    refuted = [r.mechanism for r in results if r.refuted]
    context = {**info, **s.to_dict(), "seed": seed, "audit_samples": audit_samples}
    write_audit(report, results, cals, skipped, model, context, s.show)
    if s.as_json:
        click.echo(
            dumps_json(
                {
                    **info,
                    **s.to_dict(),
                    "seed": seed,
                    "audit_samples": audit_samples,
                    "audits": [r.to_dict() for r in results],
                    "refuted": refuted,
                    "not_applicable": skipped,
                }
            )
        )
    else:
        from distprivacy.wording import audit_statement

        console = Console()
        print_statement(console, audit_statement(spec, results, audit_samples))
        print_header(console, model, info, s)
        console.print(
            f"Audit: {audit_samples} real datasets per value of the hardest pair, seed {seed}, "
            f"α = {alpha:g}"
        )
        _print_audit(console, results)
        print_not_applicable(console, skipped)
    if refuted:
        raise click.exceptions.Exit(1)
