"""Command-line interface: parses, calls the library, prints. No mathematics here.

Errors in the input are printed as one line (``error: ...``) on stderr with exit status 2.
"""

from __future__ import annotations

import sys
import time
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from distprivacy import __version__
from distprivacy.accounting import check_delta, check_epsilon, check_number, check_rule
from distprivacy.audit import ATTACKS as AUDIT_ATTACKS
from distprivacy.audit import DEFAULT_ATTACKS
from distprivacy.commands import (
    FLOAT,
    INTEGER,
    POSITIVE,
    PROBABILITY_OPEN,
    SEED,
    Number,
    adult_data_option,
    allow_exact_option,
    dumps_json,
    parse_float,
)
from distprivacy.datasets import load_table
from distprivacy.engines import ENGINES, load_source, resolve_engine
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import MECHANISMS, Calibration, calibrate_all, make_mechanism
from distprivacy.models import FModel, fit_model, load_model_file
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.randomness import check_random_state
from distprivacy.spec import ProtectionSpec

DEFAULT_PROPERTY = "income==>50K"
DEFAULT_VALUES = "0.45,0.55"

err_console = Console(stderr=True)


class _LazyProgress:
    """A rich progress bar on stderr that appears only once work has taken over a second."""

    def __init__(self, description: str, enabled: bool) -> None:
        self.description = description
        # Only on a terminal: elsewhere rich leaves blank lines on stderr (before an error line).
        self.enabled = enabled and err_console.is_terminal
        self.start = time.monotonic()
        self.progress: Progress | None = None
        self.task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.progress is None and time.monotonic() - self.start > 1.0:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TimeElapsedColumn(),
                console=err_console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task(self.description, total=total)
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _floats(text: str, what: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise DistPrivacyError(
            f"cannot read {what} {text!r}; give comma-separated numbers, e.g. 0.45,0.55"
        ) from None
    return [check_number(v, what) for v in vals]


def _pairs(text: str) -> list[tuple[float, float]]:
    out = []
    for part in text.split(","):
        if not part.strip():
            continue
        a, sep, b = part.partition(":")
        try:
            if not sep:
                raise ValueError
            pair = (parse_float(a, "--pairs"), parse_float(b, "--pairs"))
        except (ValueError, DistPrivacyError):
            raise DistPrivacyError(
                f"cannot read pair {part!r}; write P1:P2 pairs, e.g. 0.45:0.55,0.5:0.6"
            ) from None
        out.append(tuple(check_number(v, "--pairs") for v in pair))
    return out


def _common_options(f: Callable) -> Callable:
    options = [
        click.option(
            "--data",
            type=click.Path(),
            default=None,
            help="CSV/Parquet file or a directory with adult.data/adult.test "
            "(default: the Adult data, fetched and cached on first use).",
        ),
        click.option(
            "--protect",
            default=DEFAULT_PROPERTY,
            show_default=True,
            help="The sensitive record property, COLUMN OP VALUE.",
        ),
        click.option(
            "--values",
            "values_",
            default=DEFAULT_VALUES,
            show_default=True,
            help="Candidate proportions p of records with the property.",
        ),
        click.option(
            "--pairs",
            default=None,
            help="Explicit protected pairs P1:P2,... (default: all pairs of values).",
        ),
        click.option(
            "--pairs-within",
            type=POSITIVE,
            default=None,
            help="Protect every pair of values at most this far apart (Example 2.1).",
        ),
        click.option(
            "--subset-size",
            type=INTEGER,
            default=100,
            show_default=True,
            help="Size n of the released dataset.",
        ),
        click.option(
            "--statistics",
            default=ADULT_DEFAULT_STATISTICS,
            show_default=True,
            help="Comma-separated statistics: mean:COL, sum:COL, count:PRED, proportion:PRED.",
        ),
        click.option(
            "--model",
            "model_file",
            type=click.Path(),
            default=None,
            help="A user-supplied model of f_θ (JSON/TOML); replaces the data options.",
        ),
        click.option(
            "--engine",
            type=click.Choice(list(ENGINES), case_sensitive=False),
            default="auto",
            show_default=True,
            help="Where the model's aggregates are computed: 'auto' = DuckDB for a CSV/Parquet "
            "file, pandas for the Adult data; 'duckdb' scans files larger than memory; 'spark' "
            "reads any Spark-readable path or table (needs Java and the [spark] extra).",
        ),
        click.option(
            "--spark-master",
            default=None,
            help="Spark master URL for --engine spark (default local[*]).",
        ),
        click.option(
            "--modeling",
            type=click.Choice(["auto", "exact", "monte-carlo"]),
            default="auto",
            show_default=True,
            help="How f_θ is modelled from the data.",
        ),
        click.option(
            "--samples",
            type=Number(integer=True, low=2),
            default=1000,
            show_default=True,
            help="Monte-Carlo subsets per θ.",
        ),
        click.option("--epsilon", type=POSITIVE, default=1.0, show_default=True),
        click.option("--delta", type=FLOAT, default=1e-3, show_default=True),
        click.option(
            "--calibration",
            default="exact",
            show_default=True,
            help="Gaussian calibration rule: 'exact' (μ-GDP accounting) or the paper's "
            "'classic' c = √(2 ln(1.25/δ)).",
        ),
        click.option(
            "--covariances",
            type=click.Choice(["fitted", "pooled"], case_sensitive=False),
            default="fitted",
            show_default=True,
            help="Exact rule: 'fitted' makes the target hold for the fitted Gaussians with their "
            "unequal covariances too; 'pooled' is the paper's assumption (one covariance per "
            "pair), the unequal-covariance figure only reported.",
        ),
        click.option(
            "--utility",
            type=click.Choice(["scaled", "l2"], case_sensitive=False),
            default="scaled",
            show_default=True,
            help="How noise is costed where a mechanism chooses (OptM-G's objective, the "
            "unequal-covariance fix) and which mechanism is named best: 'scaled' Σ Var(Z_k)/s_k² "
            "(each statistic's noise relative to its own sampling SD s_k; unit-free), 'l2' the "
            "paper's raw E‖Z‖₂ (mixed units).",
        ),
        click.option(
            "--target-mu",
            type=FLOAT,
            default=None,
            help="Calibrate the Gaussian mechanisms to this μ-GDP parameter instead of ε.",
        ),
        click.option(
            "--max-attack-accuracy",
            type=FLOAT,
            default=None,
            help="Calibrate the Gaussian mechanisms so that no attacker between two equally "
            "likely θ exceeds this accuracy (e.g. 0.55).",
        ),
        click.option(
            "--seed",
            type=SEED,
            default=None,
            help="Seed for the noise and the modelling (experiments only: seeded noise is not "
            "secure). Without it the noise is cryptographically secure and the Monte-Carlo "
            "modelling uses seed 0.",
        ),
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def _build(ctx: click.Context, p: dict[str, Any]) -> tuple[FModel, dict[str, Any], Any]:
    """Validate the options, load the data and fit the model."""
    check_epsilon(p["epsilon"])
    check_rule(p["calibration"])
    if p["model_file"] is not None:
        explicit = [
            k
            for k in (
                "data",
                "protect",
                "values_",
                "pairs",
                "pairs_within",
                "subset_size",
                "statistics",
                "modeling",
                "samples",
                "engine",
                "spark_master",
            )
            if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE
        ]
        if explicit:
            flags = ", ".join("--" + e.rstrip("_").replace("_", "-") for e in explicit)
            raise DistPrivacyError(f"--model replaces the data options; drop {flags}")
        model = load_model_file(p["model_file"])
        return model, {"model_file": str(p["model_file"])}, None
    spec = ProtectionSpec(
        p["protect"],
        p["subset_size"],
        _floats(p["values_"], "--values"),
        pairs=_pairs(p["pairs"]) if p["pairs"] else None,
        pairs_within=p["pairs_within"],
    )
    query = Query.parse(p["statistics"])
    data = resolve_engine(
        p["engine"].lower(), load_source(p["data"]), spark_master=p["spark_master"]
    )
    data.validate(query, spec)
    bar = _LazyProgress("modelling f_θ", enabled=not p["as_json"])
    try:
        model = fit_model(
            data,
            spec,
            query,
            engine=data,
            method=p["modeling"],
            n_samples=p["samples"],
            random_state=0 if p["seed"] is None else p["seed"],
            progress=bar,
        )
    finally:
        bar.close()
    info = {
        "data": p["data"] or "adult",
        "engine": data.name,
        "spec": spec.to_dict(),
        "statistics": list(query.names),
        "modeling": model.method_,
    }
    return model, info, (data, spec, query)


def _targets(ctx: click.Context, p: dict[str, Any]) -> dict[str, float | None]:
    """The Gaussian targets given (μ or maximum accuracy), validated against --epsilon."""
    t = {"mu": p["target_mu"], "max_accuracy": p["max_attack_accuracy"]}
    if t["mu"] is not None and t["max_accuracy"] is not None:
        raise DistPrivacyError("give --target-mu or --max-attack-accuracy, not both")
    if any(v is not None for v in t.values()):
        if ctx.get_parameter_source("epsilon") == click.core.ParameterSource.COMMANDLINE:
            raise DistPrivacyError(
                "give --epsilon or a target (--target-mu / --max-attack-accuracy), not both"
            )
        if p["calibration"] != "exact":
            raise DistPrivacyError("targets given as μ or accuracy need --calibration exact")
        # The values themselves, before any data is read (a Gaussian mechanism validates them).
        make_mechanism("ExpM-G", None, 0.5, "exact", **t)
    return t


def _mechanism_names(ctx: click.Context, mechanisms: tuple[str, ...], p: dict[str, Any]):
    """The mechanisms asked for (default: all), with δ and the targets validated for them."""
    names = [make_mechanism(m, 1.0, 0.5).name for m in mechanisms] or list(MECHANISMS)
    # δ ∈ (0, 1) for (ε, δ) mechanisms; pure-ε ones ignore it but it must still lie in [0, 1).
    check_delta(p["delta"], allow_zero=not any(MECHANISMS[n].uses_delta for n in names))
    _targets(ctx, p)
    return names


def _settings(p: dict[str, Any]) -> dict[str, Any]:
    """The calibration settings, for --json output."""
    return {
        "epsilon": p["epsilon"],
        "delta": p["delta"],
        "calibration": p["calibration"],
        "covariances": p["covariances"].lower(),
        "utility": p["utility"].lower(),
        "target_mu": p["target_mu"],
        "max_attack_accuracy": p["max_attack_accuracy"],
    }


def _mechanism(name: str, p: dict[str, Any]):
    t = {"mu": p["target_mu"], "max_accuracy": p["max_attack_accuracy"]}
    eps = None if any(v is not None for v in t.values()) else p["epsilon"]
    return make_mechanism(
        name,
        eps,
        p["delta"],
        p["calibration"],
        covariances=p["covariances"].lower(),
        utility=p["utility"].lower(),
        **t,
    )


def _calibrate_many(
    model: FModel, names: list[str], p: dict[str, Any], show: bool
) -> tuple[list[Calibration], dict[str, str]]:
    """Every mechanism asked for; one that fails (hypotheses, or overflow at these parameters)
    is listed as not applicable with the reason (:func:`calibrate_all`)."""
    t = {"mu": p["target_mu"], "max_accuracy": p["max_attack_accuracy"]}
    eps = None if any(v is not None for v in t.values()) else p["epsilon"]
    bar = _LazyProgress("calibrating", enabled=show)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the caveats are printed from the calibrations
            return calibrate_all(
                model,
                eps,
                p["delta"],
                p["calibration"],
                names,
                progress=bar,
                covariances=p["covariances"].lower(),
                utility=p["utility"].lower(),
                **t,
            )
    finally:
        bar.close()


def _best(cals: list[Calibration], utility: str) -> dict[str, Any] | None:
    """The mechanism of least noise cost under ``utility`` among those whose verified δ meets
    their target (all of them, if none does)."""
    if not cals:
        return None
    ok = [c for c in cals if c.verified]
    among = "verified" if ok else "all (none verified)"
    best = min(ok or cals, key=lambda c: c.utility_cost(utility))
    objective = "least E‖Z‖₂" if utility == "l2" else "least Σ_k Var(Z_k)/s_k², s_k the sampling SD"
    return {
        "mechanism": best.mechanism,
        "utility": utility,
        "objective": objective,
        "cost": best.utility_cost(utility),
        "among": among,
    }


def _per_statistic_table(cals: list[Calibration]) -> Table:
    """Noise SD per statistic and mechanism, with the relative error (SD / |typical value|)."""
    table = Table(title="Noise per statistic: SD (relative error = SD / |typical value|)")
    table.add_column("statistic")
    for c in cals:
        table.add_column(c.mechanism, justify="right")
    for k, name in enumerate(cals[0].statistic_names):
        cells = []
        for c in cals:
            sd, rel = float(c.noise_sd[k]), float(c.relative_error[k])
            r = "—" if not np.isfinite(rel) else (f"{rel:.1%}" if rel < 10 else f"{rel:.3g}×")
            cells.append(f"{_fmt(sd)} ({r})")
        table.add_row(name, *cells)
    return table


def _short_theorem(text: str) -> str:
    """'Chen & Ohrimenko 2023, Theorem 4.5 (…)' → 'Thm 4.5'; other sources kept short."""
    head = text.split(" (")[0]
    head = head.replace("Chen & Ohrimenko 2023, ", "").replace("Theorem", "Thm")
    return head.replace("Algorithm", "Alg").replace("Corollary", "Cor")


def _fmt(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


def _noise_summary(c: Calibration) -> str:
    n = c.noise
    if n.family == "none" or n.scales.size == 0:
        return "none"
    what = "σ" if n.family == "gaussian" else "b"
    d = n.scales.size
    square = n.basis.shape == (n.dim, n.dim)
    dirs = "all coords" if square and np.allclose(n.basis, np.eye(n.dim)) else f"{d} dir."
    if np.allclose(n.scales, n.scales[0]):
        return f"{n.family} {what}={_fmt(n.scales[0])} on {dirs}"
    return f"{n.family} {what}∈[{_fmt(n.scales.min())}, {_fmt(n.scales.max())}] on {dirs}"


def _print_header(console: Console, model: FModel, info: dict[str, Any], p: dict[str, Any]) -> None:
    if "spec" in info:
        s = info["spec"]
        console.print(
            f"[bold]Protecting[/] {s['property']} at p ∈ {s['values']} (counts {s['counts']} of "
            f"n={s['n']}); {len(s['pairs'])} ordered pair(s) in Ψ; data: {info['data']}; "
            f"model: {info['modeling']}"
        )
    else:
        console.print(f"[bold]Model file[/] {info['model_file']}")
    console.print(f"Statistics: {', '.join(model.statistic_names_)}")
    if p["target_mu"] is not None:
        goal = f"target μ = {p['target_mu']:g} (δ = {p['delta']:g} for the reported ε)"
    elif p["max_attack_accuracy"] is not None:
        goal = (
            f"target: no attacker above {p['max_attack_accuracy']:g} accuracy "
            f"(δ = {p['delta']:g} for the reported ε)"
        )
    else:
        goal = f"ε = {p['epsilon']:g}, δ = {p['delta']:g}"
    cov = "" if p["calibration"] == "classic" else f", covariances: {p['covariances'].lower()}"
    console.print(f"{goal}, calibration rule: {p['calibration']}{cov}")


def _model_dict(model: FModel) -> dict[str, Any]:
    return {
        "method": model.method_,
        "thetas": [model.theta_label(t) for t in range(len(model.thetas_))],
        "means": model.means_.tolist(),
        "covariances": model.covariances_.tolist(),
        "pairs": [[model.theta_label(i), model.theta_label(j)] for i, j in model.pair_indices_],
    }


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="distprivacy")
def cli() -> None:
    """Release dataset statistics with (ε, δ)-distribution privacy for a global property."""


@cli.command()
@_common_options
@click.option(
    "--mechanism",
    "mechanisms",
    multiple=True,
    help="Only these mechanisms (repeatable; default: all).",
)
@click.pass_context
def calibrate(ctx: click.Context, mechanisms: tuple[str, ...], **p: Any) -> None:
    """Show every applicable mechanism's noise and expected L2 error side by side."""
    names = _mechanism_names(ctx, mechanisms, p)
    model, info, _ = _build(ctx, p)
    cals, skipped = _calibrate_many(model, names, p, show=not p["as_json"])
    if p["as_json"]:
        click.echo(
            dumps_json(
                {
                    **info,
                    **_settings(p),
                    "model": _model_dict(model),
                    "mechanisms": [c.to_dict() for c in cals],
                    "best": _best(cals, p["utility"].lower()),
                    "not_applicable": skipped,
                }
            )
        )
        return
    console = Console()
    _print_header(console, model, info, p)
    table = Table(title="Calibrations (expected L2 error = E‖Z‖₂, exact)")
    numeric = ("E‖Z‖₂", "ε", "δ", "μ", "δ achieved", "max acc.")
    for col in ("mechanism", "noise", *numeric, "proof"):
        table.add_column(
            col,
            justify="right" if col in numeric else "left",
            no_wrap=col in ("mechanism", "E‖Z‖₂"),
        )
    for c in cals:
        table.add_row(
            c.mechanism,
            _noise_summary(c),
            _fmt(c.expected_l2_error),
            f"{c.epsilon:.4g}",
            f"{c.delta:g}",
            "—" if c.mu is None else f"{c.mu:.4g}",
            f"{c.delta_achieved:.3g}",
            f"{c.max_attack_accuracy:.4f}",
            _short_theorem(c.theorem),
        )
    console.print(table)
    console.print(
        "μ: the μ-GDP parameter; δ achieved: exact δ at ε (worse of the shared-covariance and "
        "the fitted unequal-covariance Gaussians); max acc.: the best any attacker can do "
        "between two equally likely θ."
    )
    if cals:
        console.print(_per_statistic_table(cals))
        best = _best(cals, p["utility"].lower())
        if best is not None:
            console.print(
                f"Best utility among the {best['among']} calibrations ({best['objective']}): "
                f"[bold]{best['mechanism']}[/]"
            )
        unverified = sorted({c.basis for c in cals if not c.verified})
        if unverified:
            console.print("Guarantees resting on an assumption (not verified):")
            for b in unverified:
                who = ", ".join(c.mechanism for c in cals if c.basis == b and not c.verified)
                console.print(f"  {who}: {b}")
    notes = [(c.mechanism, w) for c in cals for w in c.warnings]
    if notes:
        console.print("[bold yellow]Warnings[/]")
        seen = set()
        for name, w in notes:
            key = w if "ε" in w and "classic" in w else (name, w)
            if key in seen:
                continue
            seen.add(key)
            who = "Gaussian mechanisms" if isinstance(key, str) else name
            console.print(f"  {who}: {w}")
    if skipped:
        console.print("[bold]Not applicable[/]")
        for reason in skipped.values():
            console.print(f"  {reason}")


@cli.command()
@_common_options
@click.option(
    "--mechanism",
    "mechanism",
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
    ctx: click.Context, mechanism: str, target: str | None, allow_exact: bool, **p: Any
) -> None:
    """Release the statistics of a dataset with the chosen mechanism."""
    _targets(ctx, p)
    mech = _mechanism(mechanism, p)
    model, info, built = _build(ctx, p)
    if target is not None:
        if built is None:
            raise DistPrivacyError("--target needs the data options, not --model")
        data, spec, query = built
        target_df = load_table(target)
        if len(target_df) != spec.n:
            raise DistPrivacyError(
                f"the target has {len(target_df)} records but --subset-size is {spec.n}; "
                "they must agree"
            )
        query.validate(target_df)
        value = query.evaluate(target_df)
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
    bar = _LazyProgress(f"calibrating {mech.name} (pairs)", enabled=not p["as_json"])
    if hasattr(mech, "progress"):  # the Wasserstein mechanisms report each pair
        mech.progress = bar
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = mech.calibrate(model)
    rel = cal.release(value, rng=p["seed"], allow_exact=allow_exact)
    if p["as_json"]:
        click.echo(dumps_json({**info, **rel.to_dict()}))
        return
    console = Console()
    _print_header(console, model, info, p)
    console.print(f"Released dataset: {info['target']}")
    table = Table(title=f"Release by {cal.mechanism} ({cal.theorem})")
    table.add_column("statistic")
    table.add_column("released value", justify="right")
    table.add_column("noise std", justify="right")
    table.add_column("relative error", justify="right")
    for name, v, sd, re in zip(
        rel.statistic_names, rel.values, cal.noise_sd, cal.relative_error, strict=True
    ):
        table.add_row(
            name, f"{v:.4f}", _fmt(float(sd)), "—" if not np.isfinite(re) else f"{re:.2%}"
        )
    console.print(table)
    console.print(f"Noise: {_noise_summary(cal)}; expected L2 error {_fmt(cal.expected_l2_error)}")
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


@cli.command()
@_common_options
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
@click.pass_context
def audit(
    ctx: click.Context,
    mechanisms: tuple[str, ...],
    attacks: tuple[str, ...],
    audit_samples: int,
    alpha: float,
    **p: Any,
) -> None:
    """Attack each mechanism on real samples of F and bound its ε from below.

    Exit status 1 when some mechanism's claimed ε is refuted (its lower bound is larger)."""
    from distprivacy.audit import audit_model

    names = _mechanism_names(ctx, mechanisms, p)
    model, info, built = _build(ctx, p)
    if built is None:
        raise DistPrivacyError(
            "the audit needs real samples of F: give the data options (--data …) instead of --model"
        )
    data, spec, query = built
    seed = 0 if p["seed"] is None else p["seed"]
    cals, skipped = _calibrate_many(model, names, p, show=not p["as_json"])
    results = []
    bar = _LazyProgress("auditing", enabled=not p["as_json"])
    for k, cal in enumerate(cals):
        results.append(
            audit_model(
                cal,
                model,
                data,
                spec,
                query,
                samples_per_value=audit_samples,
                attacks=[a.lower() for a in attacks] or DEFAULT_ATTACKS,
                alpha=alpha,
                # Per mechanism: its audit does not depend on which others are listed.
                rng=np.random.default_rng([seed, zlib.crc32(cal.mechanism.encode())]),
            )
        )
        bar(k + 1, len(cals))
    bar.close()
    refuted = [r.mechanism for r in results if r.refuted]
    if p["as_json"]:
        click.echo(
            dumps_json(
                {
                    **info,
                    **_settings(p),
                    "seed": seed,
                    "audit_samples": audit_samples,
                    "audits": [r.to_dict() for r in results],
                    "refuted": refuted,
                    "not_applicable": skipped,
                }
            )
        )
    else:
        console = Console()
        _print_header(console, model, info, p)
        console.print(
            f"Audit: {audit_samples} real datasets per value of the hardest pair, seed {seed}, "
            f"α = {alpha:g}"
        )
        table = Table(title="Empirical lower bounds on ε (strongest attack)")
        numeric = ("claimed ε", "δ", "ε lower bound", "best acc. [CI]", "acc. bound")
        for col in ("mechanism", *numeric, "strongest attack", "verdict"):
            table.add_column(col, justify="right" if col in numeric else "left")
        for r in results:
            best = max(r.attacks, key=lambda a: a.epsilon_lower_bound)
            top = max(r.attacks, key=lambda a: a.accuracy)
            lb = r.epsilon_lower_bound
            verdict = "[red]REFUTED[/]" if r.refuted else "consistent"
            if r.accuracy_exceeded:
                verdict += " [red](accuracy above bound)[/]"
            table.add_row(
                r.mechanism,
                f"{r.claimed_epsilon:.4g}",
                f"{r.delta:g}",
                f"{lb:.3f}" if lb > 0 else "none (≤ 0)",
                f"{top.accuracy:.3f} [{top.accuracy_interval[0]:.3f}, "
                f"{top.accuracy_interval[1]:.3f}]",
                f"{r.accuracy_bound:.3f}",
                best.attack,
                verdict,
            )
        console.print(table)
        console.print(
            "ε lower bound: holds with probability ≥ 1 − α; a bound above the claimed ε refutes "
            "the claim (the model behind it fails on the real data)."
        )
        if skipped:
            console.print("[bold]Not applicable[/]")
            for reason in skipped.values():
                console.print(f"  {reason}")
    if refuted:
        raise click.exceptions.Exit(1)


@cli.command()
@click.argument("targets", nargs=-1, required=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(),
    required=True,
    help="Directory for the CSVs, PNGs and report.md.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(),
    default=None,
    help="Where to write the report (default: OUT/report.md).",
)
@click.option("--quick", is_flag=True, help="Small repetition counts and grids (seconds).")
@click.option("--seed", type=SEED, default=0, show_default=True)
@adult_data_option
def reproduce(
    targets: tuple[str, ...],
    out_dir: str,
    report_path: str | None,
    quick: bool,
    seed: int,
    data: str | None,
) -> None:
    """Reproduce the papers: TARGETS among table2, table3, figure2, figure3, figure4, figure5,
    accounting, audit (the main paper's §5, or ``paper`` for all of them), attribute-privacy,
    local-distp, model-inference, or all. The other papers' targets write into OUT/TARGET/."""
    from distprivacy.experiments.paper import Config
    from distprivacy.experiments.reproduce import (
        EXTRA_TARGETS,
        check_outputs,
        resolve_targets,
        run_extra,
    )
    from distprivacy.experiments.reproduce import reproduce as run

    names = resolve_targets(targets)
    check_outputs(out_dir, report_path, names)  # before any computation
    paper_names = [n for n in names if n not in EXTRA_TARGETS]
    extra_names = [n for n in names if n in EXTRA_TARGETS]
    console = Console()
    if paper_names:
        from distprivacy.datasets import load_adult

        frame = load_adult(data)
        cfg = Config.quick(seed) if quick else Config(seed=seed)
        command = " ".join(
            ["distprivacy reproduce", *targets, "--out", out_dir]
            + (["--report", report_path] if report_path else [])
            + (["--quick"] if quick else [])
            + ([f"--seed {seed}"] if seed else [])
        )
        with err_console.status("reproducing") as status:
            result = run(
                frame,
                paper_names,
                out_dir,
                cfg,
                report_path,
                command=command,
                progress=lambda msg: status.update(msg),
            )
        for stage, sec in result["timings"].items():
            console.print(f"{stage:>8}: {sec:6.2f} s")
        console.print(f"Wrote {out_dir}/ and the report {result['report']}")
    for name in extra_names:
        sub = f"{out_dir}/{name}"
        with err_console.status(f"reproducing {name}") as status:
            result = run_extra(
                name,
                sub,
                quick=quick,
                seed=seed,
                data_dir=data,
                progress=lambda msg: status.update(msg),
            )
        console.print(f"{name}: {result['timings'].get('total', float('nan')):.2f} s")
        console.print(f"Wrote {sub}/ and the report {result['report']}")


def _register_groups() -> None:
    from distprivacy.commands.attribute import attribute as attribute_group
    from distprivacy.commands.local import local as local_group
    from distprivacy.commands.models import models as models_group

    for group in (attribute_group, local_group, models_group):
        cli.add_command(group)


_register_groups()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _error(message: str) -> int:
    click.echo(f"error: {_one_line(message)}", err=True)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point: the one place exceptions become messages.

    * :class:`DistPrivacyError` (bad input, an impossible request, a memory estimate over the
      limit of :mod:`distprivacy.resources`, an exact release without ``--allow-exact``) →
      ``error: …`` on one line, exit 2;
    * ``MemoryError`` / ``OverflowError`` / ``FloatingPointError`` / ``ZeroDivisionError`` →
      one line naming what ran out or overflowed, exit 2;
    * click usage errors → one line with the command's ``--help``, exit 2.

    NumPy's RuntimeWarnings are silenced here (the results they warn about are checked for
    finiteness where they are computed); other warnings are printed after the command as one
    ``warning: …`` line each, and not at all when it fails, so an error is the only line.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            # Outside standalone mode click returns the code of a click.exceptions.Exit.
            rv = cli.main(args=argv, prog_name="distprivacy", standalone_mode=False)
        except click.exceptions.Exit as e:
            rv = int(e.exit_code)
        except click.exceptions.Abort:
            click.echo("error: aborted", err=True)
            return 1
        except click.UsageError as e:
            hint = " ".join(["distprivacy", *_cmd(argv), "--help"])
            return _error(f"{e.format_message()} (see {hint})")
        except click.ClickException as e:
            return _error(e.format_message())
        except DistPrivacyError as e:
            return _error(str(e) or type(e).__name__)
        except MemoryError as e:
            detail = f" ({_one_line(str(e))})" if str(e) else ""
            return _error(
                f"out of memory: the request is too large for this machine{detail}; ask for "
                "fewer samples, a smaller grid or smaller sizes"
            )
        except ArithmeticError as e:  # OverflowError, FloatingPointError, ZeroDivisionError
            kind = type(e).__name__
            detail = f": {_one_line(str(e))}" if str(e) else ""
            return _error(
                f"numeric failure ({kind}{detail}); a parameter is too large or too small for "
                "double precision"
            )
    seen: set[str] = set()
    for w in caught:
        text = _one_line(str(w.message))
        if text not in seen and not issubclass(w.category, DeprecationWarning):
            seen.add(text)
            click.echo(f"warning: {text}", err=True)
    return rv if isinstance(rv, int) else 0


def _cmd(argv: list[str] | None) -> list[str]:
    args = sys.argv[1:] if argv is None else argv
    return [args[0]] if args and args[0] in cli.commands else []


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

__all__ = ["cli", "main"]
