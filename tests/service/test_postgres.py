"""The service in PostgreSQL (``serve --database URL``, issue 34: the ledger in the default
schema, the service's own tables in ``distprivacy_service``), against a real server
(tests/postgres_server.py starts one; skipped with a named reason without it): two service
processes on one state share one budget, spent exactly; a SIGKILLed process loses nothing it
answered; the state directory keeps its ledger where it was made; two hosts (the second with
copies of the first's keys only) share users, tokens, plans, the audit log and the budget; two
processes starting at once on an empty database make one steward; a host without the keys, an
SQLite state and a database without durable commits are refused in one line; rows written in
the database outside the service are refused (their MACs), an old row restored whole too (the
chained audit log records the revocation: tests/service/test_audit_chain.py)."""

from __future__ import annotations

import threading

import pytest
from service_world import (
    hammer_split,
    kill_trial,
    ledger_ids,
    make_analysts,
    set_up,
    skip_without_serve,
    spent_exactly,
    start_server,
    upload,
)

skip_without_serve()
psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL tests need psycopg")

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
        ok = spent_exactly(hammer_split([(first, tokens[:4]), (second, tokens[4:])]), 8)
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


def _copy_keys(src, dst, names=("ledger.db.key", "ledger.db.anchor", "service.key")):
    """A second host's state directory: copies of the first's keys (and anchor), 0600."""
    import shutil

    dst.mkdir(mode=0o700, parents=True)
    for name in names:
        shutil.copy2(src / name, dst / name)


def test_two_hosts_share_users_tokens_audit_and_one_budget(tmp_path, cps_files, postgres_url):
    """Host B holds copies of A's ledger.db.key, ledger.db.anchor and service.key only: it
    serves A's users, tokens and plans; releases on both spend one budget exactly; A's audit
    log shows B's releases; a token revoked on A is refused on B."""
    a = start_server(tmp_path / "A", "--database", postgres_url)
    b = None
    try:
        set_up(a, cps_files)
        assert not (tmp_path / "A" / "service.db").exists()  # the users are in PostgreSQL
        status, out, _ = a.call(
            "POST",
            "/api/secrets/hisp/budget",
            {"budget": {"epsilon": BUDGET, "delta": 1e-3}, "reason": "two hosts"},
            a.token,
        )
        assert status == 200, out
        tokens = make_analysts(a, 4)
        _copy_keys(tmp_path / "A", tmp_path / "B")
        b = start_server(tmp_path / "B", "--database", postgres_url)
        assert b.token == ""  # the steward is A's
        b.token = a.token
        assert (tmp_path / "B" / "steward.pub").read_text() == (
            tmp_path / "A" / "steward.pub"
        ).read_text()
        status, me, _ = b.call("GET", "/api/me", token=tokens[0])
        assert status == 200 and me["user"] == "analyst0", me
        # a user made on B logs in on A; a plan uploaded on A is reviewed on B
        status, made, _ = b.call(
            "POST", "/api/users", {"name": "bea", "role": "analyst", "secrets": ["hisp"]}, b.token
        )
        assert status == 201, made
        assert a.call("GET", "/api/me", token=made["token"])[1]["user"] == "bea"
        plan = __import__("json").loads(cps_files["plan"].read_text())
        status, up, _ = a.call("POST", "/api/plans", {"secret": "hisp", "plan": plan}, a.token)
        assert status == 201, up
        status, review, _ = b.call("GET", f"/api/plans/pending/{up['pending']}", token=b.token)
        assert status == 200 and review["fitted_on_population"], review
        # a plan's JSON edited in the database before its review on the other host: refused
        status, up2, _ = a.call("POST", "/api/plans", {"secret": "hisp", "plan": plan}, a.token)
        assert status == 201, up2
        with psycopg.connect(postgres_url, autocommit=True) as sql:
            sql.execute(
                "UPDATE distprivacy_service.pending SET plan = replace(plan, '0.5', '5.0')"
                " WHERE id = %s",
                (up2["pending"],),
            )
        status, out, _ = b.call("GET", f"/api/plans/pending/{up2['pending']}", token=b.token)
        assert status == 409 and "fails its MAC" in out["error"], out

        ok = spent_exactly(hammer_split([(a, tokens[:2]), (b, tokens[2:])]), 4)
        ids, report = ledger_ids(tmp_path / "A", postgres_url)
        assert ids == ok and report.ok, report
        # A's audit log and release list show the releases made on B
        events = a.call("GET", "/api/events", token=a.token)[1]
        released = [e for e in events if e["action"] == "release" and e["outcome"] == "released"]
        on_b = {e["user"] for e in released} & {"analyst2", "analyst3"}
        assert len(released) == len(ok) and on_b, released
        assert (
            sorted(r["release_id"] for r in a.call("GET", "/api/releases", token=a.token)[1]) == ok
        )
        # a token revoked on A is refused on B from the next request on
        users = a.call("GET", "/api/users", token=a.token)[1]
        tid = next(u for u in users if u["name"] == "analyst2")["tokens"][0]["id"]
        assert a.call("POST", f"/api/tokens/{tid}/revoke", {}, a.token)[0] == 200
        status, out, _ = b.call("GET", "/api/me", token=tokens[2])
        assert status == 401 and "revoked" in out["error"], out
    finally:
        a.stop()
        if b is not None:
            b.stop()


def test_two_processes_starting_at_once_make_one_steward(tmp_path, postgres_url):
    servers: list = []
    errors: list = []

    def start() -> None:
        try:
            servers.append(start_server(tmp_path / "svc", "--database", postgres_url))
        except RuntimeError as e:
            errors.append(str(e))

    runs = [threading.Thread(target=start) for _ in range(2)]
    for r in runs:
        r.start()
    for r in runs:
        r.join()
    try:
        assert errors == [] and len(servers) == 2, errors
        printed = [s.token for s in servers if s.token]
        assert len(printed) == 1, [s.token for s in servers]
        for s in servers:  # the one token works on both
            status, me, _ = s.call("GET", "/api/me", token=printed[0])
            assert status == 200 and me["role"] == "steward", me
        users = servers[0].call("GET", "/api/users", token=printed[0])[1]
        assert [u["name"] for u in users] == ["steward"] and len(users[0]["tokens"]) == 1
    finally:
        for s in servers:
            s.stop()


def _serve(state, *extra):
    import os
    import subprocess
    import sys

    from service_world import ROOT

    return subprocess.run(
        [sys.executable, "-m", "distprivacy", "serve", "--state", str(state), "--port", "0",
         *extra],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip


def test_a_host_without_the_keys_and_an_sqlite_state_are_refused(tmp_path, cps_files, postgres_url):
    a = start_server(tmp_path / "A", "--database", postgres_url)
    try:
        set_up(a, cps_files)
    finally:
        a.stop()
    got = _serve(tmp_path / "B", "--database", postgres_url)
    assert got.returncode == 2 and "copy ledger.db.key" in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr
    # the ledger's key without the service's: refused, naming it
    _copy_keys(tmp_path / "A", tmp_path / "C", ("ledger.db.key", "ledger.db.anchor"))
    got = _serve(tmp_path / "C", "--database", postgres_url)
    assert got.returncode == 2 and "copy service.key" in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1
    # another service's key: refused
    _copy_keys(tmp_path / "A", tmp_path / "D", ("ledger.db.key", "ledger.db.anchor"))
    (tmp_path / "D" / "service.key").write_text("ab" * 32 + "\n")
    got = _serve(tmp_path / "D", "--database", postgres_url)
    assert got.returncode == 2 and "is not the key of the service" in got.stderr, got.stderr
    # an SQLite state (its users in service.db, no secret declared yet) given --database
    lite = start_server(tmp_path / "lite")
    lite.stop()
    assert (tmp_path / "lite" / "service.db").exists()
    got = _serve(tmp_path / "lite", "--database", postgres_url)
    assert got.returncode == 2 and "service's users in SQLite (service.db)" in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1, got.stderr


def test_rows_written_outside_the_service_are_refused(tmp_path, postgres_url):
    """Whoever can write the database but not DIR: a token row, a session row or a user's
    scope of their own making, or a revocation undone, is refused (the rows' MACs)."""
    import hashlib
    import time

    server = start_server(tmp_path / "svc", "--database", postgres_url)
    try:
        st = server.token
        status, made, _ = server.call(
            "POST", "/api/users", {"name": "ana", "role": "analyst", "secrets": ["a"]}, st
        )
        assert status == 201, made
        chosen = "dps_chosen_by_the_database_administrator"
        hashed = hashlib.sha256(chosen.encode()).hexdigest()
        sql = psycopg.connect(postgres_url, autocommit=True)
        q = sql.execute
        q("SET search_path TO distprivacy_service")
        # a steward token of the administrator's choosing (no MAC, or a copied one)
        q(
            "INSERT INTO tokens (user_id, hash, created) VALUES (1, %s, 'now')",
            (hashed,),
        )
        status, out, _ = server.call("GET", "/api/users", token=chosen)
        assert status == 401 and "fails its MAC" in out["error"], out
        steward_mac = q("SELECT mac FROM tokens WHERE id = 1").fetchone()[0]
        q("UPDATE tokens SET mac = %s WHERE hash = %s", (steward_mac, hashed))
        status, out, _ = server.call("POST", "/api/users", {"name": "x", "role": "analyst",
                                     "secrets": ["a"]}, chosen)  # fmt: skip
        assert status == 401 and "fails its MAC" in out["error"], out
        # a browser session of their own making on the steward's token
        cookie = "chosen-session"
        q(
            "INSERT INTO sessions (hash, token_id, csrf, expires) VALUES (%s, 1, 'c', %s)",
            (hashlib.sha256(cookie.encode()).hexdigest(), time.time() + 3600),
        )
        from distprivacy.service.core import Service, ServiceError

        svc, first = Service.open(tmp_path / "svc", database=postgres_url)  # a third process
        assert first is None
        sid, who = svc.login(st)  # a session the service made works
        assert svc.from_session(sid).name == "steward" and who.kek is not None
        with pytest.raises(ServiceError, match="fails its MAC") as caught:
            svc.from_session(cookie)
        assert caught.value.status == 401
        # an analyst's scope widened
        status, me, _ = server.call("GET", "/api/me", token=made["token"])
        assert status == 200, me
        q("UPDATE users SET secrets = '[\"a\", \"b\"]' WHERE name = 'ana'")
        status, out, _ = server.call("GET", "/api/me", token=made["token"])
        assert status == 401 and "fails its MAC" in out["error"], out
        q("UPDATE users SET secrets = '[\"a\"]' WHERE name = 'ana'")
        assert server.call("GET", "/api/me", token=made["token"])[0] == 200
        # the analyst's token moved to the steward's user
        q("UPDATE tokens SET user_id = 1 WHERE id = %s", (made["token_id"],))
        status, out, _ = server.call("GET", "/api/users", token=made["token"])
        assert status == 401 and "fails its MAC" in out["error"], out
        q("UPDATE tokens SET user_id = 2 WHERE id = %s", (made["token_id"],))
        # a revocation undone
        old_mac = q("SELECT mac FROM tokens WHERE id = %s", (made["token_id"],)).fetchone()[0]
        assert server.call("POST", f"/api/tokens/{made['token_id']}/revoke", {}, st)[0] == 200
        q("UPDATE tokens SET revoked = NULL WHERE id = %s", (made["token_id"],))
        status, out, _ = server.call("GET", "/api/me", token=made["token"])
        assert status == 401 and "fails its MAC" in out["error"], out
        # the row's earlier version restored whole, its MAC with it: a per-row MAC cannot tell
        # an old row from a current one, the chained audit log's record of the revocation can
        q("UPDATE tokens SET revoked = NULL, mac = %s WHERE id = %s", (old_mac, made["token_id"]))
        status, out, _ = server.call("GET", "/api/me", token=made["token"])
        assert status == 401 and "revoked" in out["error"], out
        q("UPDATE tokens SET revoked = 'again' WHERE id = %s", (made["token_id"],))
        # the steward's own token still works; the listing marks the forged row
        users = server.call("GET", "/api/users", token=st)[1]
        flags = {t["id"]: t["verified"] for u in users for t in u["tokens"]}
        assert flags[1] is True and False in flags.values(), flags
        sql.close()
    finally:
        server.stop()


def test_a_database_without_durable_commits_is_refused(tmp_path, postgres_url):
    name = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as sql:
        sql.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
    got = _serve(tmp_path / "svc", "--database", postgres_url)
    assert got.returncode == 2 and "synchronous_commit" in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr
    assert not (tmp_path / "svc" / "service.db").exists()


def test_what_the_macs_close_a_row_written_into_an_sqlite_service_db(tmp_path, cps_files):
    """Without the MACs (the SQLite store, whose file's writer holds every key anyway), a token
    row inserted for a chosen token is a steward login: it reads the users and makes analyst
    tokens, but cannot sign (no secret declared) — what the MACs refuse in PostgreSQL."""
    import hashlib
    import sqlite3

    server = start_server(tmp_path / "lite")
    try:
        chosen = "dps_chosen_by_whoever_writes_the_file"
        with sqlite3.connect(tmp_path / "lite" / "service.db") as con:
            con.execute(
                "INSERT INTO tokens (user_id, hash, created) VALUES (1, ?, 'now')",
                (hashlib.sha256(chosen.encode()).hexdigest(),),
            )
        status, users, _ = server.call("GET", "/api/users", token=chosen)
        assert status == 200 and users[0]["name"] == "steward", users
        status, made, _ = server.call(
            "POST", "/api/users", {"name": "x", "role": "analyst", "secrets": ["a"]}, chosen
        )
        assert status == 201 and made["token"].startswith("dps_"), made
        status, out, _ = server.call(
            "POST",
            "/api/secrets",
            {
                "name": "s",
                "protect": "hispanic==1",
                "population": upload(server, chosen, cps_files["population"]),
                "budget": {"epsilon": 1.0, "delta": 1e-3},
            },
            chosen,
        )
        assert status == 403 and "signing key" in out["error"], out
    finally:
        server.stop()
