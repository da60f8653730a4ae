"""`distprivacy models info/attack` read the user's saved populations; `models graph` is wired."""

from __future__ import annotations

import json

from sklearn.linear_model import LogisticRegression

from distprivacy.cli import main
from distprivacy.inference.saved import save_population
from distprivacy.randomness import check_random_state


def _population(path, ratio: float, n_models: int, seed: int):
    """Logistic regressions on data whose label rate is ``ratio``: G0 and G1 differ in the
    intercept, so the sorted-weights meta-classifier separates them."""
    gen = check_random_state(seed, secure=False)
    models = []
    for _ in range(n_models):
        X = gen.standard_normal((200, 2))
        y = (gen.random(200) < ratio).astype(int)
        models.append(LogisticRegression().fit(X, y))
    return save_population(path, models, {"ratio": ratio})


def test_info_reads_a_skops_population(tmp_path, capsys):
    path = _population(tmp_path / "g0", 0.2, 2, 0)
    assert main(["models", "info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_models"] == 2 and info["n_parameters"] == 3
    assert info["meta"] == {"ratio": 0.2}


def test_attack_on_saved_populations_separates_clearly_different_ratios(tmp_path, capsys):
    paths = [
        _population(tmp_path / name, ratio, 12, seed)
        for name, ratio, seed in (("a0", 0.2, 1), ("a1", 0.8, 2), ("v0", 0.2, 3), ("v1", 0.8, 4))
    ]
    args = ["models", "attack", "--adversary", str(paths[0]), str(paths[1])]
    args += ["--victim", str(paths[2]), str(paths[3]), "--attack", "sorted-weights", "--json"]
    assert main(args) == 0
    (result,) = json.loads(capsys.readouterr().out)["attacks"]
    # Intercepts near logit(0.2) = -1.39 and logit(0.8) = +1.39 with 200 rows each: the two
    # populations are separated by many standard errors, so the lower 95 % bound exceeds 1/2.
    assert result["n"] == 24 and result["ci95"][0] > 0.5


def test_data_attacks_on_saved_populations_without_settings_fail_in_one_line(tmp_path, capsys):
    a, b = _population(tmp_path / "a", 0.2, 1, 5), _population(tmp_path / "b", 0.8, 1, 6)
    args = ["models", "attack", "--adversary", str(a), str(b), "--victim", str(a), str(b)]
    assert main([*args, "--attack", "loss"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_the_graph_game_is_a_models_command(capsys):
    assert main(["models", "graph", "--help"]) == 0
    assert "GCN" in capsys.readouterr().out
