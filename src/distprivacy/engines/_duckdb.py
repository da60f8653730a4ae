"""The DuckDB engine: CSV and Parquet files scanned in process, in parallel, without loading
them (files larger than memory are fine: the aggregations stream; the Monte-Carlo numbering
spills to disk)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy._paths import check_input_path
from distprivacy.engines._base import EngineError, EngineUnavailableError, file_format, one_line
from distprivacy.engines._compile import Column, Dialect
from distprivacy.engines._sql import SQLEngine
from distprivacy.exceptions import DistPrivacyError
from distprivacy.query import Query
from distprivacy.spec import ProtectionSpec

_NUMERIC = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
)


def _kind(type_name: str, csv: bool) -> str:
    t = type_name.upper()
    if t.startswith(_NUMERIC):
        return "numeric"
    if t == "VARCHAR" or t.startswith("ENUM"):
        return "csv" if csv else "string"
    if t == "BOOLEAN":
        return "boolean"
    return "other"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class DuckDBEngine(SQLEngine):
    """Exact moments and Monte-Carlo subsets computed by DuckDB (in process).

    Parameters
    ----------
    source : path or DataFrame
        A CSV (``.csv``, ``.csv.gz``, ``.tsv``, ``.tsv.gz``, with a header line) or Parquet
        (``.parquet``, ``.pq``) file, a glob of such files, a directory of Parquet files, or a
        DataFrame (queried in place).
    threads : int, optional
        DuckDB worker threads (default: all cores).
    memory_limit : str, optional
        DuckDB's memory limit, e.g. ``"1GB"`` (beyond it, sorting spills to disk); default the
        library's limit (``DISTPRIVACY_MEMORY_LIMIT``, else 80 % of the available memory).
    """

    name = "duckdb"
    dialect = Dialect()
    #: Rows per batch of the streamed scan behind the Monte-Carlo subsets.
    batch_rows = 262_144

    def __init__(
        self,
        source: str | os.PathLike[str] | pd.DataFrame,
        *,
        threads: int | None = None,
        memory_limit: str | None = None,
    ) -> None:
        super().__init__()
        try:
            import duckdb
        except ImportError:  # pragma: no cover - duckdb is a dependency
            raise EngineUnavailableError(
                "the DuckDB engine needs the duckdb package; pip install duckdb"
            ) from None
        self._duckdb = duckdb
        config: dict[str, Any] = {"preserve_insertion_order": False}
        if threads is not None:
            config["threads"] = int(threads)
        if memory_limit is None:
            # The library's limit (DISTPRIVACY_MEMORY_LIMIT, else 80 % of the available
            # memory), not DuckDB's own default of 80 % of the machine's RAM.
            from distprivacy.resources import memory_limit as library_limit

            memory_limit = f"{library_limit()[0]}B"
        config["memory_limit"] = str(memory_limit)
        self.con = duckdb.connect(config=config)
        self.con.execute("SET enable_progress_bar = false")
        self._csv = False
        if isinstance(source, pd.DataFrame):
            self._source = "DataFrame"
            self._frame = source
            self.con.register(self.view, source)
            return
        p = check_input_path(source, "data file", directory_ok=True)
        self._source = str(p)
        text = str(p)
        if p.is_dir():
            fmt: tuple[str, str | None] | None = ("parquet", None)
            scan = f"read_parquet({_quote(text + '/**/*.parquet')})"
        else:
            fmt = file_format(p.name)
            if fmt is None:
                raise DistPrivacyError(
                    f"unknown file type: {str(p)!r}; use a .csv, .csv.gz, .tsv, .tsv.gz, .parquet "
                    "or .pq file"
                )
            if not any(ch in text for ch in "*?[") and not p.exists():
                raise DistPrivacyError(
                    f"data file not found: {p}; pass an existing .csv, .csv.gz, .tsv or "
                    ".parquet file"
                )
            if fmt[0] == "parquet":
                scan = f"read_parquet({_quote(text)})"
            else:
                self._csv = True
                if not any(ch in text for ch in "*?["):
                    _refuse_duplicate_header(p, fmt[1] or ",")
                scan = (
                    f"read_csv({_quote(text)}, header=true, delim={_quote(fmt[1] or ',')}, "
                    "all_varchar=true, quote='\"', escape='\"')"
                )
        kind = "Parquet" if fmt[0] == "parquet" else "CSV"
        try:
            self.con.execute(f"CREATE VIEW {self.view} AS SELECT * FROM {scan}")
            self._columns = self._describe()
        except duckdb.Error as exc:
            self.con.close()
            raise EngineError(
                f"cannot read {p} as {kind}: {one_line(exc)}; check that it is a valid {kind} file"
            ) from None
        if not self._columns:
            raise DistPrivacyError(f"{p} has no columns; pass a table with a header line")

    @property
    def source(self) -> str:
        return self._source

    def _describe(self) -> list[Column]:
        rows = self.con.execute(f"DESCRIBE {self.view}").fetchall()
        cols, seen = [], set()
        for raw, type_name, *_ in rows:
            name = raw.strip()
            if name in seen:
                raise DistPrivacyError(
                    f"{self._source} has duplicate column names after stripping whitespace: "
                    f"{name}; rename them"
                )
            seen.add(name)
            cols.append(Column(name, raw, _kind(type_name, self._csv), type_name))
        return cols

    def _gather(
        self, query: Query, spec: ProtectionSpec | None, wanted: dict[bool, np.ndarray]
    ) -> dict[bool, np.ndarray]:
        """The values of the wanted records, each stratum's records numbered in file order (as
        the pandas engine numbers them, so that a seed draws the same subsets on both).

        One streamed scan: DuckDB computes the stratum and the values in parallel and returns
        them in file order, batch by batch; only the wanted rows leave Arrow (memory: one
        batch plus the wanted rows)."""
        _, values, stratum = self._compile(query, spec)
        m = query.dim
        found = {f: np.full((len(w), m), np.nan) for f, w in wanted.items()}
        seen = dict.fromkeys(wanted, 0)
        inner = ", ".join(f"{v} AS v{k}" for k, (v, _, _) in enumerate(values))
        sql = f"SELECT {stratum} AS s, {inner} FROM {self.view}"
        try:
            self.con.execute("SET preserve_insertion_order = true")
            rel = self.con.sql(sql)
            stream = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader  # 2.x / 1.x
            for batch in stream(self.batch_rows):
                s = batch.column(0).to_numpy(zero_copy_only=False)
                for f, w in wanted.items():
                    rows = np.flatnonzero(s == f)
                    lo, hi = np.searchsorted(w, [seen[f], seen[f] + len(rows)])
                    if hi > lo:
                        sub = batch.take(rows[w[lo:hi] - seen[f]])
                        found[f][lo:hi] = np.column_stack(
                            [sub.column(k + 1).to_numpy(zero_copy_only=False) for k in range(m)]
                        )
                    seen[f] += len(rows)
        except self._duckdb.Error as exc:
            raise EngineError(f"DuckDB failed on {self._source}: {one_line(exc)}") from None
        finally:
            self.con.execute("SET preserve_insertion_order = false")
        return found

    def _stream(self, sql: str, rows: int) -> Iterator[Any]:
        """Arrow record batches of ``sql`` in file order (reproducible sums)."""
        try:
            self.con.execute("SET preserve_insertion_order = true")
            rel = self.con.sql(sql)
            stream = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader  # 2.x / 1.x
            yield from stream(rows)
        except self._duckdb.Error as exc:
            raise EngineError(f"DuckDB failed on {self._source}: {one_line(exc)}") from None
        finally:
            self.con.execute("SET preserve_insertion_order = false")

    def _scan_wide(
        self, values: list[tuple[str, str, str]], stratum: str, m: int
    ) -> tuple[dict, dict] | None:
        """Per stratum: count, Σ g, min, max, unusable count, and the scatter, from the values
        streamed in file order a batch at a time (about 4M values per batch): each batch's own
        mean and centred scatter, merged into the running ones by Chan et al.'s pairwise
        update (exact in exact arithmetic, no cancellation of raw sums of squares)."""
        cols = ", ".join(f"{v} AS v{k}, {bad} AS u{k}" for k, (v, bad, _) in enumerate(values))
        sql = f"SELECT {stratum} AS s, {cols} FROM {self.view}"
        acc: dict[object, list] = {}
        done = 0
        for batch in self._stream(sql, max(1024, (1 << 22) // m)):
            flag = batch.column(0)
            valid = flag.is_valid().to_numpy(zero_copy_only=False)
            s = flag.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
            X = np.column_stack(
                [batch.column(1 + 2 * k).to_numpy(zero_copy_only=False) for k in range(m)]
            ).astype(float)
            U = np.column_stack(
                [batch.column(2 + 2 * k).fill_null(True).to_numpy(zero_copy_only=False)
                 for k in range(m)]
            ).astype(bool)  # fmt: skip
            X[U] = 0.0  # unusable: counted (and refused), kept out of the sums
            for key, sel in ((True, valid & s), (False, valid & ~s), (None, ~valid)):
                if not sel.any():
                    continue
                x, u = X[sel], U[sel]
                part = [
                    len(x),
                    x.mean(axis=0),
                    None,
                    np.where(u, np.inf, x).min(axis=0),
                    np.where(u, -np.inf, x).max(axis=0),
                    u.sum(axis=0).astype(float),
                ]
                c = x - part[1]
                part[2] = c.T @ c
                if key not in acc:
                    acc[key] = part
                    continue
                na, ma, Ma, loa, hia, bada = acc[key]
                nb, mb, Mb, lo, hi, bad = part
                n = na + nb
                dlt = mb - ma
                acc[key] = [
                    n,
                    ma + dlt * (nb / n),
                    Ma + Mb + np.outer(dlt, dlt) * (na * nb / n),
                    np.minimum(loa, lo),
                    np.maximum(hia, hi),
                    bada + bad,
                ]
            done += len(s)
            if self.progress is not None:
                self.progress(done, None)
        first, shifted = {}, {}
        for key, (n, mean, M, lo, hi, bad) in acc.items():
            lo = np.where(np.isfinite(lo), lo, np.nan)
            hi = np.where(np.isfinite(hi), hi, np.nan)
            first[key] = (n, mean * n, lo, hi, bad)
            shifted[key] = (mean, np.zeros(m), M)
        return first, shifted

    def _ordered_fetch(self, sql: str) -> list[tuple]:
        try:
            self.con.execute("SET preserve_insertion_order = true")
            return self._fetch(sql)
        finally:
            self.con.execute("SET preserve_insertion_order = false")

    def _fetch(self, sql: str) -> list[tuple]:
        try:
            return self.con.execute(sql).fetchall()
        except self._duckdb.Error as exc:
            raise EngineError(f"DuckDB failed on {self._source}: {one_line(exc)}") from None

    def _register(self, name: str, frame: pd.DataFrame) -> None:
        self.con.register(name, frame)

    def _unregister(self, name: str) -> None:
        self.con.unregister(name)

    def close(self) -> None:
        self.con.close()


def _refuse_duplicate_header(path: Path, delimiter: str) -> None:
    """DuckDB renames repeated CSV header names (``age``, ``age_1``) before anyone can see them:
    read the header line first and refuse repeated names (as the pandas reader does)."""
    import csv
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as fh:
            header = next(csv.reader(fh, delimiter=delimiter), [])
    except (OSError, csv.Error, EOFError):
        return  # DuckDB reports what is wrong with the file
    names = [h.strip() for h in header]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DistPrivacyError(
            f"{path} has duplicate column names after stripping whitespace: {', '.join(dup)}; "
            "rename them"
        )
