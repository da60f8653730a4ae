"""Issue 20 in the library: true numbers against the closed form, exact releases never
recorded (issue 30; one an older ledger holds exhausts its dataset), near-duplicates are
flagged, faults are one-line errors that leave the ledger as it was, backups verify, the key
is required."""

from __future__ import annotations

import math
import re
import sqlite3
import stat

import mpmath
import numpy as np
import pandas as pd
import pytest

from distprivacy.composition import compose_gaussian
from distprivacy.ledger import (
    BudgetExceededError,
    Ledger,
    LedgerEntry,
    LedgerError,
    key_path,
    plan_composer,
)
from distprivacy.mechanisms import DauM
from distprivacy.mechanisms.plans import Plan
from distprivacy.models import GaussianModel
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
    cal = DauM(epsilon=1.0, delta=1e-3).calibrate(model)
    return Plan.from_calibration(cal, model), model


def _entry(plan, fp="hmac-sha256:d", prop="p", **kw):
    return LedgerEntry.from_plan(plan, [100.0, 101.0], fingerprint=fp, property=prop, **kw)


def test_refusals_and_show_state_the_exact_numbers(equal_cov_plan, tmp_path):
    plan, model = equal_cov_plan
    cal = plan.calibration
    two = compose_gaussian(model, [([0, 1], cal.noise_covariance)] * 2, delta=1e-3)
    path = tmp_path / "l.db"
    # A budget (ε = 1, δ) that one release meets and two do not.
    budget_delta = 0.5 * (_closed_delta(1.0, cal.mu) + _closed_delta(1.0, two.mu))
    compose = plan_composer(delta=budget_delta)
    with Ledger.init(path, budget_epsilon=1.0, budget_delta=budget_delta) as led:
        led.record(_entry(plan), compose)
        shown = led.show()
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


def test_epsilon_at_is_finite_below_the_stated_delta(equal_cov_plan):
    plan, _ = equal_cov_plan
    g = plan.guarantee
    eps = g.epsilon_at(1e-5)
    assert math.isfinite(eps) and _closed_delta(eps, g.mu) == pytest.approx(1e-5, rel=1e-6)


def _record_as_before_issue_30(led: Ledger, entry: LedgerEntry) -> None:
    """Insert ``entry`` as `record` did before issue 30 with an exact release (unbounded, μ = ∞,
    whatever the budget): the ledgers written then hold such rows."""
    from distprivacy.ledger._chain import _unbounded_guarantee
    from distprivacy.ledger._identity import fix_identity

    view = led._snapshot(entry)
    values, chain = led._row(view, _unbounded_guarantee())
    with led._immediate() as con:
        report = view.report
        identity = fix_identity(con, led.path, entry, report.releases)
        rid, chain = led._insert(con, values, chain, report, identity)
    led._make_durable(rid, report.releases + 1, chain)


def test_an_exact_release_is_never_recorded(equal_cov_plan, tmp_path):
    """Issue 30 (E1): an exact release has μ = ∞ and exceeds every budget, however large: the
    ledger refuses it (BudgetExceededError, one line) and the file is byte for byte as it was."""
    plan, _ = equal_cov_plan
    compose = plan_composer(delta=1e-3)
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=1e6) as led:
        led.record(_entry(plan), compose)
    before = path.read_bytes()
    with Ledger(path) as led:
        with pytest.raises(BudgetExceededError, match="exceeds every budget") as e:
            led.record(_entry(plan, unbounded=True), compose)
        assert "\n" not in str(e.value) and "add noise" in str(e.value)
        with pytest.raises(BudgetExceededError, match="exceeds every budget"):
            led.record(_entry(plan, fp="hmac-sha256:new", unbounded=True), compose)
        # Refused by every way in, before the target is read or the seal checked.
        records = pd.DataFrame({"a": [1.0], "b": [2.0]})
        for release in (
            lambda: led.release(plan, records, allow_exact=True),
            lambda: led.release(plan, records, allow_exact=True, require_seal=False),
            lambda: dp_release(plan=plan, target=records, ledger=led, allow_exact=True),
        ):
            with pytest.raises(BudgetExceededError, match="a ledger does not record one"):
                release()
        assert len(led.releases()) == 1 and led.verify().ok
    assert path.read_bytes() == before


def test_an_exact_release_recorded_before_still_exhausts_the_dataset(equal_cov_plan, tmp_path):
    """A ledger written before issue 30 may hold an exact release: it is read, verifies, and
    still exhausts its dataset (every later release of it refused); another dataset is free."""
    plan, _ = equal_cov_plan
    compose = plan_composer(delta=1e-3)
    with Ledger.init(tmp_path / "l.db", budget_mu=100.0) as led:
        _record_as_before_issue_30(led, _entry(plan, unbounded=True))
        (old,) = led.releases()
        assert old.unbounded and math.isinf(old.cumulative.mu)
        with pytest.raises(BudgetExceededError, match="exact statistics"):
            led.record(_entry(plan), compose)
        led.record(_entry(plan, fp="hmac-sha256:other"), compose)  # another dataset is free
        assert led.verify().ok
        (c,) = [c for c in led.show()["cumulative"] if c["fingerprint"] == old.fingerprint]
        assert c["exhausted_by_exact_release"] and not c["within_budget"]


def test_near_duplicates_are_flagged(tmp_path, adult):
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    from distprivacy.models import fit_model

    model = fit_model(adult, spec, Query.parse("mean:age"), method="exact")
    plan = Plan.from_calibration(DauM(epsilon=1.0, delta=1e-3).calibrate(model), model)
    records = adult.sample(n=100, random_state=3)
    near = pd.concat([records.iloc[5:], adult.drop(records.index).sample(n=5, random_state=4)])
    with Ledger.init(tmp_path / "l.db", budget_mu=100.0) as led:
        plan = led.seal(plan)
        led.release(plan, records)
        assert led.last_warnings == ()
        rec = led.release(plan, near)
        assert rec.warnings and "release 1" in rec.warnings[0]
        far = adult.drop(records.index).sample(n=100, random_state=5)
        assert led.release(plan, far).warnings == ()
        with pytest.raises(LedgerError, match="seed"):
            led.release(plan, records, random_state=7)


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
    equal_cov_plan, tmp_path, monkeypatch, message, cause
):
    plan, _ = equal_cov_plan
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        led.record(_entry(plan), plan_composer(delta=1e-3))
    before = path.read_bytes()

    def fail(*a, **k):
        raise sqlite3.OperationalError(message)

    monkeypatch.setattr(Ledger, "_insert", lambda self, con, *a: fail())
    with Ledger(path) as led:
        with pytest.raises(LedgerError) as e:
            led.record(_entry(plan), plan_composer(delta=1e-3))
        assert cause in str(e.value) and "\n" not in str(e.value)
        assert len(led.releases()) == 1
    monkeypatch.undo()
    with Ledger(path) as led:
        assert led.verify().ok
    assert path.read_bytes() == before


def test_backup_is_a_verified_private_copy_and_the_key_is_required(equal_cov_plan, tmp_path):
    plan, _ = equal_cov_plan
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        led.record(_entry(plan), plan_composer(delta=1e-3))
        led.backup(tmp_path / "copy.db")
        with pytest.raises(LedgerError, match="already exists"):
            led.backup(tmp_path / "copy.db")
    for p in (path, key_path(path), tmp_path / "copy.db", key_path(tmp_path / "copy.db")):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    with Ledger(tmp_path / "copy.db") as copy:
        assert copy.verify().ok and len(copy.releases()) == 1
    key_path(path).unlink()
    with pytest.raises(LedgerError, match=r"key .* is missing"):
        Ledger(path)


def _broken_ledger(plan, path):
    """A ledger with one release whose budget was edited behind its back (the chain breaks)."""
    with Ledger.init(path, budget_mu=100.0) as led:
        led.record(_entry(plan), plan_composer(delta=1e-3))
    con = sqlite3.connect(path)
    con.execute("UPDATE budget SET mu = 1e9")
    con.commit()
    con.close()


def test_backup_refuses_a_ledger_that_fails_verification_unless_forced(equal_cov_plan, tmp_path):
    from distprivacy.exceptions import DistPrivacyWarning

    plan, _ = equal_cov_plan
    path = tmp_path / "l.db"
    _broken_ledger(plan, path)
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
def test_backup_onto_a_read_only_disk_is_one_line(equal_cov_plan, tmp_path, monkeypatch, failing):
    """The backup's write (of the database, or of its key once the database is copied) and
    every clean-up unlink fail with EROFS, as on a read-only file system: one line naming it,
    and nothing of the source ledger touched."""
    import errno
    import os
    from pathlib import Path

    plan, _ = equal_cov_plan
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        led.record(_entry(plan), plan_composer(delta=1e-3))
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


def test_backup_cleans_up_only_what_it_made(equal_cov_plan, tmp_path, monkeypatch):
    """The database copied, then the key's write fails: the half-made backup is removed."""
    import os

    plan, _ = equal_cov_plan
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        led.record(_entry(plan), plan_composer(delta=1e-3))
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
    assert path.is_file() and key_path(path).is_file()


@pytest.mark.parametrize("suffix", ["/", "/.", "/.."])
def test_a_ledger_path_naming_a_directory_is_refused(tmp_path, suffix):
    new = str(tmp_path / "new") + suffix
    with pytest.raises(LedgerError, match="names a directory"):
        Ledger.init(new, budget_mu=1.0)
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        with pytest.raises(LedgerError, match="names a directory"):
            led.backup(new)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.db", "l.db.key"]


def test_bad_arguments_are_library_errors(equal_cov_plan, tmp_path):
    plan, _ = equal_cov_plan
    with pytest.raises(LedgerError):
        Ledger(123)  # type: ignore[arg-type]
    with pytest.raises(LedgerError):
        _entry(plan).__class__.from_plan(plan, [math.nan, 1.0], fingerprint="x", property="p")
    with Ledger.init(tmp_path / "l.db", budget_mu=1.0) as led:
        with pytest.raises(LedgerError):
            led.record("not an entry", plan_composer(delta=1e-3))  # type: ignore[arg-type]
        with pytest.raises(LedgerError):
            led.record(_entry(plan), "not a function")  # type: ignore[arg-type]


def test_a_busy_ledger_reports_the_wait_then_records(equal_cov_plan, tmp_path):
    """Another process holding the write lock: the release waits (reporting the wait, which the
    CLI shows as a progress bar) and records once the lock is free."""
    import threading
    import time

    plan, _ = equal_cov_plan
    path = tmp_path / "l.db"
    Ledger.init(path, budget_mu=100.0).close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.6, lambda: holder.execute("COMMIT"))
    release.start()
    waits: list[float] = []
    try:
        with Ledger(path) as led:
            led.on_wait = lambda waited, limit: waits.append(waited)
            t0 = time.monotonic()
            led.record(_entry(plan), plan_composer(delta=1e-3))
            assert time.monotonic() - t0 >= 0.5
            assert waits and max(waits) < 60 and len(led.releases()) == 1
    finally:
        release.join()
        holder.close()
