"""``distprivacy ledger``: create a privacy ledger and show what it has recorded."""

from __future__ import annotations

import click
from rich.console import Console

from distprivacy.commands import DELTA, POSITIVE, dumps_json
from distprivacy.commands._report import report_option, write_ledger


@click.group()
def ledger() -> None:
    """A privacy ledger (SQLite): every release recorded before it is shown, with a budget.

    `release … --ledger FILE` composes the new release with every earlier release of the same
    dataset and protected property (exact joint accounting for Gaussian releases) and refuses
    it when the cumulative guarantee would exceed the budget."""


@ledger.command("init")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--budget-mu", type=POSITIVE, default=None, help="Budget as μ (μ-GDP).")
@click.option(
    "--budget-epsilon", type=POSITIVE, default=None, help="Budget ε (with --budget-delta)."
)
@click.option("--budget-delta", type=DELTA, default=None, help="Budget δ (with --budget-epsilon).")
@click.option(
    "--identify-by",
    default=None,
    metavar="COL,COL,…",
    help="The columns that tell one dataset from another (e.g. a record id); every target "
    "must hold them. Default: all the columns of the first release's target.",
)
def init(
    path: str,
    budget_mu: float | None,
    budget_epsilon: float | None,
    budget_delta: float | None,
    identify_by: str | None,
) -> None:
    """Create a new ledger file with one budget: --budget-mu, or --budget-epsilon and
    --budget-delta. Releases of the same records are composed whatever statistics they
    release: the ledger identifies a dataset by --identify-by, or by all the columns of its
    first release's target."""
    from distprivacy.ledger import Ledger

    columns = None if identify_by is None else [c.strip() for c in identify_by.split(",")]
    with Ledger.init(
        path,
        budget_mu=budget_mu,
        budget_epsilon=budget_epsilon,
        budget_delta=budget_delta,
        identify_by=columns,
    ) as led:
        click.echo(f"created ledger {path} with budget {led.budget.describe()}")
        if led.identity_columns is not None:
            click.echo(f"a dataset is identified by: {', '.join(led.identity_columns)}")
    click.echo(
        f"its key is {path}.key (mode 0600): keep it with the ledger, readable by you only; "
        "back both up with `distprivacy ledger backup`"
    )


@ledger.command("verify")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def verify(path: str, as_json: bool) -> None:
    """Recompute the ledger's keyed hash chain, every release's guarantee and every running
    total; exit 1 naming the first bad release (0 when all hold)."""
    from distprivacy.ledger import Ledger

    with Ledger(path) as led:
        report = led.verify()
    if as_json:
        click.echo(dumps_json(dict(report.__dict__)))
    elif report.ok:
        Console(highlight=False).print(
            f"verified {report.releases} release(s) of {path}: chain, guarantees and running "
            f"totals hold; head {report.head[:16]}… (keep it elsewhere to notice a roll-back)",
            markup=False,
        )
    else:
        where = f"release {report.first_bad}" if report.first_bad else "the ledger's head"
        click.echo(f"FAILED at {where}: {report.reason}", err=True)
    if not report.ok:
        raise click.exceptions.Exit(1)


@ledger.command("seal")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("plan_path", type=click.Path(dir_okay=False))
def seal(path: str, plan_path: str) -> None:
    """Seal a reviewed plan with this ledger's key: `release --plan PLAN --ledger LEDGER`
    refuses a plan it has not sealed (or one modified after sealing)."""
    from distprivacy.ledger import Ledger
    from distprivacy.mechanisms.plans import Plan

    plan = Plan.load(plan_path)
    with Ledger(path) as led:
        sealed = led.seal(plan)
    sealed.save(plan_path)
    spec = plan.spec or {}
    click.echo(
        f"sealed {plan_path} with the key of {path}: {plan.calibration.mechanism} releasing "
        f"{', '.join(plan.calibration.statistic_names)} of {spec.get('n', '?')} records, "
        f"protecting {spec.get('property', '?')} ({plan.guarantee.describe()})"
    )


@ledger.command("backup")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option(
    "--force",
    is_flag=True,
    help="Copy a ledger that fails verification anyway (for forensics; a warning says so).",
)
def backup(path: str, out: str, force: bool) -> None:
    """Copy a (possibly live) ledger and its key consistently (SQLite's backup API), after
    verifying it: a ledger that fails verification is refused (exit 2) unless --force."""
    from distprivacy.ledger import Ledger

    with Ledger(path) as led:
        led.backup(out, force=force)
    click.echo(f"backed up {path} to {out} (and its key to {out}.key), both 0600")


@ledger.command("show")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@report_option
def show(path: str, as_json: bool, report: str | None) -> None:
    """List the recorded releases and the cumulative guarantee of each dataset."""
    from distprivacy.ledger import Ledger

    with Ledger(path) as led:
        shown = led.show()
        the_budget = led.budget
        budget = the_budget.describe()
        write_ledger(report, led, shown, not as_json)
    if as_json:
        click.echo(dumps_json(shown))
        return
    from distprivacy.commands._display import print_columns  # (not for --help: lazy)
    from distprivacy.wording import ledger_statement

    console = Console()
    datasets = len({r["fingerprint"] for r in shown["releases"]})
    console.print(f"[bold]{ledger_statement(the_budget, len(shown['releases']), datasets)}[/]")
    console.print(f"Ledger {path}: budget {budget}; {len(shown['releases'])} release(s)")
    ids = shown.get("identity_columns")
    console.print(
        "Datasets identified by: "
        + (
            ", ".join(ids)
            if ids
            else "the columns each release reads (a ledger from before identity columns)"
            if shown["releases"]
            else "all the columns of the first release's target (not yet fixed)"
        ),
        markup=False,
    )
    rows = []
    for r in shown["releases"]:
        g = r["guarantee"]
        rows.append(
            (
                str(r["id"]),
                str(r["time"]).replace("T", " ")[:19],
                str(r["fingerprint"]).split(":")[-1][:10],
                str(r["mechanism"]),
                "—" if g.get("mu") is None else f"{g['mu']:.4g}",
                f"{g['epsilon']:.4g}",
                f"{g['delta']:.3g}",
                str(len(r["statistics"])),
            )
        )
    print_columns(
        console,
        "Releases (oldest first; the dataset is its fingerprint's start)",
        ("id", "time (UTC)", "dataset", "mechanism", "μ", "ε", "δ", "stats"),
        rows,
        [(1, 2, 3), (4, 5, 6, 7)],
        left=(1, 2, 3),
    )
    for c in shown["cumulative"]:
        mu = "—" if c["mu"] is None else f"{c['mu']:.4g}"
        verdict = "within budget" if c["within_budget"] else "[red]OVER BUDGET[/]"
        console.print(
            f"Cumulative for dataset {str(c['fingerprint']).split(':')[-1][:10]} ({c['property']}, "
            f"{c['releases']} release(s)): μ = {mu}, ε = {c['epsilon']:.4g} at δ = "
            f"{c['at_delta']:.3g}, no attacker above {c['max_attack_accuracy']:.1%} accuracy; "
            f"{verdict}"
        )
