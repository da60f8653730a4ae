"""Engines: where the models of f_θ take their aggregates from.

The models need little from the data: per stratum of the protected property the count, the
mean vector and the scatter matrix of the per-record statistic values (exact moments), and for
the sample-based mechanisms the statistics of random size-n subsets per θ. These are computed by

* ``"pandas"`` — NumPy on a DataFrame in memory (the original path; DataFrames from Python);
* ``"duckdb"`` — DuckDB in process, scanning CSV and Parquet files in parallel without loading
  them (the default for files);
* ``"spark"`` — Spark (``pip install "distprivacy[spark]"`` and a Java runtime), for paths or
  tables on a cluster (``master``, default ``local[*]``).

Predicates and the built-in statistics (``income==>50K``, ``mean:age``, ``count:sex==Female``)
compile to SQL; a :class:`~distprivacy.query.CallableStatistic` runs on pandas only.

Use :func:`resolve_engine` to pick one, then pass it (or its name) as ``engine=`` to
:func:`distprivacy.models.fit_model`, which also accepts a path as its data::

    from distprivacy.models import fit_model
    model = fit_model("big.parquet", spec, query, method="exact")      # DuckDB
    model = fit_model("big.parquet", spec, query, engine="spark")       # Spark, local[*]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from distprivacy.checks import check_path
from distprivacy.engines._base import (
    Engine,
    EngineError,
    EngineUnavailableError,
    SQLCompileError,
    StratumMoments,
    UnsupportedStatisticError,
    check_strata,
)
from distprivacy.exceptions import DistPrivacyError

__all__ = [
    "ENGINES",
    "Engine",
    "EngineError",
    "EngineUnavailableError",
    "SQLCompileError",
    "StratumMoments",
    "UnsupportedStatisticError",
    "check_strata",
    "load_source",
    "resolve_engine",
    "spark_session",
]

#: The names accepted by :func:`resolve_engine` (and the command line's ``--engine``).
ENGINES: tuple[str, ...] = ("auto", "pandas", "duckdb", "spark")

Source = pd.DataFrame | str | os.PathLike[str] | None


def _is_adult_dir(p: Path) -> bool:
    from distprivacy.datasets import ADULT_FILES

    return p.is_dir() and all((p / name).is_file() for name in ADULT_FILES)


def load_source(path: str | os.PathLike[str] | None) -> pd.DataFrame | str:
    """What ``--data PATH`` names, ready for :func:`resolve_engine`, loading only what must be.

    ``None`` (the Adult data: environment, cache or download) and a directory holding
    ``adult.data`` and ``adult.test`` are loaded as DataFrames (:func:`~distprivacy.datasets.
    load_adult`); anything else (a file, a glob, a directory of Parquet files, a table name) is
    returned as a string for the engine to scan.

    Parameters
    ----------
    path : str, PathLike or None
        What ``--data`` named; None for the Adult data.

    Returns
    -------
    DataFrame or str
        The Adult records as a DataFrame, or the path (or table name) as a string.
    """
    from distprivacy.datasets import load_adult

    if path is None:
        return load_adult()
    p = check_path(path, "data")
    if _is_adult_dir(p):
        return load_adult(p)
    return str(path)


def resolve_engine(
    engine: str | Engine | None,
    source: Source | Engine,
    *,
    spark_master: str | None = None,
    **options: Any,
) -> Engine:
    """The engine that computes the models' aggregates for ``source``.

    Parameters
    ----------
    engine : {"auto", "pandas", "duckdb", "spark"}, Engine or None
        ``"auto"`` (or None): pandas for a DataFrame, DuckDB for a path. An :class:`Engine` is
        returned as is.
    source : DataFrame, path, table name, None or Engine
        The records. ``None`` is the Adult data and a directory holding ``adult.data`` and
        ``adult.test`` is loaded as the Adult data (both then held in memory); a path is
        scanned by the engine (``"pandas"`` loads it with
        :func:`~distprivacy.datasets.load_table`); a table name is for Spark.
    spark_master : str, optional
        Spark's master URL (default ``local[*]``); only with ``engine="spark"``.
    **options
        Passed to the engine (DuckDB: ``threads``, ``memory_limit``).

    Returns
    -------
    Engine
        The engine, bound to ``source``.

    Raises
    ------
    DistPrivacyError
        Unknown engine name, unreadable source; :class:`EngineUnavailableError` when the engine
        cannot start (pyspark missing, no Java).
    """
    if isinstance(engine, Engine):
        return engine
    if isinstance(source, Engine):
        if engine in (None, "auto", source.name):
            return source
        raise DistPrivacyError(
            f"the data is already on the {source.name} engine; cannot run it on {engine!r}"
        )
    name = "auto" if engine is None else str(engine).lower()
    if name not in ENGINES:
        raise DistPrivacyError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if spark_master is not None and name != "spark":
        raise DistPrivacyError("`spark_master` applies to `engine='spark'` only")
    if not isinstance(source, pd.DataFrame):
        source = load_source(source)
    if name == "auto":
        name = "pandas" if isinstance(source, pd.DataFrame) else "duckdb"
    if name == "pandas":
        from distprivacy.datasets import load_table
        from distprivacy.engines._pandas import PandasEngine

        return PandasEngine(source if isinstance(source, pd.DataFrame) else load_table(source))
    if name == "duckdb":
        from distprivacy.engines._duckdb import DuckDBEngine

        return DuckDBEngine(source, **options)
    from distprivacy.engines._spark import SparkEngine

    return SparkEngine(source, master=spark_master, **options)


def spark_session(master: str | None = None, **config: str) -> Any:
    """The shared SparkSession (created on first use; ``master`` default ``local[*]``).

    Parameters
    ----------
    master : str, optional
        The Spark master URL (``local[*]``, ``spark://HOST:7077``, ``yarn``, …); used only when
        the session is created.
    **config : str
        Spark settings (``spark.executor.memory="2g"``, …) for the session created.

    Returns
    -------
    pyspark.sql.SparkSession
        The session, shared by every later call.

    Raises
    ------
    EngineUnavailableError
        pyspark is not installed, no Java runtime is found, or Spark does not start.
    """
    from distprivacy.engines._spark import get_session

    return get_session(master, **config)
