"""Input checks: one-line errors for a bad ε, δ, number, integer, seed, vector or rule.

Every public function of the library checks its arguments at the boundary with these (the
command line's options call the same ones), so a mistake reads the same everywhere: what was
given, the range it must lie in, and an example of a good value.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError

__all__ = [
    "CALIBRATION_RULES",
    "MAX_SEED",
    "check_delta",
    "check_epsilon",
    "check_finite",
    "check_int",
    "check_number",
    "check_positive",
    "check_rule",
    "check_seed",
    "check_vector",
]

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


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | np.bool_)


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    hint: str = "",
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

    Returns
    -------
    float

    Raises
    ------
    DistPrivacyError
        When the value is not a finite real number in the range.
    """
    want = _describe(low, high, low_open, high_open, False)
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise DistPrivacyError(f"{name} must be {want}, got {type(value).__name__} {value!r}{hint}")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise DistPrivacyError(f"{name} must be {want}, got {value!r}{hint}") from None
    ok = math.isfinite(v)
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
    DistPrivacyError
    """
    want = (
        "a positive integer"
        if low == 1 and high is None
        else _describe(low, high, False, False, True)
    )
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise DistPrivacyError(f"{name} must be {want}, got {type(value).__name__} {value!r}{hint}")
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
    DistPrivacyError
    """
    if isinstance(value, str | bytes):
        raise DistPrivacyError(f"{name} must be a vector of real numbers, got a string {value!r}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be a vector of real numbers") from None
    if arr.dtype.kind not in "iuf":
        what = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(
            arr.dtype.kind, f"{arr.dtype} values"
        )
        raise DistPrivacyError(f"{name} must be a vector of real numbers, got {what}")
    arr = arr.astype(float)
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
    """Validate the calibration rule name."""
    if rule not in CALIBRATION_RULES:
        raise DistPrivacyError(
            f"unknown calibration rule {rule!r}; available: {', '.join(CALIBRATION_RULES)}"
        )
    return rule
