"""Benchmark: calibrating the Gaussian mechanisms over many candidate values, now and before.

Run: ``python bench/bench_calibration.py [--data DIR] [--compare-ref REV]``.

For 9, 33 and 99 values of p 0.01 apart (pairs within 0.05, exact moments, Adult's five default
statistics, n = 100, ε = 1, δ = 1e-3) it times every Gaussian mechanism (fitted covariances
enforced, the default) and prints seconds per mechanism and in all. With ``--compare-ref REV``
the same measurement runs in a subprocess on a checkout of REV (a temporary git worktree), and
the speed-up ratios are printed: both figures come from the same run on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from distprivacy.targets import EpsDelta

MECHANISMS = ("ExpM-G", "DirM-G", "EigM-G", "DauM-G", "OptM-G")
GRIDS = (9, 33, 99)


def measure(data_dir: str | None, grids: tuple[int, ...], limit: float) -> dict:
    """Seconds (wall, and this process's CPU) per grid and mechanism; a case is skipped once a
    mechanism took more than ``limit`` seconds on a smaller grid."""
    import warnings

    from distprivacy.datasets import load_data
    from distprivacy.exceptions import DistPrivacyError
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import fit_model
    from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
    from distprivacy.spec import ProtectionSpec

    warnings.simplefilter("ignore")
    data = load_data(data_dir)
    query = Query.parse(ADULT_DEFAULT_STATISTICS)
    out: dict = {}
    slow: set[str] = set()
    for g in grids:
        # g values 0.01 apart, centred on 0.5 (99 values: 0.01, ..., 0.99)
        values = [round(0.5 + 0.01 * (i - (g - 1) // 2), 2) for i in range(g)]
        spec = ProtectionSpec("income==>50K", 100, values, pairs_within=0.05)
        model = fit_model(data, spec, query, method="exact")
        row = {"pairs": len(model.pair_indices_)}
        for name in MECHANISMS:
            if name in slow:
                row[name] = None
                continue
            w, c = time.perf_counter(), time.process_time()
            try:
                cal = make_mechanism(name, EpsDelta(1.0, 1e-3)).calibrate(model)
                ok = f"{cal.delta_achieved:.3g}"
            except DistPrivacyError as exc:
                ok = f"refused: {str(exc)[:60]}"
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            row[name] = {"wall": wall, "cpu": cpu, "delta": ok}
            if wall > limit:
                slow.add(name)
        out[str(g)] = row
    return out


def _in_worktree(ref: str, args: argparse.Namespace) -> dict:
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "ref"
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "-q", "--detach", str(wt), ref], check=True
        )
        try:
            env = {**os.environ, "PYTHONPATH": str(wt / "src")}
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--json",
                "--limit",
                str(args.limit),
            ]
            if args.data:
                cmd += ["--data", args.data]
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            return json.loads(res.stdout)
        finally:
            subprocess.run(
                ["git", "-C", str(root), "worktree", "remove", "--force", str(wt)], check=False
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    ap.add_argument("--compare-ref", default=None, help="a git revision to measure too")
    ap.add_argument(
        "--limit",
        type=float,
        default=120.0,
        help="skip larger grids for a mechanism slower than this (s)",
    )
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--cli",
        action="store_true",
        help="also time the whole default `calibrate` command (every mechanism) on 99 values",
    )
    args = ap.parse_args()
    now = measure(args.data, GRIDS, args.limit)
    if args.json:
        print(json.dumps(now))
        return
    before = _in_worktree(args.compare_ref, args) if args.compare_ref else None
    if args.cli:
        values = ",".join(f"{k / 100:.2f}" for k in range(1, 100))
        cmd = [sys.executable, "-m", "distprivacy", "calibrate", "--values", values]
        cmd += ["--pairs-within", "0.05", "--json"] + (["--data", args.data] if args.data else [])
        t = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t
        d = json.loads(res.stdout)
        print(
            f"CLI: calibrate --values 0.01,...,0.99 --pairs-within 0.05 (every mechanism, default "
            f"modelling): {wall:.1f} s wall; {len(d['mechanisms'])} calibrated, not applicable: "
            f"{', '.join(d['not_applicable']) or 'none'}\n"
        )
    print("Gaussian mechanisms on Adult, 5 statistics, n = 100, ε = 1, δ = 1e-3, pairs within 0.05")
    print("(seconds wall / CPU of the calibrating process; δ achieved at ε)")
    for g, row in now.items():
        total = sum(v["wall"] for k, v in row.items() if k in MECHANISMS and v)
        print(f"\n{g} values, {row['pairs']} ordered pairs: all five in {total:.2f} s")
        for name in MECHANISMS:
            v = row[name]
            line = f"  {name:7s} {v['wall']:8.2f} / {v['cpu']:7.2f}   δ {v['delta']}"
            if before is not None:
                b = before.get(g, {}).get(name)
                line += (
                    f"   before: {b['wall']:8.2f} s ({b['wall'] / v['wall']:.0f}x)"
                    if b
                    else f"   before: skipped (> {args.limit:g} s on a smaller grid)"
                )
            print(line)


if __name__ == "__main__":
    main()
