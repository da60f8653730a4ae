"""Issue 20 in the library, on a ledger of secrets (schema 3): true numbers against the closed
form, exact releases never recorded (issue 30, E1), faults are one-line errors that leave the
ledger as it was, backups verify, the key is required, a busy ledger waits; and tampering —
an edited, deleted or reordered release, an edited or removed steward event, a swapped plan,
edited record hashes — is caught."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import stat

import mpmath
import numpy as np
import pandas as pd
import pytest
from secrets_world import (
    PROTECT,
    SECRET,
    SECRET_KEY,
    WAVE1,
    make_plan,
    new_ledger,
    records_path,
    release,
    steward_path,
)

import distprivacy.ledger._record as recording
from distprivacy.composition import compose_gaussian
from distprivacy.exceptions import DistPrivacyError
from distprivacy.ledger import (
    BudgetExceededError,
    Ledger,
    LedgerEntry,
    LedgerError,
    StewardKey,
    key_path,
    plan_composer,
)
from distprivacy.mechanisms import DauM
from distprivacy.mechanisms.plans import Plan
from distprivacy.models import GaussianModel
from distprivacy.targets import GDP, EpsDelta
from distprivacy.workflow import release as dp_release

mpmath.mp.dps = 40


def _closed_delta(eps: float, mu: float) -> float:
    e, m = mpmath.mpf(eps), mpmath.mpf(mu)
    return float(mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2))


@pytest.fixture
def equal_cov_plan():
    """A DauM-G plan on a model whose two θ share one covariance: the exact profile of any
    number of its releases is the μ-GDP curve, so the closed form applies."""
    cov = np.array([[2.2, -0.6], [-0.6, 1.3]])  # small: the noise, not the data, hides θ
    model = GaussianModel(["a", "b"], [[100.0, 101.0], [99.0, 102.0]], [cov, cov], [("a", "b")])
    cal = DauM(EpsDelta(1.0, 1e-3)).calibrate(model)
    return Plan.from_calibration(cal, model), model


def _entry(plan, fp=WAVE1, prop=SECRET_KEY, **kw):
    """A release of ``plan`` recorded by hand under the secret, of the registered wave1."""
    return LedgerEntry.from_plan(plan, [100.0, 101.0], fingerprint=fp, property=prop, **kw)


def test_refusals_and_show_state_the_exact_numbers(equal_cov_plan, ledger_world, tmp_path):
    plan, model = equal_cov_plan
    cal = plan.calibration
    two = compose_gaussian(model, [([0, 1], cal.noise_covariance)] * 2, delta=1e-3)
    path = tmp_path / "l.db"
    # A budget (ε = 1, δ) that one release meets and two do not.
    budget_delta = 0.5 * (_closed_delta(1.0, cal.mu) + _closed_delta(1.0, two.mu))
    compose = plan_composer(at_delta=budget_delta)
    new_ledger(path, ledger_world, EpsDelta(1.0, budget_delta))
    with Ledger(path) as led:
        led.record(_entry(plan), compose)
        shown = led.show(compose)
        (c,) = shown["cumulative"]
        assert c["mu"] == pytest.approx(cal.mu, rel=1e-9)
        assert c["delta_at_budget_epsilon"] == pytest.approx(_closed_delta(1.0, c["mu"]), rel=1e-9)
        assert _closed_delta(c["epsilon"], c["mu"]) == pytest.approx(budget_delta, rel=1e-6)
        with pytest.raises(BudgetExceededError) as e:
            led.record(_entry(plan), compose)
    msg = str(e.value)
    d, eps_at = map(float, re.search(r"δ = (\S+) at ε = 1 \(ε = (\S+) at", msg).groups())
    assert d == pytest.approx(_closed_delta(1.0, two.mu), rel=2e-3)  # printed to 3 digits
    lo, hi = 0.0, 10.0  # bisection on the closed form (decreasing in ε)
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _closed_delta(mid, two.mu) <= budget_delta else (mid, hi)
    exact_eps = hi
    assert eps_at == pytest.approx(exact_eps, rel=1e-3)  # printed to 4 digits
    assert "1 earlier release of this secret" in msg


def test_epsilon_at_is_finite_below_the_stated_delta(equal_cov_plan):
    plan, _ = equal_cov_plan
    g = plan.guarantee
    eps = g.epsilon_at(1e-5)
    assert math.isfinite(eps) and _closed_delta(eps, g.mu) == pytest.approx(1e-5, rel=1e-6)


def test_an_exact_release_is_never_recorded(equal_cov_plan, ledger_world, tmp_path):
    """Issue 30 (E1): an exact release has μ = ∞ and exceeds every budget, however large: the
    ledger refuses it (BudgetExceededError, one line) and the file is byte for byte as it was."""
    plan, _ = equal_cov_plan
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, EpsDelta(1e6, 0.9))
    release(path)
    before = path.read_bytes()
    with Ledger(path) as led:
        with pytest.raises(BudgetExceededError, match="exceeds every budget") as e:
            led.release("means", "wave1", allow_exact=True)
        assert "\n" not in str(e.value) and "add noise" in str(e.value)
        with pytest.raises(BudgetExceededError, match="a ledger does not record one"):
            led.record(_entry(plan, unbounded=True), plan_composer(at_delta=1e-3))
        # dp.release with a ledger is refused whatever it asks: the ledger names what it releases.
        records = pd.DataFrame({"a": [1.0], "b": [2.0]})
        with pytest.raises(DistPrivacyError, match=r"ledger\.release\('PLAN', 'DATASET'\)"):
            dp_release(plan=plan, target=records, ledger=led, allow_exact=True)
        assert len(led.releases()) == 1 and led.verify().ok
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("database or disk is full", "disk is full"),
        ("attempt to write a readonly database", "read-only"),
        ("database is locked", "held the ledger"),
        ("unable to open database file", "cannot be opened"),
    ],
)
def test_faults_are_one_line_and_leave_the_ledger_unchanged(
    ledger_world, tmp_path, monkeypatch, message, cause
):
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    release(path)
    before = path.read_bytes()

    def fail(*a, **k):
        raise sqlite3.OperationalError(message)

    monkeypatch.setattr(recording, "move_head", lambda *a, **k: fail())  # inside the insert
    with Ledger(path) as led:
        with pytest.raises(LedgerError) as e:
            led.release("means", "wave1")
        assert cause in str(e.value) and "\n" not in str(e.value)
        assert len(led.releases()) == 1
    monkeypatch.undo()
    with Ledger(path) as led:
        assert led.verify().ok
    assert path.read_bytes() == before


def test_backup_is_a_verified_private_copy_and_the_key_is_required(ledger_world, tmp_path):
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    release(path)
    with Ledger(path) as led:
        led.backup(tmp_path / "copy.db")
        with pytest.raises(LedgerError, match="already exists"):
            led.backup(tmp_path / "copy.db")
    copy = tmp_path / "copy.db"
    for p in (path, key_path(path), copy, key_path(copy), tmp_path / "copy.db.anchor"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    with Ledger(copy) as c:
        assert c.verify().ok and len(c.releases()) == 1
        assert c.show()["secrets"] == Ledger(path).show()["secrets"]
    key_path(path).unlink()
    with pytest.raises(LedgerError, match=r"key .* is missing"):
        Ledger(path)


def _broken_ledger(world, path):
    """A ledger with one release whose released values were edited behind its back (the chain
    breaks at release 1)."""
    new_ledger(path, world)
    release(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE releases SET release_values = '[0.0, 0.0]' WHERE id = 1")
    con.commit()
    con.close()


def test_backup_refuses_a_ledger_that_fails_verification_unless_forced(ledger_world, tmp_path):
    from distprivacy.exceptions import DistPrivacyWarning

    path = tmp_path / "l.db"
    _broken_ledger(ledger_world, path)
    copy = tmp_path / "copy.db"
    with Ledger(path) as led:
        report = led.verify()
        assert not report.ok
        with pytest.raises(LedgerError) as err:
            led.backup(copy)
        assert "fails verification at release 1" in str(err.value)
        assert report.reason in str(err.value) and "force=True" in str(err.value)
        assert not copy.exists() and not key_path(copy).exists()
        # Forced, for forensics: copied, and a warning says the ledger is broken.
        with pytest.warns(DistPrivacyWarning, match="BROKEN LEDGER COPIED"):
            led.backup(copy, force=True)
    assert copy.is_file() and key_path(copy).is_file()
    with Ledger(copy) as c:
        assert not c.verify().ok  # the copy is as broken as the original, byte for byte
    with Ledger(path) as led, pytest.raises(LedgerError, match="force must be"):
        led.backup(tmp_path / "other.db", force="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("failing", ["copy.db", "copy.db.key"])
def test_backup_onto_a_read_only_disk_is_one_line(ledger_world, tmp_path, monkeypatch, failing):
    """The backup's write (of the database, or of its key once the database is copied) and
    every clean-up unlink fail with EROFS, as on a read-only file system: one line naming it,
    and nothing of the source ledger touched."""
    import errno
    import os
    from pathlib import Path

    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    release(path)
    before = path.read_bytes()
    dest = tmp_path / "ro"
    dest.mkdir()
    real_open, real_unlink = os.open, Path.unlink

    def ro_open(p, flags, *a, **k):
        if str(p) == str(dest / failing):
            raise OSError(errno.EROFS, "Read-only file system", str(p))
        return real_open(p, flags, *a, **k)

    def ro_unlink(self, *a, **k):
        if str(self).startswith(str(dest)):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_unlink(self, *a, **k)

    with Ledger(path) as led:
        monkeypatch.setattr(os, "open", ro_open)
        monkeypatch.setattr(Path, "unlink", ro_unlink)
        with pytest.raises(LedgerError) as err:
            led.backup(dest / "copy.db")
        monkeypatch.undo()
    msg = str(err.value)
    assert "read-only" in msg and "no backup was made" in msg and "\n" not in msg
    assert path.read_bytes() == before


def test_backup_cleans_up_only_what_it_made(ledger_world, tmp_path, monkeypatch):
    """The database copied, then the key's write fails: the half-made backup is removed."""
    import os

    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    release(path)
    copy = tmp_path / "copy.db"
    real_open = os.open

    def no_key(p, flags, *a, **k):
        if str(p) == str(key_path(copy)):
            raise OSError(28, "No space left on device", str(p))
        return real_open(p, flags, *a, **k)

    with Ledger(path) as led:
        monkeypatch.setattr(os, "open", no_key)
        with pytest.raises(LedgerError, match="disk is full"):
            led.backup(copy)
        monkeypatch.undo()
    assert not copy.exists() and not key_path(copy).exists()
    assert not (tmp_path / "copy.db.anchor").exists()
    assert path.is_file() and key_path(path).is_file()


@pytest.mark.parametrize("suffix", ["/", "/.", "/.."])
def test_a_ledger_path_naming_a_directory_is_refused(ledger_world, tmp_path, suffix):
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    made = sorted(p.name for p in tmp_path.iterdir())
    new = str(tmp_path / "new") + suffix
    with pytest.raises(LedgerError, match="names a directory"):
        Ledger.init(new, steward=steward_path(path), secret=SECRET, protect=PROTECT,
                    budget=GDP(1.0), population=ledger_world["population"])  # fmt: skip
    with Ledger(path) as led, pytest.raises(LedgerError, match="names a directory"):
        led.backup(new)
    assert sorted(p.name for p in tmp_path.iterdir()) == made


def test_bad_arguments_are_library_errors(equal_cov_plan, ledger_world, tmp_path):
    plan, _ = equal_cov_plan
    with pytest.raises(LedgerError):
        Ledger(123)  # type: ignore[arg-type]
    with pytest.raises(LedgerError):
        _entry(plan).__class__.from_plan(plan, [math.nan, 1.0], fingerprint="x", property="p")
    new_ledger(tmp_path / "l.db", ledger_world, GDP(1.0))
    with Ledger(tmp_path / "l.db") as led:
        with pytest.raises(LedgerError):
            led.record("not an entry", plan_composer(at_delta=1e-3))  # type: ignore[arg-type]
        with pytest.raises(LedgerError):
            led.record(_entry(plan), "not a function")  # type: ignore[arg-type]
        # A plan and records handed in (the schema-2 way) are refused: both are named.
        records = pd.DataFrame({"a": [1.0], "b": [2.0]})
        with pytest.raises(LedgerError, match="both named"):
            led.release(plan, records)  # type: ignore[arg-type]
        with pytest.raises(LedgerError, match="seed"):
            led.release("means", "wave1", random_state=7)
        with pytest.raises(LedgerError, match="ledger approve"):
            led.seal(plan)
        assert led.releases() == []


def test_a_busy_ledger_reports_the_wait_then_records(ledger_world, tmp_path):
    """Another process holding the write lock: the release waits (reporting the wait, which the
    CLI shows as a progress bar) and records once the lock is free."""
    import threading
    import time

    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.6, lambda: holder.execute("COMMIT"))
    timer.start()
    waits: list[float] = []
    try:
        with Ledger(path) as led:
            led.on_wait = lambda waited, limit: waits.append(waited)
            t0 = time.monotonic()
            led.release("means", "wave1")
            assert time.monotonic() - t0 >= 0.5
            assert waits and max(waits) < 60 and len(led.releases()) == 1
    finally:
        timer.join()
        holder.close()


# -- tampering -----------------------------------------------------------------------------------


def _sql(path, *statements) -> None:
    con = sqlite3.connect(path)
    for stmt, *args in statements:
        con.execute(stmt, *args)
    con.commit()
    con.close()


@pytest.fixture
def three(ledger_world, tmp_path):
    """A ledger with three releases of wave1."""
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    for _ in range(3):
        release(path)
    return path


@pytest.mark.parametrize(
    ("edits", "bad"),
    [
        (["UPDATE releases SET release_values = '[1.0, 2.0]' WHERE id = 2"], 2),
        (["UPDATE releases SET cumulative = (SELECT cumulative FROM releases WHERE id = 1) "
          "WHERE id = 3"], 3),
        (["DELETE FROM releases WHERE id = 2"], 3),
        (["UPDATE releases SET id = 0 WHERE id = 1", "UPDATE releases SET id = 1 WHERE id = 2",
          "UPDATE releases SET id = 2 WHERE id = 0"], 1),
    ],
    ids=["values", "total", "deleted", "reordered"],
)  # fmt: skip
def test_an_edited_deleted_or_reordered_release_is_named(three, edits, bad):
    _sql(three, *[(e,) for e in edits])
    with Ledger(three) as led:
        report = led.verify()
        assert not report.ok and report.first_bad == bad
        assert "chain value does not match" in report.reason
        with pytest.raises(LedgerError, match=f"fails verification at release {bad}"):
            led.release("means", "wave1")
        assert len(led.releases()) == (2 if "DELETE" in edits[0] else 3)


def test_a_steward_event_edited_by_sql_is_named(three):
    """The budget raised in the secret's signed event: its signature no longer holds."""
    con = sqlite3.connect(three)
    (payload,) = con.execute("SELECT payload FROM events WHERE seq = 1").fetchone()
    con.close()
    body = json.loads(payload)
    body["budget"]["mu"] = 1e9
    _sql(three, ("UPDATE events SET payload = ? WHERE seq = 1", (json.dumps(body),)))
    with Ledger(three) as led:
        report = led.verify()
        assert not report.ok and "event 1" in report.reason
        assert "not signed by the ledger's steward" in report.reason
        with pytest.raises(LedgerError, match="event 1"):
            led.release("means", "wave1")


def test_the_last_steward_event_deleted_is_caught(ledger_world, tmp_path):
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    release(path)
    steward = StewardKey.load(steward_path(path))
    with Ledger(path) as led:  # a last event no release was recorded under
        led.set_budget(steward, None, GDP(0.5), "less")
    _sql(path, ("DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)",))
    with Ledger(path) as led:
        report = led.verify()
        assert not report.ok and "head does not match" in report.reason
    # Deleting the event a release was recorded under is named too.
    path2 = tmp_path / "m.db"
    new_ledger(path2, ledger_world)
    release(path2)
    _sql(path2, ("DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)",))
    with Ledger(path2) as led:
        report = led.verify()
        assert not report.ok and "removed" in report.reason


def test_a_swapped_plan_body_is_refused(ledger_world, tmp_path):
    """The encrypted bodies of two approved plans swapped: a release names one and would read
    the other; refused."""
    path = tmp_path / "l.db"
    steward = new_ledger(path, ledger_world)
    with Ledger(path) as led:
        led.approve(steward, make_plan(ledger_world["data"], query="mean:age"), "age")
    _sql(
        path,
        ("UPDATE approved_plans SET name = '~' WHERE name = 'means'",),
        ("UPDATE approved_plans SET name = 'means' WHERE name = 'age'",),
        ("UPDATE approved_plans SET name = 'age' WHERE name = '~'",),
        ("UPDATE approved_plans SET seq = (SELECT seq FROM approved_plans WHERE name = 'age') "
         "+ (SELECT seq FROM approved_plans WHERE name = 'means') - seq",),
    )  # fmt: skip
    with Ledger(path) as led:
        for name in ("means", "age"):
            with pytest.raises(LedgerError, match="not the one the steward signed"):
                led.release(name, "wave1")
        assert led.releases() == []


def test_edited_record_hashes_refuse_the_next_registration(ledger_world, tmp_path):
    path = tmp_path / "l.db"
    steward = new_ledger(path, ledger_world)
    con = sqlite3.connect(path)
    (hashes,) = con.execute("SELECT hashes FROM dataset_records WHERE name = 'wave1'").fetchone()
    con.close()
    edited = bytes(8) + bytes(hashes[8:])  # one record's hash replaced
    _sql(path, ("UPDATE dataset_records SET hashes = ? WHERE name = 'wave1'", (edited,)))
    other = records_path(path, "wave2")
    ledger_world["data"].sample(n=100, random_state=9).to_csv(other, index=False)
    with Ledger(path) as led:
        with pytest.raises(LedgerError, match="do not match their signed registration"):
            led.register(steward, "wave2", other)
        assert "wave2" not in led.registry.datasets
