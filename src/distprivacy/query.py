"""The released statistics F: a vector of named statistics of a size-n dataset.

Linear statistics (mean, sum, count, proportion) are ``scale · Σ_records g(record)``; the library
uses that form for exact moments (:class:`distprivacy.models.ExactModel`) and for fast Monte-Carlo
(gather per-record values by index matrices, then sum). Any other statistic is a
:class:`CallableStatistic`, a vectorised function of the records' values.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from distprivacy.checks import (
    check_callable,
    check_dataframe,
    check_instance,
    check_number,
    check_text,
    shown,
)
from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError
from distprivacy.spec import Predicate, check_column


def _numeric_column(data: pd.DataFrame, column: str, what: str) -> np.ndarray:
    check_column(data, column)
    col = data[column]
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise DistPrivacyError(
            f"{what} needs a numeric column but {column!r} is not numeric; "
            f"use count:{column}==VALUE"
        )
    values = col.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        raise DistPrivacyError(
            f"column {column!r} has {int(bad.sum())} missing or non-finite values; "
            "drop or impute them before releasing"
        )
    return values


class NoSQLFormError(DistPrivacyError):
    """A statistic has no SQL form (Python code runs on the pandas engine only)."""


#: Every statistic kind by the word that names it in a query (``mean`` → :class:`Mean`): filled
#: by the classes themselves (:meth:`Statistic.__init_subclass__`), so a new kind is one class.
_KINDS: dict[str, type[Statistic]] = {}


class Statistic(ABC):
    """One component of F.

    A kind of statistic knows itself: the word of its text form (``kind``, e.g. ``"mean"``)
    and how to read its argument (:meth:`from_arg`), how to write itself back
    (:meth:`text`), its per-record sensitivity from the range of its per-record values
    (:meth:`sensitivity_from_range`) and its SQL expression (:meth:`sql_value`, given the
    engine's SQL compiler). A subclass with a ``kind`` registers itself for
    :func:`parse_statistic` (docs/extending.md).
    """

    name: str
    linear: bool = False
    #: The word of the text form (``mean:age``); None: not writable as text (Python callables).
    kind: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if kind is not None:
            if kind in _KINDS and _KINDS[kind].__qualname__ != cls.__qualname__:
                raise DistPrivacyError(f"a statistic kind {kind!r} is already defined")
            _KINDS[kind] = cls

    @classmethod
    def from_arg(cls, arg: str) -> Statistic:
        """The statistic of the text ``KIND:ARG`` (``arg``: what follows the colon)."""
        raise DistPrivacyError(f"{cls.__name__} has no text form")

    def arg(self) -> str:
        """What follows ``KIND:`` in the text form."""
        raise DistPrivacyError(f"{type(self).__name__} has no text form")

    def text(self) -> str | None:
        """The text :func:`parse_statistic` reads back into this statistic (None when it has
        none, e.g. a Python callable)."""
        return None if self.kind is None else f"{self.kind}:{self.arg()}"

    def sensitivity_from_range(self, n: int, low: float, high: float) -> float:
        """Per-record sensitivity in a dataset of n records when each record's value lies in
        [low, high] (the engines compute the range; NaN when unknown)."""
        return float("nan")

    def resolution(self, n: int) -> float:
        """Half the step between the statistic's possible values in a dataset of n records:
        noise with a smaller SD rounds away, and a release then publishes the true value
        (0.5 for a count, 0.5/n for a proportion). 0 for a statistic whose values the kind
        does not put on a grid (a mean, a sum, a Python callable): the exactness gate
        (:mod:`distprivacy.mechanisms._exactness`) then judges its noise by its spread under
        the model alone."""
        return 0.0

    def value_range(self, n: int) -> tuple[float, float] | None:
        """The statistic's possible values in a dataset of n records ([0, n] for a count,
        [0, 1] for a proportion), None when the kind does not bound them."""
        return None

    def describe(self) -> str:
        """The statistic in a steward's words ("the mean of age", "the share of records with
        sex==Female"); its name when the kind has no words of its own."""
        return self.name

    @classmethod
    def from_name(cls, name: str) -> Statistic | None:
        """The statistic whose :attr:`name` is ``name`` (``mean(age)``, ``count(sex==Female)``:
        a kind's name is ``KIND(ARG)`` of its text form ``KIND:ARG``), None when no kind
        writes that name (a Python callable's label, a user's model file's column)."""
        kind, paren, arg = str(name).partition("(")
        if not paren or not arg.endswith(")") or kind not in _KINDS:
            return None
        try:
            stat = _KINDS[kind].from_arg(arg[:-1])
        except DistPrivacyError:
            return None
        return stat if stat.name == name else None

    def sql_value(self, sql: Any) -> tuple[str, str, str]:
        """(per-record value g, condition making a record unusable, message) as SQL, built
        with the engine's compiler ``sql`` (``number``, ``kind``, ``predicate``, ``missing``,
        ``d.is_finite``); refuses a statistic with no SQL form."""
        raise NoSQLFormError(
            f"statistic {self.name!r} is arbitrary Python and runs only on the pandas engine; "
            "use `engine='pandas'` or the built-in statistics mean, sum, "
            "count, proportion"
        )

    @abstractmethod
    def columns(self) -> tuple[str, ...]:
        """Columns the statistic reads."""

    @abstractmethod
    def evaluate(self, data: pd.DataFrame) -> float:
        """The statistic of a whole dataset."""

    def record_sensitivity(self, data: pd.DataFrame, n: int) -> float | None:
        """Largest change from replacing one record of a size-n dataset (group-DP baselines),
        from the data's ranges; None when unknown."""
        return None


class LinearStatistic(Statistic):
    """``scale(n) · Σ g(record)`` over the records of the dataset."""

    linear = True

    @abstractmethod
    def record_values(self, data: pd.DataFrame) -> np.ndarray:
        """Per-record values g(record), shape (N,)."""

    @abstractmethod
    def scale(self, n: int) -> float:
        """Multiplier of the sum for a dataset of n records."""

    def evaluate(self, data: pd.DataFrame) -> float:
        if len(data) == 0:
            raise DistPrivacyError(f"cannot compute {self.name} of an empty dataset")
        return float(self.scale(len(data)) * self.record_values(data).sum())

    def record_sensitivity(self, data: pd.DataFrame, n: int) -> float | None:
        g = self.record_values(data)
        return float(abs(self.scale(n)) * (g.max() - g.min()))

    def sensitivity_from_range(self, n: int, low: float, high: float) -> float:
        return float(abs(self.scale(n)) * (high - low))


def _numeric_sql(stat: Mean | Sum, sql: Any, what: str) -> tuple[str, str, str]:
    """The SQL value of a numeric column (mean, sum): the number, or a refusal."""
    col = stat.column
    if sql.kind(col) != "numeric":
        raise DistPrivacyError(
            f"{what} needs a numeric column but {col!r} is not numeric; use count:{col}==VALUE"
        )
    v = sql.number(col)
    return (
        v,
        f"({v} IS NULL OR NOT {sql.d.is_finite(v)})",
        f"column {col!r} has {{}} missing or non-finite values; drop or impute them before "
        "releasing",
    )


@dataclass(frozen=True)
class Mean(LinearStatistic):
    """Average of a numeric column (query text ``mean:COL``).

    Parameters
    ----------
    column : str
        The numeric column averaged over the released records; missing values are refused.
    """

    column: str

    def __post_init__(self) -> None:
        check_text(self.column, "column")

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"mean({self.column})"

    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    kind: ClassVar[str | None] = "mean"

    def describe(self) -> str:
        return f"the mean of {self.column}"

    @classmethod
    def from_arg(cls, arg: str) -> Mean:
        return cls(arg)

    def arg(self) -> str:
        return self.column

    def record_values(self, data: pd.DataFrame) -> np.ndarray:
        return _numeric_column(data, self.column, "mean")

    def sql_value(self, sql: Any) -> tuple[str, str, str]:
        return _numeric_sql(self, sql, "mean")

    def scale(self, n: int) -> float:
        return 1.0 / n


@dataclass(frozen=True)
class Sum(LinearStatistic):
    """Sum of a numeric column (query text ``sum:COL``).

    Parameters
    ----------
    column : str
        The numeric column summed over the released records; missing values are refused.
    """

    column: str

    def __post_init__(self) -> None:
        check_text(self.column, "column")

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"sum({self.column})"

    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    kind: ClassVar[str | None] = "sum"

    def describe(self) -> str:
        return f"the sum of {self.column}"

    @classmethod
    def from_arg(cls, arg: str) -> Sum:
        return cls(arg)

    def arg(self) -> str:
        return self.column

    def record_values(self, data: pd.DataFrame) -> np.ndarray:
        return _numeric_column(data, self.column, "sum")

    def sql_value(self, sql: Any) -> tuple[str, str, str]:
        return _numeric_sql(self, sql, "sum")

    def scale(self, n: int) -> float:
        return 1.0


@dataclass(frozen=True)
class Count(LinearStatistic):
    """Number of records satisfying a predicate (query text ``count:PRED``).

    Parameters
    ----------
    predicate : Predicate
        The record predicate counted, e.g. ``Predicate.parse("sex==Female")``.
    """

    predicate: Predicate

    def __post_init__(self) -> None:
        check_instance(self.predicate, "predicate", Predicate,
                       "a Predicate (Predicate.parse('sex==Female'))")  # fmt: skip

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"count({self.predicate})"

    def columns(self) -> tuple[str, ...]:
        return (self.predicate.column,)

    def record_values(self, data: pd.DataFrame) -> np.ndarray:
        check_column(data, self.predicate.column)
        if data[self.predicate.column].isna().any():
            raise DistPrivacyError(
                f"column {self.predicate.column!r} has missing values; drop or impute them"
            )
        return self.predicate.evaluate(data).astype(float)

    kind: ClassVar[str | None] = "count"

    def describe(self) -> str:
        return f"the number of records with {self.predicate}"

    @classmethod
    def from_arg(cls, arg: str) -> Count:
        return cls(Predicate.parse(arg))

    def arg(self) -> str:
        return str(self.predicate)

    def scale(self, n: int) -> float:
        return 1.0

    def record_sensitivity(self, data: pd.DataFrame, n: int) -> float | None:
        return 1.0

    def sensitivity_from_range(self, n: int, low: float, high: float) -> float:
        return float(abs(self.scale(n)))  # one record moves the count by at most 1

    def resolution(self, n: int) -> float:
        """Half of one record's step, scale(n)/2: 0.5 for a count, 0.5/n for a proportion."""
        return 0.5 * abs(float(self.scale(n)))

    def value_range(self, n: int) -> tuple[float, float] | None:
        """From no record to all n of them: [0, n] for a count, [0, 1] for a proportion."""
        return (0.0, float(self.scale(n) * n))

    def sql_value(self, sql: Any) -> tuple[str, str, str]:
        col = self.predicate.column
        return (
            f"CASE WHEN {sql.predicate(self.predicate)} THEN 1.0 ELSE 0.0 END",
            sql.missing(col),
            f"column {col!r} has missing values; drop or impute them",
        )


@dataclass(frozen=True)
class Proportion(Count):
    """Share of records satisfying a predicate (query text ``proportion:PRED``), in [0, 1].

    Parameters
    ----------
    predicate : Predicate
        The record predicate whose share is released, e.g. ``Predicate.parse("sex==Female")``.
    """

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"proportion({self.predicate})"

    kind: ClassVar[str | None] = "proportion"

    def describe(self) -> str:
        return f"the share of records with {self.predicate}"

    def scale(self, n: int) -> float:
        return 1.0 / n

    def record_sensitivity(self, data: pd.DataFrame, n: int) -> float | None:
        return 1.0 / n


@dataclass(frozen=True)
class CallableStatistic(Statistic):
    """Any statistic, as a vectorised function of the records' values.

    Parameters
    ----------
    name : str
        Label of the statistic.
    func : callable
        ``func(X)`` with ``X`` of shape ``(..., n, len(columns))`` (a batch of datasets' values of
        ``columns``) returns shape ``(...)``: reduce over axis ``-2``, e.g.
        ``lambda X: np.median(X[..., 0], axis=-1)``.
    columns : sequence of str
        Numeric columns passed to ``func``, in order.
    sensitivity : float, optional
        Per-record (replace-one) sensitivity, needed only by the group-DP baselines.
    """

    name: str
    func: Callable[[np.ndarray], np.ndarray]
    column_names: tuple[str, ...]
    sensitivity: float | None = None

    def __init__(
        self,
        name: str,
        func: Callable[[np.ndarray], np.ndarray],
        columns: Sequence[str],
        sensitivity: float | None = None,
    ) -> None:
        check_text(name, "a statistic's name")
        if not name:
            raise DistPrivacyError("a statistic's name must be a non-empty text")
        check_callable(func, f"statistic {name!r}: func", "callable (a function func(X))")
        if isinstance(columns, str | bytes):
            raise DistPrivacyError(
                f"statistic {name!r}: columns must be a sequence of column names, got the "
                f"string {columns!r}; write columns=[{columns!r}]"
            )
        try:
            cols = tuple(columns)
        except TypeError:
            raise DistPrivacyTypeError(
                f"statistic {name!r}: columns must be a sequence of column names, "
                f"got {shown(columns)}"
            ) from None
        if not cols:
            raise DistPrivacyError(f"statistic {name!r}: give at least one column")
        bad = [c for c in cols if not isinstance(c, str)]
        if bad:
            raise DistPrivacyTypeError(
                f"statistic {name!r}: column names must be strings, got {shown(bad[0])}"
            )
        if sensitivity is not None:
            sensitivity = check_number(sensitivity, f"statistic {name!r}: sensitivity", low=0)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "func", func)
        object.__setattr__(self, "column_names", cols)
        object.__setattr__(self, "sensitivity", sensitivity)

    def columns(self) -> tuple[str, ...]:
        return self.column_names

    def values(self, data: pd.DataFrame) -> np.ndarray:
        """The records' values of ``columns``, shape (N, c)."""
        return np.column_stack(
            [_numeric_column(data, c, f"statistic {self.name!r}") for c in self.column_names]
        )

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Evaluate on a batch ``X`` of shape (..., n, c)."""
        out = np.asarray(self.func(X), dtype=float)
        if out.shape != X.shape[:-2]:
            raise DistPrivacyError(
                f"statistic {self.name!r} returned shape {out.shape} for input {X.shape}; "
                "it must reduce over axis -2 (the records) and return shape X.shape[:-2]"
            )
        return out

    def evaluate(self, data: pd.DataFrame) -> float:
        return float(self.apply(self.values(data)))

    def record_sensitivity(self, data: pd.DataFrame, n: int) -> float | None:
        return self.sensitivity


def parse_statistic(text: str) -> Statistic:
    """Parse ``mean:age``, ``sum:capital_gain``, ``count:sex==Female`` or
    ``proportion:income==>50K``."""
    kind, sep, arg = text.strip().partition(":")
    kind = kind.strip()
    if kind.lower() in _KINDS and kind not in _KINDS:
        raise DistPrivacyError(
            f"unknown statistic kind {kind!r} in {text!r}; kinds are written in lower case: "
            f"{', '.join(_KINDS)} (e.g. {kind.lower()}:{arg.strip()})"
        )
    if not sep or kind not in _KINDS or not arg.strip():
        raise DistPrivacyError(
            f"cannot parse statistic {text!r}; write KIND:ARG with KIND one of "
            f"{', '.join(_KINDS)} (e.g. mean:age, count:sex==Female)"
        )
    return _KINDS[kind].from_arg(arg.strip())


class Query:
    """A vector F of named statistics.

    Parameters
    ----------
    statistics : iterable of Statistic
        The components of F, in order.
    """

    def __init__(self, statistics: Iterable[Statistic]) -> None:
        refusal = (
            "a Query takes a sequence of statistics (to parse text use Query.parse), got "
            f"{shown(statistics)}"
        )
        if isinstance(statistics, str | bytes) or not hasattr(statistics, "__iter__"):
            raise DistPrivacyTypeError(refusal)
        try:
            self.statistics: tuple[Statistic, ...] = tuple(statistics)
        except TypeError:  # iterable in name only (a 0-d array)
            raise DistPrivacyTypeError(refusal) from None
        bad = [s for s in self.statistics if not isinstance(s, Statistic)]
        if bad:
            raise DistPrivacyTypeError(
                f"a Query's components must be statistics (Mean, Count, CallableStatistic, ...), "
                f"got {shown(bad[0])}"
            )
        if not self.statistics:
            raise DistPrivacyError("the query has no statistics; give at least one")
        names = [s.name for s in self.statistics]
        dup = {x for x in names if names.count(x) > 1}
        if dup:
            raise DistPrivacyError(f"statistics repeated in the query: {', '.join(sorted(dup))}")

    @classmethod
    def parse(cls, text: str) -> Query:
        """Parse a comma-separated list, e.g. ``"mean:age,count:sex==Female"``. Spaces around
        an item, its kind and its argument are ignored (``mean: age`` is ``mean:age``); an empty
        item (``mean:age,,sum:x``) is refused; kinds are lower case."""
        check_text(text, "statistics", optional=True,
                   what="text like 'mean:age,count:sex==Female'")  # fmt: skip
        parts = (text or "").strip().split(",")
        if any(p.strip() for p in parts) and any(not p.strip() for p in parts):
            raise DistPrivacyError(
                f"statistics {text!r} have an empty item; write e.g. mean:age,count:sex==Female"
            )
        return cls(parse_statistic(p) for p in parts if p.strip())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.statistics)

    @property
    def dim(self) -> int:
        return len(self.statistics)

    @property
    def is_linear(self) -> bool:
        return all(s.linear for s in self.statistics)

    def validate(self, data: pd.DataFrame) -> None:
        """Check every column exists, is usable and holds no missing values."""
        check_dataframe(data, "data")
        for s in self.statistics:
            if isinstance(s, CallableStatistic):
                s.values(data)
            elif isinstance(s, LinearStatistic):
                s.record_values(data)

    def evaluate(self, data: pd.DataFrame, *, n: int | None = None) -> np.ndarray:
        """F(data): the statistics of one whole dataset — the value a release adds noise to.

        This is the one place F is evaluated on a dataset to release (the command line's
        ``release --target`` and a calibration's release on a DataFrame both call it).

        Parameters
        ----------
        data : DataFrame
            The dataset; every column the statistics read must exist, be usable (numeric for
            means and sums) and hold no missing values.
        n : int, optional
            The dataset size the model (and so the calibration) was made for; when given, a
            ``data`` with another number of records is refused (the guarantee is for size-n
            datasets).

        Returns
        -------
        ndarray, shape (m,)

        Raises
        ------
        DistPrivacyError
            A size other than ``n``, a missing or unusable column, or a statistic that is not
            finite (NaN, or an overflow).
        """
        check_dataframe(data, "the dataset to evaluate")
        if n is not None and len(data) != n:
            raise DistPrivacyError(
                f"the dataset has {len(data)} records but the model is for datasets of n = {n}; "
                "they must agree"
            )
        self.validate(data)
        out = np.array([s.evaluate(data) for s in self.statistics], dtype=float)
        self._check_finite(out[None, :])
        return out

    def _check_finite(self, values: np.ndarray) -> None:
        """Name the first statistic with a NaN/inf value, and on how many of the evaluated
        datasets: NaN (e.g. a mean over an empty group) or an overflow (a column near 1e300)."""
        bad = ~np.isfinite(values)
        if bad.any():
            k = int(np.argmax(bad.any(axis=0)))
            name = self.names[k]
            col = values[:, k]
            why = "overflowed double precision" if np.isinf(col).any() else "is NaN"
            where = (
                f"on {bad[:, k].mean():.1%} of the {len(col)} sampled datasets"
                if len(col) > 1
                else "on this data"
            )
            raise DistPrivacyError(
                f"{name} is not a finite number {where} (it {why}, e.g. a mean over an empty "
                "group or a column near 1e300); change the statistic, the subset size, or "
                "rescale the column"
            )

    def record_matrix(self, data: pd.DataFrame) -> np.ndarray:
        """Per-record values g of the linear statistics, shape (N, m) (linear queries only)."""
        if not self.is_linear:
            raise DistPrivacyError("record_matrix needs a query of linear statistics only")
        return np.column_stack([s.record_values(data) for s in self.statistics])  # type: ignore[attr-defined]

    def scales(self, n: int) -> np.ndarray:
        """Multipliers of the linear statistics for a size-n dataset, shape (m,)."""
        return np.array([s.scale(n) for s in self.statistics], dtype=float)  # type: ignore[attr-defined]

    def evaluate_batch(self, data: pd.DataFrame, index: np.ndarray, chunk: int = 256) -> np.ndarray:
        """F of many datasets at once, each given by a row of an index matrix.

        Parameters
        ----------
        data : DataFrame
            The records.
        index : ndarray of int, shape (R, n)
            Row positions of each dataset's records.
        chunk : int
            Datasets gathered at a time (bounds memory at chunk·n·columns values).

        Returns
        -------
        ndarray, shape (R, m)
        """
        index = np.asarray(index)
        R, n = index.shape
        out = np.empty((R, self.dim))
        lin = [k for k, s in enumerate(self.statistics) if s.linear]
        if lin:
            G = np.column_stack([self.statistics[k].record_values(data) for k in lin])  # type: ignore[attr-defined]
            sc = np.array([self.statistics[k].scale(n) for k in lin])  # type: ignore[attr-defined]
            for a in range(0, R, chunk):
                out[a : a + chunk, lin] = G[index[a : a + chunk]].sum(axis=1) * sc
        for k, s in enumerate(self.statistics):
            if isinstance(s, CallableStatistic):
                V = s.values(data)
                for a in range(0, R, chunk):
                    out[a : a + chunk, k] = s.apply(V[index[a : a + chunk]])
        self._check_finite(out)
        return out

    def record_sensitivities(self, data: pd.DataFrame, n: int) -> np.ndarray | None:
        """Per-record sensitivity of each component (NaN where unknown)."""
        vals = [s.record_sensitivity(data, n) for s in self.statistics]
        return np.array([np.nan if v is None else v for v in vals], dtype=float)


#: The five statistics of the paper's §5.1, with the library's Adult column names.
ADULT_DEFAULT_STATISTICS = (
    "mean:age,mean:education_num,count:marital_status==Never-married,"
    "count:sex==Female,mean:hours_per_week"
)
