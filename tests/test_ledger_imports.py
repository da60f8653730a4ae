"""Pay only for what you use (issue 32, item 5): the steward's bookkeeping commands on a ledger
— `ledger keygen`, `init`, `secret`, `budget`, `show` and `verify` (of a ledger with no
release yet) — import neither NumPy, pandas nor SciPy, nor the mechanisms or the engines: a few
SQLite statements and a signature need none of them (NumPy alone was ~0.1 s of `ledger init`'s
0.33 s). Each runs in a fresh process that reports the
heavy modules it imported (the times are bench/bench_cli_startup.py's, not a test's).

`approve` (it loads and checks a plan), `register` (it reads the data) and `show`/`verify` of
a ledger with releases (they recompute every guarantee from its plan) need them, and import
them then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parents[1] / "src"

#: What these commands must not import.
HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "duckdb",
    "pyarrow",
    "distprivacy.mechanisms",
    "distprivacy.engines",
)

_PROBE = """
import contextlib, io, json, sys
from distprivacy.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[1:])
heavy = [m for m in HEAVY if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy, "out": out.getvalue(), "err": err.getvalue()}))
"""


def _run(*argv: object) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    probe = _PROBE.replace("HEAVY", repr(list(HEAVY)))
    res = subprocess.run(
        [sys.executable, "-c", probe, *map(str, argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_stewards_bookkeeping_imports_neither_numpy_pandas_nor_scipy(tmp_path):
    population = tmp_path / "population.csv"
    population.write_text("income,age\n>50K,40\n<=50K,30\n")
    key, led = tmp_path / "steward.key", tmp_path / "l.db"
    steward = ("--steward-key", key)
    steps = [
        ("ledger", "keygen", key),
        ("ledger", "init", led, *steward, "--secret", "income", "--protect", "income==>50K",
         "--population", population, "--budget-epsilon", "1", "--budget-delta", "0.001"),
        ("ledger", "secret", led, "women", *steward, "--protect", "sex==Female",
         "--population", population, "--budget-accuracy", "0.6"),
        ("ledger", "budget", led, *steward, "--secret", "income", "--reason", "more",
         "--budget-epsilon", "2", "--budget-delta", "0.001"),
        ("ledger", "show", led),
        ("ledger", "show", led, "--json"),
        ("ledger", "verify", led),
        ("ledger", "verify", led, "--json"),
    ]  # fmt: skip
    for argv in steps:
        got = _run(*argv)
        what = " ".join(map(str, argv[:2]))
        assert got["code"] == 0, (what, got["err"])
        assert got["heavy"] == [], f"`distprivacy {what}` imports {got['heavy']}"
    shown = json.loads(_run("ledger", "show", led, "--json")["out"])
    assert {s["secret"]: s["budget_text"] for s in shown["secrets"]} == {
        "income": "(ε, δ) = (2, 0.001)",
        "women": "no attacker above 60.0% accuracy",
    }


@pytest.mark.parametrize(
    "module",
    ["distprivacy.ledger", "distprivacy.targets", "distprivacy.profiles", "distprivacy.spec"],
)
def test_the_modules_a_ledger_reads_load_neither(module):
    """What the commands above rest on: importing these loads none of them (NumPy, SciPy and
    pandas are imported inside the functions that compute with them)."""
    code = (
        f"import sys, json, {module}; "
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True)  # fmt: skip
    assert json.loads(res.stdout) == []


def test_the_registry_fingerprints_a_file_as_the_library_does(tmp_path):
    """The ledger's pandas-free file fingerprint is :func:`distprivacy.fingerprint.
    file_fingerprint` (a population's fingerprint must not depend on which one made it)."""
    from distprivacy.fingerprint import file_fingerprint
    from distprivacy.ledger._registry import file_fingerprint as light

    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom((1 << 20) + 17))  # more than one block
    assert light(p) == file_fingerprint(p)


def test_numpy_values_are_still_recognised_without_importing_numpy_first():
    """The type tests that no longer import NumPy (they ask whether it is loaded: no NumPy value
    exists before it is) still treat NumPy's values as before."""
    import numpy as np

    from distprivacy._json import jsonable
    from distprivacy.checks import check_number, shown
    from distprivacy.exceptions import DistPrivacyTypeError

    assert jsonable({"a": np.arange(2), "b": np.bool_(True), "c": np.int64(3)}) == {
        "a": [0, 1],
        "b": True,
        "c": 3,
    }
    assert jsonable([np.float64("inf"), np.float32("nan")]) == ["inf", None]
    assert type(jsonable(np.bool_(False))) is bool and type(jsonable(np.int8(1))) is int
    assert shown(np.zeros((2, 3))) == "ndarray of shape (2, 3)"
    assert shown(np.array(1.5)) == "ndarray of shape ()"  # a 0-d array: shape () is falsy
    assert check_number(np.float64(0.5), "x") == 0.5
    with pytest.raises(DistPrivacyTypeError, match="x must be"):
        check_number(np.bool_(True), "x")
