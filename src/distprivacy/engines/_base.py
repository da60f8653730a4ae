"""The engine interface: what the models need from the data, whatever holds it.

Everything the models of f_θ take from the records is small:

* per stratum of the protected property (records with / without it): the count N, the mean
  vector of the per-record statistic values g and their scatter matrix Σ (g − ḡ)(g − ḡ)ᵀ, plus
  the minimum and maximum of g (the record sensitivities of the group-DP baselines);
* for the Monte-Carlo model: the statistics of R random size-n subsets per θ (k records from the
  stratum with the property, n − k from the other).

An :class:`Engine` computes both; the pandas engine in memory, the SQL engines (DuckDB, Spark)
by pushing one grouped aggregation (exact moments) or one join with the drawn row ids
(subsets) to the data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.query import Query
from distprivacy.randomness import RandomState
from distprivacy.spec import ProtectionSpec


class EngineError(DistPrivacyError):
    """An engine cannot run the request (unreadable source, failed query); one line."""


class EngineUnavailableError(EngineError):
    """The engine is not installed or cannot start (no DuckDB, no pyspark, no Java)."""


class UnsupportedStatisticError(EngineError):
    """A statistic that only the pandas engine can compute (arbitrary Python)."""


class SQLCompileError(EngineError):
    """A predicate or statistic that does not compile to an SQL expression."""


@dataclass(frozen=True)
class StratumMoments:
    """Moments of the per-record statistic values g over one stratum of the property.

    Attributes
    ----------
    count : int
        Number of records N in the stratum.
    mean : ndarray, shape (m,)
        ḡ, the mean of g over the stratum.
    scatter : ndarray, shape (m, m)
        Σ (g − ḡ)(g − ḡ)ᵀ over the stratum (the population covariance times N).
    minimum, maximum : ndarray, shape (m,)
        Smallest and largest g per statistic (NaN for an empty stratum).
    """

    count: int
    mean: np.ndarray
    scatter: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray


def check_strata(spec: ProtectionSpec, n_pos: int, n_neg: int) -> None:
    """The checks of :meth:`ProtectionSpec.groups`, from the two stratum sizes (for an
    engine's :meth:`Engine.strata_moments`).

    Parameters
    ----------
    spec : ProtectionSpec
        What is protected: the subset size n and the shares θ_p.
    n_pos, n_neg : int
        Records with the property, and without it.

    Raises
    ------
    DistPrivacyError
        The data cannot realise some θ_p (same one-line messages as the in-memory path).
    """
    total = n_pos + n_neg
    if spec.n > total:
        raise DistPrivacyError(
            f"subset size n={spec.n} is larger than the data ({total} records); lower `n`"
        )
    if n_pos == 0:
        raise DistPrivacyError(
            f"no record satisfies the predicate {spec.predicate}; check the column's values"
        )
    if n_neg == 0:
        raise DistPrivacyError(
            f"every record satisfies the predicate {spec.predicate}; there is no property "
            "to protect"
        )
    for p, k in zip(spec.values, spec.counts, strict=True):
        if k > n_pos:
            raise DistPrivacyError(
                f"p={p} needs round(p·n)={k} records with {spec.predicate} but the data has "
                f"only {n_pos}; lower p or n"
            )
        if spec.n - k > n_neg:
            raise DistPrivacyError(
                f"p={p} needs {spec.n - k} records without {spec.predicate} but the data "
                f"has only {n_neg}; raise p or lower n"
            )


def require_finite(query: Query, values: np.ndarray, what: str, *, matrix: bool) -> None:
    """Fail closed on non-finite aggregates, naming the statistic.

    Parameters
    ----------
    values : ndarray, shape (..., m), or (m, m) when ``matrix``
        Aggregates whose last axis (and, for a matrix, both axes) index the statistics.
    what : str
        What the aggregates are (for the message), e.g. ``"sum"``.
    """
    v = np.asarray(values, dtype=float)
    bad = ~np.isfinite(v)
    if not bad.any():
        return
    m = query.dim
    rows = bad.any(axis=0) | bad.any(axis=1) if matrix else bad.reshape(-1, m).any(axis=0)
    names = [n for n, b in zip(query.names, rows, strict=True) if b]
    raise EngineError(
        f"the {what} of {', '.join(names)} over the records is not finite (overflow); "
        "rescale the column (e.g. to thousands) and try again"
    )


def record_sensitivities(query: Query, n: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per-record sensitivities of a linear query from the range [lo, hi] of each g (as
    :meth:`Query.record_sensitivities` computes them in memory)."""
    out = [
        s.sensitivity_from_range(n, float(a), float(b))
        for s, a, b in zip(query.statistics, lo, hi, strict=True)
    ]
    return np.array(out, dtype=float)


class Engine(ABC):
    """Where the records live and how the models' aggregates are computed.

    Subclasses: the pandas engine (a DataFrame in memory), DuckDB (files, in process) and Spark
    (files or tables on a cluster). Obtain one with :func:`distprivacy.engines.resolve_engine`.
    """

    #: Short name: ``"pandas"``, ``"duckdb"`` or ``"spark"``.
    name: str = ""
    #: Called as ``progress(done, total)`` during long scans and draws (records read, total
    #: None when unknown; datasets drawn of all): a command's progress bar. None: silent.
    progress: Callable[[int, int | None], None] | None = None

    @property
    @abstractmethod
    def source(self) -> str:
        """What the engine reads (a path, a table name or ``"DataFrame"``), for messages."""

    @abstractmethod
    def validate(self, query: Query, spec: ProtectionSpec | None = None) -> None:
        """Check that the query (and the spec's predicate) can run on the data: columns exist,
        have the right types and no missing values; raise a one-line error otherwise."""

    @abstractmethod
    def strata_moments(
        self, spec: ProtectionSpec, query: Query
    ) -> tuple[StratumMoments, StratumMoments]:
        """Exact moments of the per-record values g of a linear query, for the records with
        the property and for the others (also checks that the data can realise every θ_p)."""

    @abstractmethod
    def subset_statistics(
        self,
        spec: ProtectionSpec,
        query: Query,
        counts: Sequence[int],
        size: int,
        random_state: RandomState = None,
    ) -> list[np.ndarray]:
        """F of ``size`` random size-n datasets for each k in ``counts``: k records drawn
        without replacement from the stratum with the property and n − k from the other
        (``random_state``: seed or generator of the subsets, a simulation: see
        :func:`distprivacy.randomness.check_random_state`).

        Returns
        -------
        list of ndarray, shape (size, m), one per entry of ``counts``
        """

    @abstractmethod
    def random_subset_statistics(
        self, query: Query, n: int, random_state: RandomState = None
    ) -> np.ndarray:
        """F of one uniformly random n-record subset of the whole data (the release
        command's demonstration), shape (m,); ``random_state`` as in
        :meth:`subset_statistics`."""

    def record_sensitivities(self, spec: ProtectionSpec, query: Query) -> np.ndarray:
        """Per-record sensitivities of a linear query for size-n datasets (from the records'
        ranges, as in memory)."""
        a, b = self.strata_moments(spec, query)
        lo = np.fmin(a.minimum, b.minimum)
        hi = np.fmax(a.maximum, b.maximum)
        return record_sensitivities(query, spec.n, lo, hi)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the engine's resources (connections); the default does nothing."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"


#: CSV suffixes and their separators (as :func:`distprivacy.datasets.load_table`).
CSV_SUFFIXES: dict[str, str] = {".csv": ",", ".csv.gz": ",", ".tsv": "\t", ".tsv.gz": "\t"}
PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")


def one_line(exc: BaseException | str, limit: int = 300) -> str:
    """The first line of an error message, whitespace collapsed, at most ``limit`` characters."""
    text = str(exc).strip().splitlines()
    line = " ".join(text[0].split()) if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


def file_format(name: str) -> tuple[str, str | None] | None:
    """(``"csv"``, separator) or (``"parquet"``, None) from a file name's suffix, or None."""
    low = name.lower()
    for suffix, sep in CSV_SUFFIXES.items():
        if low.endswith(suffix):
            return "csv", sep
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet", None
    return None
