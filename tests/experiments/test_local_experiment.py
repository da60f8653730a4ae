"""The local-distp experiment (quick mode) and the ``distprivacy local`` commands."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.experiments.local_distp import run
from distprivacy.local import RandomizedResponse, clustered_city, distp_epsilon, grid

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("local-distp")
    notes: list[str] = []
    result = run(out, quick=True, seed=0, data_dir=None, progress=notes.append)
    return out, result, notes


def test_quick_run_writes_everything(quick_run):
    out, result, notes = quick_run
    assert result["report"] == out / "report.md"
    assert result["timings"]["total"] > 0
    for name in ("city", "curves", "equal_privacy", "tupling_k", "theorem_checks", "timings"):
        assert (out / f"{name}.csv").stat().st_size > 0
    for name in ("city", "epsilon_sql", "epsilon_k"):
        assert (out / f"{name}.png").stat().st_size > 10_000
    text = result["report"].read_text()
    assert "Does tupling beat the others at equal (ε, δ)?" in text
    assert ("**beats**" in text) or ("**not** beat" in text) or ("did not reach" in text)
    assert "Bayes-factor reading" in text
    assert notes and notes[0].startswith("local-distp")


def test_calibrated_mechanisms_meet_the_target_exactly(quick_run):
    out, _, _ = quick_run
    eq = pd.read_csv(out / "equal_privacy.csv")
    plain = eq[eq["mechanism"] != "Tupling over RR"].dropna(subset=["value"])
    assert len(plain) >= 6
    np.testing.assert_allclose(plain["epsilon"], plain["target_epsilon"], rtol=1e-6)
    # theorem-based ε is never below the exact one
    assert (plain["theorem_epsilon"] >= plain["epsilon"] - 1e-9).all()
    checks = pd.read_csv(out / "theorem_checks.csv")
    assert (checks["theorem"] >= checks["exact"] - 1e-12).all()


def test_experiment_numbers_are_recomputable(quick_run):
    """Recompute one row of the report from the library: RR calibrated at the first target."""
    out, _, _ = quick_run
    city = pd.read_csv(out / "city.csv")
    g = grid(8)
    lam0, lam1 = clustered_city(g, random_state=0)
    np.testing.assert_allclose(city["lambda0"], lam0)
    eq = pd.read_csv(out / "equal_privacy.csv")
    row = eq[(eq["mechanism"] == "RR")].iloc[0]
    eps = distp_epsilon(RandomizedResponse(64, row["value"]), lam0, lam1, 1e-3).epsilon
    assert eps == pytest.approx(row["target_epsilon"], rel=1e-6)
    tk = pd.read_csv(out / "tupling_k.csv")
    assert (tk["epsilon_certified"] >= tk["epsilon"] - 1e-12).all()
    assert set(tk["method"]) <= {"exact", "enumeration", "monte-carlo"}


def test_reproduce_cli_runs_the_target(tmp_path, capsys):
    assert main(["reproduce", "local-distp", "--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "local-distp" / "report.md").exists()


def test_local_distp_cli_text_and_json(tmp_path, capsys):
    assert main(["local", "distp", "--grid", "6", "--param", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    lam0, lam1 = clustered_city(grid(6), random_state=0)
    want = distp_epsilon(RandomizedResponse(36, 2.0), lam0, lam1, 1e-3).epsilon
    assert out["distp_epsilon"] == pytest.approx(want)
    assert out["distp_method"] == "closed-form" and out["sql_km"] > 0
    assert main(["local", "distp", "--grid", "6", "--mechanism", "laplace", "--param", "1"]) == 0
    text = capsys.readouterr().out
    assert "DistP at δ = 0.001" in text and "ε·W∞" in text
    args = ["local", "distp", "--grid", "5", "--mechanism", "tupling", "--k", "8"]
    assert main([*args, "--base-epsilon", "3", "--samples", "5000", "--json"]) == 0
    tup = json.loads(capsys.readouterr().out)
    assert tup["distp_method"] == "monte-carlo"
    assert main([*args, "--samples", "5000", "--at", "0.1,0.5", "--json"]) == 0
    prof = json.loads(capsys.readouterr().out)["profile"]
    assert prof["method"] == "monte-carlo" and len(prof["delta_upper"]) == 2
    assert main(["local", "distp", "--grid", "4", "--param", "2", "--at", "0,0.1"]) == 0
    assert "δ(0.1) = " in capsys.readouterr().out
    assert tup["distp_epsilon_upper"] >= tup["distp_epsilon"]
    csv = tmp_path / "pair.csv"
    assert main(["local", "city", "--grid", "5", "--seed", "3", "--out", str(csv)]) == 0
    capsys.readouterr()
    common = ["local", "distp", "--grid", "5", "--param", "1", "--json"]
    assert main([*common, "--pair", str(csv)]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert main(["local", "distp", "--grid", "5", "--seed", "3", "--param", "1", "--json"]) == 0
    generated = json.loads(capsys.readouterr().out)
    assert from_file["distp_epsilon"] == pytest.approx(generated["distp_epsilon"], rel=1e-12)
    assert not math.isnan(from_file["sql_km"])


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["local", "distp", "--mechanism", "tupling", "--k", "-2"], "k (number of dummies)"),
        (["local", "distp", "--param", "0"], "epsilon must be a positive"),
        (["local", "distp", "--param", "-1"], "epsilon must be a positive"),
        (["local", "distp", "--mechanism", "gaussian"], "--param is required"),
        (["local", "distp", "--param", "1", "--delta", "2"], "delta must be in"),
        (["local", "distp", "--param", "1", "--at", "x"], "cannot read --at"),
    ],
)
def test_cli_bad_inputs(args, match, capsys):
    assert main([*args, "--grid", "4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and match in err and err.count("\n") == 1


def test_cli_bad_pair_files(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"lambda0": [0.5, 0.6], "lambda1": [0.5, 0.5]}).to_csv(bad, index=False)
    assert main(["local", "distp", "--grid", "4", "--pair", str(bad), "--param", "1"]) == 2
    assert "has 2 rows but the grid has 16 cells" in capsys.readouterr().err
    g = grid(2)
    assert g.size == 4
    bad4 = tmp_path / "bad4.csv"
    pd.DataFrame({"lambda0": [0.5, 0.6, 0, 0], "lambda1": [0.25] * 4}).to_csv(bad4, index=False)
    assert main(["local", "distp", "--grid", "2", "--pair", str(bad4), "--param", "1"]) == 2
    assert "sums to 1.1" in capsys.readouterr().err
    nocol = tmp_path / "nocol.csv"
    pd.DataFrame({"p": [0.25] * 4}).to_csv(nocol, index=False)
    assert main(["local", "distp", "--grid", "2", "--pair", str(nocol), "--param", "1"]) == 2
    assert "lacks column" in capsys.readouterr().err
