"""``distprivacy release``: release a dataset's statistics with one mechanism."""

from __future__ import annotations

import warnings
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from distprivacy.commands import allow_exact_option, dumps_json
from distprivacy.commands._common import (
    LazyProgress,
    build,
    check_targets,
    common_options,
    mechanism,
)
from distprivacy.commands._display import fmt, noise_summary, print_header
from distprivacy.datasets import load_table
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import MECHANISMS, Calibration, Release
from distprivacy.query import Query
from distprivacy.randomness import check_random_state
from distprivacy.spec import ProtectionSpec


def _target_value(target: str, spec: ProtectionSpec, query: Query) -> np.ndarray:
    """F(D) of the n-record dataset in the file ``target``."""
    target_df = load_table(target)
    if len(target_df) != spec.n:
        raise DistPrivacyError(
            f"the target has {len(target_df)} records but --subset-size is {spec.n}; "
            "they must agree"
        )
    query.validate(target_df)
    return query.evaluate(target_df)


def _print_release(console: Console, cal: Calibration, rel: Release) -> None:
    """The released values, the noise, the guarantee and its caveats."""
    table = Table(title=f"Release by {cal.mechanism} ({cal.theorem})")
    table.add_column("statistic")
    table.add_column("released value", justify="right")
    table.add_column("noise std", justify="right")
    table.add_column("relative error", justify="right")
    for name, v, sd, re in zip(
        rel.statistic_names, rel.values, cal.noise_sd, cal.relative_error, strict=True
    ):
        relative = "—" if not np.isfinite(re) else f"{re:.2%}"
        table.add_row(name, f"{v:.4f}", fmt(float(sd)), relative)
    console.print(table)
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


@click.command()
@common_options
@click.option(
    "--mechanism",
    "mechanism_name",
    default="DauM-G",
    show_default=True,
    help=f"One of: {', '.join(MECHANISMS)}.",
)
@click.option(
    "--target",
    type=click.Path(),
    default=None,
    help="The n-record dataset to release (CSV/Parquet). Default: a random n-record "
    "subset of --data (a demonstration).",
)
@allow_exact_option
@click.pass_context
def release(
    ctx: click.Context, mechanism_name: str, target: str | None, allow_exact: bool, **p: Any
) -> None:
    """Release the statistics of a dataset with the chosen mechanism."""
    check_targets(ctx, p)
    mech = mechanism(mechanism_name, p)
    model, info, built = build(ctx, p)
    if target is not None:
        if built is None:
            raise DistPrivacyError("--target needs the data options, not --model")
        _, spec, query = built
        value = _target_value(target, spec, query)
        info["target"] = str(target)
    elif built is not None:
        data, spec, query = built
        gen = check_random_state(p["seed"], secure=False)
        value = data.random_subset_statistics(query, spec.n, gen)
        info["target"] = f"random {spec.n}-record subset of the data (demonstration)"
    else:
        raise DistPrivacyError(
            "with --model, give the dataset to release with --target and the data options instead"
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
    rel = cal.release(value, p["seed"], allow_exact=allow_exact)
    if p["as_json"]:
        click.echo(dumps_json({**info, **rel.to_dict()}))
        return
    console = Console()
    print_header(console, model, info, p)
    console.print(f"Released dataset: {info['target']}")
    _print_release(console, cal, rel)
