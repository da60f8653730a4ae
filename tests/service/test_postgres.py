"""The service on a ledger in PostgreSQL (``serve --database URL``, issue 34), against a real
server (tests/postgres_server.py starts one; skipped with a named reason without it): two
service processes on one state share one budget, spent exactly; a SIGKILLed process loses
nothing it answered; the state directory keeps its ledger where it was made."""

from __future__ import annotations

import threading

import pytest
from service_world import (
    hammer,
    kill_trial,
    ledger_ids,
    make_analysts,
    set_up,
    skip_without_serve,
    start_server,
)

skip_without_serve()

#: ε at δ = 10⁻³: between the cumulative ε of 6 (0.9165) and 7 (0.9449) releases of wave1
#: (test_faults.py; the same plan).
BUDGET = 0.93


def test_two_processes_share_one_budget_in_postgresql(tmp_path, cps_files, postgres_url):
    first = start_server(tmp_path / "svc", "--database", postgres_url)
    second = None
    try:
        assert (tmp_path / "svc" / "ledger.database").read_text().startswith("postgresql://")
        set_up(first, cps_files)
        assert not (tmp_path / "svc" / "ledger.db").exists()  # the rows are in PostgreSQL
        status, out, _ = first.call(
            "POST",
            "/api/secrets/hisp/budget",
            {"budget": {"epsilon": BUDGET, "delta": 1e-3}, "reason": "two processes"},
            first.token,
        )
        assert status == 200, out
        tokens = make_analysts(first, 8)
        second = start_server(first.state, "--database", postgres_url)
        assert second.token == ""  # no second steward
        second.token = first.token
        results: list = []
        runs = [
            threading.Thread(target=lambda s=s, t=t: results.extend(hammer(s, t)))
            for s, t in ((first, tokens[:4]), (second, tokens[4:]))
        ]
        for r in runs:
            r.start()
        for r in runs:
            r.join()
        ok = sorted(out["release_id"] for status, out, _ in results if status == 201)
        refused = [out for status, out, _ in results if status == 409]
        k = len(ok)
        assert 5 <= k <= 7 and ok == list(range(1, k + 1)), ok
        assert len(refused) == 8 and len(results) == k + 8, results
        odd = [r["error"] for r in refused if f"({k} earlier releases" not in r["error"]]
        assert odd == [], (k, odd)
        ids, report = ledger_ids(first.state, postgres_url)
        assert ids == ok and report.ok, report
        # the same k as one SQLite service spends (test_faults.py: 5..7 for this budget)
        page = first.call("GET", "/api/secrets/hisp/ledger", token=first.token)[1]
        assert page["secret"]["epsilon"] <= BUDGET
    finally:
        first.stop()
        if second is not None:
            second.stop()


@pytest.mark.slow
def test_sigkill_on_postgresql_loses_nothing_answered(tmp_path, cps_files, postgres_url):
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    try:
        set_up(server, cps_files)
        server.call(
            "POST",
            "/api/secrets/hisp/budget",
            {"budget": {"epsilon": 50.0, "delta": 1e-3}, "reason": "kill trials"},
            server.token,
        )
        tokens = make_analysts(server, 4)
        for delay in (0.3, 1.1):
            server, got = kill_trial(server, tokens, delay)
            assert got["missing"] == [] and got["missing_in_service"] == [], got
            assert got["duplicates"] == 0 and got["verified"] and got["resumed"], got
            assert got["other"] == [], got
    finally:
        server.stop()


def test_the_state_keeps_its_ledger_where_it_was_made(tmp_path, cps_files, postgres_url):
    """An SQLite state is not silently served from an empty PostgreSQL database, nor a
    PostgreSQL state without --database; a database holding another state's ledger is
    refused; every refusal is one line before anything is served."""
    import subprocess
    import sys

    from service_world import ROOT

    def serve(state, *extra):
        return subprocess.run(
            [sys.executable, "-m", "distprivacy", "serve", "--state", str(state), "--port", "0",
             *extra],
            capture_output=True, text=True, timeout=60,
            env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "src")},
        )  # fmt: skip

    sqlite_state = tmp_path / "lite"
    server = start_server(sqlite_state)
    try:
        set_up(server, cps_files)
    finally:
        server.stop()
    got = serve(sqlite_state, "--database", postgres_url)
    assert got.returncode == 2 and "holds an SQLite ledger" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr and len(got.stderr.strip().splitlines()) == 1

    pg_state = tmp_path / "pg"
    server = start_server(pg_state, "--database", postgres_url)
    try:
        set_up(server, cps_files)
    finally:
        server.stop()
    got = serve(pg_state)
    assert got.returncode == 2 and "start it with --database" in got.stderr, got.stderr
    got = serve(tmp_path / "other", "--database", postgres_url)
    assert got.returncode == 2 and "holds a ledger whose key is not in" in got.stderr, got.stderr
    got = serve(tmp_path / "bad", "--database", "mysql://x@127.0.0.1/y")
    assert got.returncode == 2 and "PostgreSQL URL" in got.stderr, got.stderr
    unreachable = "postgresql://u:hunter2secret@127.0.0.1:1/none"
    got = serve(tmp_path / "down", "--database", unreachable)
    assert got.returncode == 2 and "cannot connect" in got.stderr, got.stderr
    assert "hunter2secret" not in got.stderr and "Traceback" not in got.stderr
