"""Bad input at the boundary (issue 13): every class of bad value, through the command line
(in-process ``distprivacy.cli.main`` and a few real ``python3 -m distprivacy`` runs) and the
Python API. A bad CLI call exits 2 with exactly one ``error: …`` line on stderr and no
traceback; a bad Python call raises the library's own exception type."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distprivacy import DistPrivacyError, ExactReleaseError, NotApplicableError
from distprivacy.checks import check_delta, check_epsilon, check_int, check_number
from distprivacy.cli import main
from distprivacy.commands import dumps_json
from distprivacy.exceptions import ResourceLimitError
from distprivacy.mechanisms import (
    MECHANISMS,
    DauM,
    ExpectedValueLaplace,
    GroupDPGaussian,
    GroupDPLaplace,
    NoNoise,
    calibrate_all,
    make_mechanism,
)
from distprivacy.models import (
    GaussianModel,
    MonteCarloModel,
    fit_model,
    sample_statistics,
)
from distprivacy.noise import NoiseDistribution, expected_norm
from distprivacy.query import CallableStatistic, Query
from distprivacy.randomness import check_random_state
from distprivacy.request import GaussianOptions
from distprivacy.resources import check_memory, format_bytes, memory_limit, parse_size
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy

ROOT = Path(__file__).resolve().parents[1]

# The paper's blood-pressure query (attribute privacy), a fast command to attach options to.
from cli_commands import BP  # noqa: E402

# The same problem for temperature: σ² = 0, F(X) would be released unchanged.
NO_NOISE_BP = [
    a.replace("blood_pressure", "temperature").replace("=6:10", "=0:0.3").replace("=100", "=4")
    for a in BP
]
QUILT = ["attribute", "quilt", "--network", "school", "--secret", "income"]
QUILT += ["--query", "count:height>66", "--epsilon", "1", "--n-records", "200"]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, adult_dir, tmp_path):
    """The shared Adult files as the default data; never the network or the user's cache."""
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("DISTPRIVACY_MEMORY_LIMIT", raising=False)


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def assert_one_line_error(rc: int, err: str, *needles: str) -> str:
    """Exit 2, one ``error: …`` line on stderr, no traceback; returns the line."""
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def strict_json(text: str):
    """json.loads that refuses NaN/Infinity (which the standard module accepts)."""

    def bad(c: str):
        raise AssertionError(f"invalid JSON constant {c}")

    return json.loads(text, parse_constant=bad)


def adult_free_model(n: int | None = 100, spread: float = 1.0) -> GaussianModel:
    """A two-θ model; ``spread`` large makes the no-noise test of Thm 4.4 pass."""
    cov = np.array([[22.0, -6.0], [-6.0, 13.0]]) * spread
    return GaussianModel(
        ["a", "b"],
        [[100.0, 101.0], [99.0, 102.0]],
        [cov, cov],
        [("a", "b")],
        statistic_names=["x", "y"],
        record_sensitivities=[1.0, 1.0],
        n=n,
    )


# ---------------------------------------------------------------------------------------------
# 1. Seeds: every command that takes one; the Python entry points
# ---------------------------------------------------------------------------------------------

BAD_SEEDS = ["-1", "-123456789012", str(2**32), "1.5", "nan", "abc"]


def _seed_commands(tmp: Path) -> list[list[str]]:
    pops = [str(tmp / f"{k}.npz") for k in range(4)]
    return [
        ["calibrate"],
        ["release"],
        ["audit"],
        ["reproduce", "table2", "--out", str(tmp / "r")],
        ["local", "city", "--out", str(tmp / "c.csv")],
        ["local", "distp", "--param", "1"],
        BP,
        QUILT,
        ["models", "train", "--property", "sex", "--ratio", "0.5", "--out", str(tmp / "m.npz")],
        ["models", "attack", "--adversary", *pops[:2], "--victim", *pops[2:]],
        ["models", "reproduce", "--out", str(tmp / "mr")],
    ]


@pytest.mark.parametrize("seed", BAD_SEEDS)
@pytest.mark.parametrize("k", range(11))
def test_bad_seed_every_command(capsys, tmp_path, k, seed):
    cmd = _seed_commands(tmp_path)[k]
    rc, out, err = run(capsys, *cmd, f"--seed={seed}")
    assert_one_line_error(rc, err, "--seed")
    assert out == ""


@pytest.mark.parametrize("seed", [-1, -(2**40), 2**128, True, 1.5, "3", 2 + 0j])
def test_bad_seed_python(seed):
    from distprivacy.local.domains import clustered_city, grid

    cal = make_mechanism("ExpM-L", EpsDelta(1.0, 0.0)).calibrate(adult_free_model())
    calls = [
        lambda: check_random_state(seed, secure=False),
        lambda: check_random_state(seed, secure=True),
        lambda: cal.sample_noise(3, random_state=seed),
        lambda: cal.release([1.0, 2.0], random_state=seed),
        lambda: clustered_city(grid(4), random_state=seed),
    ]
    for call in calls:
        with pytest.raises(DistPrivacyError):
            call()


# ---------------------------------------------------------------------------------------------
# 2. Numbers: every numeric option, NaN / inf / out of range / not a number
# ---------------------------------------------------------------------------------------------

#: The ledger commands that take a budget, with their other required options (a key that is
#: never read: the budget is checked first).
LEDGER_BUDGETS = [
    ["ledger", "init", "unused.db", "--steward-key", "k", "--secret", "s", "--protect", "a==b"],
    ["ledger", "budget", "unused.db", "--steward-key", "k", "--reason", "r"],
    ["ledger", "secret", "unused.db", "s", "--steward-key", "k", "--protect", "a==b"],
]

# (command, option, bad values, words one of which the message names: the option or, where
# the library's own check answers, the parameter as the library calls it).
AUDIT = ["models", "audit", "--data", "t.csv", "--label", "y", "--protect", "a==b"]
DEFEND = ["models", "defend", "--data", "t.csv", "--label", "y", "--protect", "a==b"]
TRAIN = ["models", "train", "--property", "sex", "--ratio", "0.5", "--out", "m.npz"]
NUMERIC_OPTIONS: list[tuple[list[str], str, list[str], tuple[str, ...]]] = [
    (["calibrate"], "--epsilon", ["nan", "inf", "-inf", "-1", "0", "1e400", "abc", ""], ()),
    (["models", "graph", "--degrees", "3,4"], "--n-models", ["0", "-1", "nan", "1.5"], ()),
    (["models", "graph", "--degrees", "3,4"], "--n-shadow", ["0", "-1", "nan"], ()),
    (["models", "graph", "--degrees", "3,4"], "--hidden", ["0", "-1", "nan"], ()),
    (["models", "graph", "--degrees", "3,4"], "--epochs", ["0", "-1", "nan"], ()),
    (["models", "graph", "--degrees", "3,4"], "--random-prune", ["-0.1", "1.5", "nan"], ()),
    (["models", "graph", "--degrees", "3,4"], "--tolerance", ["-1", "nan", "inf"], ()),
    (["calibrate"], "--delta", ["nan", "inf", "-0.1", "1", "1.5"], ()),
    (["release", "--mechanism", "ExpM-L"], "--delta", ["nan", "-0.1", "1", "1.5"], ()),
    (["audit", "--mechanism", "GroupDP-L"], "--delta", ["nan", "-0.1", "1.5"], ()),
    (["calibrate"], "--subset-size", ["0", "-5", "1.5", "nan"], ("subset size",)),
    (["calibrate"], "--samples", ["1", "-1", "nan", "1e400"], ()),
    (["calibrate"], "--target-mu", ["nan", "0", "-1", "inf"], ("μ",)),
    (["calibrate"], "--max-attack-accuracy", ["0.5", "1", "0.2", "nan"], ("accuracy",)),
    (["calibrate"], "--pairs-within", ["nan", "-1", "0", "inf"], ()),
    (["calibrate"], "--values", ["nan,0.5", "0.5,inf", "1.5,0.5", "-0.1,0.5"], ("proportion",)),
    (["calibrate"], "--pairs", ["0.45:nan", "inf:0.55"], ()),
    (["audit"], "--audit-samples", ["79", "-1", "nan", "1.5"], ()),
    (["audit"], "--alpha", ["0", "1", "nan", "-0.5"], ()),
    (["local", "city", "--out", "unused.csv"], "--grid", ["0", "1", "-3", "nan"], ()),
    *(
        row
        for cmd in LEDGER_BUDGETS
        for row in (
            (cmd, "--budget-mu", ["nan", "0", "-1", "abc"], ()),
            (cmd, "--budget-epsilon", ["nan", "0", "-1"], ()),
            ([*cmd, "--budget-epsilon", "1"], "--budget-delta", ["nan", "-0.1", "1", "1.5"], ()),
            (cmd, "--budget-accuracy", ["nan", "0.5", "1", "0.2"], ("accuracy",)),
        )
    ),
    (["local", "distp"], "--param", ["nan", "0", "-1", "inf"], ("epsilon",)),
    (["local", "distp", "--mechanism", "gaussian"], "--param", ["0", "inf"], ("sigma",)),
    (["local", "distp", "--mechanism", "tupling"], "--k", ["-1", "nan", "1.5"], ("k (number",)),
    (["local", "distp", "--mechanism", "tupling"], "--base-epsilon", ["nan", "0"], ("epsilon",)),
    (["local", "distp", "--param", "1"], "--grid", ["0", "1", "nan"], ()),
    (["local", "distp", "--param", "1"], "--delta", ["nan", "1", "-0.1"], ()),
    (["local", "distp", "--mechanism", "tupling"], "--samples", ["1", "-1", "nan"], ()),
    (["local", "distp", "--param", "1"], "--at", ["nan", "-1", "abc"], ()),
    (BP, "-n", ["0", "-1", "nan"], ("records",)),
    (BP, "--epsilon", ["nan", "0", "inf"], ()),
    (BP, "--delta", ["nan", "0", "1"], ()),
    (BP, "--value", ["nan", "inf", "abc"], ()),
    (QUILT[:-4], "--epsilon", ["nan", "0", "-1"], ()),
    (QUILT[:-2], "--n-records", ["0", "-1"], ()),
    (TRAIN[:4] + TRAIN[6:], "--ratio", ["nan", "-0.1", "2"], ("ratio",)),
    (TRAIN, "--n-models", ["0", "-1"], ()),
    (TRAIN, "--n-train", ["0", "nan"], ()),
    (TRAIN, "--epochs", ["0", "nan"], ()),
    (TRAIN, "--hidden", ["0", "-1", "abc"], ()),
    (["models", "attack", "--adversary", "a", "b", "--victim", "c", "d"], "--n-test", ["0"], ()),
    (
        ["models", "attack", "--adversary", "a", "b", "--victim", "c", "d"],
        "--pin-epochs",
        ["0"],
        (),
    ),
    (["models", "reproduce", "--out", "o"], "--n-models", ["0", "nan"], ()),
    (["models", "reproduce", "--out", "o"], "--n-train", ["0"], ()),
    (["models", "reproduce", "--out", "o"], "--repetitions", ["0"], ()),
    (["models", "reproduce", "--out", "o"], "--alphas", ["nan"], ()),
    (AUDIT, "--n-models", ["0"], ()),
    (AUDIT, "--n-train", ["0", "nan"], ()),
    (AUDIT, "--n-jobs", ["0", "-1", "1.5"], ()),
    (DEFEND, "--n-models", ["0"], ()),
    (DEFEND, "--n-train", ["0", "nan"], ()),
    (DEFEND, "--n-jobs", ["0"], ()),
    (DEFEND, "--n-query", ["0", "1.5"], ()),
    (DEFEND, "--epsilon", ["0", "-1", "nan", "inf"], ()),
    (DEFEND, "--delta", ["-0.1", "1", "nan"], ()),
    (DEFEND, "--level", ["0.4", "1", "nan", "inf", "abc"], ()),
]
NUMERIC_CASES = [
    pytest.param(cmd, opt, v, words, id=f"{' '.join(cmd[:2])} {opt}={v}")
    for cmd, opt, values, words in NUMERIC_OPTIONS
    for v in values
]


@pytest.mark.parametrize(("cmd", "option", "value", "words"), NUMERIC_CASES)
def test_bad_number_every_option(capsys, tmp_path, monkeypatch, cmd, option, value, words):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *cmd, f"{option}={value}" if option != "-n" else "-n" + value)
    line = assert_one_line_error(rc, err).lower()
    names = (option.lstrip("-"), *words)
    assert any(w.lower() in line for w in names), (names, line)
    assert out == ""


def test_every_numeric_option_is_covered():
    """Each float/integer option of every command has rows in NUMERIC_OPTIONS (seeds above)."""
    import click

    from distprivacy.cli import cli

    def path(cmd: list[str]) -> tuple[str, ...]:
        return tuple(cmd[:1]) if cmd[0] in ("calibrate", "release", "audit") else tuple(cmd[:2])

    covered = {(path(c), o) for c, o, _, _ in NUMERIC_OPTIONS}
    missing = []

    def walk(cmd: click.Command, where: tuple[str, ...]) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*where, name))
            return
        for p in cmd.params:
            numeric = isinstance(p, click.Option) and p.type.name in ("float", "integer")
            if numeric and "--seed" not in p.opts:
                if not any((where, o) in covered for o in p.opts):
                    missing.append(" ".join((*where, max(p.opts, key=len))))

    walk(cli, ())
    # release/audit share calibrate's options (one decorator), tested once on calibrate.
    shared = {"--epsilon", "--subset-size", "--samples", "--target-mu", "--max-attack-accuracy"}
    shared |= {"--pairs-within"}
    missing = [
        m for m in missing if not (m.split()[0] in ("release", "audit") and m.split()[-1] in shared)
    ]
    assert missing == [], missing


BAD_REALS = ["0.5", True, False, np.bool_(True), 1 + 0j, 0.5j, None, [0.5], math.nan, math.inf]


@pytest.mark.parametrize("bad", [*BAD_REALS, -1.0, 0.0], ids=repr)
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_mechanism_epsilon_python(name, bad):
    with pytest.raises(DistPrivacyError):
        make_mechanism(name, EpsDelta(bad, 1e-3))


@pytest.mark.parametrize("bad", ["0.5", True, 1 + 0j, math.nan, -0.1, 1.0, 1.5], ids=repr)
@pytest.mark.parametrize("cls", [ExpectedValueLaplace, GroupDPLaplace, DauM])
def test_delta_checked_even_for_pure_epsilon(cls, bad):
    with pytest.raises(DistPrivacyError, match="delta"):
        cls(EpsDelta(1.0, bad))


def test_daum_string_and_bool_epsilon():
    for bad in ("0.5", True):
        with pytest.raises(DistPrivacyError, match="epsilon"):
            DauM(EpsDelta(bad, 1e-3))
    with pytest.raises(DistPrivacyError, match="mu must be a positive number"):
        DauM(GDP(True))
    with pytest.raises(DistPrivacyError, match="max_accuracy"):
        DauM(MaxAttackAccuracy(math.nan))


@pytest.mark.parametrize(
    "value",
    [[1 + 2j, 3.0], ["1", "2"], [True, False], [1.0, math.nan], [1.0, math.inf], [1.0], 5.0],
    ids=repr,
)
def test_release_value_python(value):
    cal = make_mechanism("ExpM-L", EpsDelta(1.0, 0.0)).calibrate(adult_free_model())
    with pytest.raises(DistPrivacyError):
        cal.release(value, random_state=0)


@pytest.mark.parametrize("size", [-1, 1.5, "3", True, math.nan])
def test_sample_noise_size_python(size):
    cal = make_mechanism("ExpM-L", EpsDelta(1.0, 0.0)).calibrate(adult_free_model())
    with pytest.raises(DistPrivacyError, match="size"):
        cal.sample_noise(size, random_state=0)
    assert cal.sample_noise(0, random_state=0).shape == (0, 2)


@pytest.mark.parametrize("columns", ["age", b"age", [], [1], None, 3])
def test_callable_statistic_columns(columns):
    with pytest.raises(DistPrivacyError):
        CallableStatistic("s", lambda X: X[..., 0].mean(-1), columns)
    assert CallableStatistic("s", np.mean, ["age"]).columns() == ("age",)


@pytest.mark.parametrize("n", [0, -3, 1.5, True, math.nan])
def test_group_dp_needs_a_positive_group(n):
    for cls in (GroupDPLaplace, GroupDPGaussian):
        with pytest.raises(NotApplicableError, match="group size"):
            cls(EpsDelta(1.0, 1e-3)).calibrate(adult_free_model(n=n))
    for g in (0, -1, True, 2.5):
        with pytest.raises(DistPrivacyError, match="group_size"):
            GroupDPLaplace(EpsDelta(1.0, 0.0), group_size=g)


def test_other_python_boundaries():
    from distprivacy.inference.training import TrainingSettings
    from distprivacy.local.domains import grid
    from distprivacy.local.mechanisms import RandomizedResponse, SnappedGaussian, check_k

    calls = [
        lambda: make_mechanism(3, EpsDelta(1.0, 0.0)),
        lambda: RandomizedResponse(True, 1.0),
        lambda: RandomizedResponse(5, "1"),
        lambda: SnappedGaussian(grid(4), 1 + 1j),
        lambda: check_k(-1),
        lambda: check_k(1.0),
        lambda: grid(0),
        lambda: TrainingSettings(epochs=True),
        lambda: TrainingSettings(lr=math.nan),
        lambda: MonteCarloModel(n_samples=True),
    ]
    for call in calls:
        with pytest.raises(DistPrivacyError):
            call()


GRID_VALUES = ["0.5", True, 1 + 1j, math.nan, math.inf, -1, 0, None, [1], 1e300, -1e300, 2**70]


def _api_calls(adult) -> dict:
    from distprivacy import accounting as acc
    from distprivacy.randomness import SecureGenerator

    gm = adult_free_model()
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse("mean:age")
    return {
        "spec.n": lambda b: ProtectionSpec("income==>50K", b, [0.45, 0.55]),
        "spec.values": lambda b: ProtectionSpec("income==>50K", 100, [b, 0.55]),
        "spec.pairs_within": lambda b: ProtectionSpec(
            "income==>50K", 100, [0.45, 0.55], pairs_within=b
        ),
        "Query.parse": lambda b: Query.parse(b),
        "Query": lambda b: Query([b]),
        "MonteCarloModel": lambda b: MonteCarloModel(b),
        "fit_model.n_samples": lambda b: fit_model(adult, spec, q, "monte-carlo", n_samples=b),
        "fit_model.random_state": lambda b: fit_model(
            adult, spec, q, "monte-carlo", n_samples=10, random_state=b
        ),
        "ExpM-G.delta": lambda b: make_mechanism("ExpM-G", EpsDelta(1.0, b)),
        "ExpM-G.mu": lambda b: make_mechanism(
            "ExpM-G", GDP(b), GaussianOptions(report_delta=1e-3)
        ).calibrate(gm),
        "ExpM-G.max_accuracy": lambda b: make_mechanism(
            "ExpM-G", MaxAttackAccuracy(b), GaussianOptions(report_delta=1e-3)
        ).calibrate(gm),
        "ExpM-G.calibration": lambda b: make_mechanism(
            "ExpM-G", EpsDelta(1.0, 1e-3), GaussianOptions(rule=b)
        ),
        "ExpM-G.covariances": lambda b: make_mechanism(
            "ExpM-G", EpsDelta(1.0, 1e-3), GaussianOptions(covariances=b)
        ),
        "Calibration.delta_at": lambda b: (
            make_mechanism("ExpM-G", EpsDelta(1.0, 1e-3)).calibrate(gm).delta_at(b)
        ),
        "Calibration.epsilon_at": lambda b: (
            make_mechanism("ExpM-G", EpsDelta(1.0, 1e-3)).calibrate(gm).epsilon_at(b)
        ),
        "Calibration.release": lambda b: (
            make_mechanism("ExpM-L", EpsDelta(1.0, 0.0))
            .calibrate(gm)
            .release([b, 1.0], random_state=0)
        ),
        "NoiseDistribution.isotropic.scale": lambda b: NoiseDistribution.isotropic(
            "gaussian", 2, b
        ),
        "NoiseDistribution.isotropic.m": lambda b: NoiseDistribution.isotropic("gaussian", b, 1),
        "NoiseDistribution.sample": lambda b: NoiseDistribution.isotropic(
            "gaussian", 2, 1.0
        ).sample(b, 0),
        "SecureGenerator.integers": lambda b: SecureGenerator().integers(0, 10, size=b),
        "relaxed_guarantee_max_divergence": lambda b: acc.relaxed_guarantee_max_divergence(
            1.0, 1e-3, b, 0.0
        ),
        "relaxed_guarantee_wasserstein": lambda b: acc.relaxed_guarantee_wasserstein(
            1.0, 1e-3, 1.0, b
        ),
        "classic_c": lambda b: acc.classic_c(b),
        "calibrate_all": lambda b: calibrate_all(gm, EpsDelta(b, 1e-3)),
    }


API_NAMES = [
    "spec.n", "spec.values", "spec.pairs_within", "Query.parse", "Query", "MonteCarloModel",
    "fit_model.n_samples", "fit_model.random_state", "ExpM-G.delta", "ExpM-G.mu",
    "ExpM-G.max_accuracy", "ExpM-G.calibration", "ExpM-G.covariances", "Calibration.delta_at",
    "Calibration.epsilon_at", "Calibration.release", "NoiseDistribution.isotropic.scale",
    "NoiseDistribution.isotropic.m", "NoiseDistribution.sample", "SecureGenerator.integers",
    "relaxed_guarantee_max_divergence", "relaxed_guarantee_wasserstein", "classic_c",
    "calibrate_all",
]  # fmt: skip


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", API_NAMES)
def test_python_api_grid_raises_only_library_errors(adult, name):
    """Every entry point × every bad value: either accepted or the library's own error, never
    a NumPy/SciPy/OpenDP/Python one."""
    call = _api_calls(adult)[name]
    for bad in GRID_VALUES:
        try:
            call(bad)
        except DistPrivacyError:
            pass
        except Exception as e:  # pragma: no cover - the failure being tested for
            pytest.fail(f"{name}({bad!r}) raised {type(e).__name__}: {e}")


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.booleans(),
        st.complex_numbers(),
        st.none(),
        st.lists(st.floats(), max_size=2),
        st.floats(allow_nan=True, allow_infinity=True).filter(
            lambda x: not (math.isfinite(x) and x > 0)
        ),
    )
)
def test_check_epsilon_refuses_every_non_positive_real(value):
    with pytest.raises(DistPrivacyError, match="epsilon"):
        check_epsilon(value)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0, max_value=1, exclude_max=True, exclude_min=True))
def test_check_delta_accepts_the_open_interval(d):
    assert check_delta(d) == d
    assert check_number(np.float32(0.25), "x", low=0, high=1) == 0.25
    assert check_int(np.int64(3), "k", low=0) == 3


# ---------------------------------------------------------------------------------------------
# 3. Memory: estimated before allocating, refused with the figure and the limit
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["calibrate", "--samples", "1000000000"],
        ["audit", "--mechanism", "DauM-G", "--audit-samples", "1e9"],
        ["local", "city", "--grid", "100000", "--out", "city.csv"],
        ["local", "distp", "--param", "1", "--grid", "5000"],
        ["local", "distp", "--mechanism", "tupling", "--samples", "1e13"],
        [*BP[:6], "-n", "1000000000000", *BP[8:]],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_memory_refused_before_allocating(capsys, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    rc, _out, err = run(capsys, *args)
    line = assert_one_line_error(rc, err, "memory", "limit", "DISTPRIVACY_MEMORY_LIMIT")
    assert "iB" in line  # the estimate and the limit as sizes
    assert not (tmp_path / "city.csv").exists()


def test_memory_hidden_width(capsys, tmp_path):
    rc, _out, err = run(
        capsys,
        "models",
        "train",
        "--property",
        "sex",
        "--ratio",
        "0.5",
        "--n-models",
        "4",
        "--epochs",
        "1",
        "--hidden",
        "100000000",
        "--out",
        tmp_path / "m.npz",
    )
    assert_one_line_error(rc, err, "memory", "100000000")
    assert not (tmp_path / "m.npz").exists()


def test_memory_limit_variable(capsys, monkeypatch):
    monkeypatch.setenv("DISTPRIVACY_MEMORY_LIMIT", "1MiB")
    assert memory_limit()[0] == 2**20
    rc, out, err = run(capsys, "calibrate", "--samples", "20000", "--mechanism", "DauM-G")
    assert_one_line_error(rc, err, "1 MiB", "set by DISTPRIVACY_MEMORY_LIMIT")
    assert out == ""
    monkeypatch.setenv("DISTPRIVACY_MEMORY_LIMIT", "lots")
    rc, _out, err = run(capsys, "calibrate", "--samples", "20000", "--mechanism", "DauM-G")
    assert_one_line_error(rc, err, "DISTPRIVACY_MEMORY_LIMIT")


def test_memory_python(adult):
    from distprivacy.inference.training import train_population
    from distprivacy.local.domains import grid

    assert parse_size("8GiB") == 8 * 2**30 and parse_size("512") == 512
    assert format_bytes(1536) == "1.5 KiB"
    limit, _ = memory_limit()
    check_memory(limit // 2, "half the limit")
    with pytest.raises(ResourceLimitError, match="a huge thing needs about"):
        check_memory(limit * 2.0, "a huge thing")
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse("mean:age")
    pos, neg = spec.groups(adult)
    with pytest.raises(ResourceLimitError):
        sample_statistics(adult, q, pos, neg, 45, 100, 10**12, np.random.default_rng(0))
    with pytest.raises(ResourceLimitError):
        NoiseDistribution.isotropic("gaussian", 3, 1.0).sample(10**13, 0)
    with pytest.raises(ResourceLimitError):
        grid(10**6)
    X = np.zeros((10, 3))
    with pytest.raises(ResourceLimitError, match="parameters each"):
        train_population(X, np.zeros(10), n_models=2, hidden=(10**9,), epochs=1)


# ---------------------------------------------------------------------------------------------
# 4. Overflow: results checked for finiteness, a failing mechanism listed as not applicable
# ---------------------------------------------------------------------------------------------


def test_huge_epsilon_release_is_refused_as_exact(capsys):
    """ε = 1e300 asks for noise below float resolution: that is an exact release, refused
    without --allow-exact (issue 21); with it the values are finite, and ε warns."""
    args = ("release", "--mechanism", "ExpM-L", "--epsilon", "1e300", "--seed", "1")
    rc, out, err = run(capsys, *args, "--json")
    assert rc == 2 and out == "" and "(near-)exact values" in err and "--allow-exact" in err, err
    rc, out, err = run(capsys, *args, "--json", "--allow-exact")
    assert rc == 0, err
    d = strict_json(out)
    assert all(math.isfinite(v) for v in d["statistics"].values())
    assert "weak-guarantee" in d["calibration"]["warning_codes"]


def test_tiny_target_mu_is_refused(capsys):
    rc, out, err = run(capsys, "calibrate", "--target-mu", "1e-300", "--json")
    assert rc == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and "μ ≥ 1e-6" in err


@pytest.mark.parametrize("target", [["--target-mu", "1"], ["--max-attack-accuracy", "0.6"]])
@pytest.mark.parametrize("mechs", [["ExpM-L"], ["ExpM-L", "GroupDP-L", "Wasserstein"]])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_gdp_target_of_pure_epsilon_mechanisms_is_one_line(capsys, target, mechs, json_flag):
    """Issue 31: `calibrate --mechanism ExpM-L --target-mu 1` printed an empty table, exit 0. A
    μ (or accuracy) target is met by Gaussian mechanisms only: one line naming them and how
    to target a Laplace mechanism (--epsilon), before any model is fitted."""
    args = [a for m in mechs for a in ("--mechanism", m)]
    rc, out, err = run(capsys, "calibrate", *args, *target, "--modeling", "exact", *json_flag)
    line = assert_one_line_error(rc, err, target[0], "applies to the Gaussian mechanisms")
    assert out == "" and "DauM-G" in line and "--epsilon" in line and "NoNoise" not in line
    # One Gaussian mechanism among them: the table has its row (the others are listed).
    rc, out, err = run(capsys, "calibrate", *args, "--mechanism", "DauM-G", *target, "--json")
    assert rc == 0, err
    assert [c["name"] for c in strict_json(out)["mechanisms"]] == ["DauM-G"]


def test_a_table_without_a_row_is_refused(capsys):
    """Every mechanism asked for is not applicable (here ε = 5e-324 overflows ExpM-L): one line
    with each reason, never an empty table and exit 0."""
    args = ("calibrate", "--epsilon", "5e-324", "--mechanism", "ExpM-L", "--modeling", "exact")
    rc, out, err = run(capsys, *args)
    assert_one_line_error(rc, err, "no mechanism could be calibrated: ExpM-L is not applicable")
    assert out == ""


@pytest.mark.parametrize("eps", ["5e-324", "1e-310"])
def test_subnormal_epsilon_does_not_abort_the_table(capsys, eps):
    few = ["--modeling", "exact", "--mechanism", "ExpM-L", "--mechanism", "GroupDP-L"]
    few += ["--mechanism", "ExpM-G", "--mechanism", "DauM-G", "--mechanism", "GroupDP-G"]
    rc, out, err = run(capsys, "calibrate", "--epsilon", eps, "--json", *few)
    assert rc == 0, err
    d = strict_json(out)
    assert "ExpM-L" in d["not_applicable"]
    assert "not applicable" in d["not_applicable"]["ExpM-L"]
    assert "overflow" in d["not_applicable"]["ExpM-L"]
    assert {m["name"] for m in d["mechanisms"]} >= {"ExpM-G", "DauM-G"}


def test_calibrate_all_python_lists_failures():
    cals, skipped = calibrate_all(adult_free_model(), EpsDelta(5e-324, 1e-3))
    assert "ExpM-L" in skipped and "GroupDP-L" in skipped
    for c in cals:
        assert math.isfinite(c.expected_l2_error)
    with pytest.raises(DistPrivacyError, match="epsilon"):
        calibrate_all(adult_free_model(), EpsDelta(-1.0, 1e-3))


def test_local_distp_tiny_sigma(capsys):
    rc, _out, err = run(capsys, "local", "distp", "--mechanism", "gaussian", "--param", "1e-300")
    assert_one_line_error(rc, err, "--param")


@pytest.fixture
def huge_column_csv(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"g": np.where(np.arange(400) % 2 == 0, "a", "b"), "x": 1e300 * (1 + rng.random(400))}
    )
    frame["y"] = frame["x"] * 1e7  # finite (≤ 2e307), but sums and squares overflow
    path = tmp_path / "huge.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("stat", ["mean:x", "sum:y", "mean:y", "count:g==a,mean:y"])
@pytest.mark.parametrize("modeling", ["exact", "monte-carlo"])
def test_column_near_1e300_names_the_statistic(capsys, huge_column_csv, stat, modeling):
    args = ["--data", huge_column_csv, "--protect", "g==a", "--statistics", stat]
    rc, _out, err = run(capsys, "calibrate", *args, "--modeling", modeling, "--samples", "50")
    name = stat.split(",")[-1].replace(":", "(") + ")"
    assert_one_line_error(rc, err, name, "finite")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's, before the library refuses
def test_overflow_python(huge_column_csv):
    frame = pd.read_csv(huge_column_csv)
    with pytest.raises(DistPrivacyError, match=r"sum\(y\) is not a finite number"):
        Query.parse("mean:x,sum:y").evaluate(frame)
    with pytest.raises(DistPrivacyError, match="finite"):
        GaussianModel(["a", "b"], [[0.0], [1.0]], [[[math.inf]], [[1.0]]], [("a", "b")])
    spec = ProtectionSpec("g==a", 100, [0.45, 0.55])
    # The overflow is refused when the model is fitted, naming the statistic.
    with pytest.raises(DistPrivacyError, match=r"statistic 'mean\(y\)' is not finite"):
        fit_model(frame, spec, Query.parse("count:g==a,mean:y"), method="exact")
    # E‖Z‖₂ is finite and homogeneous for tiny and huge scales.
    for s in (1e-300, 1e-200, 1.0, 1e200):
        e = expected_norm("laplace", np.array([s, 2 * s]))
        assert math.isfinite(e) and e == pytest.approx(s * expected_norm("laplace", [1.0, 2.0]))


# ---------------------------------------------------------------------------------------------
# 5. Exact values: never released or echoed without --allow-exact / allow_exact=True
# ---------------------------------------------------------------------------------------------

NONOISE = ["release", "--mechanism", "NoNoise", "--values", "0.45,0.46", "--subset-size", "1000"]
NONOISE += ["--epsilon", "5", "--seed", "3"]


@pytest.mark.slow
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_nonoise_release_needs_allow_exact(capsys, json_flag):
    rc, out, err = run(capsys, *NONOISE, *json_flag)
    assert_one_line_error(rc, err, "Theorem 4.4", "--allow-exact")
    assert out == ""
    rc, out, err = run(capsys, *NONOISE, *json_flag, "--allow-exact")
    assert rc == 0, err
    if json_flag:
        d = strict_json(out)
        assert d["calibration"]["noise_family"] == "none"
    else:
        assert "TRUE statistics" in out


def test_attribute_release_never_echoes_the_true_value(capsys):
    rc, out, err = run(capsys, *BP, "--value", "123.456", "--seed", "1", "--json")
    assert rc == 0, err
    d = strict_json(out)
    assert "123.456" not in out and "value" not in d
    assert d["released"] != 123.456
    rc, out, err = run(capsys, *BP, "--value", "123.456", "--seed", "1")
    assert rc == 0 and "123.456" not in out


def test_attribute_zero_noise_needs_allow_exact(capsys):
    rc, out, err = run(capsys, *NO_NOISE_BP, "--value", "98.58", "--json")
    assert_one_line_error(rc, err, "--allow-exact", "Theorem 4.4")
    assert out == ""
    rc, out, err = run(capsys, *NO_NOISE_BP, "--value", "98.58", "--json", "--allow-exact")
    assert rc == 0 and strict_json(out)["released"] == 98.58


def test_python_zero_noise_release_needs_allow_exact():
    model = adult_free_model(spread=1e4)
    cal = NoNoise(EpsDelta(1.0, 1e-3)).calibrate(model)
    assert not cal.adds_noise
    with pytest.raises(ExactReleaseError, match=r"Theorem 4\.4"):
        cal.release([1.0, 2.0])
    rel = cal.release([1.0, 2.0], allow_exact=True)
    np.testing.assert_array_equal(rel.values, [1.0, 2.0])
    noisy = make_mechanism("ExpM-L", EpsDelta(1.0, 0.0)).calibrate(adult_free_model())
    assert noisy.adds_noise
    assert "99.5" not in json.dumps(
        noisy.release([99.5, 101.5], random_state=0).to_dict()["statistics"]
    )


# ---------------------------------------------------------------------------------------------
# 6. JSON output and warnings
# ---------------------------------------------------------------------------------------------


def test_dumps_json_never_writes_nan():
    text = dumps_json({"a": math.nan, "b": [np.float64(math.inf), np.int64(3)], "c": np.ones(2)})
    assert strict_json(text) == {"a": None, "b": ["inf", 3], "c": [1.0, 1.0]}


@pytest.mark.parametrize(
    "args",
    [
        ["calibrate", "--json", "--mechanism", "ExpM-L", "--mechanism", "DauM-G"],
        ["local", "distp", "--mechanism", "tupling", "--k", "2", "--samples", "2000", "--json"],
        ["local", "distp", "--param", "1", "--json", "--at", "0.1,1"],
        [*BP, "--json"],
        [*QUILT, "--json"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_json_outputs_are_strict_json(capsys, args):
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    strict_json(out)


def test_runtime_warnings_do_not_precede_the_error(capsys, huge_column_csv):
    # mean of values near 1e300 overflows inside NumPy (a RuntimeWarning) before the refusal
    with np.errstate(all="warn"):
        rc, _out, err = run(
            capsys, "calibrate", "--data", huge_column_csv, "--protect", "g==a",
            "--statistics", "mean:y", "--modeling", "exact",
        )  # fmt: skip
    assert_one_line_error(rc, err, "mean(y)")
    assert "RuntimeWarning" not in err


def test_usage_errors_are_one_line(capsys):
    for args in (["calibrate", "--no-such-option"], ["nonsense"], ["local", "distp", "--k"]):
        rc, _out, err = run(capsys, *args)
        assert_one_line_error(rc, err, "--help")


# ---------------------------------------------------------------------------------------------
# The console path: real processes
# ---------------------------------------------------------------------------------------------

SUBPROCESS_CASES = [
    (["calibrate", "--seed", "-1"], "--seed"),
    (["release", "--mechanism", "ExpM-L", "--delta", "nan", "--json"], "--delta"),
    (NONOISE, "Theorem 4.4"),
    (["calibrate", "--samples", "1000000000"], "memory"),
    (["local", "city", "--grid", "100000", "--out", "c.csv"], "memory"),
    (["local", "distp", "--mechanism", "gaussian", "--param", "1e-300"], "--param"),
    # Issue 31: an estimator spec naming a function, a μ target of a Laplace mechanism, a new
    # file's path ending in a slash.
    (
        [
            "models",
            "audit",
            *("--data", "t.csv", "--label", "y", "--protect", "a==b"),
            *("--estimator", "sklearn:os:system"),
        ],
        "not a class",
    ),
    (["calibrate", "--mechanism", "ExpM-L", "--target-mu", "1"], "Gaussian mechanisms"),
    (
        [
            "ledger",
            "init",
            "newdir/",
            "--steward-key",
            "k",
            "--secret",
            "s",
            "--protect",
            "a==b",
            "--budget-mu",
            "1",
        ],
        "names a directory",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "needle"), SUBPROCESS_CASES, ids=lambda a: str(a)[:40])
def test_console_one_line_exit_2(adult_dir, tmp_path, args, needle):
    env = {
        **os.environ,
        "DISTPRIVACY_DATA": str(adult_dir),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    res = subprocess.run(
        [sys.executable, "-m", "distprivacy", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert_one_line_error(res.returncode, res.stderr, needle)
    assert res.stdout == ""


def test_new_surfaces_raise_library_errors(tmp_path):
    """Issue 21's API calls that raised TypeError/AttributeError now raise the library's
    one-line errors."""
    import distprivacy as dp

    spec = dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    cov = [[[1.0]], [[1.0]]]
    calls = [
        lambda: dp.load_adult(123),
        lambda: dp.fit_model(None, spec, None),
        lambda: dp.fit_model(None, None, dp.Query.parse("mean:age")),
        lambda: dp.GaussianModel("ab", [[1.0], [2.0]], cov, [("a", "b")]),
        lambda: dp.GaussianModel(["a", "b"], [[1.0], [2.0]], cov, 5),
        lambda: dp.GaussianModel(["a", "b"], [[1.0], [2.0]], cov, [("a", "b", "c")]),
        lambda: dp.Plan.load(5),
        lambda: dp.Ledger(None),
        lambda: dp.Ledger.init(5, steward="k", secret="s", protect="a==b", budget=dp.GDP(1.0)),
        lambda: dp.ProtectionSpec(5, n=100, values=[0.4, 0.5]),
    ]
    for call in calls:
        with pytest.raises(dp.DistPrivacyError) as e:
            call()
        assert "\n" not in str(e.value)
