"""What ``calibrate``, ``release`` and ``audit`` share: their options (one decorator, read
into :class:`~distprivacy.commands._settings.Settings`), the progress bar, the flags turned into
the library's request (the data named, the spec, the query, the mechanisms asked for), and the
one call that plans them (:func:`distprivacy.workflow.plan_all`)."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from distprivacy.checks import check_delta, check_number
from distprivacy.commands import (
    FLOAT,
    INTEGER,
    POSITIVE,
    SEED,
    Number,
    parse_float,
    parse_floats,
)
from distprivacy.commands._names import ADULT_DEFAULT_STATISTICS, ENGINE_NAMES
from distprivacy.commands._settings import Settings
from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:  # the library is imported when a command runs, not for its --help
    from distprivacy.engines import Engine
    from distprivacy.models import FModel
    from distprivacy.query import Query
    from distprivacy.request import MechanismSpec
    from distprivacy.spec import ProtectionSpec
    from distprivacy.workflow import Planned

DEFAULT_PROPERTY = "income==>50K"
DEFAULT_VALUES = "0.45,0.55"

#: Progress bars and status lines go to stderr (stdout stays the command's output).
err_console = Console(stderr=True)

#: The options that say where f_θ comes from; ``--model`` replaces them all.
DATA_OPTIONS = (
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


class LazyProgress:
    """A rich progress bar on stderr that appears only once work has taken over a second.

    Parameters
    ----------
    description : str
        The text before the bar.
    enabled : bool
        Whether to show it at all (never when stderr is not a terminal: there rich would leave
        blank lines before an error line).
    delay : float
        Seconds of work before it appears (0: at the first report, for work known to be long).
    """

    def __init__(self, description: str, enabled: bool, delay: float = 1.0) -> None:
        self.description = description
        self.enabled = enabled and err_console.is_terminal
        self.delay = delay
        self.start = time.monotonic()
        self.progress: Progress | None = None
        self.task: Any = None

    def __call__(self, done: int, total: int | None) -> None:
        """Report ``done`` of ``total`` steps (a ``progress`` callback of the library; total
        None: unknown, e.g. records read from a file)."""
        if not self.enabled:
            return
        if self.progress is None and time.monotonic() - self.start >= self.delay:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[shown]}"),
                TimeElapsedColumn(),
                console=err_console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task(self.description, total=total, shown="")
        if self.progress is not None:
            shown = f"{int(done):,}" if total is None else f"{int(done):,}/{total:,}"
            self.progress.update(self.task, completed=done, total=total, shown=shown)

    def describe(self, text: str) -> None:
        """Change the text before the bar (the step under way)."""
        self.description = text
        if self.progress is not None:
            self.progress.update(self.task, description=text)
            self.progress.refresh()  # each step is shown, however short

    def close(self) -> None:
        """Remove the bar, if it was shown."""
        if self.progress is not None:
            self.progress.stop()


def _pairs(text: str) -> list[tuple[float, float]]:
    """``"0.45:0.55,0.5:0.6"`` → [(0.45, 0.55), (0.5, 0.6)]."""
    out = []
    parts = text.strip().split(",")
    if not text.strip() or any(not x.strip() for x in parts):
        raise DistPrivacyError(
            f"--pairs {text!r} has an empty item; write P1:P2 pairs, e.g. 0.45:0.55,0.5:0.6"
        )
    for part in parts:
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


_OPTIONS = [
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
        type=click.Choice(list(ENGINE_NAMES), case_sensitive=False),
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
    click.option(
        "--epsilon",
        type=POSITIVE,
        default=1.0,
        show_default=True,
        help="Privacy loss ε (> 0): smaller protects more and adds more noise.",
    ),
    click.option(
        "--delta",
        type=FLOAT,
        default=1e-3,
        show_default=True,
        help="Failure probability δ of the (ε, δ) guarantee; keep it well below 1/n.",
    ),
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


def common_options(f: Callable) -> Callable:
    """Add the options of ``calibrate``, ``release`` and ``audit`` (data, model, targets,
    seed, ``--json``) to a command."""
    for opt in reversed(_OPTIONS):
        f = opt(f)
    return f


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user set the option (on the command line or in a ``--config`` file)."""
    return ctx.get_parameter_source(name) in (
        click.core.ParameterSource.COMMANDLINE,
        click.core.ParameterSource.DEFAULT_MAP,
    )


def option_flag(name: str) -> str:
    """The ``--flag`` of a parameter name (``values_`` → ``--values``, ``model_file`` →
    ``--model``, ``mechanism_name`` → ``--mechanism``)."""
    special = {"model_file": "--model", "mechanism_name": "--mechanism", "as_json": "--json"}
    return special.get(name, "--" + name.rstrip("_").replace("_", "-"))


#: The options a saved plan fixes (``release --plan`` refuses them).
PLAN_FIXES = (
    *DATA_OPTIONS,
    "model_file",
    "epsilon",
    "delta",
    "calibration",
    "covariances",
    "utility",
    "target_mu",
    "max_attack_accuracy",
)


def _columns(data: Any) -> list[tuple[str, bool]]:
    """The data's columns, each with whether it is numeric (for a CSV scanned by DuckDB, one
    typing scan)."""
    frame = getattr(data, "data", None)
    if frame is not None and hasattr(frame, "columns"):
        import pandas as pd

        return [(str(c), pd.api.types.is_numeric_dtype(frame[c])) for c in frame.columns]
    try:
        names = data.compiler().order
        comp = data.compiler(names)  # one scan types a CSV's columns
    except (AttributeError, DistPrivacyError):
        return []
    return [(n, comp.kind(n) == "numeric") for n in names]


def _example(cols: list[tuple[str, bool]]) -> str:
    """The flags of an example choice among ``cols`` (name, numeric): a text column's property
    and a numeric column's mean."""
    names = [c for c, _ in cols]
    numeric = [c for c, num in cols if num] or names[1:] or names or ["COLUMN"]
    other = [c for c, num in cols if not num] or [c for c in names if c != numeric[0]]
    other = other or ["COLUMN"]
    return f"--protect '{other[0]}==VALUE' --statistics mean:{numeric[0]}"


def _require_choices(s: Settings, data: Any) -> None:
    """A user's file has no default property or statistics (those of Adult would name columns
    it may not have): refuse, listing its columns, unless both are given."""
    missing = [f for k, f in (("protect", "--protect"), ("statistics", "--statistics"))
               if not s.was_given(k)]  # fmt: skip
    if not missing:
        return
    cols = _columns(data)
    names = [c for c, _ in cols]
    shown = ", ".join(names[:20]) + (", …" if len(names) > 20 else "")
    listing = f" (columns: {shown})" if names else ""
    need = " and ".join(missing)
    raise DistPrivacyError(
        f"--data {s.data} needs {need}: the defaults are the Adult data's{listing}; e.g. "
        f"{_example(cols)}"
    )


def check_model_file(s: Settings) -> None:
    """``--model`` replaces the data options: refuse any given with it."""
    explicit = [k for k in DATA_OPTIONS if s.was_given(k)]
    if explicit:
        flags = ", ".join("--" + e.rstrip("_").replace("_", "-") for e in explicit)
        raise DistPrivacyError(f"--model replaces the data options; drop {flags}")


def inputs(s: Settings) -> tuple[Any, ProtectionSpec, Query]:
    """What ``--data`` names (:func:`~distprivacy.engines.load_source`: the Adult data loaded,
    a user's file by its path), what to protect and the statistics, from the flags; the engine
    is made, and the data checked against them, by :func:`distprivacy.workflow.plan`."""
    from distprivacy.engines import load_source
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec(
        s.protect,
        s.subset_size,
        parse_floats(s.values, "--values"),
        pairs=_pairs(s.pairs) if s.pairs is not None else None,
        pairs_within=s.pairs_within,
    )
    query = Query.parse(s.statistics)
    return load_source(s.data), spec, query


def on_engine(s: Settings, source: Any, bar: LazyProgress, seen: list[Any]) -> Callable:
    """What the command does with the data's engine once :func:`~distprivacy.workflow.plan`
    made it: refuse a user's file without ``--protect`` and ``--statistics`` (the defaults are
    the Adult data's), report long scans on ``bar``, and keep the engine in ``seen``."""

    def hook(engine: Engine) -> None:
        if isinstance(source, str):
            _require_choices(s, engine)
        engine.progress = bar  # long scans and draws on the engine report here
        seen.append(engine)

    return hook


def data_info(
    s: Settings, data: Engine, spec: ProtectionSpec, query: Query, model: FModel
) -> dict[str, Any]:
    """Where the model came from, for the output."""
    return {
        "data": s.data or "adult",
        "engine": data.name,
        "spec": spec.to_dict(),
        "statistics": list(query.names),
        "modeling": model.method_,
    }


def plan_all(
    s: Settings, specs: list[MechanismSpec], *, fingerprint: bool = True
) -> tuple[Planned, dict[str, Any], tuple[ProtectionSpec, Query] | None]:
    """Fit the model (or read ``--model``) and plan every mechanism asked for
    (:func:`distprivacy.workflow.plan_all`); one that fails is listed as not applicable with
    the reason. Each one's caveats are printed from its calibration (their warnings are not
    shown twice).

    Returns
    -------
    planned : Planned
    info : dict
        Where the model came from, for the output.
    inputs : tuple or None
        ``(spec, query)`` when fitted from data; None for ``--model``.
    """
    from distprivacy.workflow import plan_all as plan_every

    bar = LazyProgress("modelling f_θ", enabled=s.show)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the caveats are printed from the calibrations
            if s.model_file is not None:
                check_model_file(s)
                planned = plan_every(mechanisms=specs, modelling=s.modelling(),
                                     model=s.model_file, progress=bar, on_step=bar.describe,
                                     fingerprint=fingerprint)  # fmt: skip
                return planned, {"model_file": str(s.model_file)}, None
            source, spec, query = inputs(s)
            planned = plan_every(source, spec, query, specs, s.modelling(),
                                 on_engine=on_engine(s, source, bar, []), progress=bar,
                                 on_step=bar.describe, fingerprint=fingerprint)  # fmt: skip
    finally:
        bar.close()
    info = data_info(s, planned.data, spec, query, planned.model)
    return planned, info, (spec, query)


def released_size(model: Any) -> int | None:
    """n, the size of the released dataset: the specification's, or a model file's."""
    spec = getattr(model, "spec_", None)
    n = getattr(spec, "n", None) if spec is not None else getattr(model, "n_", None)
    try:
        return int(n) if n is not None and int(n) >= 1 else None
    except (TypeError, ValueError):
        return None


def warn_large_delta(delta: float, n: int | None) -> None:
    """One warning line (printed by the CLI after the output) when δ ≥ 1/n: an (ε, δ)
    guarantee that may fail with probability 1/n can leave one of n records unprotected."""
    if n is None or not delta > 0 or delta < 1 / n:
        return
    from distprivacy.exceptions import WeakGuaranteeWarning

    suggest = 10 ** math.floor(math.log10(0.1 / n))
    warnings.warn(
        f"δ = {delta:g} is at least 1/n = {1 / n:.3g} (n = {n} records): a guarantee allowed "
        f"to fail with probability δ ≥ 1/n can leave a record unprotected; choose δ well "
        f"below 1/n, e.g. --delta {suggest:g}",
        WeakGuaranteeWarning,
        stacklevel=2,
    )


def mechanism_specs(mechanisms: tuple[str, ...], s: Settings) -> list[MechanismSpec]:
    """The mechanisms asked for (default: all), each a request with the settings' target and
    options, δ validated for them; one asked for by name whose optional dependency is missing
    is refused (MissingExtraError; the default run lists it as not applicable, naming the
    extra)."""
    from distprivacy.mechanisms import MECHANISMS, mechanism_class

    names = [mechanism_class(m).name for m in mechanisms] or list(MECHANISMS)
    for name in names if mechanisms else ():
        MECHANISMS[name].require_extras()
    # δ ∈ (0, 1) for (ε, δ) mechanisms; pure-ε ones ignore it but it must still lie in [0, 1).
    check_delta(s.delta, allow_zero=not any(MECHANISMS[n].uses_delta for n in names))
    return [s.spec(n) for n in names]
