"""How ``calibrate``, ``release`` and ``audit`` print: number formats, the noise in a few
words, the header naming what is protected, and the per-statistic table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from distprivacy.mechanisms import Calibration
    from distprivacy.models import FModel


def fmt(x: float) -> str:
    """Four significant digits; scientific from 1e5 on."""
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


def short_theorem(text: str) -> str:
    """'Chen & Ohrimenko 2023, Theorem 4.5 (…)' → 'Thm 4.5'; other sources kept short."""
    head = text.split(" (")[0]
    head = head.replace("Chen & Ohrimenko 2023, ", "").replace("Theorem", "Thm")
    return head.replace("Algorithm", "Alg").replace("Corollary", "Cor")


def noise_summary(c: Calibration) -> str:
    """The noise in a few words: family, scale (or its range) and directions."""
    n = c.noise
    if n.family == "none" or n.scales.size == 0:
        return "none"
    what = "σ" if n.family == "gaussian" else "b"
    d = n.scales.size
    square = n.basis.shape == (n.dim, n.dim)
    dirs = "all coords" if square and np.allclose(n.basis, np.eye(n.dim)) else f"{d} dir."
    if np.allclose(n.scales, n.scales[0]):
        return f"{n.family} {what}={fmt(n.scales[0])} on {dirs}"
    return f"{n.family} {what}∈[{fmt(n.scales.min())}, {fmt(n.scales.max())}] on {dirs}"


def per_statistic_table(cals: list[Calibration]) -> Table:
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
            cells.append(f"{fmt(sd)} ({r})")
        table.add_row(name, *cells)
    return table


def print_header(console: Console, model: FModel, info: dict[str, Any], p: dict[str, Any]) -> None:
    """What is protected (or the model file), the statistics and the privacy goal."""
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


def print_not_applicable(console: Console, skipped: dict[str, str]) -> None:
    """The mechanisms left out, each with its reason."""
    if skipped:
        console.print("[bold]Not applicable[/]")
        for reason in skipped.values():
            console.print(f"  {reason}", markup=False)  # e.g. "pip install '…[optimal]'"


def model_dict(model: FModel) -> dict[str, Any]:
    """The fitted model's θ, means, covariances and pairs, for --json output."""
    return {
        "method": model.method_,
        "thetas": [model.theta_label(t) for t in range(len(model.thetas_))],
        "means": model.means_.tolist(),
        "covariances": model.covariances_.tolist(),
        "pairs": [[model.theta_label(i), model.theta_label(j)] for i, j in model.pair_indices_],
    }


def spec_of(model: Any, plan_spec: dict[str, Any] | None = None) -> Any:
    """The protection spec a calibration was made for: the model's, or a plan's (rebuilt)."""
    spec = getattr(model, "spec_", None)
    if spec is None and plan_spec:
        from distprivacy.spec import ProtectionSpec

        spec = ProtectionSpec(
            plan_spec["property"],
            n=int(plan_spec["n"]),
            values=plan_spec["values"],
            pairs=[tuple(x) for x in plan_spec["pairs"]],
        )
    return spec


def print_statement(console: Console, text: str) -> None:
    """The words a steward signs, first, in bold."""
    console.print(f"[bold]{text}[/]")
