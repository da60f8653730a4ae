"""Exact ∞-Wasserstein distance and (W, δ)-closeness of empirical distributions.

The Wasserstein Mechanism of Chen & Ohrimenko (AISTATS 2023, §3) scales Laplace noise to the
∞-Wasserstein distance (Definition 3.1, ground metric L1) between two distributions of a statistic
F in R^m (Theorem 3.1), or to the smallest W for which they are (W, δ)-close (Definition 3.2,
Theorem 3.2). Here both distributions are discrete: N Monte-Carlo samples of F (rows of an
``(N, m)`` array), optionally weighted.

Every value returned is exact: it is one of the pairwise L1 distances ``||x_i − y_j||_1``
(computed in float64), never an approximation, because it calibrates privacy noise.

Algorithms
----------
* 1-D inputs (both arrays of shape ``(N,)``), :func:`wasserstein_inf`: the monotone (quantile)
  coupling is optimal for W∞ on the line. Uniform weights with N == M: sort both samples and take
  ``max |x_(i) − y_(i)|``. Otherwise: ``sup_u |F⁻¹(u) − G⁻¹(u)|`` over the merged breakpoints of
  the two CDFs, with the masses held as exact integers.
* Everything else (m-D inputs, and closeness in any dimension): bottleneck search. The answer is
  the smallest pairwise distance t at which the bipartite graph of pairs with distance ≤ t carries
  enough mass; candidate thresholds are binary-searched. Uniform weights with N == M: maximum
  bipartite matching (Hopcroft–Karp); for uniform empirical distributions the largest coupling mass
  on allowed pairs is (maximum matching)/N (Birkhoff–von Neumann). Otherwise: integer maximum flow
  source → x-atoms (capacity = integer mass) → allowed pairs → y-atoms → sink.

Weights are normalised internally and must be exactly representable as rationals with denominator
≤ 10**6 (integer counts are best); atoms of zero weight are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.sparse.csgraph import maximum_bipartite_matching, maximum_flow

from distprivacy.exceptions import DistPrivacyError

__all__ = ["are_close", "closeness_radius", "wasserstein_inf"]

_MAX_DENOMINATOR = 10**6  # weights are read as rationals with at most this denominator
_WEIGHT_RTOL = 1e-12  # a weight may differ from its rational reading by this relative amount
_FLOW_LIMIT = 2**31 - 1  # scipy's max-flow uses int32 capacities
_QUANTILE_LIMIT = 2**62  # exact int64 cumulative sums in the 1-D quantile path
_DELTA_MAX_DENOMINATOR = 10**12  # delta is read as the nearest rational, e.g. 0.3 -> 3/10

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
# Bottleneck search on the bipartite graph of pairs within distance t
# ---------------------------------------------------------------------------------------------


def _pairwise_l1(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(N, M) matrix of ||X_i − Y_j||_1, accumulated one coordinate at a time (memory N·M)."""
    D = np.zeros((X.shape[0], Y.shape[0]))
    tmp = np.empty_like(D)
    for k in range(X.shape[1]):
        np.subtract.outer(X[:, k], Y[:, k], out=tmp)
        np.abs(tmp, out=tmp)
        D += tmp
    return D


def _matching_size(mask: np.ndarray) -> int:
    """Maximum matching size of the bipartite graph with biadjacency ``mask`` (Hopcroft–Karp)."""
    n, k = mask.shape
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(mask, axis=1), out=indptr[1:])
    indices = np.nonzero(mask)[1]
    graph = sp.csr_array((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(n, k))
    match = maximum_bipartite_matching(graph, perm_type="column")
    return int(np.count_nonzero(match >= 0))


def _flow_value(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> int:
    """Maximum integer mass movable along allowed pairs: source → x-atoms (capacity a) →
    allowed pairs (unbounded) → y-atoms (capacity b) → sink."""
    n, k = mask.shape
    total = int(a.sum())
    sink = n + k + 1
    # Rows in order: source, x-atoms 1..n, y-atoms n+1..n+k, sink (no out-edges).
    per_row = np.concatenate(([n], np.count_nonzero(mask, axis=1), np.ones(k, dtype=np.int64), [0]))
    indptr = np.zeros(n + k + 3, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    rows_cols = np.nonzero(mask)[1]
    indices = np.concatenate((np.arange(1, n + 1), rows_cols + n + 1, np.full(k, sink)))
    data = np.concatenate((a, np.full(rows_cols.size, total, dtype=np.int64), b))
    graph = sp.csr_array(
        (data.astype(np.int32), indices.astype(np.int32), indptr.astype(np.int32)),
        shape=(n + k + 2, n + k + 2),
    )
    return int(maximum_flow(graph, 0, sink).flow_value)


def _movable_mass(D: np.ndarray, t: float, masses: _Masses) -> int:
    """Largest coupling mass (in integer units) on pairs with distance ≤ t."""
    mask = D <= t
    if masses is None:
        return _matching_size(mask)
    return _flow_value(mask, *masses)


def _smallest_feasible(candidates: np.ndarray, feasible: Callable[[float], bool]) -> float:
    """Smallest candidate (sorted ascending, last one feasible) for which ``feasible`` holds.

    Gallops up from the smallest candidate (probes 0, 4, 20, 84, ...) before bisecting, so that
    most probes are near the answer, where the graphs are sparse and the solvers fast.
    """
    lo, hi = 0, candidates.size - 1
    step = 1
    while lo < hi:  # invariant: candidates below lo are infeasible, candidates[hi] is feasible
        probe = lo + step - 1
        if probe >= hi:
            break
        if feasible(float(candidates[probe])):
            hi = probe
            break
        lo, step = probe + 1, 4 * step
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(float(candidates[mid])):
            hi = mid
        else:
            lo = mid + 1
    return float(candidates[lo])


def _winf_bottleneck(X: np.ndarray, Y: np.ndarray, masses: _Masses) -> float:
    D = _pairwise_l1(X, Y)
    total = _total(masses, X.shape[0])
    # Lower bounds: every atom has positive mass, so it travels at least to its nearest atom;
    # and ||x − y||_1 ≥ |x_k − y_k| makes each marginal's W∞ a lower bound (the coordinate
    # projection of an optimal coupling couples the marginals).
    lb = max(float(D.min(axis=1).max()), float(D.min(axis=0).max()))
    for k in range(X.shape[1]):
        lb = max(lb, _winf_1d(X[:, k], Y[:, k], masses))
    candidates = np.unique(D[D >= lb])
    return _smallest_feasible(candidates, lambda t: _movable_mass(D, t, masses) >= total)


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def wasserstein_inf(
    x: ArrayLike,
    y: ArrayLike,
    *,
    x_weights: ArrayLike | None = None,
    y_weights: ArrayLike | None = None,
) -> float:
    """Exact ∞-Wasserstein distance (L1 ground metric) between two discrete distributions.

    Definition 3.1 of Chen & Ohrimenko (2023):
    ``W∞(μ, ν) = inf_{γ ∈ Γ(μ, ν)} max_{(x, y) ∈ supp γ} ||x − y||_1``; Theorem 3.1 scales the
    Laplace noise of the Wasserstein Mechanism to it.

    Parameters
    ----------
    x : array_like, shape (N,) or (N, m)
        Atoms (e.g. Monte-Carlo samples of F) of the first distribution μ.
    y : array_like, shape (M,) or (M, m)
        Atoms of the second distribution ν, in the same dimension m.
    x_weights, y_weights : array_like, shape (N,) / (M,), optional
        Non-negative weights, normalised internally; None means uniform (the empirical
        distribution). Atoms of zero weight are ignored. Weights must be rationals with
        denominator ≤ 10**6 (integer counts are best).

    Returns
    -------
    float
        W∞(μ, ν); exactly one of the pairwise distances ``||x_i − y_j||_1``.

    Raises
    ------
    DistPrivacyError
        Empty, non-finite or mismatched inputs; invalid or non-rational weights; or exact
        integer masses too large for the max-flow solver.

    Notes
    -----
    If both inputs are 1-D the monotone (quantile) coupling is used, which is optimal on the
    line. Otherwise (including shape ``(N, 1)``) the bottleneck search of the module docstring:
    Hopcroft–Karp matching for uniform weights with N == M, integer max flow otherwise.
    """
    X, Y, xw, yw, one_d = _prepare(x, y, x_weights, y_weights)
    n, k = X.shape[0], Y.shape[0]
    if one_d:
        return _winf_1d(X[:, 0], Y[:, 0], _masses(xw, yw, n, k, _QUANTILE_LIMIT))
    return _winf_bottleneck(X, Y, _masses(xw, yw, n, k, _FLOW_LIMIT))


def closeness_radius(
    x: ArrayLike,
    y: ArrayLike,
    delta: float,
    *,
    x_weights: ArrayLike | None = None,
    y_weights: ArrayLike | None = None,
) -> float:
    """Smallest W such that the two distributions are (W, δ)-close (Definition 3.2).

    μ and ν are (W, δ)-close (Chen & Ohrimenko 2023, Definition 3.2) if some coupling
    γ ∈ Γ(μ, ν) puts mass ≥ 1 − δ on pairs with ``||x − y||_1 ≤ W``; Theorem 3.2 then gives
    (ε, δ)-distribution privacy with Laplace noise of scale W/ε. δ = 0 gives W∞ (Definition 3.1).

    Parameters
    ----------
    x, y, x_weights, y_weights
        As in :func:`wasserstein_inf`.
    delta : float
        Mass allowed to move further than W, in [0, 1). It is read as the nearest rational with
        denominator ≤ 10**12 (so 0.1 means exactly 1/10).

    Returns
    -------
    float
        The smallest such W, exactly one of the pairwise distances ``||x_i − y_j||_1``.

    Raises
    ------
    DistPrivacyError
        As in :func:`wasserstein_inf`, or delta outside [0, 1).

    Notes
    -----
    Binary search over the sorted distinct pairwise distances; at each threshold t the largest
    coupling mass on pairs within t is a maximum matching (uniform weights, N == M) or an integer
    maximum flow, compared exactly with ⌈(1 − δ)·total⌉.
    """
    delta = _check_delta(delta)
    if delta == 0.0:
        return wasserstein_inf(x, y, x_weights=x_weights, y_weights=y_weights)
    X, Y, xw, yw, _ = _prepare(x, y, x_weights, y_weights)
    masses = _masses(xw, yw, X.shape[0], Y.shape[0], _FLOW_LIMIT)
    need = _required_units(delta, _total(masses, X.shape[0]))
    D = _pairwise_l1(X, Y)
    candidates = np.unique(D)
    return _smallest_feasible(candidates, lambda t: _movable_mass(D, t, masses) >= need)


def are_close(
    x: ArrayLike,
    y: ArrayLike,
    W: float,
    delta: float,
    *,
    x_weights: ArrayLike | None = None,
    y_weights: ArrayLike | None = None,
) -> bool:
    """Whether the two distributions are (W, δ)-close (Definition 3.2).

    True iff some coupling γ ∈ Γ(μ, ν) puts mass ≥ 1 − δ on pairs with ``||x − y||_1 ≤ W``
    (Chen & Ohrimenko 2023, Definition 3.2); with δ = 0 this is ``W∞(μ, ν) ≤ W``
    (Definition 3.1).

    Parameters
    ----------
    x, y, x_weights, y_weights
        As in :func:`wasserstein_inf`.
    W : float
        Distance bound (L1). A negative W is never satisfied.
    delta : float
        Exempt mass, in [0, 1); read as in :func:`closeness_radius`.

    Returns
    -------
    bool
        Exactly ``closeness_radius(x, y, delta) <= W``, decided with one matching or max flow.

    Raises
    ------
    DistPrivacyError
        As in :func:`closeness_radius`, or W is NaN or not a number.
    """
    delta = _check_delta(delta)
    try:
        bound = float(W)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(f"W must be a number, got {W!r}") from exc
    if math.isnan(bound):
        raise DistPrivacyError("W is NaN; pass a distance bound W ≥ 0")
    X, Y, xw, yw, _ = _prepare(x, y, x_weights, y_weights)
    masses = _masses(xw, yw, X.shape[0], Y.shape[0], _FLOW_LIMIT)
    if bound < 0:
        return False
    need = _required_units(delta, _total(masses, X.shape[0]))
    return _movable_mass(_pairwise_l1(X, Y), bound, masses) >= need
