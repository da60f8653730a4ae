"""``distprivacy reproduce``: compute, write CSVs and PNGs, and the report."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from distprivacy.exceptions import (
    ClassicRuleWarning,
    DistPrivacyError,
    MissingExtraError,
    has_extra,
)
from distprivacy.experiments import beyond
from distprivacy.experiments._run import write_run
from distprivacy.experiments.attribute_privacy import run as run_attribute_privacy
from distprivacy.experiments.local_distp import run as run_local_distp
from distprivacy.experiments.model_inference import run as run_model_inference
from distprivacy.experiments.paper import Config, PaperReproduction
from distprivacy.experiments.reproduction_report import build_report
from distprivacy.outputs import (
    atomic_write,
    check_output_dir,
    check_output_file,
    write_csv,
)

TARGETS = (
    "table2",
    "table3",
    "figure2",
    "figure3",
    "figure4",
    "figure5",
    "accounting",
    "audit",
)


class Reproduction(Protocol):
    """The entry point of another paper's reproduction: writes its CSVs, PNGs and
    ``report.md`` into ``out_dir`` (the CLI passes ``OUT/<target>``) and returns
    ``{"report": Path, "timings": dict, ...}``."""

    def __call__(
        self,
        out_dir: Path,
        *,
        quick: bool,
        seed: int,
        data_dir: str | None,
        progress: Callable[[str], None],
    ) -> dict[str, Any]: ...


#: Reproductions of the other papers: target name -> its ``run`` function.
EXTRA_TARGETS: dict[str, Reproduction] = {
    "attribute-privacy": run_attribute_privacy,
    "local-distp": run_local_distp,
    "model-inference": run_model_inference,
}

ALL_TARGETS = (*TARGETS, *EXTRA_TARGETS)


def _require_figures() -> None:
    """Every reproduction draws its figures: refuse before any work without matplotlib."""
    if not has_extra("matplotlib"):
        raise MissingExtraError("reproduce", "matplotlib")


def resolve_targets(names: Iterable[str]) -> list[str]:
    """Validate target names; ``paper`` means the main paper's targets, ``all`` every target."""
    out: list[str] = []
    for n in names:
        n = n.strip().lower()
        if n == "all":
            return list(ALL_TARGETS)
        if n == "paper":
            out.extend(t for t in TARGETS if t not in out)
            continue
        if n not in ALL_TARGETS:
            raise DistPrivacyError(
                f"unknown target {n!r}; choose from {', '.join(ALL_TARGETS)}, paper or all"
            )
        if n not in out:
            out.append(n)
    if not out:
        raise DistPrivacyError(f"name a target: {', '.join(TARGETS)} or all")
    return out


def run_extra(
    name: str,
    out_dir: str | Path,
    *,
    quick: bool,
    seed: int,
    data_dir: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run one of :data:`EXTRA_TARGETS`, writing into ``out_dir``."""
    if name not in EXTRA_TARGETS:
        raise DistPrivacyError(f"unknown target {name!r}; choose from {', '.join(EXTRA_TARGETS)}")
    _require_figures()
    return EXTRA_TARGETS[name](
        Path(out_dir), quick=quick, seed=seed, data_dir=data_dir, progress=progress or _ignore
    )


def check_outputs(
    out_dir: str | Path | None, report_path: str | Path | None = None, targets: Iterable[str] = ()
) -> None:
    """Fail fast, before any computation, if the outputs of ``distprivacy reproduce`` cannot be
    written: ``--out`` empty, an existing file, not creatable or not writable, a full disk;
    ``--report`` a directory; ``OUT/TARGET`` of another paper's target an existing file.

    Raises
    ------
    distprivacy.outputs.OutputError
        One line naming the path and the fix.
    distprivacy.exceptions.MissingExtraError
        matplotlib (the ``[figures]`` extra), which draws the PNGs, is not installed.
    """
    _require_figures()
    out = check_output_dir(out_dir, option="--out")
    if report_path is not None:
        check_output_file(report_path, option="--report")
    for name in resolve_targets(targets) if targets else []:
        if name in EXTRA_TARGETS:
            check_output_dir(out / name, option="--out")


def _ignore(_: str) -> None:
    return None


def compute(
    repro: PaperReproduction, targets: list[str], timings: dict[str, float]
) -> dict[str, Any]:
    """The frames of each target (Table 2 is also computed for Figure 2's paper markers)."""
    frames: dict[str, Any] = {}
    for t in targets:
        t0 = time.perf_counter()
        if t == "figure3":
            frames["figure3"] = repro.figure3()
            frames["figure3_crossover"] = repro.crossover(frames["figure3"])
        elif t == "figure5":
            frames["figure5"], frames["figure5_samples"] = repro.figure5()
        elif t == "accounting":
            frames["accounting"] = beyond.accounting(repro)
            frames["accounting_summary"] = beyond.accounting_summary(frames["accounting"])
        elif t == "audit":
            frames["audit"] = beyond.audit_table(repro)
        else:
            frames[t] = getattr(repro, t)()
        timings[t] = time.perf_counter() - t0
    return frames


def write_outputs(frames: dict[str, Any], out_dir: Path, report_dir: Path) -> dict[str, str]:
    """Write every frame as CSV and every figure as PNG, each atomically (temporary file +
    rename); returns PNG links relative to the report's directory."""
    from distprivacy.experiments import figures

    for name, f in frames.items():
        if isinstance(f, pd.DataFrame):
            write_csv(f, out_dir / f"{name}.csv", index=False)
    if "figure5_samples" in frames:
        samples = {f"p{k:g}": v for k, v in frames["figure5_samples"].items()}
        atomic_write(
            out_dir / "figure5_samples.npz", lambda tmp: np.savez_compressed(tmp, **samples)
        )
    made: dict[str, Path] = {}
    if "table2" in frames:
        made["table2"] = figures.plot_table2(frames["table2"], out_dir / "table2.png")
    if "figure2" in frames:
        made["figure2"] = figures.plot_figure2(
            frames["figure2"], out_dir / "figure2.png", table2=frames.get("table2")
        )
    if "figure3" in frames:
        made["figure3"] = figures.plot_figure3(
            frames["figure3"], frames["figure3_crossover"], out_dir / "figure3.png"
        )
    if "table3" in frames:
        made["table3"] = figures.plot_table3(frames["table3"], out_dir / "table3.png")
    if "figure4" in frames:
        made["figure4"] = figures.plot_figure4(
            frames["figure4"], out_dir / "figure4.png", table3=frames.get("table3")
        )
    if "figure5" in frames:
        made["figure5"] = figures.plot_figure5(
            frames["figure5"], frames["figure5_samples"], out_dir / "figure5.png"
        )
    if "accounting" in frames:
        made["accounting"] = figures.plot_accounting(
            frames["accounting"], out_dir / "accounting.png"
        )
    if "audit" in frames:
        made["audit"] = figures.plot_audit(frames["audit"], out_dir / "audit.png")
    return {k: os.path.relpath(v, report_dir) for k, v in made.items()}


def reproduce(
    data: pd.DataFrame,
    targets: Iterable[str],
    out_dir: str | Path,
    config: Config | None = None,
    report_path: str | Path | None = None,
    command: str = "distprivacy reproduce",
    data_label: str = "UCI Adult, 45,222 records",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the targets and write ``out_dir/*.csv``, ``*.png`` and the report.

    The output paths are checked before any computation (:func:`check_outputs`). Every file is
    written atomically, and ``out_dir`` is marked ``INCOMPLETE`` while they are written; a
    finished run leaves ``manifest.json`` (each file's SHA-256) instead
    (:class:`distprivacy.outputs.RunFolder`).

    Returns
    -------
    dict with ``frames``, ``timings`` (seconds per stage and ``total``) and ``report`` (path).
    """
    # This function runs the main paper's targets; ``all`` here means all of those.
    names = resolve_targets(["paper" if t.strip().lower() == "all" else t for t in targets])
    extra = [n for n in names if n in EXTRA_TARGETS]
    if extra:
        raise DistPrivacyError(
            f"{', '.join(extra)} is not a target of the main paper; run it with run_extra() "
            "or `distprivacy reproduce`"
        )
    cfg = config or Config()
    check_outputs(out_dir, report_path)
    out = Path(out_dir)
    report = Path(report_path) if report_path else out / "report.md"
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    repro = PaperReproduction(data, cfg, progress)
    timings["setup"] = time.perf_counter() - t0
    with warnings.catch_warnings():
        # The paper applies the classic rule at every ε; the report states the caveat once.
        warnings.filterwarnings("ignore", category=ClassicRuleWarning)
        frames = compute(repro, names, timings)

    def report_text(pngs: Mapping[str, Any]) -> str:
        header = {
            "command": command,
            "seconds": timings["total"],
            "seed": cfg.seed,
            "mode": "quick settings" if cfg.model_samples < 1000 else "the paper's settings",
            "data": data_label,
            "modelling_rows": len(repro.modelling),
            "model": f"{cfg.model_samples:,} Monte-Carlo subsets per θ with "
            f"{'exact finite-population' if cfg.moments == 'exact' else 'sample'} moments",
        }
        return build_report(frames, pngs, header)

    result = write_run(
        out,
        command,
        timings=timings,
        started=t0,
        figures=lambda folder: write_outputs(frames, folder, report.parent),
        report=report_text,
        report_path=report,
        stage="plots",
        clear=("report.md", report.resolve()),
    )
    return {"frames": frames, **result}
