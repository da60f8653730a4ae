"""The typed schema of the user's files: :class:`Table`, :class:`ListOf`, :class:`Array`, …
and :func:`validate` (see :mod:`distprivacy.files`)."""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from distprivacy.files._values import (
    MAX_DEPTH,
    InvalidFileError,
    _and,
    _Ctx,
    _is_number,
    _join,
    _kind,
    _list_depth,
    show,
)


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
    """An integer (``true``/``false`` are not integers), optionally bounded.

    Parameters
    ----------
    minimum, maximum : int, optional
        The bounds, inclusive.
    """

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
    bounded; returned as a float (an integer stays one with ``keep_int``).

    Parameters
    ----------
    minimum, maximum : float, optional
        The bounds, inclusive.
    positive : bool, default False
        Whether the number must be above 0.
    finite : bool, default True
        Whether ±∞ and NaN are refused.
    keep_int : bool, default False
        Whether an integer is returned as an int.
    """

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
    ``choices``.

    Parameters
    ----------
    choices : sequence of str, optional
        The only values allowed.
    allow_empty : bool, default False
        Whether an empty (or blank) string is allowed.
    """

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
    dimension bound across the file.

    Parameters
    ----------
    item : Schema
        Every item's schema.
    min_len : int, default 0
        The fewest items.
    max_len : int, optional
        The most items.
    length : str, optional
        A named dimension the length binds (checked against its other uses in the file).
    unique : bool, default False
        Whether repeated items are refused.
    noun : str, default "entries"
        What the items are, for the error messages.
    example : str, optional
        An example shown in the error messages.
    """

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
    """Exactly two items of one schema, as a list (``["a", "b"]``); returned as a tuple.

    Parameters
    ----------
    item : Schema
        Both items' schema.
    example : str, default '["a", "b"]'
        An example shown in the error messages.
    """

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

    Parameters
    ----------
    shape : sequence of int, str or None, or None
        One entry per axis (above); None for any rectangular shape.
    noun : str, optional
        What the array is, for the error messages.
    minimum : float, optional
        The smallest value allowed.
    axis_nouns : sequence of str, optional
        What each axis counts, for the error messages.
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
    """An object with any (non-empty) keys whose values follow one schema.

    Parameters
    ----------
    value : Schema
        Every value's schema.
    noun : str, default "an object"
        What the object is, for the error messages.
    min_len : int, default 0
        The fewest keys.
    example : str, optional
        An example shown in the error messages.
    """

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
    """One key of a :class:`Table`: its schema and whether it must be present.

    Parameters
    ----------
    schema : Schema
        The key's value's schema.
    required : bool, default False
        Whether the key must be present.
    """

    schema: Schema
    required: bool = False


class Table(Schema):
    """An object with known keys: required ones must be present, unknown ones are refused
    (naming the known ones). ``null`` is a value like any other (refused unless the key's
    schema accepts it): leave a key out to leave it unset.

    Parameters
    ----------
    fields : mapping of str to Field
        The known keys and their fields.
    noun : str, default "an object"
        What the object is, for the error messages.
    key_noun : str, default "key"
        What its keys are called, for the error messages.
    """

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
    several accept that kind they are tried in order.

    Parameters
    ----------
    *options : Schema
        The schemas a value may follow.
    noun : str, optional
        What the value is, for the error messages.
    """

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
    raises via ``ctx.fail``.

    Parameters
    ----------
    fn : callable
        ``fn(value, path, ctx)``: the converted value, or a refusal through ``ctx.fail``.
    noun : str
        What the value is, for the error messages.
    kinds : sequence of str
        The kinds of value (``"list"``, ``"str"``, …) it accepts, for :class:`AnyOf`.
    """

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
    whose message starts with ``source`` (e.g. ``"model file 'm.json'"``).

    Parameters
    ----------
    value : Any
        The parsed value (from JSON or TOML).
    schema : Schema
        What it must be.
    source : str
        Where it comes from, the start of every error message.

    Returns
    -------
    Any
        The converted value (floats, tuples, arrays as the schema says).
    """
    try:
        return schema.check(value, "", _Ctx(source))
    except RecursionError:
        raise InvalidFileError(
            f"{source} is nested too deeply; at most {MAX_DEPTH} levels are accepted"
        ) from None
