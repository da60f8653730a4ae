"""The population cache of the model-inference reproduction: a cached ``.npz`` is reused only
if it loads; a cut or corrupt one is reported in one line and retrained (never a crash)."""

from __future__ import annotations

import numpy as np
import pytest

from distprivacy.experiments import model_inference as mi
from distprivacy.inference.population import ModelPopulation


@pytest.fixture(scope="module")
def game(adult_dir):
    from distprivacy.datasets import load_adult

    return mi.load_game_data(load_adult(adult_dir), 0)


@pytest.mark.parametrize("damage", ["cut", "empty", "garbled"])
def test_a_damaged_cached_population_is_retrained(game, tmp_path, capsys, damage):
    cfg = mi.Config(n_victim=3, n_adversary=3, n_train=100, epochs=1)
    settings = mi.population_settings(cfg, "sex", "victim", 0.5, 0, game)
    pops = tmp_path / "populations"
    first, loaded = mi.train_or_load(game, settings, pops)
    assert not loaded
    path = mi.population_path(pops, settings)
    data = path.read_bytes()
    if damage == "cut":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        middle = len(data) // 2
        path.write_bytes(data[:middle] + b"x" * 64 + data[middle + 64 :])
    capsys.readouterr()
    again, loaded = mi.train_or_load(game, settings, pops)
    assert not loaded
    err = capsys.readouterr().err
    assert err.startswith("warning: retraining the cached population") and err.count("\n") == 1
    assert path.name in err
    for a, b in zip(first.weights, again.weights, strict=True):
        np.testing.assert_array_equal(a, b)
    # The retrained population replaced the damaged file: the next call loads it.
    assert ModelPopulation.load(path).n_models == 3
    _, loaded = mi.train_or_load(game, settings, pops)
    assert loaded
    assert capsys.readouterr().err == ""


def test_the_census_game_is_library_code(game):
    """The game lives in distprivacy.inference.census (the command line imports it from there);
    the reproduction re-exports it, and a CensusTraining gives the same settings as its Config."""
    from distprivacy.inference import census

    for name in ("load_game_data", "population_settings", "train_or_load", "test_sets"):
        assert getattr(mi, name) is getattr(census, name)
    cfg = mi.Config(n_victim=3, n_adversary=3, n_train=100, epochs=1, seed=4)
    plain = census.CensusTraining(n_victim=3, n_adversary=3, n_train=100, epochs=1, seed=4)
    assert census.population_settings(cfg, "race", "adversary", 0.2, 1, game) == (
        census.population_settings(plain, "race", "adversary", 0.2, 1, game)
    )
    d0, _d1, n = census.test_sets(game, "sex", (0.5, 0.0), 50, 3)
    again = census.test_sets(game, "sex", (0.5, 0.0), 50, np.random.default_rng(0))
    assert n == 50 and d0[0].shape == again[0][0].shape == (50, len(game.feature_names))
