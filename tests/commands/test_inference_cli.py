"""``distprivacy models train | attack | info`` on tiny populations."""

from __future__ import annotations

import json

import numpy as np
import pytest

from distprivacy.cli import main
from distprivacy.inference.population import ModelPopulation

TINY = ["--n-models", "12", "--n-train", "100", "--epochs", "2"]


@pytest.fixture(scope="module")
def pops(adult_dir, tmp_path_factory):
    """Four tiny populations: one through the CLI, three through the same library call."""
    from distprivacy.datasets import load_adult
    from distprivacy.experiments.model_inference import (
        Config,
        load_game_data,
        population_settings,
        train_or_load,
    )

    d = tmp_path_factory.mktemp("pops")
    rc = main(
        ["models", "train", "--property", "sex", "--ratio", "0.5", "--b", "0", *TINY,
         "--out", str(d / "a0.npz"), "--data", str(adult_dir)]
    )  # fmt: skip
    assert rc == 0
    game = load_game_data(load_adult(adult_dir), 0)
    cfg = Config(n_victim=12, n_adversary=12, n_train=100, epochs=2)
    for name, role, ratio, b in (
        ("a1", "adversary", 0.0, 1),
        ("v0", "victim", 0.5, 0),
        ("v1", "victim", 0.0, 1),
    ):
        pop, loaded = train_or_load(
            game, population_settings(cfg, "sex", role, ratio, b, game), None
        )
        assert not loaded
        pop.save(d / f"{name}.npz")
    return d


@pytest.mark.slow
def test_cli_train_matches_the_library(pops, adult_dir):
    """The CLI and the reproduction derive the same seeds: identical models."""
    from distprivacy.datasets import load_adult
    from distprivacy.experiments.model_inference import (
        Config,
        load_game_data,
        population_settings,
        train_or_load,
    )

    game = load_game_data(load_adult(adult_dir), 0)
    cfg = Config(n_victim=12, n_adversary=12, n_train=100, epochs=2)
    ref, _ = train_or_load(game, population_settings(cfg, "sex", "adversary", 0.5, 0, game), None)
    cli = ModelPopulation.load(pops / "a0.npz")
    for a, b in zip(cli.weights, ref.weights, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cli_attack_json(pops, adult_dir, capsys):
    capsys.readouterr()
    rc = main(
        ["models", "attack", "--adversary", str(pops / "a0.npz"), str(pops / "a1.npz"),
         "--victim", str(pops / "v0.npz"), str(pops / "v1.npz"), "--data", str(adult_dir),
         "--attack", "loss", "--attack", "threshold", "--attack", "pin", "--pin-epochs", "2",
         "--n-test", "100", "--json"]
    )  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    names = [a["name"] for a in out["attacks"]]
    assert names == [
        "loss test",
        "threshold test",
        "meta-classifier (permutation-invariant network)",
    ]
    for a in out["attacks"]:
        assert a["n"] == 24
        assert a["ci95"][0] <= a["accuracy"] <= a["ci95"][1]
        assert a["accuracy"] * 24 == pytest.approx(round(a["accuracy"] * 24))


def test_cli_attack_table_and_info(pops, capsys):
    rc = main(
        ["models", "attack", "--adversary", str(pops / "a0.npz"), str(pops / "a1.npz"),
         "--victim", str(pops / "v0.npz"), str(pops / "v1.npz"), "--attack", "sorted-weights"]
    )  # fmt: skip
    assert rc == 0
    assert "sorted weights" in capsys.readouterr().out
    assert main(["models", "info", str(pops / "a1.npz"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_models"] == 12 and info["meta"]["settings"]["ratio"] == 0.0


def _error(capsys, argv) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err
    return err


def test_cli_bad_inputs(pops, tmp_path, capsys):
    adv = ["--adversary", str(pops / "a0.npz"), str(pops / "a1.npz")]
    vic = ["--victim", str(pops / "v0.npz"), str(pops / "v1.npz")]
    assert "no model population file" in _error(
        capsys,
        ["models", "attack", "--adversary", str(tmp_path / "x.npz"), str(pops / "a1.npz"), *vic],
    )
    assert "ratios must lie in [0, 1]" in _error(
        capsys, ["models", "train", "--property", "sex", "--ratio", "1.5", "--out", "x.npz"]
    )
    assert "--hidden" in _error(
        capsys,
        [
            "models",
            "train",
            "--property",
            "sex",
            "--ratio",
            "0.5",
            "--hidden",
            "32,a",
            "--out",
            "x",
        ],
    )
    assert "does not exist" in _error(
        capsys,
        [
            "models",
            "train",
            "--property",
            "sex",
            "--ratio",
            "0.5",
            "--out",
            str(tmp_path / "no/x.npz"),
        ],
    )
    assert "is not one of" in _error(
        capsys, ["models", "train", "--property", "age", "--ratio", "0.5", "--out", "x.npz"]
    )
    bare = ModelPopulation.load(pops / "a1.npz")
    ModelPopulation(bare.weights, bare.biases, bare.activation, {}).save(tmp_path / "bare.npz")
    err = _error(
        capsys,
        ["models", "attack", "--adversary", str(pops / "a0.npz"), str(tmp_path / "bare.npz"),
         *vic, "--attack", "loss"],
    )  # fmt: skip
    assert "not trained by `distprivacy models train`" in err
    other = ModelPopulation.load(pops / "a1.npz")
    meta = dict(other.meta)
    meta["settings"] = {**meta["settings"], "property": "race"}
    ModelPopulation(other.weights, other.biases, other.activation, meta).save(tmp_path / "r.npz")
    assert "different properties" in _error(
        capsys,
        ["models", "attack", "--adversary", str(pops / "a0.npz"), str(tmp_path / "r.npz"), *vic],
    )
    assert "--n-test" in _error(capsys, ["models", "attack", *adv, *vic, "--n-test", "0"])


@pytest.mark.slow
def test_cli_reproduce_defence_only(adult_dir, tmp_path, capsys):
    rc = main(
        ["models", "reproduce", "--out", str(tmp_path), "--quick", "--no-figure1", "--no-cases",
         "--no-regression", "--data", str(adult_dir)]
    )  # fmt: skip
    assert rc == 0
    text = (tmp_path / "report.md").read_text()
    assert "distprivacy models reproduce --out" in text and "--no-figure1" in text
    assert (tmp_path / "defence.png").is_file() and not (tmp_path / "figure1.png").exists()
    assert "nothing to run" in _error(
        capsys,
        ["models", "reproduce", "--out", str(tmp_path), "--no-figure1", "--no-cases",
         "--no-regression", "--no-defence"],
    )  # fmt: skip
    assert "--alphas" in _error(
        capsys, ["models", "reproduce", "--out", str(tmp_path), "--alphas", "0,x"]
    )
