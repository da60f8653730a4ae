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
import math
import re
import tomllib
import zipfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError

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

#: Largest user file read (bytes); larger files are refused before they are read.
MAX_FILE_BYTES: int = 64 * 2**20

#: Deepest nesting of lists / objects accepted in a JSON or TOML file (checked before parsing).
MAX_DEPTH: int = 64


class InvalidFileError(DistPrivacyError):
    """A user's file is missing, too large, does not parse, or does not match its schema."""


# ---------------------------------------------------------------------------------------------
# Describing values in messages
# ---------------------------------------------------------------------------------------------


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show(value: Any) -> str:
    """A short, one-line description of a parsed value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"the integer {_short(str(value), 24)}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {_short(value)!r}"
    if isinstance(value, Mapping):
        keys = ", ".join(_short(str(k), 20) for k in list(value)[:4])
        more = ", …" if len(value) > 4 else ""
        return f"an object with keys {{{keys}{more}}}" if value else "an empty object"
    if isinstance(value, list | tuple):
        n = len(value)
        return "an empty list" if n == 0 else f"a list of {n} item{'s' if n != 1 else ''}"
    return f"a {type(value).__name__}"


def _and(names: Sequence[str]) -> str:
    q = [f"'{n}'" for n in names]
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " and " + q[-1]


def _is_number(value: Any) -> bool:
    """An int or float (Python or NumPy), not a boolean."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


def _list_depth(value: Any) -> int:
    """How deeply lists nest along the first entries (``[[1, 2]]`` → 2, ``3`` → 0)."""
    depth = 0
    while isinstance(value, list | tuple | np.ndarray) and depth <= MAX_DEPTH:
        depth += 1
        if len(value) == 0:
            break
        value = value[0]
    return depth


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool | np.bool_):
        return "bool"
    if _is_number(value):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, Mapping):
        return "dict"
    if isinstance(value, list | tuple | np.ndarray):
        return "list"
    return "other"


# ---------------------------------------------------------------------------------------------
# The schema
# ---------------------------------------------------------------------------------------------


@dataclass
class _Ctx:
    """Where a value comes from, and the named dimensions bound so far."""

    source: str
    dims: dict[str, tuple[int, str]] = field(default_factory=dict)

    last_depth: int = 0

    def fail(self, path: str, message: str, fix: str = "") -> InvalidFileError:
        self.last_depth = path.count(".") + path.count("[")
        where = f"{self.source}: {path}" if path else self.source
        text = f"{where} {message}"
        if fix:
            text += f"; {fix}"
        return InvalidFileError(" ".join(text.split()))

    def bind(self, dim: str, size: int, path: str, what: str) -> None:
        """Bind the named dimension ``dim`` to ``size`` (first use) or check it."""
        if dim not in self.dims:
            self.dims[dim] = (size, path)
            return
        want, where = self.dims[dim]
        if size != want:
            raise self.fail(
                path,
                f"has {size} {what}; expected {want}, as in {where}",
                "make the sizes agree",
            )


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    key = str(key)
    simple = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) is not None
    if not simple:
        key = json.dumps(key, ensure_ascii=False)
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Schema(ABC):
    """A node of a schema: :meth:`check` returns the value, converted, or raises
    :class:`InvalidFileError`."""

    #: The value kinds (``bool``, ``number``, ``str``, ``dict``, ``list``) the node accepts.
    kinds: frozenset[str] = frozenset()

    @abstractmethod
    def describe(self) -> str:
        """What is expected, for messages ("an integer ≥ 1")."""

    @abstractmethod
    def check(self, value: Any, path: str, ctx: _Ctx) -> Any:
        """The value, converted, or :class:`InvalidFileError`."""

    def _wrong(self, value: Any, path: str, ctx: _Ctx, fix: str = "") -> InvalidFileError:
        return ctx.fail(path, f"must be {self.describe()}, got {show(value)}", fix)


class Int(Schema):
    """An integer (``true``/``false`` are not integers), optionally bounded."""

    kinds = frozenset({"number"})

    def __init__(self, minimum: int | None = None, maximum: int | None = None) -> None:
        self.minimum, self.maximum = minimum, maximum

    def describe(self) -> str:
        if self.minimum is not None and self.minimum == self.maximum:
            return f"the integer {self.minimum}"
        if self.minimum is not None and self.maximum is not None:
            return f"an integer from {self.minimum} to {self.maximum}"
        if self.minimum == 1:
            return "a positive integer"
        if self.minimum is not None:
            return f"an integer ≥ {self.minimum}"
        return "an integer"

    def check(self, value: Any, path: str, ctx: _Ctx) -> int:
        if isinstance(value, np.integer):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(value, path, ctx)
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise self._wrong(value, path, ctx)
        return value


class Number(Schema):
    """A finite number (an integer or a float; never a boolean or a string), optionally
    bounded; returned as a float (an integer stays one with ``keep_int``)."""

    kinds = frozenset({"number"})

    def __init__(
        self,
        minimum: float | None = None,
        maximum: float | None = None,
        *,
        positive: bool = False,
        finite: bool = True,
        keep_int: bool = False,
    ) -> None:
        self.minimum, self.maximum, self.positive, self.finite = minimum, maximum, positive, finite
        self.keep_int = keep_int

    def describe(self) -> str:
        base = "a finite number" if self.finite else "a number"
        if self.positive:
            return "a positive number"
        if self.minimum is not None and self.maximum is not None:
            return f"{base} in [{self.minimum:g}, {self.maximum:g}]"
        if self.minimum is not None:
            return f"{base} ≥ {self.minimum:g}"
        return base

    def check(self, value: Any, path: str, ctx: _Ctx) -> float:
        if not _is_number(value):
            raise self._wrong(value, path, ctx)
        try:
            x = float(value)
        except OverflowError:
            raise self._wrong(value, path, ctx) from None
        if math.isnan(x) or (self.finite and math.isinf(x)):
            raise self._wrong(value, path, ctx)
        if (
            (self.positive and not x > 0)
            or (self.minimum is not None and x < self.minimum)
            or (self.maximum is not None and x > self.maximum)
        ):
            raise self._wrong(value, path, ctx)
        if self.keep_int and isinstance(value, int | np.integer):
            return int(value)
        return x


class Str(Schema):
    """A string (non-empty after stripping unless ``allow_empty``), optionally one of
    ``choices``."""

    kinds = frozenset({"str"})

    def __init__(self, choices: Sequence[str] | None = None, *, allow_empty: bool = False) -> None:
        self.choices = tuple(choices) if choices is not None else None
        self.allow_empty = allow_empty

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return "a string" if self.allow_empty else "a non-empty string"

    def check(self, value: Any, path: str, ctx: _Ctx) -> str:
        if not isinstance(value, str):
            raise self._wrong(value, path, ctx)
        if not self.allow_empty and not value.strip():
            raise self._wrong(value, path, ctx)
        if self.choices is not None and value not in self.choices:
            raise self._wrong(value, path, ctx)
        return value


class Label(Schema):
    """A name written as a string or a finite number (``0.45``); returned as a string."""

    kinds = frozenset({"str", "number"})

    def describe(self) -> str:
        return "a label (a string or a number)"

    def check(self, value: Any, path: str, ctx: _Ctx) -> str:
        if isinstance(value, str) and value.strip():
            return value
        if _is_number(value):
            if isinstance(value, float | np.floating):
                return str(Number().check(float(value), path, ctx))
            return str(int(value))
        raise self._wrong(value, path, ctx)


class Bool(Schema):
    """``true`` or ``false`` (not ``"no"``, not 0)."""

    kinds = frozenset({"bool"})

    def describe(self) -> str:
        return "true or false"

    def check(self, value: Any, path: str, ctx: _Ctx) -> bool:
        if not isinstance(value, bool):
            raise self._wrong(value, path, ctx)
        return value


class ListOf(Schema):
    """A list (not a string) of items of one schema, of bounded length; ``length`` may name a
    dimension bound across the file."""

    kinds = frozenset({"list"})

    def __init__(
        self,
        item: Schema,
        *,
        min_len: int = 0,
        max_len: int | None = None,
        length: str | None = None,
        unique: bool = False,
        noun: str = "entries",
        example: str = "",
    ) -> None:
        self.item, self.min_len, self.max_len = item, min_len, max_len
        self.length, self.unique, self.noun, self.example = length, unique, noun, example

    def describe(self) -> str:
        what = f"a list of {self.noun}"
        if self.min_len > 1:
            what = f"a list of at least {self.min_len} {self.noun}"
        elif self.min_len == 1:
            what = f"a non-empty list of {self.noun}"
        return f"{what} such as {self.example}" if self.example else what

    def check(self, value: Any, path: str, ctx: _Ctx) -> list[Any]:
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, list | tuple):
            raise self._wrong(value, path, ctx)
        if not value and self.min_len:
            raise ctx.fail(path, "is empty", f"give {self.describe()}")
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            bound = f"at most {self.max_len}" if self.max_len is not None else ""
            if len(value) < self.min_len:
                bound = f"at least {self.min_len}"
            raise ctx.fail(path, f"has {len(value)} {self.noun}; give {bound}")
        if self.length is not None:
            ctx.bind(self.length, len(value), path or "the file", self.noun)
        out = [self.item.check(v, _join(path, k), ctx) for k, v in enumerate(value)]
        if self.unique:
            seen: set[Any] = set()
            for k, v in enumerate(out):
                key = json.dumps(v, sort_keys=True, default=str)
                if key in seen:
                    raise ctx.fail(_join(path, k), f"repeats {show(value[k])}", "list it once")
                seen.add(key)
        return out


class Pair(Schema):
    """Exactly two items of one schema, as a list (``["a", "b"]``); returned as a tuple."""

    kinds = frozenset({"list"})

    def __init__(self, item: Schema, example: str = '["a", "b"]') -> None:
        self.item, self.example = item, example

    def describe(self) -> str:
        return f"a pair {self.example}"

    def check(self, value: Any, path: str, ctx: _Ctx) -> tuple[Any, Any]:
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise self._wrong(value, path, ctx)
        return tuple(self.item.check(v, _join(path, k), ctx) for k, v in enumerate(value))


class Array(Schema):
    """A (nested) list of finite numbers of a given shape, returned as a float ndarray.

    ``shape`` has one entry per axis: an int (that many), a str (a named dimension, bound at its
    first use and checked at every other), or None (any positive number). ``shape=None``
    accepts any number of axes (at most :data:`MAX_DEPTH`), rectangular.
    """

    kinds = frozenset({"list"})

    def __init__(
        self,
        shape: Sequence[int | str | None] | None,
        *,
        noun: str = "",
        minimum: float | None = None,
        axis_nouns: Sequence[str] | None = None,
    ) -> None:
        self.shape = None if shape is None else tuple(shape)
        self.noun = noun
        self.minimum = minimum
        self.axis_nouns = tuple(axis_nouns) if axis_nouns else None
        self._entry = Number(minimum)

    @property
    def ndim(self) -> int | None:
        """The number of axes (None: any)."""
        return None if self.shape is None else len(self.shape)

    def describe(self) -> str:
        if self.noun:
            return self.noun
        if self.shape is None:
            return "a nested list of finite numbers"
        nd = len(self.shape)
        if nd == 1:
            return "a list of finite numbers"
        if nd == 2:
            return "a matrix (a list of rows of finite numbers)"
        return f"a {nd}-level nested list of finite numbers"

    def _axis_noun(self, axis: int) -> str:
        if self.axis_nouns:
            return self.axis_nouns[axis]
        return "entries" if axis == (len(self.shape or ()) - 1) else "rows"

    def check(self, value: Any, path: str, ctx: _Ctx) -> np.ndarray:
        if isinstance(value, np.ndarray):
            value = value.tolist()  # Python callers; checked like a parsed file
        if not isinstance(value, list | tuple):
            raise self._wrong(value, path, ctx)
        fast = self._fast(value, path, ctx)
        if fast is not None:
            return fast
        shape: list[int] = []
        self._walk(value, path, ctx, 0, shape)  # raises, naming the first bad entry
        try:
            return np.array(value, dtype=float)
        except (ValueError, TypeError, OverflowError):  # pragma: no cover - checked by _walk
            raise self._wrong(value, path, ctx) from None

    def _fast(self, value: Any, path: str, ctx: _Ctx) -> np.ndarray | None:
        """The array when ``value`` is a well-formed rectangular list of finite numbers of the
        right shape, checked level by level in C-speed passes; None when anything is off
        (:meth:`_walk` then finds and names it)."""
        level: list[Any] = [value]
        dims: list[int] = []
        nd = self.ndim
        while True:
            kinds = set(map(type, level))
            if kinds <= {list, tuple}:
                sizes = set(map(len, level))
                if len(sizes) != 1 or 0 in sizes or len(dims) >= min(nd or MAX_DEPTH, MAX_DEPTH):
                    return None
                dims.append(sizes.pop())
                level = [x for row in level for x in row]
                continue
            if not kinds <= {int, float} or (nd is not None and len(dims) != nd):
                return None
            break
        try:
            arr = np.array(value, dtype=float)
        except (ValueError, TypeError, OverflowError):
            return None
        if arr.shape != tuple(dims) or not np.isfinite(arr).all():
            return None
        if self.minimum is not None and (arr < self.minimum).any():
            return None
        for axis, n in enumerate(dims):
            want = None if self.shape is None else self.shape[axis]
            where = path + "[0]" * axis
            if isinstance(want, int) and n != want:
                raise ctx.fail(where, f"has {n} {self._axis_noun(axis)}; expected {want}")
            if isinstance(want, str):
                ctx.bind(want, n, where, self._axis_noun(axis))
        return arr

    def _walk(self, value: Any, path: str, ctx: _Ctx, axis: int, shape: list[int]) -> None:
        nd = None if self.shape is None else len(self.shape)
        if axis >= MAX_DEPTH:
            raise ctx.fail(path, f"is nested more than {MAX_DEPTH} levels deep")
        leaf = nd is not None and axis == nd - 1
        n = len(value)
        if n == 0:
            raise ctx.fail(path, f"is empty; give {self.describe()}")
        if axis == len(shape):
            want = None if self.shape is None else self.shape[axis]
            if isinstance(want, int) and n != want:
                raise ctx.fail(path, f"has {n} {self._axis_noun(axis)}; expected {want}")
            if isinstance(want, str):
                ctx.bind(want, n, path, self._axis_noun(axis))
            shape.append(n)
        elif n != shape[axis]:
            raise ctx.fail(
                path,
                f"has {n} {self._axis_noun(axis)} but the ones before it have {shape[axis]}",
                "every row must have the same length",
            )
        if nd is None:
            lists = [isinstance(v, list | tuple) for v in value]
            leaf = not any(lists)
            if any(lists) and not all(lists):
                k = lists.index(not lists[0])
                raise ctx.fail(
                    _join(path, k),
                    f"is {show(value[k])} but {_join(path, 0)} is {show(value[0])}",
                    "every row must have the same length",
                )
            if leaf and axis + 1 < len(shape):
                raise ctx.fail(path, "is less deeply nested than the rows before it")
        if leaf:
            fast = all(type(v) is float or type(v) is int for v in value)
            if fast and self.minimum is None:
                fast = all(math.isfinite(v) for v in value if type(v) is float)
                fast = fast and all(abs(v) < 2**1000 for v in value if type(v) is int)
            if not fast or self.minimum is not None:
                for k, v in enumerate(value):
                    if isinstance(v, list | tuple) and nd is not None:
                        raise ctx.fail(
                            _join(path, k),
                            f"is {show(v)}; expected a number",
                            f"give {self.describe()}",
                        )
                    self._entry.check(v, _join(path, k), ctx)
            return
        for k, v in enumerate(value):
            if not isinstance(v, list | tuple):
                if nd is not None:
                    depth = nd - axis - 1
                    want = "a row (a list of numbers)" if depth == 1 else f"a {depth}-level list"
                    raise ctx.fail(
                        _join(path, k), f"must be {want}, got {show(v)}", f"give {self.describe()}"
                    )
            self._walk(v, _join(path, k), ctx, axis + 1, shape)


class MapOf(Schema):
    """An object with any (non-empty) keys whose values follow one schema."""

    kinds = frozenset({"dict"})

    def __init__(
        self, value: Schema, *, noun: str = "an object", min_len: int = 0, example: str = ""
    ) -> None:
        self.value, self.noun, self.min_len, self.example = value, noun, min_len, example

    def describe(self) -> str:
        return f"{self.noun} such as {self.example}" if self.example else self.noun

    def check(self, value: Any, path: str, ctx: _Ctx) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self._wrong(value, path, ctx)
        if len(value) < self.min_len:
            raise ctx.fail(path, f"is empty; give {self.describe()}")
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str) or not k.strip():
                raise ctx.fail(path, f"has an empty key {k!r}", "name every entry")
            out[k] = self.value.check(v, _join(path, k), ctx)
        return out


@dataclass(frozen=True)
class Field:
    """One key of a :class:`Table`: its schema and whether it must be present."""

    schema: Schema
    required: bool = False


class Table(Schema):
    """An object with known keys: required ones must be present, unknown ones are refused
    (naming the known ones). ``null`` is a value like any other (refused unless the key's
    schema accepts it): leave a key out to leave it unset."""

    kinds = frozenset({"dict"})

    def __init__(
        self, fields: Mapping[str, Field], *, noun: str = "an object", key_noun: str = "key"
    ) -> None:
        self.fields = dict(fields)
        self.noun = noun
        self.key_noun = key_noun

    def describe(self) -> str:
        return self.noun

    def check(self, value: Any, path: str, ctx: _Ctx) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self._wrong(value, path, ctx)
        unknown = [str(k) for k in value if k not in self.fields]
        if unknown:
            plural = "s" if len(unknown) > 1 else ""
            raise ctx.fail(
                path,
                f"has unknown {self.key_noun}{plural} {_and(unknown)}",
                f"the known {self.key_noun}s are {', '.join(self.fields)} (check the spelling)",
            )
        required = [k for k, f in self.fields.items() if f.required]
        missing = [k for k in required if k not in value]
        if missing:
            verb = "is" if len(missing) == 1 else "are"
            raise ctx.fail(path, f"needs {_and(required)}", f"{_and(missing)} {verb} missing")
        return {
            k: f.schema.check(value[k], _join(path, k), ctx)
            for k, f in self.fields.items()
            if k in value
        }


class AnyOf(Schema):
    """One of several schemas, chosen by the kind of the value (a list, a string, …); when
    several accept that kind they are tried in order."""

    def __init__(self, *options: Schema, noun: str = "") -> None:
        self.options = options
        self.noun = noun
        self.kinds = frozenset().union(*(o.kinds for o in options))

    def describe(self) -> str:
        return self.noun or " or ".join(o.describe() for o in self.options)

    def check(self, value: Any, path: str, ctx: _Ctx) -> Any:
        fits = [o for o in self.options if _kind(value) in o.kinds]
        if not fits:
            raise self._wrong(value, path, ctx)
        # arrays: the option with as many axes as the value's first entries show comes first
        depth = _list_depth(value)
        fits.sort(key=lambda o: not (isinstance(o, Array) and o.ndim == depth))
        if isinstance(fits[0], Array) and fits[0].ndim == depth:
            return fits[0].check(value, path, ctx)
        errors: list[tuple[int, InvalidFileError]] = []
        for o in fits:
            saved = dict(ctx.dims)
            try:
                return o.check(value, path, ctx)
            except InvalidFileError as e:
                ctx.dims = saved
                errors.append((ctx.last_depth, e))
        # the option that got furthest into the value names the problem best
        raise max(errors, key=lambda de: de[0])[1]


class Custom(Schema):
    """A schema node with a function: ``fn(value, path, ctx)`` returns the converted value or
    raises via ``ctx.fail``."""

    def __init__(
        self, fn: Callable[[Any, str, _Ctx], Any], noun: str, kinds: Sequence[str]
    ) -> None:
        self.fn, self.noun, self.kinds = fn, noun, frozenset(kinds)

    def describe(self) -> str:
        return self.noun

    def check(self, value: Any, path: str, ctx: _Ctx) -> Any:
        if _kind(value) not in self.kinds:
            raise self._wrong(value, path, ctx)
        return self.fn(value, path, ctx)


def validate(value: Any, schema: Schema, source: str) -> Any:
    """Check ``value`` against ``schema``; the converted value, or :class:`InvalidFileError`
    whose message starts with ``source`` (e.g. ``"model file 'm.json'"``)."""
    try:
        return schema.check(value, "", _Ctx(source))
    except RecursionError:
        raise InvalidFileError(
            f"{source} is nested too deeply; at most {MAX_DEPTH} levels are accepted"
        ) from None


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

_JSON_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_TOML_SKIP = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
)


def nesting_depth(text: str, *, toml: bool = False) -> int:
    """The deepest nesting of ``[`` / ``{`` in a JSON or TOML text, outside strings and
    comments (linear time, no recursion)."""
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


#: Default limit on the declared uncompressed size of an ``.npz`` file's arrays (bytes).
MAX_NPZ_BYTES: int = 2 * 2**30

_KIND_NAMES = {"f": "floating-point numbers", "U": "text", "i": "integers", "b": "booleans"}

#: Most members read from an ``.npz`` file.
MAX_NPZ_MEMBERS: int = 1024


def _size(x: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if x >= f:
            return f"{x / f:.3g} {unit}"
    return f"{int(x)} bytes"


def read_npz(
    path: str | Path,
    what: str,
    *,
    max_bytes: int = MAX_NPZ_BYTES,
    kinds: Mapping[str, str] | None = None,
    default_kind: str = "f",
    check_names: Callable[[list[str]], None] | None = None,
) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file, read defensively.

    Before any array is read: the file must be a zip archive of ``.npy`` members with distinct
    names; the sizes the archive declares for them (uncompressed) must add up to at most
    ``max_bytes`` (a zip bomb is refused with its figure and the limit); and each member's
    ``.npy`` header must give a dtype of the expected kind and a shape whose data fits in the
    member (no allocation from a forged shape). Object arrays are never unpickled. Truncated or
    corrupt members (bad CRC, short data) are refused.

    Parameters
    ----------
    path : str or Path
    what : str
        What the file is, for the messages (``"model population file"``).
    max_bytes : int
        The largest total declared uncompressed size accepted.
    kinds : mapping of member name → numpy dtype kind, optional
        The dtype kind (``"f"`` float, ``"U"`` unicode, ``"i"`` integer) of named members.
    default_kind : str
        The dtype kind of the other members.
    check_names : callable, optional
        Called with the member names (without ``.npy``) before any array is read; raises to
        refuse the file.

    Returns
    -------
    dict of member name (without ``.npy``) → ndarray

    Raises
    ------
    InvalidFileError
    """
    p = Path(path)
    src = f"{what} {p.name!r}"
    kinds = dict(kinds or {})
    if not p.is_file():
        raise InvalidFileError(f"{what} {str(p)!r} not found; check the path")
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
        raise InvalidFileError(
            f"{src} is not an .npz archive ({' '.join(str(e).split()) or type(e).__name__}); "
            "it may be truncated or another kind of file"
        ) from None
    out: dict[str, np.ndarray] = {}
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_NPZ_MEMBERS:
            raise InvalidFileError(
                f"{src} holds {len(infos)} members; at most {MAX_NPZ_MEMBERS} are read"
            )
        declared = sum(i.file_size for i in infos)
        if declared > max_bytes:
            raise InvalidFileError(
                f"{src} declares {_size(declared)} of uncompressed arrays; the limit is "
                f"{_size(max_bytes)} (is it a zip bomb, or too large a population?)"
            )
        names = [i.filename for i in infos]
        for i in infos:
            if not i.filename.endswith(".npy") or names.count(i.filename) > 1:
                raise InvalidFileError(
                    f"{src} has a member {_short(i.filename)!r} that is not one distinct .npy "
                    "array; write the file with numpy.savez"
                )
        if check_names is not None:
            check_names([n[:-4] for n in names])
        for info in infos:
            key = info.filename[:-4]
            want = kinds.get(key, default_kind)
            try:
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
                    if dtype.kind != want or dtype.hasobject:
                        raise InvalidFileError(
                            f"{src}: array {key!r} has dtype {dtype}; expected "
                            f"{_KIND_NAMES.get(want, want)}"
                        )
                    nbytes = math.prod(shape) * dtype.itemsize
                    if nbytes > info.file_size:
                        raise InvalidFileError(
                            f"{src}: array {key!r} claims shape {shape} ({_size(nbytes)}) but "
                            f"its member holds {_size(info.file_size)}; the file is corrupt"
                        )
                with zf.open(info) as fh:
                    out[key] = np.lib.format.read_array(fh, allow_pickle=False)
            except InvalidFileError:
                raise
            except (
                zipfile.BadZipFile,
                zlib.error,
                EOFError,
                OSError,
                ValueError,
                NotImplementedError,
                MemoryError,
            ) as e:
                raise InvalidFileError(
                    f"{src}: array {key!r} cannot be read "
                    f"({' '.join(str(e).split())[:120] or type(e).__name__}); the file is "
                    "truncated or corrupt"
                ) from None
    return out
