"""How long `distprivacy --help` and every command's and subcommand's `--help` take (issue 23:
target < 0.5 s), and what a command costs beside its floor (issue 32, item 5).

    python3 bench/bench_cli_startup.py [--repeat 5] [--adult DIR] [--no-help-pages]
        [--out bench/results_cli_startup.txt]

Each figure is the median wall time of a fresh `python3 -m distprivacy … --help` process; the
commands are every path of the CLI's command tree (nested groups included), read from click.
The baseline line is a fresh `python3 -c pass`, the interpreter's own start-up on this machine.

Then, beside its floor, each of `ledger init` (goal: < 0.3 s) and the default `calibrate` on
Adult (`--adult DIR`; goal: ≤ 1.3× its floor). A command's floor is a fresh process that
imports exactly the modules the command ends up having imported (recorded by running it once
in-process) and loads the data it reads — what no implementation of the command can avoid;
the ratio is what the command adds (its own work and its imports' side effects). Commands and
floors are timed in alternation, so that a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


_RECORD = """
import contextlib, io, json, sys
from distprivacy.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
assert code == 0, code
print(json.dumps(sorted(m for m in sys.modules if not m.startswith("__"))))
"""

_FLOOR = """
import importlib, sys
for m in {modules!r}:
    try:
        importlib.import_module(m)
    except Exception:
        pass
{load}
"""


def imported_by(argv: list[str], env: dict[str, str]) -> list[str]:
    """The modules a command has imported when it returns (run once in a fresh process)."""
    res = subprocess.run([sys.executable, "-c", _RECORD, *argv], check=True,
                         capture_output=True, text=True, env=env)  # fmt: skip
    return json.loads(res.stdout.strip().splitlines()[-1])


def beside_floor(
    name: str,
    make: Any,
    floor_load: str,
    repeat: int,
    env: dict[str, str],
) -> tuple[float, float]:
    """Median times of the command (``make(k)``: its argv for the k-th run, whatever must
    exist set up) and of its floor (its modules imported, then ``floor_load``), alternated."""
    floor = [sys.executable, "-c",
             _FLOOR.format(modules=imported_by(make(-1), env), load=floor_load)]  # fmt: skip
    cmd, flo = [], []
    for k in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "distprivacy", *make(k)], check=True,
                       capture_output=True, env=env)  # fmt: skip
        cmd.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(floor, check=True, capture_output=True, env=env)
        flo.append(time.perf_counter() - t0)
    return statistics.median(cmd), statistics.median(flo)


def command_lines(repeat: int, env: dict[str, str], adult: str | None) -> list[str]:
    """`ledger init` and the default `calibrate` on Adult, each beside its floor."""
    import tempfile

    lines = ["# commands beside their floors (median, alternated; floor = the command's imports"
             " + the data it loads)"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        population = root / "population.csv"
        population.write_text("income,age\n>50K,40\n<=50K,30\n")
        key = root / "steward.key"
        subprocess.run([sys.executable, "-m", "distprivacy", "ledger", "keygen", str(key)],
                       check=True, capture_output=True, env=env)  # fmt: skip

        def init(k: int) -> list[str]:
            return ["ledger", "init", str(root / f"l{k + 1}.db"), "--steward-key", str(key),
                    "--secret", "s", "--protect", "income==>50K", "--population",
                    str(population), "--budget-epsilon", "1",
                    "--budget-delta", "0.001"]  # fmt: skip

        med, floor = beside_floor("ledger init", init, "", repeat, env)
        mark = "ok" if med < 0.3 else "SLOW"
        lines.append(f"  {'distprivacy ledger init':<40} {med:6.3f} s  floor {floor:6.3f} s  "
                     f"×{med / floor:4.2f}  (goal < 0.3 s: {mark})")  # fmt: skip
    if adult is not None:
        load = f"from distprivacy.datasets import load_adult; load_adult({adult!r})"
        med, floor = beside_floor(
            "calibrate", lambda k: ["calibrate", "--data", adult], load, repeat, env
        )
        ratio = med / floor
        mark = "ok" if ratio <= 1.3 else "SLOW"
        lines.append(f"  {'distprivacy calibrate --data ADULT':<40} {med:6.3f} s  floor "
                     f"{floor:6.3f} s  ×{ratio:4.2f}  (goal ≤ 1.3×: {mark})")  # fmt: skip
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--adult", default=None, help="Adult's directory: time `calibrate` too.")
    ap.add_argument("--no-help-pages", action="store_true", help="Only the commands.")
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
        "# load average (1, 5, 15 min) at the start: "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
        + " (the times scale with it: compare each figure with the interpreter's line)",
    ]
    base = median_time([sys.executable, "-c", "pass"], a.repeat, env)
    lines.append(f"  {'python3 -c pass (interpreter start-up)':<40} {base:6.3f} s")
    slow = 0
    for cmd in [] if a.no_help_pages else paths:
        med = median_time([sys.executable, "-m", "distprivacy", *cmd, "--help"], a.repeat, env)
        mark = "ok" if med < 0.5 else "SLOW"
        slow += med >= 0.5
        lines.append(f"  distprivacy {' '.join([*cmd, '--help']):<28} {med:6.3f} s  {mark}")
    if not a.no_help_pages:
        lines.append(f"# {len(paths)} help pages, {slow} at or above 0.5 s")
    lines += command_lines(a.repeat, env, a.adult)
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
