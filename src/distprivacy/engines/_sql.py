"""Predicates and statistics as SQL, and the two aggregations every SQL engine runs.

The data is read as the in-memory path reads it (:func:`distprivacy.datasets.load_table`):
column names and string values are stripped of surrounding whitespace; in CSV files the
strings pandas reads as missing (``""``, ``NA``, ``NaN``, ``null``, … after leading spaces)
are missing, and a column is numeric when every non-missing value parses as a number. In
numeric columns NaN is missing too. Predicates compare numbers as numbers and strings (``==``,
``!=`` only) after stripping.

Exact moments take one scan grouped by the property: per stratum the count, and per per-record
value g its min, max, the count of missing / non-finite values (to refuse), and the sums
Σ (g − c) and Σ (g − c)(g − c)ᵀ shifted by c, the mean of g over the file's first rows (a cheap
read). The exact mean c + d and scatter Σ(g − c)(g − c)ᵀ − N d dᵀ (d = Σ(g − c)/N) follow;
with c near the mean they are free of the cancellation of raw sums of squares, and where c is
more than :attr:`SQLEngine.refine_sds` standard deviations off (a file sorted by that value) a
second scan centred on the one-pass means recomputes them.

Monte-Carlo subsets: the k-subsets of row numbers inside each stratum are drawn in NumPy, a
batch at a time (:func:`distprivacy.sampling.draw_subsets`, the same sampler in the same order as
in memory); the drawn records' values are fetched once (all of a small stratum; else only those
drawn, listed by a first run of the draws from a copy of the generator) and each batch is summed
in NumPy, so memory is the drawn records plus one batch, however many subsets. Here (Spark) each
stratum is numbered 1..N by ``row_number()`` ordered by the records' values (ties are records
with equal values, interchangeable for F, so the result does not depend on how the engine breaks
them) and joined with the wanted numbers. DuckDB numbers the records in file order instead, by
one streamed scan (:meth:`DuckDBEngine._gather`): the same numbering as pandas, so that a seed
draws the same subsets there.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence

import numpy as np
import pandas as pd

from distprivacy.engines._base import (
    Engine,
    StratumMoments,
    check_strata,
    require_finite,
)
from distprivacy.engines._compile import Column, Compiler, Dialect
from distprivacy.exceptions import DistPrivacyError
from distprivacy.query import LinearStatistic, Query
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.spec import ProtectionSpec


class SQLEngine(Engine):
    """The SQL engines' shared logic; subclasses say how to run SQL and register a table."""

    dialect: Dialect = Dialect()
    #: Name of the view of the source the SQL reads.
    view = "distprivacy_src"
    #: Name of the table of drawn row numbers.
    picks_view = "distprivacy_picks"

    def __init__(self) -> None:
        self._columns: list[Column] | None = None
        self._numeric_csv: set[str] = set()
        self._typed: set[str] = set()
        self._moments: dict[tuple, tuple[StratumMoments, StratumMoments]] = {}
        self._first: dict[tuple, dict] = {}
        self._shifted: dict[tuple, dict] = {}

    # -- what subclasses provide -------------------------------------------------------------

    @abstractmethod
    def _describe(self) -> list[Column]:
        """The source's columns."""

    @abstractmethod
    def _fetch(self, sql: str) -> list[tuple]:
        """Run a query and return its rows (one-line errors on failure)."""

    @abstractmethod
    def _register(self, name: str, frame: pd.DataFrame) -> None:
        """Make a small DataFrame queryable as ``name``."""

    @abstractmethod
    def _unregister(self, name: str) -> None:
        """Drop what :meth:`_register` made."""

    # -- compilation -------------------------------------------------------------------------

    def compiler(self, names: Sequence[str] = ()) -> Compiler:
        """A compiler over the source, with the CSV columns in ``names`` typed (one scan)."""
        if self._columns is None:
            self._columns = self._describe()
        comp = Compiler(self._columns, self.dialect)
        todo = sorted(
            {n for n in names if comp.column(n).kind == "csv" and n not in self._typed},
        )
        if todo:
            row = self._fetch(
                "SELECT "
                + ", ".join(comp.not_numeric_count(n) for n in todo)
                + f" FROM {self.view}"
            )[0]
            for n, bad in zip(todo, row, strict=True):
                self._typed.add(n)
                if not bad:
                    self._numeric_csv.add(n)
        return Compiler(self._columns, self.dialect, set(self._numeric_csv))

    @staticmethod
    def _columns_of(query: Query, spec: ProtectionSpec | None) -> list[str]:
        cols = [c for s in query.statistics for c in s.columns()]
        if spec is not None:
            cols.append(spec.predicate.column)
        return cols

    def _compile(
        self, query: Query, spec: ProtectionSpec | None
    ) -> tuple[Compiler, list[tuple[str, str, str]], str]:
        for s in query.statistics:
            if not isinstance(s, LinearStatistic):
                Compiler([], self.dialect).value(s)  # raises the pandas-only error
        comp = self.compiler(self._columns_of(query, spec))
        values = [comp.value(s) for s in query.statistics]
        if spec is None:
            stratum = "TRUE"
        else:
            p = spec.predicate
            stratum = (
                f"CASE WHEN {comp.missing(p.column)} THEN NULL "
                f"WHEN {comp.predicate(p)} THEN TRUE ELSE FALSE END"
            )
        return comp, values, stratum

    # -- validation and exact moments --------------------------------------------------------

    #: Rows (the first ones, in file order) whose means shift the one-pass sums.
    pilot_rows = 10_000
    #: Beyond this many standard deviations between a stratum's mean and its shift (for some
    #: statistic) the scatter is recomputed by a second pass centred on the exact means: the
    #: one-pass scatter loses precision in proportion to that ratio squared.
    refine_sds = 100.0

    def _first_pass(
        self, query: Query, spec: ProtectionSpec | None
    ) -> dict[object, tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per stratum (True / False / None for an undecidable predicate): count, Σ g, min g,
        max g and the count of unusable values per statistic (one scan, cached; the same scan
        sums the shifted scatter :meth:`strata_moments` needs)."""
        key = (None if spec is None else str(spec.predicate), query.names)
        if key not in self._first:
            self._first[key], self._shifted[key] = self._scan_first(query, spec)
        return self._first[key]

    #: Above this many statistics the moments are not one SQL query (its m(m + 1)/2 sums of
    #: products grow past what engines compile: DuckDB crashed at 200) but a stream of the values
    #: into NumPy (:meth:`_scan_wide`), where the engine can stream.
    wide_statistics = 24

    def _scan_wide(
        self, values: list[tuple[str, str, str]], stratum: str, m: int
    ) -> tuple[dict, dict] | None:
        """The result of :meth:`_scan_first` from a stream of the values (None: this engine
        cannot stream, and runs the SQL form)."""
        return None

    def _ordered_fetch(self, sql: str) -> list[tuple]:
        """Rows of ``sql`` read in file order where the engine can (DuckDB): a ``LIMIT`` then
        takes the file's first rows, reproducibly."""
        return self._fetch(sql)

    def _pilot(self, values: list[tuple[str, str, str]], stratum: str) -> dict[bool, np.ndarray]:
        """Per stratum, the mean of each g over the file's first :attr:`pilot_rows` rows (0
        where there is none): the shift c of the one-pass sums Σ (g − c) and
        Σ (g − c)(g − c)ᵀ. Any c gives the exact moments in exact arithmetic; one near the mean
        keeps floating point free of the cancellation of raw sums of squares."""
        avg = ", ".join(f"avg(CASE WHEN {bad} THEN NULL ELSE {v} END)" for v, bad, _ in values)
        sql = (
            f"SELECT {stratum} AS s, {avg} FROM "
            f"(SELECT * FROM {self.view} LIMIT {self.pilot_rows}) AS h GROUP BY 1"
        )
        got = {
            bool(r[0]): np.array([np.nan if x is None else float(x) for x in r[1:]])
            for r in self._ordered_fetch(sql)
            if r[0] is not None
        }
        m = len(values)
        pooled = np.zeros(m)
        if got:
            with np.errstate(all="ignore"):
                stack = np.stack(list(got.values()))
                ok = np.isfinite(stack)
                pooled = np.where(ok.any(axis=0), np.where(ok, stack, 0).sum(0) / ok.sum(0), 0.0)
        out = {}
        for flag in (True, False):
            c = got.get(flag, pooled)
            out[flag] = np.where(np.isfinite(c), c, pooled)
        return out

    def _scan_first(
        self, query: Query, spec: ProtectionSpec | None
    ) -> tuple[dict[object, tuple], dict[object, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """One scan grouped by the property (and the dialect's buckets): per stratum the count,
        and per statistic Σ (g − c), min g, max g, the unusable count, and Σ (g − c)(g − c)ᵀ,
        the shift c from :meth:`_pilot`. Partial sums (per bucket) are added exactly here
        (math.fsum)."""
        _, values, stratum = self._compile(query, spec)
        d = self.dialect
        m = query.dim
        if m > self.wide_statistics:  # O(m²) aggregates: stream the values instead, if possible
            wide = self._scan_wide(values, stratum, m)
            if wide is not None:
                return wide
        shift = self._pilot(values, stratum)
        inner = ", ".join(f"{v} AS v{k}, {bad} AS u{k}" for k, (v, bad, _) in enumerate(values))
        cexpr = ", ".join(
            f"CASE WHEN u{k} THEN 0.0 ELSE v{k} - CASE WHEN s THEN {d.double(shift[True][k])} "
            f"ELSE {d.double(shift[False][k])} END END AS c{k}"
            for k in range(m)
        )
        keep = ", ".join(f"v{k}, u{k}" for k in range(m))
        sel = ["s", f"{d.bucket} AS b" if d.bucket else "0 AS b", "count(*) AS n"]
        for k in range(m):
            sel += [
                d.sum(f"c{k}"),
                f"min(CASE WHEN u{k} THEN NULL ELSE v{k} END)",
                f"max(CASE WHEN u{k} THEN NULL ELSE v{k} END)",
                f"sum(CASE WHEN u{k} THEN 1 ELSE 0 END)",
            ]
        sel += [d.sum(f"c{i} * c{j}") for i in range(m) for j in range(i, m)]
        sql = (
            f"SELECT {', '.join(sel)} FROM (SELECT s, {keep}, {cexpr} FROM "
            f"(SELECT {stratum} AS s, {inner} FROM {self.view}) AS g) AS c GROUP BY 1, 2"
        )
        parts: dict[object, list[tuple]] = {}
        for row in self._fetch(sql):
            parts.setdefault(None if row[0] is None else bool(row[0]), []).append(row[2:])
        first, shifted = {}, {}
        iu = np.triu_indices(m)
        for key, rows in parts.items():
            n = sum(int(r[0]) for r in rows)
            per = [r[1 : 1 + 4 * m] for r in rows]

            def col(i: int, per: list = per) -> list:
                return [r[i] for r in per if r[i] is not None]

            tot = np.array([math.fsum(float(x) for x in col(4 * k)) for k in range(m)])
            lo = np.array([min(map(float, col(4 * k + 1)), default=np.nan) for k in range(m)])
            hi = np.array([max(map(float, col(4 * k + 2)), default=np.nan) for k in range(m)])
            bad = np.array([float(sum(int(x) for x in col(4 * k + 3))) for k in range(m)])
            C = np.zeros((m, m))
            C[iu] = [math.fsum(float(r[j]) for r in rows) for j in range(1 + 4 * m, len(rows[0]))]
            C = C + np.triu(C, 1).T
            c = shift[True if key is None else key]
            with np.errstate(all="ignore"):
                first[key] = (n, tot + (n - bad) * c, lo, hi, bad)
            shifted[key] = (c, tot, C)
        return first, shifted

    def _check_first_pass(self, query: Query, spec: ProtectionSpec | None, first: dict) -> None:
        _, values, _ = self._compile(query, spec)
        if spec is not None and None in first:
            raise DistPrivacyError(
                f"column {spec.predicate.column!r} has {first[None][0]} missing values; the "
                f"predicate {spec.predicate} cannot be decided for them — drop or impute those "
                "records"
            )
        bad = sum((f[4] for f in first.values()), np.zeros(query.dim))
        for k, (_, _, msg) in enumerate(values):
            if bad[k] > 0:
                raise DistPrivacyError(msg.format(int(bad[k])))

    def validate(self, query: Query, spec: ProtectionSpec | None = None) -> None:
        self._check_first_pass(query, spec, self._first_pass(query, spec))

    def strata_moments(
        self, spec: ProtectionSpec, query: Query
    ) -> tuple[StratumMoments, StratumMoments]:
        key = (str(spec.predicate), query.names)
        if key in self._moments:
            out = self._moments[key]
            check_strata(spec, out[0].count, out[1].count)
            return out
        first = self._first_pass(query, spec)
        self._check_first_pass(query, spec, first)
        empty = (0, *(np.full(query.dim, np.nan),) * 3, np.zeros(query.dim))
        pos, neg = first.get(True, empty), first.get(False, empty)
        check_strata(spec, pos[0], neg[0])
        require_finite(query, np.stack([pos[1], neg[1]]), "sum", matrix=False)
        shifted = self._shifted[key]
        scatter = {}
        for flag, row in ((True, pos), (False, neg)):
            c, tot, C = shifted[flag]
            dlt = tot / row[0]
            with np.errstate(all="ignore"):
                S = C - row[0] * np.outer(dlt, dlt)
                # Σ(g − c)² / Σ(g − ḡ)² = 1 + (d / SD)²: the digits the subtraction cancels.
                far = np.diag(C) > self.refine_sds**2 * np.diag(S)
            scatter[flag] = (c + dlt, S, bool(far.any() or not np.isfinite(S).all()))
        if any(v[2] for v in scatter.values()):  # a shift too far off: centre on the means
            scatter = self._centred_scatter(query, spec, {f: v[0] for f, v in scatter.items()})
        out = []
        for flag, row in ((True, pos), (False, neg)):
            mean, S = scatter[flag][0], scatter[flag][1]
            require_finite(query, S, "sum of squares", matrix=True)
            out.append(StratumMoments(row[0], mean, S, row[2], row[3]))
        self._moments[key] = (out[0], out[1])
        return out[0], out[1]

    def _centred_scatter(
        self, query: Query, spec: ProtectionSpec, mu0: dict[bool, np.ndarray]
    ) -> dict[bool, tuple[np.ndarray, np.ndarray, bool]]:
        """Second pass: Σ (g − ḡ₀) and Σ (g − ḡ₀)(g − ḡ₀)ᵀ centred on the one-pass means ḡ₀,
        giving the exact mean ḡ₀ + Σ(g − ḡ₀)/N and scatter Σ(g − ḡ₀)(g − ḡ₀)ᵀ − N d dᵀ."""
        _, values, stratum = self._compile(query, spec)
        d = self.dialect
        m = query.dim
        inner = ", ".join(f"{v} AS v{k}" for k, (v, _, _) in enumerate(values))
        sel = ["s", f"{d.bucket} AS b" if d.bucket else "0 AS b", "count(*)"]
        sel += [f"{d.sum(f'c{i}')}" for i in range(m)]
        sel += [f"{d.sum(f'c{i} * c{j}')}" for i in range(m) for j in range(i, m)]
        cexpr = ", ".join(
            f"(v{k} - CASE WHEN s THEN {d.double(mu0[True][k])} "
            f"ELSE {d.double(mu0[False][k])} END) AS c{k}"
            for k in range(m)
        )
        sql = (
            f"SELECT {', '.join(sel)} FROM (SELECT s, {cexpr} FROM "
            f"(SELECT {stratum} AS s, {inner} FROM {self.view}) AS g) AS c GROUP BY 1, 2"
        )
        partial: dict[bool, list[list[float]]] = {True: [], False: []}
        for r in self._fetch(sql):
            partial[bool(r[0])].append([float(x) for x in r[2:]])
        out = {}
        iu = np.triu_indices(m)
        for flag, rows in partial.items():
            r = np.array([math.fsum(col) for col in zip(*rows, strict=True)])
            N = r[0]
            dlt = r[1 : 1 + m] / N
            S = np.zeros((m, m))
            S[iu] = r[1 + m :]
            S = S + np.triu(S, 1).T
            out[flag] = (mu0[flag] + dlt, S - N * np.outer(dlt, dlt), False)
        return out

    # -- Monte-Carlo subsets -----------------------------------------------------------------

    #: A stratum whose values fit in this many bytes is fetched whole, and the subsets are drawn
    #: once; above it the draws are made twice from one seed (first to list the records drawn,
    #: then to sum them), so that only the drawn records are fetched.
    gather_all_bytes = 64 * 2**20

    def _gather(
        self, query: Query, spec: ProtectionSpec | None, wanted: dict[bool, np.ndarray]
    ) -> dict[bool, np.ndarray]:
        """The values g of the records whose 0-based number inside stratum s is listed (sorted,
        unique) in ``wanted[s]``, as arrays of shape (len(wanted[s]), m).

        Here (the generic SQL form) each stratum is numbered by ``row_number()`` ordered by the
        values and joined with the wanted numbers."""
        _, values, stratum = self._compile(query, spec)
        m = query.dim
        inner = ", ".join(f"{v} AS v{k}" for k, (v, _, _) in enumerate(values))
        order = ", ".join(f"v{k}" for k in range(m))
        sql = (
            f"SELECT p.s, p.pos, {order} FROM {self.picks_view} AS p JOIN "
            f"(SELECT s, row_number() OVER (PARTITION BY s ORDER BY {order}) AS pos, {order} "
            f"FROM (SELECT {stratum} AS s, {inner} FROM {self.view}) AS g "
            "WHERE s IS NOT NULL) AS x ON p.s = x.s AND p.pos = x.pos"
        )
        picks = pd.DataFrame(
            {
                "s": np.concatenate([np.full(len(w), f) for f, w in wanted.items()]),
                "pos": np.concatenate(list(wanted.values())).astype(np.int64) + 1,
            }
        )
        self._register(self.picks_view, picks)
        try:
            rows = self._fetch(sql)
        finally:
            self._unregister(self.picks_view)
        out = {f: np.full((len(w), m), np.nan) for f, w in wanted.items()}
        for r in rows:
            f = bool(r[0])
            out[f][np.searchsorted(wanted[f], int(r[1]) - 1)] = r[2:]
        return out

    def _draw_and_sum(
        self,
        query: Query,
        spec: ProtectionSpec | None,
        strata: dict[bool, int],
        counts: Sequence[int],
        n: int,
        size: int,
        gen: np.random.Generator,
    ) -> list[np.ndarray]:
        """Σ g over ``size`` random datasets per count k (k records of stratum True, n − k of
        stratum False), drawn by :func:`~distprivacy.sampling.draw_subsets` and summed a batch
        at a time (memory: the drawn records' values and one batch)."""
        import copy

        from distprivacy.resources import check_memory
        from distprivacy.sampling import draw_subsets, sample_statistics_bytes

        m = query.dim
        whole = sum(strata.values()) * m * 8 <= self.gather_all_bytes
        check_memory(
            sample_statistics_bytes(size, n, m)
            + 8.0 * m * (len(counts) * size + min(sum(strata.values()), len(counts) * size * n))
            + 2048.0 * n * m,
            f"{len(counts)} × {size} random datasets of {n} records",
        )
        if whole:
            wanted = {f: np.arange(N) for f, N in strata.items()}
        else:  # a copy of the generator lists the records the real draws will pick
            probe = np.random.Generator(copy.deepcopy(gen.bit_generator))
            masks = {f: np.zeros(N, dtype=bool) for f, N in strata.items()}
            for k in counts:
                for ia, ib in draw_subsets(strata[True], strata[False], k, n, size, probe):
                    masks[True][ia] = True
                    masks[False][ib] = True
            wanted = {f: np.flatnonzero(mk) for f, mk in masks.items()}
        vals = self._gather(query, spec, wanted)
        require_finite(query, np.concatenate(list(vals.values())), "value", matrix=False)
        out, done = [], 0
        for k in counts:
            sums, a = np.empty((size, m)), 0
            for ia, ib in draw_subsets(strata[True], strata[False], k, n, size, gen):
                if not whole:
                    ia, ib = np.searchsorted(wanted[True], ia), np.searchsorted(wanted[False], ib)
                for c in range(0, len(ia), 256):  # as Query.evaluate_batch: a gather per 256
                    G = np.concatenate(
                        [vals[True][ia[c : c + 256]], vals[False][ib[c : c + 256]]], axis=1
                    )
                    sums[a + c : a + c + len(G)] = G.sum(axis=1)
                a += len(ia)
                done += len(ia)
                if self.progress is not None:
                    self.progress(done, len(counts) * size)
            out.append(sums)
        return out

    def subset_statistics(
        self,
        spec: ProtectionSpec,
        query: Query,
        counts: Sequence[int],
        size: int,
        random_state: RandomState = None,
    ) -> list[np.ndarray]:
        first = self._first_pass(query, spec)  # also refuses what does not compile
        self._check_first_pass(query, spec, first)
        n_pos, n_neg = (first[flag][0] if flag in first else 0 for flag in (True, False))
        check_strata(spec, n_pos, n_neg)
        gen = check_random_state(random_state, secure=False)
        sums = self._draw_and_sum(
            query, spec, {True: n_pos, False: n_neg}, counts, spec.n, size, gen
        )
        out = []
        for s in sums:
            s = s * query.scales(spec.n)
            require_finite(query, s, "subset statistics", matrix=False)
            out.append(s)
        return out

    def random_subset_statistics(
        self, query: Query, n: int, random_state: RandomState = None
    ) -> np.ndarray:
        first = self._first_pass(query, None)
        self._check_first_pass(query, None, first)
        total = sum(f[0] for f in first.values())
        if n > total:
            raise DistPrivacyError(
                f"subset size n={n} is larger than the data ({total} records); lower `n`"
            )
        pos = check_random_state(random_state, secure=False).choice(total, size=n, replace=False)
        srt = np.sort(pos)
        vals = self._gather(query, None, {True: srt})[True][np.searchsorted(srt, pos)]
        return vals.sum(axis=0) * query.scales(n)
