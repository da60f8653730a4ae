"""The Adult files: their columns, SHA-256 sums and parsing, and loading them from a directory
the user names (see :mod:`distprivacy.datasets`)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd

from distprivacy.exceptions import DataUnavailableError

#: Readable names of the 15 Adult columns, in file order.
ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
)

#: Adult columns returned as ``int64``; every other column holds Python strings.
ADULT_INTEGER_COLUMNS: tuple[str, ...] = (
    "age",
    "fnlwgt",
    "education_num",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
)

#: SHA-256 sums of the canonical UCI files; every file read from any source is checked.
ADULT_SHA256: dict[str, str] = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}
ADULT_FILES: tuple[str, ...] = tuple(ADULT_SHA256)


def _one_line(text: object) -> str:
    """Collapse ``text`` to a single line (error messages must be one line)."""
    return " ".join(str(text).split())


def _describe(exc: BaseException) -> str:
    """A short one-line description of an exception."""
    msg = _one_line(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _ChecksumError(DataUnavailableError):
    """A file's SHA-256 differs from the embedded sum."""


def _read_verified(path: Path) -> bytes:
    """Read ``path`` (named adult.data or adult.test) and check its SHA-256.

    Raises
    ------
    OSError
        The file cannot be read.
    _ChecksumError
        Its SHA-256 differs from the embedded sum.
    """
    data = path.read_bytes()
    expected = ADULT_SHA256[path.name]
    actual = _sha256(data)
    if actual != expected:
        raise _ChecksumError(
            f"{path}: SHA-256 mismatch (expected {expected}, got {actual}); "
            "replace it with the canonical UCI file"
        )
    return data


# --------------------------------------------------------------------------------------------
# Parsing the Adult files
# --------------------------------------------------------------------------------------------


def _parse_adult_file(raw: bytes, *, skip_first_line: bool) -> pd.DataFrame:
    """Parse one Adult file's bytes; drop rows with a missing value; fix dtypes."""
    df = pd.read_csv(
        io.BytesIO(raw),
        header=None,
        names=list(ADULT_COLUMNS),
        dtype=str,
        keep_default_na=False,
        skipinitialspace=True,
        skiprows=1 if skip_first_line else 0,
        skip_blank_lines=True,
        encoding="utf-8",
    )
    for col in ADULT_COLUMNS:
        df[col] = df[col].str.strip()
    missing = df.isna().any(axis=1) | df.isin(["?", ""]).any(axis=1)
    df = df.loc[~missing].copy()
    df["income"] = df["income"].str.rstrip(".")
    for col in ADULT_COLUMNS:
        if col in ADULT_INTEGER_COLUMNS:
            df[col] = df[col].astype(np.int64)
        else:
            # Plain Python str in an object column, whatever pandas' default string dtype.
            df[col] = pd.Series(df[col].to_numpy(dtype=object), index=df.index, dtype=object)
    return df


def _parse_adult(data: bytes, test: bytes) -> pd.DataFrame:
    """The cleaned Adult data frame from the bytes of adult.data and adult.test."""
    parts = [
        _parse_adult_file(data, skip_first_line=False),
        _parse_adult_file(test, skip_first_line=True),
    ]
    df = pd.concat(parts, ignore_index=True)
    labels = set(df["income"].unique())
    if not labels <= {">50K", "<=50K"}:  # pragma: no cover - excluded by the checksums
        raise DataUnavailableError(f"unexpected income labels in the Adult data: {sorted(labels)}")
    return df


def _load_dir_strict(directory: Path, origin: str) -> pd.DataFrame:
    """Load the Adult data from a user-named directory; any problem is an error.

    Parameters
    ----------
    directory
        Directory that must hold adult.data and adult.test.
    origin
        How the directory was named (for messages), e.g. ``"path"`` or ``"DISTPRIVACY_DATA"``.
    """
    if not directory.is_dir():
        raise DataUnavailableError(
            f"{origin} {directory} is not a directory; it must be a directory holding "
            "adult.data and adult.test"
        )
    blobs: dict[str, bytes] = {}
    for name in ADULT_FILES:
        file = directory / name
        if not file.is_file():
            raise DataUnavailableError(
                f"{origin} {directory} holds no {name}; it must be a directory holding "
                "adult.data and adult.test (the canonical UCI files)"
            )
        try:
            blobs[name] = _read_verified(file)
        except OSError as exc:
            raise DataUnavailableError(
                f"cannot read {file} ({origin}): {_describe(exc)}; check its permissions"
            ) from exc
    return _parse_adult(blobs["adult.data"], blobs["adult.test"])
