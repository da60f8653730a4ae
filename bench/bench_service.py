"""``distprivacy serve`` under load and faults (issue 34), over HTTP on a real server.

    python3 bench/bench_service.py [--analysts 50] [--budget-epsilon 1.05] [--trials 50]
                                   [--seed 34] [--out bench/results_service.txt]

1. Load: ``--analysts`` analysts (one token and one thread each) release wave1 (100 records
   of CPS 1991) with the approved DauM-G plan on one secret until the budget refuses them.
   Must be: releases 1..K answered exactly once, K rows in the ledger, every refusal a budget
   refusal naming K earlier releases, the recorded cumulative ε (at δ = 10⁻³) within the
   (ε, δ) budget, ``ledger verify`` ok. Prints latency p50/p99 of releases and of
   refusals, and throughput.
2. SIGKILL: ``--trials`` times, 4 analysts release while the service is SIGKILLed after a
   random delay (0.2–2.5 s, seeded); then every answered release must be in the ledger and in
   the service's records, none answered twice, the ledger verifies, and the restarted service
   releases again (no new steward token).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "service"))
sys.path.insert(0, str(ROOT / "src"))

from service_world import (  # noqa: E402
    hammer,
    kill_trial,
    ledger_ids,
    make_analysts,
    make_cps_files,
    set_up,
    start_server,
)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


def load(root: Path, files: dict, analysts: int, budget: float) -> list[str]:
    server = start_server(root / "load")
    lines = []
    try:
        set_up(server, files)
        server.call(
            "POST",
            "/api/secrets/hisp/budget",
            {"budget": {"epsilon": budget, "delta": 1e-3}, "reason": "bench"},
            server.token,
        )
        tokens = make_analysts(server, analysts)
        t0 = time.perf_counter()
        results = hammer(server, tokens)
        wall = time.perf_counter() - t0
        ok = sorted(out["release_id"] for s, out, _ in results if s == 201)
        refused = [out["error"] for s, out, _ in results if s == 409]
        other = [(s, out) for s, out, _ in results if s not in (201, 409)]
        k = len(ok)
        ids, report = ledger_ids(server.state)
        cum = server.call("GET", "/api/secrets/hisp/ledger", token=server.token)[1]["secret"][
            "epsilon"
        ]
        pattern = (
            r"cumulative δ = [0-9.e-]+ at ε = [0-9.]+ \(ε = [0-9.]+ at δ = 0.001\) would exceed "
            r"the budget \(ε, δ\) = \([0-9.]+, 0.001\) \((\d+) earlier releases"
        )
        named = [re.search(pattern, t) for t in refused]
        good_refusals = all(m and int(m.group(1)) == k for m in named)
        lat_ok = [dt for s, _, dt in results if s == 201]
        lat_no = [dt for s, _, dt in results if s == 409]
        checks = {
            "answered exactly 1..K": ok == list(range(1, k + 1)),
            "ledger rows == answered": ids == ok,
            "one refusal per analyst": len(refused) == analysts,
            "every refusal a budget refusal naming K": good_refusals,
            "no other status": other == [],
            "recorded cumulative ε within the budget": cum <= budget,
            "ledger verify": report.ok,
        }
        lines += [
            f"load: {analysts} analysts over HTTP on one secret, budget (ε, δ) = ({budget}, 0.001)",
            f"  K = {k} releases recorded (cumulative ε = {cum:.4f} at δ = 0.001),"
            f" {len(refused)} refusals, {len(other)} other answers,"
            f" {len(results)} requests in {wall:.1f} s"
            f" ({len(results) / wall:.2f} requests/s, {k / wall:.2f} releases/s)",
            f"  release latency p50 {pct(lat_ok, 0.5):.3f} s, p99 {pct(lat_ok, 0.99):.3f} s;"
            f" refusal latency p50 {pct(lat_no, 0.5):.3f} s, p99 {pct(lat_no, 0.99):.3f} s",
            *(f"  {'ok ' if v else 'FAIL'} {name}" for name, v in checks.items()),
        ]
        if other:
            lines.append(f"  other: {other[:3]}")
        odd = sorted(
            {t for t, m in zip(refused, named, strict=True) if not (m and int(m.group(1)) == k)}
        )
        lines += [f"  refusal not naming K: {t}" for t in odd[:5]]
    finally:
        server.stop()
    return lines


def kills(root: Path, files: dict, trials: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    server = start_server(root / "kill")
    answered = recorded = 0
    failures = []
    try:
        set_up(server, files)
        server.call(
            "POST",
            "/api/secrets/hisp/budget",
            {"budget": {"epsilon": 50.0, "delta": 1e-3}, "reason": "kill trials"},
            server.token,
        )
        tokens = make_analysts(server, 4)
        for i in range(trials):
            server, got = kill_trial(server, tokens, rng.uniform(0.2, 2.5))
            answered += got["answered"]
            recorded = got["recorded"]
            bad = (
                got["missing"]
                or got["missing_in_service"]
                or got["duplicates"]
                or not got["verified"]
                or not got["resumed"]
                or got["other"]
            )
            if bad:
                failures.append((i, got))
        ids, report = ledger_ids(server.state)
    finally:
        server.stop()
    return [
        f"SIGKILL: {trials} trials (4 analysts releasing, killed after 0.2–2.5 s, seed {seed})",
        f"  {answered} releases answered across the trials, {len(ids)} recorded at the end"
        f" ({len(ids) - answered - trials} recorded but not answered, besides the {trials}"
        f" post-restart checks); last trial's ledger held {recorded} before its restart",
        f"  {'ok ' if not failures else 'FAIL'} every answered release recorded (ledger and"
        f" service), none twice, verify ok after each kill, each restart resumed",
        f"  {'ok ' if report.ok else 'FAIL'} ledger verify at the end",
        *(f"  failure: trial {i}: {got}" for i, got in failures[:5]),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--analysts", type=int, default=50)
    ap.add_argument("--budget-epsilon", type=float, default=1.05)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = make_cps_files(root)
        lines = [
            f"bench_service.py (python {sys.version.split()[0]}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
        ]
        lines += load(root, files, a.analysts, a.budget_epsilon)
        print("\n".join(lines), flush=True)
        more = kills(root, files, a.trials, a.seed) if a.trials else []
        print("\n".join(more), flush=True)
        lines += more
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0 if not any("FAIL" in x for x in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
