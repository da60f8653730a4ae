"""``distprivacy models``: distribution inference on trained models (Suri & Evans).

Thin: parse options, call :mod:`distprivacy.inference.census` (the Census game: data,
populations, test sets), :mod:`distprivacy.inference.attacks` and, for ``reproduce`` / ``render``,
:mod:`distprivacy.experiments.model_inference`; print.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from distprivacy.commands import (
    FLOAT,
    POSITIVE_INT,
    SEED,
    adult_data_option,
    dumps_json,
    parse_floats,
)
from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:
    from distprivacy.inference.census import GameData

ATTACKS = ("loss", "threshold", "sorted-weights", "pin", "black-box")
_DATA_ATTACKS = {"loss", "threshold", "black-box"}


@click.group(name="models")
def models() -> None:
    """Distribution inference on trained models: train populations, attack them, reproduce
    Suri & Evans on Census with the output defence."""


def _hidden(text: str) -> tuple[int, ...]:
    if text.strip() in ("", "none"):
        return ()
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise DistPrivacyError(
            f"--hidden must be comma-separated layer widths like 32,16,8, got {text!r}"
        ) from None
    if any(h < 1 for h in out):
        raise DistPrivacyError(f"--hidden widths must be positive, got {text!r}")
    return out


def _game(data: str | None, split_seed: int) -> GameData:
    from distprivacy.datasets import load_adult
    from distprivacy.inference.census import load_game_data

    return load_game_data(load_adult(data), split_seed)


@models.command(name="train")
@click.option(
    "--property",
    "prop",
    type=click.Choice(["sex", "race"]),
    required=True,
    help="sex: share of women; race: share of whites.",
)
@click.option("--ratio", type=FLOAT, required=True, help="α: share of rows with the property.")
@click.option(
    "--b",
    "b",
    type=click.IntRange(0, 1),
    default=1,
    show_default=True,
    help="Which distribution of the game this is (0 = G0, 1 = G1).",
)
@click.option(
    "--role",
    type=click.Choice(["victim", "adversary"]),
    default="adversary",
    show_default=True,
    help="Whose half of the data the models train on.",
)
@click.option("--n-models", type=POSITIVE_INT, default=100, show_default=True)
@click.option(
    "--n-train", type=POSITIVE_INT, default=1000, show_default=True, help="Rows per dataset."
)
@click.option("--epochs", type=POSITIVE_INT, default=40, show_default=True)
@click.option(
    "--hidden",
    default="32,16,8",
    show_default=True,
    help="Hidden widths ('none': logistic regression).",
)
@click.option("--out", "out_path", type=click.Path(), required=True, help="Output .npz file.")
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seeds the data split and the population (as the reproduction does).",
)
@adult_data_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def train(
    prop: str,
    ratio: float,
    b: int,
    role: str,
    n_models: int,
    n_train: int,
    epochs: int,
    hidden: str,
    out_path: str,
    seed: int,
    data: str | None,
    as_json: bool,
) -> None:
    """Train a population of models on datasets from the ratio filter (Eq. 2) and save it."""
    from distprivacy.commands._files import check_apart, data_files
    from distprivacy.inference.census import CensusTraining, population_settings, train_or_load
    from distprivacy.inference.population import population_file
    from distprivacy.outputs import check_output_file

    if not 0 <= ratio <= 1:
        raise DistPrivacyError(f"ratios must lie in [0, 1], got {ratio}")
    cfg = CensusTraining(
        n_victim=n_models,
        n_adversary=n_models,
        n_train=n_train,
        epochs=epochs,
        hidden=_hidden(hidden),
        seed=seed,
    )
    check_output_file(out_path, option="--out", create_parents=False)  # before training
    check_output_file(population_file(out_path), option="--out", create_parents=False)
    check_apart(data_files(data), [("--out", population_file(out_path))])  # the file written
    game = _game(data, seed)
    settings = population_settings(cfg, prop, role, ratio, b, game)
    pop, _ = train_or_load(game, settings, None, reuse=False)
    path = pop.save(out_path)
    summary = {
        "path": str(path),
        "n_models": pop.n_models,
        "layer_sizes": list(pop.layer_sizes),
        "train_seconds": pop.meta.get("train_seconds"),
        "settings": settings,
    }
    if as_json:
        click.echo(dumps_json(summary))
    else:
        click.echo(
            f"Trained {pop.n_models} models {pop.layer_sizes} on {prop} ratio {ratio:g} "
            f"({role}, G{b}) in {summary['train_seconds']:.1f} s; wrote {path}"
        )


def _load(path: str, factory: str | None = None, trusted: tuple[str, ...] = ()):
    """A ModelPopulation (``.npz``) or the user's saved models (``.safetensors``, ``.skops``)."""
    from distprivacy.commands._models_saved import load_any

    return load_any(path, factory=factory, trusted=trusted)


_FACTORY_OPTION = click.option(
    "--estimator",
    "factory",
    default=None,
    metavar="torch:FILE.py:make",
    help="PyTorch populations (.safetensors) only: the factory the networks were built with "
    "(imported and run: name only files you trust).",
)
_TRUST_OPTION = click.option(
    "--trust",
    "trusted",
    multiple=True,
    metavar="TYPE",
    help="scikit-learn populations (.skops) only: an extra type name to trust (repeatable).",
)


def _settings(pop: Any, path: str) -> dict[str, Any]:
    s = pop.meta.get("settings")
    if not isinstance(s, dict):
        raise DistPrivacyError(
            f"{path} was not trained by `distprivacy models train` (no settings in its meta); "
            "the loss, threshold and black-box attacks need them — use --attack sorted-weights "
            "or --attack pin"
        )
    return s


@models.command(name="attack")
@click.option(
    "--adversary",
    nargs=2,
    type=click.Path(),
    required=True,
    metavar="G0.npz G1.npz",
    help="The adversary's populations.",
)
@click.option(
    "--victim",
    nargs=2,
    type=click.Path(),
    required=True,
    metavar="G0.npz G1.npz",
    help="The victim's populations (scored).",
)
@click.option(
    "--attack",
    "attacks",
    multiple=True,
    type=click.Choice(ATTACKS),
    help="Attacks to run (repeatable; default: all).",
)
@click.option(
    "--n-test",
    type=POSITIVE_INT,
    default=1000,
    show_default=True,
    help="Rows of the adversary's test sets D0, D1 (loss / threshold / black-box).",
)
@click.option("--pin-epochs", type=POSITIVE_INT, default=30, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@_FACTORY_OPTION
@_TRUST_OPTION
@adult_data_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def attack(
    adversary: tuple[str, str],
    victim: tuple[str, str],
    attacks: tuple[str, ...],
    n_test: int,
    pin_epochs: int,
    seed: int,
    factory: str | None,
    trusted: tuple[str, ...],
    data: str | None,
    as_json: bool,
) -> None:
    """Attack saved populations: accuracy on the victim's models with a 95 % interval."""
    from distprivacy.inference import attacks as atk
    from distprivacy.inference.census import test_sets

    chosen = list(dict.fromkeys(attacks)) or list(ATTACKS)
    adv = tuple(_load(p, factory, trusted) for p in adversary)
    vic = tuple(_load(p, factory, trusted) for p in victim)
    d0 = d1 = None
    if _DATA_ATTACKS & set(chosen):
        s0, s1 = (_settings(p, path) for p, path in zip(adv, adversary, strict=True))
        if s0["property"] != s1["property"] or s0["split_seed"] != s1["split_seed"]:
            raise DistPrivacyError(
                "the adversary's G0 and G1 populations were trained for different properties "
                "or data splits; train both with the same --property and --seed"
            )
        if n_test < 1:
            raise DistPrivacyError(f"--n-test must be a positive integer, got {n_test}")
        game = _game(data, s0["split_seed"])
        d0, d1, _ = test_sets(game, s0["property"], (s0["ratio"], s1["ratio"]), n_test, seed)
    results = []
    for name in chosen:
        if name == "loss":
            a: Any = atk.LossTest(d0, d1)
        elif name == "threshold":
            a = atk.ThresholdTest(d0, d1, random_state=seed)
        elif name == "sorted-weights":
            a = atk.SortedWeightsMetaClassifier(random_state=seed)
        elif name == "pin":
            a = atk.PermutationInvariantNetwork(epochs=pin_epochs, random_state=seed)
        else:
            import numpy as np

            q = np.concatenate([d0[0][:32], d1[0][:32]])  # type: ignore[index]
            a = atk.BlackBoxMetaClassifier(q, random_state=seed)
        results.append(a.fit(*adv).score(*vic))
    if as_json:
        click.echo(
            dumps_json(
                {
                    "adversary": list(adversary),
                    "victim": list(victim),
                    "attacks": [r.to_dict() for r in results],
                }
            )
        )
        return
    from rich.console import Console

    from distprivacy.commands._display import print_columns

    rows = [
        (
            r.name,
            f"{r.accuracy:.3f}",
            f"[{r.interval[0]:.3f}, {r.interval[1]:.3f}]",
            f"{r.advantage:.3f}",
            str(r.n),
        )
        for r in results
    ]
    print_columns(
        Console(),
        f"Distinguishing {victim[0]} (G0) from {victim[1]} (G1)",
        ("attack", "accuracy", "95 % CI", "advantage", "victim models"),
        rows,
        [(1, 2), (3, 4)],
    )


@models.command(name="info")
@click.argument("path", type=click.Path())
@_FACTORY_OPTION
@_TRUST_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(path: str, factory: str | None, trusted: tuple[str, ...], as_json: bool) -> None:
    """Describe a saved population (.npz, .safetensors or .skops: architecture, size, how it
    was trained)."""
    pop = _load(path, factory, trusted)
    meta = {k: v for k, v in pop.meta.items() if k not in ("per_model", "feature_names")}
    out = {
        "path": path,
        "n_models": pop.n_models,
        "layer_sizes": list(pop.layer_sizes),
        "activation": pop.activation,
        "n_parameters": pop.n_parameters,
        "meta": meta,
    }
    if as_json:
        click.echo(dumps_json(out))
    else:
        click.echo(
            f"{path}: {pop.n_models} models {pop.layer_sizes} ({pop.activation}), "
            f"{pop.n_parameters} parameters each"
        )
        for k, v in meta.items():
            click.echo(f"  {k}: {dumps_json(v, indent=None)}")


def _floats(text: str, what: str) -> tuple[float, ...]:
    return tuple(parse_floats(text, what, example="0,0.5,1"))


@models.command(name="reproduce")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(),
    required=True,
    help="Directory for the CSVs, PNGs, populations/ and report.md.",
)
@click.option(
    "--n-models",
    type=POSITIVE_INT,
    default=None,
    help="Models per distribution for the victim and for the adversary (default 1000).",
)
@click.option(
    "--n-train", type=POSITIVE_INT, default=None, help="Rows per training set (default 1000)."
)
@click.option("--alphas", default=None, help="G1 ratios, e.g. 0,0.5,1 (default 0, 0.1, …, 1).")
@click.option("--properties", default=None, help="sex,race (default both).")
@click.option(
    "--repetitions", type=POSITIVE_INT, default=None, help="Repetitions of the attacks (5)."
)
@click.option("--figure1/--no-figure1", default=True, show_default=True)
@click.option(
    "--cases/--no-cases",
    default=True,
    show_default=True,
    help="Ganju et al.'s cases A and B beside the paper's numbers.",
)
@click.option("--regression/--no-regression", default=True, show_default=True)
@click.option("--defence/--no-defence", default=True, show_default=True)
@click.option(
    "--reuse/--no-reuse",
    default=True,
    show_default=True,
    help="Load saved populations whose settings match instead of retraining.",
)
@click.option("--quick", is_flag=True, help="The small settings CI runs (seconds).")
@click.option("--seed", type=SEED, default=0, show_default=True)
@adult_data_option
def reproduce(
    out_dir: str,
    n_models: int | None,
    n_train: int | None,
    alphas: str | None,
    properties: str | None,
    repetitions: int | None,
    figure1: bool,
    cases: bool,
    regression: bool,
    defence: bool,
    reuse: bool,
    quick: bool,
    seed: int,
    data: str | None,
) -> None:
    """Suri & Evans §3 on Census, with the defence, at chosen sizes ('distprivacy reproduce
    model-inference' runs the defaults)."""
    import dataclasses

    from distprivacy.commands._files import check_apart, data_files
    from distprivacy.experiments.model_inference import Config, run

    check_apart(data_files(data), [("--out", out_dir)])

    cfg = Config.quick(seed) if quick else Config(seed=seed)
    changes: dict[str, Any] = {
        "figure1": figure1,
        "cases": cfg.cases if cases else (),
        "regression": regression,
        "defence": defence,
    }
    if n_models is not None:
        changes.update(n_victim=n_models, n_adversary=n_models)
    if n_train is not None:
        changes["n_train"] = n_train
    if alphas is not None:
        changes["alphas"] = _floats(alphas, "--alphas")
    if properties is not None:
        changes["properties"] = tuple(p.strip() for p in properties.split(",") if p.strip())
    if repetitions is not None:
        changes["repetitions"] = repetitions
    cfg = dataclasses.replace(cfg, **changes).validate()
    ctx = click.get_current_context()
    argv = ["distprivacy models reproduce --out", out_dir]
    for name, value in ctx.params.items():
        default = ctx.command.params[[p.name for p in ctx.command.params].index(name)].default
        if name in ("out_dir", "data") or value == default:
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else f"--no-{name}")
        else:
            argv += [flag, str(value)]
    from rich.console import Console

    with Console(stderr=True).status("reproducing model-inference") as status:
        result = run(
            out_dir,
            quick=quick,
            seed=seed,
            data_dir=data,
            progress=lambda msg: status.update(msg),
            reuse=reuse,
            config=cfg,
            command=" ".join(argv),
        )
    click.echo(f"model-inference: {result['timings']['total']:.2f} s")
    click.echo(f"Wrote {out_dir}/ and the report {result['report']}")


@models.command(name="render")
@click.argument("out_dir", type=click.Path())
def render(out_dir: str) -> None:
    """Rebuild report.md and the PNGs of a finished reproduction from its CSVs (no
    recomputation)."""
    from distprivacy.experiments.model_inference import render as rebuild

    click.echo(f"Wrote {rebuild(out_dir)}")


def _register() -> None:
    """The commands kept in their own modules: ``models audit``
    (:mod:`distprivacy.commands.models_audit`), ``models defend``
    (:mod:`distprivacy.commands.models_defend`) and ``models graph`` (the graph game,
    :mod:`distprivacy.commands.models_graph`)."""
    from distprivacy.commands.models_audit import audit
    from distprivacy.commands.models_defend import defend
    from distprivacy.commands.models_graph import graph as models_graph

    for command in (audit, defend, models_graph):
        models.add_command(command)


_register()
