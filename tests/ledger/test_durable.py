"""Issue 30: no roll-back the ledger cannot see, and contention costs latency, never a refusal.

A release is in the main database file before ``record()`` returns (deleting ``-wal``/``-shm``
behind a reader cannot remove it); the anchor beside the key refuses a ledger older than it
(an old copy restored, the last rows deleted and an old head written back, the anchor itself
deleted); concurrent releasers all get through; each earlier plan is decrypted once, outside
the write lock; a stale read-only ``-shm`` does not block. On a ledger of secrets (schema 3):
releases of a registered dataset with an approved plan (:mod:`ledger_world`)."""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from secrets_world import PROTECT, SECRET, SECRET_KEY, WAVE1, new_ledger, release, steward_path

import distprivacy.ledger._record as recording
import distprivacy.ledger._store as store
from distprivacy.cli import main
from distprivacy.composition import compose_guarantees
from distprivacy.guarantee import Guarantee
from distprivacy.ledger import BudgetExceededError, Ledger, LedgerEntry, LedgerError, StewardKey
from distprivacy.ledger._anchor import anchor_path, read_anchor
from distprivacy.ledger._chain import head_mac
from distprivacy.ledger._registry import read_events
from distprivacy.profiles import gdp_delta
from distprivacy.targets import GDP


def _drop_companions(path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _verify_cli(capsys, path: Path) -> tuple[int, str]:
    rc = main(["ledger", "verify", str(path)])
    cap = capsys.readouterr()
    return rc, cap.err


def _reader(path: Path, in_transaction: bool) -> subprocess.Popen:
    """Another process holding a connection to the ledger open (after one read; inside a
    read transaction when ``in_transaction``), until it is killed."""
    begin = "c.execute('BEGIN');" if in_transaction else ""
    code = (
        "import sqlite3, sys, time; "
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None); {begin}"
        "c.execute('SELECT COUNT(*) FROM releases').fetchall(); "
        "print('ready', flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def _kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)


# -- R3: deleting -wal/-shm behind a reader ------------------------------------------------------


def test_a_release_survives_deleting_wal_and_shm_behind_a_killed_reader(ledger_world, tmp_path):
    """The attack: a reader keeps a connection open (so closing the releasing connection does
    not checkpoint), the release is recorded, the reader is SIGKILLed and -wal/-shm deleted.
    Before: the release was gone and `ledger verify` passed."""
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    reader = _reader(path, in_transaction=False)
    try:
        rid = release(path)
    finally:
        _kill(reader)
    assert Path(str(path) + "-wal").exists()  # the reader kept it: the attack applies
    _drop_companions(path)
    with Ledger(path) as led:
        assert [e.id for e in led.releases()] == [rid]
        assert led.verify().ok and led.integrity_check() == "ok"


def test_a_reader_holding_the_wal_back_makes_the_release_unrevealed_and_the_anchor_counts_it(
    ledger_world, tmp_path, monkeypatch
):
    """A reader inside a read transaction from before the release keeps the checkpoint from
    copying it; after the (here shortened) bound the release is recorded but refused to the
    caller, and deleting -wal/-shm then leaves a ledger its anchor refuses."""
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    monkeypatch.setattr(store, "BUSY_TIMEOUT", 0.3)  # the checkpoint's bound
    reader = _reader(path, in_transaction=True)
    try:
        with Ledger(path) as led, pytest.raises(LedgerError) as err:
            led.release("means", "wave1")
    finally:
        _kill(reader)
    msg = str(err.value)
    assert "release 1 was recorded" in msg and "must not be revealed" in msg
    assert "read transaction" in msg and "\n" not in msg
    _drop_companions(path)
    with Ledger(path) as led:
        report = led.verify()
        assert not report.ok and "older than its anchor: 0 releases recorded" in report.reason
        with pytest.raises(LedgerError, match="older than its anchor"):
            led.release("means", "wave1")


# -- R4: an older copy, or rows removed and an old head written back ----------------------------


def test_restoring_an_older_copy_of_the_ledger_is_refused(ledger_world, tmp_path, capsys):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    release(path)
    old = path.read_bytes()  # every connection closed: the ledger is this one file
    release(path)
    path.write_bytes(old)
    _drop_companions(path)
    with Ledger(path) as led:
        report = led.verify()
        assert not report.ok
        assert report.reason == (
            "the ledger is older than its anchor: 1 releases recorded, the anchor has 2: it "
            "was restored from an older copy or rows were removed"
        )
        with pytest.raises(LedgerError, match="older than its anchor") as err:
            led.release("means", "wave1")
        assert "nothing was recorded" in str(err.value)
        assert len(led.releases()) == 1
    rc, err_text = _verify_cli(capsys, path)
    assert rc == 1 and "older than its anchor" in err_text and err_text.count("\n") == 1


def test_deleting_the_last_rows_and_writing_back_an_old_head_is_refused(ledger_world, tmp_path):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    heads = []
    for _ in range(3):
        release(path)
        con = sqlite3.connect(path)
        heads.append(con.execute("SELECT value FROM ledger_meta WHERE key = 'head'").fetchone())
        con.close()
    con = sqlite3.connect(path)
    con.execute("DELETE FROM releases WHERE id = 3")
    con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", heads[1])
    con.commit()
    con.close()
    with Ledger(path) as led:
        report = led.verify()
        assert not report.ok and "2 releases recorded, the anchor has 3" in report.reason


def test_a_deleted_edited_or_foreign_anchor_is_refused(ledger_world, tmp_path):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    release(path)
    a = anchor_path(path)
    good = a.read_bytes()
    a.unlink()
    with Ledger(path) as led:
        assert "is missing, but the ledger records that it has one" in led.verify().reason
    # Deleting the ledger's record of its anchor too breaks its head MAC.
    con = sqlite3.connect(path)
    con.execute("DELETE FROM ledger_meta WHERE key = 'anchored'")
    con.commit()
    con.close()
    with Ledger(path) as led:
        assert "head does not match" in led.verify().reason
    con = sqlite3.connect(path)
    con.execute("INSERT INTO ledger_meta (key, value) VALUES ('anchored', '1')")
    con.commit()
    con.close()
    a.write_bytes(good.replace(b'"releases":1', b'"releases":0'))
    with Ledger(path) as led:
        assert "fails its MAC" in led.verify().reason
    a.write_bytes(b"not json")
    with Ledger(path) as led:
        assert "is malformed" in led.verify().reason
    other = tmp_path / "other.db"
    new_ledger(other, ledger_world)
    a.write_bytes(anchor_path(other).read_bytes())  # another ledger's (another key)
    with Ledger(path) as led:
        assert "fails its MAC" in led.verify().reason
    a.write_bytes(good)
    with Ledger(path) as led:
        assert led.verify().ok


def test_a_fork_from_a_backup_is_refused_and_restoring_all_three_files_rolls_back(
    ledger_world, tmp_path
):
    """A backup copies the anchor (and the key); a copy that went its own way is caught by the
    original's anchor; restoring the ledger, its key and its anchor together rolls back (the
    documented limit)."""
    path, copy = tmp_path / "L.db", tmp_path / "copy.db"
    new_ledger(path, ledger_world)
    release(path)
    with Ledger(path) as led:
        led.backup(copy)
    assert read_anchor(copy) == read_anchor(path)
    assert stat.S_IMODE(anchor_path(copy).stat().st_mode) == 0o600
    release(path)
    release(copy)  # the copy's own second release (of the same registered file)
    saved = {s: Path(str(path) + s).read_bytes() for s in ("", ".anchor")}
    Path(str(path)).write_bytes(copy.read_bytes())
    with Ledger(path) as led:
        report = led.verify()
        assert not report.ok and report.first_bad == 2 and "another chain value" in report.reason
    for s, data in saved.items():
        Path(str(path) + s).write_bytes(data)
    with Ledger(path) as led:
        assert led.verify().ok
    # All three files of the backup restored together: a roll-back the ledger cannot see.
    with Ledger(path) as led:
        led.backup(tmp_path / "b2.db")
    release(path)
    for s in ("", ".key", ".anchor"):
        Path(str(path) + s).write_bytes(Path(str(tmp_path / "b2.db") + s).read_bytes())
    with Ledger(path) as led:
        assert led.verify().ok and len(led.releases()) == 2


def test_a_crash_before_the_anchor_leaves_it_behind_which_verifies(
    ledger_world, tmp_path, monkeypatch
):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    release(path)

    def crash(*a, **k):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(recording, "write_anchor", crash)
    with Ledger(path) as led, pytest.raises(LedgerError) as err:
        led.release("means", "wave1")
    assert "release 2 was recorded" in str(err.value) and "must not be revealed" in str(err.value)
    monkeypatch.undo()
    assert read_anchor(path).releases == 1
    with Ledger(path) as led:
        assert led.verify().ok and len(led.releases()) == 2
    stale = Path(str(anchor_path(path)) + ".k1ll3d.tmp")  # a writer killed mid-way left it
    stale.write_text("{")
    release(path)
    assert read_anchor(path).releases == 3 and not stale.exists()


def test_a_ledger_without_its_anchor_record_is_anchored_again(ledger_world, tmp_path):
    """A ledger with neither an anchor nor a record of one (as written before anchors; a
    schema-3 ledger is anchored from its creation) verifies, and its next release anchors it."""
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    release(path)
    with Ledger(path) as led:
        key, events = led.key, led._events_head(read_events(led._con))
    con = sqlite3.connect(path)
    (last,) = con.execute("SELECT chain FROM releases").fetchone()
    con.execute("DELETE FROM ledger_meta WHERE key = 'anchored'")
    head = head_mac(key, 1, last, None, anchored=False, events=events)
    con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", (head,))
    con.commit()
    con.close()
    anchor_path(path).unlink()
    with Ledger(path) as led:
        assert led.verify().ok
    release(path)
    assert read_anchor(path).releases == 2
    with Ledger(path) as led:
        assert led.verify().ok
    anchor_path(path).unlink()
    with Ledger(path) as led:
        assert "is missing" in led.verify().reason


def test_init_refuses_a_stale_anchor_and_creates_one(ledger_world, tmp_path):
    path = tmp_path / "L.db"
    steward = StewardKey.generate(steward_path(path))

    def init() -> Ledger:
        return Ledger.init(path, steward=steward, secret=SECRET, protect=PROTECT,
                           budget=GDP(1.0), population=ledger_world["population"])  # fmt: skip

    anchor_path(path).write_text("left from an earlier ledger\n")
    with pytest.raises(LedgerError, match="anchor of an earlier ledger"):
        init()
    assert not path.exists() and not Path(str(path) + ".key").exists()
    anchor_path(path).unlink()
    init().close()
    assert read_anchor(path).releases == 0
    assert stat.S_IMODE(anchor_path(path).stat().st_mode) == 0o600
    anchor_path(path).unlink()
    with Ledger(path) as led:
        assert "is missing" in led.verify().reason


# -- a stale read-only -shm ------------------------------------------------------------------


def test_a_stale_read_only_shm_is_made_private_again(ledger_world, tmp_path):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world)
    holder = sqlite3.connect(path)
    holder.execute("SELECT COUNT(*) FROM releases").fetchall()  # -wal and -shm exist
    try:
        for suffix in ("-wal", "-shm"):
            os.chmod(str(path) + suffix, 0o400)
        os.chmod(path, 0o400)  # the ledger itself read-only: left alone
        with contextlib.suppress(LedgerError):
            Ledger(path).close()
        assert stat.S_IMODE(os.stat(str(path) + "-shm").st_mode) == 0o400
        os.chmod(path, 0o600)
        release(path)
        for suffix in ("-wal", "-shm"):
            assert stat.S_IMODE(os.stat(str(path) + suffix).st_mode) == 0o600
    finally:
        holder.close()


def _as_nobody(path: Path) -> None:  # pragma: no cover - runs in a child process
    try:
        os.setgid(65534)
        os.setuid(65534)
        os.chmod(path, 0o400)
        try:
            release(path)
            os._exit(3)  # a read-only ledger must not be written
        except LedgerError as e:
            if "read-only" not in str(e):
                os._exit(4)
        if stat.S_IMODE(os.stat(str(path) + "-shm").st_mode) != 0o400:
            os._exit(5)  # the situation of the issue did not arise
        os.chmod(path, 0o600)
        release(path)
        os._exit(0)
    except BaseException:
        os._exit(6)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another user")
def test_a_release_after_a_permission_error_is_not_refused(ledger_world):
    """As an ordinary user (the child of a root test run, its files made the child's): a
    release tried while the ledger was 0400 fails "read-only" and leaves -shm 0400; once the
    ledger is 0600 again the next release goes through (before: every later release failed
    "read-only")."""
    d = Path(tempfile.mkdtemp(prefix="dp-ledger-nobody-"))
    try:
        os.chmod(d, 0o777)
        path = d / "L.db"
        new_ledger(path, ledger_world)
        release(path)  # as root: everything a release imports is imported before the fork
        for f in d.iterdir():
            os.chown(f, 65534, 65534)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _as_nobody(path)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with Ledger(path) as led:
            assert len(led.releases()) == 2 and led.verify().ok
    finally:
        shutil.rmtree(d)


# -- contention: latency, never a refusal --------------------------------------------------------


def _gdp(mu: float) -> Guarantee:
    return Guarantee(1.0, float(gdp_delta(1.0, mu)), "group DP", mu=mu, curve="gdp",
                     verified=True, holds_for_every_input=True)  # fmt: skip


def _compose(entries):
    return compose_guarantees([e.guarantee for e in entries])


def _slow_compose(entries):
    time.sleep(0.15)  # a composition slower than a release's turn at the lock
    return _compose(entries)


def _racer(path: str, digest: str, go, out) -> None:
    led = Ledger(path)
    go.wait()
    try:
        # A group-DP release (μ = 1) of wave1 under the secret, naming the approved plan.
        entry = LedgerEntry(fingerprint=WAVE1, property=SECRET_KEY, statistics=("s",),
                            guarantee=_gdp(1.0), values=(1.0,), mechanism="GroupDP-G",
                            plan_digest=digest)  # fmt: skip
        led.record(entry, _slow_compose)
        out.put(("recorded", led.last_id))
    except BudgetExceededError as e:
        out.put(("refused", str(e)))
    except Exception as e:  # reported to the test
        out.put(("error", f"{type(e).__name__}: {e}"))
    finally:
        led.close()


def test_concurrent_releasers_get_exactly_the_budget_and_no_spurious_refusal(
    ledger_world, tmp_path
):
    """16 processes at once, each composition slower than a turn at the lock (so snapshots are
    overtaken again and again), a μ budget that fits exactly 10 releases of μ = 1
    (√10 ≤ 3.2 < √11): 10 recorded, 6 refused by the budget naming 10 earlier releases,
    nothing else (before: "kept receiving other releases (8 attempts)")."""
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, GDP(3.2))
    digest = ledger_world["plan"].digest
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(str(path), digest, go, out)) for _ in range(16)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    go.set()
    results = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(60)
    kinds = sorted(r[0] for r in results)
    assert kinds == ["recorded"] * 10 + ["refused"] * 6, results
    assert all("10 earlier releases" in r[1] for r in results if r[0] == "refused")
    with Ledger(path) as led:
        mus = [e.cumulative.mu for e in led.releases()]
        assert led.verify(_compose).ok
    assert mus == pytest.approx([math.sqrt(k) for k in range(1, 11)])


def test_each_earlier_plan_is_decrypted_once_outside_the_write_lock(
    ledger_world, tmp_path, monkeypatch
):
    import distprivacy.ledger._read as reading

    path = tmp_path / "l.db"
    new_ledger(path, ledger_world)
    for _ in range(4):
        release(path)
    locked = [False]
    calls: list[bool] = []  # whether the write lock was held, per decryption of a release
    real_decrypt = reading.decrypt
    monkeypatch.setattr(reading, "decrypt", lambda *a: calls.append(locked[0]) or real_decrypt(*a))
    real_immediate = recording.immediate

    @contextlib.contextmanager
    def watched(ledger):
        with real_immediate(ledger) as con:
            locked[0] = True
            try:
                yield con
            finally:
                locked[0] = False

    monkeypatch.setattr(recording, "immediate", watched)
    with Ledger(path) as led:
        led.release("means", "wave1")
        assert len(calls) == 5  # the four earlier plans, then the new one (counted), once each
        led.release("means", "wave1")
        assert len(calls) == 6  # and then only the one recorded since
        assert len(led.releases()) == 6 and len(calls) == 6
    assert not any(calls)
