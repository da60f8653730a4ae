"""Exact ∞-Wasserstein distance and (W, δ)-closeness of empirical distributions.

The Wasserstein Mechanism of Chen & Ohrimenko (AISTATS 2023, §3) scales Laplace noise to the
∞-Wasserstein distance (Definition 3.1, ground metric L1) between two distributions of a statistic
F in R^m (Theorem 3.1), or to the smallest W for which they are (W, δ)-close (Definition 3.2,
Theorem 3.2). Here both distributions are discrete: N Monte-Carlo samples of F (rows of an
``(N, m)`` array), optionally weighted.

Every value returned is exact: it is one of the pairwise L1 distances ``||x_i − y_j||_1``
(computed in float64), never an approximation, because it calibrates privacy noise. It is also
always *achieved*: the code holds a coupling (a matching or a flow) whose mass on pairs within the
returned distance meets the requirement, so even a fault in a lower bound could only make the
value too large (a certified upper bound), never too small.

Algorithms
----------
* W∞ in one dimension (inputs of shape ``(N,)`` or ``(N, 1)``): the monotone (quantile) coupling
  is optimal on the line. Uniform weights with N == M: sort both samples and take
  ``max |x_(i) − y_(i)|``. Otherwise: ``sup_u |F⁻¹(u) − G⁻¹(u)|`` over the merged breakpoints of
  the two CDFs, with the masses held as exact integers. O(N log N), no distance matrix.
* Everything else (W∞ in m-D, and closeness in any dimension): bottleneck search. The answer is
  the smallest pairwise distance t at which the bipartite graph G_t of pairs with distance ≤ t
  carries enough mass. Certified lower bounds start the search: every atom travels at least to
  its nearest atom of the other side (all but a δ share of the mass, for closeness), and, for W∞,
  each coordinate's 1-D W∞ (the projection of a coupling couples the marginals).

  - Uniform weights with N == M: the largest coupling mass on G_t is (maximum matching)/N
    (Birkhoff–von Neumann). A maximum matching of G_t comes from one linear assignment on the 0/1
    costs ``[D > t]`` (:func:`scipy.optimize.linear_sum_assignment`, O(N³) worst case, not the
    Hopcroft–Karp matcher, which degrades badly on dense near-perfect graphs). If it is more
    than ``_AUGMENT_MAX`` short of the target, assignments at median thresholds bisect the
    candidate range (at most log₂(N·M) of them). The last few units are added along *minimax
    augmenting paths* (a Dijkstra search on bottleneck labels, O(N·M) per path): each raises the
    threshold only as far as the next larger matching needs, so the search ends exactly at the
    smallest feasible t (Gross 1959; Burkard, Dell'Amico & Martello, *Assignment Problems*,
    §6.2). Worst case O(N³ log(N·M)); in ``bench/bench_distances.py`` (dense graphs one pair
    short of perfect, heavy ties) mostly one assignment and a few paths, < 0.3 s for N = 1,000.
  - Integer masses totalling at most twice the number of atoms (duplicated samples, small
    counts) are split into unit atoms and searched as above: an integral flow of value k is a
    matching of k unit atoms.
  - Otherwise: integer maximum flow (Dinic) source → x-atoms (capacity = integer mass) → allowed
    pairs → y-atoms → sink, at thresholds found by galloping up from the lower bound, then
    bisection: at most 2·log₂(N·M) flows.

Memory: the distance matrix and the assignment's cost matrix take 32 bytes per pair of atoms
(64 with max flow, for the edge lists of a dense graph); a problem above ``memory_limit``
(default :data:`MEMORY_LIMIT`, 2 GiB) is refused before anything is allocated, with the figure
and the limit.

Weights are normalised internally and must be exactly representable as rationals with denominator
≤ 10**6 (integer counts are best); atoms of zero weight are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import maximum_flow

from distprivacy.exceptions import DistPrivacyError

__all__ = ["MEMORY_LIMIT", "are_close", "closeness_radii", "closeness_radius", "wasserstein_inf"]

MEMORY_LIMIT = 2 << 30
"""Default bound in bytes on the matrices of one bottleneck search: 2 GiB (8,192 atoms a side)."""

ProgressCallback = Callable[[int, int], None]

_MAX_DENOMINATOR = 10**6  # weights are read as rationals with at most this denominator
_WEIGHT_RTOL = 1e-12  # a weight may differ from its rational reading by this relative amount
_FLOW_LIMIT = 2**31 - 1  # scipy's max-flow uses int32 capacities
_QUANTILE_LIMIT = 2**62  # exact int64 cumulative sums in the 1-D quantile path
_DELTA_MAX_DENOMINATOR = 10**12  # delta is read as the nearest rational, e.g. 0.3 -> 3/10
# float64 distances + float64 0/1 assignment costs + boolean masks and selection temporaries
_BYTES_PER_PAIR = 32
# float64 distances + candidate copy, or a dense graph's edge lists (int64 and int32) for max flow
_FLOW_BYTES_PER_PAIR = 64
_AUGMENT_MAX = 24  # deficits up to this are closed by augmenting paths, larger ones bisected
_EXPAND_FACTOR = 2  # integer masses totalling ≤ this × atoms are split into unit atoms

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


# ---------------------------------------------------------------------------------------------
# Bottleneck search on the bipartite graph of pairs within distance t
# ---------------------------------------------------------------------------------------------


def _pairwise_l1(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(N, M) matrix of ||X_i − Y_j||_1, accumulated one coordinate at a time (memory 2·N·M).

    Float addition of non-negative terms is monotone, so every entry is ≥ each coordinate's
    ``|X_ik − Y_jk|`` exactly as computed, which keeps the marginal lower bounds valid in floats.
    """
    D = np.abs(np.subtract.outer(X[:, 0], Y[:, 0]))
    if X.shape[1] > 1:
        tmp = np.empty_like(D)
        for k in range(1, X.shape[1]):
            np.subtract.outer(X[:, k], Y[:, k], out=tmp)
            np.abs(tmp, out=tmp)
            D += tmp
    return D


def _nearest_lower_bound(D: np.ndarray, masses: _Masses, need: int) -> float:
    """Certified lower bound on the smallest t with ``need`` units of mass within distance t.

    An atom whose nearest atom on the other side is further than t moves none of its mass
    within t; so the atoms with nearest distance > t hold at most ``total − need`` units. The
    bound is the smallest t for which that holds, on either side (all atoms have positive mass).
    """
    slack = _total(masses, D.shape[0]) - need  # units that may stay further than t
    lb = 0.0
    for axis in (1, 0):
        nearest = D.min(axis=axis)
        if masses is None:  # unit masses: the (slack + 1)-th largest nearest distance
            kth = nearest.size - 1 - slack
            lb = max(lb, float(np.partition(nearest, kth)[kth]))
            continue
        order = np.argsort(-nearest, kind="stable")
        over = int(np.searchsorted(np.cumsum(masses[1 - axis][order]), slack, side="right"))
        if over < nearest.size:
            lb = max(lb, float(nearest[order[over]]))
    return lb


def _assignment_matching(D: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """A maximum matching of G_t = {(i, j) : D_ij ≤ t} for square D, as (row → column,
    column → row) arrays with −1 for unmatched atoms.

    One linear assignment on the 0/1 costs ``[D > t]``: a perfect assignment with the fewest
    pairs outside G_t keeps a maximum matching of G_t (any matching of G_t extends to a perfect
    assignment in the complete graph). Unlike Hopcroft–Karp it stays fast on dense graphs one
    edge short of a perfect matching.
    """
    cost = np.greater(D, t).astype(np.float64)
    rows, cols = linear_sum_assignment(cost)
    inside = cost[rows, cols] == 0.0
    row_match = np.full(D.shape[0], -1, dtype=np.intp)
    col_match = np.full(D.shape[1], -1, dtype=np.intp)
    row_match[rows[inside]] = cols[inside]
    col_match[cols[inside]] = rows[inside]
    return row_match, col_match


def _matched_quantile(D: np.ndarray, row_match: np.ndarray, need: int) -> float:
    """The ``need``-th smallest distance over the matched pairs: the bottleneck of the best
    ``need`` pairs of the matching, a value the matching certifiably achieves."""
    rows = np.flatnonzero(row_match >= 0)
    d = D[rows, row_match[rows]]
    return float(np.partition(d, need - 1)[need - 1])


def _augment(
    D: np.ndarray, t: float, row_match: np.ndarray, col_match: np.ndarray, want: int
) -> tuple[float, int]:
    """Grow the matching (a subset of G_t) along minimax augmenting paths, in place.

    A Dijkstra search from every unmatched row at once labels each column with the smallest
    possible largest edge on an alternating path reaching it (labels below t count as t: those
    edges are free). The first level at which an unmatched column is reached is the smallest t'
    ≥ t for which G_t' holds a larger matching (Berge: a matching is maximum iff it has no
    augmenting path). All columns reachable at that level are collected and up to ``want``
    vertex-disjoint paths among them applied.

    Returns
    -------
    (t', applied) : tuple of float and int
        The new threshold and the number of paths applied (≥ 1).

    Notes
    -----
    O(N·M) element operations: each matched row is expanded once, as part of a batch.
    """
    k = D.shape[1]
    cols = np.arange(k)
    free_rows = np.flatnonzero(row_match < 0)
    block = D[free_rows]
    best = block.argmin(axis=0)
    label = np.maximum(block[best, cols], t)
    pred = free_rows[best]
    scanned = np.zeros(k, dtype=bool)
    while True:
        level = float(label.min())
        if not math.isfinite(level):  # every column scanned: no augmenting path exists
            raise DistPrivacyError("internal error: no augmenting path; please report this")
        ends: list[np.ndarray] = []
        while True:  # breadth-first closure of the columns reachable at this level
            batch = np.flatnonzero(label <= level)
            if batch.size == 0:
                break
            scanned[batch] = True
            label[batch] = np.inf
            rows = col_match[batch]
            ends.append(batch[rows < 0])
            rows = rows[rows >= 0]
            if rows.size == 0:
                continue
            block = D[rows]
            best = block.argmin(axis=0)
            new = np.maximum(block[best, cols], level)
            better = ~scanned & (new < label)
            label[better] = new[better]
            pred[better] = rows[best[better]]
        reached = np.concatenate(ends)
        if reached.size:
            break
    used: set[int] = set()
    applied = 0
    for end in reached.tolist():
        path: list[tuple[int, int]] = []
        col = end
        while True:
            row = int(pred[col])
            if row in used:
                path = []
                break
            path.append((row, col))
            col = int(row_match[row])
            if col < 0:
                break
        if not path:
            continue
        for row, col in path:
            used.add(row)
            row_match[row] = col
            col_match[col] = row
        applied += 1
        if applied == want:
            break
    return level, applied


def _bottleneck_matching(D: np.ndarray, need: int, lb: float) -> float:
    """Smallest t such that G_t has a matching of ``need`` pairs (square D, uniform masses).

    ``lb`` must be a certified lower bound. A maximum matching at the bound comes from one
    assignment; while it is more than ``_AUGMENT_MAX`` short, assignments at the median of the
    remaining candidate distances bisect the range (a feasible one lowers the upper end to the
    bottleneck it achieves); minimax augmenting paths close the rest exactly.
    """
    t = lb
    row_match, col_match = _assignment_matching(D, t)
    size = int(np.count_nonzero(row_match >= 0))
    hi = math.inf
    while need - size > _AUGMENT_MAX:
        window = D[(D > t) & (D < hi)]
        if window.size == 0:  # nothing between an infeasible t and a feasible hi
            if math.isfinite(hi):
                return hi
            raise DistPrivacyError("internal error: no feasible threshold; please report this")
        probe = float(np.partition(window, window.size // 2)[window.size // 2])
        rm, cm = _assignment_matching(D, probe)
        got = int(np.count_nonzero(rm >= 0))
        if got >= need:
            hi = _matched_quantile(D, rm, need)
        else:
            t, row_match, col_match, size = probe, rm, cm, got
    while size < need:
        t, applied = _augment(D, t, row_match, col_match, need - size)
        size += applied
    return _matched_quantile(D, row_match, need)


def _flow_value(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> int:
    """Maximum integer mass movable along allowed pairs: source → x-atoms (capacity a) →
    allowed pairs (unbounded) → y-atoms (capacity b) → sink (Dinic)."""
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
    if masses is None:
        return int(np.count_nonzero(_assignment_matching(D, t)[0] >= 0))
    return _flow_value(D <= t, *masses)


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


def _bottleneck(
    X: np.ndarray, Y: np.ndarray, masses: _Masses, need: int, lb: float, limit: int
) -> float:
    """Smallest pairwise distance t with ``need`` units of mass movable within t (``lb`` a
    certified lower bound, e.g. 0)."""
    per_pair = _BYTES_PER_PAIR if masses is None else _FLOW_BYTES_PER_PAIR
    _check_memory(X.shape[0], Y.shape[0], limit, per_pair)
    D = _pairwise_l1(X, Y)
    lb = max(lb, _nearest_lower_bound(D, masses, need))
    if masses is None:
        return _bottleneck_matching(D, need, lb)
    candidates = np.unique(D[D >= lb])
    return _smallest_feasible(candidates, lambda t: _flow_value(D <= t, *masses) >= need)


def _marginal_lower_bound(
    X: np.ndarray,
    Y: np.ndarray,
    masses: _Masses,
    sorted_x: np.ndarray | None = None,
    sorted_y: np.ndarray | None = None,
) -> float:
    """max over coordinates of the 1-D W∞ of the marginals, a lower bound on W∞ (L1 ≥ each
    coordinate's difference, and a coupling's projection couples the marginals)."""
    if masses is None:
        xs = np.sort(X, axis=0) if sorted_x is None else sorted_x
        ys = np.sort(Y, axis=0) if sorted_y is None else sorted_y
        return float(np.max(np.abs(xs - ys)))
    return max(_winf_1d(X[:, k], Y[:, k], masses) for k in range(X.shape[1]))


def _radius(
    X: np.ndarray,
    Y: np.ndarray,
    masses: _Masses,
    delta: float,
    limit: int,
    sorted_x: np.ndarray | None = None,
    sorted_y: np.ndarray | None = None,
) -> float:
    """Smallest W with (W, δ)-closeness (W∞ for δ = 0) of validated (N, m) / (M, m) atoms."""
    total = _total(masses, X.shape[0])
    if delta == 0.0 and X.shape[1] == 1:
        return _winf_1d(X[:, 0], Y[:, 0], masses)
    need = total if delta == 0.0 else _required_units(delta, total)
    if masses is not None and total <= _EXPAND_FACTOR * max(X.shape[0], Y.shape[0]):
        # Small integer masses: one unit atom per unit of mass, so the assignment search
        # applies (an integral flow of value ``need`` is a matching of ``need`` unit atoms).
        X, Y = np.repeat(X, masses[0], axis=0), np.repeat(Y, masses[1], axis=0)
        masses = sorted_x = sorted_y = None
    lb = 0.0 if delta else _marginal_lower_bound(X, Y, masses, sorted_x, sorted_y)
    return _bottleneck(X, Y, masses, need, lb, limit)


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def wasserstein_inf(
    x: ArrayLike,
    y: ArrayLike,
    *,
    x_weights: ArrayLike | None = None,
    y_weights: ArrayLike | None = None,
    memory_limit: int = MEMORY_LIMIT,
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
    memory_limit : int, optional
        Bound in bytes on the arrays of a bottleneck search (32 bytes per pair of atoms, 64
        with max flow); larger problems are refused before allocating. Default
        :data:`MEMORY_LIMIT` (2 GiB). W∞ of one-dimensional inputs needs no matrix.

    Returns
    -------
    float
        W∞(μ, ν); exactly one of the pairwise distances ``||x_i − y_j||_1``.

    Raises
    ------
    DistPrivacyError
        Empty, non-finite or mismatched inputs; invalid or non-rational weights; exact integer
        masses too large for the max-flow solver (inputs of shape (N, m) with weights); or a
        bottleneck search above ``memory_limit``.

    Notes
    -----
    In one dimension (shape ``(N,)`` or ``(N, 1)``) the monotone (quantile) coupling, which is
    optimal on the line: O(N log N). Otherwise the bottleneck search of the module docstring:
    assignments and minimax augmenting paths for uniform weights with N == M, integer max flow
    otherwise.
    """
    limit = _check_limit(memory_limit)
    X, Y, xw, yw, one_d = _prepare(x, y, x_weights, y_weights)
    masses = _masses(xw, yw, X.shape[0], Y.shape[0], _QUANTILE_LIMIT if one_d else _FLOW_LIMIT)
    return _radius(X, Y, masses, 0.0, limit)


def closeness_radius(
    x: ArrayLike,
    y: ArrayLike,
    delta: float,
    *,
    x_weights: ArrayLike | None = None,
    y_weights: ArrayLike | None = None,
    memory_limit: int = MEMORY_LIMIT,
) -> float:
    """Smallest W such that the two distributions are (W, δ)-close (Definition 3.2).

    μ and ν are (W, δ)-close (Chen & Ohrimenko 2023, Definition 3.2) if some coupling
    γ ∈ Γ(μ, ν) puts mass ≥ 1 − δ on pairs with ``||x − y||_1 ≤ W``; Theorem 3.2 then gives
    (ε, δ)-distribution privacy with Laplace noise of scale W/ε. δ = 0 gives W∞ (Definition 3.1).

    Parameters
    ----------
    x, y, x_weights, y_weights, memory_limit
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
    The bottleneck search of the module docstring with target mass ⌈(1 − δ)·total⌉ (exact
    integers), started at the nearest-atom lower bound: the atoms whose nearest atom on the
    other side is further than W hold at most a δ share of the mass.
    """
    delta = _check_delta(delta)
    if delta == 0.0:
        return wasserstein_inf(
            x, y, x_weights=x_weights, y_weights=y_weights, memory_limit=memory_limit
        )
    limit = _check_limit(memory_limit)
    X, Y, xw, yw, _ = _prepare(x, y, x_weights, y_weights)
    masses = _masses(xw, yw, X.shape[0], Y.shape[0], _FLOW_LIMIT)
    return _radius(X, Y, masses, delta, limit)


def closeness_radii(
    samples: Sequence[ArrayLike],
    pairs: Sequence[tuple[int, int]],
    delta: float = 0.0,
    *,
    progress: ProgressCallback | None = None,
    memory_limit: int = MEMORY_LIMIT,
) -> list[float]:
    """:func:`closeness_radius` (W∞ for δ = 0) for many pairs of sample sets, sharing per-set work.

    The Wasserstein mechanisms (Chen & Ohrimenko 2023, Theorems 3.1 and 3.2) need the sup over
    the protected pairs Ψ of W∞(f_θi, f_θj) or of the (W, δ)-closeness radius. Each sample set is
    validated, and for W∞ its coordinates sorted, once; the cost then grows linearly in the
    number of pairs.

    Parameters
    ----------
    samples : sequence of array_like, each of shape (N_i,) or (N_i, m)
        Uniformly weighted samples, one set per θ, all in the same dimension m.
    pairs : sequence of (int, int)
        Index pairs into ``samples``; each pair is computed as given (dedupe beforehand).
    delta : float, optional
        Exempt mass in [0, 1), read as in :func:`closeness_radius`; 0 (default) gives W∞.
    progress : callable (done, total), optional
        Called after each pair, e.g. to drive a progress bar.
    memory_limit : int, optional
        As in :func:`wasserstein_inf`, per pair.

    Returns
    -------
    list of float
        One exact radius per pair, in order; each equal to ``closeness_radius(samples[i],
        samples[j], delta)``.

    Raises
    ------
    DistPrivacyError
        As in :func:`closeness_radius`, or a pair indexes outside ``samples``.
    """
    delta = _check_delta(delta)
    limit = _check_limit(memory_limit)
    points = [_as_points(s, f"samples[{i}]") for i, s in enumerate(samples)]
    sets = [p.reshape(p.shape[0], -1) for p in points]
    sorted_sets: dict[int, np.ndarray] = {}
    out: list[float] = []
    for done, (i, j) in enumerate(pairs, start=1):
        if not (0 <= i < len(sets) and 0 <= j < len(sets)):
            raise DistPrivacyError(
                f"pair ({i}, {j}) indexes outside the {len(sets)} sample sets; "
                "pass indices into samples"
            )
        X, Y = sets[i], sets[j]
        if X.shape[1] != Y.shape[1]:
            raise DistPrivacyError(
                f"samples[{i}] has dimension {X.shape[1]} but samples[{j}] has dimension "
                f"{Y.shape[1]}; all must hold samples of the same statistic F in R^m"
            )
        one_d = points[i].ndim == 1 and points[j].ndim == 1
        masses = _masses(
            None, None, X.shape[0], Y.shape[0], _QUANTILE_LIMIT if one_d else _FLOW_LIMIT
        )
        sx = sy = None
        if delta == 0.0 and masses is None and X.shape[1] > 1:
            for idx in (i, j):
                if idx not in sorted_sets:
                    sorted_sets[idx] = np.sort(sets[idx], axis=0)
            sx, sy = sorted_sets[i], sorted_sets[j]
        out.append(_radius(X, Y, masses, delta, limit, sx, sy))
        if progress is not None:
            progress(done, len(pairs))
    return out


def are_close(
    x: ArrayLike,
    y: ArrayLike,
    W: float,
    delta: float,
    *,
    x_weights: ArrayLike | None = None,
    y_weights: ArrayLike | None = None,
    memory_limit: int = MEMORY_LIMIT,
) -> bool:
    """Whether the two distributions are (W, δ)-close (Definition 3.2).

    True iff some coupling γ ∈ Γ(μ, ν) puts mass ≥ 1 − δ on pairs with ``||x − y||_1 ≤ W``
    (Chen & Ohrimenko 2023, Definition 3.2); with δ = 0 this is ``W∞(μ, ν) ≤ W``
    (Definition 3.1).

    Parameters
    ----------
    x, y, x_weights, y_weights, memory_limit
        As in :func:`wasserstein_inf`.
    W : float
        Distance bound (L1). A negative W is never satisfied.
    delta : float
        Exempt mass, in [0, 1); read as in :func:`closeness_radius`.

    Returns
    -------
    bool
        Exactly ``closeness_radius(x, y, delta) <= W``, decided with one assignment (uniform
        weights, N == M) or one max flow; W∞ in one dimension by sorting.

    Raises
    ------
    DistPrivacyError
        As in :func:`closeness_radius`, or W is NaN or not a number.
    """
    delta = _check_delta(delta)
    limit = _check_limit(memory_limit)
    try:
        bound = float(W)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(f"W must be a number, got {W!r}") from exc
    if math.isnan(bound):
        raise DistPrivacyError("W is NaN; pass a distance bound W ≥ 0")
    X, Y, xw, yw, one_d = _prepare(x, y, x_weights, y_weights)
    masses = _masses(
        xw, yw, X.shape[0], Y.shape[0], _QUANTILE_LIMIT if one_d and delta == 0 else _FLOW_LIMIT
    )
    if bound < 0:
        return False
    if delta == 0.0 and X.shape[1] == 1:
        return _winf_1d(X[:, 0], Y[:, 0], masses) <= bound
    need = _required_units(delta, _total(masses, X.shape[0]))
    per_pair = _BYTES_PER_PAIR if masses is None else _FLOW_BYTES_PER_PAIR
    _check_memory(X.shape[0], Y.shape[0], limit, per_pair)
    return _movable_mass(_pairwise_l1(X, Y), bound, masses) >= need
