"""The Spark engine: the same SQL as DuckDB, run by Spark on paths or tables of a cluster.

Needs ``pip install "distprivacy[spark]"`` (pyspark) and a Java runtime (Spark 4: Java 17 or
21; e.g. ``apt-get install -y openjdk-17-jre-headless``). One SparkSession per process is
shared by every engine (:func:`get_session`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from distprivacy._paths import check_input_path
from distprivacy.engines._base import EngineError, EngineUnavailableError, file_format, one_line
from distprivacy.engines._compile import Column, SparkDialect
from distprivacy.engines._sql import SQLEngine
from distprivacy.exceptions import DistPrivacyError

DEFAULT_MASTER = "local[*]"
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
_INSTALL = 'pip install -e ".[spark]" (or pip install pyspark)'
_JAVA = "apt-get install -y openjdk-17-jre-headless (or set JAVA_HOME)"


def find_java() -> str | None:
    """The java executable Spark will start (``$JAVA_HOME/bin/java``, else on PATH), or None."""
    home = os.environ.get("JAVA_HOME", "").strip()
    if home:
        exe = Path(home) / "bin" / "java"
        return str(exe) if exe.is_file() else None
    return shutil.which("java")


def get_session(master: str | None = None, **config: str) -> Any:
    """The process's SparkSession, started on first use.

    Parameters
    ----------
    master : str, optional
        Master URL (default ``local[*]``). A session already running on another master is an
        error (one session per process).
    **config : str
        Extra Spark settings for a new session (e.g. ``{"spark.sql.shuffle.partitions": "4"}``,
        passed with the dots as given).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineUnavailableError(
            f"the Spark engine needs pyspark: {_INSTALL}; or use `engine='duckdb'`"
        ) from None
    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if master is not None and master != running:
            raise EngineError(
                f"a Spark session on {running} is already running in this process; cannot start "
                f"one on {master}"
            )
        return active
    if find_java() is None:
        raise EngineUnavailableError(
            f"the Spark engine needs a Java runtime (17 or 21) but none was found on PATH or in "
            f"JAVA_HOME: {_JAVA}; or use `engine='duckdb'`"
        )
    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName("distprivacy")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_log_config()}")
    )
    for key, value in config.items():
        builder = builder.config(key, value)
    try:
        with _quiet():
            session = builder.getOrCreate()
    except Exception as exc:
        raise EngineUnavailableError(
            f"Spark did not start on {master or DEFAULT_MASTER}: {one_line(exc)}; Spark needs "
            f"Java 17 or 21 ({_JAVA})"
        ) from None
    session.sparkContext.setLogLevel("OFF")  # failures reach Python as one-line errors
    return session


_LOG4J2 = """\
rootLogger.level = off
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _log_config() -> str:
    """A log4j2 configuration printing nothing: Spark's failures reach Python as exceptions and
    are reported as one-line errors (written once per process)."""
    path = Path(tempfile.gettempdir()) / f"distprivacy-log4j2-{os.getpid()}.properties"
    if not path.exists():
        path.write_text(_LOG4J2)
    return path.as_uri()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence pyspark's FutureWarnings about the pandas version (it works with ours), and
    start the JVM with its standard error on /dev/null: it inherits file descriptor 2, and
    its start-up banners and log lines would otherwise precede our one-line errors (its
    failures reach Python as exceptions)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\..*")
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _kind(type_name: str, csv: bool) -> str:
    t = type_name.lower()
    if t.startswith(_NUMERIC):
        return "numeric"
    if t == "string" or t.startswith(("varchar", "char")):
        return "csv" if csv else "string"
    if t == "boolean":
        return "boolean"
    return "other"


class SparkEngine(SQLEngine):
    """Exact moments and Monte-Carlo subsets computed by Spark.

    Parameters
    ----------
    source : path, table name or DataFrame
        A CSV / Parquet file or directory (any path Spark reads: local, ``hdfs://``,
        ``s3a://``, …), a table name of the session's catalog, or a pandas DataFrame (sent to
        Spark).
    master : str, optional
        Spark master URL (default ``local[*]``).
    session : SparkSession, optional
        Use this session instead of the shared one.
    """

    name = "spark"
    dialect = SparkDialect()

    def __init__(
        self,
        source: str | os.PathLike[str] | pd.DataFrame,
        *,
        master: str | None = None,
        session: Any | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(source, pd.DataFrame):
            text = str(source)
            if "://" not in text and not any(ch in text for ch in "*?["):
                # A FIFO or a device would block Spark's reader forever: refuse before the JVM.
                check_input_path(text, "data file", directory_ok=True)
        self.spark = session if session is not None else get_session(master)
        tag = uuid.uuid4().hex[:12]
        self.view = f"distprivacy_src_{tag}"
        self.picks_view = f"distprivacy_picks_{tag}"
        self._csv = False
        if isinstance(source, pd.DataFrame):
            self._source = "DataFrame"
            df = self._guard(lambda: self.spark.createDataFrame(source), "the DataFrame")
        else:
            df = self._read(str(source))
        self._guard(lambda: df.createOrReplaceTempView(self.view), self._source)
        self._schema = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        self._columns = self._describe()

    def _guard(self, action: Any, what: str) -> Any:
        try:
            with _quiet():
                return action()
        except DistPrivacyError:
            raise
        except Exception as exc:
            raise EngineError(f"Spark cannot read {what}: {one_line(exc)}") from None

    def _read(self, text: str) -> Any:
        self._source = text
        fmt = file_format(text.rstrip("/"))
        remote = "://" in text
        p = Path(text).expanduser()
        if fmt is None and not remote and not p.exists() and os.sep not in text:
            return self._guard(lambda: self.spark.table(text), f"table {text!r}")
        if not remote and not any(ch in text for ch in "*?[") and not p.exists():
            raise DistPrivacyError(
                f"data file not found: {p}; pass an existing .csv, .csv.gz, .tsv or .parquet "
                "file, or a table name"
            )
        path = text if remote else str(p)
        if fmt is not None and fmt[0] == "csv":
            self._csv = True
            reader = (
                self.spark.read.option("header", True)
                .option("sep", fmt[1])
                .option("inferSchema", False)
                .option("quote", '"')
                .option("escape", '"')
            )
            return self._guard(lambda: reader.csv(path), f"{text} as CSV")
        return self._guard(lambda: self.spark.read.parquet(path), f"{text} as Parquet")

    @property
    def source(self) -> str:
        return self._source

    def _describe(self) -> list[Column]:
        cols, seen = [], set()
        for raw, type_name in self._schema:
            name = raw.strip()
            if name.lower() in seen:
                raise DistPrivacyError(
                    f"{self._source} has duplicate column names (Spark compares them "
                    f"case-insensitively): {name}; rename them"
                )
            seen.add(name.lower())
            cols.append(Column(name, raw, _kind(type_name, self._csv), type_name))
        return cols

    def _fetch(self, sql: str) -> list[tuple]:
        try:
            with _quiet():
                return [tuple(r) for r in self.spark.sql(sql).collect()]
        except DistPrivacyError:
            raise
        except Exception as exc:
            raise EngineError(f"Spark failed on {self._source}: {one_line(exc)}") from None

    def _register(self, name: str, frame: pd.DataFrame) -> None:
        self._guard(
            lambda: self.spark.createDataFrame(frame).createOrReplaceTempView(name), "the picks"
        )

    def _unregister(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)

    def close(self) -> None:
        """Drop the engine's view (the shared session keeps running)."""
        try:
            self.spark.catalog.dropTempView(self.view)
        except Exception:  # pragma: no cover - the session may be gone already
            pass
