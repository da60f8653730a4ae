"""Every user-written file is validated strictly at the boundary (issue 13).

For each kind of file — model files (JSON and TOML), attribute problem files, Bayesian-network
files, pair CSVs, model populations (.npz) and data tables — a grid of mutations of a valid file
is generated (wrong types, missing keys, extra keys, bool for int, strings for lists, ragged
rows, deep nesting, huge dimensions, corrupt archives) and each mutated file is checked twice:

* through the Python API: it raises a :class:`DistPrivacyError` subclass with a one-line
  message naming the file, never a raw KeyError / TypeError / ValueError / numpy error;
* through the command line in-process (``distprivacy.cli.main``): exit status 2, exactly one
  line on stderr starting ``error:``, no traceback.

A few cases run the installed console script (``python3 -m distprivacy``) in a subprocess.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import distprivacy
from distprivacy import files
from distprivacy.attribute.bayesnet import load_networks, network_from_dict
from distprivacy.attribute.gaussian import GaussianProblem
from distprivacy.cli import main
from distprivacy.datasets import load_table
from distprivacy.exceptions import DistPrivacyError
from distprivacy.files import InvalidFileError, read_mapping_file
from distprivacy.inference.population import ModelPopulation
from distprivacy.models import load_model_file, model_file_memory

# ---------------------------------------------------------------------------------------------
# Valid files
# ---------------------------------------------------------------------------------------------

MODEL: dict[str, Any] = {
    "statistics": ["x", "y"],
    "thetas": [
        {
            "label": "a",
            "mean": [100, 101],
            "covariance": [[22, -6], [-6, 13]],
            "samples": [[100.5, 101.0], [99.0, 102.5]],
        },
        {
            "label": "b",
            "mean": [99, 102],
            "covariance": [[22, -6], [-6, 13]],
            "samples": [[99.5, 101.0], [98.0, 103.0]],
        },
    ],
    "pairs": [["a", "b"]],
    "record_sensitivities": [1.0, 2.0],
    "n": 100,
}
MODEL_REQUIRED = [("pairs",), ("thetas",)] + [
    ("thetas", k, f) for k in (0, 1) for f in ("label", "mean", "covariance")
]
MODEL_TABLES = [(), ("thetas", 0), ("thetas", 1)]

PROBLEM_SLOPES: dict[str, Any] = {
    "sensitive": "gender",
    "query": "blood_pressure",
    "n": 50,
    "binary": True,
    "parameter_range": [0.25, 0.75],
    "secrets": ["(0.25,0.5)", "(0.5,0.75)"],
    "slopes": {"blood_pressure": [6, 10]},
    "residual_variances": {"blood_pressure": 100},
    "epsilon": 1,
    "delta": 0.001,
    "rule": "classic",
    "pair_distance": "centres",
}
PROBLEM_COV: dict[str, Any] = {
    "sensitive": "gender",
    "query": ["w"],
    "n": 10,
    "secrets": ["(0,0.5)", "(0.5,1)"],
    "pairs": [[0, 1]],
    "binary": True,
    "attributes": ["gender", "w"],
    "covariances": [[0.25, 0.5], [0.5, 4.0]],
    "means": [0.5, 1.0],
    "epsilon": 0.5,
    "delta": 1e-4,
}
PROBLEM_REQUIRED = [("sensitive",), ("query",), ("n",), ("secrets",)]

NETWORKS: dict[str, Any] = {
    "domains": {"g": [0, 1], "h": [60, 65, 70]},
    "parents": {"h": ["g"]},
    "theta": [
        {"name": "A", "cpts": {"g": [0.5, 0.5], "h": [[0.2, 0.3, 0.5], [0.5, 0.3, 0.2]]}},
        {
            "name": "B",
            "cpts": {
                "g": [0.4, 0.6],
                "h": {"discretized_normal": {"intercept": 70, "coefficients": {"g": -8}, "sd": 3}},
            },
        },
    ],
}
NETWORK_ONE: dict[str, Any] = {
    "name": "one",
    "domains": {"g": [0, 1], "h": ["lo", "hi"]},
    "parents": {"h": "g"},
    "cpts": {"g": [0.5, 0.5], "h": [[0.9, 0.1], [0.2, 0.8]]},
}
NETWORK_REQUIRED = [("domains",), ("theta", 0, "cpts"), ("theta", 1, "cpts")]
NETWORK_TABLES = [(), ("theta", 0), ("theta", 1), ("theta", 1, "cpts", "h", "discretized_normal")]

POPULATION_HEADER: dict[str, Any] = {
    "format": "distprivacy.ModelPopulation",
    "version": 1,
    "n_layers": 2,
    "activation": "relu",
    "meta": {"label": 0, "per_model": {"seed": [1, 2, 3]}},
}

PAIR_CSV = "lambda0,lambda1\n0.25,0.4\n0.25,0.2\n0.25,0.2\n0.25,0.2\n"

# The command line that reads each kind of file (FILE is replaced by the path).
CLI = {
    "model": ["calibrate", "--model", "FILE", "--mechanism", "ExpM-G"],
    "problem": ["attribute", "gaussian", "--problem", "FILE"],
    "network": [
        *("attribute", "quilt", "--network", "FILE", "--query", "count:h>60"),
        *("--secret", "g", "--epsilon", "1", "--n-records", "10"),
    ],
    "pair": ["local", "distp", "--grid", "2", "--pair", "FILE", "--param", "1"],
    "population": ["models", "info", "FILE"],
    "table": ["calibrate", "--data", "FILE", "--statistics", "mean:age", "--protect", "x>1"],
}


# ---------------------------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------------------------

WRONG: dict[str, Any] = {
    "true": True,
    "int": 3,
    "float": 2.5,
    "string": "xy",
    "null": None,
    "empty list": [],
    "list of string": ["ab"],
    "nested": [[1, "a"]],
    "object": {"k": 1},
}


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "str"
    return "list" if isinstance(v, list) else "dict"


def _nodes(doc: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for k, v in enumerate(doc):
            yield from _nodes(v, (*path, k))


def _set(doc: Any, path: tuple, value: Any) -> Any:
    out = copy.deepcopy(doc)
    if not path:
        return value
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _delete(doc: Any, path: tuple) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    return out


def _name(path: tuple) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".") or "/"


def mutations(
    doc: dict[str, Any],
    *,
    required: list[tuple],
    tables: list[tuple],
    integers: frozenset[str] = frozenset(),
    accepted: frozenset[str] = frozenset(),
) -> list[tuple[str, Any]]:
    """Mutated copies of a valid document, each named: every node replaced by a value of
    another kind (bool for int, string for list, null, …; a fraction where ``integers`` names
    an integer), every required key removed, an unknown key in every object with known keys,
    every matrix made ragged and flattened, the whole nested deeper than the limit.
    ``accepted`` names the mutations that are legitimately valid (each is checked to load in
    :func:`test_accepted_mutations_load`)."""
    out: list[tuple[str, Any]] = []
    for path, node in _nodes(doc):
        if not path:
            continue
        for label, wrong in WRONG.items():
            if _kind(wrong) == _kind(node) and not (label == "float" and _name(path) in integers):
                continue
            out.append((f"{_name(path)}={label}", _set(doc, path, wrong)))
        if isinstance(node, list) and node and all(isinstance(r, list) and r for r in node):
            ragged = copy.deepcopy(node)
            ragged[-1] = ragged[-1][:-1] or [[]]
            out.append((f"{_name(path)} ragged", _set(doc, path, ragged)))
            flat = [x for row in node for x in row]
            out.append((f"{_name(path)} flattened", _set(doc, path, flat)))
    for path in required:
        out.append((f"{_name(path)} missing", _delete(doc, path)))
    for path in tables:
        bad = _set(doc, (*path, "sampels"), [1]) if path else {**doc, "sampels": [1]}
        out.append((f"{_name(path)} unknown key", bad))
    deep: Any = 1
    for _ in range(files.MAX_DEPTH + 10):
        deep = [deep]
    out.append(("deeply nested", {**doc, next(iter(doc)): deep}))
    return [(n, d) for n, d in out if n not in accepted]


# ---------------------------------------------------------------------------------------------
# Checking one file both ways
# ---------------------------------------------------------------------------------------------


def assert_refused(api: Callable[[], Any], file: Path, kind: str, capsys) -> str:
    """The Python API raises a DistPrivacyError naming the file in one line, and the command
    line exits 2 with one ``error:`` line and no traceback. Returns the message."""
    with pytest.raises(DistPrivacyError) as info:
        api()
    message = str(info.value)
    assert "\n" not in message, message
    assert file.name in message, message
    capsys.readouterr()
    args = [file.as_posix() if a == "FILE" else a for a in CLI[kind]]
    rc = main(args)
    cap = capsys.readouterr()
    assert rc == 2, (args, cap.out, cap.err)
    assert "Traceback" not in cap.err + cap.out
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), cap.err
    return message


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, int | float | str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


def to_toml(doc: dict[str, Any]) -> str | None:
    """A TOML text for a document (inline tables and arrays); None when TOML cannot say it
    (null)."""
    if any(node is None for _, node in _nodes(doc)):
        return None
    return "".join(f"{json.dumps(k)} = {_toml_value(v)}\n" for k, v in doc.items())


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DISTPRIVACY_DATA", str(tmp_path / "no-adult"))


# ---------------------------------------------------------------------------------------------
# The valid files are valid (so that every refusal below is due to its mutation)
# ---------------------------------------------------------------------------------------------


def test_valid_files_load(tmp_path, capsys):
    (tmp_path / "m.json").write_text(json.dumps(MODEL))
    (tmp_path / "m.toml").write_text(to_toml(MODEL) or "")
    for f in ("m.json", "m.toml"):
        model = load_model_file(tmp_path / f)
        assert model.statistic_names_ == ("x", "y") and model.n_ == 100
        assert [s.shape for s in model.samples_] == [(2, 2), (2, 2)]
    for raw in (PROBLEM_SLOPES, PROBLEM_COV):
        (tmp_path / "p.json").write_text(json.dumps(raw))
        assert GaussianProblem.from_file(str(tmp_path / "p.json")).calibrate().sensitivity > 0
    (tmp_path / "n.json").write_text(json.dumps(NETWORKS))
    assert [n.name for n in load_networks(tmp_path / "n.json")] == ["A", "B"]
    assert network_from_dict(NETWORK_ONE).domains["h"] == ("lo", "hi")
    for kind, name, text in (
        ("model", "m.json", None),
        ("problem", "p.json", json.dumps(PROBLEM_COV)),
        ("network", "n.json", None),
        ("pair", "pair.csv", PAIR_CSV),
    ):
        if text is not None:
            (tmp_path / name).write_text(text)
        args = [str(tmp_path / name) if a == "FILE" else a for a in CLI[kind]]
        assert main(args) == 0, capsys.readouterr().err
    _population(tmp_path / "pop.npz")
    assert main([*CLI["population"][:-1], str(tmp_path / "pop.npz")]) == 0
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------
# Model files
# ---------------------------------------------------------------------------------------------

MODEL_CASES = mutations(
    MODEL, required=MODEL_REQUIRED, tables=MODEL_TABLES, integers=frozenset({"n"})
)


@pytest.mark.parametrize(("name", "doc"), MODEL_CASES, ids=[n for n, _ in MODEL_CASES])
def test_model_file_mutations_json(name, doc, tmp_path, capsys):
    f = tmp_path / "model.json"
    f.write_text(json.dumps(doc))
    message = assert_refused(lambda: load_model_file(f), f, "model", capsys)
    assert message.startswith("model file 'model.json'")


TOML_CASES = [(n, t) for n, d in MODEL_CASES if (t := to_toml(d)) is not None]


@pytest.mark.parametrize(("name", "text"), TOML_CASES, ids=[n for n, _ in TOML_CASES])
def test_model_file_mutations_toml(name, text, tmp_path):
    f = tmp_path / "model.toml"
    f.write_text(text)
    with pytest.raises(DistPrivacyError, match=r"^model file 'model\.toml'") as info:
        load_model_file(f)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(pairs=3), "pairs must be a non-empty list of pairs"),
        (lambda d: d.update(pairs=["a", "b"]), "pairs[0] must be a pair"),
        (
            lambda d: d.update(pairs=["ab"]),
            'pairs[0] must be a pair ["a", "b"], got the string \'ab\'',
        ),
        (lambda d: d.update(pairs=[["a", "b", "a"]]), "pairs[0] must be a pair"),
        (lambda d: d.update(pairs=None), "pairs must be a non-empty list of pairs of θ labels"),
        (lambda d: d.update(statistics="xy"), "statistics must be a list of names"),
        (lambda d: d.update(statistics=3), "statistics must be a list of names"),
        (lambda d: d.update(statistics=["x", "x"]), "statistics[1] repeats"),
        (lambda d: d.update(statistics=["x"]), "thetas[0].mean has 2 entries; expected 1"),
        (lambda d: d.update(n=True), "n must be a positive integer, got true"),
        (lambda d: d.update(n=0), "n must be a positive integer"),
        (lambda d: d.update(n=2.0), "n must be a positive integer, got the number 2.0"),
        (lambda d: d["thetas"][0].update(sample=[[1, 2]]), "thetas[0] has unknown key 'sample'"),
        (lambda d: d["thetas"][0]["samples"].append([1]), "thetas[0].samples[2] has 1 entries"),
        (lambda d: d["thetas"][1].pop("samples"), "give samples for every θ or for none"),
        (lambda d: d["thetas"][1].update(label="a"), "thetas[1].label repeats 'a'"),
        (lambda d: d["thetas"][1].update(covariance=[[22, -6], [-6]]), "thetas[1].covariance[1]"),
        (lambda d: d["thetas"][1].update(covariance=[[22, "-6"], [-6, 13]]), "got the string"),
        (lambda d: d["thetas"][1].update(mean=[1e400, 1]), "thetas[1].mean[0] must be a finite"),
        (lambda d: d.update(record_sensitivities=[1, -2]), "record_sensitivities[1]"),
        (lambda d: d.update(stats=["x", "y"]), "known keys are statistics, thetas, pairs"),
        (lambda d: d.update(pairs=[["a", "zz"]]), "pairs[0] names unknown θ 'zz'"),
    ],
)
def test_model_file_messages_name_the_key_path(mutate, expected, tmp_path):
    doc = copy.deepcopy(MODEL)
    mutate(doc)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(InvalidFileError) as info:
        load_model_file(f)
    assert expected in str(info.value)


def test_model_file_huge_dimension_is_refused_before_any_work(tmp_path, capsys):
    """300 statistics: OptM-G's SDP would need ~226 GiB and Clarabel aborts the process (exit
    134); the loader refuses with the figure and the limit instead."""
    d = 300
    eye = np.eye(d).tolist()
    doc = {
        "thetas": [
            {"label": "a", "mean": [0.0] * d, "covariance": eye},
            {"label": "b", "mean": [0.1] * d, "covariance": eye},
        ],
        "pairs": [["a", "b"]],
    }
    f = tmp_path / "huge.json"
    f.write_text(json.dumps(doc))
    message = assert_refused(lambda: load_model_file(f), f, "model", capsys)
    assert "226 GiB" in message and "the limit is 4 GiB" in message and "OptM-G" in message
    # the limit is a parameter, and the estimate is monotone in the dimension and the pairs
    assert load_model_file(f, memory_limit=None).dim == d
    assert model_file_memory(100, 1) < 4 * 2**30 < model_file_memory(120, 1)
    assert model_file_memory(50, 2) == 2 * model_file_memory(50, 1)


def test_too_many_samples_are_refused(tmp_path):
    doc = copy.deepcopy(MODEL)
    for t in doc["thetas"]:
        t["samples"] = [[0.0, 0.0]] * 20_000  # W∞ between 20,000 × 20,000 samples
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(InvalidFileError, match=r"W∞ of two sample sets"):
        load_model_file(f)


# ---------------------------------------------------------------------------------------------
# Attribute problem files
# ---------------------------------------------------------------------------------------------

PROBLEM_INTEGERS = frozenset({"n", "pairs[0][0]", "pairs[0][1]"})
# A slope given as one number is a point range.
PROBLEM_ACCEPTED = frozenset({"slopes.blood_pressure=int", "slopes.blood_pressure=float"})
PROBLEM_CASES = [
    (f"{tag}:{n}", d)
    for tag, base in (("slopes", PROBLEM_SLOPES), ("cov", PROBLEM_COV))
    for n, d in mutations(
        base,
        required=PROBLEM_REQUIRED,
        tables=[()],
        integers=PROBLEM_INTEGERS,
        accepted=PROBLEM_ACCEPTED,
    )
]


@pytest.mark.parametrize(("name", "doc"), PROBLEM_CASES, ids=[n for n, _ in PROBLEM_CASES])
def test_problem_file_mutations(name, doc, tmp_path, capsys):
    f = tmp_path / "problem.json"
    f.write_text(json.dumps(doc))

    def api() -> Any:
        return GaussianProblem.from_file(str(f)).calibrate()

    assert_refused(api, f, "problem", capsys)
    # from_dict (the Python route without a file) refuses it too, with our error type
    with pytest.raises(DistPrivacyError):
        GaussianProblem.from_dict(doc).calibrate()


def test_point_secrets_are_accepted():
    doc = {**PROBLEM_COV, "secrets": [0.2, 0.8]}
    assert GaussianProblem.from_dict(doc).calibrate().sensitivity > 0


def _only(cases: list[tuple[str, Any]], names: frozenset[str]) -> list[tuple[str, Any]]:
    found = [(n, d) for n, d in cases if n in names]
    assert {n for n, _ in found} == names  # every accepted mutation is still generated
    return found


def test_accepted_mutations_load(tmp_path):
    """The mutations left out of the grids are valid files, and load."""
    f = tmp_path / "p.json"
    for _, doc in _only(mutations(PROBLEM_SLOPES, required=[], tables=[]), PROBLEM_ACCEPTED):
        f.write_text(json.dumps(doc))
        assert GaussianProblem.from_file(str(f)).calibrate().sensitivity > 0
    f = tmp_path / "n.json"
    for _, doc in _only(mutations(NETWORKS, required=[], tables=[]), NETWORK_ACCEPTED):
        f.write_text(json.dumps(doc))
        assert all(isinstance(n.name, str) for n in load_networks(f))
    for _, doc in _only(mutations(NETWORK_ONE, required=[], tables=[]), ONE_ACCEPTED):
        assert network_from_dict(doc).name
    for _, doc in _only(mutations(POPULATION_HEADER, required=[], tables=[]), HEADER_ACCEPTED):
        _npz(tmp_path / "p.npz", doc)
        assert ModelPopulation.load(tmp_path / "p.npz").n_models == 3


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(slopes=[6, 10]), "slopes must be an object mapping query attributes"),
        (lambda d: d.update(query=3), "query must be an attribute name or a list of them"),
        (lambda d: d.update(binary="no"), "binary must be true or false, got the string 'no'"),
        (lambda d: d.update(n=True), "n must be a positive integer, got true"),
        (lambda d: d.update(secrets="(0.25,0.5)"), "secrets must be a list of at least 2"),
        (lambda d: d.update(rule="clasic"), "rule must be one of 'exact', 'classic'"),
        (lambda d: d.update(slope={"blood_pressure": 1}), "unknown key 'slope'"),
        (lambda d: d.update(parameter_range=[0.25]), "parameter_range must be a pair [low, high]"),
    ],
)
def test_problem_messages(mutate, expected, tmp_path):
    doc = copy.deepcopy(PROBLEM_SLOPES)
    mutate(doc)
    f = tmp_path / "p.toml"
    text = to_toml(doc)
    assert text is not None
    f.write_text(text)
    with pytest.raises(InvalidFileError) as info:
        GaussianProblem.from_file(str(f))
    assert str(info.value).startswith("problem file 'p.toml'")
    assert expected in str(info.value)


# ---------------------------------------------------------------------------------------------
# Bayesian-network files
# ---------------------------------------------------------------------------------------------

# A network's name may be a number.
NETWORK_ACCEPTED = frozenset(f"theta[{k}].name={t}" for k in (0, 1) for t in ("int", "float"))
NETWORK_CASES = mutations(
    NETWORKS, required=NETWORK_REQUIRED, tables=NETWORK_TABLES, accepted=NETWORK_ACCEPTED
)


@pytest.mark.parametrize(("name", "doc"), NETWORK_CASES, ids=[n for n, _ in NETWORK_CASES])
def test_network_file_mutations(name, doc, tmp_path, capsys):
    f = tmp_path / "net.json"
    f.write_text(json.dumps(doc))
    message = assert_refused(lambda: load_networks(f), f, "network", capsys)
    assert message.startswith("network file 'net.json'")


# Domain values are numbers or strings (this network's CPTs are tables, so any will do).
ONE_ACCEPTED = frozenset(
    {"name=int", "name=float", "domains.g[0]=string", "domains.g[1]=string"}
    | {f"domains.h[{k}]={t}" for k in (0, 1) for t in ("int", "float")}
)
ONE_CASES = mutations(
    NETWORK_ONE, required=[("domains",), ("cpts",)], tables=[()], accepted=ONE_ACCEPTED
)


@pytest.mark.parametrize(("name", "doc"), ONE_CASES, ids=[n for n, _ in ONE_CASES])
def test_single_network_mutations(name, doc):
    with pytest.raises(DistPrivacyError) as info:
        network_from_dict(doc)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(parents={"h": 3}), "parents.h must be a node name or a list"),
        (lambda d: d.update(parents={"h": [["g"]]}), "parents.h[0] must be a non-empty string"),
        (
            lambda d: d["theta"][1]["cpts"]["h"]["discretized_normal"].update(
                coefficients={"g": "-8"}
            ),
            "theta[1].cpts.h.discretized_normal.coefficients.g must be a finite number",
        ),
        (lambda d: d["theta"][0]["cpts"].update(g=[0.5, "0.5"]), "theta[0].cpts.g"),
        (lambda d: d["theta"][0].update(cpt={}), "theta[0] has unknown field 'cpt'"),
        (
            lambda d: d.update(domains={"g": "01", "h": [1, 2, 3]}),
            "domains.g must be a non-empty list of values",
        ),
        (lambda d: d.update(domains={"g": [0, 0], "h": [1, 2, 3]}), "domains.g[1] repeats"),
    ],
)
def test_network_messages(mutate, expected, tmp_path):
    doc = copy.deepcopy(NETWORKS)
    mutate(doc)
    f = tmp_path / "n.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(InvalidFileError) as info:
        load_networks(f)
    assert expected in str(info.value)


# ---------------------------------------------------------------------------------------------
# Every JSON / TOML reader: limits and syntax
# ---------------------------------------------------------------------------------------------

READERS = {
    "model": (load_model_file, "model file"),
    "problem": (lambda p: GaussianProblem.from_file(str(p)), "problem file"),
    "network": (load_networks, "network file"),
}
RAW_TEXTS = {
    "deep json": ("x.json", '{"a": ' + "[" * 5000 + "]" * 5000 + "}"),
    "deep toml": ("x.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"),
    "deep json 100k": ("x.json", "[" * 100_000 + "]" * 100_000),
    "duplicate key": ("x.json", '{"n": 1, "n": 2}'),
    "duplicate toml key": ("x.toml", "n = 1\nn = 2\n"),
    "NaN": ("x.json", '{"n": NaN}'),
    "top-level list": ("x.json", "[1, 2]"),
    "top-level string": ("x.json", '"thetas"'),
    "not json": ("x.json", "{not json"),
    "bad toml": ("x.toml", "a = = 1"),
    "BOM": ("x.json", "\ufeff{}"),
    "empty": ("x.json", ""),
    "huge integer": ("x.json", '{"n": ' + "9" * 5000 + "}"),
    "yaml suffix": ("x.yaml", "a: 1"),
}


@pytest.mark.parametrize("kind", list(READERS))
@pytest.mark.parametrize("case", list(RAW_TEXTS))
def test_syntax_and_limits(kind, case, tmp_path, capsys):
    name, text = RAW_TEXTS[case]
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    reader, what = READERS[kind]
    message = assert_refused(lambda: reader(f), f, kind, capsys)
    assert message.startswith(f"{what} 'x.")


@pytest.mark.parametrize("suffix", ["json", "toml"])
@pytest.mark.parametrize("fraction", [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95])
def test_truncated_model_files(suffix, fraction, tmp_path):
    text = json.dumps(MODEL) if suffix == "json" else to_toml(MODEL) or ""
    f = tmp_path / f"m.{suffix}"
    f.write_text(text[: int(len(text) * fraction)])
    with pytest.raises(DistPrivacyError, match=rf"^model file 'm\.{suffix}'") as info:
        load_model_file(f)
    assert "\n" not in str(info.value)


def test_non_utf8_and_too_large_files(tmp_path, monkeypatch):
    f = tmp_path / "m.json"
    f.write_bytes(b'{"n": "\xff"}')
    with pytest.raises(InvalidFileError, match="not UTF-8"):
        load_model_file(f)
    f.write_text(json.dumps(MODEL))
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 100)
    with pytest.raises(InvalidFileError, match=r"at most 0 MiB are read|MiB; at most"):
        load_model_file(f)


def test_nesting_depth_ignores_strings_and_comments():
    assert files.nesting_depth('{"a": "[[[[", "b": [[1]]}') == 3
    assert files.nesting_depth('a = "[[[["  # [[[[[\nb = [[1]]\n', toml=True) == 2
    assert files.nesting_depth("") == 0


S = files  # the schema classes


class Err(str):
    """An expected error message (as opposed to an expected value)."""


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (S.Int(minimum=1), 3, 3),
        (S.Int(minimum=1), np.int64(3), 3),
        (S.Int(minimum=1), True, Err("n must be a positive integer, got true")),
        (S.Int(minimum=1), 3.0, Err("n must be a positive integer, got the number 3.0")),
        (S.Int(minimum=1), 0, Err("n must be a positive integer, got the integer 0")),
        (S.Int(0, 9), 10, Err("n must be an integer from 0 to 9, got the integer 10")),
        (S.Number(), 2, 2.0),
        (S.Number(), np.float32(0.5), 0.5),
        (S.Number(keep_int=True), 2, 2),
        (S.Number(), False, Err("n must be a finite number, got false")),
        (S.Number(), "1", Err("n must be a finite number, got the string '1'")),
        (S.Number(), math.inf, Err("n must be a finite number, got Infinity")),
        (S.Number(finite=False), -math.inf, -math.inf),
        (S.Number(finite=False), math.nan, Err("n must be a number, got NaN")),
        (S.Number(), 10**400, Err("n must be a finite number, got the integer")),
        (S.Number(positive=True), 0, Err("n must be a positive number, got the integer 0")),
        (S.Str(), " ", Err("n must be a non-empty string, got the string ' '")),
        (S.Str(("a", "b")), "c", Err("n must be one of 'a', 'b', got the string 'c'")),
        (S.Bool(), "no", Err("n must be true or false, got the string 'no'")),
        (S.Bool(), 0, Err("n must be true or false, got the integer 0")),
        (S.Bool(), False, False),
        (S.Label(), 0.45, "0.45"),
        (S.Label(), 2, "2"),
        (
            S.ListOf(S.Str(), noun="names"),
            "xy",
            Err("n must be a list of names, got the string 'xy'"),
        ),
        (S.ListOf(S.Str(), min_len=2, noun="names"), ["x"], Err("n has 1 names; give at least 2")),
        (S.ListOf(S.Str(), min_len=1, noun="names"), [], Err("n is empty; give a non-empty list")),
        (
            S.ListOf(S.Str(), max_len=1, noun="names"),
            ["x", "y"],
            Err("n has 2 names; give at most 1"),
        ),
        (S.ListOf(S.Int(), unique=True), [1, 1], Err("n[1] repeats the integer 1; list it once")),
        (S.Pair(S.Str()), ("a", "b"), ("a", "b")),
        (S.Pair(S.Str()), ["ab"], Err('n must be a pair ["a", "b"], got a list of 1 item')),
        (S.Array((2,)), [1, 2], [1.0, 2.0]),
        (S.Array((2,)), [1, 2, 3], Err("n has 3 entries; expected 2")),
        (S.Array((None, None)), np.eye(2), [[1.0, 0.0], [0.0, 1.0]]),
        (
            S.Array((None, None)),
            [[1, 2], [3]],
            Err("n[1] has 1 entries but the ones before it have 2"),
        ),
        (S.Array((None, None)), [[1, 2], 3], Err("n[1] must be a row (a list of numbers)")),
        (S.Array((None,)), [], Err("n is empty")),
        (S.Array(None), [[[1]], [[2]]], [[[1.0]], [[2.0]]]),
        (S.Array(None), [[1], 2], Err("n[1] is the integer 2 but n[0] is a list of 1 item")),
        (S.Array(None), [[[1]], [2]], Err("n[1] is less deeply nested than the rows before it")),
        (S.Array((None,), minimum=0.0), [1, -1], Err("n[1] must be a finite number ≥ 0")),
        (S.MapOf(S.Int()), {"a": 1}, {"a": 1}),
        (S.MapOf(S.Int()), {"": 1}, Err("n has an empty key ''")),
        (S.MapOf(S.Int(), min_len=1), {}, Err("n is empty")),
        (S.AnyOf(S.Str(), S.ListOf(S.Str())), ["a"], ["a"]),
        (
            S.AnyOf(S.Str(), S.ListOf(S.Str()), noun="a name or names"),
            3,
            Err("n must be a name or"),
        ),
        (S.AnyOf(S.Array((None, None)), S.Array((None, None, None))), [[[1]]], [[[1.0]]]),
    ],
)
def test_schema_nodes(schema, value, expected):
    table = S.Table({"n": S.Field(schema, required=True)})
    if isinstance(expected, Err):
        with pytest.raises(InvalidFileError) as info:
            S.validate({"n": value}, table, "source")
        assert str(info.value).startswith("source: n") and expected in str(info.value)
    else:
        out = S.validate({"n": value}, table, "source")["n"]
        if isinstance(out, np.ndarray):
            np.testing.assert_array_equal(out, expected)
        else:
            assert out == expected and type(out) is type(expected)


def test_named_dimensions_bind_across_the_file():
    table = S.Table(
        {"names": S.Field(S.ListOf(S.Str(), length="m")), "x": S.Field(S.Array(("m", "m")))}
    )
    assert S.validate({"names": ["a"], "x": [[1]]}, table, "f")["x"].shape == (1, 1)
    with pytest.raises(InvalidFileError, match=r"f: x has 2 rows; expected 1, as in names"):
        S.validate({"names": ["a"], "x": [[1, 2], [3, 4]]}, table, "f")


def test_unknown_and_missing_keys_name_the_known_ones():
    table = S.Table({"a": S.Field(S.Int(), required=True), "b": S.Field(S.Int())})
    with pytest.raises(InvalidFileError, match=r"^f has unknown key 'c'; the known keys are a, b"):
        S.validate({"a": 1, "c": 2}, table, "f")
    with pytest.raises(InvalidFileError, match=r"^f needs 'a'; 'a' is missing$"):
        S.validate({"b": 1}, table, "f")
    with pytest.raises(InvalidFileError, match=r"^f: b must be an integer, got null$"):
        S.validate({"a": 1, "b": None}, table, "f")


def test_models_render_refuses_a_malformed_run(tmp_path, capsys):
    for text in ("{not json", "[1]", '{"config": {"x": 1}}', '{"config": 3}'):
        (tmp_path / "run.json").write_text(text)
        rc = main(["models", "render", str(tmp_path)])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1, err


def test_read_mapping_file_without_schema_returns_the_object(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text("a = 1\n[b]\nc = [1, 2]\n")
    assert read_mapping_file(f, "file") == {"a": 1, "b": {"c": [1, 2]}}


# ---------------------------------------------------------------------------------------------
# Pair CSVs (local distp --pair)
# ---------------------------------------------------------------------------------------------


def _pair_cases() -> list[tuple[str, str | bytes]]:
    rows = [r.split(",") for r in PAIR_CSV.splitlines()]
    out: list[tuple[str, str | bytes]] = []
    for i in range(1, len(rows)):
        for j in range(2):
            for bad in ("abc", "", "nan", "inf", "-0.1", "1e999", "0x1", "true"):
                r = copy.deepcopy(rows)
                r[i][j] = bad
                out.append((f"cell {i},{j}={bad!r}", "\n".join(map(",".join, r)) + "\n"))
    out += [
        ("duplicate header", PAIR_CSV.replace("lambda0,lambda1", "lambda0,lambda0")),
        ("missing column", PAIR_CSV.replace("lambda1", "lambda_1")),
        ("extra row", PAIR_CSV + "0.1,0.1\n"),
        ("missing row", PAIR_CSV.rsplit("\n", 2)[0] + "\n"),
        ("ragged row", PAIR_CSV + "0.1,0.1,0.3\n"),
        ("empty", ""),
        ("header only", "lambda0,lambda1\n"),
        ("not utf-8", b"lambda0,lambda1\n\xff\xfe,1\n"),
        ("binary", bytes(range(256))),
    ]
    return out


PAIR_CASES = _pair_cases()


@pytest.mark.parametrize(("name", "text"), PAIR_CASES, ids=[n for n, _ in PAIR_CASES])
def test_pair_csv_mutations(name, text, tmp_path, capsys):
    from distprivacy.commands.local import _read_pair

    f = tmp_path / "pair.csv"
    if isinstance(text, bytes):
        f.write_bytes(text)
    else:
        f.write_text(text)
    assert_refused(lambda: _read_pair(str(f), 4), f, "pair", capsys)


# ---------------------------------------------------------------------------------------------
# Model populations (.npz)
# ---------------------------------------------------------------------------------------------


def _population(path: Path) -> Path:
    rng = np.random.default_rng(0)
    pop = ModelPopulation(
        (rng.normal(size=(3, 4, 2)).astype("f4"), rng.normal(size=(3, 2, 1)).astype("f4")),
        (np.zeros((3, 2), "f4"), np.zeros((3, 1), "f4")),
        meta={"label": 0, "per_model": {"seed": [1, 2, 3]}},
    )
    return pop.save(path)


def _npz(path: Path, header: Any, arrays: dict[str, np.ndarray] | None = None) -> None:
    if arrays is None:
        with np.load(_population(path.with_name("base.npz"))) as z:
            arrays = {k: z[k] for k in z.files if k != "header"}
    with open(path, "wb") as fh:
        np.savez(fh, header=np.array(json.dumps(header)), **arrays)


def _forge_declared_size(data: bytes, member: str, size: int) -> bytes:
    """Set the uncompressed size the central directory declares for ``member``."""
    name = member.encode()
    at = data.index(b"PK\x01\x02")
    while True:
        n = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if data[at + 46 : at + 46 + n] == name:
            return data[: at + 24] + struct.pack("<I", size) + data[at + 28 :]
        at = data.index(b"PK\x01\x02", at + 4)


def _archive_cases() -> list[tuple[str, Callable[[Path], None]]]:
    cases: list[tuple[str, Callable[[Path], None]]] = []

    def good_bytes(p: Path) -> bytes:
        return _population(p.with_name("base.npz")).read_bytes()

    for frac in (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        cases.append(
            (
                f"truncated at {frac:.0%}",
                lambda p, f=frac: p.write_bytes(
                    (b := good_bytes(p))[: int(len(b) * f)] if f else b""
                ),
            )
        )
    for frac in (0.05, 0.2, 0.4, 0.6, 0.8, 0.95):

        def flip(p: Path, f: float = frac) -> None:
            b = bytearray(good_bytes(p))
            k = int(len(b) * f)
            b[k] ^= 0xFF
            p.write_bytes(bytes(b))

        cases.append((f"byte flipped at {frac:.0%}", flip))
    cases += [
        ("fake zip", lambda p: p.write_bytes(b"PK\x03\x04" + b"\0" * 200)),
        ("text file", lambda p: p.write_text("hello")),
        (
            "zip bomb (declared 3 GiB)",
            lambda p: p.write_bytes(_forge_declared_size(good_bytes(p), "W0.npy", 3 * 2**30)),
        ),
        (
            "declared size too small",
            lambda p: p.write_bytes(_forge_declared_size(good_bytes(p), "W0.npy", 10)),
        ),
        ("object array", lambda p: _npz(p, POPULATION_HEADER, {"W0": np.array([{}], object)})),
        (
            "integer weights",
            lambda p: _npz(
                p,
                {**POPULATION_HEADER, "n_layers": 1},
                {"W0": np.zeros((1, 2, 1), int), "b0": np.zeros((1, 1), int)},
            ),
        ),
        (
            "NaN weights",
            lambda p: _npz(
                p,
                {**POPULATION_HEADER, "n_layers": 1},
                {"W0": np.full((3, 2, 1), np.nan), "b0": np.zeros((3, 1))},
            ),
        ),
        (
            "missing W1",
            lambda p: _npz(
                p,
                POPULATION_HEADER,
                {"W0": np.zeros((3, 4, 2)), "b0": np.zeros((3, 2)), "b1": np.zeros((3, 1))},
            ),
        ),
        (
            "extra array",
            lambda p: _npz(
                p,
                {**POPULATION_HEADER, "n_layers": 1},
                {"W0": np.zeros((3, 2, 1)), "b0": np.zeros((3, 1)), "W1": np.zeros((3, 1, 1))},
            ),
        ),
        ("other array", lambda p: _npz(p, POPULATION_HEADER, {"x": np.zeros(3)})),
        ("no header", lambda p: np.savez(p, W0=np.zeros((3, 2, 1)), b0=np.zeros((3, 1)))),
        ("header not json", lambda p: np.savez(p, header=np.array("{nope"))),
        ("header deep", lambda p: np.savez(p, header=np.array("[" * 5000 + "]" * 5000))),
        ("header array", lambda p: np.savez(p, header=np.array(["a", "b"]))),
        ("header number", lambda p: np.savez(p, header=np.array(3.0))),
        (
            "wrong shapes",
            lambda p: _npz(
                p,
                {**POPULATION_HEADER, "n_layers": 1},
                {"W0": np.zeros((3, 2)), "b0": np.zeros((3, 1))},
            ),
        ),
    ]
    return cases


# meta holds any JSON.
HEADER_ACCEPTED = frozenset(
    {f"meta.label={t}" for t in WRONG if t not in ("int", "float")}
    | {
        f"meta.per_model.seed[{k}]={t}"
        for k in range(3)
        for t in WRONG
        if t not in ("int", "float")
    }
)
HEADER_CASES = mutations(
    POPULATION_HEADER,
    required=[("format",), ("version",), ("n_layers",), ("activation",)],
    tables=[()],
    integers=frozenset({"version", "n_layers"}),
    accepted=HEADER_ACCEPTED,
)
POPULATION_CASES = [
    *_archive_cases(),
    *((f"header {n}", lambda p, d=d: _npz(p, d)) for n, d in HEADER_CASES),
]


@pytest.mark.parametrize(("name", "write"), POPULATION_CASES, ids=[n for n, _ in POPULATION_CASES])
def test_population_mutations(name, write, tmp_path, capsys):
    f = tmp_path / "pop.npz"
    write(f)
    assert_refused(lambda: ModelPopulation.load(f), f, "population", capsys)


def test_zip_bomb_refused_before_reading(tmp_path):
    """A real bomb: 64 MiB of zeros deflated to ~64 KiB, refused by its declared size."""
    f = tmp_path / "bomb.npz"
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.zeros(8 * 2**20))
    with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("W0.npy", buf.getvalue())
        z.writestr("header.npy", b"")
    assert f.stat().st_size < 2**20
    expected = r"declares 64 MiB of uncompressed arrays; the limit is 1 MiB"
    with pytest.raises(InvalidFileError, match=expected):
        ModelPopulation.load(f, max_bytes=2**20)


# ---------------------------------------------------------------------------------------------
# Data tables: repeated headers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header", ["age,age,x", "age, age ,x", "x,age,y,age", "age\tage\tx"], ids=lambda h: h
)
def test_repeated_csv_headers_are_refused(header, tmp_path, capsys):
    sep = "\t" if "\t" in header else ","
    f = tmp_path / ("t.tsv" if sep == "\t" else "t.csv")
    f.write_text(header + "\n" + sep.join(["1"] * (header.count(sep) + 1)) + "\n")
    message = assert_refused(lambda: load_table(f), f, "table", capsys)
    assert "duplicate column names" in message and "age" in message


def test_suffixed_headers_are_not_duplicates(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("age,age.1,,\n1,2,3,4\n")
    assert list(load_table(f).columns)[:2] == ["age", "age.1"]


# ---------------------------------------------------------------------------------------------
# The console script itself (a few subprocess runs)
# ---------------------------------------------------------------------------------------------


def _subprocess_cases(tmp: Path) -> dict[str, list[str]]:
    (tmp / "m.json").write_text(json.dumps({**MODEL, "pairs": 3}))
    (tmp / "p.toml").write_text(to_toml({**PROBLEM_SLOPES, "query": 3}) or "")
    (tmp / "n.json").write_text(json.dumps({**NETWORKS, "parents": {"h": 3}}))
    (tmp / "pair.csv").write_text(PAIR_CSV.replace("0.2\n", "abc\n", 1))
    (tmp / "pop.npz").write_bytes(b"PK\x03\x04" + b"\0" * 64)
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    return {
        "model": [s.replace("FILE", str(tmp / "m.json")) for s in CLI["model"]],
        "problem": [s.replace("FILE", str(tmp / "p.toml")) for s in CLI["problem"]],
        "network": [s.replace("FILE", str(tmp / "n.json")) for s in CLI["network"]],
        "pair": [s.replace("FILE", str(tmp / "pair.csv")) for s in CLI["pair"]],
        "population": [s.replace("FILE", str(tmp / "pop.npz")) for s in CLI["population"]],
        "deep": [s.replace("FILE", str(tmp / "deep.json")) for s in CLI["model"]],
        "properties": ["models", "reproduce", "--out", str(tmp / "out"), "--properties", ""],
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["model", "problem", "network", "pair", "population", "deep", "properties"]
)
def test_console_script_one_line_errors(case, tmp_path):
    args = _subprocess_cases(tmp_path)[case]
    src = str(Path(distprivacy.__file__).resolve().parents[1])  # the code tested in-process
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "distprivacy", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
