"""Killing ``reproduce``, ``models train`` and ``release`` at random (seeded) moments with
SIGINT and SIGKILL never leaves an output that looks complete but is not, and the next run
succeeds.

"Looks complete" for a run folder: no ``INCOMPLETE`` marker and a ``manifest.json``; the
check is :func:`distprivacy.outputs.run_status` (every listed file present with its SHA-256).
For ``models train --out FILE`` the file, if present, must load. ``release`` writes no file.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from distprivacy.outputs import MANIFEST, MARKER, TMP_PREFIX, run_status

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"), pytest.mark.slow]

RNG = np.random.default_rng(20261124)
TIMEOUT = 120.0


def _cli(*args: str, cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "distprivacy", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, err.decode(errors="replace")


def _kill_when(proc: subprocess.Popen, sig: int, ready, delay: float) -> bool:
    """Send ``sig`` ``delay`` seconds after ``ready()`` first holds, unless the process has
    ended by then; wait for it. Returns whether it was killed (did not exit with status 0)."""
    start = time.monotonic()
    while proc.poll() is None and not ready() and time.monotonic() - start < TIMEOUT:
        time.sleep(0.002)
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.communicate(timeout=TIMEOUT)
    return proc.returncode != 0


def _writing(folder: Path):
    return lambda: (folder / MARKER).exists()


def _saving(target: Path):
    """Whether a new temporary file of ``target`` exists (its atomic save is under way; a
    SIGKILL leaves the temporary file of the save it cut)."""

    def temporaries() -> set[str]:
        names = (p.name for p in target.parent.iterdir())
        return {n for n in names if n.startswith(TMP_PREFIX) and n.endswith("-" + target.name)}

    old = temporaries()
    return lambda: bool(temporaries() - old)


def _never_falsely_complete(folder: Path) -> str:
    status = run_status(folder)
    assert status.state in ("complete", "incomplete", "empty"), status.reason
    if status.state == "empty":  # no run got as far as writing: nothing may look finished
        assert not (folder / "report.md").exists()
    return status.state


def test_killing_reproduce(adult_dir, tmp_path):
    out = tmp_path / "out"
    args = ("reproduce", "table3", "--quick", "--out", str(out), "--data", str(adult_dir))
    t0 = time.monotonic()
    rc, err = _finish(_cli(*args))
    full = time.monotonic() - t0
    assert rc == 0, err
    assert run_status(out).complete
    before = run_status(out).files
    # Interrupted while computing (writing has not started): the previous run stays complete.
    proc = _cli(*args)
    killed = _kill_when(proc, signal.SIGINT, lambda: True, RNG.uniform(0.1, 0.5) * full)
    state = _never_falsely_complete(out)
    if killed and state != "incomplete":
        assert run_status(out).files == before
    # Killed while writing, a random moment after the writing began.
    for sig in (signal.SIGINT, signal.SIGKILL):
        proc = _cli(*args)
        _kill_when(proc, sig, _writing(out), RNG.uniform(0, 0.4))
        _never_falsely_complete(out)
    rc, err = _finish(_cli(*args))
    assert rc == 0, err
    status = run_status(out)
    assert status.complete, status.reason
    assert {"report.md", "table3.csv", "table3.png", "timings.csv"} <= set(status.files)
    assert not any(p.name.startswith(TMP_PREFIX) for p in out.iterdir())
    assert not (out / MARKER).exists() and (out / MANIFEST).exists()


def test_killing_models_train(adult_dir, tmp_path):
    from distprivacy.inference.population import ModelPopulation

    target = tmp_path / "pop.npz"
    args = (
        "models", "train", "--property", "sex", "--ratio", "0.5", "--n-models", "300",
        "--n-train", "100", "--epochs", "1", "--out", str(target), "--data", str(adult_dir),
    )  # fmt: skip
    rc, err = _finish(_cli(*args))
    assert rc == 0, err
    first = ModelPopulation.load(target)
    for sig, trigger, delay in [
        (signal.SIGKILL, "saving", 0.0),
        (signal.SIGINT, "saving", RNG.uniform(0, 0.01)),
        (signal.SIGKILL, "time", RNG.uniform(0.5, 2.0)),
    ]:
        proc = _cli(*args)
        ready = _saving(target) if trigger == "saving" else (lambda: True)
        _kill_when(proc, sig, ready, delay)
        # The file is the old one or the new one, whole: it loads.
        again = ModelPopulation.load(target)
        assert again.n_models == first.n_models
    rc, err = _finish(_cli(*args))
    assert rc == 0, err
    final = ModelPopulation.load(target)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(TMP_PREFIX)]
    assert leftovers == []  # the last save removed what the killed saves left
    for a, b in zip(first.weights, final.weights, strict=True):
        np.testing.assert_array_equal(a, b)


def test_killing_release_leaves_nothing(adult_dir, tmp_path):
    args = ("release", "--data", str(adult_dir), "--seed", "3", "--mechanism", "DauM-G")
    proc = _cli(*args, cwd=tmp_path)
    _kill_when(proc, signal.SIGINT, lambda: True, RNG.uniform(0.5, 2.0))
    assert list(tmp_path.iterdir()) == []
    rc, err = _finish(_cli(*args, cwd=tmp_path))
    assert rc == 0, err
    assert list(tmp_path.iterdir()) == []
