"""Fingerprints of data: which dataset a plan was fitted on, which dataset a release is about.

:func:`data_fingerprint` is the SHA-256 of the columns used, canonical and independent of
everything else in the table: for each column (sorted by name, each once) its name, dtype and
length, then its values in row order — booleans as bytes, integers as little-endian int64,
other numbers as little-endian float64 (exact, no rounding), anything else as the ``repr`` of
its distinct values (in order of first appearance) followed by each row's index into them
(−1 for a missing value). Reordering rows, renaming a column or changing one value changes
it; columns not named do not. :func:`file_fingerprint` is the SHA-256 of a file's bytes (for data
read by DuckDB or Spark, which is never loaded whole).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError

__all__ = ["data_fingerprint", "file_fingerprint", "query_columns", "source_fingerprint"]


def data_fingerprint(data: pd.DataFrame, columns: Sequence[str]) -> str:
    """``"sha256:<hex>"`` of the named columns of ``data`` (module docstring)."""
    if not isinstance(data, pd.DataFrame):
        raise DistPrivacyError(f"a fingerprint needs a table, got {type(data).__name__}")
    h = hashlib.sha256()
    for c in sorted(set(columns)):
        if c not in data.columns:
            raise DistPrivacyError(f"the data has no column {c!r} to fingerprint")
        col = data[c]
        h.update(f"{len(c)}:{c}|{col.dtype}|{len(col)}\n".encode())
        kind = col.dtype.kind
        if kind == "b":
            h.update(np.ascontiguousarray(col.to_numpy(dtype=np.uint8)).tobytes())
        elif kind in "iu" and not col.isna().any():
            h.update(np.ascontiguousarray(col.to_numpy(dtype="<i8")).tobytes())
        elif kind == "f":
            h.update(np.ascontiguousarray(col.to_numpy(dtype="<f8")).tobytes())
        else:
            # Distinct values (in order of first appearance) by repr, then each row's index
            # into them (−1 for a missing value): exact, and vectorised.
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            h.update("\x1f".join(repr(v) for v in uniques).encode() + b"\x1d")
            h.update(np.ascontiguousarray(codes.astype("<i8")).tobytes())
        h.update(b"\x1e")
    return "sha256:" + h.hexdigest()


def file_fingerprint(path: str | Path) -> str:
    """``"file-sha256:<hex>"``: SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "file-sha256:" + h.hexdigest()


def query_columns(query: Any, spec: Any | None) -> tuple[str, ...]:
    """The columns a query's statistics (and the spec's protected property) read."""
    cols: list[str] = []
    for s in query.statistics:
        cols.extend(s.columns())
    if spec is not None:
        cols.append(spec.predicate.column)
    return tuple(dict.fromkeys(cols))


def source_fingerprint(data: Any, columns: Sequence[str]) -> str | None:
    """The fingerprint of the data a model was fitted on: :func:`data_fingerprint` of the
    columns used for a DataFrame (or the pandas engine's), :func:`file_fingerprint` for a file
    (a path, or the file an engine reads), None when there is neither."""
    if isinstance(data, pd.DataFrame):
        return data_fingerprint(data, columns)
    inner = getattr(data, "data", None)
    if isinstance(inner, pd.DataFrame):
        return data_fingerprint(inner, columns)
    path = data if isinstance(data, str | Path) else getattr(data, "source", None)
    if isinstance(path, str | Path) and Path(path).is_file():
        return file_fingerprint(path)
    return None
