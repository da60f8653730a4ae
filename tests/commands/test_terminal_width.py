"""Every command that prints tables fits the terminal (issue 23, item 2): rendered at 60, 80 and
120 columns (rich reads the width from ``COLUMNS`` when the output is not a terminal), no line
is longer than the width and no number or name is cut short with an ellipsis (``…``, or
``...``), and ``--json`` does not depend on the width."""

from __future__ import annotations

import json
import re

import click
import numpy as np
import pandas as pd
import pytest
from ledger_world import ROOMY, cli_ledger
from rich.cells import cell_len

from distprivacy.cli import cli, main

pytestmark = pytest.mark.slow

WIDTHS = (60, 80, 120)

#: Commands that print tables, each with small inputs and fast flags (``{name}`` → a path of
#: the fixture ``files``) and a title its output must show.
TABLES: dict[str, tuple[list[str], str]] = {
    "calibrate": (["calibrate", "--samples", "200", "--all"], "Calibrations"),
    "release": (["release", "--seed", "1", "--target", "{target}"], "Release by "),
    "audit": (
        ["audit", "--samples", "200", "--audit-samples", "80", "--attack", "logistic"],
        "Empirical lower bounds on ε",
    ),
    "ledger show": (["ledger", "show", "{ledger}"], "Releases (oldest first"),
    "ledger verify": (["ledger", "verify", "{ledger}"], "verified 1 release(s)"),
    "models attack": (
        [
            "models",
            "attack",
            "--adversary",
            "{a0}",
            "{a1}",
            "--victim",
            "{v0}",
            "{v1}",
            "--attack",
            "sorted-weights",
            "--attack",
            "threshold",
            "--n-test",
            "50",
        ],
        "Distinguishing",
    ),
    "models defend": (
        [
            "models",
            "defend",
            "--data",
            "{defend}",
            "--label",
            "y",
            "--features",
            "x,z,sex",
            "--protect",
            "sex==Female",
            "--ratios",
            "0.1,0.7",
            "--n-models",
            "30",
            "--n-train",
            "200",
            "--n-query",
            "4",
            "--n-jobs",
            "1",
            "--seed",
            "3",
        ],
        "Defending the model",
    ),
    "models graph": (
        [
            "models",
            "graph",
            "--degrees",
            "3,4",
            "--no-split",
            "--n-models",
            "4",
            "--epochs",
            "2",
            "--hidden",
            "4",
        ],
        "Mean degree 3 (G0) vs 4 (G1)",
    ),
}

#: The other commands and why they are not rendered here.
NO_TABLE = {
    "serve": "a server: the lines it logs and the steward's first token, no table",
    "ledger init": "one line naming the file and its key",
    "ledger keygen": "one line naming the key and its fingerprint",
    "ledger secret": "one line naming the secret and its budget",
    "ledger register": "one line naming the dataset and its version",
    "ledger approve": "one line naming the approved plan",
    "ledger budget": "one line naming the new budget",
    "ledger seal": "refused: names `ledger approve`",
    "ledger backup": "one line naming the copies",
    "reproduce": "writes files; prints their timings",
    "attribute gaussian": "prints lines, no table",
    "attribute quilt": "prints lines, no table",
    "local city": "writes a file; one line",
    "local distp": "prints lines, no table",
    "models train": "writes a population; one line",
    "models info": "prints lines, no table",
    "models reproduce": "writes files; one line",
    "models render": "writes files; one line",
    "models audit": "widths checked in tests/inference/test_models_front.py",
}

#: A digest shortened on purpose ("head 1f2e3d4c5b6a7980…"), not a cut cell.
_DIGEST = re.compile(r"\b[0-9a-f]{8,}…")
_CUT = re.compile(r"\w(…|\.\.\.)")


def _leaf_commands(group: click.Group, ctx: click.Context, prefix: str = "") -> list[str]:
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            out += _leaf_commands(cmd, ctx, f"{prefix}{name} ")
        else:
            out.append(prefix + name)
    return out


def test_every_command_is_rendered_or_prints_no_table():
    with click.Context(cli) as ctx:
        leaves = set(_leaf_commands(cli, ctx))
    assert leaves == set(TABLES) | set(NO_TABLE)


@pytest.fixture(scope="module")
def files(tmp_path_factory, adult_dir, adult):
    """A 100-record target (45 of them earning >50K), a ledger of secrets holding one release
    of it (registered, with an approved plan), and four tiny model populations."""
    d = tmp_path_factory.mktemp("width")
    rich_ = adult[adult["income"] == ">50K"].sample(45, random_state=0)
    poor = adult[adult["income"] != ">50K"].sample(55, random_state=0)
    target = d / "target.csv"
    pd.concat([rich_, poor]).to_csv(target, index=False)
    ledger = d / "ledger.db"
    env = pytest.MonkeyPatch()
    env.setenv("DISTPRIVACY_DATA", str(adult_dir))
    try:
        plan = d / "plan.json"
        assert main(["calibrate", "--mechanism", "DauM-G", "--save", str(plan), "--json"]) == 0
        ledger, _ = cli_ledger(d, adult_dir, ROOMY, {"target": target},
                               {"plan": plan}, name="ledger.db")  # fmt: skip
        rel = ["release", "--ledger", str(ledger), "--dataset", "target", "--plan", "plan"]
        assert main([*rel, "--json"]) == 0
        tiny = ["--n-models", "12", "--n-train", "100", "--epochs", "2", "--property", "sex",
                "--data", str(adult_dir)]  # fmt: skip
        pops = {"a0": ("0.5", "0", "adversary"), "a1": ("0.0", "1", "adversary"),
                "v0": ("0.5", "0", "victim"), "v1": ("0.0", "1", "victim")}  # fmt: skip
        for name, (ratio, b, role) in pops.items():
            out = d / f"{name}.npz"
            args = ["models", "train", *tiny, "--ratio", ratio, "--b", b, "--role", role]
            assert main([*args, "--out", str(out)]) == 0
    finally:
        env.undo()
    gen = np.random.default_rng(0)  # a table for models defend: y depends on x, z and sex
    sex = np.where(gen.random(2000) < 0.4, "Female", "Male")
    x, z = gen.standard_normal(2000), gen.standard_normal(2000)
    logit = 1.5 * x + 0.5 * z + np.where(sex == "Female", -2.0, 1.0)
    y = np.where(gen.random(2000) < 1 / (1 + np.exp(-logit)), "yes", "no")
    defend = d / "defend.csv"
    pd.DataFrame({"x": x, "z": z, "sex": sex, "y": y}).to_csv(defend, index=False)
    pops_ = {k: d / f"{k}.npz" for k in pops}
    return {"target": target, "ledger": ledger, "defend": defend, **pops_}


@pytest.fixture(scope="module")
def graph_once():
    """The GCN game trained once for the three widths (only its printing is under test)."""
    import distprivacy.inference.graph as graph

    run, results = graph.run_graph_game, []

    def once(*args, **kwargs):
        if not results:
            results.append(run(*args, **kwargs))
        return results[0]

    env = pytest.MonkeyPatch()
    env.setattr(graph, "run_graph_game", once)
    yield
    env.undo()


def _problems(text: str, width: int) -> list[str]:
    bad = []
    for line in text.splitlines():
        if cell_len(line) > width:
            bad.append(f"{cell_len(line)} > {width} columns: {line!r}")
        if _CUT.search(_DIGEST.sub("", line)):
            bad.append(f"cut short: {line!r}")
    return bad


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", list(TABLES))
def test_output_fits_the_width(command, width, files, graph_once, adult_dir, monkeypatch, capsys):
    if command == "models graph":
        pytest.importorskip("torch")  # the [torch] extra: absent on a bare machine
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.setenv("COLUMNS", str(width))
    args, title = TABLES[command]
    rc = main([a.format(**files) for a in args])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert " ".join(title.split()) in " ".join(out.split())
    assert _problems(out, width) == []


def test_a_cut_cell_is_caught():
    """The check itself: rich's ellipsis in a number or a name, and a long line, are found; a
    digest shortened on purpose is not."""
    assert _problems("│ 0.00… │ Approx… │", 80) == ["cut short: '│ 0.00… │ Approx… │'"]
    assert _problems("x" * 61, 60) != []
    assert _problems("head 1f2e3d4c5b6a7980… (keep it)", 60) == []


def test_json_does_not_depend_on_the_width(files, adult_dir, monkeypatch, capsys):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    outs = []
    for width in (60, 200):
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(["release", "--seed", "1", "--target", str(files["target"]), "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1]
