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
    mechanism_specs,
    on_engine,
    option_flag,
    warn_large_delta,
)
from distprivacy.commands._display import (
    StatName,
    fmt,
    keep_names_whole,
    noise_summary,
    print_fitted,
    print_header,
    print_statement,
    range_text,
    spec_of,
    text_column,
)
from distprivacy.commands._files import check_apart, config_file, data_files, ledger_files
from distprivacy.commands._flags import to_flags
from distprivacy.commands._names import MECHANISM_NAMES
from distprivacy.commands._report import (
    release_report_option,
    review_report_option,
    write_release,
)
from distprivacy.commands._settings import Settings
from distprivacy.commands.config import config_option
from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:  # the library is imported when the command runs, not for its --help
    from distprivacy.ledger import Ledger
    from distprivacy.mechanisms import Calibration, Release
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.workflow import ReleaseOutcome


def _print_release(console: Console, cal: Calibration, rel: Release) -> None:
    """The published values (post-processed into their ranges unless --no-clip) with their
    intervals, the noise, the guarantee of the noise drawn (what was checked, what is
    assumed) and its caveats — every number the one the JSON and the report state
    (:attr:`Release.published <distprivacy.guarantee.Release.published>`)."""
    print_fitted(  # the noise SD and its relative error share a column when width is short
        console,
        [lambda: [keep_names_whole(_values_table(cal, rel, False))],
         lambda: [keep_names_whole(_values_table(cal, rel, True))]],
    )  # fmt: skip
    _print_clipping(console, rel)
    console.print(f"Noise: {noise_summary(cal)}; expected L2 error {fmt(cal.expected_l2_error)}")
    _print_guarantee(console, cal)
    _print_caveats(console, cal, rel)


def _values_table(cal: Calibration, rel: Release, merged: bool) -> Table:
    """The published values, their intervals, the noise and the relative error (with
    ``merged``, the last two in one column: ``1.893 (4.69%)``)."""
    pub = rel.published
    table = Table(title=f"Release by {cal.mechanism} ({cal.theorem})")
    text_column(table, "statistic")
    table.add_column("released value", justify="right")
    table.add_column(f"{pub.level:.0%} interval", justify="right")
    if merged:
        table.add_column("noise std (relative)", justify="right")
    else:
        table.add_column("noise std", justify="right")
        table.add_column("relative error", justify="right")
    noise_free = {e.statistic for e in rel.exact_statistics if e.noise_free}
    for k, (name, v, sd, re) in enumerate(
        zip(rel.statistic_names, pub.values, cal.noise_sd, cal.relative_error, strict=True)
    ):
        relative = "—" if not np.isfinite(re) else f"{re:.2%}"
        noise = "none" if name in noise_free else fmt(float(sd))
        lo, hi = pub.low[k], pub.high[k]
        interval = "—" if np.isnan([lo, hi]).any() else f"[{lo:.4f}, {hi:.4f}]"
        value = f"{v:.4f}" + (" *" if k in pub.clipped else "")
        cells = [f"{noise} ({relative})"] if merged else [noise, relative]
        table.add_row(StatName(name), value, interval, *cells)
    return table


def _print_clipping(console: Console, rel: Release) -> None:
    """Which values were clipped into their ranges, or lie outside them (--no-clip)."""
    pub = rel.published
    for k in pub.clipped:
        console.print(
            f"* {rel.statistic_names[k]}: the noisy value {pub.raw[k]:.4f} was clipped to "
            f"{range_text(pub.ranges[k])}, and its interval with it; post-processing keeps the "
            "guarantee (--no-clip keeps the raw value)",
            markup=False,
        )
    for k in pub.outside:
        console.print(
            f"[yellow]warning:[/] {rel.statistic_names[k]} = {pub.raw[k]:.4f} lies outside "
            f"its range {range_text(pub.ranges[k])} (kept raw: --no-clip)"
        )


def _print_guarantee(console: Console, cal: Calibration) -> None:
    """The guarantee of the noise drawn, the target it was calibrated for, and what was
    checked on the data and what is assumed."""
    from distprivacy.mechanisms._verification import checked_and_assumed

    g = cal.guarantee
    console.print(
        f"Guarantee of the noise drawn: no attacker above {g.max_attack_accuracy:.1%} accuracy "
        f"between the protected pairs; {g.figures()}",
        markup=False,
    )
    target = target_text(cal)
    if target:
        console.print(target, markup=False)
    found = checked_and_assumed(cal, released=True)
    console.print("Checked on the data:")
    for c in found.checked:
        console.print(f"  - {c}", markup=False)
    if found.assumed:
        console.print("Assumed:")
        for a in found.assumed:
            console.print(f"  - {escape(to_flags(a))}")


def _print_caveats(console: Console, cal: Calibration, rel: Release) -> None:
    """An exact release, the exactness gate's notes, the warnings and a seeded noise."""
    from distprivacy.exceptions import DemonstrationWarning, SeededNoiseWarning

    if not cal.adds_noise:
        console.print(
            "[yellow]warning:[/] no noise was added: these are the TRUE statistics "
            "(--allow-exact, Theorem 4.4)"
        )
    else:
        for e in rel.exact_statistics:  # the exactness gate's findings, each said once
            if e.justified:
                console.print(f"note: {escape(to_flags(e.describe()))}")
    shown = (SeededNoiseWarning, DemonstrationWarning)  # said in the CLI's own words
    for w in rel.warnings:
        if not issubclass(w.category, shown):
            console.print(f"[yellow]warning:[/] {escape(to_flags(str(w)))}")
    if not rel.secure:
        console.print(
            "[yellow]warning:[/] --seed makes the noise reproducible; never publish a "
            "seeded release"
        )


def target_text(cal: Calibration) -> str:
    """The calibration target, labelled as the target, when the guarantee of the noise drawn
    differs from it (empty otherwise)."""
    acct = cal.accounting
    if acct is None or cal.mu is None:
        return ""
    if abs(acct.target_mu - cal.mu) <= 1e-4 * acct.target_mu:
        return ""
    return (
        f"Calibration target: μ* = {acct.target_mu:.4g} (for ε = {acct.epsilon:.4g}, δ = "
        f"{acct.delta:.3g}); the guarantee above is the exact one of the noise drawn"
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
    default=None,
    help=f"One of: {', '.join(MECHANISM_NAMES)}. Default: the mechanism `calibrate` "
    "recommends (the best verified one available in this install).",
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
@release_report_option
@review_report_option
@click.pass_context
def release(
    ctx: click.Context,
    mechanism_name: str | None,
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
    review_report: str | None,
    **p: Any,
) -> None:
    """Release the statistics of a dataset with the chosen mechanism (or a saved plan), or,
    with --ledger, a registered dataset with an approved plan (both named)."""
    from distprivacy.datasets import load_table

    if server is not None:  # a service holds the ledger, the plan and the data (docs/serve.md)
        from distprivacy.commands.serve import release_through_server

        return release_through_server(server, dataset_name, plan_path, token_file, p["as_json"])
    if ledger_path is not None or dataset_name is not None:
        _release_registered(
            ctx, ledger_path, dataset_name, plan_path, target, value_text, allow_exact,
            no_clip, report, p, review_report,
        )  # fmt: skip
        return

    check_apart(
        [*data_files(ctx.params.get("data")), ("--model", ctx.params.get("model_file")),
         ("--target", target), ("--plan", plan_path), *config_file(ctx)],
        [("--report", report), ("--review-report", review_report)],
    )  # fmt: skip
    s = Settings.from_click(ctx, p)
    target_df = None if target is None else load_table(target)
    if plan_path is not None:
        plan, out, info = _with_plan(ctx, s, plan_path, target, target_df, value_text,
                                     allow_exact)  # fmt: skip
    else:
        plan, out, info = _fresh(s, mechanism_name, target, target_df, value_text, allow_exact)
    cal, rel, model = out.calibration, out.release, out.model
    plan_spec = plan.spec if plan_path is not None else None
    context = {**info, **(plan.modelling if plan_path is not None else s.to_dict())}
    rel = rel.unclipped() if no_clip else rel
    if s.as_json:
        click.echo(dumps_json({**info, **_json_release(rel)}))
        write_release(report, cal, rel, model, plan_spec, context, show=False,
                      review=review_report)  # fmt: skip
        return
    console = Console()
    from distprivacy.wording import statement

    spec_shown = spec_of(cal.model_ or model, plan_spec)
    demo = plan_path is None and target is None
    print_statement(
        console,
        statement(
            spec_shown, rel.statistic_names, cal.guarantee, released=True, demonstration=demo
        ),
    )
    if plan_path is None:
        print_header(console, model, info, s)
    else:
        console.print(f"Plan {plan_path} ({info['plan_digest'][:19]}…), not refitted")
    console.print(f"Released dataset: {info['target']}")
    _print_release(console, cal, rel)
    write_release(report, cal, rel, model, plan_spec, context, show=True,
                  review=review_report)  # fmt: skip


def _with_plan(
    ctx: click.Context,
    s: Settings,
    plan_path: str,
    target: str | None,
    target_df: Any,
    value_text: str | None,
    allow_exact: bool,
) -> tuple[Plan, ReleaseOutcome, dict[str, Any]]:
    """``release --plan PLAN``: nothing is refitted."""
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.workflow import release as release_plan

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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the caveats are printed from the calibration
        out = release_plan(plan, target=target_df, values=values, allow_exact=allow_exact,
                           random_state=s.seed)  # fmt: skip
    info: dict[str, Any] = {
        "plan": str(plan_path),
        "plan_digest": plan.digest,
        "target": str(target) if target is not None else "values given with --value",
    }
    return plan, out, info


def _fresh(
    s: Settings,
    mechanism_name: str | None,
    target: str | None,
    target_df: Any,
    value_text: str | None,
    allow_exact: bool,
) -> tuple[Plan, ReleaseOutcome, dict[str, Any]]:
    """``release`` without a plan: the flags planned (:func:`distprivacy.workflow.plan`) and
    the plan released at once (the records of ``--target``, or a demonstration dataset drawn
    from the data)."""
    from distprivacy.commands._recommend import recommended_plan
    from distprivacy.workflow import plan as make_plan
    from distprivacy.workflow import plan_all
    from distprivacy.workflow import release as release_plan

    if value_text is not None:
        raise DistPrivacyError("--value needs --plan (without a plan, give --target)")
    # No --mechanism: every mechanism is planned and calibrate's recommendation released.
    requests = mechanism_specs(() if mechanism_name is None else (mechanism_name,), s)
    if s.model_file is not None:
        check_model_file(s)
        if target_df is not None:
            raise DistPrivacyError("--target needs the data options, not --model")
        raise DistPrivacyError(
            "with --model, save a plan (calibrate --model FILE --mechanism NAME --save "
            "PLAN.json) and release it with --plan PLAN.json --value a,b,…"
        )
    from distprivacy.mechanisms import MECHANISMS

    source, spec, query = inputs(s)
    if any(MECHANISMS[r.name].uses_delta for r in requests):
        warn_large_delta(s.delta, spec.n)
    if target_df is not None and len(target_df) != spec.n:
        raise DistPrivacyError(
            f"the target has {len(target_df)} records but `n` is {spec.n}; they must agree"
        )
    bar = LazyProgress("releasing", enabled=s.show)
    engine: list[Any] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the caveats are printed from the calibration
            found = on_engine(s, source, bar, engine)
            if mechanism_name is not None:
                plan = make_plan(source, spec, query, requests[0], s.modelling(),
                                 on_engine=found, progress=bar, on_step=bar.describe,
                                 fingerprint=False)  # fmt: skip
            else:
                plan = recommended_plan(
                    plan_all(source, spec, query, requests, s.modelling(), on_engine=found,
                             progress=bar, on_step=bar.describe, fingerprint=False),
                    s.utility,
                )  # fmt: skip
            out = release_plan(plan, target=target_df, allow_exact=allow_exact,
                               population=engine[0] if target_df is None else None,
                               random_state=s.seed)  # fmt: skip
    finally:
        bar.close()
    info = {**data_info(s, engine[0], spec, query, out.model), "target": out.target}
    if target is not None:
        info["target"] = str(target)
    return plan, out, info


def _refuse_with_ledger(
    ctx: click.Context,
    s: Settings,
    target: str | None,
    value_text: str | None,
    allow_exact: bool,
    no_clip: bool,
) -> None:
    """What a ledger's release refuses before opening it: any option the registered dataset
    and the approved plan fix, an exact release (over every budget) and --no-clip."""
    from distprivacy.ledger import BudgetExceededError
    from distprivacy.ledger._release import EXACT_REFUSED

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
    if no_clip:
        raise DistPrivacyError(
            "with --ledger the published values are the ones the ledger records, clipped into "
            "their ranges; drop --no-clip (it is for releases outside a ledger)"
        )


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
    review_report: str | None = None,
) -> None:
    """``release --ledger L --dataset NAME --plan NAME``: the library reads the registered
    file and the approved plan itself; the releaser hands in neither (issue 30)."""
    if ledger_path is None or dataset_name is None or plan_name is None:
        raise DistPrivacyError(
            "a ledger releases a registered dataset with an approved plan: give --ledger "
            "LEDGER --dataset NAME --plan NAME (the steward registers datasets with `ledger "
            "register` and approves plans with `ledger approve`)"
        )
    s = Settings.from_click(ctx, p)
    _refuse_with_ledger(ctx, s, target, value_text, allow_exact, no_clip)
    outputs = [("--report", report), ("--review-report", review_report)]
    check_apart([*ledger_files(ledger_path, "--ledger"), *config_file(ctx)], outputs)
    led = _open_ledger(ledger_path)
    assert led is not None
    ctx.call_on_close(led.close)
    check_apart(_registered_files(led, dataset_name), outputs)
    bar = LazyProgress("releasing", enabled=s.show)

    def on_wait(waited: float, limit: float) -> None:
        bar.describe("waiting for the ledger (another release holds it)")
        bar(int(waited), int(limit))

    led.on_wait = on_wait
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the caveats are printed from the calibration
            rec = led.release(plan_name, dataset_name)
    finally:
        bar.close()
    plan, rel, cal = rec.plan, rec.release, rec.plan.calibration
    secret = rec.secret
    at = rec.at_delta
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
                "gdp": c.is_gdp,  # μ is a GDP parameter only when the history is μ-GDP
                "epsilon": c.epsilon_at(at),
                "delta": at,
                "max_attack_accuracy": c.max_attack_accuracy,
                "theorem": c.theorem,
            },
        },
    }
    context = {**info, **plan.modelling}
    if s.as_json:
        click.echo(dumps_json({**info, **_json_release(rel)}))
        write_release(report, cal, rel, plan.model, plan.spec, context, show=False,
                      review=review_report)  # fmt: skip
        return
    console = Console()
    from distprivacy.wording import statement

    spec_shown = spec_of(cal.model_ or plan.model, plan.spec)
    print_statement(
        console, statement(spec_shown, rel.statistic_names, cal.guarantee, released=True)
    )
    console.print(f"Approved plan {plan_name} ({info['plan_digest'][:19]}…), not refitted")
    console.print(f"Released dataset: {info['dataset']}")
    _print_release(console, cal, rel)
    mu = "" if not c.is_gdp else f"μ = {c.mu:.4g}-GDP, "
    console.print(
        f"Recorded in ledger {ledger_path} as release {rec.release_id}; secret {secret.name} "
        f"(budget {secret.budget.describe()}) now has {rec.releases_of_dataset} release(s): "
        f"cumulative {mu}ε = {c.epsilon_at(at):.4g} at δ = {at:.3g}, no attacker above "
        f"{c.max_attack_accuracy:.1%} accuracy (exact joint accounting of every release under "
        "the secret)"
    )
    write_release(report, cal, rel, plan.model, plan.spec, context, show=True,
                  review=review_report)  # fmt: skip


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


def _json_release(rel: Any) -> dict[str, Any]:
    """The release as ``--json`` prints it: the published values (clipped unless --no-clip)
    with their intervals, the raw ones, and which were clipped (:meth:`Release.to_dict`)."""
    return rel.to_dict()


def _open_ledger(path: str | None) -> Ledger | None:
    """The ledger at ``path`` (refused in one line when it is not one), or None."""
    if path is None:
        return None
    from distprivacy.ledger import Ledger

    return Ledger(path)
