"""Any CSV / TSV / Parquet table: :func:`load_table` (see :mod:`distprivacy.datasets`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from distprivacy._paths import check_input_path
from distprivacy.checks import check_path
from distprivacy.datasets._adult import ADULT_FILES, _describe, _load_dir_strict
from distprivacy.exceptions import DistPrivacyError

PathLike = str | os.PathLike[str]

_CSV_SUFFIXES: dict[str, str] = {".csv": ",", ".csv.gz": ",", ".tsv": "\t", ".tsv.gz": "\t"}
_PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")


def _strip_strings(s: pd.Series) -> pd.Series:
    """Strip whitespace in a string-like column; return ``object`` dtype with NaN for missing."""
    missing = s.isna().to_numpy()
    values = s.astype(object).to_numpy(copy=True)
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        if missing[i]:
            out[i] = np.nan
        elif isinstance(v, str):
            out[i] = v.strip()
        else:
            out[i] = v
    return pd.Series(out, index=s.index, name=s.name, dtype=object)


def _is_string_like(s: pd.Series) -> bool:
    """Whether ``s`` is a string column (string dtype, or object dtype holding strings)."""
    if isinstance(s.dtype, pd.StringDtype):
        return True
    if s.dtype == object:
        return any(isinstance(v, str) for v in s.dropna())
    return False


def load_table(path: PathLike) -> pd.DataFrame:
    """Load a CSV or Parquet table.

    Supported extensions: ``.csv``, ``.csv.gz``, ``.tsv``, ``.tsv.gz`` (tab-separated) and
    ``.parquet`` / ``.pq``. CSV files must have a header line. Whitespace is stripped from column
    names and string values; no row is dropped (missing values stay missing). A directory holding
    ``adult.data`` and ``adult.test`` is loaded with :func:`load_adult`.

    Parameters
    ----------
    path
        The file (or an Adult directory).

    Returns
    -------
    pandas.DataFrame
        The table; string columns are ``object`` columns of Python ``str`` with ``NaN`` for
        missing values.

    Raises
    ------
    DistPrivacyError
        Missing file, unknown extension, unreadable file, duplicate column names, or an empty
        table (one-line message naming the file and the fix).
    """
    p = check_input_path(check_path(path, "path"), "data file", directory_ok=True)
    if p.is_dir():
        if all((p / name).is_file() for name in ADULT_FILES):
            return _load_dir_strict(p, "path")  # what load_adult(p) does
        raise DistPrivacyError(
            f"{p} is a directory without adult.data and adult.test; pass a .csv, .tsv or "
            ".parquet file, or a directory holding adult.data and adult.test"
        )
    if not p.exists():
        raise DistPrivacyError(
            f"data file not found: {p}; pass an existing .csv, .csv.gz, .tsv or .parquet file"
        )
    name = p.name.lower()
    sep = next((sep for suf, sep in _CSV_SUFFIXES.items() if name.endswith(suf)), None)
    is_parquet = name.endswith(_PARQUET_SUFFIXES)
    if sep is None and not is_parquet:
        raise DistPrivacyError(
            f"unknown file type: {p}; use a .csv, .csv.gz, .tsv, .tsv.gz, .parquet or .pq file"
        )
    try:
        if is_parquet:
            df = pd.read_parquet(p)
        else:
            df = pd.read_csv(p, sep=sep, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise DistPrivacyError(
            f"{p} is empty; pass a file with a header line and at least one row"
        ) from None
    except UnicodeDecodeError as exc:
        raise DistPrivacyError(
            f"cannot read {p}: not UTF-8 text ({_describe(exc)}); save it as UTF-8"
        ) from exc
    except Exception as exc:
        kind = "Parquet" if is_parquet else "CSV"
        raise DistPrivacyError(
            f"cannot read {p} as {kind}: {_describe(exc)}; check that it is a valid {kind} file"
        ) from exc

    df.columns = [c.strip() if isinstance(c, str) else c for c in df.columns]
    # pandas renames a repeated CSV header (age, age -> age, age.1): read the header line as
    # written and compare its names
    header = (None if is_parquet else _csv_header(p, sep)) or list(df.columns)
    names = pd.Index([c for c in header if str(c)])  # blank headers become "Unnamed: k"
    dupes = sorted({str(c) for c in names[names.duplicated()]})
    if dupes:
        raise DistPrivacyError(
            f"{p} has duplicate column names after stripping whitespace: {', '.join(dupes)}; "
            "rename them"
        )
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise DistPrivacyError(f"{p} has no rows; pass a table with at least one row of data")
    for col in df.columns:
        if _is_string_like(df[col]):
            df[col] = _strip_strings(df[col])
    return df


def _csv_header(path: Path, sep: str) -> list[str]:
    """The names on the header line of a CSV/TSV file as written (stripped), repeats kept."""
    try:
        first = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False)
    except Exception:  # the full read succeeded; fall back on its (renamed) columns
        return []
    return [str(c).strip() for c in first.iloc[0]] if len(first) else []
