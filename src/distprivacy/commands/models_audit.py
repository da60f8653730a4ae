"""``distprivacy models audit``: the distribution-inference game on the user's own table.

Thin: parse, call :mod:`distprivacy.inference.models_audit`, print (and with ``--report`` write the
HTML report, :mod:`distprivacy.commands._report`). :func:`game_options` are the
options ``models defend`` (:mod:`distprivacy.commands.models_defend`) shares. Registered under
the ``models`` group by :mod:`distprivacy.commands.models`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from distprivacy.commands import POSITIVE_INT, SEED, dumps_json, parse_floats
from distprivacy.commands._report import models_report_option, write_models_audit
from distprivacy.exceptions import DistPrivacyError


def game_options(ratios_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options of the game every ``models`` command on a user's table takes."""
    options = [
        click.option(
            "--data", "data_path", type=click.Path(), required=True, help="CSV/Parquet table."
        ),
        click.option("--label", required=True, help="The label column the models predict."),
        click.option(
            "--features",
            default=None,
            help="Comma-separated feature columns (default: all but --label).",
        ),
        click.option(
            "--protect", required=True, help="The protected property, e.g. 'sex==Female'."
        ),
        click.option("--ratios", default="0.3,0.5", show_default=True, help=ratios_help),
        click.option(
            "--estimator",
            default="logistic",
            show_default=True,
            help="logistic, mlp, tree, sklearn:MODULE:CLASS (a classifier class) or "
            "torch:FILE.py:FACTORY (a function returning a torch.nn.Module).",
        ),
        click.option(
            "--n-models",
            type=POSITIVE_INT,
            default=100,
            show_default=True,
            help="Models per ratio and population.",
        ),
        click.option(
            "--n-train",
            type=POSITIVE_INT,
            default=500,
            show_default=True,
            help="Rows per training set.",
        ),
        click.option(
            "--n-jobs",
            type=POSITIVE_INT,
            default=None,
            help="Parallel workers for estimators fitted one by one (default: every "
            "CPU available).",
        ),
        click.option("--seed", type=SEED, default=0, show_default=True),
        click.option("--json", "as_json", is_flag=True, help="Print JSON."),
    ]

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def game_settings(features: str | None, n_models: int, n_train: int, n_jobs: int | None) -> Any:
    """The flags of the game as :class:`~distprivacy.inference.GameSettings`."""
    from distprivacy.inference import GameSettings

    cols = None if features is None else [c.strip() for c in features.split(",") if c.strip()]
    return GameSettings(n_models=n_models, n_train=n_train, features=cols, n_jobs=n_jobs)


def console() -> Any:
    """A console at the terminal's width (``COLUMNS`` when not a terminal)."""
    from rich.console import Console

    return Console(highlight=False)


def progress_bar(as_json: bool) -> Any:
    from distprivacy.commands._common import LazyProgress

    return LazyProgress("training shadow models", sys.stderr.isatty() and not as_json)


@click.command(name="audit")
@game_options("α0,α1 of the game; more values: one game per pair and the regression of α.")
@models_report_option
def audit(
    data_path: str,
    label: str,
    features: str | None,
    protect: str,
    ratios: str,
    estimator: str,
    n_models: int,
    n_train: int,
    n_jobs: int | None,
    seed: int,
    as_json: bool,
    report: str | None,
) -> None:
    """How well do models trained on your table reveal the share of protected rows?
    (Suri & Evans' game: accuracy of every applicable attack with its 95 % interval; with
    three ratios or more, every pair and the regression of α.)"""
    from distprivacy.commands._files import check_apart, data_files, estimator_file
    from distprivacy.inference import audit as audit_models

    check_apart([*data_files(data_path), *estimator_file(estimator)], [("--report", report)])

    alphas = parse_floats(ratios, "--ratios", example="0.3,0.5")
    if len(alphas) < 2:
        raise DistPrivacyError(f"--ratios takes two values α0,α1 or more, got {ratios!r}")
    game = game_settings(features, n_models, n_train, n_jobs)
    result = audit_models(
        data_path, label, protect, alphas, estimator, game=game, random_state=seed,
        progress=progress_bar(as_json),
    )  # fmt: skip
    _show(result, as_json)
    context = {"data": data_path, "label": label, "protect": protect, "estimator": estimator,
               "features": None if game.features is None else ", ".join(game.features),
               "n_train": n_train, "seed": seed}  # fmt: skip
    write_models_audit(report, result.game, result.games(), list(result.regression), context)


def _show(result: Any, as_json: bool) -> None:
    """Print the games (and the regression of α) as JSON or as sentences (a table for every
    pair of three ratios or more), then the verdict, at the terminal's width."""
    if as_json:
        click.echo(dumps_json(result.to_dict()))
        return
    out = console()
    protect = result.protect
    if len(result.ratios) == 2:
        for r in result.pairs[0].attacks:
            out.print(_verdict(protect, result.ratios, r), markup=False)
    else:
        _print_pairs(out, protect, result.pairs)
    for r in result.regression:
        lo, hi = r.mae_interval
        glo, ghi = r.gain_interval
        reveals = "reveals α" if glo > 0 else "does not reveal α beyond guessing the mean"
        out.print(
            f"{r.name}: predicts the share of `{protect}` records with mean absolute error "
            f"{r.mae:.3f} [{lo:.3f}, {hi:.3f}] against {r.baseline_mae:.3f} for always "
            f"guessing the mean (gain [{glo:.3f}, {ghi:.3f}]): {reveals} ({r.n} victim models)",
            markup=False,
        )
    out.print(result.verdict, markup=False)


def _verdict(protect: str, alphas: Any, r: Any) -> str:
    lo, hi = r.interval
    pct = [f"{100 * a:g} %" for a in alphas]
    return (
        f"{r.name}: a model trained on your data reveals whether `{protect}` records are "
        f"{pct[0]} or {pct[1]} of it with {100 * r.accuracy:.0f} % accuracy "
        f"[{100 * lo:.0f} %, {100 * hi:.0f} %] ({r.n} victim models)"
    )


def _print_pairs(out: Any, protect: str, pairs: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Telling apart shares of `{protect}` records, every pair of ratios")
    for col in ("α0 vs α1", "attack", "accuracy", "95 % CI"):
        table.add_column(col, overflow="fold")
    for pair in pairs:
        a0, a1 = pair.ratios
        for r in pair.attacks:
            lo, hi = r.interval
            table.add_row(f"{a0:g} vs {a1:g}", r.name, f"{r.accuracy:.3f}", f"[{lo:.3f}, {hi:.3f}]")
    out.print(table)
    for pair in pairs:
        out.print(_verdict(protect, pair.ratios, pair.best), markup=False)
