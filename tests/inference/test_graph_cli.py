"""``distprivacy models graph``: the mean-degree game from the command line."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from distprivacy.cli import main
from distprivacy.commands.models import models
from distprivacy.commands.models_graph import graph


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    """The command under ``models`` as cli.py registers it (models.add_command(graph))."""
    if "graph" not in models.commands:
        monkeypatch.setitem(models.commands, "graph", graph)


def test_json_output_of_a_small_game(capsys):
    argv = ["models", "graph", "--degrees", "3,4", "--no-split", "--n-models", "12", "--epochs",
            "40", "--attack", "meta-outputs", "--attack", "loss-test", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["graph"] == "karate" and out["degrees"] == [3.0, 4.0] and out["seed"] == 0
    assert set(out["attacks"]) == {"meta-outputs", "loss-test"}
    for o in out["attacks"].values():
        assert o["n0"] == o["n1"] == 12
        assert 0 <= o["accuracy_ci"][0] <= o["accuracy"] <= o["accuracy_ci"][1] <= 1


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--degrees", "3"], "two mean degrees"),
        (["--degrees", "3,x"], "--degrees"),
        (["--degrees", "3,4", "--graph", "cora"], "unknown graph"),
        (["--degrees", "3,4"], "too small to halve"),
        (["--degrees", "3,4", "--random-prune", "1"], "--random-prune"),
        (["--degrees", "3,4", "--graph", "ogbn-arxiv:/no/such/dir"], "lacks edge.csv.gz"),
        (["--degrees", "3,4", "--graph", "sbm:10000000"], "of memory, above the limit"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, args, words):
    assert main(["models", "graph", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and err.count("\n") == 1
