"""``distprivacy ledger``: create a privacy ledger and show what it has recorded."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from distprivacy.commands import DELTA, POSITIVE, dumps_json


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
def init(
    path: str, budget_mu: float | None, budget_epsilon: float | None, budget_delta: float | None
) -> None:
    """Create a new ledger file with one budget: --budget-mu, or --budget-epsilon and
    --budget-delta."""
    from distprivacy.ledger import Ledger

    with Ledger.init(
        path, budget_mu=budget_mu, budget_epsilon=budget_epsilon, budget_delta=budget_delta
    ) as led:
        click.echo(f"created ledger {path} with budget {led.budget.describe()}")


@ledger.command("show")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(path: str, as_json: bool) -> None:
    """List the recorded releases and the cumulative guarantee of each dataset."""
    from distprivacy.ledger import Ledger

    with Ledger(path) as led:
        shown = led.show()
        budget = led.budget.describe()
    if as_json:
        click.echo(dumps_json(shown))
        return
    console = Console()
    console.print(f"Ledger {path}: budget {budget}; {len(shown['releases'])} release(s)")
    table = Table(title="Releases (oldest first; the dataset is its fingerprint's start)")
    for col in ("id", "time (UTC)", "dataset", "mechanism", "μ", "ε", "δ", "stats"):
        table.add_column(col, justify="left" if col in ("time (UTC)", "dataset") else "right")
    for r in shown["releases"]:
        g = r["guarantee"]
        table.add_row(
            str(r["id"]),
            str(r["time"]).replace("T", " ")[:19],
            str(r["fingerprint"]).split(":")[-1][:10],
            str(r["mechanism"]),
            "—" if g.get("mu") is None else f"{g['mu']:.4g}",
            f"{g['epsilon']:.4g}",
            f"{g['delta']:.3g}",
            str(len(r["statistics"])),
        )
    console.print(table)
    for c in shown["cumulative"]:
        mu = "—" if c["mu"] is None else f"{c['mu']:.4g}"
        verdict = "within budget" if c["within_budget"] else "[red]OVER BUDGET[/]"
        console.print(
            f"Cumulative for dataset {str(c['fingerprint']).split(':')[-1][:10]} ({c['property']}, "
            f"{c['releases']} release(s)): μ = {mu}, ε = {c['epsilon']:.4g} at δ = "
            f"{c['at_delta']:.3g}, no attacker above {c['max_attack_accuracy']:.1%} accuracy; "
            f"{verdict}"
        )
