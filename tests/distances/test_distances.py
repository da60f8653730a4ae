"""Tests of distprivacy.distances: exact W∞ (Definition 3.1) and (W, δ)-closeness (Definition 3.2)
against the paper's Figure 1 and an independent linear program over the coupling polytope."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.sparse import coo_array, csr_array, vstack
from scipy.sparse.csgraph import maximum_bipartite_matching

from distprivacy import distances
from distprivacy.distances import are_close, closeness_radii, closeness_radius, wasserstein_inf
from distprivacy.exceptions import DistPrivacyError

# Figure 1 of Chen & Ohrimenko (2023): atoms 1, 2, 3, 100.
ATOMS = np.array([1.0, 2.0, 3.0, 100.0])
MU = np.array([0.6, 0.2, 0.0, 0.2])
NU = np.array([0.4, 0.3, 0.2, 0.1])

DELTAS = (0.1, 0.25, 0.3, 0.5)


# ---------------------------------------------------------------------------------------------
# Independent brute force: linear programs on the coupling polytope (HiGHS)
# ---------------------------------------------------------------------------------------------


def _as_2d(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v.reshape(v.shape[0], -1)


def _probabilities(w: np.ndarray | None, n: int) -> np.ndarray:
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    return w / w.sum()


def _edge_constraints(mask: np.ndarray) -> tuple[np.ndarray, object]:
    """Variables = allowed pairs (i, j); rows = x-marginal sums then y-marginal sums."""
    n, k = mask.shape
    rows, cols = np.nonzero(mask)
    e = np.arange(rows.size)
    ones = np.ones(rows.size)
    a_x = coo_array((ones, (rows, e)), shape=(n, rows.size))
    a_y = coo_array((ones, (cols, e)), shape=(k, rows.size))
    return rows, vstack([a_x, a_y]).tocsr()


def _lp_coupling_exists(D: np.ndarray, p: np.ndarray, q: np.ndarray, t: float) -> bool:
    """Is there a coupling of p and q supported on pairs with distance ≤ t?"""
    rows, A = _edge_constraints(D <= t)
    if rows.size == 0:
        return False
    res = linprog(np.zeros(rows.size), A_eq=A, b_eq=np.r_[p, q], bounds=(0, None), method="highs")
    return res.status == 0


def _lp_max_mass(D: np.ndarray, p: np.ndarray, q: np.ndarray, t: float) -> float:
    """Largest mass a coupling of p and q can put on pairs with distance ≤ t (a sub-coupling on
    those pairs always extends to a full coupling)."""
    rows, A = _edge_constraints(D <= t)
    if rows.size == 0:
        return 0.0
    res = linprog(-np.ones(rows.size), A_ub=A, b_ub=np.r_[p, q], bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


def _smallest(cands: np.ndarray, ok) -> float:
    lo, hi = 0, cands.size - 1
    assert ok(cands[hi])
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(cands[mid]):
            hi = mid
        else:
            lo = mid + 1
    return float(cands[lo])


def _brute(x, y, xw=None, yw=None, delta: float = 0.0) -> float:
    X, Y = _as_2d(x), _as_2d(y)
    D = np.abs(X[:, None, :] - Y[None, :, :]).sum(axis=-1)
    p, q = _probabilities(xw, X.shape[0]), _probabilities(yw, Y.shape[0])
    cands = np.unique(D)
    if delta == 0.0:
        return _smallest(cands, lambda t: _lp_coupling_exists(D, p, q, t))
    return _smallest(cands, lambda t: _lp_max_mass(D, p, q, t) >= 1.0 - delta - 1e-9)


def _points(rng: np.random.Generator, n: int, m: int | None, ties: bool) -> np.ndarray:
    shape = (n,) if m is None else (n, m)
    if ties:
        return rng.integers(0, 4, size=shape).astype(float)
    return rng.normal(size=shape)


def _instance(seed: int, m: int | None, kind: str):
    """A small random instance: kind is 'equal' (uniform, N == M), 'unequal' (uniform, N != M)
    or 'weighted' (integer counts / 10, some of them zero)."""
    rng = np.random.default_rng(seed)
    ties = seed % 2 == 0
    n = int(rng.integers(1, 7))
    k = n if kind == "equal" else int(rng.integers(1, 7))
    if kind == "unequal" and k == n:
        k = n + 1
    x, y = _points(rng, n, m, ties), _points(rng, k, m, ties)
    xw = yw = None
    if kind == "weighted":
        xw = rng.integers(0, 6, size=n) / 10
        yw = rng.integers(0, 6, size=k) / 10
        xw[rng.integers(n)] += 0.1
        yw[rng.integers(k)] += 0.1
    return x, y, xw, yw


CASES = [
    (seed, m, kind)
    for m in (None, 1, 2, 3)
    for kind in ("equal", "unequal", "weighted")
    for seed in range(8)
]


def _case_id(case) -> str:
    seed, m, kind = case
    return f"{'1d' if m is None else f'm{m}'}-{kind}-{seed}"


# ---------------------------------------------------------------------------------------------
# Figure 1
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("two_d", [False, True], ids=["1d", "2d"])
def test_figure1(two_d: bool) -> None:
    pts = np.c_[ATOMS, np.zeros(4)] if two_d else ATOMS
    kw = {"x_weights": MU, "y_weights": NU}
    assert wasserstein_inf(pts, pts, **kw) == 97.0
    assert closeness_radius(pts, pts, 0.0, **kw) == 97.0
    assert closeness_radius(pts, pts, 0.1, **kw) == 1.0
    assert are_close(pts, pts, 1, 0.1, **kw)
    assert not are_close(pts, pts, 0.99, 0.1, **kw)
    assert are_close(pts, pts, 97, 0.0, **kw)
    assert not are_close(pts, pts, 96.99, 0.0, **kw)


def test_figure1_integer_counts_and_sampled_form() -> None:
    # Same distributions as integer counts, and as explicit unweighted samples (10 each).
    assert wasserstein_inf(ATOMS, ATOMS, x_weights=[6, 2, 0, 2], y_weights=[4, 3, 2, 1]) == 97.0
    xs = np.repeat(ATOMS, (MU * 10).round().astype(int))
    ys = np.repeat(ATOMS, (NU * 10).round().astype(int))
    assert wasserstein_inf(xs, ys) == 97.0
    assert wasserstein_inf(xs[:, None], ys[:, None]) == 97.0
    assert closeness_radius(xs, ys, 0.1) == 1.0
    assert closeness_radius(xs, ys, 0.3) == 0.0


# ---------------------------------------------------------------------------------------------
# Against the linear-programming brute force
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_winf_matches_lp(case) -> None:
    x, y, xw, yw = _instance(*case)
    got = wasserstein_inf(x, y, x_weights=xw, y_weights=yw)
    assert got == pytest.approx(_brute(x, y, xw, yw), abs=1e-12, rel=0)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_closeness_matches_lp(case) -> None:
    x, y, xw, yw = _instance(*case)
    for delta in DELTAS:
        got = closeness_radius(x, y, delta, x_weights=xw, y_weights=yw)
        want = _brute(x, y, xw, yw, delta)
        assert got == pytest.approx(want, abs=1e-12, rel=0), delta
        assert are_close(x, y, got, delta, x_weights=xw, y_weights=yw)
        below = np.nextafter(got, -np.inf)
        assert not are_close(x, y, below, delta, x_weights=xw, y_weights=yw)


# ---------------------------------------------------------------------------------------------
# Consistency between paths and structural properties
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_1d_paths_agree_with_md_paths(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    x, y = rng.normal(size=60), rng.normal(0.3, 1.2, size=60)

    def md(v: np.ndarray) -> np.ndarray:  # same L1 distances, through the m-D search
        return np.c_[v, np.zeros_like(v)]

    # sort path vs assignment + augmenting paths; (N, 1) columns take the sort path too
    assert wasserstein_inf(x, y) == wasserstein_inf(md(x), md(y))
    assert wasserstein_inf(x, y) == wasserstein_inf(x[:, None], y[:, None])
    # quantile path vs max flow, unequal sizes and weights
    y2 = y[:37]
    assert wasserstein_inf(x, y2) == wasserstein_inf(md(x), md(y2))
    xw, yw = rng.integers(0, 5, size=60), rng.integers(1, 4, size=37)
    assert wasserstein_inf(x, y2, x_weights=xw, y_weights=yw) == wasserstein_inf(
        md(x), md(y2), x_weights=xw, y_weights=yw
    )


def test_uniform_weights_given_explicitly_match_default() -> None:
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(30, 2)), rng.normal(size=(30, 2))
    w = np.full(30, 0.3)
    assert wasserstein_inf(x, y, x_weights=w, y_weights=np.ones(30)) == wasserstein_inf(x, y)
    # duplicating every atom of x does not change its distribution
    assert wasserstein_inf(np.r_[x, x], y) == wasserstein_inf(x, y)


@pytest.mark.parametrize("m", [1, 3])
def test_flow_path_agrees_with_matching_path(m: int) -> None:
    # Duplicating y gives the same distribution with N != M, so the max-flow path must agree
    # with the Hopcroft-Karp path on the original data.
    rng = np.random.default_rng(31 + m)
    x, y = rng.normal(size=(200, m)), rng.laplace(size=(200, m))
    yy = np.r_[y, y]
    assert wasserstein_inf(x, yy) == wasserstein_inf(x, y)
    for delta in (0.01, 0.1, 0.37):
        assert closeness_radius(x, yy, delta) == closeness_radius(x, y, delta)
    counts = np.full(200, 2)
    assert closeness_radius(x, y, 0.1, y_weights=counts) == closeness_radius(x, y, 0.1)


def test_single_points() -> None:
    assert wasserstein_inf([1.5], [-2.0]) == 3.5
    assert wasserstein_inf([[1.0, 2.0]], [[0.0, 0.0]]) == 3.0
    assert closeness_radius([[1.0, 2.0]], [[0.0, 0.0]], 0.5) == 3.0
    assert wasserstein_inf([1.0], [0.0, 3.0]) == 2.0


@pytest.mark.parametrize("m", [None, 2, 4])
def test_symmetry_identity_translation(m: int | None) -> None:
    rng = np.random.default_rng(11)
    shape = (40,) if m is None else (40, m)
    x, y = rng.normal(size=shape), rng.standard_t(3, size=(35, *shape[1:]))
    xw = rng.integers(1, 6, size=40)
    assert wasserstein_inf(x, y) == wasserstein_inf(y, x)
    assert wasserstein_inf(x, y, x_weights=xw) == wasserstein_inf(y, x, y_weights=xw)
    assert closeness_radius(x, y, 0.1) == closeness_radius(y, x, 0.1)
    assert wasserstein_inf(x, x) == 0.0
    assert wasserstein_inf(x, rng.permutation(x)) == 0.0
    c = np.array(0.75) if m is None else np.linspace(-1.0, 2.0, m)
    assert wasserstein_inf(x, x + c) == pytest.approx(np.abs(c).sum(), rel=1e-12, abs=1e-12)


def test_closeness_radius_non_increasing_in_delta() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(50, 2)), rng.standard_t(2, size=(50, 2))
    xs, ys, ws = rng.normal(size=30), rng.normal(size=23), rng.integers(0, 9, size=23)
    deltas = np.linspace(0.0, 0.95, 20)
    for args, kw in [((x, y), {}), ((xs, ys), {"y_weights": ws})]:
        radii = [closeness_radius(*args, d, **kw) for d in deltas]
        assert radii[0] == wasserstein_inf(*args, **kw)
        assert all(a >= b for a, b in pairwise(radii))
        # the m-D closeness search with a negligible delta recovers W∞ too
        assert closeness_radius(*args, 1e-12, **kw) == radii[0]


def test_moderate_size_runs() -> None:
    rng = np.random.default_rng(2023)
    x, y = rng.normal(size=(1000, 5)), rng.normal(0.1, 1.0, size=(1000, 5))
    w = wasserstein_inf(x, y)
    assert w > 0
    assert are_close(x, y, w, 0.0)
    assert not are_close(x, y, np.nextafter(w, 0.0), 0.0)
    r = closeness_radius(x, y, 0.05)
    assert 0 < r <= w


# ---------------------------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------------------------

GOOD = np.arange(4.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"x": np.array([])}, "empty"),
        ({"y": np.empty((0, 2))}, "empty"),
        ({"x": [0.0, np.nan, 1.0, 2.0]}, "NaN or infinite"),
        ({"y": [0.0, np.inf, 1.0, 2.0]}, "NaN or infinite"),
        ({"x": np.zeros((4, 2, 2))}, "shape"),
        ({"x": ["a", "b"]}, "numeric"),
        ({"x": np.zeros((4, 2)), "y": np.zeros((4, 3))}, "dimension"),
        ({"x": np.zeros((4, 2))}, "dimension"),
        ({"x_weights": [1.0, -1.0, 1.0, 1.0]}, "negative"),
        ({"y_weights": [1.0, 1.0, 1.0]}, "one weight per point"),
        ({"x_weights": np.zeros(4)}, "all zero"),
        ({"y_weights": [1.0, np.nan, 1.0, 1.0]}, "NaN or infinite"),
        ({"x_weights": [0.1234567891234, 1.0, 1.0, 1.0]}, "rational"),
        ({"x_weights": [1e-7 / 3, 1.0, 1.0, 1.0]}, "rational"),
        (
            {
                "x": GOOD[:, None],
                "y": GOOD[:, None],
                "x_weights": [1, 1e10, 1, 1],
                "y_weights": [1, 1, 1, 2],
            },
            "limit",
        ),
    ],
)
def test_bad_inputs_raise(kwargs: dict, match: str) -> None:
    args = {"x": GOOD, "y": GOOD, **kwargs}
    x, y = args.pop("x"), args.pop("y")
    with pytest.raises(DistPrivacyError, match=match):
        wasserstein_inf(np.asarray(x, dtype=object) if match == "numeric" else x, y, **args)
    with pytest.raises(DistPrivacyError, match=match):
        closeness_radius(x, y, 0.1, **args)
    with pytest.raises(DistPrivacyError, match=match):
        are_close(x, y, 1.0, 0.1, **args)


@pytest.mark.parametrize("delta", [-0.1, 1.0, 1.5, float("nan"), "x"])
def test_bad_delta_raises(delta) -> None:
    with pytest.raises(DistPrivacyError, match="delta"):
        closeness_radius(GOOD, GOOD, delta)
    with pytest.raises(DistPrivacyError, match="delta"):
        are_close(GOOD, GOOD, 1.0, delta)


def test_bad_w_raises_and_negative_w_is_false() -> None:
    with pytest.raises(DistPrivacyError, match="W"):
        are_close(GOOD, GOOD, float("nan"), 0.1)
    with pytest.raises(DistPrivacyError, match="W"):
        are_close(GOOD, GOOD, "far", 0.1)
    assert not are_close(GOOD, GOOD, -1.0, 0.0)
    assert are_close(GOOD, GOOD + 100, float("inf"), 0.0)


# ---------------------------------------------------------------------------------------------
# The bottleneck search (assignments + minimax augmenting paths) against independent references
# ---------------------------------------------------------------------------------------------


def _matching_reference(x, y, delta: float = 0.0) -> float:
    """Bisection over the sorted distinct distances with Hopcroft–Karp (uniform, N == M)."""
    X, Y = _as_2d(x), _as_2d(y)
    D = np.abs(X[:, None, :] - Y[None, :, :]).sum(axis=-1)
    need = closeness_need(X.shape[0], delta)

    def ok(t: float) -> bool:
        graph = csr_array((D <= t).astype(np.int8))
        return int(np.count_nonzero(maximum_bipartite_matching(graph) >= 0)) >= need

    return _smallest(np.unique(D), ok)


def closeness_need(n: int, delta: float) -> int:
    return max(1, math.ceil((1 - Fraction(delta).limit_denominator(10**12)) * n))


def _tied(rng: np.random.Generator, n: int, m: int, hi: int) -> np.ndarray:
    return rng.integers(0, hi, size=(n, m)).astype(float)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.sampled_from([None, 1, 2, 3]),
    st.booleans(),
    st.sampled_from([0.0, 0.1, 0.25, 0.5]),
    st.integers(0, 2**32 - 1),
)
def test_random_small_inputs_match_lp(n, k, m, weighted, delta, seed) -> None:
    """Ties, duplicates, unequal sizes, weights (some zero) and δ > 0 against the LP."""
    rng = np.random.default_rng(seed)
    shape = (lambda r: (r,)) if m is None else (lambda r: (r, m))
    x = rng.integers(0, 3, size=shape(n)).astype(float)
    y = rng.integers(0, 3, size=shape(k)).astype(float)
    xw = yw = None
    if weighted:
        xw, yw = rng.integers(0, 4, size=n), rng.integers(0, 4, size=k)
        xw[rng.integers(n)] += 1
        yw[rng.integers(k)] += 1
    got = closeness_radius(x, y, delta, x_weights=xw, y_weights=yw)
    assert got == _brute(x, y, xw, yw, delta)
    assert are_close(x, y, got, delta, x_weights=xw, y_weights=yw)
    assert not are_close(x, y, np.nextafter(got, -np.inf), delta, x_weights=xw, y_weights=yw)


@pytest.mark.parametrize("augment_max", [0, 24, 10**6], ids=["bisect", "default", "augment"])
@pytest.mark.parametrize("seed", range(6))
def test_medium_ties_match_matching_reference(monkeypatch, augment_max: int, seed: int) -> None:
    """Integer-valued samples with heavy ties, through both halves of the search (assignment
    bisection only, minimax augmenting paths only, and the default mix)."""
    monkeypatch.setattr(distances, "_AUGMENT_MAX", augment_max)
    rng = np.random.default_rng(900 + seed)
    n, m = int(rng.integers(30, 90)), int(rng.integers(2, 6))
    x, y = _tied(rng, n, m, 4), _tied(rng, n, m, 4) + (seed % 3)
    for delta in (0.0, 0.02, 0.1, 0.3):
        assert closeness_radius(x, y, delta) == _matching_reference(x, y, delta), delta


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c[2] != "equal"], ids=_case_id)
def test_flow_search_matches_lp(monkeypatch, case) -> None:
    """Weighted and unequal-size inputs through integer max flow (small totals are otherwise
    expanded to unit atoms and searched by assignment, as in the other tests)."""
    monkeypatch.setattr(distances, "_EXPAND_FACTOR", 0)
    x, y, xw, yw = _instance(*case)
    for delta in (0.0, *DELTAS):
        got = closeness_radius(x, y, delta, x_weights=xw, y_weights=yw)
        assert got == pytest.approx(_brute(x, y, xw, yw, delta), abs=1e-12, rel=0), delta


def _near_perfect(rng: np.random.Generator, n: int, m: int, short: int) -> tuple:
    """Dense graphs one matching short of perfect just below W∞: y is a permutation of x with
    ``short`` points pushed far along the first coordinate, the rest of it a dense cloud of
    integer points (many equal distances)."""
    x = _tied(rng, n, m, 3)
    y = x[rng.permutation(n)].copy()
    y[:short, 0] += 5 + np.arange(short)
    return x, y


@pytest.mark.parametrize("short", [1, 2, 12])
@pytest.mark.parametrize("m", [2, 5])
def test_dense_near_perfect_graphs(short: int, m: int) -> None:
    rng = np.random.default_rng(40 + short + m)
    x, y = _near_perfect(rng, 150, m, short)
    for delta in (0.0, 0.01, 0.05):
        want = _matching_reference(x, y, delta)
        got = closeness_radius(x, y, delta)
        assert got == want, delta
        assert are_close(x, y, got, delta)
        assert not are_close(x, y, np.nextafter(got, -np.inf), delta)


def test_augmenting_from_empty_matching_reaches_the_bottleneck() -> None:
    """Minimax augmenting paths alone (no assignment) find W∞ from an empty matching at t = 0:
    the threshold only rises as far as the next larger matching needs."""
    rng = np.random.default_rng(77)
    for n, m in [(1, 2), (7, 2), (40, 3), (60, 5)]:
        x, y = _tied(rng, n, m, 5), _tied(rng, n, m, 5)
        D = distances._pairwise_l1(x, y)
        rm, cm = np.full(n, -1), np.full(n, -1)
        t, size = 0.0, 0
        while size < n:
            t, applied = distances._augment(D, t, rm, cm, n - size)
            size += applied
        assert np.array_equal(np.sort(rm), np.arange(n)) and np.array_equal(rm[cm], np.arange(n))
        assert t == _matching_reference(x, y) == D[np.arange(n), rm].max()


def _need_reference(D: np.ndarray, need: int) -> float:
    """The least t with a matching of ``need`` pairs in G_t (Hopcroft–Karp, bisection)."""

    def ok(t: float) -> bool:
        graph = csr_array((D <= t).astype(np.int8))
        return int(np.count_nonzero(maximum_bipartite_matching(graph) >= 0)) >= need

    return _smallest(np.unique(D), ok)


@pytest.mark.parametrize("n, m, shift", [(40, 2, 0.3), (60, 3, 0.1), (150, 5, 0.3), (120, 1, 0.5)])
def test_a_ladder_settles_only_what_it_proves(n: int, m: int, shift: float) -> None:
    """What a W∞ search's ladder settles for a smaller need (a closeness radius on the same
    atoms, :func:`distances._from_ladder`) is that need's exact radius, also past a bisection's
    rungs (150 × 5: an assignment at a median threshold); and the closeness radii read from it
    equal a fresh search's (the cache cleared) and the reference (where W∞'s own search starts
    at its nearest-atom bound, as for the duplicated column, whose ladder settles three)."""
    rng = np.random.default_rng(500 + n + m)
    x, y = rng.normal(size=(n, m)), rng.normal(size=(n, m)) + shift
    if m == 1:  # W∞ of 1-D atoms needs no matching: duplicate the column
        x, y = np.hstack([x, x]), np.hstack([y, y])
    D = distances._pairwise_l1(x, y)
    ladder: list = []
    lb = distances._marginal_lower_bound(x, y, None)
    w_inf = distances._bottleneck_matching(D, n, lb, ladder)
    assert w_inf == _need_reference(D, n)
    settled = [k for k in range(1, n + 1) if distances._from_ladder(ladder, k) is not None]
    assert settled and n in settled
    for need in settled:
        assert distances._from_ladder(ladder, need) == _need_reference(D, need), need
    read = 0
    for delta in (0.01, 0.02, 0.05, 0.2):
        distances._LADDERS.clear()
        fresh = closeness_radius(x, y, delta)
        assert wasserstein_inf(x, y) == w_inf  # leaves its ladder for the next search
        known = distances._LADDERS[distances._ladder_key(x, y)]
        read += distances._from_ladder(known, closeness_need(n, delta)) is not None
        assert closeness_radius(x, y, delta) == fresh == _matching_reference(x, y, delta)
    if m == 1:  # there W∞'s first assignment falls short: radii are read from its ladder
        assert read == 3


def test_one_dimensional_column_uses_the_quantile_path() -> None:
    """(N, 1) inputs: W∞ by sorting, with no distance matrix (a tiny memory limit passes)."""
    rng = np.random.default_rng(3)
    x, y = rng.binomial(500, 0.3, 1000)[:, None] / 5, rng.binomial(500, 0.32, 1000)[:, None] / 5
    want = float(np.abs(np.sort(x[:, 0]) - np.sort(y[:, 0])).max())
    assert wasserstein_inf(x, y, memory_limit=1) == want
    assert are_close(x, y, want, 0.0, memory_limit=1)
    assert closeness_radius(x[:80], y[:80], 0.1) == _matching_reference(x[:80], y[:80], 0.1)


def test_memory_limit_refused_before_allocating() -> None:
    x = np.zeros((100_000, 5))
    with pytest.raises(DistPrivacyError, match=r"needs 298\.0 GiB .* limit of 2\.0 GiB"):
        wasserstein_inf(x, x)
    with pytest.raises(DistPrivacyError, match=r"memory limit of 1\.0 MiB"):
        closeness_radius(np.zeros((400, 2)), np.ones((400, 2)), 0.1, memory_limit=2**20)
    with pytest.raises(DistPrivacyError, match="memory limit"):
        are_close(np.zeros((400, 2)), np.ones((400, 2)), 1.0, 0.0, memory_limit=2**20)
    for bad in (0, -5, 1.5, True, "1G"):
        with pytest.raises(DistPrivacyError, match="memory_limit"):
            wasserstein_inf(GOOD, GOOD, memory_limit=bad)
    # 1-D W∞ needs no matrix
    assert wasserstein_inf(np.zeros(100_000), np.ones(100_000)) == 1.0


def test_closeness_radii_matches_pairwise_calls() -> None:
    rng = np.random.default_rng(12)
    sets = [_tied(rng, 60, 3, 5) + i for i in range(4)] + [_tied(rng, 45, 3, 5)]
    pairs = [(0, 1), (0, 3), (2, 1), (1, 4), (3, 3)]
    for delta in (0.0, 0.05):
        calls: list[tuple[int, int]] = []
        got = closeness_radii(sets, pairs, delta, progress=lambda d, t, c=calls: c.append((d, t)))
        assert got == [closeness_radius(sets[i], sets[j], delta) for i, j in pairs]
        assert calls == [(d, len(pairs)) for d in range(1, len(pairs) + 1)]
    one_d = [s[:, 0] for s in sets]
    assert closeness_radii(one_d, pairs) == [wasserstein_inf(one_d[i], one_d[j]) for i, j in pairs]
    with pytest.raises(DistPrivacyError, match="indexes outside"):
        closeness_radii(sets, [(0, 5)])
    with pytest.raises(DistPrivacyError, match="dimension"):
        closeness_radii([sets[0], sets[1][:, :2]], [(0, 1)])
    with pytest.raises(DistPrivacyError, match="delta"):
        closeness_radii(sets, pairs, 1.0)
