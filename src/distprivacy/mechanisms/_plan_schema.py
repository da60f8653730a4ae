"""The strict schema of a plan file (issue 21.3), checked before anything in it is used.

Checked even when the digest (or the seal) is valid — a digest says the content was not changed
after it was written, not that it is sane: types (an integer is an integer, never ``true`` or
``2.0``; a list is a list, never a string), ranges (0 ≤ δ < 1, ε > 0, p in [0, 1]), shapes
(every mean has one entry per statistic, every covariance and the noise covariance are m × m,
the noise basis is m × d with d scales), finiteness (no NaN or ±inf anywhere, nested or not),
depth (at most :data:`~distprivacy.files.MAX_DEPTH` levels, walked without recursion), the
mechanism (a known one, the calibration's; ``NoNoise`` never with noise).
Every refusal is one line naming the key path (``calibration.delta``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from distprivacy.files import (
    MAX_DEPTH,
    AnyOf,
    Array,
    Custom,
    Field,
    Int,
    InvalidFileError,
    Label,
    ListOf,
    Number,
    Pair,
    Str,
    Table,
    show,
    validate,
)
from distprivacy.files import _Ctx as Ctx

__all__ = ["check_plan_schema"]

_ANY_KINDS = ("null", "bool", "number", "str", "dict", "list")


def _plain(value: Any, path: str, ctx: Ctx) -> Any:
    """Any JSON value whose numbers are finite, at most MAX_DEPTH deep (no recursion)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        v, p, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ctx.fail(p, f"is nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, bool) or v is None or isinstance(v, str):
            continue
        if isinstance(v, int | float):
            if isinstance(v, float) and not math.isfinite(v):
                raise ctx.fail(p, f"must be a finite number, got {show(v)}")
            continue
        if isinstance(v, Mapping):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise ctx.fail(p, f"has a key {k!r} that is not text")
                stack.append((x, f"{p}.{k}" if p else k, depth + 1))
            continue
        if isinstance(v, list | tuple):
            stack.extend((x, f"{p}[{i}]", depth + 1) for i, x in enumerate(v))
            continue
        raise ctx.fail(p, f"must be plain JSON data, got {type(v).__name__}")
    return value


PLAIN = Custom(_plain, "plain JSON data", _ANY_KINDS)
NULL = Custom(lambda v, p, c: None, "null", ("null",))


def _optional(schema: Any) -> AnyOf:
    return AnyOf(NULL, schema, noun=f"{schema.describe()} or null")


def _delta(value: Any, path: str, ctx: Ctx) -> float:
    x = Number(0.0, 1.0).check(value, path, ctx)
    if x >= 1.0:
        raise ctx.fail(path, f"must be a probability δ with 0 ≤ δ < 1, got {show(value)}")
    return x


DELTA = Custom(_delta, "a δ with 0 ≤ δ < 1", ("number",))
STATS = ListOf(Label(), min_len=1, length="m", noun="statistic names", example='["mean(age)"]')

SPEC = Table(
    {
        "property": Field(Str(), required=True),
        "n": Field(Int(1), required=True),
        "values": Field(ListOf(Number(0.0, 1.0), min_len=2, noun="proportions"), required=True),
        "counts": Field(ListOf(Int(0), min_len=2, noun="counts"), required=True),
        "pairs": Field(ListOf(Pair(Number(0.0, 1.0)), min_len=1, noun="pairs"), required=True),
    },
    noun="a protection spec (property, n, values, counts, pairs)",
)

THETA = Table(
    {
        "label": Field(Label(), required=True),
        "mean": Field(Array(["m"], noun="a list of m finite numbers"), required=True),
        "covariance": Field(Array(["m", "m"], noun="an m×m matrix"), required=True),
    },
    noun="a θ (label, mean, covariance)",
)

MODEL = Table(
    {
        "statistics": Field(STATS, required=True),
        "thetas": Field(ListOf(THETA, min_len=2, noun="θs"), required=True),
        "pairs": Field(ListOf(Pair(Label()), min_len=1, noun="pairs"), required=True),
        "record_sensitivities": Field(_optional(Array(["m"], minimum=0.0))),
        "n": Field(_optional(Int(1))),
        "method": Field(_optional(Str())),
    },
    noun="a fitted model (statistics, thetas, pairs, …)",
)


def _basis(value: Any, path: str, ctx: Ctx) -> Any:
    """An m×d matrix of finite numbers; d = 0 (no noise direction) is allowed."""
    if not isinstance(value, list) or not all(isinstance(r, list) for r in value):
        raise ctx.fail(path, f"must be an m×d matrix (a list of rows), got {show(value)}")
    ctx.bind("m", len(value), path, "rows")
    widths = {len(r) for r in value}
    if len(widths) > 1:
        raise ctx.fail(path, "has rows of different lengths")
    ctx.bind("d", widths.pop() if widths else 0, path, "columns")
    for i, row in enumerate(value):
        for j, x in enumerate(row):
            Number().check(x, f"{path}[{i}][{j}]", ctx)
    return value


def _scales(value: Any, path: str, ctx: Ctx) -> Any:
    if not isinstance(value, list):
        raise ctx.fail(path, f"must be a list of scales ≥ 0, got {show(value)}")
    ctx.bind("d", len(value), path, "scales")
    for i, x in enumerate(value):
        Number(0.0).check(x, f"{path}[{i}]", ctx)
    return value


NOISE = Table(
    {
        "family": Field(Str(["gaussian", "laplace", "none"]), required=True),
        "basis": Field(Custom(_basis, "an m×d matrix", ("list",)), required=True),
        "scales": Field(Custom(_scales, "a list of d scales ≥ 0", ("list",)), required=True),
        "factor": Field(_optional(Array(["m", None], noun="a matrix with m rows"))),
    },
    noun="a noise (family, basis, scales, factor)",
)

_CAL_TYPED = {
    "name": Field(Str(), required=True),
    "theorem": Field(Str(), required=True),
    "epsilon": Field(Number(positive=True), required=True),
    "delta": Field(DELTA, required=True),
    "noise": Field(NOISE, required=True),
    "statistics": Field(STATS, required=True),
    "rule": Field(_optional(Str(["exact", "classic"]))),
    "noise_covariance": Field(_optional(Array(["m", "m"], noun="an m×m matrix"))),
    "mu": Field(_optional(Number(0.0))),
    "max_attack_accuracy": Field(_optional(Number(0.5, 1.0))),
    "delta_achieved": Field(_optional(Number(0.0, 1.0))),
    "n": Field(_optional(Int(1))),
    "verified": Field(_optional(Custom(lambda v, p, c: v, "true or false", ("bool",)))),
}
_CAL_KEYS = (
    "noise_family", "noise_directions", "noise_scales", "expected_l2_error",
    "expected_squared_error", "sensitivity", "sensitivity_label", "assumptions", "warnings",
    "details", "accounting", "per_statistic", "basis", "utility_scaled", "guarantee",
    "warning_codes", "statistic_scales", "statistic_levels",
)  # fmt: skip
CALIBRATION = Table(
    {**_CAL_TYPED, **{k: Field(PLAIN) for k in _CAL_KEYS}},
    noun="a calibration",
)


def _plan_schema() -> Table:
    from distprivacy.mechanisms import MECHANISMS

    return Table(
        {
            "format": Field(Str(["distprivacy-plan"]), required=True),
            "format_version": Field(Int(1, 1), required=True),
            "library_version": Field(Str(allow_empty=True), required=True),
            "created": Field(Str(allow_empty=True), required=True),
            "mechanism": Field(Str(list(MECHANISMS)), required=True),
            "spec": Field(_optional(SPEC), required=True),
            "query": Field(_optional(Str()), required=True),
            "statistics": Field(STATS, required=True),
            "columns": Field(ListOf(Str(), noun="column names"), required=True),
            "modelling": Field(PLAIN, required=True),
            "model": Field(MODEL, required=True),
            "data_fingerprint": Field(_optional(Str()), required=True),
            "calibration": Field(CALIBRATION, required=True),
            "guarantee": Field(PLAIN, required=True),
            "assumptions": Field(ListOf(Str(allow_empty=True), noun="assumptions"), required=True),
            "digest": Field(Str(), required=True),
            "seal": Field(Str()),
        },
        noun="a distprivacy plan",
    )


def check_plan_schema(raw: Any, source: str) -> None:
    """Raise :class:`~distprivacy.files.InvalidFileError` (one line, naming the key path)
    unless ``raw`` is a well-formed plan (module docstring)."""
    validate(raw, _plan_schema(), source)
    ctx = Ctx(source)
    if not isinstance(raw["modelling"], Mapping):
        raise ctx.fail("modelling", f"must be an object, got {show(raw['modelling'])}")
    cal = raw["calibration"]
    if cal["name"] != raw["mechanism"]:
        raise ctx.fail(
            "calibration.name", f"is {cal['name']!r} but the plan's mechanism is "
            f"{raw['mechanism']!r}"
        )  # fmt: skip
    adds_noise = cal["noise"]["family"] != "none" and any(s > 0 for s in cal["noise"]["scales"])
    if raw["mechanism"] == "NoNoise" and adds_noise:
        raise ctx.fail("mechanism", 'is "NoNoise" but the calibration adds noise')
    if list(raw["statistics"]) != list(cal["statistics"]) or list(raw["statistics"]) != list(
        raw["model"]["statistics"]
    ):
        raise ctx.fail("statistics", "differ from the calibration's or the model's statistics")
    spec = raw["spec"]
    if spec is None and raw["query"] is not None:
        raise ctx.fail(
            "spec", "is null but the plan has a query: a plan of statistics of data must name "
            "its protected property"
        )  # fmt: skip
    if spec is not None:
        if len(spec["counts"]) != len(spec["values"]):
            raise ctx.fail("spec.counts", "must have one count per value")
        labels = {str(t["label"]) for t in raw["model"]["thetas"]}
        if len(labels) != len(raw["model"]["thetas"]):
            raise ctx.fail("model.thetas", "repeat a label")
        n_model = raw["model"].get("n")
        if n_model is not None and n_model != spec["n"]:
            raise ctx.fail("model.n", f"is {n_model} but spec.n is {spec['n']}")


def plan_schema_error(e: InvalidFileError) -> str:
    """The one-line message of a schema refusal."""
    return (str(e).splitlines() or ["the plan is malformed"])[0]
