"""The steward's and the releaser's commands on a ledger of secrets (issue 30), end to end on
Adult: keygen, init, register, approve, release twice, the third refused with the budget's
figures, show and verify; what a releaser can no longer do."""

from __future__ import annotations

import json
import os
import stat

import pytest

from distprivacy.cli import main
from distprivacy.mechanisms.plans import Plan

N = 100


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


@pytest.fixture(scope="module")
def flow(tmp_path_factory, adult_dir, adult):
    root = tmp_path_factory.mktemp("secrets")
    plan = root / "plan.json"
    assert main(["calibrate", "--data", str(adult_dir), "--subset-size", str(N), "--mechanism",
                 "DauM-G", "--epsilon", "0.5", "--save", str(plan), "--json"]) == 0  # fmt: skip
    records = adult.sample(n=N, random_state=1)
    records.to_csv(root / "records.csv", index=False)
    adult.drop(records.index).sample(n=N, random_state=2).to_csv(root / "other.csv", index=False)
    mu = Plan.load(plan).guarantee.mu
    return {"root": root, "plan": plan, "mu": mu, "adult_dir": adult_dir}


def test_the_whole_flow(flow, capsys):
    root = flow["root"] / "whole"
    root.mkdir()
    key, led = root / "steward.key", root / "l.db"
    rc, out, err = run(capsys, "ledger", "keygen", key)
    assert rc == 0 and "fingerprint" in out, err
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    rc, out, err = run(capsys, "ledger", "init", led, "--steward-key", key, "--secret", "income",
                       "--protect", "income==>50K", "--population", flow["adult_dir"],
                       "--budget-mu", 1.6 * flow["mu"])  # fmt: skip
    assert rc == 0 and "secret income protects income==>50K" in out, err
    rc, out, err = run(capsys, "ledger", "register", led, "wave1", "--steward-key", key,
                       "--data", flow["root"] / "records.csv")  # fmt: skip
    assert rc == 0 and "registered wave1 version 1" in out, err
    # A μ budget cannot hold DauM-G's fitted Gaussians (not μ-GDP): the approval says so and
    # names the budget to give instead; the steward gives an (ε, δ) budget. ε at δ = 0.001:
    # 0.50 after one release, 0.75 after two, above 0.85 after three.
    rc, out, err = run(capsys, "ledger", "approve", led, flow["plan"], "--name", "means",
                       "--steward-key", key)  # fmt: skip
    refused(rc, err, "has a μ budget", "is not μ-GDP", "--budget-epsilon E --budget-delta D")
    rc, out, err = run(capsys, "ledger", "budget", led, "--steward-key", key, "--reason",
                       "the plan is not μ-GDP", "--budget-epsilon", "0.85", "--budget-delta",
                       "0.001")  # fmt: skip
    assert rc == 0 and "(ε, δ) = (0.85, 0.001)" in out, err
    rc, out, err = run(capsys, "ledger", "approve", led, flow["plan"], "--name", "means",
                       "--steward-key", key)  # fmt: skip
    assert rc == 0 and "approved" in out, err
    for k in (1, 2):
        rc, out, err = run(capsys, "release", "--ledger", led, "--dataset", "wave1", "--plan",
                           "means", "--json")  # fmt: skip
        assert rc == 0, err
        shown = json.loads(out)
        assert shown["ledger"]["release_id"] == k
    rc, out, err = run(capsys, "release", "--ledger", led, "--dataset", "wave1", "--plan", "means")
    refused(rc, err, "cumulative δ", "would exceed the budget", "nothing was recorded")
    rc, out, err = run(capsys, "ledger", "show", led, "--json")
    assert rc == 0, err
    shown = json.loads(out)
    (s,) = shown["secrets"]
    assert s["releases"] == 2 and s["within_budget"]
    rc, out, err = run(capsys, "ledger", "show", led)
    assert rc == 0 and "Secret income protects income==>50K" in out, err
    rc, out, err = run(capsys, "ledger", "verify", led)
    assert rc == 0 and "verified 2 release(s)" in out, err


def test_what_a_releaser_can_no_longer_do(flow, capsys):
    root = flow["root"] / "releaser"
    root.mkdir()
    key, other, led = root / "steward.key", root / "releaser.key", root / "l.db"
    assert main(["ledger", "keygen", str(key)]) == 0
    assert main(["ledger", "keygen", str(other)]) == 0
    assert main(["ledger", "init", str(led), "--steward-key", str(key), "--secret", "income",
                 "--protect", "income==>50K", "--population", str(flow["adult_dir"]),
                 "--budget-epsilon", "1", "--budget-delta", "0.001"]) == 0  # fmt: skip
    capsys.readouterr()
    # R0: no calibrate-and-release, no file handed in.
    rc, _, err = run(capsys, "release", "--ledger", led, "--target", flow["root"] / "records.csv",
                     "--plan", "means", "--dataset", "x")  # fmt: skip
    refused(rc, err, "drop --target")
    rc, _, err = run(capsys, "release", "--ledger", led)
    refused(rc, err, "--dataset NAME --plan NAME")
    # R2: approving and registering need the steward's key.
    rc, _, err = run(capsys, "ledger", "approve", led, flow["plan"], "--name", "m",
                     "--steward-key", other)  # fmt: skip
    refused(rc, err, "not the ledger's steward")
    rc, _, err = run(capsys, "ledger", "register", led, "mine", "--steward-key", other,
                     "--data", flow["root"] / "records.csv")  # fmt: skip
    refused(rc, err, "not the ledger's steward")
    rc, _, err = run(capsys, "ledger", "seal", led, flow["plan"])
    refused(rc, err, "ledger approve")
    # E1: an exact release is never recorded.
    rc, _, err = run(capsys, "release", "--ledger", led, "--dataset", "x", "--plan", "m",
                     "--allow-exact")  # fmt: skip
    refused(rc, err, "exceeds every budget")


def test_verify_checks_the_stewards_public_key_kept_apart(flow, capsys):
    """The steward keeps the public key's fingerprint out of band; a ledger remade with
    another key (its events re-signed) fails `ledger verify --steward-public-key`."""
    root = flow["root"] / "pinned"
    root.mkdir()
    key, led = root / "steward.key", root / "l.db"
    rc, out, _ = run(capsys, "ledger", "keygen", key)
    fingerprint = out.split("fingerprint ")[1][:16]
    assert main(["ledger", "init", str(led), "--steward-key", str(key), "--secret", "s",
                 "--protect", "income==>50K", "--population", str(flow["adult_dir"]),
                 "--budget-mu", "1"]) == 0  # fmt: skip
    capsys.readouterr()
    rc, out, err = run(capsys, "ledger", "verify", led, "--steward-public-key", fingerprint)
    assert rc == 0, err
    rc, out, err = run(capsys, "ledger", "verify", led, "--steward-public-key", "0" * 16)
    assert rc == 1 and "made (or remade) by someone else" in err
