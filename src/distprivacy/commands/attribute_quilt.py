"""``distprivacy attribute quilt``: the Attribute-Private Markov Quilt Mechanism (Alg. 2).

Thin: parse the options, build :class:`~distprivacy.attribute.markov_quilt.AttributeQuiltMechanism`,
print its calibration (and a release with ``--data``). Bad input raises DistPrivacyError.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import click

from distprivacy.commands import POSITIVE, POSITIVE_INT, SEED, allow_exact_option, dumps_json
from distprivacy.exceptions import DistPrivacyError, ExactReleaseError

if TYPE_CHECKING:  # the library is imported when the command runs, not for its --help
    from distprivacy.attribute.markov_quilt import QuiltCalibration, QuiltCandidate


def _pairs(items: tuple[str, ...], what: str, example: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, rest = item.partition("=")
        if not sep or not key.strip():
            raise DistPrivacyError(f"cannot read {what} {item!r}; write {example}")
        values = [v.strip() for v in rest.split(",") if v.strip()]
        out[key.strip()] = values
    return out


def _set(nodes: tuple[str, ...]) -> str:
    return "{" + ", ".join(nodes) + "}"


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    return "inf" if math.isinf(x) else f"{x:.4g}"


def _candidate_row(c: QuiltCandidate) -> str:
    e = None if c.max_influence is None else c.max_influence.value
    return (
        f"    {c.quilt.label():<28} {_set(c.quilt.nearby):<38} {_set(c.quilt.remote):<22} "
        f"{_num(e):>8} {_num(c.sensitivity):>9} {_num(c.scale):>9}  {c.status}"
    )


def format_calibration(cal: QuiltCalibration, thetas: list[str], candidates: bool) -> list[str]:
    """The calibration as printable lines."""
    lines = [
        "Attribute-Private Markov Quilt Mechanism — " + cal.theorem,
        f"query {cal.query} (A = {_set(cal.attributes)}), n = {cal.n_records}, "
        f"ε = {cal.epsilon:g}, Θ = {len(thetas)} network(s): {', '.join(thetas)}",
    ]
    for s in cal.secrets:
        c = s.chosen
        e = 0.0 if c.max_influence is None else c.max_influence.value
        lines.append(
            f"secret {s.secret}: b = {_num(s.scale)} from {c.quilt.label()}, "
            f"N = {_set(c.quilt.nearby)}, R = {_set(c.quilt.remote)}, "
            f"e_Θ(X_Q|X_{s.secret}) = {_num(e)}, Δ_{{A∩N}}F = {_num(c.sensitivity)} — {s.reason}"
        )
        if c.max_influence is not None and c.max_influence.secret_values is not None:
            w = c.max_influence
            lines.append(
                f"  max-influence attained under {w.network} at {s.secret} = "
                f"{w.secret_values[0]} vs {w.secret_values[1]}, φ_Q = {w.target_values}"
            )
        if candidates:
            lines.append(
                f"    {'quilt':<28} {'N (nearby)':<38} {'R (remote)':<22} "
                f"{'e_Θ':>8} {'Δ_{A∩N}F':>9} {'scale':>9}  status"
            )
            lines.extend(_candidate_row(x) for x in s.candidates)
    if cal.scale == 0:
        lines.append("noise: none — F(X) is released as it is")
    else:
        lines.append(
            f"noise: Laplace(0, {cal.scale:.6g}) (binding secret {cal.binding_secret}); "
            f"E|Z| = {cal.expected_abs_error:.6g}; Thm 4: |M(X) − F(X)| ≤ "
            f"{cal.accuracy(0.05):.6g} with probability 0.95"
        )
    lines.extend(f"warning: {w}" for w in cal.warnings)
    return lines


@click.command(name="quilt")
@click.option(
    "--network",
    required=True,
    help="Network file (JSON/TOML: domains, parents, cpts or theta=[...]) or 'school' "
    "(the built-in Example 1 of §5.1).",
)
@click.option(
    "--query", required=True, help="count:COND&COND, sum:COL[LOW,HIGH] or mean:COL[LOW,HIGH]."
)
@click.option("--secret", "secrets", multiple=True, required=True, help="Sensitive attribute.")
@click.option("--epsilon", type=POSITIVE, required=True, help="ε > 0.")
@click.option(
    "--n-records", type=POSITIVE_INT, default=None, help="n (taken from --data when given)."
)
@click.option("--data", type=click.Path(dir_okay=False), default=None, help="CSV to release.")
@click.option(
    "--quilt",
    "pinned",
    multiple=True,
    help="Pin a quilt: SECRET=NODE,NODE (e.g. income=gender).",
)
@click.option(
    "--secret-values", multiple=True, help="Protected values of a secret: SECRET=V1,V2,..."
)
@click.option(
    "--no-fallback",
    is_flag=True,
    help="Refuse instead of using the whole-network bound when no quilt has e_Θ < ε.",
)
@click.option("--seed", type=SEED, default=None, help="Seeded noise (experiments); default secure.")
@allow_exact_option
@click.option("--candidates/--no-candidates", default=True, help="List every quilt considered.")
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as JSON.")
def quilt(
    network: str,
    query: str,
    secrets: tuple[str, ...],
    epsilon: float,
    n_records: int | None,
    data: str | None,
    pinned: tuple[str, ...],
    secret_values: tuple[str, ...],
    no_fallback: bool,
    seed: int | None,
    allow_exact: bool,
    candidates: bool,
    as_json: bool,
) -> None:
    """Calibrate (and with --data, release) the Attribute-Private Markov Quilt Mechanism."""
    import pandas as pd

    from distprivacy.attribute.bayesnet import load_networks
    from distprivacy.attribute.markov_quilt import AttributeQuiltMechanism, school_networks

    if network == "school" and not Path(network).exists():
        nets = school_networks()
    else:
        nets = load_networks(network)
    frame = None
    if data is not None:
        path = Path(data)
        if not path.is_file():
            raise DistPrivacyError(f"data file {data!r} not found")
        try:
            frame = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise DistPrivacyError(f"cannot read data file {path.name!r}: {msg}") from None
        if n_records is not None and n_records != len(frame):
            raise DistPrivacyError(
                f"--n-records {n_records} disagrees with the {len(frame)} rows of {path.name!r}; "
                "drop --n-records"
            )
        n_records = len(frame)
    if n_records is None:
        raise DistPrivacyError("give --n-records N (the size of the dataset) or --data FILE.csv")
    mech = AttributeQuiltMechanism(
        nets,
        query=query,
        secrets=list(secrets),
        epsilon=epsilon,
        quilts=_pairs(pinned, "--quilt", "SECRET=NODE,NODE"),
        secret_values=_pairs(secret_values, "--secret-values", "SECRET=V1,V2"),
        fallback=not no_fallback,
    )
    cal = mech.calibrate(n_records)
    released = None
    if frame is not None:
        if cal.scale == 0 and not allow_exact:
            raise ExactReleaseError(
                "this calibration adds no noise (Laplace scale 0: the secrets do not influence "
                "the query), so the release would print the true value (cf. Theorem 4.4 of "
                "Chen & Ohrimenko 2023); pass --allow-exact to release it exactly"
            )
        released = mech.release(frame, random_state=seed, allow_exact=allow_exact)
    if as_json:
        out = cal.to_dict()
        out["theta"] = [n.name for n in nets]
        if released is not None:
            out["release"] = {"value": released.value, "secure": released.secure, "seed": seed}
        click.echo(dumps_json(out, ensure_ascii=False))
        return
    for line in format_calibration(cal, [n.name or str(k) for k, n in enumerate(nets)], candidates):
        click.echo(line)
    if released is not None:
        if not released.calibration.adds_noise:
            how = "no noise added"
        elif released.secure:
            how = "secure noise (OpenDP)"
        else:
            how = f"seeded noise, seed {seed}"
        click.echo(f"release: {released.value:.6g} ({how})")


__all__ = ["format_calibration", "quilt"]
