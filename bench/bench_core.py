"""Benchmark of the core: modelling f_θ, W∞ and calibration on Adult (the paper's §5.1 setting).

Run: ``python bench/bench_core.py [--data DIR]``. Prints the time of each stage and the speed-up of
the vectorised Monte-Carlo model over one pandas call per subset (the notebook approach),
measured in the same run.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from distprivacy.datasets import load_data
from distprivacy.distances import closeness_radius, wasserstein_inf
from distprivacy.mechanisms import MECHANISMS, calibrate_all
from distprivacy.models import ExactModel, MonteCarloModel
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta


def timed(f, repeat: int = 3):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def naive_monte_carlo(data, spec, n_subsets: int, seed: int = 0) -> np.ndarray:
    """One pandas sample + five pandas reductions per subset, as research notebooks do."""
    rng = np.random.default_rng(seed)
    mask = spec.predicate.evaluate(data)
    pos, neg = data[mask], data[~mask]
    out = []
    for k in spec.counts:
        for _ in range(n_subsets):
            sub = pd.concat(
                [pos.sample(k, random_state=rng), neg.sample(spec.n - k, random_state=rng)]
            )
            out.append(
                [
                    sub.age.mean(),
                    sub.education_num.mean(),
                    (sub.marital_status == "Never-married").sum(),
                    (sub.sex == "Female").sum(),
                    sub.hours_per_week.mean(),
                ]
            )
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    data = load_data(args.data)
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    rows = []
    t_exact, _ = timed(lambda: ExactModel().fit(data, spec, q))
    rows.append(("exact moments (2 θ)", t_exact))
    t_mc, mc = timed(lambda: MonteCarloModel(1000, random_state=0).fit(data, spec, q))
    rows.append(("Monte-Carlo model, 1000 subsets per θ (vectorised)", t_mc))
    n_naive = 100
    t_naive, _ = timed(lambda: naive_monte_carlo(data, spec, n_naive), repeat=1)
    t_naive_1000 = t_naive * 1000 / n_naive
    rows.append(
        (f"Monte-Carlo, one pandas call per subset ({n_naive}/θ, scaled to 1000)", t_naive_1000)
    )
    X, Y = mc.samples_
    t_w, w = timed(lambda: wasserstein_inf(X, Y))
    rows.append((f"W∞ between 1000 + 1000 samples in R^5 (= {w:.3f})", t_w))
    t_c, c = timed(lambda: closeness_radius(X, Y, 0.01))
    rows.append((f"(W, 0.01)-closeness radius (= {c:.3f})", t_c))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_all, _ = timed(lambda: calibrate_all(mc, EpsDelta(1.0, 1e-3)))
    rows.append((f"calibrate all {len(MECHANISMS)} mechanisms (exact rule, fitted)", t_all))
    width = max(len(r[0]) for r in rows)
    print(f"{'stage':<{width}}  seconds")
    for name, t in rows:
        print(f"{name:<{width}}  {t:8.4f}")
    print(
        f"speed-up of the vectorised Monte-Carlo model over per-subset pandas: "
        f"{t_naive_1000 / t_mc:.0f}x"
    )


if __name__ == "__main__":
    main()
