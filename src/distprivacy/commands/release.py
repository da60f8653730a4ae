"""``distprivacy release``: release a dataset's statistics with one mechanism."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import click
import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from distprivacy.commands import allow_exact_option, dumps_json, parse_floats
from distprivacy.commands._common import (
    PLAN_FIXES,
    LazyProgress,
    check_model_file,
    common_options,
    data_info,
    given,
    inputs,
    mechanism,
    option_flag,
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
from distprivacy.commands._files import check_apart, config_file, data_files, ledger_files
from distprivacy.commands._flags import to_flags
from distprivacy.commands._names import MECHANISM_NAMES
from distprivacy.commands._report import report_option, write_release
from distprivacy.commands._settings import Settings
from distprivacy.commands.config import config_option
from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:  # the library is imported when the command runs, not for its --help
    from distprivacy.ledger import Ledger
    from distprivacy.mechanisms import Calibration, Release
    from distprivacy.mechanisms.plans import Plan


def _print_release(console: Console, cal: Calibration, rel: Release, clip: Clip) -> None:
    """The released values (post-processed into their ranges unless --no-clip), the noise,
    the guarantee and its caveats."""
    table = Table(title=f"Release by {cal.mechanism} ({cal.theorem})")
    text_column(table, "statistic")
    table.add_column("released value", justify="right")
    table.add_column("noise std", justify="right")
    table.add_column("relative error", justify="right")
    noise_free = {e.statistic for e in rel.exact_statistics if e.noise_free}
    for k, (name, v, sd, re) in enumerate(
        zip(rel.statistic_names, clip.values, cal.noise_sd, cal.relative_error, strict=True)
    ):
        relative = "—" if not np.isfinite(re) else f"{re:.2%}"
        noise = "none" if name in noise_free else fmt(float(sd))
        table.add_row(name, f"{v:.4f}" + (" *" if k in clip.moved else ""), noise, relative)
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
    else:
        for e in rel.exact_statistics:  # the exactness gate's findings, each said once
            head = "note:" if e.justified else "[yellow]warning:[/]"
            console.print(f"{head} {escape(to_flags(e.describe()))}")
    if not rel.secure:
        console.print(
            "[yellow]warning:[/] --seed makes the noise reproducible; never publish a "
            "seeded release"
        )


def _plan_values(value_text: str, plan: Plan) -> np.ndarray:
    """The numbers of --value (their count is the plan's to check)."""
    names = plan.calibration.statistic_names
    return np.asarray(
        parse_floats(value_text, "--value", example=",".join(["1.5"] * len(names))), dtype=float
    )


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
    "refitted; the plan's digest, the target's columns and its size n are checked. With "
    "--ledger: the NAME of a plan the steward approved (`ledger approve`).",
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
    help="Release a registered dataset (--dataset NAME) with an approved plan (--plan NAME) of "
    "this ledger, recorded before it is shown; refused (exit 2, nothing recorded) when the "
    "cumulative guarantee of every release under the secret would exceed its budget, and "
    "always with --allow-exact (an exact release exceeds every budget).",
)
@click.option(
    "--dataset",
    "dataset_name",
    default=None,
    metavar="NAME",
    help="With --ledger: the registered dataset to release (`ledger register`).",
)
@click.option("--server", default=None, metavar="URL",
              help="Release through a service (`distprivacy serve`): --dataset NAME --plan NAME, "
                   "the token from $DISTPRIVACY_TOKEN or --token-file (0600).")  # fmt: skip
@click.option("--token-file", "token_file", default=None, type=click.Path(dir_okay=False))
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
    dataset_name: str | None,
    server: str | None,
    token_file: str | None,
    no_clip: bool,
    allow_exact: bool,
    report: str | None,
    **p: Any,
) -> None:
    """Release the statistics of a dataset with the chosen mechanism (or a saved plan), or,
    with --ledger, a registered dataset with an approved plan (both named)."""
    from distprivacy.datasets import load_table
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.workflow import release as release_workflow

    if server is not None:  # a service holds the ledger, the plan and the data (docs/serve.md)
        from distprivacy.commands.serve import release_through_server

        return release_through_server(server, dataset_name, plan_path, token_file, p["as_json"])
    if ledger_path is not None or dataset_name is not None:
        _release_registered(
            ctx, ledger_path, dataset_name, plan_path, target, value_text, allow_exact,
            no_clip, report, p,
        )  # fmt: skip
        return

    check_apart(
        [*data_files(ctx.params.get("data")), ("--model", ctx.params.get("model_file")),
         ("--target", target), ("--plan", plan_path), *config_file(ctx)],
        [("--report", report)],
    )  # fmt: skip
    s = Settings.from_click(ctx, p)
    target_df = None if target is None else load_table(target)
    kwargs: dict[str, Any]
    if plan_path is not None:
        fixed = [k for k in PLAN_FIXES if s.was_given(k)]
        fixed += ["mechanism_name"] if given(ctx, "mechanism_name") else []
        if fixed:
            flags = ", ".join(map(option_flag, fixed))
            raise DistPrivacyError(f"--plan fixes the model and the mechanism; drop {flags}")
        plan = Plan.load(plan_path)
        if (target_df is None) == (value_text is None):
            raise DistPrivacyError("--plan needs the dataset (--target DATA.csv) or --value a,b,…")
        warn_large_delta(plan.calibration.delta, plan.n)
        values = None if value_text is None else _plan_values(value_text, plan)
        kwargs = {"plan": plan, "values": values}
        info: dict[str, Any] = {
            "plan": str(plan_path),
            "plan_digest": plan.digest,
            "target": str(target) if target is not None else "values given with --value",
        }
    else:
        if value_text is not None:
            raise DistPrivacyError("--value needs --plan (without a plan, give --target)")
        mech = mechanism(mechanism_name, s)
        if s.model_file is not None:
            check_model_file(s)
            if target_df is not None:
                raise DistPrivacyError("--target needs the data options, not --model")
            raise DistPrivacyError(
                "with --model, save a plan (calibrate --model FILE --mechanism NAME --save "
                "PLAN.json) and release it with --plan PLAN.json --value a,b,…"
            )
        data, spec, query = inputs(s)
        if mech.uses_delta:
            warn_large_delta(s.delta, spec.n)
        kwargs = {"data": data, "spec": spec, "query": query, "mechanism": mech,
                  "engine": s.engine, "modeling": s.modeling, "n_samples": s.samples,
                  "model_seed": s.model_seed}  # fmt: skip
    bar = LazyProgress("releasing", enabled=s.show)
    if "data" in kwargs:
        kwargs["data"].progress = bar  # long scans and draws on the engine report here
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the caveats are printed from the calibration
            out = release_workflow(
                **kwargs, target=target_df, allow_exact=allow_exact,
                random_state=s.seed, progress=bar, on_step=bar.describe,
            )  # fmt: skip
    finally:
        bar.close()
    cal, rel, model = out.calibration, out.release, out.model
    if plan_path is None:
        info = {**data_info(s, data, spec, query, model), "target": out.target}
        if target is not None:
            info["target"] = str(target)
    plan_spec = plan.spec if plan_path is not None else None
    context = {**info, **(plan.modelling if plan_path is not None else s.to_dict())}
    clip = clip_release(rel.values, cal, enabled=not no_clip)
    if s.as_json:
        click.echo(dumps_json({**info, **_json_release(rel, clip)}))
        write_release(report, cal, rel, model, plan_spec, context, show=False)
        return
    console = Console()
    from distprivacy.wording import statement

    spec_shown = spec_of(cal.model_ or model, plan_spec)
    print_statement(
        console, statement(spec_shown, rel.statistic_names, cal.guarantee, released=True)
    )
    if plan_path is None:
        print_header(console, model, info, s)
    else:
        console.print(f"Plan {plan_path} ({info['plan_digest'][:19]}…), not refitted")
    console.print(f"Released dataset: {info['target']}")
    _print_release(console, cal, rel, clip)
    write_release(report, cal, rel, model, plan_spec, context, show=True)


def _release_registered(
    ctx: click.Context,
    ledger_path: str | None,
    dataset_name: str | None,
    plan_name: str | None,
    target: str | None,
    value_text: str | None,
    allow_exact: bool,
    no_clip: bool,
    report: str | None,
    p: dict[str, Any],
) -> None:
    """``release --ledger L --dataset NAME --plan NAME``: the library reads the registered
    file and the approved plan itself; the releaser hands in neither (issue 30)."""
    from distprivacy.ledger import BudgetExceededError
    from distprivacy.ledger._release import EXACT_REFUSED

    if ledger_path is None or dataset_name is None or plan_name is None:
        raise DistPrivacyError(
            "a ledger releases a registered dataset with an approved plan: give --ledger "
            "LEDGER --dataset NAME --plan NAME (the steward registers datasets with `ledger "
            "register` and approves plans with `ledger approve`)"
        )
    s = Settings.from_click(ctx, p)
    extra = [f for f, v in (("--target", target), ("--value", value_text)) if v is not None]
    extra += [option_flag(k) for k in (*PLAN_FIXES, "seed") if s.was_given(k)]
    extra += ["--mechanism"] if given(ctx, "mechanism_name") else []
    if extra:
        raise DistPrivacyError(
            f"with --ledger the registered dataset and the approved plan fix everything; drop "
            f"{', '.join(dict.fromkeys(extra))}"
        )
    if allow_exact:
        raise BudgetExceededError(EXACT_REFUSED)  # μ = ∞: over every budget
    check_apart([*ledger_files(ledger_path, "--ledger"), *config_file(ctx)], [("--report", report)])
    led = _open_ledger(ledger_path)
    assert led is not None
    ctx.call_on_close(led.close)
    check_apart(_registered_files(led, dataset_name), [("--report", report)])
    bar = LazyProgress("releasing", enabled=s.show)

    def on_wait(waited: float, limit: float) -> None:
        bar.describe("waiting for the ledger (another release holds it)")
        bar(int(waited), int(limit))

    led.on_wait = on_wait
    try:
        rec = led.release(plan_name, dataset_name)
    finally:
        bar.close()
    plan, rel, cal = rec.plan, rec.release, rec.plan.calibration
    secret = rec.secret
    at = secret.budget.report_delta
    c = rec.cumulative
    info: dict[str, Any] = {
        "plan": plan_name,
        "plan_digest": plan.digest,
        "dataset": f"{rec.dataset.name} (version {rec.dataset.version}: {rec.dataset.path})",
        "target": f"registered dataset {rec.dataset.name}",
        "ledger": {
            "ledger": ledger_path,
            "secret": secret.name,
            "budget": secret.budget.describe(),
            "release_id": rec.release_id,
            "releases_of_this_secret": rec.releases_of_dataset,
            "releases_of_this_dataset": rec.releases_of_dataset,
            "warnings": list(rec.warnings),
            "cumulative": {
                "mu": c.mu,
                "epsilon": c.epsilon_at(at),
                "delta": at,
                "max_attack_accuracy": c.max_attack_accuracy,
                "theorem": c.theorem,
            },
        },
    }
    clip = clip_release(rel.values, cal, enabled=not no_clip)
    context = {**info, **plan.modelling}
    if s.as_json:
        click.echo(dumps_json({**info, **_json_release(rel, clip)}))
        write_release(report, cal, rel, plan.model, plan.spec, context, show=False)
        return
    console = Console()
    from distprivacy.wording import statement

    spec_shown = spec_of(cal.model_ or plan.model, plan.spec)
    print_statement(
        console, statement(spec_shown, rel.statistic_names, cal.guarantee, released=True)
    )
    console.print(f"Approved plan {plan_name} ({info['plan_digest'][:19]}…), not refitted")
    console.print(f"Released dataset: {info['dataset']}")
    _print_release(console, cal, rel, clip)
    mu = "" if c.mu is None else f"μ = {c.mu:.4g}, "
    console.print(
        f"Recorded in ledger {ledger_path} as release {rec.release_id}; secret {secret.name} "
        f"(budget {secret.budget.describe()}) now has {rec.releases_of_dataset} release(s): "
        f"cumulative {mu}ε = {c.epsilon_at(at):.4g} at δ = {at:.3g}, no attacker above "
        f"{c.max_attack_accuracy:.1%} accuracy (exact joint accounting of every release under "
        "the secret)"
    )
    write_release(report, cal, rel, plan.model, plan.spec, context, show=True)


def _registered_files(led: Ledger, name: str) -> list[tuple[str, str | None]]:
    """The files a release of the registered dataset ``name`` reads besides the ledger: its
    newest version, and its secret's population (refitted on for a union of statistics); none
    when it is not registered (the release refuses that itself)."""
    reg = led.registry
    if name not in reg.datasets:
        return []
    d = reg.datasets[name][-1]
    secret = reg.secrets.get(d.secret)
    population = None if secret is None else secret.population.get("path")
    return [(f"the registered dataset {name}", d.path), ("the secret's population", population)]


def _json_release(rel: Any, clip: Clip) -> dict[str, Any]:
    """The release as ``--json`` prints it: the published (clipped) values, the raw ones, and
    which were clipped."""
    out = rel.to_dict()
    names = list(rel.statistic_names)
    if clip.values.size == len(names):
        out["statistics"] = dict(zip(names, clip.values.tolist(), strict=True))
        out["raw_statistics"] = dict(zip(names, np.ravel(rel.values).tolist(), strict=True))
    out["clipped_to_range"] = clip.enabled
    out["clipped"] = [names[k] for k in clip.moved]
    return out


def _open_ledger(path: str | None) -> Ledger | None:
    """The ledger at ``path`` (refused in one line when it is not one), or None."""
    if path is None:
        return None
    from distprivacy.ledger import Ledger

    return Ledger(path)
