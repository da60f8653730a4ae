"""How long `distprivacy --help` and each subcommand's `--help` take (issue 23: target < 0.5 s).

    python3 bench/bench_cli_startup.py [--repeat 5] [--out bench/results_cli_startup.txt]

Each figure is the median wall time of a fresh `python3 -m distprivacy … --help` process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = [
    [],
    ["calibrate"],
    ["release"],
    ["audit"],
    ["ledger"],
    ["ledger", "show"],
    ["reproduce"],
    ["attribute"],
    ["local"],
    ["models"],
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lines = [f"# bench_cli_startup: median of {a.repeat} fresh processes (target < 0.5 s)"]
    for cmd in COMMANDS:
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "distprivacy", *cmd, "--help"],
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        mark = "ok" if med < 0.5 else "SLOW"
        lines.append(f"  distprivacy {' '.join([*cmd, '--help']):<24} {med:6.3f} s  {mark}")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
