"""``distprivacy models defend``: calibrate a Gaussian mechanism of Chen & Ohrimenko on what a
model trained on the user's table releases, and re-attack the defended release.

Thin: translate the flags into :class:`~distprivacy.inference.GameSettings` and
:class:`~distprivacy.inference.DefenceSettings`, call :func:`distprivacy.inference.defend`, print
its table, ε/δ and verdict at the terminal's width; ``--save`` writes the defended release of
one model (:meth:`~distprivacy.inference.ModelDefendResult.save`), ``--report`` the HTML page.
Registered under the ``models`` group by :mod:`distprivacy.commands.models`.
"""

from __future__ import annotations

from typing import Any

import click

from distprivacy.commands import DELTA, POSITIVE, POSITIVE_INT, Number, dumps_json, parse_floats
from distprivacy.commands._report import models_defend_report_option, write_models_defend
from distprivacy.commands.models_audit import console, game_options, game_settings, progress_bar
from distprivacy.exceptions import DistPrivacyError

_DEFAULT_MECHANISMS = "DauM-G,OptM-G,ExpM-G"


@click.command(name="defend")
@game_options("α0,α1[,…]: the shares of protected rows the defence hides (every pair of them).")
@click.option(
    "--release",
    type=click.Choice(["outputs", "parameters"]),
    default="outputs",
    show_default=True,
    help="outputs: the model's probabilities on a public query set; parameters: a linear "
    "model's coefficients and intercept.",
)
@click.option(
    "--mechanism",
    "mechanisms",
    default=_DEFAULT_MECHANISMS,
    show_default=True,
    help="Comma-separated Gaussian mechanisms of Chen & Ohrimenko (ExpM-G: the baseline).",
)
@click.option("--epsilon", type=POSITIVE, default=1.0, show_default=True)
@click.option("--delta", type=DELTA, default=1e-3, show_default=True)
@click.option("--n-query", type=POSITIVE_INT, default=8, show_default=True,
              help="Rows of the public query set (--release outputs).")  # fmt: skip
@click.option(
    "--level",
    type=Number(low=0.5, high=1, high_open=True),
    default=0.95,
    show_default=True,
    help="Confidence of each attack's Clopper-Pearson interval, and of the ABOVE BOUND check. "
    "For N checks at once, 1 - 0.05/N makes a false flag at most 2.5 % likely in all.",
)
@click.option(
    "--save",
    "save_path",
    type=click.Path(),
    default=None,
    help="Write the defended release of one model trained on --n-train rows of the table, "
    "with its guarantee (JSON, private file; the first verified mechanism of --mechanism).",
)
@models_defend_report_option
def defend(
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
    release: str,
    mechanisms: str,
    epsilon: float,
    delta: float,
    n_query: int,
    level: float,
    save_path: str | None,
    report: str | None,
) -> None:
    """Defend a model's release with distribution privacy and measure what is left: task
    accuracy, the guaranteed bound on any attack, and defence-aware attacks (95 % intervals)."""
    from distprivacy.commands._files import check_apart, data_files, estimator_file
    from distprivacy.inference import DefenceSettings
    from distprivacy.inference import defend as defend_models
    from distprivacy.inference._front import gaussian_mechanisms
    from distprivacy.outputs import check_output_file

    outputs = [("--save", save_path), ("--report", report)]
    check_apart([*data_files(data_path), *estimator_file(estimator)], outputs)

    alphas = parse_floats(ratios, "--ratios", example="0.3,0.5")
    if len(alphas) < 2:
        raise DistPrivacyError(f"--ratios takes two or more values α0,α1,…, got {ratios!r}")
    names = [m.strip() for m in mechanisms.split(",") if m.strip()]
    gaussian = gaussian_mechanisms()
    bad = [m for m in names if m not in gaussian]
    if not names or bad:
        raise DistPrivacyError(
            f"--mechanism: unknown or non-Gaussian {bad or mechanisms!r}; choose from "
            f"{', '.join(gaussian)}"
        )
    settings = DefenceSettings(release=release, mechanisms=tuple(names), epsilon=epsilon,
                               delta=delta, n_query=n_query, level=level)  # fmt: skip
    game = game_settings(features, n_models, n_train, n_jobs)
    if save_path is not None:
        check_output_file(save_path, option="--save")  # before any training
    result = defend_models(
        data_path, label, protect, alphas, estimator, settings=settings, game=game,
        random_state=seed, progress=progress_bar(as_json),
    )  # fmt: skip
    out = {**result.to_dict(), "estimator": estimator}
    cols = None if game.features is None else list(game.features)
    if save_path is not None:
        saved = {"data": str(data_path), "label": label, "features": cols,
                 "estimator": estimator, "n_models": n_models, "n_train": n_train,
                 "seed": seed}  # fmt: skip
        out["saved"] = str(result.save(save_path, saved, random_state=seed))
    if as_json:
        click.echo(dumps_json(out))
    else:
        _print(result, out.get("saved"))
    context = {"data": data_path, "label": label, "estimator": estimator,
               "features": None if cols is None else ", ".join(cols), "n_models": n_models,
               "n_train": n_train, "seed": seed}  # fmt: skip
    write_models_defend(report, result, context)


def _print(result: Any, saved: str | None = None) -> None:
    """The table of defences, the notes, ε/δ and the verdict, at the terminal's width."""
    from rich.table import Table

    s = result.settings
    shares = " vs ".join(f"{a:g}" for a in result.ratios)
    what = "outputs on the query set" if s.release == "outputs" else "parameters"
    table = Table(
        title=f"Defending the model's {what} ({result.dimension} numbers): shares {shares} "
        f"of `{result.protect}` records"
    )
    # With more than two ratios each attack is run on every pair of them: a column says which.
    # Short attack names (a legend follows); numbers never fold, the text columns do.
    paired = len(result.ratios) > 2
    for col in ("defence", "task acc.", "bound", *(["pair"] if paired else []), "attack"):
        table.add_column(col, overflow="fold")
    table.add_column(f"accuracy [{s.level:.4g} CI]", overflow="fold")
    short = {"likelihood-ratio": "LR test", "meta-classifier": "meta-clf."}
    for d in result.defences:
        bound = d.max_attack_accuracy
        for k, a in enumerate(d.attacks):
            lo, hi = a.interval  # the interval at --level
            pair = [f"{a.pair[0]:g} vs {a.pair[1]:g}" if k % 2 == 0 else ""]
            name = next((v for p, v in short.items() if a.name.startswith(p)), a.name)
            above = " [bold red]ABOVE BOUND[/]" if bound is not None and a.exceeds_bound else ""
            table.add_row(
                d.defence if k == 0 else "",
                f"{d.task_accuracy:.3f}" if k == 0 else "",
                ("—" if bound is None else f"{bound:.3f}") if k == 0 else "",
                *(pair if paired else []),
                name,
                f"{a.accuracy:.3f} [{lo:.3f}, {hi:.3f}]{above}",
            )
    out = console()
    out.print(table)
    lines = [
        f"Each defence is calibrated to ε = {s.epsilon:g}, δ = {s.delta:g} for every pair of "
        "shares; bound: the guarantee's bound on any attack's accuracy (when verified).",
        "LR test: likelihood-ratio test between Gaussians fitted on the adversary's shadow "
        "releases, the noise covariance added; meta-clf.: a classifier trained on its shadows' "
        "noisy releases (both know the noise).",
        *(f"{name}: not calibrated ({why})" for name, why in result.skipped.items()),
    ]
    for d in result.defences[1:]:
        if not d.verified:
            lines.append(f"{d.defence}: guarantee not verified for this noise; no bound shown")
        elif not d.within_bound:
            lines.append(
                f"{d.defence}: an attack's interval lies above the bound "
                f"{d.max_attack_accuracy:.3f}: the Gaussian model of the release does not "
                "describe these models; train more shadow models (--n-models)"
            )
    checked = sum(len(d.attacks) for d in result.defences if d.within_bound is not None)
    if checked > 1 and any(d.within_bound is False for d in result.defences):
        # A flag is evidence against a bound only as far as chance is ruled out: say how far.
        level = s.level
        chance = 1 - (1 - (1 - level) / 2) ** checked
        lines.append(
            f"{checked} intervals were checked at {level:.4g} each: were every bound true, one "
            f"would lie above its bound by chance with probability up to {chance:.0%}; "
            f"--level {1 - (1 - level) / checked:.4g} checks them all at once"
        )
    if saved is not None:
        lines.append(f"Wrote the defended release to {saved}")
    from distprivacy.commands._flags import to_flags

    lines.append(to_flags(result.verdict))
    for line in lines:
        out.print(line, markup=False)  # wrapped at the terminal's width
