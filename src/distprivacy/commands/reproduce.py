"""``distprivacy reproduce``: rerun the papers' tables and figures into a folder."""

from __future__ import annotations

import click
from rich.console import Console

from distprivacy.commands import SEED, adult_data_option
from distprivacy.commands._common import err_console


def _command_line(
    targets: tuple[str, ...], out_dir: str, report_path: str | None, quick: bool, seed: int
) -> str:
    """The command as the report quotes it (default options left out)."""
    return " ".join(
        ["distprivacy reproduce", *targets, "--out", out_dir]
        + (["--report", report_path] if report_path else [])
        + (["--quick"] if quick else [])
        + ([f"--seed {seed}"] if seed else [])
    )


@click.command()
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
    from distprivacy.commands._files import check_apart, data_files
    from distprivacy.experiments.paper import Config
    from distprivacy.experiments.reproduce import (
        EXTRA_TARGETS,
        check_outputs,
        resolve_targets,
        run_extra,
    )
    from distprivacy.experiments.reproduce import reproduce as run

    check_apart(data_files(data), [("--out", out_dir), ("--report", report_path)])
    names = resolve_targets(targets)
    check_outputs(out_dir, report_path, names)  # before any computation
    paper_names = [n for n in names if n not in EXTRA_TARGETS]
    extra_names = [n for n in names if n in EXTRA_TARGETS]
    console = Console()
    if paper_names:
        from distprivacy.datasets import load_adult

        frame = load_adult(data)
        cfg = Config.quick(seed) if quick else Config(seed=seed)
        with err_console.status("reproducing") as status:
            result = run(
                frame,
                paper_names,
                out_dir,
                cfg,
                report_path,
                command=_command_line(targets, out_dir, report_path, quick, seed),
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
