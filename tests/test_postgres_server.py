"""The PostgreSQL fixtures themselves (tests/postgres_server.py, conftest's ``postgres_server``
and ``postgres_url``) against a real server: a real process, fresh databases that do not see
each other, dropped after; the skip reasons without binaries or driver name what to install."""

from __future__ import annotations

import os
import pwd
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import postgres_server as pg
import pytest


def _connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _database_exists(base_url: str, name: str) -> bool:
    with _connect(base_url) as admin:
        row = admin.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [name])
        return row.fetchone() == (1,)


def test_server_is_a_real_postgresql_process(postgres_server):
    with _connect(postgres_server) as conn:
        version = conn.execute("SELECT version()").fetchone()[0]
        number = int(conn.execute("SHOW server_version_num").fetchone()[0])
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        ours = not os.environ.get(pg.ENV_VAR)
        status = Path(f"/proc/{pid}/status").read_text() if ours else ""  # while it serves us
    assert version.startswith("PostgreSQL ")
    assert number >= 130000  # DROP DATABASE … WITH (FORCE)
    if ours:  # a process on this machine, run as postgres
        assert status.startswith("Name:\tpostgres\n")
        uid = int(next(ln for ln in status.splitlines() if ln.startswith("Uid:")).split()[1])
        if os.geteuid() == 0:
            assert uid == pwd.getpwnam("postgres").pw_uid
        assert urlsplit(postgres_server).hostname == "127.0.0.1"


def test_postgres_url_is_an_empty_database_that_keeps_rows(postgres_url, postgres_server):
    name = urlsplit(postgres_url).path.lstrip("/")
    assert name.startswith("dp_test_") and name != urlsplit(postgres_server).path.lstrip("/")
    with _connect(postgres_url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == (name,)
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)
        conn.execute("CREATE TABLE spend (id serial PRIMARY KEY, secret text, eps float8)")
        conn.execute(
            "INSERT INTO spend (secret, eps) VALUES (%s, %s), (%s, %s)",
            ["income", 0.25, "income", 0.5],
        )
    with _connect(postgres_url) as conn:  # a second connection reads what the first committed
        rows = conn.execute("SELECT secret, eps FROM spend ORDER BY id").fetchall()
    assert rows == [("income", 0.25), ("income", 0.5)]


def test_fresh_databases_are_separate_and_dropped_even_with_open_connections(postgres_server):
    import psycopg

    with pg.fresh_database(postgres_server) as a, pg.fresh_database(postgres_server) as b:
        assert a != b
        with _connect(a) as conn:
            conn.execute("CREATE TABLE only_in_a (x int)")
        with _connect(b) as conn:
            assert conn.execute("SELECT to_regclass('only_in_a')").fetchone() == (None,)
        names = [urlsplit(u).path.lstrip("/") for u in (a, b)]
        assert all(_database_exists(postgres_server, n) for n in names)
        left_open = _connect(a)  # a test that forgets to close: the drop must not wait on it
    try:
        assert not any(_database_exists(postgres_server, n) for n in names)
        with pytest.raises(psycopg.OperationalError):
            left_open.execute("SELECT 1")
    finally:
        left_open.close()


def test_a_named_server_is_used_as_it_is(postgres_server):
    env = {pg.ENV_VAR: postgres_server}
    assert pg.locate(env) == postgres_server
    with pg.server(pg.locate(env)) as url:
        assert url == postgres_server


def test_a_named_server_that_does_not_answer_is_an_error_not_a_skip():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {pg.ENV_VAR: f"postgresql://postgres@127.0.0.1:{port}/postgres"}
    with pytest.raises(RuntimeError, match=f"^{pg.ENV_VAR} names a server that does not answer"):
        with pg.server_or_skip(env):
            pass


def test_a_named_server_must_be_a_url():
    with pytest.raises(RuntimeError, match=f"^{pg.ENV_VAR} must be a URL"):
        with pg.server_or_skip({pg.ENV_VAR: "host=127.0.0.1 dbname=postgres"}):
            pass


def test_without_binaries_the_skip_names_the_package(tmp_path):
    with pytest.raises(pytest.skip.Exception) as skipped:
        pg.server_or_skip(env={}, debian_root=tmp_path)
    assert skipped.value.msg == pg.INSTALL_SERVER
    assert "apt-get install postgresql" in skipped.value.msg
    assert f"{pg.ENV_VAR}=postgresql://" in skipped.value.msg


def test_without_psycopg_the_skip_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(pytest.skip.Exception) as skipped:
        pg.server_or_skip()
    assert skipped.value.msg == pg.INSTALL_DRIVER
    assert "pip install 'distprivacy[postgres]'" in skipped.value.msg


def test_the_newest_complete_debian_version_is_found(tmp_path):
    for version, names in {
        "9.6": ["initdb", "pg_ctl", "postgres"],
        "15": ["initdb", "pg_ctl", "postgres"],
        "16": ["initdb", "postgres"],  # no pg_ctl: not a usable installation
    }.items():
        (tmp_path / version / "bin").mkdir(parents=True)
        for name in names:
            (tmp_path / version / "bin" / name).write_text("")
    assert pg.find_binaries(tmp_path) == tmp_path / "15" / "bin"
    assert pg.find_binaries(tmp_path / "none") is None


def test_a_port_taken_before_the_start_is_retried(monkeypatch):
    bindir = pg.find_binaries()
    if bindir is None:
        pytest.skip(pg.INSTALL_SERVER)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = [taken.getsockname()[1]]
    real_free_port = pg.free_port
    monkeypatch.setattr(pg, "free_port", lambda: ports.pop() if ports else real_free_port())
    local = pg.LocalServer(bindir)
    try:
        url = local.start()
        assert local.port != taken.getsockname()[1]
        assert pg.check_server(url).startswith("PostgreSQL ")
        root = local.root
    finally:
        local.stop()
        taken.close()
    assert root is not None and not root.exists()
