"""Column queries F(X) of the Attribute-Private Markov Quilt Mechanism and their column
sensitivities Δ_S F (Zhang, Ohrimenko & Cummings, FAccT 2022, §5.1): counts, sums and means.

Part of :mod:`distprivacy.attribute.markov_quilt` (every name is importable from there).
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError
from distprivacy.spec import Predicate, check_column


class ColumnQuery(ABC):
    """A real-valued query F(X) over some attributes' columns, with its column sensitivity."""

    name: str

    @property
    @abstractmethod
    def attributes(self) -> tuple[str, ...]:
        """A: the attributes (columns) F reads."""

    @abstractmethod
    def evaluate(self, data: pd.DataFrame) -> float:
        """F(X) of a dataset."""

    @abstractmethod
    def column_sensitivity(self, columns: Iterable[str], n_records: int) -> float:
        """Δ_S F: the largest |F(X) − F(X')| over size-n datasets identical outside columns S."""


@dataclass(frozen=True)
class CountQuery(ColumnQuery):
    """F(X) = Σ_j 1[every condition holds for record j] (the school example's counts).

    Δ_S F = n when S meets the conditions' columns, else 0: changing one queried column can turn
    every record from satisfying the conjunction to not (each condition is assumed satisfiable and
    falsifiable on its column's domain, true for thresholds on numeric columns).
    """

    conditions: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        if not self.conditions:
            raise DistPrivacyError("a count query needs at least one condition, e.g. height>66")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "count:" + "&".join(str(c) for c in self.conditions)

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.column for c in self.conditions))

    def evaluate(self, data: pd.DataFrame) -> float:
        mask = np.ones(len(data), dtype=bool)
        for c in self.conditions:
            mask &= c.evaluate(data)
        return float(mask.sum())

    def column_sensitivity(self, columns: Iterable[str], n_records: int) -> float:
        return float(n_records) if set(columns) & set(self.attributes) else 0.0


@dataclass(frozen=True)
class SumQuery(ColumnQuery):
    """F(X) = Σ_j X_col^j (or the mean) of a column whose values lie in [lower, upper].

    Δ_S F = n·(upper − lower) (sum) or upper − lower (mean) when col ∈ S, else 0. Values outside
    the declared range are an error at release (never clipped).
    """

    column: str
    lower: float
    upper: float
    mean: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise DistPrivacyError(f"the range of {self.column!r} must be finite")
        if self.upper <= self.lower:
            raise DistPrivacyError(
                f"the range of {self.column!r} is empty: [{self.lower}, {self.upper}]; "
                "write [LOW,HIGH] with LOW < HIGH"
            )

    @property
    def name(self) -> str:  # type: ignore[override]
        kind = "mean" if self.mean else "sum"
        return f"{kind}:{self.column}[{self.lower:g},{self.upper:g}]"

    @property
    def attributes(self) -> tuple[str, ...]:
        return (self.column,)

    def evaluate(self, data: pd.DataFrame) -> float:
        check_column(data, self.column)
        col = data[self.column]
        if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            raise DistPrivacyError(f"{self.name} needs a numeric column {self.column!r}")
        x = col.to_numpy(dtype=float)
        bad = ~np.isfinite(x) | (x < self.lower) | (x > self.upper)
        if bad.any():
            raise DistPrivacyError(
                f"{int(bad.sum())} values of {self.column!r} are missing or outside the declared "
                f"range [{self.lower:g}, {self.upper:g}]; widen the range (never clipped)"
            )
        if len(x) == 0:
            raise DistPrivacyError(f"cannot compute {self.name} of an empty dataset")
        return float(x.mean() if self.mean else x.sum())

    def column_sensitivity(self, columns: Iterable[str], n_records: int) -> float:
        if self.column not in set(columns):
            return 0.0
        width = self.upper - self.lower
        return float(width if self.mean else n_records * width)


_SUM_RE = re.compile(
    r"^(sum|mean):\s*([^\[\]]+?)\s*\[\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\]\s*$"
)


def parse_column_query(text: str) -> ColumnQuery:
    """``count:height>66&sat>1300``, ``sum:weight[80,300]`` or ``mean:weight[80,300]``."""
    text = (text or "").strip()
    if text.startswith("count:"):
        parts = [p for p in text[len("count:") :].split("&")]
        if not all(p.strip() for p in parts):
            raise DistPrivacyError(
                f"empty condition in {text!r}; write count:COND&COND, e.g. count:height>66&sat>1300"
            )
        return CountQuery(tuple(Predicate.parse(p) for p in parts))
    m = _SUM_RE.match(text)
    if m:
        try:
            lo, hi = float(m.group(3)), float(m.group(4))
        except ValueError:
            raise DistPrivacyError(f"cannot read the range in {text!r}") from None
        return SumQuery(m.group(2), lo, hi, mean=m.group(1) == "mean")
    raise DistPrivacyError(
        f"cannot parse query {text!r}; write count:COND&COND (e.g. count:height>66&sat>1300), "
        "sum:COL[LOW,HIGH] or mean:COL[LOW,HIGH]"
    )
