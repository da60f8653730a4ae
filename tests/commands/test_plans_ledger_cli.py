"""Issue 14's scenario on Adult, end to end through the command line: a DauM-G plan at ε = 0.5,
two releases of 100 records recorded in a ledger, a third refused by a budget of 1.6 × μ, and
the refusals of a tampered plan and of a target missing a column (exit 2, one line)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

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


def test_two_releases_then_the_budget_refuses_a_third(scenario, capsys):
    root, plan_path, target, plan = scenario
    mu = plan.guarantee.mu
    ledger = root / "ledger.db"
    rc, out, err = run(capsys, "ledger", "init", ledger, "--budget-mu", f"{1.6 * mu!r}")
    assert rc == 0, err
    # An unsealed plan is refused; the steward seals it after review.
    rc, out, err = run(
        capsys, "release", "--plan", plan_path, "--target", target, "--ledger", ledger
    )
    one_line_error(rc, err, "not sealed")
    rc, out, err = run(capsys, "ledger", "seal", ledger, plan_path)
    assert rc == 0 and "sealed" in out, err
    releases = []
    for _ in range(2):
        rc, out, err = run(
            capsys, "release", "--plan", plan_path, "--target", target, "--ledger", ledger,
            "--json",
        )  # fmt: skip
        assert rc == 0, err
        releases.append(json.loads(out))
    shown = json.loads(run(capsys, "ledger", "show", ledger, "--json")[1])
    assert len(shown["releases"]) == 2
    (cum,) = shown["cumulative"]
    # The same statistics twice: F is shared, so μ grows by less than √2.
    assert mu < cum["mu"] < math.sqrt(2) * mu
    assert releases[1]["ledger"]["cumulative"]["mu"] == pytest.approx(cum["mu"], rel=1e-12)
    for key in ("epsilon", "delta", "max_attack_accuracy"):
        assert cum[key] is not None
    before = ledger.read_bytes()
    rc, out, err = run(
        capsys, "release", "--plan", plan_path, "--target", target, "--ledger", ledger
    )
    one_line_error(rc, err, "budget", "μ")
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
