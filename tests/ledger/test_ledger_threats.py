"""Rows of docs/ledger.md's threat model that no other test showed: the questions registration
asks the steward (the same records re-expressed; records of another secret), and what removing
the steward's events does — caught before a recorded release, not after the last one (the
documented limit of a releaser holding the ledger key)."""

from __future__ import annotations

import sqlite3

import pytest
from test_secrets import N, make_plan

from distprivacy.ledger import Ledger, LedgerError, StewardKey
from distprivacy.ledger._schema2 import read_identity
from distprivacy.targets import GDP, EpsDelta


@pytest.fixture(scope="module")
def plan(adult):
    return make_plan(adult)


@pytest.fixture
def world(tmp_path, adult, adult_dir):
    steward = StewardKey.generate(tmp_path / "steward.key")
    led = Ledger.init(
        tmp_path / "l.db",
        steward=steward,
        secret="income",
        protect="income==>50K",
        budget=EpsDelta(1.0, 1e-3),
        population=adult_dir,
    )
    a = adult.sample(n=N, random_state=1)
    a.to_csv(tmp_path / "a.csv", index=False)
    led.register(steward, "wave1", tmp_path / "a.csv")
    # The same records, education shuffled among them: most records changed, but age, fnlwgt
    # and hours_per_week hold the same values.
    s = a.copy()
    s["education"] = s["education"].sample(frac=1, random_state=3).to_numpy()
    s.to_csv(tmp_path / "reshuffled.csv", index=False)
    yield {"ledger": led, "steward": steward, "dir": tmp_path, "a": a}
    led.close()


def test_the_same_records_re_expressed_need_the_stewards_word(world):
    led, steward, path = world["ledger"], world["steward"], world["dir"] / "reshuffled.csv"
    with pytest.raises(LedgerError, match="the same records re-expressed") as e:
        led.register(steward, "wave1b", path)
    assert "`same_records_as=NAME` (wave1)" in str(e.value) and "`independent=True`" in str(e.value)
    d, _ = led.register(steward, "wave1b", path, same_records_as="wave1")
    assert d.shared == {"dataset:wave1@1": N}  # composed as wave1's records
    assert d.decision["same_records_as"] == "wave1"


def test_independent_is_taken_at_the_stewards_word(world):
    """What the threat model says a steward who answers 'independent' gets: the shares measured
    by record hashes, nothing more."""
    led, steward = world["ledger"], world["steward"]
    d, _ = led.register(steward, "wave1b", world["dir"] / "reshuffled.csv", independent=True)
    assert d.decision["independent"] is True
    assert 0 < d.shared["dataset:wave1@1"] < N


def test_records_of_another_secret_need_confirm_overlap(world, adult_dir):
    led, steward = world["ledger"], world["steward"]
    led.add_secret(steward, "sex", "sex==Female", GDP(1.0), population=adult_dir)
    with pytest.raises(LedgerError, match="another property"):
        led.register(steward, "women", world["dir"] / "a.csv", secret="sex")
    d, notices = led.register(
        steward, "women", world["dir"] / "a.csv", secret="sex", confirm_overlap="audit of sex"
    )
    assert d.secret == "sex" and notices and "as the steward confirmed" in notices[0]


def _drop_last_event(led: Ledger) -> None:
    """What a releaser holding the ledger key can do by hand: delete the last steward event
    and MAC the head again over what is left."""
    con = sqlite3.connect(led.path)
    with con:
        con.execute("DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)")
        rows = con.execute("SELECT COUNT(*) FROM releases").fetchone()[0]
        last = con.execute("SELECT chain FROM releases ORDER BY id DESC LIMIT 1").fetchone()
        led._move_head(con, rows, last[0], read_identity(con, led.path))
    con.close()


def test_events_removed_before_a_release_are_caught(world, plan, tmp_path):
    led, steward = world["ledger"], world["steward"]
    led.approve(steward, plan, "means")
    led.release("means", "wave1")  # recorded with every event in force
    _drop_last_event(led)
    path = led.path
    led.close()
    with Ledger(path) as again:
        report = again.verify()
    assert not report.ok and "events were removed" in report.reason


def test_a_trailing_budget_lowering_can_be_truncated_by_a_key_holder(world, plan):
    """The documented limit: events after the last release are not bound to any release, so a
    releaser holding the ledger key can remove a budget lowering and verify still passes."""
    led, steward = world["ledger"], world["steward"]
    led.approve(steward, plan, "means")
    led.release("means", "wave1")
    led.set_budget(steward, None, EpsDelta(0.01, 1e-3), "stop releasing")
    _drop_last_event(led)
    path = led.path
    led.close()
    with Ledger(path) as again:
        assert again.verify().ok
        assert again.registry.secret("income").budget == EpsDelta(1.0, 1e-3)
