"""Inputs of the distance computations: validation, exact integer masses, the 1-D quantile
coupling and the memory bound (see :mod:`distprivacy.distances`)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from distprivacy.exceptions import DistPrivacyError

_MAX_DENOMINATOR = 10**6  # weights are read as rationals with at most this denominator
_WEIGHT_RTOL = 1e-12  # a weight may differ from its rational reading by this relative amount
_FLOW_LIMIT = 2**31 - 1  # scipy's max-flow uses int32 capacities
_QUANTILE_LIMIT = 2**62  # exact int64 cumulative sums in the 1-D quantile path
_DELTA_MAX_DENOMINATOR = 10**12  # delta is read as the nearest rational, e.g. 0.3 -> 3/10
# float64 distances + float64 0/1 assignment costs + boolean masks and selection temporaries
_BYTES_PER_PAIR = 32
# float64 distances + candidate copy, or a dense graph's edge lists (int64 and int32) for max flow
_FLOW_BYTES_PER_PAIR = 64


# (integer mass of each x-atom, integer mass of each y-atom); None means "uniform, N == M".
_Masses = tuple[np.ndarray, np.ndarray] | None


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _as_points(values: ArrayLike, name: str) -> np.ndarray:
    """A finite float array of shape (N,) or (N, m) with N, m ≥ 1."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(
            f"{name} must be a numeric array of shape (N,) or (N, m); convert it to numbers"
        ) from exc
    if arr.ndim not in (1, 2):
        raise DistPrivacyError(
            f"{name} has shape {arr.shape}; pass samples as an array of shape (N,) or (N, m)"
        )
    if arr.size == 0:
        raise DistPrivacyError(f"{name} is empty (shape {arr.shape}); pass at least one sample")
    if not np.isfinite(arr).all():
        raise DistPrivacyError(f"{name} contains NaN or infinite values; drop or replace them")
    return arr


def _as_weights(weights: ArrayLike | None, n: int, name: str) -> np.ndarray | None:
    """Validated non-negative weights (one per point, positive sum), or None for uniform."""
    if weights is None:
        return None
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(f"{name} must be a 1-D array of numbers, one per point") from exc
    if w.ndim != 1 or w.shape[0] != n:
        raise DistPrivacyError(
            f"{name} has shape {w.shape} but there are {n} points; pass one weight per point"
        )
    if not np.isfinite(w).all():
        raise DistPrivacyError(f"{name} contains NaN or infinite values; pass finite weights")
    if (w < 0).any():
        raise DistPrivacyError(f"{name} has negative entries; weights must be non-negative")
    if not w.sum() > 0:
        raise DistPrivacyError(f"{name} are all zero; give at least one point a positive weight")
    return w


def _check_delta(delta: float) -> float:
    try:
        d = float(delta)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(f"delta must be a number in [0, 1), got {delta!r}") from exc
    if not 0.0 <= d < 1.0:
        raise DistPrivacyError(f"delta must be in [0, 1), got {delta!r}; use 0 for exact W∞")
    return d


def _prepare(
    x: ArrayLike, y: ArrayLike, x_weights: ArrayLike | None, y_weights: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, bool]:
    """Validate inputs; return (X, Y) as (N, m), (M, m) arrays of positive-weight atoms, their
    weights (None = uniform) and whether both inputs were 1-D arrays."""
    xa, ya = _as_points(x, "x"), _as_points(y, "y")
    one_d = xa.ndim == 1 and ya.ndim == 1
    X, Y = xa.reshape(xa.shape[0], -1), ya.reshape(ya.shape[0], -1)
    if X.shape[1] != Y.shape[1]:
        raise DistPrivacyError(
            f"x has dimension {X.shape[1]} but y has dimension {Y.shape[1]}; "
            "both must hold samples of the same statistic F in R^m"
        )
    xw = _as_weights(x_weights, X.shape[0], "x_weights")
    yw = _as_weights(y_weights, Y.shape[0], "y_weights")
    if xw is not None:
        X, xw = X[xw > 0], xw[xw > 0]
    if yw is not None:
        Y, yw = Y[yw > 0], yw[yw > 0]
    return X, Y, xw, yw, one_d


# ---------------------------------------------------------------------------------------------
# Exact integer masses
# ---------------------------------------------------------------------------------------------


def _as_fraction(value: float, name: str) -> Fraction:
    frac = Fraction(value).limit_denominator(_MAX_DENOMINATOR)
    if frac <= 0 or abs(value - frac.numerator / frac.denominator) > _WEIGHT_RTOL * value:
        raise DistPrivacyError(
            f"{name} has weight {value!r}, which is not a rational with denominator ≤ 1e6; "
            "weights must be rational with denominator ≤ 1e6; pass integer counts instead"
        )
    return frac


def _integer_weights(w: np.ndarray | None, n: int, name: str) -> tuple[list[int], np.ndarray]:
    """Coprime integers proportional to ``w``: (distinct values, index of each atom's value)."""
    if w is None:
        return [1], np.zeros(n, dtype=np.intp)
    values, inverse = np.unique(w, return_inverse=True)
    fracs = [_as_fraction(v, name) for v in values.tolist()]
    lcm = math.lcm(*(f.denominator for f in fracs))
    ints = [f.numerator * (lcm // f.denominator) for f in fracs]
    g = math.gcd(*ints)
    return [i // g for i in ints], inverse.reshape(-1)


def _masses(xw: np.ndarray | None, yw: np.ndarray | None, n: int, k: int, limit: int) -> _Masses:
    """Exact integer masses of the two distributions with equal totals (None when both are
    uniform with the same number of atoms)."""
    ux, ix = _integer_weights(xw, n, "x_weights")
    uy, iy = _integer_weights(yw, k, "y_weights")
    if n == k and ux == [1] and uy == [1]:
        return None
    P = sum(v * int(c) for v, c in zip(ux, np.bincount(ix, minlength=len(ux)), strict=True))
    Q = sum(v * int(c) for v, c in zip(uy, np.bincount(iy, minlength=len(uy)), strict=True))
    g = math.gcd(P, Q)
    sx, sy = Q // g, P // g
    total = P * sx
    if total > limit:
        raise DistPrivacyError(
            f"exact integer masses need a total of {total}, above the limit {limit}; "
            "use equal sample sizes, or integer counts with a smaller lcm of totals"
        )
    a = np.array(ux, dtype=np.int64)[ix] * sx
    b = np.array(uy, dtype=np.int64)[iy] * sy
    return a, b


def _required_units(delta: float, total: int) -> int:
    """Smallest integer mass ≥ (1 − δ)·total (at least 1), exact for decimal δ such as 0.1."""
    d = Fraction(delta).limit_denominator(_DELTA_MAX_DENOMINATOR)
    return max(1, math.ceil((1 - d) * total))


def _total(masses: _Masses, n: int) -> int:
    return n if masses is None else int(masses[0].sum())


# ---------------------------------------------------------------------------------------------
# 1-D: sorted samples / quantile functions
# ---------------------------------------------------------------------------------------------


def _winf_1d(xs: np.ndarray, ys: np.ndarray, masses: _Masses) -> float:
    """Exact W∞ on the line via the monotone coupling: sup_u |F⁻¹(u) − G⁻¹(u)|."""
    if masses is None:
        return float(np.max(np.abs(np.sort(xs) - np.sort(ys))))
    a, b = masses
    ox, oy = np.argsort(xs, kind="stable"), np.argsort(ys, kind="stable")
    A, B = np.cumsum(a[ox]), np.cumsum(b[oy])
    # On each interval (c_{k-1}, c_k] between merged breakpoints both quantile functions are
    # constant, equal to the first atom whose cumulative mass reaches c_k.
    cuts = np.union1d(A, B)
    ix = np.searchsorted(A, cuts, side="left")
    iy = np.searchsorted(B, cuts, side="left")
    return float(np.max(np.abs(xs[ox][ix] - ys[oy][iy])))


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------


def _check_limit(memory_limit: int) -> int:
    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int | np.integer):
        raise DistPrivacyError(
            f"memory_limit must be a positive number of bytes, got {memory_limit!r}"
        )
    if memory_limit < 1:
        raise DistPrivacyError(f"memory_limit must be positive, got {memory_limit!r}")
    return int(memory_limit)


def _gib(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:,.1f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:,.1f} MiB"


def _check_memory(n: int, k: int, limit: int, per_pair: int = _BYTES_PER_PAIR) -> None:
    """Refuse, before allocating, a bottleneck search whose arrays exceed ``limit`` bytes."""
    need = n * k * per_pair
    if need > limit:
        raise DistPrivacyError(
            f"the bottleneck search between {n:,} and {k:,} atoms needs {_gib(need)} "
            f"({per_pair} bytes per pair of atoms), above the memory limit of "
            f"{_gib(limit)}; use fewer samples (at most {math.isqrt(limit // per_pair):,} "
            "a side) or raise memory_limit"
        )
