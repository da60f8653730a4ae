"""Benchmark of ``distprivacy reproduce paper`` (the main paper's targets) at its settings.

Run: ``python bench/bench_reproduce.py [--data DIR] [--out DIR]``. Prints the time of each stage,
the whole, and the peak memory (resident set size) of the process. For comparison, the issue
quotes the authors' notebook at about 13 minutes for Table 3 and about 30 minutes for Figure 4 on
the same 2-core machine.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

from distprivacy.datasets import load_adult
from distprivacy.experiments.paper import Config
from distprivacy.experiments.reproduce import reproduce

NOTEBOOK_SECONDS = {"table3": 13 * 60, "figure4": 30 * 60}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    t = time.perf_counter()
    data = load_adult(args.data)
    load = time.perf_counter() - t
    out = args.out or tempfile.mkdtemp(prefix="distprivacy-bench-")
    result = reproduce(data, ["paper"], out, Config())
    timings = {"load data": load, **result["timings"]}
    print(f"{'stage':<10} {'seconds':>8}  vs the notebook (times quoted in the issue)")
    for k, v in timings.items():
        ratio = f"{NOTEBOOK_SECONDS[k] / v:8.0f}x faster" if k in NOTEBOOK_SECONDS else ""
        print(f"{k:<10} {v:8.2f}  {ratio}")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS): {peak_mib:.0f} MiB")
    print(f"outputs in {out}")


if __name__ == "__main__":
    main()
