"""``distprivacy release``: release a dataset's statistics with one mechanism."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from distprivacy.commands import allow_exact_option, dumps_json, parse_floats
from distprivacy.commands._common import (
    PLAN_FIXES,
    LazyProgress,
    build,
    check_targets,
    common_options,
    given,
    mechanism,
    modelling,
    refitter,
    released_size,
    settings,
    warn_large_delta,
)
from distprivacy.commands._display import (
    Clip,
    clip_release,
    fmt,
    noise_summary,
    print_header,
    print_statement,
    range_text,
    spec_of,
    text_column,
)
from distprivacy.commands._names import MECHANISM_NAMES
from distprivacy.commands._report import report_option, write_release
from distprivacy.commands.config import config_option
from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import check_random_state

if TYPE_CHECKING:  # the library is imported when the command runs, not for its --help
    import pandas as pd

    from distprivacy.mechanisms import Calibration, Release
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec


def _target_value(target_df: pd.DataFrame, spec: ProtectionSpec, query: Query) -> np.ndarray:
    """F(D) of the n-record dataset ``target_df``."""
    if len(target_df) != spec.n:
        raise DistPrivacyError(
            f"the target has {len(target_df)} records but --subset-size is {spec.n}; "
            "they must agree"
        )
    query.validate(target_df)
    return query.evaluate(target_df)


def _print_release(console: Console, cal: Calibration, rel: Release, clip: Clip) -> None:
    """The released values (post-processed into their ranges unless --no-clip), the noise,
    the guarantee and its caveats."""
    table = Table(title=f"Release by {cal.mechanism} ({cal.theorem})")
    text_column(table, "statistic")
    table.add_column("released value", justify="right")
    table.add_column("noise std", justify="right")
    table.add_column("relative error", justify="right")
    for k, (name, v, sd, re) in enumerate(
        zip(rel.statistic_names, clip.values, cal.noise_sd, cal.relative_error, strict=True)
    ):
        relative = "—" if not np.isfinite(re) else f"{re:.2%}"
        table.add_row(
            name, f"{v:.4f}" + (" *" if k in clip.moved else ""), fmt(float(sd)), relative
        )
    console.print(table)
    for k in clip.moved:
        console.print(
            f"* {rel.statistic_names[k]}: the noisy value {rel.values[k]:.4f} was clipped to "
            f"{range_text(clip.ranges[k])}; post-processing keeps the guarantee (--no-clip "
            "keeps the raw value)",
            markup=False,
        )
    for k in clip.outside:
        console.print(
            f"[yellow]warning:[/] {rel.statistic_names[k]} = {rel.values[k]:.4f} lies outside "
            f"its range {range_text(clip.ranges[k])} (kept raw: --no-clip)"
        )
    console.print(f"Noise: {noise_summary(cal)}; expected L2 error {fmt(cal.expected_l2_error)}")
    mu = "" if cal.mu is None else f"μ = {cal.mu:.4g}-GDP, "
    console.print(
        f"Guarantee: {mu}({cal.epsilon:.4g}, {cal.delta_achieved:.3g})-distribution privacy for "
        f"the protected pairs, no attacker above {cal.max_attack_accuracy:.1%} accuracy; "
        "assuming:"
    )
    for a in cal.assumptions:
        console.print(f"  - {a}")
    for w in cal.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    if not cal.adds_noise:
        console.print(
            "[yellow]warning:[/] no noise was added: these are the TRUE statistics "
            "(--allow-exact, Theorem 4.4)"
        )
    if not rel.secure:
        console.print(
            "[yellow]warning:[/] --seed makes the noise reproducible; never publish a "
            "seeded release"
        )


def _plan_values(plan: Plan, target_df: pd.DataFrame | None, value_text: str | None) -> np.ndarray:
    """The statistics' values for a plan: F(target) or the numbers of --value."""
    if (target_df is None) == (value_text is None):
        raise DistPrivacyError("--plan needs the dataset (--target DATA.csv) or --value a,b,…")
    if target_df is not None:
        return plan.target_values(target_df)
    names = plan.calibration.statistic_names
    vals = parse_floats(value_text, "--value", example=",".join(["1.5"] * len(names)))
    if len(vals) != len(names):
        raise DistPrivacyError(
            f"--value has {len(vals)} numbers but the plan releases {len(names)} statistics "
            f"({', '.join(names)})"
        )
    return np.asarray(vals, dtype=float)


def _record(
    ledger_path: str,
    plan: Plan,
    target_df: pd.DataFrame | None,
    fit: Any,
    allow_exact: bool,
    sealed: bool,
) -> tuple[Release, dict[str, Any]]:
    """Release through the ledger (record, then reveal: nothing is printed before this
    returns); the release and what to print of the ledger."""
    from distprivacy.ledger import Ledger

    if target_df is None:
        raise DistPrivacyError(
            "--ledger keys each release on the dataset it is about: give the dataset with "
            "--target DATA.csv"
        )
    with Ledger(ledger_path) as led:
        bar = LazyProgress("waiting for the ledger (another release holds it)", enabled=True)
        led.on_wait = lambda waited, limit: bar(int(waited), int(limit))
        try:
            rec = led.release(
                plan, target_df, allow_exact=allow_exact, require_seal=sealed, fit=fit
            )
        finally:
            bar.close()
        at = led.budget.report_delta
        budget = led.budget.describe()
    c = rec.cumulative
    eps = c.epsilon_at(at)
    return rec.release, {
        "ledger": ledger_path,
        "budget": budget,
        "release_id": rec.release_id,
        "releases_of_this_dataset": rec.releases_of_dataset,
        "warnings": list(rec.warnings),
        "cumulative": {
            "mu": c.mu,
            "epsilon": eps,
            "delta": at,
            "max_attack_accuracy": c.max_attack_accuracy,
            "theorem": c.theorem,
        },
    }


def _print_ledger(console: Console, led: dict[str, Any]) -> None:
    c = led["cumulative"]
    mu = "" if c["mu"] is None else f"μ = {c['mu']:.4g}, "
    console.print(
        f"Recorded in ledger {led['ledger']} (budget {led['budget']}): release "
        f"{led['releases_of_this_dataset']} of this dataset; cumulative {mu}ε = "
        f"{c['epsilon']:.4g} at δ = {c['delta']:.3g}, no attacker above "
        f"{c['max_attack_accuracy']:.1%} accuracy (exact joint accounting where the releases "
        "are Gaussian)"
    )
    for w in led.get("warnings", ()):
        console.print(f"[yellow]warning:[/] {w}")


@click.command()
@config_option
@common_options
@click.option(
    "--mechanism",
    "mechanism_name",
    default="DauM-G",
    show_default=True,
    help=f"One of: {', '.join(MECHANISM_NAMES)}.",
)
@click.option(
    "--target",
    type=click.Path(),
    default=None,
    help="The n-record dataset to release (CSV/Parquet). Default: a random n-record "
    "subset of --data (a demonstration).",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Release with a saved plan (calibrate --mechanism NAME --save PLAN.json): nothing is "
    "refitted; the plan's digest, the target's columns and its size n are checked.",
)
@click.option(
    "--value",
    "value_text",
    default=None,
    help="With --plan: the statistics' values a,b,… instead of --target (e.g. for a plan "
    "made from a user's model file).",
)
@click.option(
    "--ledger",
    "ledger_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Record the release in this ledger (distprivacy ledger init) before showing it; "
    "refused (exit 2, nothing recorded) when the cumulative guarantee of every release of "
    "this dataset would exceed the ledger's budget.",
)
@click.option(
    "--no-clip",
    "no_clip",
    is_flag=True,
    help="Publish the raw noisy values: by default a proportion is clipped into [0, 1] and a "
    "count into [0, n] (post-processing, which keeps the guarantee).",
)
@allow_exact_option
@report_option
@click.pass_context
def release(
    ctx: click.Context,
    mechanism_name: str,
    target: str | None,
    plan_path: str | None,
    value_text: str | None,
    ledger_path: str | None,
    no_clip: bool,
    allow_exact: bool,
    report: str | None,
    **p: Any,
) -> None:
    """Release the statistics of a dataset with the chosen mechanism (or a saved plan)."""
    from distprivacy.datasets import load_table
    from distprivacy.mechanisms.plans import Plan

    if ledger_path is not None:
        from distprivacy.ledger import Ledger

        if p["seed"] is not None:
            raise DistPrivacyError(
                "--seed makes the noise reproducible (anyone with the seed could subtract it): "
                "a release recorded in a ledger never takes one; drop --seed (seeds are for "
                "experiments)"
            )
        Ledger(ledger_path).close()  # a bad ledger is refused before any work
    target_df = None if target is None else load_table(target)
    fit = None
    if plan_path is not None:
        fixed = [k for k in (*PLAN_FIXES, "mechanism_name") if given(ctx, k)]
        if fixed:
            flags = ", ".join(
                "--" + k.rstrip("_").replace("_name", "").replace("_", "-") for k in fixed
            )
            raise DistPrivacyError(f"--plan fixes the model and the mechanism; drop {flags}")
        plan = Plan.load(plan_path)
        value = _plan_values(plan, target_df, value_text)
        cal = plan.calibration
        warn_large_delta(cal.delta, plan.n)
        model = plan.model
        info: dict[str, Any] = {
            "plan": str(plan_path),
            "plan_digest": plan.digest,
            "target": str(target) if target is not None else "values given with --value",
        }
    else:
        if value_text is not None:
            raise DistPrivacyError("--value needs --plan (without a plan, give --target)")
        check_targets(ctx, p)
        mech = mechanism(mechanism_name, p)
        model, info, built = build(ctx, p)
        if mech.uses_delta:
            warn_large_delta(p["delta"], released_size(model))
        if target_df is not None:
            if built is None:
                raise DistPrivacyError("--target needs the data options, not --model")
            _, spec, query = built
            value = _target_value(target_df, spec, query)
            info["target"] = str(target)
        elif built is not None:
            data, spec, query = built
            gen = check_random_state(p["seed"], secure=False)
            # A dataset the model describes: n records drawn as θ_p says, for a random p.
            t = int(gen.integers(len(spec.values)))
            value = data.subset_statistics(spec, query, [spec.counts[t]], 1, gen)[0][0]
            info["target"] = (
                f"a random {spec.n}-record dataset drawn from the data with "
                f"{spec.values[t]:g} of its records satisfying {spec.predicate} (demonstration)"
            )
        else:
            raise DistPrivacyError(
                "with --model, save a plan (calibrate --model FILE --mechanism NAME --save "
                "PLAN.json) and release it with --plan PLAN.json --value a,b,…"
            )
        bar = LazyProgress(f"calibrating {mech.name} (pairs)", enabled=not p["as_json"])
        if hasattr(mech, "progress"):  # the Wasserstein mechanisms report each pair
            mech.progress = bar
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cal = mech.calibrate(model)
        finally:
            bar.close()
        if ledger_path is not None and built is not None:
            plan = Plan.from_calibration(cal, model, data=built[0], modelling=modelling(p))
            fit = refitter(built, p)
    if ledger_path is not None:
        rel, info["ledger"] = _record(
            ledger_path, plan, target_df, fit, allow_exact, sealed=plan_path is not None
        )
    else:
        rel = cal.release(value, p["seed"], allow_exact=allow_exact)
    plan_spec = plan.spec if plan_path is not None else None
    context = {**info, **(plan.modelling if plan_path is not None else settings(p))}
    clip = clip_release(rel.values, cal, enabled=not no_clip)
    if p["as_json"]:
        out = rel.to_dict()
        names = list(rel.statistic_names)
        if clip.values.size == len(names):
            out["statistics"] = dict(zip(names, clip.values.tolist(), strict=True))
            out["raw_statistics"] = dict(zip(names, np.ravel(rel.values).tolist(), strict=True))
        out["clipped_to_range"] = clip.enabled
        out["clipped"] = [names[k] for k in clip.moved]
        click.echo(dumps_json({**info, **out}))
        write_release(report, cal, rel, model, plan_spec, context, show=False)
        return
    console = Console()
    from distprivacy.wording import statement

    spec = spec_of(cal.model_ or model, plan_spec)
    print_statement(console, statement(spec, rel.statistic_names, cal.guarantee, released=True))
    if plan_path is None:
        print_header(console, model, info, p)
    else:
        console.print(f"Plan {plan_path} ({info['plan_digest'][:19]}…), not refitted")
    console.print(f"Released dataset: {info['target']}")
    _print_release(console, cal, rel, clip)
    if ledger_path is not None:
        _print_ledger(console, info["ledger"])
    write_release(report, cal, rel, model, plan_spec, context, show=True)
