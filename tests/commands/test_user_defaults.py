"""The user's file, the user's defaults (issue 23, item 4): a ``--data FILE`` of the user's
needs ``--protect`` and ``--statistics`` (Adult's defaults would name columns it may not have);
δ ≥ 1/n warns; ``release --plan`` needs only the columns the statistics read."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from ledger_world import ROOMY, cli_ledger

from distprivacy.cli import main

ADULT_STATS = (
    "mean:age,mean:education_num,count:marital_status==Never-married,count:sex==Female,"
    "mean:hours_per_week"
)


@pytest.fixture(autouse=True)
def _env(monkeypatch, adult_dir, tmp_path):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def table(adult, tmp_path_factory):
    """A user's table: four columns of 2,000 Adult records."""
    path = tmp_path_factory.mktemp("user") / "my.csv"
    adult[["age", "sex", "hours_per_week", "income"]].head(2000).to_csv(path, index=False)
    return path


def _error(capsys, *args: str) -> str:
    rc = main(list(args))
    cap = capsys.readouterr()
    assert rc == 2, cap.out
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), cap.err
    return lines[0]


@pytest.mark.parametrize("command", ["calibrate", "release", "audit"])
@pytest.mark.parametrize(
    "given, missing",
    [
        ((), "--protect and --statistics"),
        (("--protect", "sex==Female"), "--statistics"),
        (("--statistics", "mean:age"), "--protect"),
    ],
)
@pytest.mark.parametrize("engine", ["auto", "pandas"])
def test_a_user_file_needs_protect_and_statistics(command, given, missing, engine, table, capsys):
    line = _error(capsys, command, "--data", str(table), "--engine", engine, *given)
    assert f"--data {table} needs {missing}:" in line
    assert "(columns: age, sex, hours_per_week, income)" in line
    # The example names a column of each kind: a numeric one for the mean.
    assert "--statistics mean:age" in line and "--protect 'sex==VALUE'" in line


def test_given_both_it_runs(table, capsys):
    args = ["calibrate", "--data", str(table), "--protect", "sex==Female", "--statistics"]
    assert main([*args, "mean:age", "--mechanism", "DauM-G", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["statistics"] == ["mean(age)"]


def test_a_config_file_counts_as_given(table, tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text('protect = "sex==Female"\nstatistics = "mean:age"\n', encoding="utf-8")
    args = ["calibrate", "--config", str(config), "--data", str(table), "--mechanism", "DauM-G"]
    assert main([*args, "--json"]) == 0
    capsys.readouterr()


def test_the_adult_directory_keeps_its_defaults(adult_dir, capsys):
    assert main(["calibrate", "--data", str(adult_dir), "--mechanism", "DauM-G", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["statistics"]) == 5


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, warns",
    [
        (["calibrate", "--delta", "0.01"], True),  # δ = 1/n exactly (n = 100)
        (["calibrate", "--delta", "0.5"], True),
        (["calibrate", "--delta", "0.0099"], False),
        (["calibrate", "--delta", "0.02", "--subset-size", "50"], True),
        (["calibrate", "--delta", "0.02", "--subset-size", "40"], False),
        (["release", "--delta", "0.05", "--seed", "1"], True),
        # A pure-ε mechanism does not use δ: nothing to warn about.
        (["release", "--delta", "0.05", "--seed", "1", "--mechanism", "ExpM-L"], False),
    ],
)
def test_delta_at_least_one_over_n_warns(args, warns, capsys):
    mech = [] if args[0] == "release" else ["--mechanism", "DauM-G"]
    assert main([*args, *mech, "--samples", "200", "--json"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "is at least 1/n" in ln]
    assert len(lines) == (1 if warns else 0), err
    if warns:
        n = int(args[args.index("--subset-size") + 1]) if "--subset-size" in args else 100
        assert f"1/n = {1 / n:.3g} (n = {n} records)" in lines[0]


def test_delta_help_texts():
    from click.testing import CliRunner

    from distprivacy.cli import cli

    out = CliRunner().invoke(cli, ["calibrate", "--help"], terminal_width=200).output
    assert "Privacy loss ε" in out and "keep it well below 1/n" in out


def test_a_plan_needs_only_the_statistics_columns(adult, tmp_path, capsys):
    plan = str(tmp_path / "plan.json")
    assert main(["calibrate", "--mechanism", "DauM-G", "--save", plan, "--samples", "200"]) == 0
    capsys.readouterr()
    rich_ = adult[adult["income"] == ">50K"].sample(45, random_state=1)
    poor = adult[adult["income"] != ">50K"].sample(55, random_state=1)
    target = pd.concat([rich_, poor])
    read = ["age", "education_num", "marital_status", "sex", "hours_per_week"]
    path = tmp_path / "t.csv"
    target[read].to_csv(path, index=False)  # no income column: no statistic reads it
    assert main(["release", "--plan", plan, "--target", str(path), "--seed", "1", "--json"]) == 0
    released = json.loads(capsys.readouterr().out)["statistics"]
    assert list(released) == [
        "mean(age)",
        "mean(education_num)",
        "count(marital_status==Never-married)",
        "count(sex==Female)",
        "mean(hours_per_week)",
    ]
    # A column a statistic reads is still required ...
    target[read[1:]].to_csv(path, index=False)
    line = _error(capsys, "release", "--plan", plan, "--target", str(path), "--seed", "1")
    assert "lacks column age that the plan's statistics read" in line
    # ... and the target check still refuses a dataset the model does not describe.
    other = target[read].copy()
    other["age"] = other["age"] * 10
    other.to_csv(path, index=False)
    line = _error(capsys, "release", "--plan", plan, "--target", str(path), "--seed", "1")
    assert "mean(age)" in line and "the model does not describe this target" in line


def test_a_ledger_names_why_it_needs_the_property_column(adult, adult_dir, tmp_path, capsys):
    """A registered file without the secret's column: the release is refused in one line
    naming the column and why the ledger needs it (no statistic reads it)."""
    plan = tmp_path / "plan.json"
    assert (
        main(["calibrate", "--mechanism", "DauM-G", "--save", str(plan), "--samples", "200"]) == 0
    )
    path = tmp_path / "t.csv"
    cols = ["age", "education_num", "marital_status", "sex", "hours_per_week"]
    adult[cols].head(100).to_csv(path, index=False)
    ledger, _ = cli_ledger(tmp_path, adult_dir, ROOMY, {"t": path}, {"p": plan})
    capsys.readouterr()
    line = _error(capsys, "release", "--ledger", str(ledger), "--dataset", "t", "--plan", "p")
    assert "lacks column income, the protected property's" in line
    assert "a ledger needs it to identify the dataset" in line


def test_a_ledger_release_from_a_toml_config(adult, adult_dir, tmp_path, capsys):
    """`ledger`, `dataset` and `plan` (a name) in a config file release as the options do."""
    plan = tmp_path / "plan.json"
    assert (
        main(["calibrate", "--mechanism", "DauM-G", "--save", str(plan), "--samples", "200"]) == 0
    )
    path = tmp_path / "t.csv"
    adult.head(100).to_csv(path, index=False)
    ledger, _ = cli_ledger(tmp_path, adult_dir, ROOMY, {"t": path}, {"p": plan})
    config = tmp_path / "c.toml"
    config.write_text(f'ledger = "{ledger}"\ndataset = "t"\nplan = "p"\njson = true\n')
    capsys.readouterr()
    assert main(["release", "--config", str(config)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["ledger"]["release_id"] == 1 and got["target"] == "registered dataset t"


@pytest.mark.parametrize(
    ("command", "line", "words"),
    [
        ("release", "ledger = 5", "ledger in 'c.toml' takes a path in quotes"),
        ("release", "dataset = 5", "dataset in 'c.toml' takes text in quotes"),
        ("release", "report = 5", "report in 'c.toml' takes a path in quotes"),
        ("calibrate", "report = 5", "report in 'c.toml' takes a path in quotes"),
        ("calibrate", "report = 5.5", "not float 5.5"),
        ("calibrate", "save = 1", "save in 'c.toml' takes a path in quotes"),
        ("release", "target = 1", "target in 'c.toml' takes a path in quotes"),
        ("calibrate", "data = 2024-01-01", "data in 'c.toml' takes a path in quotes"),
        ("calibrate", "protect = 3", "protect in 'c.toml' takes text in quotes"),
        ("calibrate", "engine = 1", "engine in 'c.toml' takes text in quotes"),
        ("calibrate", "mechanism = [1, 2]", "mechanism in 'c.toml' takes text in quotes"),
        ("calibrate", 'mechanism = [["DauM-G"]]', "must be a flat list"),
    ],
)
def test_a_config_value_of_the_wrong_type_is_one_line(
    table, tmp_path, capsys, command, line, words
):
    """A number where a path or a text belongs (issue 31: `report = 5` was a TypeError inside
    click): one line naming the key and the fix, before any work."""
    config = tmp_path / "c.toml"
    config.write_text(line + "\n", encoding="utf-8")
    args = [command, "--config", str(config), "--data", str(table), "--protect", "sex==Female",
            "--statistics", "mean:age"]  # fmt: skip
    err = _error(capsys, *args)
    assert "Traceback" not in err and words in err


def test_a_config_list_of_text_is_one_value_each(table, tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text('mechanism = ["DauM-G", "ExpM-G"]\n', encoding="utf-8")
    args = ["calibrate", "--config", str(config), "--data", str(table), "--protect",
            "sex==Female", "--statistics", "mean:age", "--json"]  # fmt: skip
    assert main(args) == 0
    got = {m["name"] for m in json.loads(capsys.readouterr().out)["mechanisms"]}
    assert got == {"DauM-G", "ExpM-G"}
