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

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from distprivacy.distances._inputs import (
    _BYTES_PER_PAIR,
    _FLOW_BYTES_PER_PAIR,
    _FLOW_LIMIT,
    _QUANTILE_LIMIT,
    _as_points,
    _check_delta,
    _check_limit,
    _check_memory,
    _Masses,
    _masses,
    _prepare,
    _required_units,
    _total,
    _winf_1d,
)
from distprivacy.distances._matching import (
    _assignment_matching,
    _augment,
    _flow_value,
    _matched_quantile,
    _movable_mass,
    _nearest_lower_bound,
    _pairwise_l1,
    _smallest_feasible,
)
from distprivacy.exceptions import DistPrivacyError

__all__ = ["MEMORY_LIMIT", "are_close", "closeness_radii", "closeness_radius", "wasserstein_inf"]

MEMORY_LIMIT = 2 << 30
"""Default bound in bytes on the matrices of one bottleneck search: 2 GiB (8,192 atoms a side)."""

ProgressCallback = Callable[[int, int], None]

_AUGMENT_MAX = 24  # deficits up to this are closed by augmenting paths, larger ones bisected
_EXPAND_FACTOR = 2  # integer masses totalling ≤ this × atoms are split into unit atoms

# Validation, exact masses, the 1-D path and the memory bound live in ``_inputs``; the matching
# and flow primitives in ``_matching``. The searches below read ``_AUGMENT_MAX`` and
# ``_EXPAND_FACTOR`` from this module (tests vary them).


# ---------------------------------------------------------------------------------------------
# Bottleneck search on the bipartite graph of pairs within distance t
# ---------------------------------------------------------------------------------------------


#: One search's ladder: (t, matching size, by an augmenting path) after its first assignment
#: and after each later step (:func:`_bottleneck_matching`).
_Ladder = list[tuple[float, int, bool]]

_LADDERS: OrderedDict[bytes, _Ladder] = OrderedDict()
_LADDERS_KEPT = 16
_LADDERS_LOCK = threading.Lock()


def _ladder_key(X: np.ndarray, Y: np.ndarray) -> bytes:
    """The atoms' exact content (shapes and float64 bytes): equal keys give the same D."""
    h = hashlib.sha256()
    for A in (X, Y):
        h.update(repr(A.shape).encode())
        h.update(np.ascontiguousarray(A, dtype=np.float64).tobytes())
    return h.digest()


def _from_ladder(ladder: _Ladder, need: int) -> float | None:
    """The smallest t with a matching of ``need`` pairs in G_t, read from another search's
    ladder on the same D when it settles it (None otherwise).

    The first rung (t₀, s₀) holds a maximum matching of G_t₀ (one assignment): ν(t) ≤ s₀ for
    t ≤ t₀, ν(t) the maximum matching's size. A rung reached by augmenting paths from (t, s)
    is (t', s') with t' the least threshold ≥ t at which a matching larger than s exists
    (Berge), so ν(t) ≤ s for every t < t' (by induction over the rungs, those below t
    included). Hence, for ``need`` > s₀, if the first rung with s' ≥ ``need`` was reached by
    augmenting paths, ν(t) < ``need`` for t < t' and ν(t') ≥ ``need``: t' is the answer, the
    value the full search returns (both are the least such pairwise distance of the same D).
    A rung reached by a bisection's assignment does not bound ν below its t: not settled."""
    if not ladder or need <= ladder[0][1]:
        return None
    for t, size, augmented in ladder[1:]:
        if size >= need:
            return t if augmented else None
    return None


def _bottleneck_matching(
    D: np.ndarray, need: int, lb: float, ladder: _Ladder | None = None
) -> float:
    """Smallest t such that G_t has a matching of ``need`` pairs (square D, uniform masses).

    ``lb`` must be a certified lower bound. A maximum matching at the bound comes from one
    assignment; while it is more than ``_AUGMENT_MAX`` short, assignments at the median of the
    remaining candidate distances bisect the range (a feasible one lowers the upper end to the
    bottleneck it achieves); minimax augmenting paths close the rest exactly. ``ladder``, when
    given, receives (t, size, by augmenting paths) after the first assignment and each later
    step (:func:`_from_ladder` reads it).
    """
    t = lb
    row_match, col_match = _assignment_matching(D, t)
    size = int(np.count_nonzero(row_match >= 0))
    rungs: _Ladder = [(t, size, False)]
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
            rungs.append((t, size, False))
    while size < need:
        t, applied = _augment(D, t, row_match, col_match, need - size)
        size += applied
        rungs.append((t, size, True))
    if ladder is not None:
        ladder.extend(rungs)
    return _matched_quantile(D, row_match, need)


def _bottleneck(
    X: np.ndarray, Y: np.ndarray, masses: _Masses, need: int, lb: float, limit: int
) -> float:
    """Smallest pairwise distance t with ``need`` units of mass movable within t (``lb`` a
    certified lower bound, e.g. 0)."""
    per_pair = _BYTES_PER_PAIR if masses is None else _FLOW_BYTES_PER_PAIR
    _check_memory(X.shape[0], Y.shape[0], limit, per_pair)
    if masses is None:
        # A search on the same atoms (W∞ before the closeness radius of the same samples, as
        # the Wasserstein mechanisms ask) may already settle this one (_from_ladder).
        key = _ladder_key(X, Y)
        with _LADDERS_LOCK:
            known = _LADDERS.get(key)
        if known is not None and (found := _from_ladder(known, need)) is not None:
            return found
    D = _pairwise_l1(X, Y)
    lb = max(lb, _nearest_lower_bound(D, masses, need))
    if masses is None:
        ladder: _Ladder = []
        found = _bottleneck_matching(D, need, lb, ladder)
        with _LADDERS_LOCK:
            _LADDERS[key] = ladder
            _LADDERS.move_to_end(key)
            while len(_LADDERS) > _LADDERS_KEPT:
                _LADDERS.popitem(last=False)
        return found
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
