"""``distprivacy models defend``: calibrate a Gaussian mechanism of Chen & Ohrimenko on what a
model trained on the user's table releases, and re-attack the defended release.

Thin: parse, call :func:`distprivacy.inference.models_defend.defend_game`, print; ``--save`` writes
the defended release of one model (:func:`distprivacy.inference.models_defend.save_defended`).
Registered under the ``models`` group by :mod:`distprivacy.commands.models`.
"""

from __future__ import annotations

from typing import Any

import click

from distprivacy.commands import DELTA, POSITIVE, POSITIVE_INT, Number, dumps_json, parse_floats
from distprivacy.commands.models_audit import game_options, progress_bar, read_game
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
@click.option("--delta", type=DELTA, default=1e-5, show_default=True)
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
) -> None:
    """Defend a model's release with distribution privacy and measure what is left: task
    accuracy, the guaranteed bound on any attack, and defence-aware attacks (95 % intervals)."""
    from distprivacy.commands._files import check_apart, data_files, estimator_file
    from distprivacy.inference.models_audit import check_ratios
    from distprivacy.inference.models_defend import defend_game, save_defended
    from distprivacy.mechanisms import MECHANISMS
    from distprivacy.outputs import check_output_file

    check_apart([*data_files(data_path), *estimator_file(estimator)], [("--save", save_path)])

    alphas = parse_floats(ratios, "--ratios", example="0.3,0.5")
    if len(alphas) < 2:
        raise DistPrivacyError(f"--ratios takes two or more values α0,α1,…, got {ratios!r}")
    check_ratios(alphas, n_train, null_game=False)  # before the table is read
    names = [m.strip() for m in mechanisms.split(",") if m.strip()]
    gaussian = [m for m in MECHANISMS if m.endswith("-G")]
    bad = [m for m in names if m not in gaussian]
    if not names or bad:
        raise DistPrivacyError(
            f"--mechanism: unknown or non-Gaussian {bad or mechanisms!r}; choose from "
            f"{', '.join(gaussian)}"
        )
    if save_path is not None:
        check_output_file(save_path, option="--save")  # before any training
    table, cols, est = read_game(data_path, features, estimator)
    result = defend_game(
        table, label=label, protect=protect, ratios=tuple(alphas), estimator=est,
        release=release, epsilon=epsilon, delta=delta, mechanisms=names, n_models=n_models,
        n_train=n_train, n_query=n_query, features=cols, random_state=seed, n_jobs=n_jobs,
        progress=progress_bar(as_json), level=level,
    )  # fmt: skip
    out = {"estimator": estimator, "level": level, **result.to_dict()}
    if save_path is not None:
        game = {"data": str(data_path), "label": label, "features": cols, "estimator": estimator,
                "n_models": n_models, "n_train": n_train, "seed": seed}  # fmt: skip
        written = save_defended(save_path, result, est, names, game, random_state=seed)
        out["saved"] = str(written)
    if as_json:
        click.echo(dumps_json(out))
        return
    _print(result, out)


def _print(result: Any, out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    shares = " vs ".join(f"{a:g}" for a in result.ratios)
    what = "outputs on the query set" if result.release == "outputs" else "parameters"
    table = Table(
        title=f"Defending the model's {what} ({out['dimension']} numbers): shares "
        f"{shares} of `{result.prep.protect}` records"
    )
    # With more than two ratios each attack is run on every pair of them: a column says which.
    # Short attack names (a legend follows); numbers never fold, the text columns do.
    paired = len(result.ratios) > 2
    for col in ("defence", "task acc.", "bound", *(["pair"] if paired else []), "attack"):
        table.add_column(col, overflow="fold")
    table.add_column(f"accuracy [{out['level']:.4g} CI]", overflow="fold")
    short = {"likelihood-ratio": "LR test", "meta-classifier": "meta-clf."}
    for row in out["defences"]:
        bound = row["max_attack_accuracy"]
        for k, a in enumerate(row["attacks"]):
            lo, hi = a.get("ci", a["ci95"])  # the interval at --level
            pair = [f"{a['pair'][0]:g} vs {a['pair'][1]:g}" if k % 2 == 0 else ""]
            name = next((v for s, v in short.items() if a["name"].startswith(s)), a["name"])
            above = " [bold red]ABOVE BOUND[/]" if bound is not None and a["exceeds_bound"] else ""
            table.add_row(
                row["defence"] if k == 0 else "",
                f"{row['task_accuracy']:.3f}" if k == 0 else "",
                ("—" if bound is None else f"{bound:.3f}") if k == 0 else "",
                *(pair if paired else []),
                name,
                f"{a['accuracy']:.3f} [{lo:.3f}, {hi:.3f}]{above}",
            )
    console = Console(highlight=False)
    console.print(table)
    lines = [
        "LR test: likelihood-ratio test between Gaussians fitted on the adversary's shadow "
        "releases, the noise covariance added; meta-clf.: a classifier trained on its shadows' "
        "noisy releases (both know the noise). bound: the guarantee's bound on any attack.",
        *(f"{name}: not calibrated ({why})" for name, why in out["skipped"].items()),
    ]
    for row in out["defences"][1:]:
        if not row["verified"]:
            lines.append(f"{row['defence']}: guarantee not verified for this noise; no bound shown")
        elif not row["within_bound"]:
            lines.append(
                f"{row['defence']}: an attack's interval lies above the bound "
                f"{row['max_attack_accuracy']:.3f}: the Gaussian model of the release does not "
                "describe these models; train more shadow models (--n-models)"
            )
    checked = sum(len(r["attacks"]) for r in out["defences"] if r["within_bound"] is not None)
    if checked > 1 and any(r["within_bound"] is False for r in out["defences"]):
        # A flag is evidence against a bound only as far as chance is ruled out: say how far.
        level = out["level"]
        chance = 1 - (1 - (1 - level) / 2) ** checked
        lines.append(
            f"{checked} intervals were checked at {level:.4g} each: were every bound true, one "
            f"would lie above its bound by chance with probability up to {chance:.0%}; "
            f"--level {1 - (1 - level) / checked:.4g} checks them all at once"
        )
    if "saved" in out:
        lines.append(f"Wrote the defended release to {out['saved']}")
    for line in lines:
        console.print(line, markup=False)  # wrapped at the terminal's width
