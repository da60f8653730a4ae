"""The steward's ``distprivacy ledger`` commands: a signing key, secrets, registered datasets,
approved plans and budgets (each signed with the steward's key; a releaser cannot run them)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import click

from distprivacy.commands import DELTA, POSITIVE
from distprivacy.exceptions import DistPrivacyError


def steward_key_option(f: Callable) -> Callable:
    return click.option(
        "--steward-key",
        "steward_key",
        required=True,
        type=click.Path(dir_okay=False),
        metavar="FILE",
        help="The steward's private signing key (from `distprivacy ledger keygen`).",
    )(f)


_BUDGET_FLAGS = ("budget_mu", "budget_epsilon", "budget_delta", "budget_accuracy")


def budget_options(f: Callable) -> Callable:
    """The budget flags (`--budget-mu`, `--budget-epsilon` with `--budget-delta`,
    `--budget-accuracy`), handed to the command as one typed target, ``budget``
    (:func:`budget_target`)."""

    @functools.wraps(f)
    def command(*args: Any, **kwargs: Any) -> Any:
        flags = {k: kwargs.pop(k) for k in _BUDGET_FLAGS}
        return f(*args, budget=budget_target(flags), **kwargs)

    for opt in reversed(
        [
            click.option("--budget-mu", type=POSITIVE, default=None, help="Budget as μ (μ-GDP)."),
            click.option(
                "--budget-epsilon",
                type=POSITIVE,
                default=None,
                help="Budget ε (with --budget-delta).",
            ),
            click.option(
                "--budget-delta", type=DELTA, default=None, help="Budget δ (with --budget-epsilon)."
            ),
            click.option(
                "--budget-accuracy",
                type=POSITIVE,
                default=None,
                help="Budget as the highest attack accuracy allowed (in (0.5, 1)).",
            ),
        ]
    ):
        command = opt(command)
    return command


def budget_target(flags: Mapping[str, float | None]) -> Any:
    """The budget flags (by their parameter names) as one typed target (exactly one kind
    given)."""
    from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy

    mu, eps, dlt, acc = (flags.get(k) for k in _BUDGET_FLAGS)
    kinds = [mu is not None, eps is not None or dlt is not None, acc is not None]
    if sum(kinds) != 1:
        raise DistPrivacyError(
            "give one budget: --budget-mu MU, or --budget-epsilon E with --budget-delta D, or "
            "--budget-accuracy A"
        )
    if mu is not None:
        return GDP(mu)
    if acc is not None:
        return MaxAttackAccuracy(acc)
    if eps is None or dlt is None:
        raise DistPrivacyError("an (ε, δ) budget needs both --budget-epsilon and --budget-delta")
    return EpsDelta(eps, dlt)


def mu_budget_note(target: Any) -> None:
    """Under a μ budget, say on stderr what it holds: μ-GDP releases only."""
    from distprivacy.targets import GDP

    if isinstance(target, GDP):
        click.echo(
            "note: a μ budget holds only μ-GDP releases; plans whose fitted Gaussians have "
            "unequal covariances (Adult's, most real data's) are refused under it — give "
            "--budget-epsilon E --budget-delta D or --budget-accuracy A for them",
            err=True,
        )


@click.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False))
def keygen(path: str) -> None:
    """Make the steward's signing key (Ed25519, mode 0600): keep it on the steward's machine
    only. Releasers never get it."""
    from distprivacy.ledger import StewardKey

    key = StewardKey.generate(path)
    click.echo(
        f"created the steward key {path} (mode 0600); public key {key.public.hex} "
        f"(fingerprint {key.public.fingerprint}: keep it elsewhere to check ledgers with "
        "`ledger verify --steward-public-key`)"
    )


@click.command("secret")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("name")
@steward_key_option
@click.option("--protect", required=True, help="The protected property, e.g. 'income==>50K'.")
@click.option(
    "--population",
    default=None,
    metavar="PATH|adult",
    help="The population the plans are fitted on (default: adult, the verified UCI files).",
)
@budget_options
def secret(
    path: str,
    name: str,
    steward_key: str,
    protect: str,
    population: str | None,
    budget: Any,
) -> None:
    """Declare another secret of this ledger: a protected property of a population, with its
    own budget."""
    from distprivacy.ledger import Ledger

    target = budget
    with Ledger(path) as led:
        s = led.add_secret(steward_key, name, protect, target, population=population)
    click.echo(f"secret {s.name}: protects {s.property}, budget {s.budget.describe()}")
    mu_budget_note(target)


@click.command("register")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("name")
@steward_key_option
@click.option("--data", "data", required=True, type=click.Path(), help="The file to register.")
@click.option("--secret", "secret_name", default=None, help="The secret (when there are several).")
@click.option(
    "--same-records-as",
    default=None,
    metavar="DATASET",
    help="The file holds that dataset's records re-expressed: composed as the same records.",
)
@click.option(
    "--independent",
    is_flag=True,
    help="The file holds other records than the datasets it resembles: composed as measured.",
)
@click.option(
    "--confirm-overlap",
    default=None,
    metavar="REASON",
    help="Register although it shares records with a dataset of another secret (recorded).",
)
def register(
    path: str,
    name: str,
    steward_key: str,
    data: str,
    secret_name: str | None,
    same_records_as: str | None,
    independent: bool,
    confirm_overlap: str | None,
) -> None:
    """Register a file (CSV, Parquet, or an Adult directory) as a dataset under a secret, or a
    new version of a registered dataset (same NAME). Releases read the registered file and
    refuse it once its bytes change."""
    from distprivacy.ledger import Ledger

    with Ledger(path) as led:
        d, notices = led.register(
            steward_key,
            name,
            data,
            secret=secret_name,
            same_records_as=same_records_as,
            independent=independent,
            confirm_overlap=confirm_overlap,
        )
        shared = {k: v for k, v in d.shared.items() if v}
    for n in notices:
        click.echo(f"warning: {n}", err=True)
    also = "; ".join(f"{v} records shared with {k.split(':', 1)[1]}" for k, v in shared.items())
    click.echo(
        f"registered {d.name} version {d.version} under secret {d.secret}: {d.rows} records "
        f"from {d.path}" + (f" ({also})" if also else "")
    )


@click.command("approve")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("plan_path", type=click.Path(dir_okay=False))
@steward_key_option
@click.option("--name", "plan_name", required=True, help="The name releasers give the plan.")
@click.option("--secret", "secret_name", default=None, help="The secret (when there are several).")
def approve(
    path: str, plan_path: str, steward_key: str, plan_name: str, secret_name: str | None
) -> None:
    """Approve a reviewed plan for a secret: it is stored in the ledger (encrypted) under NAME,
    and releasers release registered datasets with it by that name."""
    from distprivacy.ledger import Ledger
    from distprivacy.mechanisms.plans import Plan

    plan = Plan.load(plan_path)
    with Ledger(path) as led:
        approved = led.approve(steward_key, plan, plan_name, secret=secret_name)
    click.echo(
        f"approved {plan_path} as plan {approved.name} of secret {approved.secret}: "
        f"{plan.calibration.mechanism} releasing {', '.join(plan.calibration.statistic_names)} "
        f"({plan.guarantee.describe()})"
    )


@click.command("budget")
@click.argument("path", type=click.Path(dir_okay=False))
@steward_key_option
@click.option("--secret", "secret_name", default=None, help="The secret (when there are several).")
@click.option("--reason", required=True, help="Why the budget changes (recorded).")
@budget_options
def budget(
    path: str,
    steward_key: str,
    secret_name: str | None,
    reason: str,
    budget: Any,
) -> None:
    """Set a secret's budget anew (raise or lower it), with the reason (recorded)."""
    from distprivacy.ledger import Ledger

    target = budget
    with Ledger(path) as led:
        s = led.set_budget(steward_key, secret_name, target, reason)
    click.echo(f"secret {s.name}: budget now {s.budget.describe()} ({reason.strip()})")
    mu_budget_note(target)


STEWARD_COMMANDS = (keygen, secret, register, approve, budget)
