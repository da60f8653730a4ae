"""The bottleneck search's building blocks: pairwise L1 distances, lower bounds, maximum
matchings (one 0/1 assignment, minimax augmenting paths) and integer maximum flows on the
bipartite graph G_t of pairs within distance t (see :mod:`distprivacy.distances`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import maximum_flow

from distprivacy.distances._inputs import _Masses, _total
from distprivacy.exceptions import DistPrivacyError

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
