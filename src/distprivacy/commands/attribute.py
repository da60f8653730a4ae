"""``distprivacy attribute``: attribute privacy (Zhang, Ohrimenko & Cummings, FAccT 2022).

Thin: parse the options into a problem, call :mod:`distprivacy.attribute`, print.
"""

from __future__ import annotations

from typing import Any

import click

from distprivacy.checks import check_number
from distprivacy.commands import (
    POSITIVE,
    POSITIVE_INT,
    PROBABILITY_OPEN,
    SEED,
    allow_exact_option,
    dumps_json,
    parse_floats,
)
from distprivacy.exceptions import DistPrivacyError, ExactReleaseError


@click.group(name="attribute")
def attribute() -> None:
    """Attribute privacy: the attribute-private Gaussian and Markov quilt mechanisms."""


def _numbers(text: str, what: str) -> list[float]:
    return parse_floats(text, what, example="1.5,2")


def _matrix(text: str, what: str) -> list[list[float]]:
    """``"a,b;c,d"`` → [[a, b], [c, d]]."""
    return [_numbers(row, what) for row in text.split(";") if row.strip()]


def _range(text: str, what: str) -> float | list[float]:
    """``"3"`` → 3.0, ``"-24.5:-9"`` → [-24.5, -9.0]."""
    parts = text.split(":")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise DistPrivacyError(f"{what} must be a number or LOW:HIGH, got {text!r}") from None
    vals = [check_number(v, what) for v in vals]
    if len(vals) == 1:
        return vals[0]
    if len(vals) != 2:
        raise DistPrivacyError(f"{what} must be a number or LOW:HIGH, got {text!r}")
    return vals


def _keyed(items: tuple[str, ...], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise DistPrivacyError(
                f"{what} must look like ATTRIBUTE=VALUE or =LOW:HIGH, got {item!r}"
            )
        k, v = item.split("=", 1)
        out[k.strip()] = _range(v.strip(), what)
    return out


@attribute.command(name="gaussian")
@click.option("--problem", "problem_file", type=click.Path(), help="JSON or TOML problem file.")
@click.option("--sensitive", help="The sensitive attribute i (its mean/share is the secret).")
@click.option("--query", help="Attribute(s) whose means are released, comma-separated.")
@click.option("-n", "--records", "n", type=POSITIVE_INT, help="Number of records n.")
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    help="A secret value or interval of g_i, e.g. 0.5 or '(0.25,0.5)'; repeat (≥ 2).",
)
@click.option("--binary", is_flag=True, default=None, help="The sensitive column is 0/1.")
@click.option("--parameter-range", help="LOW:HIGH of the sensitive parameter φ_i over Θ.")
@click.option("--attributes", help="Attribute names, in the order of the covariance rows.")
@click.option(
    "--covariance",
    "covariances",
    multiple=True,
    help="A covariance matrix 'a,b;c,d' of one θ ∈ Θ; repeat for several θ.",
)
@click.option("--cov-low", help="Entry-wise lower bounds of the covariance, 'a,b;c,d'.")
@click.option("--cov-high", help="Entry-wise upper bounds of the covariance, 'a,b;c,d'.")
@click.option("--slope", "slopes", multiple=True, help="QUERY=LOW:HIGH range of V_ij/V_ii.")
@click.option(
    "--residual-variance",
    "residuals",
    multiple=True,
    help="QUERY=LOW:HIGH range of V_jj − V_ij²/V_ii (per record).",
)
@click.option("--epsilon", type=POSITIVE, help="ε > 0 (default 1).")
@click.option("--delta", type=PROBABILITY_OPEN, help="δ in (0, 1) (default 0.001).")
@click.option(
    "--rule", type=click.Choice(["exact", "classic"]), help="Calibration (default exact)."
)
@click.option(
    "--pair-distance",
    type=click.Choice(["sup", "centres"]),
    help="d(U) of interval secrets: sup |a − b| (default) or the centres' distance.",
)
@click.option(
    "--mechanism",
    type=click.Choice(["apgm", "wasserstein"]),
    default="apgm",
    show_default=True,
    help="Alg. 1 (Gaussian, (ε, δ)) or the Pufferfish Wasserstein Mechanism (Laplace, δ = 0).",
)
@click.option("--value", help="Release this F(X) (comma-separated for several statistics).")
@click.option("--seed", type=SEED, help="Seed for reproducible noise (default: secure noise).")
@allow_exact_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def gaussian(
    problem_file: str | None,
    sensitive: str | None,
    query: str | None,
    n: int | None,
    secrets: tuple[str, ...],
    binary: bool | None,
    parameter_range: str | None,
    attributes: str | None,
    covariances: tuple[str, ...],
    cov_low: str | None,
    cov_high: str | None,
    slopes: tuple[str, ...],
    residuals: tuple[str, ...],
    epsilon: float | None,
    delta: float | None,
    rule: str | None,
    pair_distance: str | None,
    mechanism: str,
    value: str | None,
    seed: int | None,
    allow_exact: bool,
    as_json: bool,
) -> None:
    """Calibrate (and with --value release) the Attribute-Private Gaussian Mechanism (Alg. 1)
    on multivariate Gaussian data (§4.2).

    Example (the paper's blood-pressure query):
    distprivacy attribute gaussian --sensitive gender --query bp -n 50 --binary
    --parameter-range 0.25:0.75 --secret '(0.25,0.5)' --secret '(0.5,0.75)'
    --slope bp=6:10 --residual-variance bp=100 --pair-distance centres --rule classic
    """
    from distprivacy.attribute.gaussian import GaussianProblem, read_problem_file

    raw: dict[str, Any] = read_problem_file(problem_file) if problem_file else {}
    cli: dict[str, Any] = {
        "sensitive": sensitive,
        "query": None if query is None else [q.strip() for q in query.split(",") if q.strip()],
        "n": n,
        "secrets": list(secrets) or None,
        "binary": binary,
        "parameter_range": None
        if parameter_range is None
        else _range(parameter_range, "--parameter-range"),
        "attributes": None
        if attributes is None
        else [a.strip() for a in attributes.split(",") if a.strip()],
        "covariances": [_matrix(c, "--covariance") for c in covariances] or None,
        "cov_low": None if cov_low is None else _matrix(cov_low, "--cov-low"),
        "cov_high": None if cov_high is None else _matrix(cov_high, "--cov-high"),
        "slopes": _keyed(slopes, "--slope") or None,
        "residual_variances": _keyed(residuals, "--residual-variance") or None,
        "epsilon": epsilon,  # the flags override the file's (ε, δ): the problem's target
        "delta": delta,
    }
    theta_keys = ("covariances", "cov_low", "cov_high", "slopes", "residual_variances")
    if any(cli[k] is not None for k in theta_keys):  # Θ on the command line replaces the file's
        for k in (*theta_keys, "means"):
            raw.pop(k, None)
    raw.update({k: v for k, v in cli.items() if v is not None})
    raw.setdefault("epsilon", 1.0)
    raw.setdefault("delta", 1e-3)
    problem = GaussianProblem.from_dict(raw)
    if mechanism == "wasserstein":
        cal: Any = problem.calibrate_wasserstein(epsilon=epsilon, pair_distance=pair_distance)
        stats = [f"mean({q})" for q in problem.query]
        out = {"framework": problem.framework.to_dict(), "statistics": stats, **cal.to_dict()}
        out["adds_noise"] = cal.adds_noise
    else:
        cal = problem.calibrate(rule=rule, pair_distance=pair_distance)  # the (ε, δ) of the flags
        out = {"framework": problem.framework.to_dict(), **cal.to_dict()}
    if value is not None:
        vals = _numbers(value, "--value")
        if not out.get("adds_noise", True) and not allow_exact:
            raise ExactReleaseError(
                "this calibration adds no noise (σ² = 0: the data's own variance already gives "
                "the guarantee, as in Theorem 4.4 of Chen & Ohrimenko 2023), so the release "
                "would print the true value; pass --allow-exact to release it exactly"
            )
        released = cal.release(vals, seed, allow_exact=allow_exact)
        # Never echo the true value (vals) beside the release.
        out["released"] = released.value if len(released.values) == 1 else released.values.tolist()
        out["secure_noise"] = released.secure
    if as_json:
        click.echo(dumps_json(out))
        return
    if mechanism == "wasserstein":
        _print_wasserstein(out, cal)
    else:
        _print(out)


def _print_wasserstein(out: dict[str, Any], cal: Any) -> None:
    fw = out["framework"]
    click.echo(
        f"Pufferfish Wasserstein Mechanism ({out['theorem']}), ε = {out['epsilon']:g}, δ = 0"
    )
    pairs = "; ".join(f"{a} vs {b}" for a, b in fw["pairs"])
    click.echo(f"  protects      {', '.join(fw['sensitive'])}: {pairs}  (n = {fw['n']})")
    click.echo(f"  releases      {', '.join(out['statistics'])}")
    click.echo(f"  sensitivity   W = sup W∞ = {out['sensitivity']:.6g} (worst: {out['worst'][0]})")
    click.echo(
        f"  noise         Laplace, scale b = W/ε = {out['laplace_scale']:.6g} per coordinate"
    )
    click.echo(f"  E‖error‖₂     {out['expected_error']:.6g}")
    click.echo(f"  95% accuracy  α = {cal.accuracy(0.05):.6g} per coordinate")
    _print_release(out)


def _print(out: dict[str, Any]) -> None:
    fw = out["framework"]
    click.echo(
        f"Attribute-Private Gaussian Mechanism ({out['theorem']}), rule {out['rule']}, "
        f"ε = {out['epsilon']:g}, δ = {out['delta']:g}"
    )
    click.echo(
        f"  protects      {out['binding_attribute']}: "
        + "; ".join(f"{a} vs {b}" for a, b in fw["pairs"])
        + f"  (n = {fw['n']})"
    )
    click.echo(f"  releases      {', '.join(out['statistics'])}")
    click.echo(f"  sensitivity   Δ = {out['sensitivity']:.6g}")
    click.echo(f"  min cond. var {out['conditional_variance']:.6g}")
    click.echo(
        f"  noise var.    σ² = {out['noise_variance']:.6g}"
        + ("" if out["adds_noise"] else "  (no noise: F(X) is released unchanged)")
    )
    click.echo(f"  E|error|      {out['expected_error']:.6g}")
    click.echo(f"  95% accuracy  α = {out['accuracy_beta_0.05']:.6g} (Thm 2, β = 0.05)")
    click.echo(
        f"  guarantee     μ = {out['mu']:.6g}-GDP; exact δ at ε: {out['delta_achieved']:.3g}"
    )
    for w in out["warnings"]:
        click.echo(f"  warning: {w}")
    _print_release(out)


def _print_release(out: dict[str, Any]) -> None:
    if "released" in out:
        rel = out["released"]
        rel = rel if isinstance(rel, list) else [rel]
        if not out["adds_noise"]:
            src = "no noise added"
        elif out["secure_noise"]:
            src = "secure noise"
        else:
            src = "seeded noise, not for real releases"
        click.echo(f"  released      {', '.join(f'{r:.6g}' for r in rel)}  ({src})")


from distprivacy.commands.attribute_quilt import quilt  # noqa: E402

attribute.add_command(quilt)
