"""A ledger of secrets (issue 30): the steward declares what is protected and registers the
datasets, approves plans with a key of their own; releasers name a registered dataset and an
approved plan, and every release under a secret composes with every other."""

from __future__ import annotations

import os
import shutil
import stat

import numpy as np
import pandas as pd
import pytest
from secrets_world import N, make_plan

from distprivacy.composition import compose_gaussian
from distprivacy.ledger import BudgetExceededError, Ledger, LedgerError, StewardKey
from distprivacy.ledger._compose import merge_repeats
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy


@pytest.fixture(scope="module")
def plan(adult):
    return make_plan(adult)


@pytest.fixture
def world(tmp_path, adult, adult_dir, plan):
    """A steward key, a ledger whose secret's budget fits two releases of ``plan``, and two
    registered datasets: 100 Adult records, and 100 others. The budget is an attack accuracy
    (the plan's fitted Gaussians are not μ-GDP: a μ budget would refuse it)."""
    steward = StewardKey.generate(tmp_path / "steward.key")
    mu = plan.guarantee.mu
    everything = list(range(plan.model.dim))
    noise = plan.calibration.noise_covariance
    joint = compose_gaussian(plan.model, merge_repeats([(everything, noise)] * 2), delta=1e-3)
    two, acc2 = joint.mu, joint.max_attack_accuracy
    led = Ledger.init(
        tmp_path / "l.db",
        steward=steward,
        secret="income",
        protect="income==>50K",
        budget=MaxAttackAccuracy(0.5 + (acc2 - 0.5) * 1.01),
        population=adult_dir,
    )
    a = adult.sample(n=N, random_state=1)
    b = adult.drop(a.index).sample(n=N, random_state=2)
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    led.register(steward, "wave1", tmp_path / "a.csv")
    led.approve(steward, plan, "means")
    yield {"ledger": led, "steward": steward, "mu": mu, "two": two, "a": a, "b": b,
           "dir": tmp_path, "plan": plan}  # fmt: skip
    led.close()


def test_two_releases_then_refused(world):
    led = world["ledger"]
    r1 = led.release("means", "wave1")
    assert r1.cumulative.mu == pytest.approx(world["mu"], rel=1e-9)
    r2 = led.release("means", "wave1")
    assert r2.cumulative.mu == pytest.approx(world["two"], rel=1e-9)
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        led.release("means", "wave1")
    assert led.verify().ok


def test_another_sample_shares_the_secrets_budget(world):
    """D1: another 100 records of the population get no budget of their own: the releases of
    both compose as independent samples of θ (μ √2 × one dataset's)."""
    led, steward = world["ledger"], world["steward"]
    led.register(steward, "wave2", world["dir"] / "b.csv")
    room = EpsDelta(50.0, 0.5)
    assert led.set_budget(steward, None, room, "two samples").budget == room
    led.release("means", "wave1")
    r = led.release("means", "wave2")
    assert r.cumulative.mu == pytest.approx(np.sqrt(2) * world["mu"], rel=1e-9)
    spent = MaxAttackAccuracy(r.cumulative.max_attack_accuracy)  # exactly what is spent
    led.set_budget(steward, None, spent, "no more")
    with pytest.raises(BudgetExceededError):
        led.release("means", "wave2")


def test_a_changed_file_is_refused_until_registered_again(world):
    led, steward = world["ledger"], world["steward"]
    path = world["dir"] / "a.csv"
    changed = world["a"].copy()
    changed.iloc[0, 0] = changed.iloc[0, 0] + 1
    changed.to_csv(path, index=False)
    with pytest.raises(LedgerError, match="changed since it was registered"):
        led.release("means", "wave1")
    d, _ = led.register(steward, "wave1", path)
    assert d.version == 2 and d.shared["dataset:wave1@1"] == N - 1
    led.release("means", "wave1")
    # The new version shares the secret's budget with the old one's releases.
    assert len(led.releases()) == 1


def test_a_releaser_cannot_register_approve_or_raise(world, tmp_path):
    led = world["ledger"]
    other = StewardKey.generate(tmp_path / "releaser.key")
    for call in (
        lambda: led.register(other, "mine", world["dir"] / "b.csv"),
        lambda: led.approve(other, world["plan"], "mine"),
        lambda: led.set_budget(other, None, GDP(10.0), "more"),
    ):
        with pytest.raises(LedgerError, match="not the ledger's steward"):
            call()


def test_plans_and_datasets_are_named_not_given(world):
    led = world["ledger"]
    with pytest.raises(LedgerError, match="no plan named"):
        led.release("other", "wave1")
    with pytest.raises(LedgerError, match="no dataset named"):
        led.release("means", "wave9")


def test_a_plan_for_another_property_is_not_approved(world, adult):
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.models import ExactModel
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec("sex==Female", N, [0.3, 0.5])
    model = ExactModel().fit(adult, spec, Query.parse("mean:age"))
    other = Plan.from_calibration(
        make_mechanism("DauM-G", EpsDelta(0.5, 1e-3)).calibrate(model), model, data=adult
    )
    with pytest.raises(LedgerError, match="protects sex==Female"):
        world["ledger"].approve(world["steward"], other, "sex")


def test_a_schema_2_ledger_opens_read_only(tmp_path):
    src = os.path.join(os.path.dirname(__file__), "..", "data", "ledger_schema2")
    for name in ("ledger.db", "ledger.db.key"):
        shutil.copy(os.path.join(src, name), tmp_path / name)
        os.chmod(tmp_path / name, stat.S_IRUSR | stat.S_IWUSR)
    with Ledger(tmp_path / "ledger.db") as led:
        assert led.read_only
        assert led.verify().ok
        assert len(led.releases()) == 2
        with pytest.raises(LedgerError, match="ledger register"):
            led.release("means", "wave1")


def test_records_shared_are_measured(world, adult):
    """Half of wave1's records in a new file: 50 shared, composed with overlap ½."""
    led, steward = world["ledger"], world["steward"]
    half = pd.concat([world["a"].iloc[:50], world["b"].iloc[:50]])
    half.to_csv(world["dir"] / "half.csv", index=False)
    d, _ = led.register(steward, "half", world["dir"] / "half.csv")
    assert d.shared == {"dataset:wave1@1": 50}
