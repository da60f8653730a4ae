"""Issues 20 and 30: the budget cannot be walked around. The outside campaign's attacks, each
tried through the command line on Adult (DauM-G, ε = 0.5, n = 100, ``income==>50K``, a budget
μ = 1.6 μ₁: room for two releases of one dataset), each starting from an approved plan
released twice on a registered dataset and the third refused: each is now refused, or composed
within the secret's one budget (the joint μ checked against an independent computation)."""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distprivacy.cli import main
from distprivacy.composition import joint_accounting
from distprivacy.mechanisms.plans import Plan, _digest

N = 100
DELTA = 1e-3
#: The campaign's joint μ: two releases of one dataset (μ₂ ≈ 1.40 μ₁) below 1.6 μ₁, a third
#: (μ₃ ≈ 1.70 μ₁) and one of another sample (√(μ₂² + μ₁²) ≈ 1.72 μ₁) above. The budget itself
#: is an attack accuracy halfway between two releases' and three's: the plan's fitted
#: Gaussians have unequal covariances, not μ-GDP, so a μ budget would refuse it.
ROOM = 1.6


def _room(a: float, b: float) -> str:
    """An accuracy budget between the attack bounds ``a`` < ``b`` (as the flag's text)."""
    return repr((a + b) / 2)


def run(capsys, *args: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def refused(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])


def over_budget(rc: int, err: str, earlier: int) -> None:
    refused(rc, err, "would exceed the budget", f"({earlier} earlier releases of this secret)",
            "nothing was recorded")  # fmt: skip


def _calibrate(adult_dir: Path, out: Path, *extra: str) -> Path:
    rc = main(
        ["calibrate", "--data", str(adult_dir), "--subset-size", str(N), "--mechanism",
         "DauM-G", "--epsilon", "0.5", "--save", str(out), "--json", *extra]
    )  # fmt: skip
    assert rc == 0
    return out


def _joint(plan: Plan, datasets: list[int], share: float = 0.0) -> float:
    """The joint μ of releases of ``plan`` (one per entry of ``datasets``) on datasets sharing
    ``share`` of their records, computed here from the plan's model and noise."""
    return _acct(plan, datasets, share).mu


def _accuracy(plan: Plan, datasets: list[int], share: float = 0.0) -> float:
    """The joint attack bound of the same releases (exact profile)."""
    return _acct(plan, datasets, share).max_attack_accuracy


def _acct(plan: Plan, datasets: list[int], share: float = 0.0):
    r = list(range(plan.model.dim))
    z = plan.calibration.noise_covariance
    k = max(datasets) + 1
    overlap = [[1.0 if i == j else share for j in range(k)] for i in range(k)]
    acct = joint_accounting(
        plan.model, [(r, z)] * len(datasets), delta=DELTA, datasets=datasets, overlap=overlap
    )
    assert acct.failure is None
    return acct


@pytest.fixture(scope="module")
def plan(tmp_path_factory, adult_dir):
    """The campaign's plan (calibrated once) and its figures: μ₁ (one release), μ₂, μ₃ (two,
    three releases of one dataset, by the library's joint accounting)."""
    root = tmp_path_factory.mktemp("bypass-plan")
    path = _calibrate(adult_dir, root / "plan.json")
    p = Plan.load(path)
    mu = {k: _joint(p, [0] * k) for k in (1, 2, 3)}
    assert mu[1] == pytest.approx(p.guarantee.mu, rel=1e-9)
    assert mu[2] < ROOM * mu[1] < mu[3]  # the budget is room for two releases of one dataset
    acc = {k: _accuracy(p, [0] * k) for k in (2, 3)}
    room = _room(acc[2], acc[3])
    assert float(room) < _accuracy(p, [0, 0, 1])  # nor for one release of another sample
    return {"path": path, "plan": p, "mu1": mu[1], "mu2": mu[2], "mu3": mu[3], "room": room}


def _ledger(root: Path, plan: dict, adult_dir: Path, files: dict[str, Path],
            budget: str | None = None) -> dict[str, Path]:  # fmt: skip
    """A steward's key and a releaser's, a ledger whose secret ``income`` protects
    ``income==>50K`` on Adult with the campaign's budget, ``files`` registered and the plan
    approved as ``means``."""
    paths = {"steward": root / "steward.key", "releaser": root / "releaser.key",
             "ledger": root / "l.db"}  # fmt: skip
    assert main(["ledger", "keygen", str(paths["steward"])]) == 0
    assert main(["ledger", "keygen", str(paths["releaser"])]) == 0
    assert main(["ledger", "init", str(paths["ledger"]), "--steward-key", str(paths["steward"]),
                 "--secret", "income", "--protect", "income==>50K", "--population",
                 str(adult_dir), "--budget-accuracy",
                 budget if budget is not None else plan["room"]]) == 0  # fmt: skip
    for name, path in files.items():
        assert main(["ledger", "register", str(paths["ledger"]), name, "--steward-key",
                     str(paths["steward"]), "--data", str(path)]) == 0  # fmt: skip
    assert main(["ledger", "approve", str(paths["ledger"]), str(plan["path"]), "--name", "means",
                 "--steward-key", str(paths["steward"])]) == 0  # fmt: skip
    return paths


def _release(capsys, ledger: Path, dataset: str = "wave1", *extra: object):
    return run(capsys, "release", "--ledger", ledger, "--dataset", dataset, "--plan", "means",
               "--json", *extra)  # fmt: skip


def _twice(capsys, ledger: Path, plan: dict) -> None:
    """The campaign's start: two releases recorded (μ₁ then μ₂), the third refused."""
    capsys.readouterr()
    for k, mu in ((1, plan["mu1"]), (2, plan["mu2"])):
        rc, out, err = _release(capsys, ledger)
        assert rc == 0, err
        shown = json.loads(out)["ledger"]
        assert shown["release_id"] == k and shown["releases_of_this_secret"] == k
        assert shown["cumulative"]["mu"] == pytest.approx(mu, rel=1e-9)
    before = ledger.read_bytes()
    over_budget(*_release(capsys, ledger)[::2], 2)
    assert ledger.read_bytes() == before


def _shown(capsys, ledger: Path) -> dict:
    rc, out, err = run(capsys, "ledger", "show", ledger, "--json")
    assert rc == 0, err
    (secret,) = [s for s in json.loads(out)["secrets"] if s["secret"] == "income"]
    return secret


@pytest.fixture(scope="module")
def records(adult):
    return adult.sample(n=N, random_state=1)


@pytest.fixture(scope="module")
def spent(tmp_path_factory, plan, adult_dir, records):
    """The campaign's ledger: ``wave1`` (100 Adult records) registered, ``means`` approved,
    released twice (the budget spent). Tests that change it work on a copy (:func:`_copy`)."""
    root = tmp_path_factory.mktemp("bypass")
    target = root / "records.csv"
    records.to_csv(target, index=False)
    paths = _ledger(root, plan, adult_dir, {"wave1": target})
    for _ in range(2):
        assert main(["release", "--ledger", str(paths["ledger"]), "--dataset", "wave1",
                     "--plan", "means", "--json"]) == 0  # fmt: skip
    return {**paths, "root": root, "target": target}


def _copy(spent: dict, tmp_path: Path) -> dict[str, Path]:
    """A copy of the spent ledger (with its key and anchor) and of the steward's keys; its
    dataset is the registered file (left as it is)."""
    out = {"ledger": tmp_path / "copy.db"}
    for suffix in ("", ".key", ".anchor", "-wal"):
        src = Path(str(spent["ledger"]) + suffix)
        if src.exists():
            shutil.copy(src, str(out["ledger"]) + suffix)
    for k in ("steward", "releaser"):
        out[k] = tmp_path / f"{k}.key"
        shutil.copy(spent[k], out[k])
    return out


# -- the campaign's start -------------------------------------------------------------------------


def test_the_campaign_two_releases_then_the_third_refused(spent, plan, capsys):
    before = spent["ledger"].read_bytes()
    rc, out, err = _release(capsys, spent["ledger"])
    over_budget(rc, err, 2)
    assert out == "" and spent["ledger"].read_bytes() == before
    s = _shown(capsys, spent["ledger"])
    assert s["releases"] == 2 and s["within_budget"]
    assert s["mu"] == pytest.approx(plan["mu2"], rel=1e-9)  # = the joint accounting's μ₂


# -- R0: a poisoned --data handed to a recorded release --------------------------------------------


def test_r0_a_release_with_a_ledger_takes_no_data(spent, plan, capsys, tmp_path, records):
    """calibrate-and-release with a poisoned --data under --ledger: the release command with a
    ledger takes only the names of a registered dataset and an approved plan."""
    poisoned = tmp_path / "poisoned.csv"
    records.assign(income="<=50K").to_csv(poisoned, index=False)
    led = spent["ledger"]
    before = led.read_bytes()
    named = ("release", "--ledger", led, "--dataset", "wave1", "--plan", "means")
    for argv, words in (
        ((*named, "--data", poisoned), ("drop --data",)),
        ((*named, "--target", poisoned), ("drop --target",)),
        ((*named, "--data", poisoned, "--protect", "income==>50K", "--mechanism", "DauM-G"),
         ("drop --data", "--protect", "--mechanism")),
        (("release", "--ledger", led, "--data", poisoned, "--mechanism", "DauM-G"),
         ("--dataset NAME --plan NAME",)),
        ((*named[:-1], plan["path"]), ("no plan named",)),  # a plan file is not a name
        (("release", "--ledger", led, "--dataset", "poisoned", "--plan", "means"),
         ("no dataset named 'poisoned'",)),
    ):  # fmt: skip
        rc, out, err = run(capsys, *argv)
        refused(rc, err, *words)
        assert out == ""
    assert led.read_bytes() == before
    assert _shown(capsys, led)["releases"] == 2


# -- R1/R6: the registered file re-spelled or its ages moved ---------------------------------------


def test_r1_r6_a_rewritten_file_gets_no_new_budget(plan, adult_dir, records, capsys, tmp_path):
    """The property is the secret's declared predicate, whatever the file spells; a rewritten
    file is a changed file (refused until the steward registers it) — and its new version
    shares the secret's budget with the old one's releases."""
    target = tmp_path / "records.csv"
    records.to_csv(target, index=False)
    paths = _ledger(tmp_path, plan, adult_dir, {"wave1": target})
    led = paths["ledger"]
    _twice(capsys, led, plan)
    original = target.read_bytes()
    rewritten = {
        "the property's other value re-spelled (R1)": records.assign(
            income=records["income"].replace("<=50K", "small")
        ),
        "ages given to other records (R6)": records.assign(
            age=records["age"].sample(frac=1.0, random_state=2).to_numpy()
        ),
    }
    before = led.read_bytes()
    for frame in rewritten.values():
        frame.to_csv(target, index=False)
        rc, out, err = _release(capsys, led)
        refused(rc, err, "dataset 'wave1'", "changed since it was registered")
        assert out == ""
        rc, _, err = run(capsys, "ledger", "register", led, "wave1", "--steward-key",
                         paths["releaser"], "--data", target)  # fmt: skip
        refused(rc, err, "not the ledger's steward")
        rc, _, err = run(capsys, "ledger", "secret", led, "income2", "--protect",
                         "income!=<=50K", "--budget-accuracy", "0.99", "--steward-key",
                         paths["releaser"])  # fmt: skip
        refused(rc, err, "not the ledger's steward")
    assert led.read_bytes() == before
    # The steward registers the re-spelled file as the new version: the records whose income
    # is >50K are unchanged (measured shared), and its release is the secret's third.
    rewritten["the property's other value re-spelled (R1)"].to_csv(target, index=False)
    rich = int((records["income"] == ">50K").sum())
    rc, out, err = run(capsys, "ledger", "register", led, "wave1", "--steward-key",
                       paths["steward"], "--data", target)  # fmt: skip
    assert rc == 0 and "registered wave1 version 2" in out, err
    assert f"{rich} records shared with wave1@1" in out
    over_budget(*_release(capsys, led)[::2], 2)
    # A plan for the property re-spelled is not the secret's: not approved.
    other = _calibrate(adult_dir, tmp_path / "other.json", "--protect", "income!=<=50K")
    rc, _, err = run(capsys, "ledger", "approve", led, other, "--name", "other",
                     "--steward-key", paths["steward"])  # fmt: skip
    refused(rc, err, "protects income==>50K", "calibrate protecting income==>50K")
    target.write_bytes(original)  # the first version back is not the registered one now
    refused(*_release(capsys, led)[::2], "changed since it was registered")
    assert _shown(capsys, led)["releases"] == 2


# -- R2: a plan edited and its digest recomputed ------------------------------------------------


def _redigest(raw: dict) -> dict:
    body = {k: v for k, v in raw.items() if k not in ("digest", "seal")}
    return {**raw, "digest": _digest(body)}


def _closer_means(raw: dict) -> None:
    thetas = raw["model"]["thetas"]
    m0 = np.asarray(thetas[0]["mean"], dtype=float)
    for t in thetas:
        t["mean"] = (m0 + (np.asarray(t["mean"], dtype=float) - m0) / 10).tolist()


def _less_noise(raw: dict) -> None:
    cal = raw["calibration"]
    cal["noise"]["scales"] = [s / 10 for s in cal["noise"]["scales"]]
    cal["noise"]["factor"] = [[x / 10 for x in row] for row in cal["noise"]["factor"]]
    cal["noise_scales"] = [s / 10 for s in cal["noise_scales"]]
    cal["noise_covariance"] = [[x / 100 for x in row] for row in cal["noise_covariance"]]


@pytest.mark.parametrize("edit", ["θ-means 10× closer", "noise 10× smaller"])
def test_r2_an_edited_plan_is_approved_by_no_one(spent, plan, capsys, tmp_path, edit):
    """A releaser holds no steward key (any plan refused: "not the ledger's steward"); the
    steward's approval of the edited plan is refused by its own two-sided self-check; a plan
    file given to a recorded release is no approved plan's name."""
    raw = json.loads(plan["path"].read_text())
    {"θ-means 10× closer": _closer_means, "noise 10× smaller": _less_noise}[edit](raw)
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(_redigest(raw)))
    led = spent["ledger"]
    before = led.read_bytes()
    rc, _, err = run(capsys, "ledger", "approve", led, plan["path"], "--name", "mine",
                     "--steward-key", spent["releaser"])  # fmt: skip
    refused(rc, err, "not the ledger's steward")
    for key in ("releaser", "steward"):
        rc, _, err = run(capsys, "ledger", "approve", led, bad, "--name", "closer",
                         "--steward-key", spent[key])  # fmt: skip
        refused(rc, err, "not the guarantee it states")
    rc, _, err = run(capsys, "release", "--ledger", led, "--dataset", "wave1", "--plan", bad)
    refused(rc, err, "no plan named")
    assert led.read_bytes() == before


# -- R3/R4: -wal/-shm deleted after a release; an old copy of the ledger restored ---------------


def test_r3_r4_a_release_cannot_be_unrecorded(plan, adult_dir, records, capsys, tmp_path):
    target = tmp_path / "records.csv"
    records.to_csv(target, index=False)
    led = _ledger(tmp_path, plan, adult_dir, {"wave1": target})["ledger"]
    assert _release(capsys, led)[0] == 0
    old = led.read_bytes()  # (every connection closed: the ledger is this one file)
    assert _release(capsys, led)[0] == 0
    for suffix in ("-wal", "-shm"):  # R3: deleting them does not remove the release
        Path(str(led) + suffix).unlink(missing_ok=True)
    assert _shown(capsys, led)["releases"] == 2
    assert run(capsys, "ledger", "verify", led)[0] == 0
    over_budget(*_release(capsys, led)[::2], 2)
    led.write_bytes(old)  # R4: the copy taken after one release, restored alone
    rc, out, err = run(capsys, "ledger", "verify", led)
    assert rc == 1 and "older than its anchor: 1 releases recorded, the anchor has 2" in err
    rc, out, err = _release(capsys, led)
    refused(rc, err, "older than its anchor", "nothing was recorded")
    assert out == "" and led.read_bytes() == old


# -- R5/R9/R7/R8: re-spelled or re-expressed copies of the registered file ------------------------


def _copies(records: pd.DataFrame) -> dict[str, pd.DataFrame]:
    hours = records["hours_per_week"]
    one = records.copy()
    one.iloc[0, one.columns.get_loc("hours_per_week")] += 1
    return {
        "Male re-spelled male (R5)": records.assign(sex=records["sex"].replace("Male", "male")),
        "one value changed (R9)": one,
        "a derived property column (R7)": records.drop(columns=["income"]).assign(
            rich=np.where(records["income"] == ">50K", "yes", "no")
        ),
        "hours split in two (R8)": records.drop(columns=["hours_per_week"]).assign(
            hours_weekdays=hours - hours // 5, hours_weekend=hours // 5
        ),
    }


#: The copies a release can read (the plan's columns and the property all there).
RELEASABLE = ("Male re-spelled male (R5)", "one value changed (R9)")


def test_r5_r9_r7_r8_copies_of_the_file_share_the_one_budget(
    spent, plan, records, capsys, tmp_path
):
    """A releaser cannot register a copy; the steward registering it under the same secret is
    asked whether it holds wave1's records (the same columns' values, ≥ 20 distinct, but not
    the same records); either answer composes it under the one budget (refused here); under
    another secret it is refused without --confirm-overlap."""
    c = _copy(spent, tmp_path)
    led, steward = c["ledger"], c["steward"]
    assert main(["ledger", "secret", str(led), "rich", "--steward-key", str(steward),
                 "--protect", "rich==yes", "--budget-accuracy", "0.99"]) == 0  # fmt: skip
    capsys.readouterr()
    for k, (name, frame) in enumerate(_copies(records).items()):
        path = tmp_path / f"copy{k}.csv"
        frame.to_csv(path, index=False)
        register = ("ledger", "register", led, f"copy{k}", "--data", path, "--steward-key")
        refused(*run(capsys, *register, c["releaser"], "--secret", "income")[::2],
                "not the ledger's steward")  # fmt: skip
        rc, out, err = run(capsys, *register, steward, "--secret", "income")
        refused(rc, err, "dataset 'wave1'", "the same records re-expressed?",
                "--same-records-as NAME (wave1)", "--independent")  # fmt: skip
        rc, out, err = run(capsys, *register, steward, "--secret", "rich")
        refused(rc, err, "dataset 'wave1' of secret 'income'", "--confirm-overlap")
        if name not in RELEASABLE:
            continue
        for how in ("--same-records-as", "--independent"):
            decision = (how, "wave1") if how == "--same-records-as" else (how,)
            rc, out, err = run(capsys, "ledger", "register", led, f"copy{k}{how[2:6]}",
                               "--data", path, "--steward-key", steward, "--secret", "income",
                               *decision)  # fmt: skip
            assert rc == 0 and "under secret income" in out, (name, how, err)
            over_budget(*_release(capsys, led, f"copy{k}{how[2:6]}")[::2], 2)
    s = _shown(capsys, led)
    assert s["releases"] == 2 and s["mu"] == pytest.approx(plan["mu2"], rel=1e-9)


def test_exact_shared_records_compose_with_the_measured_overlap(
    spent, plan, records, adult, capsys, tmp_path
):
    """Half of wave1's records and 50 others, registered by the steward: 50 shared records
    measured, no question asked; a release of it composes with wave1's two at overlap ½ —
    refused by the campaign's budget, and within a budget raised for it, at the μ the joint
    accounting gives for overlap ½."""
    c = _copy(spent, tmp_path)
    led, steward = c["ledger"], c["steward"]
    half = pd.concat([records.iloc[:50], adult.drop(records.index).sample(50, random_state=4)])
    half.to_csv(tmp_path / "half.csv", index=False)
    rc, out, err = run(capsys, "ledger", "register", led, "half", "--data",
                       tmp_path / "half.csv", "--steward-key", steward)  # fmt: skip
    assert rc == 0 and "50 records shared with wave1@1" in out, err
    over_budget(*_release(capsys, led, "half")[::2], 2)
    expected = _joint(plan["plan"], [0, 0, 1], share=0.5)
    assert plan["mu2"] < ROOM * plan["mu1"] < expected
    room = _room(_accuracy(plan["plan"], [0, 0, 1], share=0.5), 1.0)
    assert main(["ledger", "budget", str(led), "--steward-key", str(steward), "--reason",
                 "half shared", "--budget-accuracy", room]) == 0  # fmt: skip
    capsys.readouterr()
    rc, out, err = _release(capsys, led, "half")
    assert rc == 0, err
    assert json.loads(out)["ledger"]["cumulative"]["mu"] == pytest.approx(expected, rel=1e-9)
    assert expected < _joint(plan["plan"], [0, 0, 1], share=0.0)  # between same and independent
    assert expected > plan["mu3"]


# -- E1: an exact release under a ledger --------------------------------------------------------


def test_e1_allow_exact_with_a_ledger_is_refused_and_nothing_recorded(spent, capsys):
    led = spent["ledger"]
    before = led.read_bytes()
    rc, out, err = _release(capsys, led, "wave1", "--allow-exact")
    refused(rc, err, "--allow-exact", "exceeds every budget", "a ledger does not record one")
    assert out == "" and led.read_bytes() == before
    assert _shown(capsys, led)["releases"] == 2


# -- D1: two samples of the population under one secret --------------------------------------------


def test_d1_two_samples_compose_under_one_budget(plan, adult_dir, adult, capsys, tmp_path):
    """Two disjoint halves of 200 records (each another 100 records of the population) as
    two datasets: 2 + 2 releases compose as independent samples of θ, μ = √2 μ₂ (the
    campaign's 0.4161, above the 0.4074 of four releases of one dataset) — the campaign's
    budget refuses the third release, a budget raised for 2 + 2 the fifth."""
    both = adult.sample(n=2 * N, random_state=3)
    for k, half in enumerate((both.iloc[:N], both.iloc[N:]), start=1):
        half.to_csv(tmp_path / f"half{k}.csv", index=False)
    paths = _ledger(tmp_path, plan, adult_dir,
                    {"wave1": tmp_path / "half1.csv", "wave2": tmp_path / "half2.csv"})  # fmt: skip
    led = paths["ledger"]
    _twice(capsys, led, plan)
    over_budget(*_release(capsys, led, "wave2")[::2], 2)  # √(μ₂² + μ₁²) > 1.6 μ₁
    two_plus_two = _joint(plan["plan"], [0, 0, 1, 1])
    four_on_one = _joint(plan["plan"], [0, 0, 0, 0])
    assert two_plus_two == pytest.approx(math.sqrt(2) * plan["mu2"], rel=1e-9)
    assert two_plus_two == pytest.approx(0.4161, abs=1.5e-4)
    assert four_on_one == pytest.approx(0.4074, abs=1.5e-4)
    room = _room(_accuracy(plan["plan"], [0, 0, 1, 1]), _accuracy(plan["plan"], [0, 0, 0, 1, 1]))
    assert main(["ledger", "budget", str(led), "--steward-key", str(paths["steward"]),
                 "--reason", "two samples", "--budget-accuracy", room]) == 0  # fmt: skip
    capsys.readouterr()
    for _ in range(2):
        rc, out, err = _release(capsys, led, "wave2")
        assert rc == 0, err
    assert json.loads(out)["ledger"]["cumulative"]["mu"] == pytest.approx(two_plus_two, rel=1e-9)
    for name in ("wave1", "wave2"):
        over_budget(*_release(capsys, led, name)[::2], 4)
    s = _shown(capsys, led)
    assert s["releases"] == 4 and s["mu"] == pytest.approx(two_plus_two, rel=1e-9)


# -- earlier cases, adapted --------------------------------------------------------------------


def test_other_statistics_of_the_same_records_share_their_budget(spent, plan, adult_dir,
                                                                 capsys, tmp_path):  # fmt: skip
    """Statistics no earlier release read (capital_loss, fnlwgt), in a plan the steward
    approves: composed with the two releases before (the union refitted on the secret's
    population) — refused by the budget."""
    c = _copy(spent, tmp_path)
    other = _calibrate(adult_dir, tmp_path / "other-stats.json",
                       "--statistics", "mean:capital_loss,mean:fnlwgt")  # fmt: skip
    assert main(["ledger", "approve", str(c["ledger"]), str(other), "--name", "other",
                 "--steward-key", str(c["steward"])]) == 0  # fmt: skip
    capsys.readouterr()
    before = c["ledger"].read_bytes()
    rc, out, err = run(capsys, "release", "--ledger", c["ledger"], "--dataset", "wave1",
                       "--plan", "other")  # fmt: skip
    over_budget(rc, err, 2)
    assert out == "" and c["ledger"].read_bytes() == before


def _copy_spent(spent: dict, tmp_path: Path) -> Path:
    return _copy(spent, tmp_path)["ledger"]


def _tamper_budget(con: sqlite3.Connection) -> None:
    (payload,) = con.execute("SELECT payload FROM events WHERE kind = 'secret'").fetchone()
    body = json.loads(payload)
    body["budget"]["accuracy"] = 0.999
    con.execute("UPDATE events SET payload = ? WHERE kind = 'secret'", (json.dumps(body),))


TAMPERS = {
    "delete a row": "DELETE FROM releases WHERE id = 1",
    "delete the last row": "DELETE FROM releases WHERE id = 2",
    "raise the budget": _tamper_budget,
    "delete the registration": "DELETE FROM events WHERE kind = 'dataset'",
    "move a release to another dataset": (
        "UPDATE releases SET fingerprint = 'dataset:other@1' WHERE id = 1"
    ),
    "inflate stored noise": "UPDATE releases SET noise_covariance = '[[1e9]]' WHERE id = 2",
    "edit the running total": (
        "UPDATE releases SET cumulative = json_set(cumulative, '$.mu', 0.01) WHERE id = 2"
    ),
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_ledger_tampering_is_caught(spent, capsys, tmp_path, tamper):
    led = _copy_spent(spent, tmp_path)
    assert run(capsys, "ledger", "verify", led)[0] == 0
    con = sqlite3.connect(led)
    edit = TAMPERS[tamper]
    if callable(edit):
        edit(con)
    else:
        con.execute(edit)
    con.commit()
    con.close()
    rc, out, err = run(capsys, "ledger", "verify", led)
    assert rc in (1, 2) and ("FAILED" in err or "error:" in err), (tamper, out, err)
    rc, out, err = _release(capsys, led)
    assert rc == 2 and out == "", (tamper, err)


def test_side_doors_are_shut(spent, capsys, tmp_path):
    """Seeds (the noise reproducible) and config files (allow-exact, a seed, an absurdly deep
    file) refused with a ledger; nothing recorded."""
    led = spent["ledger"]
    before = led.read_bytes()
    args = ("release", "--ledger", led, "--dataset", "wave1", "--plan", "means")
    refused(*run(capsys, *args, "--seed", "7")[::2], "--seed")
    for name, text in (("exact-true", "[release]\nallow-exact = true\n"),
                       ("exact-yes", '[release]\nallow-exact = "yes"\n'),
                       ("seed", "[release]\nseed = 7\n"),
                       ("deep", "x = " + "[" * 100 + "]" * 100 + "\n")):  # fmt: skip
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(text)
        rc, out, err = run(capsys, *args, "--config", cfg)
        refused(rc, err, *(("deeper",) if name == "deep" else ()))
        assert out == "", name
    assert led.read_bytes() == before


def test_files_are_private_and_reveal_nothing(spent, plan, records):
    led = str(spent["ledger"])
    for path in (led, led + ".key", led + ".anchor", spent["steward"], plan["path"]):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    blob = spent["ledger"].read_bytes()
    con = sqlite3.connect(spent["ledger"])
    rows = con.execute("SELECT fingerprint, property, plan FROM releases").fetchall()
    (stored,) = con.execute("SELECT plan FROM approved_plans").fetchone()
    con.close()
    assert stored.startswith("enc1:")
    for fp, prop, stored_plan in rows:
        assert fp == "dataset:wave1@1" and prop == "secret:income"
        assert stored_plan is None or stored_plan.startswith("enc1:")
    # The plan's fitted means (exact population statistics) and the records are nowhere in it.
    means = json.loads(plan["path"].read_text())["model"]["thetas"][0]["mean"]
    for m in means:
        assert repr(float(m)).encode() not in blob
    for line in records.head(5).to_csv(index=False).splitlines()[1:]:
        assert line.encode() not in blob


def test_the_steward_key_is_never_written_over(spent, capsys):
    for path in (spent["ledger"], Path(str(spent["ledger"]) + ".key"), spent["steward"]):
        before = path.read_bytes()
        refused(*run(capsys, "ledger", "keygen", path)[::2], "already exists")
        assert path.read_bytes() == before


# -- C1: outputs onto inputs ------------------------------------------------------------------


def _clobber_world(spent: dict, plan: dict, tmp: Path) -> dict[str, str]:
    """Copies of the campaign's files (a case that wrote over one spoils only its copy), and
    the other inputs the commands take: a config file, a model file, a folder of data, a
    symbolic link and a hard link to inputs; the registered file itself (never written)."""
    c = _copy(spent, tmp)
    paths = {"plan": tmp / "plan.json", "target": tmp / "records.csv", "ledger": c["ledger"],
             "key": Path(str(c["ledger"]) + ".key"), "steward": c["steward"]}  # fmt: skip
    shutil.copy(plan["path"], paths["plan"])
    shutil.copy(spent["target"], paths["target"])
    paths["config"] = tmp / "release.toml"
    paths["config"].write_text("delta = 0.001\n")  # an option of calibrate and release
    paths["model"] = tmp / "model.json"
    paths["model"].write_text('{"statistics": ["x"]}\n')  # never read: refused before
    (tmp / "parts").mkdir()
    shutil.copy(spent["target"], tmp / "parts" / "part-0.csv")
    paths["parts"] = tmp / "parts"
    paths["link"] = tmp / "link.html"
    paths["link"].symlink_to(paths["ledger"])
    paths["hard"] = tmp / "hard.html"
    os.link(paths["target"], paths["hard"])
    paths["registered"] = spent["target"]
    return {k: str(v) for k, v in paths.items()}


def _adult_copy(adult_dir: Path, tmp: Path) -> str:
    d = tmp / "adult"
    d.mkdir()
    for name in ("adult.data", "adult.test"):
        shutil.copy(adult_dir / name, d / name)
    return str(d)


_GAME = ("--label", "income", "--protect", "sex==Female")
_NAMED = ("--ledger", "{ledger}", "--dataset", "wave1", "--plan", "means")
#: (command line, the output refused): every command that writes a file, each output flag
#: onto each kind of input — the ledger and its key and -wal file, the registered file,
#: --target, --plan, --data (a file, a folder, the Adult folder), --model, --config — or onto
#: another output.
CLOBBERS = {
    "ledger show --report LEDGER": (("ledger", "show", "{ledger}", "--report", "{ledger}"),
                                    "--report"),
    "ledger show --report KEY": (("ledger", "show", "{ledger}", "--report", "{key}"), "--report"),
    "ledger show --report LEDGER-wal": (("ledger", "show", "{ledger}", "--report",
                                         "{ledger}-wal"), "--report"),
    "ledger show --report SYMLINK-to-LEDGER": (("ledger", "show", "{ledger}", "--report",
                                                "{link}"), "--report"),
    "ledger show --report ./LEDGER": (("ledger", "show", "{ledger}", "--report",
                                       "{tmp}/./parts/../copy.db"), "--report"),
    "ledger backup LEDGER KEY": (("ledger", "backup", "{ledger}", "{key}"), "the backup"),
    "release --ledger --report LEDGER": (("release", *_NAMED, "--report", "{ledger}"),
                                         "--report"),
    "release --ledger --report KEY": (("release", *_NAMED, "--report", "{key}"), "--report"),
    "release --ledger --report REGISTERED-FILE": (("release", *_NAMED, "--report",
                                                   "{registered}"), "--report"),
    "release --report TARGET": (("release", "--plan", "{plan}", "--target", "{target}",
                                 "--report", "{target}"), "--report"),
    "release --report HARDLINK-to-TARGET": (("release", "--plan", "{plan}", "--target",
                                             "{target}", "--report", "{hard}"), "--report"),
    "release --report PLAN": (("release", "--plan", "{plan}", "--target", "{target}",
                               "--report", "{plan}"), "--report"),
    "release --report CONFIG": (("release", "--config", "{config}", "--plan", "{plan}",
                                 "--target", "{target}", "--report", "{config}"), "--report"),
    "release --report DATA": (("release", "--data", "{target}", "--protect", "income==>50K",
                               "--statistics", "mean:age", "--report", "{target}"), "--report"),
    "release --review-report TARGET": (("release", "--plan", "{plan}", "--target", "{target}",
                                        "--review-report", "{target}"), "--review-report"),
    "release --ledger --review-report LEDGER": (("release", *_NAMED, "--review-report",
                                                 "{ledger}"), "--review-report"),
    "release --report P --review-report P": (("release", "--plan", "{plan}", "--target",
                                              "{target}", "--report", "{tmp}/page.html",
                                              "--review-report", "{tmp}/page.html"),
                                             "--review-report"),
    "calibrate --save DATA": (("calibrate", "--data", "{target}", "--mechanism", "DauM-G",
                               "--save", "{target}"), "--save"),
    "calibrate --report DATA": (("calibrate", "--data", "{target}", "--report", "{target}"),
                                "--report"),
    "calibrate --report inside DATA-FOLDER": (("calibrate", "--data", "{parts}", "--report",
                                               "{parts}/report.html"), "--report"),
    "calibrate --report MODEL": (("calibrate", "--model", "{model}", "--report", "{model}"),
                                 "--report"),
    "calibrate --save CONFIG": (("calibrate", "--config", "{config}", "--mechanism", "DauM-G",
                                 "--save", "{config}"), "--save"),
    "calibrate --save P --report P": (("calibrate", "--data", "{target}", "--mechanism",
                                       "DauM-G", "--save", "{plan}", "--report", "{plan}"),
                                      "--report"),
    "audit --report DATA": (("audit", "--data", "{target}", "--report", "{target}"), "--report"),
    "models audit --report DATA": (("models", "audit", "--data", "{target}", *_GAME,
                                    "--report", "{target}"), "--report"),
    "models defend --save DATA": (("models", "defend", "--data", "{target}", *_GAME,
                                   "--save", "{target}"), "--save"),
    "models defend --report DATA": (("models", "defend", "--data", "{target}", *_GAME,
                                     "--report", "{target}"), "--report"),
    "reproduce --report ADULT": (("reproduce", "table2", "--out", "{tmp}/out", "--data",
                                  "{adult}", "--report", "{adult}/adult.data"), "--report"),
    "reproduce --out ADULT-FILE": (("reproduce", "table2", "--out", "{adult}/adult.test",
                                    "--data", "{adult}"), "--out"),
    "models reproduce --out ADULT-FILE": (("models", "reproduce", "--quick", "--out",
                                           "{adult}/adult.data", "--data", "{adult}"), "--out"),
}  # fmt: skip


def _snapshot(root: Path, *also: str) -> dict[str, bytes]:
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()]
    return {str(p): p.read_bytes() for p in [*files, *map(Path, also)]}


@pytest.mark.parametrize("case", list(CLOBBERS))
def test_outputs_never_write_over_inputs(spent, plan, capsys, tmp_path, adult_dir, case):
    """Issue 30 (C1): `ledger show L.db --report L.db` replaced the ledger (its spent budget)
    with HTML, and likewise for every output onto an input — the registered file too, which
    `release --ledger` reads. Each is refused before any work: exit 2, one line naming the
    output, and every file byte for byte as it was (no new one)."""
    argv, flag = CLOBBERS[case]
    files = {**_clobber_world(spent, plan, tmp_path), "tmp": str(tmp_path)}
    if any("{adult}" in a for a in argv):
        files["adult"] = _adult_copy(adult_dir, tmp_path)
    before = _snapshot(tmp_path, files["registered"])
    rc, out, err = run(capsys, *(a.format(**files) for a in argv))
    refused(rc, err, flag)
    assert any(w in err for w in ("which this command reads", "lies inside", "the same file"))
    assert out == "" and _snapshot(tmp_path, files["registered"]) == before


#: Every path option of the command line, as (command, option): what it writes (checked above
#: against every input of its command), or what it only reads. A new path option must be
#: added to one of the two (the test below walks the CLI), and an output to a case above.
WRITES = {
    "calibrate --save", "calibrate --report", "release --report", "release --review-report",
    "audit --report",
    "ledger show --report", "ledger backup out", "reproduce --out", "reproduce --report",
    "models audit --report", "models defend --save", "models defend --report",
    "models reproduce --out",
    # No input to write over: a new ledger, a new steward key (both created exclusively), a
    # generated city, a population (its name ends in .npz, never one of the Adult files read)
    # and a folder rendered again in place.
    "ledger init path", "ledger keygen path", "local city --out", "models train --out",
    "models render out_dir",
}  # fmt: skip
READS = {
    "calibrate --config", "calibrate --data", "calibrate --model", "release --config",
    "release --data", "release --model", "release --target", "release --plan", "release --ledger",
    "audit --data", "audit --model", "ledger backup path", "ledger show path",
    "ledger verify path", "reproduce --data", "attribute gaussian --problem",
    "attribute quilt --data", "local distp --pair", "models attack --adversary",
    "models attack --victim", "models attack --data", "models audit --data",
    "models defend --data", "models info path", "models reproduce --data", "models train --data",
    # The steward's commands write only into the ledger (a database opened in place).
    "ledger init --steward-key", "ledger secret path", "ledger secret --steward-key",
    "ledger register path", "ledger register --steward-key", "ledger register --data",
    "ledger approve path", "ledger approve plan_path", "ledger approve --steward-key",
    "ledger budget path", "ledger budget --steward-key",
    # Replaced by `ledger approve`: refused whatever it is given.
    "ledger seal path", "ledger seal plan_path",
    # The service: its state directory (the ledger, opened in place, and its own database) and
    # the directory datasets are registered from; an analyst's token file (0600, checked).
    "serve --state", "serve --data-root", "release --token-file",
}  # fmt: skip
_NO_INPUT = {
    "ledger init path", "ledger keygen path", "local city --out", "models train --out",
    "models render out_dir",
}  # fmt: skip


def _covers(argv: tuple[str, ...], flag: str) -> str:
    """The (command, option) a case of CLOBBERS writes through."""
    commands = {"ledger", "models", "show", "backup", "audit", "defend", "reproduce", "release",
                "calibrate"}  # fmt: skip
    words = [a for a in argv[:3] if a in commands]
    return " ".join([*words, {"the backup": "out"}.get(flag, flag)])


def test_every_path_option_is_classified_and_every_output_checked():
    """Walk the command line: each path option reads or writes (no third kind), and each
    output of a command that reads files has a case in CLOBBERS."""
    import click

    from distprivacy.cli import cli

    found = set()

    def walk(cmd: click.Command, prefix: str) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{prefix} {name}".strip())
        for p in cmd.params:
            if isinstance(p.type, click.Path):
                found.add(f"{prefix} {p.opts[0] if p.opts[0].startswith('--') else p.name}")

    walk(cli, "")
    assert found == WRITES | READS and not WRITES & READS, sorted(found ^ (WRITES | READS))
    covered = {_covers(argv, flag) for argv, flag in CLOBBERS.values()}
    assert covered == WRITES - _NO_INPUT, sorted(covered ^ (WRITES - _NO_INPUT))


# -- the property: no re-encoding of a registered file buys a fresh budget -----------------------


@pytest.fixture(scope="module")
def reencoded(tmp_path_factory, plan, adult_dir, records):
    """A spent ledger of its own (its registered file is rewritten by the property test)."""
    root = tmp_path_factory.mktemp("bypass-property")
    target = root / "records.csv"
    records.to_csv(target, index=False)
    paths = _ledger(root, plan, adult_dir, {"wave1": target})
    for _ in range(2):
        assert main(["release", "--ledger", str(paths["ledger"]), "--dataset", "wave1",
                     "--plan", "means", "--json"]) == 0  # fmt: skip
    return {**paths, "root": root, "target": target, "count": [0]}


_SPELLED = ("workclass", "sex", "race", "income", "marital_status")
_UNITS = {"age": 12, "hours_per_week": 60, "fnlwgt": 0.001, "education_num": 2}


@st.composite
def reencodings(draw):
    """A re-encoding of the registered table: columns re-spelled, numbers in other units,
    rows and columns reordered, an id column added, one value changed (each drawn)."""
    spelled = draw(st.lists(st.sampled_from(_SPELLED), unique=True, max_size=3))
    how = draw(st.sampled_from(["lower", "upper", "prefix"]))
    units = draw(st.lists(st.sampled_from(sorted(_UNITS)), unique=True, max_size=2))
    rows = draw(st.one_of(st.none(), st.integers(0, 2**16)))
    cols = draw(st.one_of(st.none(), st.integers(0, 2**16)))
    ids = draw(st.sampled_from([None, "range", "random"]))
    change = draw(st.one_of(st.none(), st.tuples(st.integers(0, N - 1),
                                                 st.sampled_from(sorted(_UNITS)))))  # fmt: skip
    return spelled, how, units, rows, cols, ids, change


def _reencode(records: pd.DataFrame, encoding) -> pd.DataFrame:
    spelled, how, units, rows, cols, ids, change = encoding
    out = records.copy()
    for c in spelled:
        out[c] = {"lower": out[c].str.lower(), "upper": out[c].str.upper(),
                  "prefix": "v-" + out[c]}[how]  # fmt: skip
    for c in units:
        out[c] = out[c] * _UNITS[c]
    if change is not None:
        row, c = change
        out.iloc[row, out.columns.get_loc(c)] += 1
    if ids == "range":
        out.insert(0, "id", np.arange(len(out)))
    elif ids == "random":
        out.insert(0, "id", np.random.default_rng(len(spelled)).permutation(10**6)[: len(out)])
    if rows is not None:
        out = out.sample(frac=1.0, random_state=rows)
    if cols is not None:
        out = out[list(np.random.default_rng(cols).permutation(out.columns))]
    return out


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(encoding=reencodings())
def test_no_reencoding_of_a_registered_file_is_a_fresh_budget(reencoded, records, capsys,
                                                               encoding):  # fmt: skip
    """Written over the registered file, a re-encoding is refused as changed since
    registration (the budget refuses the unchanged bytes); registered by the steward as a new
    dataset of the secret, it is refused naming wave1, or registered and its release composed
    with wave1's two — refused by the spent budget. Never a fresh budget."""
    led, target = reencoded["ledger"], reencoded["target"]
    original = target.read_bytes()
    frame = _reencode(records, encoding)
    try:
        frame.to_csv(target, index=False)
        changed = target.read_bytes() != original
        rc, out, err = _release(capsys, led)
        if changed:
            refused(rc, err, "dataset 'wave1'", "changed since it was registered")
        else:
            over_budget(rc, err, 2)
    finally:
        target.write_bytes(original)
    reencoded["count"][0] += 1
    name = f"copy{reencoded['count'][0]}"
    path = reencoded["root"] / f"{name}.csv"
    frame.to_csv(path, index=False)
    rc, out, err = run(capsys, "ledger", "register", led, name, "--data", path,
                       "--steward-key", reencoded["steward"])  # fmt: skip
    if rc != 0:
        refused(rc, err)
        assert "'wave1'" in err or "already registered" in err, err
        return
    assert "under secret income" in out, out
    over_budget(*_release(capsys, led, name)[::2], 2)
