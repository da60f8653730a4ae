"""Reading the user's files (models, problems, networks, pair CSVs): one place for the checks
and their one-line errors.

Every file a user writes is validated strictly at the boundary, before anything downstream sees
it: its size and nesting depth are bounded *before* it is parsed, and what it holds is checked
against a small typed schema (:class:`Table`, :class:`ListOf`, :class:`Array`, …) that

* accepts an integer only if it is an integer (``true`` is not 1), a number only if it is finite,
  a boolean only if it is ``true`` or ``false`` (``"no"`` is not false), a list of names only if
  it is a list (``"xy"`` is not two names), a pair only if it has two entries;
* refuses unknown keys, naming the known ones (a typo is never ignored), and names missing ones;
* checks the shapes of matrices (ragged rows, wrong lengths) and binds named dimensions across
  the file (every θ's mean has the length of ``statistics``);
* raises :class:`InvalidFileError` (a :class:`~distprivacy.exceptions.DistPrivacyError`) with one
  line naming the file, the key path (``thetas[1].covariance[0]``) and the fix.

The command line prints that line as ``error: …`` and exits with status 2.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.files._npz import MAX_NPZ_BYTES, read_npz
from distprivacy.files._npz import MAX_NPZ_MEMBERS as MAX_NPZ_MEMBERS
from distprivacy.files._schema import (
    AnyOf,
    Array,
    Bool,
    Custom,
    Field,
    Int,
    Label,
    ListOf,
    MapOf,
    Number,
    Pair,
    Schema,
    Str,
    Table,
    validate,
)
from distprivacy.files._values import MAX_DEPTH, InvalidFileError, show
from distprivacy.files._values import _Ctx as _Ctx  # the context a Custom node's function gets

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NPZ_BYTES",
    "AnyOf",
    "Array",
    "Bool",
    "Custom",
    "Field",
    "Int",
    "InvalidFileError",
    "Label",
    "ListOf",
    "MapOf",
    "Number",
    "Pair",
    "Schema",
    "Str",
    "Table",
    "nesting_depth",
    "read_mapping_file",
    "read_npz",
    "read_numeric_csv",
    "show",
    "validate",
]

# The error and the words of its messages are in ``_values``, the schema nodes in ``_schema``,
# the ``.npz`` reader in ``_npz``; the readers of JSON / TOML / CSV files below read
# ``MAX_FILE_BYTES`` from this module (tests lower it).

#: Largest user file read (bytes); larger files are refused before they are read.
MAX_FILE_BYTES: int = 64 * 2**20

# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

_JSON_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_TOML_SKIP = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
)


def nesting_depth(text: str, *, toml: bool = False) -> int:
    """The deepest nesting of ``[`` / ``{`` in a JSON or TOML text, outside strings and
    comments (linear time, no recursion).

    Parameters
    ----------
    text : str
        The file's text.
    toml : bool, default False
        Whether it is TOML (its comments and strings differ from JSON's).

    Returns
    -------
    int
        The deepest nesting level (0 for a scalar).
    """
    bare = (_TOML_SKIP if toml else _JSON_STRINGS).sub("", text)
    codes = np.frombuffer(bare.encode("utf-8", "replace"), dtype=np.uint8)
    opening = (codes == ord("[")) | (codes == ord("{"))
    closing = (codes == ord("]")) | (codes == ord("}"))
    where = np.flatnonzero(opening | closing)
    if where.size == 0:
        return 0
    step = np.where(opening[where], 1, -1).astype(np.int32)
    return int(np.cumsum(step).max())


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(k)
        out[k] = v
    return out


class _DuplicateKeyError(Exception):
    pass


def read_mapping_file(path: str | Path, what: str, schema: Schema | None = None) -> dict[str, Any]:
    """The object / table held by a ``.json`` or ``.toml`` file, checked against ``schema``.

    Parameters
    ----------
    path : str or Path
        The file; its suffix chooses the parser.
    what : str
        What the file is, for the error messages (e.g. ``"model file"``).
    schema : Schema, optional
        The expected content (usually a :class:`Table`); the returned mapping then holds the
        converted values (floats, tuples, arrays). Without it, any object is returned as parsed.

    Returns
    -------
    dict
        The file's top-level object, converted by ``schema`` when given.

    Raises
    ------
    InvalidFileError
        The file is missing, has another suffix, is larger than :data:`MAX_FILE_BYTES`, is
        nested deeper than :data:`MAX_DEPTH`, repeats a key, does not parse, does not hold an
        object, or does not match the schema.
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidFileError(f"{what} {str(p)!r} not found; give a JSON or TOML file")
    suffix = p.suffix.lower()
    src = f"{what} {p.name!r}"
    if suffix not in (".json", ".toml"):
        raise InvalidFileError(f"{src} must end in .json or .toml")
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InvalidFileError(
            f"{src} has {size / 2**20:.1f} MiB; at most {MAX_FILE_BYTES // 2**20} MiB are read "
            "(give fewer samples)"
        )
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidFileError(f"{src} is not UTF-8 text ({e.reason}); save it as UTF-8") from None
    except OSError as e:
        raise InvalidFileError(f"cannot read {src}: {e.strerror or e}") from None
    depth = nesting_depth(text, toml=suffix == ".toml")
    if depth > MAX_DEPTH:
        raise InvalidFileError(
            f"{src} is nested {depth} levels deep; at most {MAX_DEPTH} are accepted"
        )
    try:
        if suffix == ".toml":
            raw = tomllib.loads(text)
        else:
            raw = json.loads(text, object_pairs_hook=_no_duplicates)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        msg = str(e).splitlines()[0]
        raise InvalidFileError(f"{src} is not valid: {msg}") from None
    except _DuplicateKeyError as e:
        raise InvalidFileError(
            f"{src} is not valid: the key {e.args[0]!r} appears twice in one object; keep one"
        ) from None
    except (RecursionError, MemoryError):
        raise InvalidFileError(
            f"{src} is nested too deeply; at most {MAX_DEPTH} levels are accepted"
        ) from None
    except ValueError as e:  # e.g. an integer with more than 4300 digits
        raise InvalidFileError(f"{src} is not valid: {str(e).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise InvalidFileError(f"{src} must hold an object / table, got {show(raw)}")
    if schema is None:
        return raw
    return validate(raw, schema, src)


def read_numeric_csv(
    path: str | Path,
    columns: Sequence[str],
    what: str,
    *,
    rows: int | None = None,
    minimum: float | None = None,
    fix: str = "",
    rows_fix: str = "give one row per entry",
    rows_reason: str = "",
) -> dict[str, np.ndarray]:
    """Columns of numbers from a CSV file, checked: present, one header each, the expected
    number of rows, every cell a finite number (≥ ``minimum``).

    Parameters
    ----------
    path : str or Path
    columns : sequence of str
        The columns to return (others are allowed and ignored).
    what : str
        What the file is, for the messages (``"pair file"``).
    rows : int, optional
        The number of data rows required.
    minimum : float, optional
        The least value allowed in a cell.
    fix : str
        How to write a correct file (appended to a missing-column message).
    rows_fix : str
        The fix appended to a wrong-row-count message.
    rows_reason : str
        Why ``rows`` rows are needed (default "N are needed").

    Returns
    -------
    dict of column name → float ndarray

    Raises
    ------
    InvalidFileError
    """
    import pandas as pd

    p = Path(path)
    src = f"{what} {p.name!r}"
    if not p.is_file():
        raise InvalidFileError(f"{what} {str(p)!r} not found; give a CSV file")
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InvalidFileError(
            f"{src} has {size / 2**20:.1f} MiB; at most {MAX_FILE_BYTES // 2**20} MiB are read"
        )
    try:
        frame = pd.read_csv(p, dtype=str, keep_default_na=False, header=None)
    except pd.errors.EmptyDataError:
        raise InvalidFileError(f"{src} is empty; give a header line and the rows") from None
    except UnicodeDecodeError as e:
        raise InvalidFileError(f"{src} is not UTF-8 text ({e.reason}); save it as UTF-8") from None
    except (OSError, ValueError, pd.errors.ParserError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InvalidFileError(f"cannot read {src} as CSV: {msg}") from None
    header = [str(h).strip() for h in frame.iloc[0]]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InvalidFileError(f"{src} repeats the column(s) {', '.join(dupes)}; keep one of each")
    missing = [c for c in columns if c not in header]
    if missing:
        raise InvalidFileError(
            f"{src} lacks column(s) {', '.join(missing)}" + (f"; {fix}" if fix else "")
        )
    body = frame.iloc[1:]
    if rows is not None and len(body) != rows:
        why = rows_reason or f"{rows} are needed"
        raise InvalidFileError(f"{src} has {len(body)} rows but {why}; {rows_fix}")
    out: dict[str, np.ndarray] = {}
    for c in columns:
        cells = body.iloc[:, header.index(c)].str.strip()
        values = pd.to_numeric(cells, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values)
        if minimum is not None:
            bad |= values < minimum
        if bad.any():
            k = int(np.argmax(bad))
            need = "a finite number" if minimum is None else f"a finite number ≥ {minimum:g}"
            raise InvalidFileError(
                f"{src}: column {c}, row {k + 1} is {cells.iloc[k]!r}; every cell must be {need}"
            )
        out[c] = values
    return out
