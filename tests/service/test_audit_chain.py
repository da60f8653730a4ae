"""The keyed hash chains over the service's audit log and analysts' releases, and the per-host
anchor (docs/serve.md, "The database's administrator"), against a real PostgreSQL server and
real service processes: whoever writes the database but not DIR cannot edit an audit row, delete
the last ones, or undo a revocation by restoring the token's earlier row; two processes
appending at once chain correctly; a database from before the chains is chained at its first
start; the SQLite store works as before (not chained)."""

from __future__ import annotations

import threading

import pytest
from pages_client import Pages
from service_world import skip_without_serve, start_server

skip_without_serve()
psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL tests need psycopg")


def _serve(state, *extra):
    """One `serve` run that is expected to exit (a refused start)."""
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


def _sql(url):
    con = psycopg.connect(url, autocommit=True)
    con.execute("SET search_path TO distprivacy_service")
    return con


def _analyst(server, name="ana"):
    status, made, _ = server.call(
        "POST", "/api/users", {"name": name, "role": "analyst", "secrets": ["a"]}, server.token
    )
    assert status == 201, made
    return made


def _refused_start(state, url, words):
    got = _serve(state, "--database", url)
    assert got.returncode == 2, got.stderr
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in got.stderr, got.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def test_an_edited_audit_row_is_refused_with_its_row_number(tmp_path, postgres_url):
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    sql = _sql(postgres_url)
    try:
        for name in ("ana", "bob", "cy"):
            _analyst(server, name)
        status, ok, _ = server.call("GET", "/api/audit/verify", token=server.token)
        assert status == 200 and ok["ok"] and ok["chained"] and ok["entries"] == 4, ok
        browser = Pages(server.url)
        assert browser.login(server.token) in (200, 303)
        status, page, _ = browser.get("/steward")  # the login is the fifth entry
        assert status == 200 and "Audit log verified (5 entries)." in page
        # an old row (the second: ana's token) given another detail: the chain breaks there
        sql.execute("""UPDATE audit SET detail = '{"role": "steward"}' WHERE id = 2""")
        status, out, _ = server.call("GET", "/api/audit/verify", token=server.token)
        assert status == 503 and "fails verification at row 2" in out["error"], out
        assert "docs/serve.md" in out["error"] and "\n" not in out["error"]
        # fail closed: every request is refused from then on, even with the row put back
        status, again, _ = server.call("GET", "/api/me", token=server.token)
        assert status == 503 and again["error"] == out["error"], again
        status, page, _ = browser.get("/steward")
        assert status == 503 and "fails verification at row 2" in page
    finally:
        server.stop()
    _refused_start(tmp_path / "svc", postgres_url, ("fails verification at row 2",))
    sql.close()


def test_an_edited_last_row_is_refused_at_the_next_request(tmp_path, postgres_url):
    """The last verified row is read again with the new ones: a change to *which* user made
    it is refused by the very next authentication, not only by a full verification."""
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    sql = _sql(postgres_url)
    try:
        made = _analyst(server)
        assert server.call("GET", "/api/me", token=made["token"])[0] == 200
        last = sql.execute("SELECT MAX(id) FROM audit").fetchone()[0]
        sql.execute("""UPDATE audit SET "user" = 'someone-else' WHERE id = %s""", (last,))
        status, out, _ = server.call("GET", "/api/me", token=made["token"])
        assert status == 503 and f"fails verification at row {last}" in out["error"], out
    finally:
        server.stop()
        sql.close()


def test_deleted_last_rows_are_refused_by_the_anchor(tmp_path, postgres_url):
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    sql = _sql(postgres_url)
    try:
        for name in ("ana", "bob", "cy"):
            _analyst(server, name)
        assert server.call("GET", "/api/audit/verify", token=server.token)[1]["entries"] == 4
    finally:
        server.stop()
    anchor = (tmp_path / "svc" / "service.anchor").stat()
    assert anchor.st_mode & 0o777 == 0o600
    # the last two rows deleted: the rest is a valid chain, but shorter than the anchor
    sql.execute("DELETE FROM audit WHERE id > 2")
    _refused_start(tmp_path / "svc", postgres_url, ("2 entries, fewer than the 4",))
    sql.close()


def test_a_deleted_row_is_refused_while_serving(tmp_path, postgres_url):
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    sql = _sql(postgres_url)
    try:
        _analyst(server)
        assert server.call("GET", "/api/me", token=server.token)[0] == 200
        sql.execute("DELETE FROM audit WHERE id = (SELECT MAX(id) FROM audit)")
        status, out, _ = server.call("GET", "/api/me", token=server.token)
        assert status == 503 and "fails verification at row 2" in out["error"], out
    finally:
        server.stop()
        sql.close()


def test_a_revoked_tokens_earlier_row_restored_is_still_refused(tmp_path, postgres_url):
    """The replay that per-row MACs cannot tell: the token's row before its revocation, MAC
    and all, written back. The verified audit log records the revocation: still 401, on the
    running process and after a restart."""
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    sql = _sql(postgres_url)
    try:
        made = _analyst(server)
        tid = made["token_id"]
        assert server.call("GET", "/api/me", token=made["token"])[0] == 200
        saved = sql.execute("SELECT revoked, mac FROM tokens WHERE id = %s", (tid,)).fetchone()
        assert saved[0] is None
        assert server.call("POST", f"/api/tokens/{tid}/revoke", {}, server.token)[0] == 200
        assert server.call("GET", "/api/me", token=made["token"])[0] == 401
        sql.execute("UPDATE tokens SET revoked = %s, mac = %s WHERE id = %s", (*saved, tid))
        status, out, _ = server.call("GET", "/api/me", token=made["token"])
        assert status == 401 and "revoked" in out["error"], out
        users = server.call("GET", "/api/users", token=server.token)[1]
        row = next(t for u in users for t in u["tokens"] if t["id"] == tid)
        # the row itself passes its MAC; the listing shows the log's revocation
        assert row["verified"] is True and row["revoked"] == "recorded in the audit log", row
    finally:
        server.stop()
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    try:
        status, out, _ = server.call("GET", "/api/me", token=made["token"])
        assert status == 401 and "revoked" in out["error"], out
    finally:
        server.stop()
        sql.close()


def test_two_processes_appending_at_once_chain_exactly(tmp_path, postgres_url):
    first = start_server(tmp_path / "svc", "--database", postgres_url)
    second = start_server(tmp_path / "svc", "--database", postgres_url)
    per_thread, errors = 8, []
    try:

        def work(server, prefix):
            for i in range(per_thread):
                status, out, _ = server.call(
                    "POST",
                    "/api/users",
                    {"name": f"{prefix}{i}", "role": "analyst", "secrets": ["a"]},
                    first.token,
                )
                if status != 201:
                    errors.append(out)

        runs = [
            threading.Thread(target=work, args=(s, f"{tag}{j}-"))
            for s, tag in ((first, "a"), (second, "b"))
            for j in range(2)
        ]
        for r in runs:
            r.start()
        for r in runs:
            r.join()
        assert errors == []
        want = 1 + 4 * per_thread  # "service started", then one "make token" each
        for server in (first, second):
            status, ok, _ = server.call("GET", "/api/audit/verify", token=first.token)
            assert status == 200 and ok["ok"] and ok["entries"] == want, ok
        with _sql(postgres_url) as sql:
            n, chained = sql.execute("SELECT COUNT(*), COUNT(chain) FROM audit").fetchone()
        assert n == chained == want
    finally:
        first.stop()
        second.stop()


def test_a_database_from_before_the_chains_is_chained_at_its_first_start(tmp_path, postgres_url):
    """The previous version's schema (no chain columns, no anchor): the columns are added and
    the older rows chained at the first start (they were never protected); the chain holds
    from then on. Removing the chains later is refused by the anchor."""
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    steward = server.token
    try:
        made = _analyst(server)
    finally:
        server.stop()
    sql = _sql(postgres_url)
    sql.execute("ALTER TABLE audit DROP COLUMN chain")
    sql.execute("ALTER TABLE releases DROP COLUMN chain")
    sql.execute("DELETE FROM meta WHERE key = 'chained'")
    anchor = tmp_path / "svc" / "service.anchor"
    anchor.unlink()
    server = start_server(tmp_path / "svc", "--database", postgres_url)
    try:
        assert server.call("GET", "/api/me", token=made["token"])[0] == 200
        status, ok, _ = server.call("GET", "/api/audit/verify", token=steward)
        assert status == 200 and ok["entries"] == 2, ok
        value = sql.execute("SELECT value FROM meta WHERE key = 'chained'").fetchone()[0]
        assert value == "audit:2,releases:0"
    finally:
        server.stop()
    assert anchor.exists()
    # the chains removed again to launder an edit: this host's anchor remembers them
    sql.execute("UPDATE audit SET chain = NULL, detail = '{}'")
    sql.execute("DELETE FROM meta WHERE key = 'chained'")
    _refused_start(tmp_path / "svc", postgres_url, ("anchor records a chained one",))
    sql.close()


def test_sqlite_state_is_not_chained_and_old_files_open(tmp_path):
    import sqlite3

    server = start_server(tmp_path / "lite")
    try:
        status, ok, _ = server.call("GET", "/api/audit/verify", token=server.token)
        assert status == 200 and ok == {"ok": True, "chained": False, "entries": 1}, ok
    finally:
        server.stop()
    with sqlite3.connect(tmp_path / "lite" / "service.db") as con:  # the previous layout
        con.execute("ALTER TABLE audit DROP COLUMN chain")
        con.execute("ALTER TABLE releases DROP COLUMN chain")
    token = server.token
    server = start_server(tmp_path / "lite")
    try:
        status, ok, _ = server.call("GET", "/api/audit/verify", token=token)
        assert status == 200 and ok["entries"] == 1, ok
        assert not (tmp_path / "lite" / "service.anchor").exists()
    finally:
        server.stop()
