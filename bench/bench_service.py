"""``distprivacy serve`` under load and faults (issue 34), over HTTP on a real server.

    python3 bench/bench_service.py [--analysts 50] [--budget-epsilon 1.05] [--trials 50]
                                   [--seed 34] [--out bench/results_service.txt]
    python3 bench/bench_service.py --postgres postgresql://postgres@127.0.0.1:5432/postgres \
                                   --processes 2 --out bench/results_service_postgres.txt

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

With ``--postgres ADMIN_URL`` (a server where the bench may create databases) the ledger is in
a fresh PostgreSQL database (``serve --database``), dropped after; with ``--processes 2`` two
service processes serve one state: the analysts are split between them, and in each SIGKILL
trial one of them (alternately) is killed while both are serving — the other keeps releasing
for 0.5 s more —, then the killed one restarts.
"""

from __future__ import annotations

import argparse
import http.client
import random
import re
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "service"))
sys.path.insert(0, str(ROOT / "src"))

from service_world import (  # noqa: E402
    Server,
    hammer_split,
    kill_trial,
    ledger_ids,
    make_analysts,
    make_cps_files,
    restart,
    set_up,
    start_server,
)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


def new_database(admin: str | None) -> tuple[str | None, Any]:
    """A fresh database on the ``--postgres`` server (its URL, and a function dropping it)."""
    if admin is None:
        return None, lambda: None
    import secrets

    import psycopg

    name = f"dp_bench_{secrets.token_hex(4)}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")
    base = admin.rsplit("/", 1)[0]

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return f"{base}/{name}", drop


def start_all(state: Path, database: str | None, processes: int) -> list[Server]:
    """``processes`` services on one state (the first makes the steward's token)."""
    extra = ("--database", database) if database else ()
    first = start_server(state, *extra)
    servers = [first]
    for _ in range(processes - 1):
        more = start_server(state, *extra)
        more.token = first.token
        servers.append(more)
    return servers


def hammer_all(servers: list[Server], tokens: list[str]) -> list:
    """:func:`hammer` with the analysts split between the servers."""
    return hammer_split([(s, tokens[i :: len(servers)]) for i, s in enumerate(servers)])


def load(
    root: Path, files: dict, analysts: int, budget: float, database: str | None, processes: int
) -> list[str]:
    servers = start_all(root / "load", database, 1)
    server = servers[0]
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
        for _ in range(processes - 1):
            more = start_server(server.state, *server.extra)
            more.token = server.token
            servers.append(more)
        t0 = time.perf_counter()
        results = hammer_all(servers, tokens)
        wall = time.perf_counter() - t0
        ok = sorted(out["release_id"] for s, out, _ in results if s == 201)
        refused = [out["error"] for s, out, _ in results if s == 409]
        other = [(s, out) for s, out, _ in results if s not in (201, 409)]
        k = len(ok)
        ids, report = ledger_ids(server.state, database)
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
        where = "PostgreSQL" if database else "SQLite"
        lines += [
            f"load: {analysts} analysts over HTTP on one secret, budget (ε, δ) = ({budget}, 0.001),"
            f" {processes} service process(es), the ledger in {where}",
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
        for s in servers:
            s.stop()
    return lines


def pair_trial(
    servers: list[Server], tokens: list[str], delay: float, victim: int, database: str | None
) -> dict[str, Any]:
    """Analysts release through every server; ``servers[victim]`` is SIGKILLed after
    ``delay`` s while the others keep serving for 0.5 s more; then the checks of
    :func:`kill_trial`, and the killed one restarted (in place in ``servers``)."""
    stop = threading.Event()
    results: list[tuple[int, Any]] = []
    lock = threading.Lock()

    def worker(server: Server, token: str) -> None:
        while not stop.is_set():
            try:
                status, out, _ = server.call(
                    "POST", "/api/releases", {"dataset": "wave1", "plan": "means"}, token
                )
            except (OSError, http.client.HTTPException) as e:  # killed mid-answer
                status, out = 0, str(e)
            with lock:
                results.append((status, out))
            if status == 0:
                return

    runs = [
        threading.Thread(target=worker, args=(servers[i % len(servers)], t))
        for i, t in enumerate(tokens)
    ]
    for r in runs:
        r.start()
    time.sleep(delay)
    servers[victim].proc.send_signal(signal.SIGKILL)
    servers[victim].proc.wait()
    time.sleep(0.5)
    stop.set()
    for r in runs:
        r.join()
    answered = [out["release_id"] for status, out in results if status == 201]
    other = [out for status, out in results if status not in (0, 201)]
    ids, report = ledger_ids(servers[0].state, database)
    servers[victim] = restart(servers[victim])
    _s, recorded, _ = servers[victim].call("GET", "/api/releases", token=servers[0].token)
    kept = {r["release_id"] for r in recorded}
    status2, out, _ = servers[victim].call(
        "POST", "/api/releases", {"dataset": "wave1", "plan": "means"}, tokens[0]
    )
    return {
        "answered": len(answered),
        "recorded": len(ids),
        "missing": sorted(set(answered) - set(ids)),
        "missing_in_service": sorted(set(answered) - kept),
        "duplicates": len(answered) - len(set(answered)),
        "verified": report.ok,
        "other": other,
        "resumed": status2 == 201 and out["release_id"] == max(ids, default=0) + 1,
    }


def kills(
    root: Path, files: dict, trials: int, seed: int, database: str | None, processes: int
) -> list[str]:
    rng = random.Random(seed)
    servers = start_all(root / "kill", database, 1)
    answered = recorded = 0
    failures = []
    try:
        set_up(servers[0], files)
        servers[0].call(
            "POST",
            "/api/secrets/hisp/budget",
            {"budget": {"epsilon": 50.0, "delta": 1e-3}, "reason": "kill trials"},
            servers[0].token,
        )
        tokens = make_analysts(servers[0], 4)
        for _ in range(processes - 1):
            more = start_server(servers[0].state, *servers[0].extra)
            more.token = servers[0].token
            servers.append(more)
        for i in range(trials):
            delay = rng.uniform(0.2, 2.5)
            if processes == 1:
                servers[0], got = kill_trial(servers[0], tokens, delay)
            else:
                got = pair_trial(servers, tokens, delay, i % processes, database)
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
        ids, report = ledger_ids(servers[0].state, database)
    finally:
        for s in servers:
            s.stop()
    how = "4 analysts releasing" + (
        f" through {processes} processes, one killed in turn" if processes > 1 else ""
    )
    return [
        f"SIGKILL: {trials} trials ({how}, killed after 0.2–2.5 s, seed {seed})",
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
    ap.add_argument(
        "--postgres",
        default=None,
        metavar="ADMIN_URL",
        help="keep the ledger in a fresh database on this PostgreSQL server (dropped after)",
    )
    ap.add_argument("--processes", type=int, default=1, help="service processes on one state")
    a = ap.parse_args()
    if a.processes > 1 and not a.postgres:
        ap.error("--processes above 1 share a ledger in PostgreSQL: add --postgres ADMIN_URL")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = make_cps_files(root)
        lines = [
            f"bench_service.py (python {sys.version.split()[0]}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
        ]
        db, drop = new_database(a.postgres)
        try:
            lines += load(root, files, a.analysts, a.budget_epsilon, db, a.processes)
        finally:
            drop()
        print("\n".join(lines), flush=True)
        db, drop = new_database(a.postgres)
        try:
            more = kills(root, files, a.trials, a.seed, db, a.processes) if a.trials else []
        finally:
            drop()
        print("\n".join(more), flush=True)
        lines += more
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0 if not any("FAIL" in x for x in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
