"""``distprivacy ledger``: create a privacy ledger and show what it has recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from distprivacy.commands import dumps_json
from distprivacy.commands._files import check_apart, ledger_files
from distprivacy.commands._report import report_option, write_ledger
from distprivacy.commands.ledger_steward import (
    STEWARD_COMMANDS,
    budget_options,
    mu_budget_note,
    steward_key_option,
)


@click.group()
def ledger() -> None:
    """A privacy ledger (SQLite): every release recorded before it is shown, under a secret's
    budget.

    The steward (`keygen`, `init`, `secret`, `register`, `approve`, `budget`) declares what is
    protected, registers the datasets and approves plans with a signing key of their own;
    `release --ledger FILE --dataset NAME --plan NAME` composes the new release with every
    earlier release under the secret (exact joint accounting) and refuses it when the
    cumulative guarantee would exceed the budget."""


def database_option(f: Callable) -> Callable:
    """``--database URL``: the ledger's rows are in PostgreSQL (``serve --database``); PATH is
    then the base of its key and anchor files (``STATE/ledger.db``)."""
    return click.option(
        "--database",
        "database",
        default=None,
        envvar="DISTPRIVACY_DATABASE",
        metavar="URL",
        help="The ledger is in PostgreSQL (postgresql://user@host:port/name, as given to "
        "`serve --database`); PATH names its key and anchor (STATE/ledger.db). Also "
        "$DISTPRIVACY_DATABASE.",
    )(f)


@ledger.command("init")
@click.argument("path", type=click.Path(dir_okay=False))
@steward_key_option
@click.option("--secret", "secret_name", required=True, help="The first secret's name.")
@click.option("--protect", required=True, help="The protected property, e.g. 'income==>50K'.")
@click.option(
    "--population",
    default=None,
    metavar="PATH|adult",
    help="The population the plans are fitted on (default: adult, the verified UCI files).",
)
@budget_options
def init(
    path: str,
    steward_key: str,
    secret_name: str,
    protect: str,
    population: str | None,
    budget: Any,
) -> None:
    """Create a ledger with its first secret: a protected property of a population, with its
    budget. Every release under the secret composes with every other, whatever registered
    dataset it reads. The steward's key (`ledger keygen`) signs every decision."""
    from distprivacy.ledger import Ledger

    target = budget
    with Ledger.init(
        path,
        steward=steward_key,
        secret=secret_name,
        protect=protect,
        budget=target,
        population=population,
    ) as led:
        s = led.registry.secret(secret_name)
        click.echo(
            f"created ledger {path}: secret {s.name} protects {s.property}, budget "
            f"{s.budget.describe()}; steward {led.steward.fingerprint}"
        )
    click.echo(
        f"its key is {path}.key and its anchor {path}.anchor (mode 0600): releasers need the "
        "key, never the steward's; back all three up with `distprivacy ledger backup`"
    )
    mu_budget_note(target)


for _command in STEWARD_COMMANDS:
    ledger.add_command(_command)


@ledger.command("verify")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--steward-public-key",
    "steward_public",
    default=None,
    metavar="HEX|FINGERPRINT",
    help="The steward's public key (64 hex digits) or its 16-digit fingerprint, kept apart "
    "from the ledger: fail unless the ledger's steward is that one.",
)
@database_option
def verify(
    path: str, as_json: bool, steward_public: str | None, database: str | None = None
) -> None:
    """Recompute the ledger's keyed hash chain, the steward's signed events, every release's
    guarantee and every running total; exit 1 naming the first bad release (0 when all
    hold)."""
    from dataclasses import replace

    from distprivacy.ledger import Ledger

    with Ledger(path, database=database) as led:
        report = led.verify()
        if steward_public is not None:
            want = steward_public.strip().lower()
            if led.read_only:
                report = replace(report, ok=False, reason="a schema-2 ledger has no steward key")
            elif want not in (led.steward.hex, led.steward.fingerprint):
                report = replace(
                    report,
                    ok=False,
                    reason=f"its steward key is {led.steward.fingerprint}, not {want[:16]}: the "
                    "ledger was made (or remade) by someone else",
                )
    if as_json:
        click.echo(dumps_json(dict(report.__dict__)))
    elif report.ok:
        from rich.console import Console  # (not for init: lazy)

        Console(highlight=False).print(
            f"verified {report.releases} release(s) of {path}: chain, anchor, guarantees and "
            f"running totals hold; head {report.head[:16]}… (keep it elsewhere to notice a "
            "roll-back of every file)",
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
    """Replaced by `ledger approve` (the steward's own key, not the ledger's)."""
    from distprivacy.exceptions import DistPrivacyError

    raise DistPrivacyError(
        "plans are no longer sealed with the ledger's key (whoever releases holds it): the "
        f"steward approves them — `distprivacy ledger approve {path} {plan_path} --name NAME "
        "--steward-key KEY`"
    )


@ledger.command("backup")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option(
    "--force",
    is_flag=True,
    help="Copy a ledger that fails verification anyway (for forensics; a warning says so).",
)
@database_option
def backup(path: str, out: str, force: bool, database: str | None = None) -> None:
    """Copy a (possibly live) ledger, its key and its anchor consistently (SQLite's backup
    API; a PostgreSQL ledger's rows into an SQLite ledger file, read on one snapshot), after
    verifying it: a ledger that fails verification is refused (exit 2) unless --force."""
    from distprivacy.ledger import Ledger

    check_apart(ledger_files(path), ledger_files(out, "the backup"))
    with Ledger(path, database=database) as led:
        led.backup(out, force=force)
    from pathlib import Path

    anchor = f", its anchor to {out}.anchor" if Path(out + ".anchor").exists() else ""
    click.echo(
        f"backed up {path} to {out} (its key to {out}.key{anchor}), all 0600; restoring "
        "them together rolls the ledger back to this copy"
    )


@ledger.command("show")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@report_option
@database_option
def show(path: str, as_json: bool, report: str | None, database: str | None = None) -> None:
    """List the recorded releases and the cumulative guarantee of each dataset."""
    from distprivacy.ledger import Ledger

    check_apart(ledger_files(path), [("--report", report)])
    with Ledger(path, database=database) as led:
        shown = led.show()
        if not led.read_only:
            write_ledger(report, led, shown, not as_json)
            if as_json:
                click.echo(dumps_json(shown))
            else:
                _show_secrets(path, shown)
            return
        the_budget = led.budget
        budget = the_budget.describe()
        write_ledger(report, led, shown, not as_json)
    if as_json:
        click.echo(dumps_json(shown))
        return
    from rich.console import Console

    from distprivacy.commands._display import print_columns  # (not for --help: lazy)
    from distprivacy.wording import ledger_statement

    console = Console()
    console.print(f"Ledger {path} is of schema 2 (before secrets): read-only.", markup=False)
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
                _gdp_mu(g),
                f"{g['epsilon']:.4g}",
                f"{g['delta']:.3g}",
                str(len(r["statistics"])),
            )
        )
    print_columns(
        console,
        "Releases (oldest first; the dataset is its fingerprint's start)",
        ("id", "time (UTC)", "dataset", "mechanism", "μ-GDP", "ε", "δ", "stats"),
        rows,
        [(1, 2, 3), (4, 5, 6, 7)],
        left=(1, 2, 3),
    )
    for c in shown["cumulative"]:
        mu = _gdp_mu(c)
        verdict = "within budget" if c["within_budget"] else "[red]OVER BUDGET[/]"
        console.print(
            f"Cumulative for dataset {str(c['fingerprint']).split(':')[-1][:10]} ({c['property']}, "
            f"{c['releases']} release(s)): μ = {mu}, ε = {c['epsilon']:.4g} at δ = "
            f"{c['at_delta']:.3g}, no attacker above {c['max_attack_accuracy']:.1%} accuracy; "
            f"{verdict}"
        )


def _gdp_mu(g: dict) -> str:
    """μ as a GDP parameter when the guarantee is μ-GDP, else '—' (its (ε, δ) points and
    attack bound state it: issue 33)."""
    gdp = g.get("gdp", g.get("curve") == "gdp")
    return "—" if g.get("mu") is None or not gdp else f"{g['mu']:.4g}"


def _show_secrets(path: str, shown: dict) -> None:
    """``ledger show`` of a ledger of secrets, in words then tables."""
    from rich.console import Console

    from distprivacy.commands._display import print_columns  # (not for --help: lazy)

    console = Console(highlight=False)
    n = len(shown["releases"])
    console.print(
        f"Ledger {path}: {len(shown['secrets'])} secret(s), {n} release(s); steward "
        f"{shown['steward']}",
        markup=False,
    )
    for x in shown["secrets"]:
        line = (
            f"Secret {x['secret']} protects {x['property']} (budget {x['budget_text']}): "
            f"{x['releases']} release(s) of {len({d['name'] for d in x['datasets']})} registered "
            f"dataset(s) with {len(x['plans'])} approved plan(s)"
        )
        if "mu" in x:
            mu = "" if _gdp_mu(x) == "—" else f"μ = {x['mu']:.4g}-GDP, "
            verdict = "within budget" if x["within_budget"] else "OVER BUDGET"
            line += (
                f"; all together: {mu}ε = {x['epsilon']:.4g} at δ = {x['at_delta']:.3g}, no "
                f"attacker above {x['max_attack_accuracy']:.1%} accuracy; {verdict}"
            )
        console.print(line, markup=False)
    rows = []
    for r in shown["releases"]:
        g = r["guarantee"]
        rows.append(
            (
                str(r["id"]),
                str(r["time"]).replace("T", " ")[:19],
                str(r["property"]).removeprefix("secret:"),
                str(r["fingerprint"]).removeprefix("dataset:"),
                str(r["mechanism"]),
                _gdp_mu(g),
                f"{g['epsilon']:.4g}",
                f"{g['delta']:.3g}",
            )
        )
    print_columns(
        console,
        "Releases (oldest first)",
        ("id", "time (UTC)", "secret", "dataset", "mechanism", "μ-GDP", "ε", "δ"),
        rows,
        [(1, 2, 3, 4), (5, 6, 7)],
        left=(1, 2, 3, 4),
    )
