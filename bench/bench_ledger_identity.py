"""What a ledger entry costs to identify its target: the keyed dataset identity, the row
sketch, the per-column identities (column, property) and the columns' marginal identities
over all of Adult's 15 columns.

Run: ``python bench/bench_ledger_identity.py [--repeat 3]``. Prints, per target size, the
median time of :func:`distprivacy.fingerprint.release_identity` (each column made canonical
once) against the four public functions called apart, and their ratio; checks that both
give the same values.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=None, help="Adult directory (default: cache/download)")
    args = ap.parse_args()

    from distprivacy.datasets import load_adult
    from distprivacy.fingerprint import (
        column_identities,
        column_marginals,
        dataset_identity,
        dataset_sketch,
        release_identity,
    )

    adult = load_adult(args.data)
    key = os.urandom(32)
    print(f"# python bench/bench_ledger_identity.py --repeat {args.repeat}")
    print("#   rows  release_identity  apart   ratio   (Adult's 15 columns, property income)")
    for n in (100, 1_000, 10_000, 100_000):
        t = adult.sample(n=n, replace=True, random_state=0).reset_index(drop=True)
        cols, read = sorted(t.columns), ["age", "hours_per_week", "income"]
        one, apart = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = release_identity(t, cols, read, "income", key=key)
            t1 = time.perf_counter()
            a = dataset_identity(t, cols, key=key)
            b = dataset_sketch(t, cols, key=key)
            c = column_identities(t, [*cols, *read], "income", key=key)
            d = column_marginals(t, [*cols, *read], key=key)
            t2 = time.perf_counter()
            one.append(t1 - t0)
            apart.append(t2 - t1)
            assert (r.identity, list(r.sketch), r.column_identities) == (a, b, c)
            assert r.column_marginals == d
        m1, m2 = statistics.median(one), statistics.median(apart)
        print(f"  {n:7d}  {m1:14.3f} s  {m2:6.3f} s  {m2 / m1:4.2f}x")


if __name__ == "__main__":
    main()
