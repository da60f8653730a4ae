"""The error of the user's files and the words of its messages: how a value is described,
where it is (its key path) and the named dimensions bound so far (see
:mod:`distprivacy.files`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError

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
    """A short, one-line description of a parsed value for an error message.

    Parameters
    ----------
    value : Any
        The parsed value.

    Returns
    -------
    str
        A short description of the value, e.g. ``a list of 3 items``.
    """
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
