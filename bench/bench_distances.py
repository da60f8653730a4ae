"""Benchmark of W∞ and (W, δ)-closeness (issue 12, part 3): the bottleneck search by 0/1
assignments and minimax augmenting paths against the previous algorithm (binary search with
SciPy's Hopcroft–Karp matcher), on the cases that made the old one slow.

Run: ``python bench/bench_distances.py [--data DIR] [--old-timeout 60]``. Prints each case's time,
the old algorithm's time in the same run (in a subprocess killed after ``--old-timeout`` seconds),
the speed-up, and checks that both give the same value. Then the Wasserstein mechanisms on Adult:
the default two values, and 99 grid values with ``--pairs-within 0.05`` (one model, every pair).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import maximum_bipartite_matching

from distprivacy.datasets import load_data
from distprivacy.distances import closeness_radius, wasserstein_inf
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import make_mechanism
from distprivacy.models import fit_model
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

N = 1000


# ---------------------------------------------------------------------------------------------
# The previous algorithm (uniform weights, N == M), verbatim in substance: the candidate
# distances above the lower bounds, galloping then bisection, one Hopcroft–Karp per probe.
# ---------------------------------------------------------------------------------------------


def _old_matching_size(mask: np.ndarray) -> int:
    n, k = mask.shape
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(mask, axis=1), out=indptr[1:])
    indices = np.nonzero(mask)[1]
    graph = sp.csr_array((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(n, k))
    return int(np.count_nonzero(maximum_bipartite_matching(graph, perm_type="column") >= 0))


def _old_smallest(candidates: np.ndarray, feasible: Callable[[float], bool]) -> float:
    lo, hi, step = 0, candidates.size - 1, 1
    while lo < hi:
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


def old_radius(X: np.ndarray, Y: np.ndarray, delta: float) -> float:
    X, Y = X.reshape(X.shape[0], -1), Y.reshape(Y.shape[0], -1)
    D = np.abs(X[:, None, :] - Y[None, :, :]).sum(axis=-1)
    n = X.shape[0]
    if delta == 0.0:
        lb = max(float(D.min(axis=1).max()), float(D.min(axis=0).max()))
        for k in range(X.shape[1]):
            lb = max(lb, float(np.max(np.abs(np.sort(X[:, k]) - np.sort(Y[:, k])))))
        candidates, need = np.unique(D[D >= lb]), n
    else:
        candidates, need = np.unique(D), max(1, int(np.ceil((1 - delta) * n - 1e-9)))
    return _old_smallest(candidates, lambda t: _old_matching_size(D <= t) >= need)


def _old_worker(X: np.ndarray, Y: np.ndarray, delta: float, out: mp.Queue) -> None:
    t = time.perf_counter()
    value = old_radius(X, Y, delta)
    out.put((time.perf_counter() - t, value))


def time_old(X: np.ndarray, Y: np.ndarray, delta: float, timeout: float) -> tuple[float, float]:
    """(seconds, value) of the old algorithm, or (inf, nan) when it runs past ``timeout``."""
    q: mp.Queue = mp.Queue()
    p = mp.Process(target=_old_worker, args=(X, Y, delta, q))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.terminate()
        p.join()
        return float("inf"), float("nan")
    return q.get()


def time_new(X: np.ndarray, Y: np.ndarray, delta: float, repeat: int = 3) -> tuple[float, float]:
    best, value = float("inf"), float("nan")
    for _ in range(repeat):
        t = time.perf_counter()
        value = closeness_radius(X, Y, delta)
        best = min(best, time.perf_counter() - t)
    return best, value


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


def synthetic_cases(rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray]]:
    b = rng.binomial

    def mixed(p: float) -> np.ndarray:
        """One integer sum (binomial 500) and four counts in 0..2: dense graphs with many
        equal distances, a few matching pairs short of perfect just below W∞."""
        return np.c_[b(500, p, N), rng.integers(0, 3, (N, 4))].astype(float)

    return [
        ("R^5 Gaussian, shifted 0.1", rng.normal(size=(N, 5)), rng.normal(0.1, 1.0, (N, 5))),
        (
            "R^5 integer counts (binomial 60, heavy ties)",
            b(60, 0.3, (N, 5)).astype(float),
            b(60, 0.32, (N, 5)).astype(float),
        ),
        ("R^5 integer sum + 4 small counts (dense, near-perfect)", mixed(0.3), mixed(0.32)),
        (
            "(N, 1) integer sums (binomial 500)",
            b(500, 0.3, (N, 1)).astype(float),
            b(500, 0.32, (N, 1)).astype(float),
        ),
    ]


def below(X: np.ndarray, Y: np.ndarray, value: float) -> str:
    """Density and maximum matching of the graph at the largest distance below ``value``."""
    D = np.abs(X.reshape(N, 1, -1) - Y.reshape(1, N, -1)).sum(axis=-1)
    lower = D[D < value]
    if lower.size == 0:
        return "-"
    t = float(lower.max())
    cost = (D > t).astype(float)
    r, c = linear_sum_assignment(cost)
    return f"{(D <= t).mean():.0%}, {N - int(cost[r, c].sum())}/{N}"


def adult_cases(data) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for stats, n in [(ADULT_DEFAULT_STATISTICS, 100), ("mean:age", 500), ("mean:age,sum:age", 500)]:
        spec = ProtectionSpec("income==>50K", n, [0.45, 0.55])
        model = fit_model(data, spec, Query.parse(stats), n_samples=N, random_state=0)
        label = "Adult default 5 statistics" if n == 100 else f"Adult {stats}, n={n}"
        out.append((label, model.samples_[0], model.samples_[1]))
    return out


def mechanisms_on_grid(
    data,
    values: list[float],
    pairs_within: float | None,
    old_pairs: int = 8,
    old_timeout: float = 60.0,
) -> list[str]:
    spec = ProtectionSpec("income==>50K", 100, values, pairs_within=pairs_within)
    t = time.perf_counter()
    model = fit_model(data, spec, Query.parse(ADULT_DEFAULT_STATISTICS), random_state=0)
    fit = time.perf_counter() - t
    n_pairs = len({(min(i, j), max(i, j)) for i, j in model.pair_indices_})
    lines = [
        f"  {len(values)} values, {n_pairs} unordered pairs; model fitted in {fit:.2f} s "
        "(1,000 Monte-Carlo samples per θ)"
    ]
    total = 0.0
    times_new: dict[str, float] = {}
    for name in ("Wasserstein", "ApproxWasserstein", "ApproxWasserstein-Bounded"):
        mech = make_mechanism(name, EpsDelta(1.0, 0.001))
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = mech.calibrate(model)
        dt = time.perf_counter() - t
        total += dt
        times_new[name] = dt
        lines.append(f"  {name:<27} {dt:8.3f} s   sensitivity {cal.sensitivity:.4g}")
    lines.append(f"  {'Wasserstein mechanisms':<27} {total:8.3f} s")
    if n_pairs > 1:  # the old algorithm on a sample of the pairs, scaled to all of them
        pairs = sorted({(min(i, j), max(i, j)) for i, j in model.pair_indices_})
        sample = pairs[:: max(1, n_pairs // old_pairs)][:old_pairs]
        S = model.samples_
        for delta, name in ((0.0, "Wasserstein"), (0.001, "ApproxWasserstein")):
            times = [time_old(S[i], S[j], delta, old_timeout)[0] for i, j in sample]
            capped = "≥" if max(times) > old_timeout else " "  # a pair stopped at the timeout
            est = float(np.mean(np.minimum(times, old_timeout))) * n_pairs
            lines.append(
                f"  old algorithm, {name:<17}{capped}{est:8.0f} s (mean of {len(sample)} pairs "
                f"× {n_pairs}); speed-up {est / times_new[name]:,.0f}x"
            )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    ap.add_argument("--old-timeout", type=float, default=60.0)
    args = ap.parse_args()
    data = load_data(args.data)
    rng = np.random.default_rng(2026)
    cases = synthetic_cases(rng) + adult_cases(data)

    print(f"W∞ / (W, δ)-closeness between {N:,} + {N:,} samples (new: best of 3)")
    print("(below: density and maximum matching of the graph at the next smaller distance)")
    cols = f"{'δ':>6} {'value':>8} {'below':>13} {'new s':>7} {'old s':>7} {'speed-up':>9}"
    print(f"{'case':<56} {cols}")
    for label, X, Y in cases:
        for delta in (0.0, 0.001, 0.05):
            new_t, new_v = time_new(X, Y, delta)
            old_t, old_v = time_old(X, Y, delta, args.old_timeout)
            if np.isfinite(old_t):
                assert old_v == new_v, (label, delta, old_v, new_v)
                old_s, ratio = f"{old_t:7.3f}", f"{old_t / new_t:8,.0f}x"
            else:
                old_s, ratio = f">{args.old_timeout:5.0f}", f">{args.old_timeout / new_t:7,.0f}x"
            shape = below(X, Y, new_v) if delta == 0.0 else ""
            print(f"{label:<56} {delta:>6g} {new_v:>8.4g} {shape:>13} {new_t:7.4f} {old_s} {ratio}")

    print("\nMemory: W∞ between 100,000 + 100,000 samples in R^5 (release --samples 100000)")
    big = np.zeros((100_000, 5))
    t = time.perf_counter()
    try:
        wasserstein_inf(big, big)
    except DistPrivacyError as e:
        print(f"  refused in {time.perf_counter() - t:.4f} s: {e}")
    t = time.perf_counter()
    w = wasserstein_inf(rng.normal(size=(100_000, 1)), rng.normal(size=(100_000, 1)))
    print(
        f"  the same in R^1 (sorting, no matrix): W∞ = {w:.4g} in {time.perf_counter() - t:.3f} s"
    )

    print("\nWasserstein mechanisms on Adult (default statistics, ε = 1, δ = 0.001)")
    for line in mechanisms_on_grid(data, [0.45, 0.55], None):
        print(line)
    grid = [round(0.01 * i, 2) for i in range(1, 100)]
    for line in mechanisms_on_grid(data, grid, 0.05, old_timeout=args.old_timeout):
        print(line)


if __name__ == "__main__":
    main()
