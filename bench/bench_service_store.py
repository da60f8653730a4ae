"""The service's own store (issue 34): what a token check and a full audit-log verification
cost on SQLite (``DIR/service.db``) and on PostgreSQL (``serve --database``), in-process.

    python3 bench/bench_service_store.py [--checks 300] [--entries 2000]
        [--postgres postgresql://postgres@127.0.0.1:5432/postgres] [--out FILE]

For each store: one analyst and a token; ``--entries`` audit entries appended (one
transaction each, as the service does); then ``--checks`` token checks (``Store.by_token``:
on PostgreSQL a connection, the store's lock, the rows' MACs and the audit chain's new rows)
with median and p95, and a full verification (``Store.verify``: every chain, the anchor).
Without ``--postgres`` only SQLite is measured. The PostgreSQL database is made fresh and
dropped after.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from distprivacy.service import tokens as tk  # noqa: E402
from distprivacy.service.store import Store  # noqa: E402


def measure(store: Store, checks: int, entries: int) -> dict[str, float]:
    uid = store.add_user("analyst", "analyst", ["s"])
    token = tk.new_token()
    store.add_token(uid, tk.token_hash(token), None)
    t0 = time.perf_counter()
    for i in range(entries):
        store.audit("analyst", "analyst", "bench", f"entry {i}", "ok", {"i": i})
    append = (time.perf_counter() - t0) / max(entries, 1)
    times = []
    for _ in range(checks):
        t0 = time.perf_counter()
        assert store.by_token(tk.token_hash(token)) is not None
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    report = store.verify()
    full = time.perf_counter() - t0
    times.sort()
    return {
        "append_ms": 1000 * append,
        "check_median_ms": 1000 * statistics.median(times),
        "check_p95_ms": 1000 * times[int(0.95 * (len(times) - 1))],
        "verify_s": full,
        "entries": float(report["entries"]),
    }


def fresh_database(admin: str) -> tuple[str, Any]:
    import psycopg

    name = f"dp_bench_{secrets.token_hex(4)}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return f"{admin.rsplit('/', 1)[0]}/{name}", drop


def line(name: str, m: dict[str, float], chained: bool) -> str:
    full = (
        f"full verification of {int(m['entries'])} entries {m['verify_s']:.3f} s"
        if chained
        else "its audit log is not chained (whoever writes service.db holds DIR)"
    )
    return (
        f"  {name:<10} token check median {m['check_median_ms']:.2f} ms, p95"
        f" {m['check_p95_ms']:.2f} ms; audit append {m['append_ms']:.2f} ms each; {full}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checks", type=int, default=300)
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--postgres", default=None, metavar="ADMIN_URL")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import os

    lines = [
        f"bench_service_store.py (python {sys.version.split()[0]},"
        f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average"
        f" {', '.join(f'{x:.1f}' for x in os.getloadavg())}; {a.checks} checks,"
        f" {a.entries} audit entries)"
    ]
    with tempfile.TemporaryDirectory() as tmp:
        lite = measure(Store(Path(tmp) / "service.db"), a.checks, a.entries)
        lines.append(line("SQLite", lite, chained=False))
        if a.postgres:
            url, drop = fresh_database(a.postgres)
            try:
                state = Path(tmp) / "pg"
                state.mkdir()
                store = Store(state / "service.db", database=url)
                lines.append(line("PostgreSQL", measure(store, a.checks, a.entries), chained=True))
            finally:
                drop()
    print("\n".join(lines))
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
