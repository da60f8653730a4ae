"""Predicates and statistics compiled to SQL: the dialects (DuckDB, Spark SQL), the source's
columns and the compiler (see :mod:`distprivacy.engines._sql` for how the engines use them)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from distprivacy.engines._base import SQLCompileError, UnsupportedStatisticError
from distprivacy.exceptions import DistPrivacyError
from distprivacy.query import NoSQLFormError, Statistic
from distprivacy.spec import Predicate, unknown_column_message

#: Strings pandas' CSV reader takes as missing (``pandas._libs.parsers.STR_NA_VALUES``).
CSV_NA_VALUES: tuple[str, ...] = (
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
)

_SQL_OPS = {"==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_WHITESPACE = "' ' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13)"


class Dialect:
    """The SQL spelling that differs between engines (DuckDB by default)."""

    name = "duckdb"
    #: Expression spreading the records over buckets summed separately (None: one sum).
    bucket: str | None = None

    def ident(self, name: str) -> str:
        """A quoted identifier."""
        return '"' + name.replace('"', '""') + '"'

    @staticmethod
    def string(text: str) -> str:
        """A string literal."""
        return "'" + text.replace("'", "''") + "'"

    def double(self, x: float) -> str:
        """A DOUBLE literal that round-trips exactly (parsed from its shortest repr)."""
        return f"CAST('{float(x)!r}' AS DOUBLE)"

    def try_double(self, expr: str) -> str:
        return f"TRY_CAST({expr} AS DOUBLE)"

    def strip(self, expr: str) -> str:
        return f"trim({expr}, {_WHITESPACE})"

    def lstrip(self, expr: str) -> str:
        return f"ltrim({expr}, {_WHITESPACE})"

    def sum(self, expr: str) -> str:
        """An accurate sum (compensated where the engine has one)."""
        return f"fsum({expr})"

    def is_nan(self, expr: str) -> str:
        return f"isnan({expr})"

    def contains(self, expr: str, literal: str) -> str:
        return f"contains({expr}, {literal})"

    def is_finite(self, expr: str) -> str:
        return f"isfinite({expr})"


class SparkDialect(Dialect):
    """Spark SQL: backquoted identifiers, plain sums, no ``isfinite``."""

    name = "spark"
    bucket = "pmod(monotonically_increasing_id(), 1024)"

    def ident(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    @staticmethod
    def string(text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    def try_double(self, expr: str) -> str:
        return f"try_cast({expr} AS DOUBLE)"

    def strip(self, expr: str) -> str:
        return f"trim(BOTH {_WHITESPACE} FROM {expr})"

    def lstrip(self, expr: str) -> str:
        return f"trim(LEADING {_WHITESPACE} FROM {expr})"

    def sum(self, expr: str) -> str:
        return f"sum({expr})"

    def contains(self, expr: str, literal: str) -> str:
        return f"(instr({expr}, {literal}) > 0)"

    def is_finite(self, expr: str) -> str:
        return f"(NOT isnan({expr}) AND abs({expr}) <> CAST('Infinity' AS DOUBLE))"


@dataclass(frozen=True)
class Column:
    """A column of the source as the SQL sees it.

    Attributes
    ----------
    name : str
        Name after stripping whitespace (what predicates and statistics use).
    raw : str
        Name in the source.
    kind : {"numeric", "string", "boolean", "csv", "other"}
        ``"csv"``: text read from a CSV file, typed later like pandas does.
    type : str
        The engine's type name (for messages).
    """

    name: str
    raw: str
    kind: str
    type: str


class Compiler:
    """Compiles predicates and linear statistics to SQL expressions over one source.

    Parameters
    ----------
    columns : sequence of Column
    dialect : Dialect
    numeric_csv : set of str
        CSV columns known to be numeric (set after the typing scan).
    """

    def __init__(
        self, columns: Sequence[Column], dialect: Dialect, numeric_csv: set[str] | None = None
    ) -> None:
        self.columns = {c.name: c for c in columns}
        self.order = [c.name for c in columns]
        self.d = dialect
        self.numeric_csv = set() if numeric_csv is None else numeric_csv

    def column(self, name: str) -> Column:
        if name not in self.columns:
            raise DistPrivacyError(unknown_column_message(name, self.order))
        return self.columns[name]

    def kind(self, name: str) -> str:
        c = self.column(name)
        if c.kind == "csv":
            return "numeric" if name in self.numeric_csv else "string"
        return c.kind

    def raw(self, name: str) -> str:
        return self.d.ident(self.column(name).raw)

    def missing(self, name: str) -> str:
        """True where the column's value is missing (as pandas reads it)."""
        c, r = self.column(name), self.raw(name)
        if c.kind == "csv":
            na = ", ".join(self.d.string(v) for v in CSV_NA_VALUES)
            return f"({r} IS NULL OR {self.d.lstrip(r)} IN ({na}))"
        if c.kind == "numeric":
            return f"({r} IS NULL OR {self.d.is_nan(f'CAST({r} AS DOUBLE)')})"
        return f"({r} IS NULL)"

    def number(self, name: str) -> str:
        """The column's value as a DOUBLE."""
        c, r = self.column(name), self.raw(name)
        if c.kind == "csv":
            return self.d.try_double(self.d.strip(r))
        return f"CAST({r} AS DOUBLE)"

    def text(self, name: str) -> str:
        """The column's value as stripped text."""
        return self.d.strip(self.raw(name))

    def not_numeric_count(self, name: str) -> str:
        """Count of non-missing values of a CSV column that do not parse as numbers."""
        r = self.raw(name)
        bad = f"NOT {self.missing(name)} AND {self.d.try_double(self.d.strip(r))} IS NULL"
        return f"sum(CASE WHEN {bad} THEN 1 ELSE 0 END)"

    # -- predicates --------------------------------------------------------------------------

    def predicate(self, pred: Predicate) -> str:
        """The predicate as a boolean SQL expression (NULL-free where the column is present)."""
        kind = self.kind(pred.column)
        op = _SQL_OPS[pred.op]
        if kind in ("numeric", "boolean"):
            try:
                rhs = float(pred.value)
            except (TypeError, ValueError):
                raise DistPrivacyError(
                    f"column {pred.column!r} is numeric but the predicate compares it with "
                    f"{pred.value!r}; give a number"
                ) from None
            if math.isnan(rhs):
                raise SQLCompileError(
                    f"the predicate {pred} does not compile to SQL (NaN comparisons differ "
                    "between SQL and NumPy); use `engine='pandas'` or a finite number"
                )
            return f"({self.number(pred.column)} {op} {self.d.double(rhs)})"
        if kind == "string":
            if pred.op not in ("==", "!="):
                raise DistPrivacyError(
                    f"column {pred.column!r} is not numeric; only == and != apply to it"
                )
            value = str(pred.value)
            raw, lit = self.raw(pred.column), self.d.string(value)
            if not value or value != value.strip(" \t\n\v\f\r"):  # never equal: as pandas
                return f"({self.text(pred.column)} {op} {lit})"
            # A stripped value: a raw value equal to it needs no trim, and one that does not
            # contain it cannot trim to it, so the (costly) trim runs on the rest only.
            trimmed = f"({self.d.contains(raw, lit)} AND {self.text(pred.column)} = {lit})"
            eq = f"({raw} = {lit} OR {trimmed})"
            return eq if pred.op == "==" else f"(NOT {eq})"
        raise SQLCompileError(
            f"the predicate {pred} does not compile to SQL: column {pred.column!r} has type "
            f"{self.column(pred.column).type}; compare a numeric or string column, or use "
            "`engine='pandas'`"
        )

    # -- statistics --------------------------------------------------------------------------

    def value(self, stat: Statistic) -> tuple[str, str, str]:
        """(per-record value g, condition making the record unusable, error message): the
        statistic's own SQL form (:meth:`~distprivacy.query.Statistic.sql_value`)."""
        try:
            g, bad, msg = stat.sql_value(self)
        except NoSQLFormError as e:
            raise UnsupportedStatisticError(str(e)) from None
        # Always a DOUBLE: an indicator's ``THEN 1.0 ELSE 0.0`` is a DECIMAL in DuckDB, which
        # Arrow hands to NumPy as Python Decimal objects (30x slower to convert).
        return f"CAST(({g}) AS DOUBLE)", bad, msg
