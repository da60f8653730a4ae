"""`distprivacy models defend`: Gaussian mechanisms on what a model releases, re-attacked by
adversaries who know the noise."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.inference.models_audit import make_estimator
from distprivacy.inference.models_defend import defend_game, evaluate_release, with_noise_scaled
from distprivacy.randomness import check_random_state
from distprivacy.targets import EpsDelta


def _frame() -> pd.DataFrame:
    """4,000 rows; women (40 %) have a lower positive rate, so the share of women in a
    training set moves every model's intercept and outputs (as in test_models_audit_cli)."""
    gen = check_random_state(0, secure=False)
    n = 4000
    sex = np.where(gen.random(n) < 0.4, "Female", "Male")
    x = gen.standard_normal(n)
    z = gen.standard_normal(n)
    logit = 1.5 * x + 0.5 * z + np.where(sex == "Female", -2.0, 1.0)
    y = np.where(gen.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame({"x": x, "z": z, "sex": sex, "y": y, "tree": np.arange(n) % 3})


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("defend") / "t.csv"
    _frame().to_csv(path, index=False)
    return path


GAME = dict(label="y", protect="sex==Female", ratios=(0.1, 0.7), features=["x", "z", "sex"],
            target=EpsDelta(1.0, 1e-5), n_models=60, n_train=300, n_jobs=1)  # fmt: skip


@pytest.fixture(scope="module", params=["outputs", "parameters"])
def defended(request):
    # 3 mechanisms × 2 attacks = 6 checks per release: Bonferroni level 1 − 0.05/6, so that
    # if every guarantee holds the chance that any interval lies wholly above its bound is at
    # most 5 % / 2 = 2.5 % per release (one-sided); with the fixed seed it is deterministic.
    return defend_game(
        _frame(), estimator=make_estimator("logistic"), release=request.param, n_query=4,
        random_state=3, level=1 - 0.05 / 6, **GAME,
    )  # fmt: skip


def test_defence_aware_attacks_stay_within_the_bound(defended):
    rows = {r["defence"]: r for r in defended.rows}
    # The undefended release leaks: the likelihood-ratio test's interval excludes 1/2.
    assert rows["none"]["attacks"][0]["ci95"][0] > 0.5
    for name in ("ExpM-G", "DauM-G", "OptM-G"):
        assert name in rows, defended.skipped
        r = rows[name]
        assert r["verified"] and 0.5 < r["max_attack_accuracy"] < 1
        assert r["within_bound"], r
        for a in r["attacks"]:
            assert a["ci95"][0] <= r["max_attack_accuracy"], (name, a)


def test_too_small_noise_is_caught(defended):
    # The DauM-G noise ×0.01 with DauM-G's claim unchanged: the release is then almost the
    # undefended one, whose likelihood-ratio test is far above the claimed bound (checked at
    # 95 %: a true bound is exceeded so with probability ≤ 2.5 %).
    cal = next(c for c in defended.calibrations if c.mechanism == "DauM-G")
    wrong = with_noise_scaled(cal, 0.01)
    assert wrong.max_attack_accuracy == cal.max_attack_accuracy
    (row,) = evaluate_release(
        defended.adversary_values, defended.released_values, defended.task_accuracy,
        {"wrong": wrong}, random_state=0,
    )  # fmt: skip
    assert row["attacks"][0]["ci95"][0] > cal.max_attack_accuracy
    assert row["attacks"][0]["exceeds_bound"] and row["within_bound"] is False


def test_defended_release_still_predicts(defended):
    rows = {r["defence"]: r for r in defended.rows}
    # The label is predictable (logit slope 1.5 on x): the undefended release beats a coin by
    # far; the noise is sized to the G0/G1 gap of the release (bounds ≈ 0.54), which is small
    # against the spread of the outputs across rows, so the defended release still predicts.
    assert rows["none"]["task_accuracy"] > 0.7
    for name in ("ExpM-G", "DauM-G", "OptM-G"):
        assert rows[name]["task_accuracy"] > 0.6


def _defend(table, *extra):
    return ["models", "defend", "--data", str(table), "--label", "y", "--features", "x,z,sex",
            "--protect", "sex==Female", "--ratios", "0.1,0.7", "--n-models", "30",
            "--n-train", "200", "--n-query", "4", "--n-jobs", "1", *extra]  # fmt: skip


def test_cli_json_and_save(table, tmp_path, capsys):
    out_file = tmp_path / "release.json"
    assert main(_defend(table, "--json", "--save", str(out_file))) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["release"] == "outputs" and out["dimension"] == 4
    assert out["defences"][0]["defence"] == "none"
    saved = json.loads(out_file.read_text())
    assert stat.S_IMODE(os.stat(out_file).st_mode) == 0o600
    assert saved["format"] == "distprivacy-defended-release" and saved["secure_noise"]
    first = next(r for r in out["defences"] if r["mechanism"] == "DauM-G")
    assert saved["calibration"]["name"] == "DauM-G"
    assert saved["guarantee"]["max_attack_accuracy"] == pytest.approx(first["max_attack_accuracy"])
    assert len(saved["values"]) == len(saved["query_rows"]) == 4
    import hashlib

    body = {k: v for k, v in saved.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode()).hexdigest() == saved["digest"]


def test_cli_human_output_parameters(table, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # wide enough that no name folds (80: see width tests)
    assert main(_defend(table, "--release", "parameters", "--mechanism", "OptM-G")) == 0
    out = capsys.readouterr().out
    assert "OptM-G" in out and "LR test" in out and "likelihood-ratio test" in out
    assert "parameters" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ratios", "0.4,0.4"], "equal"),
        (["--ratios", "0.4"], "two or more"),
        (["--ratios", "0.1,0.4,0.1"], "equal"),
        (["--ratios", "0.1,0.4,0.401"], "both give 80 protected rows of 200"),
        (["--ratios", "0.3,0.30000000001"], "both give 60 protected rows of 200"),
        (["--ratios", ",".join(f"{k / 20:g}" for k in range(12))], "give at most 11"),
        (["--release", "parameters", "--estimator", "tree"], "linear model"),
        (["--mechanism", "ExpM-L"], "non-Gaussian"),
        (["--label", "tree"], "binary"),
        (["--n-query", "40"], "--n-models"),
        (["--save", "."], "directory"),
    ],
)
def test_bad_input_is_one_line(table, capsys, extra, message):
    assert main(_defend(table, *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and len(err.strip().splitlines()) == 1


# -- More than two ratios: every pair is a secret -------------------------------------------


@pytest.fixture(scope="module")
def three():
    # 3 mechanisms × 3 pairs × 2 attacks = 18 checks: Bonferroni level 1 − 0.05/18.
    game = {**GAME, "ratios": (0.1, 0.4, 0.7), "n_models": 40}
    return defend_game(
        _frame(), estimator=make_estimator("logistic"), release="outputs", n_query=4,
        random_state=5, level=1 - 0.05 / 18, **game,
    )  # fmt: skip


def test_three_ratios_protect_every_pair(three):
    # The calibrated model protects all three pairs, so each mechanism's noise is verified
    # for each (the calibration checks every protected pair of its model).
    model = three.model
    assert [model.theta_label(t) for t in range(3)] == ["G0", "G1", "G2"]
    assert {p for p in model.pair_indices_ if p[0] < p[1]} == {(0, 1), (0, 2), (1, 2)}
    assert three.ratios == (0.1, 0.4, 0.7)
    assert len(three.adversary_values) == len(three.released_values) == 3
    rows = {r["defence"]: r for r in three.rows}
    pairs = [[0.1, 0.4], [0.1, 0.7], [0.4, 0.7]]
    for r in rows.values():
        # Both attacks on each pair, the pairs in order, named by their ratios.
        assert [a["pair"] for a in r["attacks"]] == [p for p in pairs for _ in range(2)]
        assert [a["name"] for a in r["attacks"]] == [
            "likelihood-ratio test (knows the noise)",
            "meta-classifier on noisy shadow releases",
        ] * 3
    # Undefended, the far pair (10 % vs 70 % women) leaks to the likelihood-ratio test.
    far = next(a for a in rows["none"]["attacks"] if a["pair"] == [0.1, 0.7])
    assert far["ci95"][0] > 0.5
    # DauM-G adds noise along one direction v only: three share means off one line are not
    # masked by it, and it says so (not applicable) rather than claim a guarantee.
    if "DauM-G" not in rows:
        assert "direction v" in three.skipped["DauM-G ε=1"]
    for name in ("ExpM-G", "OptM-G", *(["DauM-G"] if "DauM-G" in rows else [])):
        assert name in rows, three.skipped
        r = rows[name]
        assert r["verified"] and r["within_bound"], r
        assert all(a["ci95"][0] <= r["max_attack_accuracy"] for a in r["attacks"])


def test_three_ratios_too_small_noise_is_caught(three):
    cal = next(c for c in three.calibrations if c.mechanism == "OptM-G")
    (row,) = evaluate_release(
        three.adversary_values, three.released_values, three.task_accuracy,
        {"wrong": with_noise_scaled(cal, 0.01)}, random_state=0, ratios=three.ratios,
    )  # fmt: skip
    far = [a for a in row["attacks"] if a["pair"] == [0.1, 0.7]]
    assert any(a["exceeds_bound"] for a in far) and row["within_bound"] is False


def test_two_ratios_results_unchanged_by_the_pairs(defended):
    # The k-ratio evaluation on two ratios is the two-ratio game: same names, same draws.
    a = evaluate_release(
        defended.adversary_values, defended.released_values, defended.task_accuracy,
        {"none": None}, random_state=1,
    )  # fmt: skip
    b = evaluate_release(
        defended.adversary_values, defended.released_values, defended.task_accuracy,
        {"none": None}, random_state=1, ratios=defended.ratios,
    )  # fmt: skip
    assert [x["name"] for x in a[0]["attacks"]] == [
        "likelihood-ratio test (knows the noise)",
        "meta-classifier on noisy shadow releases",
    ]
    assert [x["accuracy"] for x in a[0]["attacks"]] == [x["accuracy"] for x in b[0]["attacks"]]
    assert b[0]["attacks"][0]["pair"] == list(defended.ratios)


def test_evaluate_release_refuses_mismatched_releases(defended):
    from distprivacy.exceptions import DistPrivacyError

    with pytest.raises(DistPrivacyError, match="two or more"):
        evaluate_release(
            defended.adversary_values[:1], defended.released_values[:1],
            defended.task_accuracy, {"none": None}, random_state=0,
        )  # fmt: skip


def test_cli_three_ratios_json(table, capsys):
    args = _defend(table, "--json", "--mechanism", "OptM-G")
    args[args.index("--ratios") + 1] = "0.1,0.4,0.7"
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ratios"] == [0.1, 0.4, 0.7]
    for row in out["defences"]:
        assert len(row["attacks"]) == 6


@pytest.mark.slow
@pytest.mark.parametrize("width", [60, 80, 120])
def test_cli_three_ratios_text_fits_the_terminal(table, capsys, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    args = _defend(table, "--mechanism", "DauM-G,OptM-G")
    args[args.index("--ratios") + 1] = "0.1,0.4,0.7"
    assert main(args) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= width
    assert "pair" in out and "DauM-G" in out and "not calibrated" in out
    if width >= 80:  # each pair named whole in its column (at 60 a cell may fold)
        for pair in ("0.1 vs 0.4", "0.1 vs 0.7", "0.4 vs 0.7"):
            assert pair in out


@pytest.mark.slow
def test_cli_level_and_the_chance_of_a_false_flag(table, capsys, monkeypatch):
    """--level sets the intervals' confidence: JSON keeps ci95 the 95 % interval and gives the
    one at the level as ci (with level); the table shows the latter. Out-of-range levels are
    one-line refusals."""
    monkeypatch.setenv("COLUMNS", "120")
    args = _defend(table, "--json", "--level", "0.99")
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["level"] == 0.99
    first = out["defences"][0]["attacks"][0]
    wide, ci95 = first["ci"], first["ci95"]
    assert first["level"] == 0.99 and wide[0] < ci95[0] and wide[1] > ci95[1]
    assert main(_defend(table, "--json")) == 0
    again = json.loads(capsys.readouterr().out)["defences"][0]["attacks"][0]
    assert again["ci95"] == ci95 and "ci" not in again  # the same game, the same 95 % interval
    assert main(_defend(table, "--level", "0.99")) == 0
    assert "accuracy [0.99 CI]" in capsys.readouterr().out
    for bad in ("0.3", "1", "nan"):
        assert main(_defend(table, "--level", bad)) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and "--level" in err and len(err.strip().splitlines()) == 1


def test_the_false_flag_note_counts_the_checks():
    from distprivacy.commands.models_defend import _print
    from distprivacy.inference import DefenceSettings, ModelDefendResult
    from distprivacy.inference._front import DefenceAttack, DefenceOutcome

    attack = DefenceAttack("likelihood-ratio test (knows the noise)", (0.1, 0.7), 0.7,
                           (0.6, 0.8), exceeds_bound=True)  # fmt: skip
    row = DefenceOutcome("DauM-G", 1.0, 1e-3, True, 0.55, 0.8, 0.1, (attack, attack), False)
    result = ModelDefendResult("sex==Female", (0.1, 0.7), "logistic", DefenceSettings(), 4,
                               (row, row), {})  # fmt: skip
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        _print(result)
    text = " ".join(buf.getvalue().split())
    # 4 checks at 95 %: 1 − 0.975⁴ = 9.6 %, and 1 − 0.05/4 = 0.9875.
    assert "4 intervals were checked at 0.95 each" in text
    assert "up to 10%" in text and "--level 0.9875" in text
    assert "Verdict: no defence both verified" in text
