"""Input checks: one-line errors for a bad ε, δ, number, integer, seed, vector or rule, and
for an argument of the wrong type (a table, a path, a function, a flag, a text, an instance of
a class, an unknown keyword).

Every public function of the library checks its arguments at the boundary with these (the
command line's options call the same ones), so a mistake reads the same everywhere: the
parameter, what was given (:func:`shown`: its type and a one-line excerpt), what it must be,
and an example of a good value. A value of the wrong type raises
:class:`~distprivacy.exceptions.DistPrivacyTypeError` (a ``TypeError``); a value of the right
type outside its range raises :class:`~distprivacy.exceptions.DistPrivacyError` (a
``ValueError``).
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CALIBRATION_RULES",
    "MAX_SEED",
    "check_array",
    "check_bool",
    "check_callable",
    "check_dataframe",
    "check_delta",
    "check_epsilon",
    "check_finite",
    "check_instance",
    "check_int",
    "check_keywords",
    "check_label",
    "check_number",
    "check_path",
    "check_positive",
    "check_rule",
    "check_seed",
    "check_text",
    "check_texts",
    "check_vector",
    "shown",
]

T = TypeVar("T")

#: Longest excerpt of a refused value in a message.
_SHOWN_CHARS = 60

CALIBRATION_RULES = ("exact", "classic")


def _fmt_bound(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def _range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    lo = "(−∞" if low is None else ("(" if low_open else "[") + _fmt_bound(low)
    hi = "∞)" if high is None else _fmt_bound(high) + (")" if high_open else "]")
    return f"{lo}, {hi}"


def _describe(
    low: float | None, high: float | None, low_open: bool, high_open: bool, integer: bool
) -> str:
    """'a positive number', 'an integer ≥ 2', 'a number in (0, 1)', ..."""
    kind = "an integer" if integer else "a number"
    if low is not None and high is not None:
        return f"{kind} in {_range_text(low, high, low_open, high_open)}"
    if low is not None:
        if low == 0 and low_open:
            return "a positive integer" if integer else "a positive number"
        kind = "an integer" if integer else "a finite number"
        return f"{kind} {'>' if low_open else '≥'} {_fmt_bound(low)}"
    if high is not None:
        kind = "an integer" if integer else "a finite number"
        return f"{kind} {'<' if high_open else '≤'} {_fmt_bound(high)}"
    return "an integer" if integer else "a finite number"


def loaded_numpy() -> Any:
    """NumPy if some module has imported it, else None. No value can be a NumPy object (an
    array, a NumPy scalar, a generator) before NumPy is imported, so a type test asks this
    instead of importing NumPy: a command that never meets an array never loads it."""
    return sys.modules.get("numpy")


def _is_bool(value: Any) -> bool:
    np = loaded_numpy()
    return isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))


def shown(value: Any) -> str:
    """A refused value as a message shows it: its type and a one-line excerpt of its repr (at
    most 60 characters), an array or a table by its shape, e.g. ``"str 'abc'"``,
    ``"DataFrame of shape (3, 2)"``, ``"None"``.

    Examples
    --------
    >>> shown("abc"), shown(None), shown(np.zeros((2, 3)))
    ("str 'abc'", 'None', 'ndarray of shape (2, 3)')
    """
    if value is None:
        return "None"
    kind = type(value).__name__
    shape = getattr(value, "shape", None)
    np = loaded_numpy()
    if isinstance(shape, tuple) and ((np is not None and isinstance(value, np.ndarray)) or shape):
        return f"{kind} of shape {shape}"
    try:
        text = " ".join(repr(value).split())
    except Exception:  # a broken __repr__ must not hide the refusal
        text = "(unprintable)"
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 1] + "…"
    return f"{kind} {text}"


def check_instance(
    value: Any,
    name: str,
    types: type[T] | tuple[type, ...],
    what: str,
    *,
    optional: bool = False,
    error: type[DistPrivacyTypeError] = DistPrivacyTypeError,
) -> T:
    """``value`` if it is an instance of ``types`` (or None with ``optional``).

    Parameters
    ----------
    value : Any
        The argument given.
    name : str
        The parameter's name, used in the message (e.g. ``"plan"``).
    types : type or tuple of types
        What ``isinstance`` must accept.
    what : str
        What the parameter is, in words (e.g. ``"a Plan (Plan.load)"``); ``" or None"`` is
        added with ``optional``.
    optional : bool
        Whether None is accepted.
    error : type
        The error raised: :class:`DistPrivacyTypeError` or a subclass of it (a module's own,
        e.g. the ledger's ``LedgerTypeError``, also a ``LedgerError``).

    Raises
    ------
    DistPrivacyTypeError
        One line: ``plan must be a Plan (Plan.load), got str 'plan.json'``.
    """
    if value is None and optional:
        return value
    if isinstance(value, types):
        return value
    raise error(f"{name} must be {what}{' or None' if optional else ''}, got {shown(value)}")


def check_callable(
    value: Any,
    name: str,
    what: str = "a function",
    *,
    optional: bool = False,
    error: type[DistPrivacyTypeError] = DistPrivacyTypeError,
) -> Callable[..., Any] | None:
    """``value`` if it is callable (or None with ``optional``); ``error`` naming ``name`` and
    ``what`` (e.g. ``"a function progress(done, total)"``) otherwise."""
    if (value is None and optional) or callable(value):
        return value
    raise error(f"{name} must be {what}{' or None' if optional else ''}, got {shown(value)}")


def check_dataframe(
    value: Any,
    name: str,
    *,
    optional: bool = False,
    error: type[DistPrivacyTypeError] = DistPrivacyTypeError,
) -> Any:
    """``value`` if it is a pandas DataFrame (or None with ``optional``): the records a
    statistic, a release or a model reads; ``error`` otherwise."""
    import pandas as pd

    what = "a table of records (a pandas DataFrame)"
    return check_instance(value, name, pd.DataFrame, what, optional=optional, error=error)


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a bool if it is True or False (a NumPy bool too; not 0, 1 or "yes")."""
    if _is_bool(value):
        return bool(value)
    raise DistPrivacyTypeError(f"{name} must be True or False, got {shown(value)}")


def check_text(
    value: Any,
    name: str,
    *,
    choices: Iterable[str] | None = None,
    optional: bool = False,
    what: str = "a text",
) -> str | None:
    """``value`` if it is a ``str`` (one of ``choices`` when given; None with ``optional``).

    Raises
    ------
    DistPrivacyTypeError
        Not a text.
    DistPrivacyError
        A text that is not one of ``choices`` (the message lists them).
    """
    if value is None and optional:
        return None
    options = None if choices is None else tuple(choices)
    if not isinstance(value, str):
        want = f"one of {', '.join(options)}" if options else what
        raise DistPrivacyTypeError(
            f"{name} must be {want}{' or None' if optional else ''}, got {shown(value)}"
        )
    if options is not None and value not in options:
        raise DistPrivacyError(f"unknown {name} {value!r}; use one of {', '.join(options)}")
    return value


def check_label(value: Any, name: str, default: str) -> str:
    """A text that names something inside the library's messages (a model's ``source``, a
    plan's): whitespace runs, newlines included, collapse to one space so that every message
    stays one line; an empty one is ``default``.

    Raises
    ------
    DistPrivacyTypeError
        Not a text.
    """
    text = check_text(value, name)
    return " ".join(text.split()) or default


def check_texts(value: Any, name: str, *, optional: bool = False) -> tuple[str, ...] | None:
    """``value`` as a tuple of texts if it is a list, tuple or 1-D array of ``str`` (not one
    text, which would read as its letters); None with ``optional``."""
    import numpy as np

    if value is None and optional:
        return None
    flat = isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.ndim == 1)
    items = tuple(value) if flat else None
    if items is None or not all(isinstance(x, str) for x in items):
        raise DistPrivacyTypeError(
            f"{name} must be a list of texts{' or None' if optional else ''}, got {shown(value)}"
        )
    return items


def check_path(
    value: Any,
    name: str,
    *,
    optional: bool = False,
    error: type[DistPrivacyTypeError] = DistPrivacyTypeError,
) -> Path | None:
    """``value`` as a :class:`Path` (``~`` expanded) if it is a non-empty ``str`` or path-like
    object naming a path (None with ``optional``). Whether it exists, and what it is, is the
    caller's business (:func:`distprivacy._paths.check_input_path` for a file to read).

    Raises
    ------
    DistPrivacyTypeError
        (or ``error``) Not a text or path (bytes, a number, a list, ...).
    DistPrivacyError
        An empty text, a NUL character, or a ``~user`` whose home is unknown.
    """
    if value is None and optional:
        return None
    if isinstance(value, str) or (
        isinstance(value, os.PathLike) and isinstance(os.fspath(value), str)
    ):
        text = os.fspath(value)
        if not text:
            raise DistPrivacyError(f"{name} is an empty path; name a file or directory")
        if "\x00" in text:
            raise DistPrivacyError(f"{name} {text!r} holds a NUL character; no path does")
        try:
            return Path(text).expanduser()
        except RuntimeError:  # ~user with no known home
            raise DistPrivacyError(
                f"{name} {text!r} starts with ~ but that home directory is unknown"
            ) from None
    raise error(
        f"{name} must be a path (str or pathlib.Path){' or None' if optional else ''}, got "
        f"{shown(value)}"
    )


def check_keywords(given: Iterable[str], valid: Iterable[str], where: str) -> None:
    """Refuse keyword arguments of ``where`` (e.g. ``"release()"``) that are not in ``valid``,
    naming the first unknown one and every valid one — the library's answer to a misspelt
    option, where Python's would come from a function deeper down.

    Raises
    ------
    DistPrivacyTypeError
        ``release() got an unknown keyword argument 'bogus'; valid: a, b, c``.
    """
    known = tuple(valid)
    unknown = [k for k in given if k not in known]
    if unknown:
        raise DistPrivacyTypeError(
            f"{where} got an unknown keyword argument {unknown[0]!r}; valid: {', '.join(known)}"
        )


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    hint: str = "",
    allow_inf: bool = False,
) -> float:
    """Validate a real number in a range and return it as a float.

    The one place the library checks a numeric parameter: rejects bool, str, complex, None,
    NaN, ±inf and values outside the range, with a one-line message naming the parameter and
    its valid range.

    Parameters
    ----------
    value : Any
        The value given (a Python or NumPy real number).
    name : str
        The parameter's name, used in the message (e.g. ``"epsilon"``).
    low, high : float, optional
        Bounds of the valid range (None: unbounded).
    low_open, high_open : bool
        Whether the bounds themselves are excluded.
    hint : str
        Appended to the message, e.g. ``"; e.g. --delta 0.001"``.
    allow_inf : bool
        Accept ±∞ (still subject to the range): an ε or μ that hides nothing.

    Returns
    -------
    float

    Raises
    ------
    DistPrivacyTypeError
        When the value is not a real number (a bool, a text, None, ...).
    DistPrivacyError
        When it is NaN, infinite or outside the range.
    """
    want = _describe(low, high, low_open, high_open, False)
    if allow_inf:
        want = want.replace("a finite number", "a number") + " (∞ allowed)"
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise DistPrivacyTypeError(f"{name} must be {want}, got {shown(value)}{hint}")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise DistPrivacyError(f"{name} must be {want}, got {shown(value)}{hint}") from None
    ok = math.isfinite(v) or (allow_inf and math.isinf(v))
    if ok and low is not None:
        ok = v > low if low_open else v >= low
    if ok and high is not None:
        ok = v < high if high_open else v <= high
    if not ok:
        if low is not None and high is not None and math.isfinite(v):
            rng = _range_text(low, high, low_open, high_open)
            raise DistPrivacyError(f"{name} must lie in {rng}, got {value!r}{hint}")
        raise DistPrivacyError(f"{name} must be {want}, got {value!r}{hint}")
    return v


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    hint: str = "",
) -> int:
    """Validate an integer in [low, high] (bool, float, str and None are refused).

    Parameters
    ----------
    value : Any
        A Python or NumPy integer.
    name : str
        The parameter's name, used in the message.
    low, high : int, optional
        Inclusive bounds (None: unbounded).
    hint : str
        Appended to the message.

    Returns
    -------
    int

    Raises
    ------
    DistPrivacyTypeError
        Not an integer (a float, a bool, a text, None, ...).
    DistPrivacyError
        Outside [low, high].
    """
    want = (
        "a positive integer"
        if low == 1 and high is None
        else _describe(low, high, False, False, True)
    )
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise DistPrivacyTypeError(f"{name} must be {want}, got {shown(value)}{hint}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise DistPrivacyError(f"{name} must be {want}, got {v}{hint}")
    return v


#: Largest seed accepted (NumPy, scikit-learn and the legacy RandomState all take [0, 2³² − 1]).
MAX_SEED = 2**32 - 1


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """Validate a seed: None (fresh entropy / secure noise) or an integer in [0, 2³² − 1].

    The one function every seed of the library and the command line goes through.

    Returns
    -------
    int or None
    """
    if seed is None:
        return None
    return check_int(seed, name, low=0, high=MAX_SEED)


def check_array(value: Any, name: str, what: str = "an array of real numbers") -> np.ndarray:
    """``value`` as an array of floats if it holds real numbers (any shape; NaN and ±inf are
    the caller's to refuse): no text, bytes, booleans, complex numbers, objects or ragged
    nesting.

    Parameters
    ----------
    value : array-like
        The numbers.
    name : str
        Used in the message.
    what : str
        What it must be, in words (e.g. ``"a T×m matrix of means"``).

    Raises
    ------
    DistPrivacyTypeError
        ``name must be WHAT, got ...`` (one line).
    """
    import numpy as np

    if isinstance(value, str | bytes):
        raise DistPrivacyTypeError(f"{name} must be {what}, got {shown(value)}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting, unconvertible objects
        raise DistPrivacyTypeError(f"{name} must be {what}, got {shown(value)}") from None
    if arr.dtype.kind not in "iuf":
        kind = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(
            arr.dtype.kind, f"{arr.dtype} values"
        )
        raise DistPrivacyTypeError(f"{name} must be {what}, got {kind}")
    return arr.astype(float)


def check_vector(value: Any, name: str, length: int | None = None) -> np.ndarray:
    """Validate a vector of finite real numbers (no bool, str, complex or object entries).

    Parameters
    ----------
    value : array-like
        The numbers.
    name : str
        Used in the message.
    length : int, optional
        The required length.

    Returns
    -------
    ndarray of float, shape (length,)

    Raises
    ------
    DistPrivacyTypeError
        Not numbers (texts, booleans, complex numbers, objects).
    DistPrivacyError
        The wrong shape, or NaN or infinite entries.
    """
    import numpy as np

    arr = check_array(value, name, "a vector of real numbers")
    if arr.ndim != 1 or (length is not None and arr.shape[0] != length):
        want = "(m,)" if length is None else f"({length},)"
        raise DistPrivacyError(f"{name} has shape {arr.shape}, expected {want}")
    if not np.isfinite(arr).all():
        raise DistPrivacyError(f"{name} has NaN or infinite entries")
    return arr


def check_finite(value: Any, what: str) -> np.ndarray:
    """Refuse a computed result that overflowed: ``what`` names the quantity (and the fix).

    Raises
    ------
    DistPrivacyError
        When any entry is NaN or infinite.
    """
    import numpy as np

    arr = np.asarray(value, dtype=float)
    if not np.isfinite(arr).all():
        raise DistPrivacyError(
            f"{what} is not a finite number (overflow); the inputs are too large or too small "
            "for double precision"
        )
    return arr


def check_positive(value: float, name: str) -> float:
    """Validate a finite number > 0 (ε, σ, a scale, …); ``name`` is used in the error."""
    return check_number(value, name, low=0, low_open=True)


def check_epsilon(epsilon: float) -> float:
    """Validate ε > 0 (finite)."""
    return check_number(epsilon, "epsilon", low=0, low_open=True, hint="; e.g. `epsilon=1`")


def check_delta(delta: float, *, allow_zero: bool = False) -> float:
    """Validate δ ∈ (0, 1) (or [0, 1) with ``allow_zero``)."""
    return check_number(
        delta,
        "delta",
        low=0,
        high=1,
        low_open=not allow_zero,
        high_open=True,
        hint="; e.g. `delta=0.001`",
    )


def check_rule(rule: str) -> str:
    """Validate the calibration rule name (``"exact"`` or ``"classic"``)."""
    if not isinstance(rule, str):
        raise DistPrivacyTypeError(
            f"calibration must be one of {', '.join(CALIBRATION_RULES)}, got {shown(rule)}"
        )
    if rule not in CALIBRATION_RULES:
        raise DistPrivacyError(
            f"unknown calibration rule {rule!r}; available: {', '.join(CALIBRATION_RULES)}"
        )
    return rule
