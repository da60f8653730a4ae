"""How long `distprivacy --help` and every command's and subcommand's `--help` take (issue 23:
target < 0.5 s).

    python3 bench/bench_cli_startup.py [--repeat 5] [--out bench/results_cli_startup.txt]

Each figure is the median wall time of a fresh `python3 -m distprivacy … --help` process; the
commands are every path of the CLI's command tree (nested groups included), read from click.
The baseline line is a fresh `python3 -c pass`, the interpreter's own start-up on this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import click

SRC = Path(__file__).resolve().parents[1] / "src"


def command_paths() -> list[list[str]]:
    """Every command path: [], ["calibrate"], ["ledger", "show"], …"""
    from distprivacy.cli import cli

    ctx = click.Context(cli)
    out: list[list[str]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        out.append(path)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name])

    walk(cli, [])
    return out


def median_time(argv: list[str], repeat: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    # This checkout's code, whatever is installed.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    sys.path.insert(0, str(SRC))
    paths = command_paths()
    lines = [
        f"# bench_cli_startup: median of {a.repeat} fresh processes, {os.cpu_count()} cores "
        "(target < 0.5 s)",
        f"# python3 bench/bench_cli_startup.py --repeat {a.repeat}",
    ]
    base = median_time([sys.executable, "-c", "pass"], a.repeat, env)
    lines.append(f"  {'python3 -c pass (interpreter start-up)':<40} {base:6.3f} s")
    slow = 0
    for cmd in paths:
        med = median_time([sys.executable, "-m", "distprivacy", *cmd, "--help"], a.repeat, env)
        mark = "ok" if med < 0.5 else "SLOW"
        slow += med >= 0.5
        lines.append(f"  distprivacy {' '.join([*cmd, '--help']):<28} {med:6.3f} s  {mark}")
    lines.append(f"# {len(paths)} help pages, {slow} at or above 0.5 s")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
