"""Issue 14's scenario on Adult, end to end through the command line: a DauM-G plan at ε = 0.5,
two releases of 100 registered records recorded in a ledger of secrets (issue 30), a third
refused by the secret's budget of 1.6 × μ, and the refusals of a tampered plan and of a target
missing a column (exit 2, one line)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from ledger_world import ROOMY, cli_ledger, room_for

from distprivacy.cli import main
from distprivacy.mechanisms.plans import Plan

N = 100


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_line_error(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, adult_dir):
    """The plan, a 100-record target and the plan's μ."""
    from distprivacy.datasets import load_adult

    root = tmp_path_factory.mktemp("plans")
    plan_path = root / "plan.json"
    rc = main(
        [
            "calibrate",
            "--data", str(adult_dir),
            "--subset-size", str(N),
            "--mechanism", "DauM-G",
            "--epsilon", "0.5",
            "--save", str(plan_path),
            "--json",
        ]
    )  # fmt: skip
    assert rc == 0
    target = root / "records.csv"
    load_adult(adult_dir).sample(n=N, random_state=1).to_csv(target, index=False)
    plan = Plan.load(plan_path)
    return root, plan_path, target, plan


def test_plan_holds_what_a_reviewer_needs(scenario):
    _, plan_path, _, plan = scenario
    raw = json.loads(Path(plan_path).read_text())
    for key in ("spec", "statistics", "modelling", "model", "calibration", "guarantee",
                "assumptions", "data_fingerprint", "library_version", "digest"):  # fmt: skip
        assert raw[key] not in (None, [], {}), key
    assert raw["mechanism"] == "DauM-G" and raw["spec"]["n"] == N
    assert raw["data_fingerprint"].startswith("sha256:")
    assert plan.guarantee.verified and plan.guarantee.mu > 0
    assert plan.digest == raw["digest"]


def test_two_releases_then_the_budget_refuses_a_third(scenario, capsys, adult_dir):
    root, plan_path, target, plan = scenario
    mu = plan.guarantee.mu
    ledger, key = cli_ledger(root, adult_dir, room_for(plan, 2), {"wave1": target})
    capsys.readouterr()
    rel = ["release", "--ledger", ledger, "--dataset", "wave1", "--plan", "means"]
    # A plan the steward has not approved is refused; the steward approves it after review.
    rc, out, err = run(capsys, *rel)
    one_line_error(rc, err, "no plan named 'means'", "ledger approve")
    rc, out, err = run(capsys, "ledger", "approve", ledger, plan_path, "--name", "means",
                       "--steward-key", key)  # fmt: skip
    assert rc == 0 and "approved" in out, err
    releases = []
    for _ in range(2):
        rc, out, err = run(capsys, *rel, "--json")
        assert rc == 0, err
        releases.append(json.loads(out))
    shown = json.loads(run(capsys, "ledger", "show", ledger, "--json")[1])
    assert len(shown["releases"]) == 2
    (cum,) = shown["cumulative"]
    # The same statistics twice: F is shared, so μ grows by less than √2.
    assert mu < cum["mu"] < math.sqrt(2) * mu
    assert releases[1]["ledger"]["cumulative"]["mu"] == pytest.approx(cum["mu"], rel=1e-12)
    for key_ in ("epsilon", "delta", "max_attack_accuracy"):
        assert cum[key_] is not None
    before = ledger.read_bytes()
    rc, out, err = run(capsys, *rel)
    one_line_error(rc, err, "budget", "cumulative δ")
    assert out == ""  # nothing revealed
    assert ledger.read_bytes() == before
    shown = json.loads(run(capsys, "ledger", "show", ledger, "--json")[1])
    assert len(shown["releases"]) == 2


def test_tampered_plan_is_refused(scenario, capsys, tmp_path):
    _, plan_path, target, _ = scenario
    raw = json.loads(Path(plan_path).read_text())
    raw["calibration"]["noise_scales"] = [s / 10 for s in raw["calibration"]["noise_scales"]]
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(raw))
    rc, out, err = run(capsys, "release", "--plan", bad, "--target", target)
    one_line_error(rc, err, "modified")
    assert out == ""


def test_target_without_a_column_is_refused(scenario, capsys, tmp_path):
    import pandas as pd

    _, plan_path, target, _ = scenario
    df = pd.read_csv(target).drop(columns=["age"])
    short = tmp_path / "short.csv"
    df.to_csv(short, index=False)
    rc, _, err = run(capsys, "release", "--plan", plan_path, "--target", short)
    one_line_error(rc, err, "age")
    rc, _, err = run(capsys, "release", "--plan", plan_path, "--target", target, "--epsilon", "2")
    one_line_error(rc, err, "--epsilon")


def test_wrong_size_target_and_values(scenario, capsys, tmp_path):
    import pandas as pd

    _, plan_path, target, plan = scenario
    small = tmp_path / "small.csv"
    pd.read_csv(target).head(N - 1).to_csv(small, index=False)
    rc, _, err = run(capsys, "release", "--plan", plan_path, "--target", small)
    one_line_error(rc, err, str(N - 1), str(N))
    k = len(plan.calibration.statistic_names)
    typical = ",".join(repr(float(x)) for x in plan.model.means_[0])
    rc, out, err = run(
        capsys, "release", "--plan", plan_path, "--value", typical, "--seed", "3", "--json",
    )  # fmt: skip
    assert rc == 0, err
    assert len(json.loads(out)["statistics"]) == k
    # Values no sample of the model's population could have are refused (issue 21).
    rc, out, err = run(
        capsys, "release", "--plan", plan_path, "--value", ",".join(["1"] * k), "--seed", "3"
    )
    one_line_error(rc, err, "implausibly far", "refit")
    assert out == ""


def test_release_from_a_toml_config(scenario, capsys, tmp_path):
    _, plan_path, target, _ = scenario
    cfg = tmp_path / "release.toml"
    cfg.write_text(f'[release]\nplan = "{plan_path}"\ntarget = "{target}"\nseed = 4\njson = true\n')
    rc, out, err = run(capsys, "release", "--config", cfg)
    assert rc == 0, err
    a = json.loads(out)["statistics"]
    rc, out, _ = run(capsys, "release", "--plan", plan_path, "--target", target, "--seed", "4",
                     "--json")  # fmt: skip
    assert json.loads(out)["statistics"] == a
    cfg.write_text('[release]\nplann = "x"\n')
    rc, _, err = run(capsys, "release", "--config", cfg)
    one_line_error(rc, err, "unknown key", "plann")


def test_a_plan_from_a_users_model_file(capsys, tmp_path):
    """`release --model` alone points at plans; a plan from a model file releases --value."""
    model = tmp_path / "m.json"
    model.write_text(
        json.dumps(
            {
                "statistics": ["x", "y"],
                "thetas": [
                    {"label": "a", "mean": [100, 101], "covariance": [[22, -6], [-6, 13]]},
                    {"label": "b", "mean": [99, 102], "covariance": [[22, -6], [-6, 13]]},
                ],
                "pairs": [["a", "b"]],
            }
        )
    )
    rc, _, err = run(capsys, "release", "--model", model)
    one_line_error(rc, err, "--plan", "--value")
    plan = tmp_path / "plan.json"
    rc, out, err = run(
        capsys, "calibrate", "--model", model, "--mechanism", "ExpM-G", "--save", plan, "--json"
    )
    assert rc == 0, err
    saved = json.loads(out)["plan"]
    assert saved["reads"] == "--value a,b,…"
    assert Plan.load(plan).data_fingerprint.startswith("file-sha256:")
    rc, out, err = run(capsys, "release", "--plan", plan, "--value", "100.5,101.2", "--seed", "1",
                       "--json")  # fmt: skip
    assert rc == 0, err
    assert set(json.loads(out)["statistics"]) == {"x", "y"}
    rc, _, err = run(capsys, "release", "--plan", plan, "--value", "100.5")
    one_line_error(rc, err, "--value", "2 statistics")


# -- Issue 31: the backup verifies; plans of other statistics compose on the refit population --


@pytest.fixture(scope="module")
def two_plans(tmp_path_factory, adult):
    """A 2,000-record table, two plans of it releasing different statistics of 50 records
    (exact modelling: fast), a 50-record target, and a second table (other records)."""
    root = tmp_path_factory.mktemp("two")
    data = adult.sample(n=2000, random_state=0)
    data.to_csv(root / "data.csv", index=False)
    adult.drop(data.index).sample(n=2000, random_state=1).to_csv(root / "other.csv", index=False)
    data.sample(n=50, random_state=1).to_csv(root / "target.csv", index=False)
    base = ["calibrate", "--data", root / "data.csv", "--protect", "income==>50K",
            "--subset-size", "50", "--modeling", "exact", "--mechanism", "DauM-G"]  # fmt: skip
    for name, stat in (("p1.json", "mean:age"), ("p2.json", "count:sex==Female")):
        assert main([str(a) for a in (*base, "--statistics", stat, "--save", root / name)]) == 0
    base[2] = root / "other.csv"  # the same statistic as p1, calibrated on other records
    assert (
        main([str(a) for a in (*base, "--statistics", "mean:age", "--save", root / "o.json")]) == 0
    )
    return root


def _approved_ledger(root: Path, tmp_path: Path, capsys) -> tuple[Path, Path]:
    """A ledger whose secret's population is the 2,000-record table, the 50-record target
    registered as ``target`` and the plans p1 and p2 approved; returns (ledger, steward key)."""
    led = cli_ledger(tmp_path, root / "data.csv", ROOMY,
                     {"target": root / "target.csv"},
                     {"p1": root / "p1.json", "p2": root / "p2.json"})  # fmt: skip
    capsys.readouterr()
    return led


def test_a_plan_of_other_statistics_composes_on_the_secrets_population(two_plans, tmp_path, capsys):
    """A release of P2 after one of P1 (other statistics of the same dataset): the ledger
    refits the joint model of both on the secret's population, with nothing handed in. The
    old refit path (--plan --data) is gone: --data is refused with and without --ledger."""
    root = two_plans
    ledger, _ = _approved_ledger(root, tmp_path, capsys)
    rel = ["release", "--ledger", ledger, "--dataset", "target"]
    # A report onto the registered file (or into the population) would write over what the
    # release reads: refused before anything is recorded.
    for onto in (root / "target.csv", root / "data.csv"):
        rc, out, err = run(capsys, *rel, "--plan", "p1", "--report", onto)
        one_line_error(rc, err, "which this command reads")
    rc, out, err = run(capsys, *rel, "--plan", "p1", "--json")
    assert rc == 0, err
    mu1 = json.loads(out)["ledger"]["cumulative"]["mu"]
    rc, out, err = run(capsys, *rel, "--plan", "p2", "--data", root / "data.csv")
    one_line_error(rc, err, "drop --data")
    rc, out, err = run(capsys, "release", "--plan", root / "p2.json", "--target",
                       root / "target.csv", "--data", root / "data.csv")  # fmt: skip
    one_line_error(rc, err, "drop --data")
    rc, out, err = run(capsys, *rel, "--plan", "p2", "--engine", "pandas")
    one_line_error(rc, err, "drop --engine")
    assert len(json.loads(run(capsys, "ledger", "show", ledger, "--json")[1])["releases"]) == 1
    rc, out, err = run(capsys, *rel, "--plan", "p2", "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert list(got["statistics"]) == ["count(sex==Female)"]
    cum = got["ledger"]["cumulative"]["mu"]
    mu2 = Plan.load(root / "p2.json").guarantee.mu
    # Two releases of different statistics of one dataset reveal more than either alone.
    assert math.isfinite(cum) and cum > max(mu1, mu2)
    (shown,) = json.loads(run(capsys, "ledger", "show", ledger, "--json")[1])["cumulative"]
    assert shown["mu"] == pytest.approx(cum, rel=1e-12)
    rc, out, err = run(capsys, "ledger", "verify", ledger)
    assert rc == 0 and "verified 2 release(s)" in out, err


def test_backup_of_a_ledger_that_fails_verification(two_plans, tmp_path, capsys):
    import sqlite3

    ledger, _ = _approved_ledger(two_plans, tmp_path, capsys)
    rc, _, err = run(capsys, "release", "--ledger", ledger, "--dataset", "target", "--plan", "p1")
    assert rc == 0, err
    rc, out, err = run(capsys, "ledger", "backup", ledger, tmp_path / "good.db")
    assert rc == 0 and "backed up" in out and err == "", err
    con = sqlite3.connect(ledger)
    con.execute("UPDATE releases SET release_values = '[0.0]'")
    con.commit()
    con.close()
    rc, out, err = run(capsys, "ledger", "backup", ledger, tmp_path / "copy.db")
    one_line_error(rc, err, "fails verification at release 1", "--force")
    assert out == "" and not (tmp_path / "copy.db").exists()
    rc, out, err = run(capsys, "ledger", "backup", ledger, tmp_path / "copy.db", "--force")
    assert rc == 0 and "backed up" in out, err
    assert err.startswith("warning: BROKEN LEDGER COPIED (forced)") and err.count("\n") == 1
    assert (tmp_path / "copy.db").is_file()


def test_a_plan_of_another_population_is_not_approved(two_plans, tmp_path, capsys):
    """A plan calibrated on other records than the secret's population: the joint model of
    its releases with the others' would rest on data it never saw, so approving it is refused
    in one line and nothing is released with it."""
    root = two_plans
    ledger, key = _approved_ledger(root, tmp_path, capsys)
    rc, out, err = run(capsys, "ledger", "approve", ledger, root / "o.json", "--name", "o",
                       "--steward-key", key)  # fmt: skip
    one_line_error(rc, err, "population")
    assert out == ""
    rc, out, err = run(capsys, "release", "--ledger", ledger, "--dataset", "target", "--plan", "o")
    one_line_error(rc, err, "no plan named 'o'")
    assert json.loads(run(capsys, "ledger", "show", ledger, "--json")[1])["releases"] == []
