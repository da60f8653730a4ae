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

import base64
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError
from distprivacy.spec import Predicate

__all__ = [
    "CanonicalProperty",
    "ReleaseIdentity",
    "canonical_property",
    "column_identities",
    "column_marginals",
    "column_signatures",
    "data_fingerprint",
    "dataset_identity",
    "dataset_sketch",
    "file_fingerprint",
    "query_columns",
    "record_hashes",
    "release_identity",
    "shared_records",
    "sketch_similarity",
    "source_fingerprint",
]


def data_fingerprint(data: pd.DataFrame, columns: Sequence[str]) -> str:
    """``"sha256:<hex>"`` of the named columns of ``data`` (module docstring)."""
    if not isinstance(data, pd.DataFrame):
        raise DistPrivacyError(f"a fingerprint needs a table, got {type(data).__name__}")
    h = hashlib.sha256()
    for c in sorted(set(columns)):
        if c not in data.columns:
            raise DistPrivacyError(f"the data has no column {c!r} to fingerprint")
        col = data[c]
        kind = col.dtype.kind
        # Text is text whether pandas holds it as object or as its string dtype (a DataFrame
        # built in memory and the same table read back from CSV agree).
        label = "text" if kind in "OSU" or isinstance(col.dtype, pd.StringDtype) else col.dtype
        h.update(f"{len(c)}:{c}|{label}|{len(col)}\n".encode())
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


# -- The identity of a dataset for the ledger (issue 20) ---------------------------------------

#: Integers beyond this magnitude are not exactly representable as float64.
_EXACT_INT = 2**53


def _canonical_column(col: pd.Series) -> tuple[str, np.ndarray]:
    """One column as (kind, uint64 codes), canonically: numbers as numbers (a text column whose
    values all read as finite numbers counts as numbers: 38 ≡ 38.0 ≡ "38"; −0.0 ≡ 0.0), text
    stripped as the predicates compare it, a missing value one fixed code."""
    missing = col.isna().to_numpy()
    kind = col.dtype.kind
    nums: np.ndarray | None = None
    if kind in "biuf":
        if kind in "iu" and len(col) and np.abs(col.to_numpy(dtype=float)).max() >= _EXACT_INT:
            return "int", np.ascontiguousarray(col.to_numpy(dtype="<i8")).view("<u8")
        nums = col.to_numpy(dtype=float, na_value=np.nan)
    else:
        text = col.astype(str).str.strip()
        parsed = pd.to_numeric(text.where(~missing), errors="coerce").to_numpy(dtype=float)
        if np.isfinite(parsed[~missing]).all():
            nums = parsed
    if nums is not None:
        x = np.where(nums == 0.0, 0.0, nums)  # −0.0 ≡ 0.0
        x = np.where(missing, np.nan, x)
        codes = np.ascontiguousarray(x, dtype="<f8").view("<u8").copy()
        codes[missing] = np.uint64(0x7FF8_0000_0000_0001)  # one NaN pattern for "missing"
        return "number", codes
    text = col.astype(str).str.strip().to_numpy(dtype=object)
    codes = pd.util.hash_array(text, categorize=True).astype("<u8")
    codes[missing] = np.uint64(0xFFFF_FFFF_FFFF_FFFE)
    return "text", codes


def _ranked(kind: str, codes: np.ndarray) -> tuple[str, np.ndarray]:
    """A column's canonical codes with numbers replaced by their dense ranks (missing values
    last): the same for the column in other units, shifted, or under any increasing
    re-encoding (years or months, dollars or cents). Text is left as it is."""
    if kind == "text":
        return kind, codes
    values = codes.view("<i8") if kind == "int" else codes.view("<f8")
    _, inverse = np.unique(values, return_inverse=True)  # NaN (missing) sorts last
    return f"{kind}-rank", inverse.astype("<u8")


def _canonical_rows(
    data: pd.DataFrame,
    columns: Sequence[str],
    cache: dict[str, tuple[str, np.ndarray]] | None = None,
    ranks: bool = False,
) -> tuple[bytes, np.ndarray]:
    """(header, rows): the named columns (sorted by name, each once) as an (n, k) uint64
    array of canonical codes with its rows sorted (order-free), and a header naming them.
    ``cache`` keeps each column's canonical codes between calls on the same table. With
    ``ranks``, a number column's codes are its values' dense ranks (:func:`_ranked`)."""
    if not isinstance(data, pd.DataFrame):
        raise DistPrivacyError(f"a dataset identity needs a table, got {type(data).__name__}")
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns:
        raise DistPrivacyError("a dataset identity needs a non-empty list of column names")
    names = sorted({str(c) for c in columns})
    missing = [c for c in names if c not in data.columns]
    if missing:
        raise DistPrivacyError(f"the data has no column {missing[0]!r} to identify it by")
    if data.columns.duplicated().any():
        dup = data.columns[data.columns.duplicated()][0]
        raise DistPrivacyError(f"the data has two columns named {dup!r}; rename one")
    kinds, cols = [], []
    for c in names:
        if cache is not None and c in cache:
            kind, codes = cache[c]
        else:
            kind, codes = _canonical_column(data[c])
            if cache is not None:
                cache[c] = (kind, codes)
        if ranks:
            kind, codes = _ranked(kind, codes)
        kinds.append(f"{len(c)}:{c}|{kind}")
        cols.append(codes)
    rows = np.stack(cols, axis=1) if cols else np.zeros((len(data), 0), dtype="<u8")
    if len(rows):
        rows = rows[np.lexsort(rows.T[::-1])]
    header = ("|".join(kinds) + f"|n={len(rows)}\n").encode()
    return header, np.ascontiguousarray(rows, dtype="<u8")


def dataset_identity(
    data: pd.DataFrame, columns: Sequence[str], *, key: bytes | None = None
) -> str:
    """Which dataset a release is about, from the values it reads — not from a file's bytes.

    Canonical (module section above): row order does not matter (the rows' canonical codes are
    sorted), numbers are compared as numbers (38 ≡ 38.0 ≡ "38"), text as the predicates compare
    it (stripped), other columns are ignored and the named ones are taken in name order. With
    ``key`` it is ``"hmac-sha256:<hex>"``, an HMAC-SHA256 under the ledger's key, so that a
    reader without the key cannot test a guessed dataset (or a guessed record) against it;
    without, ``"sha256:<hex>"`` (for in-memory use). About 40 ms for 10⁵ rows of three
    columns on the 2-core machine.

    What it does not resist: a dataset that differs by even one record, or one value, is
    another dataset here (near-duplicates are :func:`dataset_sketch`'s business); text with a
    different spelling ("Female" vs "female") is different text.
    """
    return _identity(*_canonical_rows(data, columns), key)


def _identity(header: bytes, rows: np.ndarray, key: bytes | None) -> str:
    if key is None:
        return "sha256:" + hashlib.sha256(header + rows.tobytes()).hexdigest()
    _check_key(key)
    return "hmac-sha256:" + hmac.new(key, header + rows.tobytes(), hashlib.sha256).hexdigest()


def column_identities(
    data: pd.DataFrame, columns: Sequence[str], property_column: str, *, key: bytes
) -> dict[str, str]:
    """For each column c of ``columns``: the keyed identity of the pair (c,
    ``property_column``) — of ``property_column`` alone for itself — with a number column's
    values replaced by their dense ranks, so that the column in other units (or shifted, or
    under any increasing re-encoding) has the same entry. Two targets whose entries agree for
    every column a release reads hold, record by record with the property, the same values up
    to such a re-encoding in everything the release computes: the ledger treats the second as
    the first dataset however its other columns were changed (issue 20's re-encodings, a
    column of the first table rewritten, a column in cents instead of dollars). Two different
    datasets agree only when each such column orders their records alike with the property
    (for a column of few values: the same table of counts with the property), in which case
    the release says of the second what it said of the first. One canonical sort per column
    (bench/bench_ledger_identity.py times them with :func:`release_identity`)."""
    return _column_identities(data, columns, property_column, key, {})


def _column_identities(
    data: pd.DataFrame,
    columns: Sequence[str],
    property_column: str,
    key: bytes,
    cache: dict[str, tuple[str, np.ndarray]],
) -> dict[str, str]:
    key = _check_key(key)
    out: dict[str, str] = {}
    for c in dict.fromkeys([*columns, property_column]):
        pair = [property_column] if c == property_column else [c, property_column]
        out[str(c)] = _identity(*_canonical_rows(data, pair, cache, ranks=True), key)
    return out


@dataclass(frozen=True)
class ReleaseIdentity:
    """What a ledger keeps of a release's target (:func:`release_identity`)."""

    identity: str
    sketch: tuple[str, ...]
    column_identities: dict[str, str]
    #: Per column: the keyed identity of its values alone, as a multiset (raw values, not
    #: ranks; :func:`column_marginals`).
    column_marginals: dict[str, str] = field(default_factory=dict)
    #: Per column: how many distinct values it holds (as the identities compare them).
    column_distinct: dict[str, int] = field(default_factory=dict)


def column_marginals(data: pd.DataFrame, columns: Sequence[str], *, key: bytes) -> dict[str, str]:
    """For each column of ``columns``: the keyed identity of its values alone, as a multiset
    (row order and which record holds which value do not matter; numbers as numbers, text
    stripped, as :func:`dataset_identity`). A statistic computed from one column at a time —
    a mean, a sum, a count or proportion of one column's predicate — has the same value on two
    targets whose columns it reads have the same multisets, however the values were shuffled
    among the records: the ledger treats such a target as the earlier dataset (a table whose
    ages were handed to other records releases the same mean age)."""
    return _column_marginals(data, columns, _check_key(key), {})


def _column_marginals(
    data: pd.DataFrame,
    columns: Sequence[str],
    key: bytes,
    cache: dict[str, tuple[str, np.ndarray]],
) -> dict[str, str]:
    return {
        str(c): _identity(*_canonical_rows(data, [c], cache), key) for c in dict.fromkeys(columns)
    }


def release_identity(
    data: pd.DataFrame,
    columns: Sequence[str],
    others: Sequence[str],
    property_column: str,
    *,
    key: bytes,
    size: int = 128,
) -> ReleaseIdentity:
    """The keyed :func:`dataset_identity` and :func:`dataset_sketch` over ``columns``, and the
    :func:`column_identities` and :func:`column_marginals` of ``columns`` and ``others``
    together (a ledger passes every column of the target as ``others``), each column made
    canonical once: bench/bench_ledger_identity.py times it against the four computed apart."""
    cache: dict[str, tuple[str, np.ndarray]] = {}
    header, rows = _canonical_rows(data, columns, cache)
    every = [*columns, *others]
    marginals = _column_marginals(data, [*every, property_column], key, cache)
    return ReleaseIdentity(
        identity=_identity(header, rows, _check_key(key)),
        sketch=tuple(_sketch(rows, key, size)),
        column_identities=_column_identities(data, every, property_column, key, cache),
        column_marginals=marginals,
        column_distinct={c: int(np.unique(cache[c][1]).size) for c in marginals},
    )


def _check_key(key: Any) -> bytes:
    if not isinstance(key, bytes | bytearray) or len(key) < 16:
        raise DistPrivacyError("a ledger key is at least 16 bytes")
    return bytes(key)


def _siphash_key(key: bytes, purpose: str) -> str:
    """A 16-character SipHash key (96 bits) derived from ``key`` for ``purpose``."""
    raw = hmac.new(_check_key(key), purpose.encode(), hashlib.sha256).digest()[:12]
    return base64.b64encode(raw).decode("ascii")


def dataset_sketch(
    data: pd.DataFrame, columns: Sequence[str], *, key: bytes, size: int = 128
) -> list[str]:
    """A keyed bottom-k MinHash of the dataset's canonical rows (duplicates count as distinct
    occurrences): the ``size`` smallest keyed row hashes, as hex. Two sketches estimate the
    Jaccard similarity of the two row multisets (:func:`sketch_similarity`), which is how the
    ledger notices a target that is an earlier one with a few records dropped or added. Keyed
    (SipHash under a key derived from the ledger's), so a reader cannot test a guessed record.
    """
    if isinstance(size, bool) or not isinstance(size, int) or not 8 <= size <= 4096:
        raise DistPrivacyError(f"a sketch size is an integer in [8, 4096], got {size!r}")
    return _sketch(_canonical_rows(data, columns)[1], key, size)


def _row_hashes(rows: np.ndarray, key: bytes, purpose: str) -> np.ndarray:
    """Keyed 64-bit hashes of sorted canonical rows, each occurrence of a repeated row
    numbered (so a multiset's hashes are distinct)."""
    if not len(rows):
        return np.zeros(0, dtype=np.uint64)
    frame = pd.DataFrame(rows)
    # Rows are sorted, so equal rows are adjacent: number each occurrence.
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    start = np.maximum.accumulate(np.where(new, np.arange(len(rows)), 0))
    frame["occurrence"] = np.arange(len(rows)) - start
    return pd.util.hash_pandas_object(
        frame, index=False, hash_key=_siphash_key(key, purpose)
    ).to_numpy(dtype=np.uint64)


def record_hashes(data: pd.DataFrame, *, key: bytes) -> np.ndarray:
    """The records of a table as a sorted array of keyed 64-bit hashes (uint64), one per row,
    over every column canonically (:func:`_canonical_column`: row order, number spelling and
    surrounding spaces do not matter; a repeated row counts once per occurrence). Two tables'
    shared records are the common entries of their arrays (:func:`shared_records`) — how a
    ledger measures how many records two registered datasets hold in common. Keyed (SipHash
    under a key derived from the ledger's), so the array does not let a reader test a guessed
    record. Two different records collide with probability about 2⁻⁶⁴ per pair."""
    names = [c for c in data.columns if isinstance(c, str)]
    if len(names) != len(data.columns):
        raise DistPrivacyError("every column of a registered table needs a text name")
    _, rows = _canonical_rows(data, names)
    return np.sort(_row_hashes(rows, _check_key(key), "records"))


def shared_records(a: np.ndarray, b: np.ndarray) -> int:
    """How many records two :func:`record_hashes` arrays hold in common (as multisets)."""
    return int(np.intersect1d(a, b, assume_unique=True).size)


def column_signatures(data: pd.DataFrame) -> dict[str, str]:
    """Per column, an unkeyed digest of its values' dense ranks as a multiset, without its
    name: the same for the column renamed, its rows reordered, or its numbers in other units
    or shifted. Two tables sharing two or more signatures hold, column by column, the same
    values: the same records re-expressed, most likely (a registration warning, never a
    budget decision)."""
    out: dict[str, str] = {}
    for c in data.columns:
        kind, codes = _ranked(*_canonical_column(data[c]))
        body = kind.encode() + b"|" + np.sort(codes).astype("<u8").tobytes()
        out[str(c)] = hashlib.sha256(body).hexdigest()
    return out


def _sketch(rows: np.ndarray, key: bytes, size: int) -> list[str]:
    if not len(rows):
        return []
    h = _row_hashes(rows, key, "sketch")
    k = min(size, len(h))
    low = np.sort(np.partition(h, k - 1)[:k])
    return [f"{int(v):016x}" for v in low]


def sketch_similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """The estimated Jaccard similarity of two datasets' row multisets from their sketches
    (:func:`dataset_sketch`): among the k smallest hashes of the union, the share found in
    both. Its standard error is about √(J(1 − J)/k) (k = 128: ±0.044 at J = 0.5)."""
    for s_ in (a, b):
        if not isinstance(s_, list | tuple) or not all(
            isinstance(x, str) and len(x) == 16 and all(c in "0123456789abcdef" for c in x)
            for x in s_
        ):
            raise DistPrivacyError(
                "sketch_similarity takes two sketches (lists of 16-digit hex strings from "
                f"dataset_sketch), got {type(s_).__name__}"
            )
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    k = min(len(a), len(b))
    union = sorted(sa | sb, key=lambda x: int(x, 16))[:k]
    return sum(1 for x in union if x in sa and x in sb) / k


@dataclass(frozen=True)
class CanonicalProperty:
    """The protected property as the ledger keys it.

    Attributes
    ----------
    key : str
        The same for every spelling of the property on this data: the column and a hash of
        the set of its values the predicate selects (or of the complement, whichever is
        canonical).
    text : str
        A readable form (the predicate as given, or its canonical spelling).
    complemented : bool
        True when the predicate selects the complement of the canonical set: its proportion p
        is 1 − p of the canonical one.
    """

    key: str
    text: str
    complemented: bool


def canonical_property(
    predicate: str | Predicate, column: pd.Series | None = None, *, key: bytes | None = None
) -> CanonicalProperty:
    """One key per property, whatever its spelling (issue 20).

    With the target's ``column``, the key is derived from the set of the column's distinct
    (canonical) values the predicate selects, against the set it leaves out: ``income!=<=50K``
    and ``income==>50K`` select the same records of Adult, ``age>39``, ``age>=40`` and
    ``age>=39.5`` the same integer ages, and a predicate and its complement share the key with
    ``complemented`` telling them apart. With ``key`` the value set is hashed under it (HMAC),
    so the key does not reveal the data. Without a column, the predicate is canonicalised
    syntactically only (``!=`` as the complement of ``==``, ``<`` of ``>=``, ``<=`` of ``>``).
    """
    pred = predicate if isinstance(predicate, Predicate) else Predicate.parse(str(predicate))
    if column is None:
        flip = {"!=": "==", "<": ">=", "<=": ">"}
        op, comp = (flip[pred.op], True) if pred.op in flip else (pred.op, False)
        text = f"{pred.column}{op}{pred.value}"
        return CanonicalProperty(f"{pred.column}:{op}:{pred.value}", text, comp)
    if not isinstance(column, pd.Series):
        raise DistPrivacyError(f"canonical_property takes a column (Series), got {column!r}")
    mask = pred.evaluate(column.to_frame(pred.column))
    kind, codes = _canonical_column(column)
    chosen = np.unique(codes[mask])
    rest = np.unique(codes[~mask])

    def h(values: np.ndarray) -> str:
        body = kind.encode() + b"|" + np.ascontiguousarray(values, dtype="<u8").tobytes()
        if key is None:
            return hashlib.sha256(body).hexdigest()
        return hmac.new(_check_key(key), b"property|" + body, hashlib.sha256).hexdigest()

    hs, hr = h(chosen), h(rest)
    return CanonicalProperty(f"{pred.column}:{min(hs, hr)}", str(pred), hs > hr)
