"""``distprivacy local``: local distribution privacy (Kawamoto & Murakami, ESORICS 2019).

Thin commands over :mod:`distprivacy.local`: ``local city`` writes a generated pair of location
distributions, ``local distp`` computes the exact DistP of a mechanism for a pair (read from a
CSV or generated from ``--seed``) with its utility, theorem guarantee and Bayes-factor reading.
"""

from __future__ import annotations

import math
from pathlib import Path

import click
import numpy as np

from distprivacy._json import number
from distprivacy.checks import check_number
from distprivacy.commands import (
    FLOAT,
    INTEGER,
    SEED,
    Number,
    dumps_json,
    parse_floats,
)
from distprivacy.exceptions import DistPrivacyError
from distprivacy.outputs import check_output_file, write_csv

MECHANISM_NAMES = ("rr", "laplace", "gaussian", "exponential", "tupling")


@click.group(name="local")
def local() -> None:
    """Local distribution privacy: obfuscation mechanisms and their exact DistP."""


def _read_pair(path: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns ``lambda0`` and ``lambda1`` of a CSV (as written by ``local city``): one row
    per cell, every cell a finite number ≥ 0 (checked by :func:`distprivacy.files.
    read_numeric_csv`)."""
    from distprivacy.files import read_numeric_csv

    cols = read_numeric_csv(
        path,
        ("lambda0", "lambda1"),
        "pair file",
        rows=size,
        minimum=0.0,
        rows_reason=f"the grid has {size} cells",
        rows_fix="give one row per cell (row-major) or change --grid",
        fix="write it with 'distprivacy local city --out FILE' or add columns lambda0,lambda1",
    )
    return cols["lambda0"], cols["lambda1"]


def _mechanism(name: str, param: float, domain, k: int, base_epsilon: float):
    from distprivacy.local import mechanisms as m

    if name == "rr":
        return m.RandomizedResponse(domain.size, param)
    if name == "laplace":
        return m.SnappedLaplace(domain, param)
    if name == "gaussian":
        return m.SnappedGaussian(domain, param)
    if name == "exponential":
        return m.ExponentialMechanism(domain, param)
    base = (
        m.FiniteMechanism(np.eye(domain.size), name="identity")
        if math.isinf(base_epsilon)
        else m.RandomizedResponse(domain.size, base_epsilon)
    )
    return m.TuplingMechanism(base, k)


def _theorem(name: str, mech, lam0, lam1, domain, delta: float) -> dict:
    """The theorem-based guarantee for the pair
    (:func:`distprivacy.local.calibration.theorem_guarantee`), as plain data."""
    from distprivacy.local.calibration import theorem_guarantee

    if name == "gaussian":
        mu = domain.diameter / mech.sigma
        if not math.isfinite(mu * mu):
            raise DistPrivacyError(
                f"--param {mech.sigma:g} is too small a σ for this grid: μ = diam/σ = {mu:.3g} "
                "and its DistP ε overflow double precision; give σ ≥ 1e-150 × the grid's diameter"
            )
    return theorem_guarantee(mech, (lam0, lam1), delta).to_dict()


_GRID = click.option(
    "--grid",
    "side",
    type=Number(integer=True, low=2),
    default=16,
    show_default=True,
    help="Grid side.",
)


@local.command("city")
@_GRID
@click.option("--seed", type=SEED, default=0, show_default=True, help="Generator seed.")
@click.option("--out", "out", type=click.Path(dir_okay=False), required=True, help="CSV path.")
def city(side: int, seed: int, out: str) -> None:
    """Write a generated pair of group location distributions (clustered_city) as CSV."""
    import pandas as pd

    check_output_file(out, option="--out")  # a directory or a path ending in / is refused

    from distprivacy.local.domains import clustered_city, grid

    g = grid(side)
    lam0, lam1 = clustered_city(g, random_state=seed)
    row, col = np.divmod(np.arange(g.size), side)
    frame = pd.DataFrame({"cell": np.arange(g.size), "row": row, "col": col})
    frame["lambda0"], frame["lambda1"] = lam0, lam1
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_csv(frame, out, index=False)  # atomically
    click.echo(f"Wrote {out}: {side}×{side} grid, seed {seed}")


@local.command("distp")
@click.option(
    "--mechanism",
    "name",
    type=click.Choice(MECHANISM_NAMES),
    default="rr",
    show_default=True,
    help="Mechanism (tupling: over RR with --base-epsilon, or no noise if omitted).",
)
@click.option(
    "--param",
    type=FLOAT,
    default=None,
    help="ε of rr/laplace/exponential (per cell unit), σ of gaussian; unused for tupling.",
)
@click.option("--k", type=INTEGER, default=10, show_default=True, help="Dummies (tupling).")
@click.option("--base-epsilon", type=FLOAT, default=None, help="RR ε of the tupling base.")
@_GRID
@click.option("--pair", type=click.Path(dir_okay=False), default=None, help="CSV of λ0, λ1.")
@click.option("--delta", type=FLOAT, default=1e-3, show_default=True)
@click.option(
    "--at", "at", default=None, help="Also print the profile δ(ε) at these ε, e.g. 0.1,0.5,1."
)
@click.option(
    "--samples",
    type=Number(integer=True, low=2),
    default=400_000,
    show_default=True,
    help="Monte Carlo N.",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="City and MC seed.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def distp(
    name: str,
    param: float | None,
    k: int,
    base_epsilon: float | None,
    side: int,
    pair: str | None,
    delta: float,
    at: str | None,
    samples: int,
    seed: int,
    as_json: bool,
) -> None:
    """Exact DistP ε(δ) of a mechanism for a pair of location distributions, with SQL."""
    from distprivacy.local.distp import distp_epsilon, distp_profile
    from distprivacy.local.domains import clustered_city, grid
    from distprivacy.local.mechanisms import check_k
    from distprivacy.local.utility import bayes_factor_reading, service_quality_loss

    g = grid(side)
    if name != "tupling" or base_epsilon is None:  # every transition matrix but RR's lifting
        from distprivacy.local.mechanisms import check_matrix_memory

        check_matrix_memory(g.size, f"the {name} mechanism")  # before generating the city
    if pair is None:
        lam0, lam1 = clustered_city(g, random_state=seed)
        source = f"clustered_city(grid {side}, seed {seed})"
    else:
        lam0, lam1 = _read_pair(pair, g.size)
        source = pair
    if name == "tupling":
        check_k(k)
        param_v = math.nan
    elif param is None:
        raise DistPrivacyError(f"--param is required for {name} (ε, or σ for gaussian)")
    else:
        param_v = param
    eb = math.inf if base_epsilon is None else base_epsilon
    mech = _mechanism(name, param_v, g, k, eb)
    res = distp_epsilon(mech, lam0, lam1, delta, n_samples=samples, random_state=seed)
    profile = None
    if at is not None:
        points = parse_floats(at, "--at", example="0.1,0.5,1")
        if not points:
            raise DistPrivacyError(f"cannot read --at {at!r}; give numbers like 0.1,0.5,1")
        points = [check_number(x, "--at", low=0) for x in points]
        profile = distp_profile(mech, lam0, lam1, points, n_samples=samples, random_state=seed)
    pi = (lam0 + lam1) / 2
    out = {
        "mechanism": getattr(mech, "name", name),
        "pair": source,
        "delta": delta,
        **{f"distp_{key}": v for key, v in res.to_dict().items() if key != "delta"},
        "sql_km": service_quality_loss(mech, pi, g),
        "theorem": _theorem(name, mech, lam0, lam1, g, delta),
        "bayes_factor": bayes_factor_reading(res.guaranteed, delta)["text"],
    }
    if profile is not None:
        out["profile"] = profile.to_dict()
    if as_json:
        click.echo(dumps_json(out, indent=None))
        return
    click.echo(f"{out['mechanism']} on {source}")
    eps_txt = f"ε = {res.epsilon:.6g}"
    if res.epsilon_upper is not None:
        eps_txt += f" (estimate; certified ε = {res.epsilon_upper:.6g} at {res.confidence:g})"
    click.echo(f"  DistP at δ = {delta:g}: {eps_txt}  [{res.method}]")
    click.echo(f"  SQL: {out['sql_km']:.4g} (grid units)")
    th = out["theorem"]
    th_eps = number(th["epsilon"])
    click.echo(f"  theorem: ε = {th_eps:.4g}, δ = {th['delta']:g}  ({th['theorem']})")
    click.echo(f"  Bayes factor: {out['bayes_factor']}")
    if profile is not None:
        for i, (e, d) in enumerate(zip(profile.epsilons, profile.delta, strict=True)):
            extra = ""
            if profile.delta_upper is not None:
                extra = f"  (≤ {profile.delta_upper[i]:.4g} at {profile.confidence:g})"
            click.echo(f"  δ({e:g}) = {d:.6g}{extra}  [{profile.method}]")
