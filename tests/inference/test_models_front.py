"""The models wing's front door (issue 32 item 4, issue 33 items 5 and 8):
``dp.inference.audit``/``defend`` return typed, frozen results with a verdict and ε/δ; the
``models audit``/``models defend`` commands print exactly those results (their JSON equals
``to_dict()``), fit 60/80/120 columns, and ``models defend`` writes a report and says δ = 1e-3
by default."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import stat

import numpy as np
import pandas as pd
import pytest
from rich.cells import cell_len

import distprivacy as dp
from distprivacy.cli import main
from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference import (
    DefenceSettings,
    GameSettings,
    ModelAuditResult,
    ModelDefendResult,
)
from distprivacy.inference._front import DEFAULT_DELTA, implied_epsilon
from distprivacy.randomness import check_random_state

GAME = GameSettings(n_models=30, n_train=200, features=("x", "z"), n_jobs=1)


def _frame() -> pd.DataFrame:
    """2,000 rows; women (40 %) have a lower positive rate, so the share of women in a
    training set moves every model (as in test_models_audit_cli)."""
    gen = check_random_state(0, secure=False)
    n = 2000
    sex = np.where(gen.random(n) < 0.4, "Female", "Male")
    x, z = gen.standard_normal(n), gen.standard_normal(n)
    logit = 1.5 * x + 0.5 * z + np.where(sex == "Female", -2.0, 1.0)
    y = np.where(gen.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame({"x": x, "z": z, "sex": sex, "y": y})


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("front") / "t.csv"
    _frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def leaky(table):
    return dp.inference.audit(table, "y", "sex==Female", (0.1, 0.7), game=GAME, random_state=1)


@pytest.fixture(scope="module")
def three(table):
    return dp.inference.audit(table, "y", "sex==Female", (0.1, 0.4, 0.7), game=GAME, random_state=1)


@pytest.fixture(scope="module")
def defended(table):
    settings = DefenceSettings(mechanisms=("DauM-G", "OptM-G"), n_query=4)
    game = dataclasses.replace(GAME, features=("x", "z", "sex"))
    return dp.inference.defend(
        table, "y", "sex==Female", (0.1, 0.7), settings=settings, game=game, random_state=3
    )


def test_the_implied_epsilon_inverts_the_accuracy_bound():
    # (ε, δ) bounds every equal-prior accuracy by (e^ε + δ)/(1 + e^ε): the inverse is exact.
    for eps in (0.1, 1.0, 3.0):
        for delta in (0.0, 1e-3, 0.05):
            acc = (math.exp(eps) + delta) / (1 + math.exp(eps))
            assert implied_epsilon(acc, delta) == pytest.approx(eps, abs=1e-12)
    assert implied_epsilon(0.5, 1e-3) == 0.0 and implied_epsilon(1.0, 1e-3) == math.inf


def test_audit_is_typed_frozen_and_says_its_verdict(leaky):
    assert isinstance(leaky, ModelAuditResult) and leaky.ratios == (0.1, 0.7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        leaky.delta = 0.5  # type: ignore[misc]
    assert len(leaky.pairs) == 1 and leaky.regression == ()
    pair, best = leaky.strongest
    assert leaky.reveals and pair.reveals and best.interval[0] > 0.5
    assert leaky.delta == DEFAULT_DELTA == 1e-3
    assert leaky.epsilon_lower_bound == implied_epsilon(best.interval[0], 1e-3) > 0
    assert leaky.verdict.startswith("Verdict: THE SHARE LEAKS")
    assert f"ε ≥ {leaky.epsilon_lower_bound:.3g} at δ = 0.001" in leaky.verdict


def test_the_null_game_reveals_nothing_and_says_so(table):
    null = dp.inference.audit(table, "y", "sex==Female", (0.4, 0.4), game=GAME, random_state=1)
    assert not null.reveals
    assert null.verdict.startswith("Verdict: no attack did measurably better than a coin flip")
    assert "ε = ∞ at δ = 0.001" in null.verdict


def test_more_ratios_are_every_pair_and_the_regression(three):
    assert [p.ratios for p in three.pairs] == [(0.1, 0.4), (0.1, 0.7), (0.4, 0.7)]
    assert len(three.regression) == 2
    out = three.to_dict()
    assert "pairs" in out and "attacks" not in out and out["verdict"] == three.verdict


def test_the_command_prints_the_front_doors_result(table, leaky, capsys):
    """`models audit --json` is ``to_dict()`` of the same call (the command only translates)."""
    args = ["models", "audit", "--data", str(table), "--label", "y", "--features", "x,z",
            "--protect", "sex==Female", "--ratios", "0.1,0.7", "--n-models", "30",
            "--n-train", "200", "--n-jobs", "1", "--seed", "1", "--json"]  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    expected = json.loads(json.dumps(leaky.to_dict()))
    assert out == {**expected, "estimator": "logistic"}
    assert out["delta"] == 0.001 and out["verdict"].startswith("Verdict:")


def _printed(show, *args, width: int, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        show(*args)
    return buf.getvalue()


def _fits(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if cell_len(line) > width]
    assert long == [], long
    assert "…" not in text


@pytest.mark.parametrize("width", [60, 80, 120])
def test_audit_output_fits_the_width_and_ends_with_the_verdict(leaky, three, width, monkeypatch):
    from distprivacy.commands.models_audit import _show

    for result in (leaky, three):
        text = _printed(_show, result, False, width=width, monkeypatch=monkeypatch)
        _fits(text, width)
        flat = " ".join(text.split())
        assert flat.endswith(" ".join(result.verdict.split()))
        assert "δ = 0.001" in flat


@pytest.mark.parametrize("width", [60, 80, 120])
def test_defend_output_fits_the_width_shows_eps_delta_and_a_verdict(defended, width, monkeypatch):
    from distprivacy.commands.models_defend import _print

    text = _printed(_print, defended, width=width, monkeypatch=monkeypatch)
    _fits(text, width)
    flat = " ".join(text.split())
    assert "calibrated to ε = 1, δ = 0.001" in flat
    assert flat.endswith(" ".join(defended.verdict.split()))


def test_defend_is_typed_and_recommends_a_defence_that_held(defended):
    assert isinstance(defended, ModelDefendResult)
    assert defended.delta == 1e-3 and defended.epsilon == 1.0
    assert [d.defence for d in defended.defences] == ["none", "DauM-G", "OptM-G"]
    none = defended.undefended
    assert none.epsilon is None and none.max_attack_accuracy is None and not none.holds
    best = defended.recommended
    assert best is not None and best.holds and best.delta == 1e-3
    held = [d for d in defended.defences[1:] if d.holds]
    assert best.expected_l2_error == min(d.expected_l2_error for d in held)
    assert all(a.interval[0] <= best.max_attack_accuracy for a in best.attacks)
    assert defended.verdict.startswith(f"Verdict: release with {best.defence}")
    assert "ε = 1, δ = 0.001 (verified)" in defended.verdict
    out = defended.to_dict()
    assert out["delta"] == 1e-3 and out["recommended"] == best.defence
    assert out["defences"][1]["delta"] == 1e-3


def test_defend_settings_refuse_bad_values_in_one_line():
    for kwargs, words in [
        ({"release": "weights"}, "`release`"),
        ({"mechanisms": ("ExpM-L",)}, "non-Gaussian"),
        ({"mechanisms": ()}, "non-Gaussian"),
        ({"epsilon": 0}, "`epsilon`"),
        ({"delta": 1}, "`delta`"),
        ({"level": 0.3}, "`level`"),
        ({"n_query": 0}, "`n_query`"),
    ]:
        with pytest.raises(DistPrivacyError) as err:
            DefenceSettings(**kwargs)
        assert words in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DistPrivacyError, match="`n_models`"):
        GameSettings(n_models=0)
    assert DefenceSettings().delta == 1e-3  # one δ default, as everywhere else


def test_defend_report_and_the_delta_default_on_the_command(table, tmp_path, capsys):
    report = tmp_path / "defend.html"
    args = ["models", "defend", "--data", str(table), "--label", "y", "--features", "x,z,sex",
            "--protect", "sex==Female", "--ratios", "0.1,0.7", "--n-models", "30",
            "--n-train", "200", "--n-query", "4", "--n-jobs", "1", "--seed", "3",
            "--mechanism", "DauM-G,OptM-G", "--json", "--report", str(report)]  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["delta"] == 0.001 and out["verdict"].startswith("Verdict:")
    html = report.read_text(encoding="utf-8")
    assert "Model defence report" in html and "defences-table" in html
    assert "ε = 1, δ = 0.001" in html
    assert stat.S_IMODE(os.stat(report).st_mode) & 0o044  # no exact statistic: usual mode
    assert main(["models", "defend", "--help"]) == 0
    assert "0.001" in capsys.readouterr().out


def test_the_commands_only_use_the_front_door():
    """``models audit``/``models defend`` import from the models wing only its front door
    (the game's internals, the shape of the game included, live in the library)."""
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "distprivacy" / "commands"
    for name in ("models_audit.py", "models_defend.py"):
        tree = ast.parse((src / name).read_text(encoding="utf-8"))
        used = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("distprivacy.inference")
        }
        assert used <= {"distprivacy.inference", "distprivacy.inference._front"}, (name, used)
