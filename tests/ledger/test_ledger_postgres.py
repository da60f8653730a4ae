"""The ledger kept in PostgreSQL (issue 34), against a real server (never a mock): the whole
flow gives the same guarantees and refusals as the SQLite ledger; rows tampered with through
SQL, or the database restored from an older copy, are caught and refused; several processes
releasing at once spend exactly the budget; a database whose commits are not durable, a
database that already holds a ledger, a URL that is not PostgreSQL's and a server that does not
answer are refused in one line; a backup is an ordinary SQLite ledger; a write that fails in
the middle records nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from secrets_world import SECRET, new_ledger, release

import distprivacy
from distprivacy.composition import compose_gaussian
from distprivacy.ledger import BudgetExceededError, Ledger, LedgerError, LedgerTypeError
from distprivacy.ledger._anchor import anchor_path, read_anchor
from distprivacy.ledger._compose import merge_repeats
from distprivacy.targets import MaxAttackAccuracy

psycopg = pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg 3")


# -- helpers ------------------------------------------------------------------------------------


def _database(url: str) -> str:
    """The database named by ``url``."""
    return urlsplit(url).path.lstrip("/")


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


def _sql(url: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """``statement`` run directly on the database of ``url`` (autocommit), its rows."""
    with psycopg.connect(url, autocommit=True) as con:
        cur = con.execute(statement, params or None)
        return cur.fetchall() if cur.description is not None else []


def _count(url: str) -> int:
    return int(_sql(url, "SELECT COUNT(*) FROM releases")[0][0])


def _head(url: str) -> str:
    return str(_sql(url, "SELECT value FROM ledger_meta WHERE key = 'head'")[0][0])


def _budget_for(plan: Any, k: int) -> MaxAttackAccuracy:
    """An attack-accuracy budget that holds ``k`` releases of ``plan`` on one dataset, and
    not ``k + 1``."""

    def accuracy(m: int) -> float:
        everything = list(range(plan.model.dim))
        noise = plan.calibration.noise_covariance
        joint = compose_gaussian(plan.model, merge_repeats([(everything, noise)] * m), delta=1e-3)
        return float(joint.max_attack_accuracy)

    at_k, beyond = accuracy(k), accuracy(k + 1)
    budget = 0.5 + (at_k - 0.5) * 1.01
    assert at_k < budget < beyond
    return MaxAttackAccuracy(budget)


def _release_until_refused(path: Path, database: str | None = None) -> tuple[list[Any], str]:
    """Release ``means`` of ``wave1`` until the budget refuses: the results, the refusal."""
    out = []
    with Ledger(path, database=database) as led:
        while True:
            try:
                out.append(led.release("means", "wave1"))
            except BudgetExceededError as e:
                return out, str(e)
            assert len(out) < 50, "the budget never refused"


def _figures(show: dict[str, Any]) -> list[dict[str, Any]]:
    """What ``show()`` says of the budget and what is spent (no times, paths or values)."""
    keep = ("releases", "mu", "gdp", "epsilon", "delta", "at_delta", "delta_at_budget_epsilon",
            "max_attack_accuracy", "within_budget", "theorem", "recomputed", "budget")  # fmt: skip
    return [{k: s.get(k) for k in keep} for s in show["secrets"]]


# -- 1. the whole flow, as on SQLite ------------------------------------------------------------


def test_the_whole_flow_spends_and_refuses_as_the_sqlite_ledger(
    ledger_world, tmp_path, postgres_url
):
    budget = _budget_for(ledger_world["plan"], 3)
    pg, lite = tmp_path / "pg.db", tmp_path / "lite.db"
    new_ledger(pg, ledger_world, budget, database=postgres_url)
    new_ledger(lite, ledger_world, budget)
    assert not pg.exists()  # the rows are in PostgreSQL; the key and the anchor are files
    for p in (pg, lite):
        for f in (Path(str(p) + ".key"), anchor_path(p)):
            assert stat.S_IMODE(f.stat().st_mode) == 0o600
    got_pg, refused_pg = _release_until_refused(pg, postgres_url)
    got_lite, refused_lite = _release_until_refused(lite)
    assert len(got_pg) == len(got_lite) == 3
    assert [r.release_id for r in got_pg] == [1, 2, 3]
    assert [r.cumulative.to_dict() for r in got_pg] == [r.cumulative.to_dict() for r in got_lite]
    assert refused_pg == refused_lite and "nothing was recorded" in refused_pg
    assert "(3 earlier releases of this secret)" in refused_pg
    assert _count(postgres_url) == 3 and read_anchor(pg).releases == 3
    with Ledger(pg, database=postgres_url) as a, Ledger(lite) as b:
        report = a.verify()
        assert report.ok and report.releases == 3
        assert b.verify().ok
        shown_pg, shown_lite = a.show(), b.show()
        assert _figures(shown_pg) == _figures(shown_lite)
        assert shown_pg["secrets"][0]["releases"] == 3
        assert shown_pg["secrets"][0]["within_budget"] is True
        stored = [tuple(e.values) for e in a.releases()]
        assert stored == [tuple(float(x) for x in r.release.values) for r in got_pg]
        assert f"database={postgres_url!r}" in repr(a) and "3 releases" in repr(a)


# -- 2. rows tampered with through SQL; an older copy restored ----------------------------------


@pytest.fixture
def three(ledger_world, tmp_path, postgres_url):
    """A PostgreSQL ledger with three releases (room for more); its path."""
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world, database=postgres_url)
    for _ in range(3):
        release(path, postgres_url)
    return path


def _refused_and_unchanged(path: Path, url: str) -> str:
    """verify() fails; the next release is refused with nothing recorded; verify's reason."""
    before, head = _count(url), _head(url)
    anchor = anchor_path(path).read_bytes()
    with Ledger(path, database=url) as led:
        report = led.verify()
        assert not report.ok and report.reason
        with pytest.raises(LedgerError) as err:
            led.release("means", "wave1")
    assert not isinstance(err.value, BudgetExceededError)
    assert "\n" not in str(err.value)
    assert _count(url) == before and _head(url) == head
    assert anchor_path(path).read_bytes() == anchor
    return report.reason


def test_a_release_edited_through_sql_is_caught(three, postgres_url):
    _sql(postgres_url, "UPDATE releases SET release_values = '[0.5, 0.5]' WHERE id = 2")
    with Ledger(three, database=postgres_url) as led:
        assert led.verify().first_bad == 2
    assert "chain value does not match" in _refused_and_unchanged(three, postgres_url)


def test_the_last_release_deleted_and_an_old_head_written_back_is_caught(
    ledger_world, tmp_path, postgres_url
):
    path, url = tmp_path / "L.db", postgres_url
    new_ledger(path, ledger_world, database=url)
    heads = []
    for _ in range(3):
        release(path, url)
        heads.append(_head(url))
    _sql(url, "DELETE FROM releases WHERE id = 3")
    _sql(url, "UPDATE ledger_meta SET value = %s WHERE key = 'head'", (heads[1],))
    reason = _refused_and_unchanged(path, url)
    assert "older than its anchor: 2 releases recorded, the anchor has 3" in reason


def test_an_event_deleted_through_sql_is_caught(three, postgres_url):
    assert int(_sql(postgres_url, "SELECT COUNT(*) FROM events")[0][0]) >= 3
    _sql(postgres_url, "DELETE FROM events WHERE seq = 2")  # the registration of wave1
    reason = _refused_and_unchanged(three, postgres_url)
    assert reason == "event 3 is out of sequence (expected 2): events were removed"


def test_restoring_an_older_copy_of_the_database_is_refused(
    ledger_world, tmp_path, postgres_server, postgres_url
):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world, database=postgres_url)
    release(path, postgres_url)
    copy = f"dp_test_copy_{os.urandom(6).hex()}"
    source = _database(postgres_url)
    try:
        _sql(postgres_server, f'CREATE DATABASE "{copy}" TEMPLATE "{source}"')
        release(path, postgres_url)
        old = _with_database(postgres_url, copy)
        assert _count(old) == 1
        reason = _refused_and_unchanged(path, old)
        assert reason == (
            "the ledger is older than its anchor: 1 releases recorded, the anchor has 2: it "
            "was restored from an older copy or rows were removed"
        )
        with Ledger(path, database=old) as led, pytest.raises(LedgerError) as err:
            led.release("means", "wave1")
        assert "older than its anchor" in str(err.value)
        with Ledger(path, database=postgres_url) as led:
            assert led.verify().ok  # the live database is untouched
    finally:
        _sql(postgres_server, f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')


# -- 3. several processes release at once -------------------------------------------------------

_RELEASER = """
import json, sys, warnings
warnings.simplefilter("ignore")
from distprivacy.ledger import BudgetExceededError, Ledger
path, url = sys.argv[1], sys.argv[2]
ids = []
with Ledger(path, database=url) as led:
    print("ready", flush=True)
    sys.stdin.readline()
    while True:
        try:
            ids.append(led.release("means", "wave1").release_id)
        except BudgetExceededError:
            break
print(json.dumps(ids), flush=True)
"""


def test_processes_releasing_at_once_spend_exactly_the_budget(ledger_world, tmp_path, postgres_url):
    """Three processes release against one PostgreSQL ledger until refused: the number
    recorded is what a sequential SQLite twin allows, none lost or counted twice."""
    budget = _budget_for(ledger_world["plan"], 8)
    twin = tmp_path / "twin.db"
    new_ledger(twin, ledger_world, budget)
    k = len(_release_until_refused(twin)[0])
    assert k == 8
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world, budget, database=postgres_url)
    env = {**os.environ, "PYTHONPATH": str(Path(distprivacy.__file__).parents[1])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RELEASER, str(path), postgres_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(30)
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
    ids = [i for out, _ in results for i in json.loads(out.strip().splitlines()[-1])]
    assert sorted(ids) == list(range(1, k + 1))  # none lost, none twice, contiguous
    assert sum(1 for out, _ in results if json.loads(out.strip().splitlines()[-1])) >= 2
    stored = _sql(postgres_url, "SELECT id FROM releases ORDER BY id")
    assert [int(r[0]) for r in stored] == list(range(1, k + 1))
    assert read_anchor(path).releases == k
    with Ledger(path, database=postgres_url) as led, Ledger(twin) as lite:
        assert led.verify().ok
        assert _figures(led.show()) == _figures(lite.show())
        with pytest.raises(BudgetExceededError):
            led.release("means", "wave1")
    assert _count(postgres_url) == k


# -- 4. what is refused before anything is read -------------------------------------------------


def test_a_database_whose_commits_are_not_durable_is_refused(ledger_world, tmp_path, postgres_url):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world, database=postgres_url)
    _sql(postgres_url, f'ALTER DATABASE "{_database(postgres_url)}" SET synchronous_commit = off')
    with pytest.raises(LedgerError) as err:
        Ledger(path, database=postgres_url)
    msg = str(err.value)
    assert "synchronous_commit" in msg and "\n" not in msg
    # and a new ledger is not made in such a database either (nothing left behind)
    other = tmp_path / "M.db"
    _sql(postgres_url, "DROP SCHEMA public CASCADE")
    _sql(postgres_url, "CREATE SCHEMA public")
    with pytest.raises(LedgerError, match="synchronous_commit"):
        new_ledger(other, ledger_world, database=postgres_url)
    assert not Path(str(other) + ".key").exists() and not anchor_path(other).exists()
    assert "ledger_meta" not in {
        r[0]
        for r in _sql(
            postgres_url,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
        )
    }


def test_a_database_that_holds_a_ledger_is_not_initialised_again(
    ledger_world, tmp_path, postgres_url
):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world, database=postgres_url)
    release(path, postgres_url)
    head = _head(postgres_url)
    other = tmp_path / "M.db"
    with pytest.raises(LedgerError, match="already holds a distprivacy ledger") as err:
        new_ledger(other, ledger_world, database=postgres_url)
    assert "\n" not in str(err.value)
    assert not Path(str(other) + ".key").exists() and not anchor_path(other).exists()
    assert _head(postgres_url) == head and _count(postgres_url) == 1
    with Ledger(path, database=postgres_url) as led:
        assert led.verify().ok


def test_an_empty_database_holds_no_ledger(tmp_path, postgres_url):
    with pytest.raises(LedgerError, match="holds no distprivacy ledger"):
        Ledger(tmp_path / "L.db", database=postgres_url)


def test_a_url_that_is_not_postgresql_is_a_type_error(ledger_world, tmp_path):
    from distprivacy.ledger import StewardKey

    for i, url in enumerate(("sqlite:///x.db", "mysql://u@h/x", 5432)):
        with pytest.raises(LedgerTypeError, match="PostgreSQL URL"):
            Ledger(tmp_path / "L.db", database=url)  # type: ignore[arg-type]
        with pytest.raises(LedgerTypeError, match="PostgreSQL URL"):
            Ledger.init(
                tmp_path / "L.db",
                steward=StewardKey.generate(tmp_path / f"steward{i}.key"),
                secret=SECRET,
                protect="income==>50K",
                budget=MaxAttackAccuracy(0.9),
                population=ledger_world["population"],
                database=url,  # type: ignore[arg-type]
            )
    assert not list(tmp_path.glob("L.db*"))


def test_an_unreachable_server_is_one_line_without_the_password(ledger_world, tmp_path):
    url = "postgresql://u:secretpw@127.0.0.1:1/x"
    with pytest.raises(LedgerError) as err:
        Ledger(tmp_path / "L.db", database=url)
    msg = str(err.value)
    assert "secretpw" not in msg and "\n" not in msg
    assert "cannot connect" in msg and "127.0.0.1:1" in msg
    with pytest.raises(LedgerError) as err:
        new_ledger(tmp_path / "M.db", ledger_world, database=url)
    assert "secretpw" not in str(err.value) and "\n" not in str(err.value)
    assert not Path(str(tmp_path / "M.db") + ".key").exists()  # what init made, removed
    assert not anchor_path(tmp_path / "M.db").exists()


# -- 5. a backup is an ordinary SQLite ledger ---------------------------------------------------


def test_a_backup_is_an_sqlite_ledger_that_verifies(ledger_world, tmp_path, postgres_url):
    path = tmp_path / "L.db"
    new_ledger(path, ledger_world, database=postgres_url)
    for _ in range(2):
        release(path, postgres_url)
    out = tmp_path / "backup.db"
    with Ledger(path, database=postgres_url) as led:
        assert led.backup(out) == out
        live = led.releases()
        live_head = led.verify().head
    for f in (out, Path(str(out) + ".key"), anchor_path(out)):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert read_anchor(out) == read_anchor(path)
    import sqlite3

    con = sqlite3.connect(out)
    try:
        assert con.execute("SELECT value FROM ledger_meta WHERE key = 'head'").fetchone()[0] == (
            _head(postgres_url)
        )
    finally:
        con.close()
    with Ledger(out) as copy:
        assert copy.database is None
        report = copy.verify()
        assert report.ok and report.releases == 2 and report.head == live_head
        assert [(e.id, e.values, e.cumulative) for e in copy.releases()] == [
            (e.id, e.values, e.cumulative) for e in live
        ]
        copy.release("means", "wave1")  # the copy is a ledger of its own
        assert copy.verify().ok
    assert _count(postgres_url) == 2


# -- 6. a write that fails in the middle --------------------------------------------------------

_FAIL = (
    "CREATE FUNCTION dp_fail() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$"
)


@pytest.mark.parametrize(
    "trigger",
    [
        "CREATE TRIGGER dp_fail BEFORE INSERT ON releases FOR EACH ROW EXECUTE FUNCTION dp_fail()",
        # raised at COMMIT: the transaction ends in ROLLBACK, which must not pass for a commit
        "CREATE CONSTRAINT TRIGGER dp_fail AFTER INSERT ON releases DEFERRABLE INITIALLY "
        "DEFERRED FOR EACH ROW EXECUTE FUNCTION dp_fail()",
        # the head's update fails after the row went in
        "CREATE TRIGGER dp_fail BEFORE UPDATE ON ledger_meta FOR EACH ROW EXECUTE FUNCTION "
        "dp_fail()",
    ],
    ids=["insert", "commit", "head"],
)
def test_a_write_that_fails_midway_records_nothing(ledger_world, tmp_path, postgres_url, trigger):
    path, url = tmp_path / "L.db", postgres_url
    new_ledger(path, ledger_world, database=url)
    release(path, url)
    head, anchor = _head(url), anchor_path(path).read_bytes()
    _sql(url, _FAIL)
    _sql(url, trigger)
    with Ledger(path, database=url) as led:
        with pytest.raises(LedgerError) as err:
            led.release("means", "wave1")
        msg = str(err.value)
        assert not isinstance(err.value, BudgetExceededError)
        assert "\n" not in msg and "nothing was recorded" in msg
        assert "was recorded in" not in msg  # not the "recorded but must not be revealed" case
        assert _count(url) == 1 and _head(url) == head
        assert anchor_path(path).read_bytes() == anchor
        assert led.verify().ok
        table = "ledger_meta" if "ledger_meta" in trigger else "releases"
        _sql(url, f"DROP TRIGGER dp_fail ON {table}")
        r = led.release("means", "wave1")  # the same connection works again
        assert r.release_id == 2
        assert led.verify().ok
    assert read_anchor(path).releases == 2 and _count(url) == 2


# -- the steward's commands on a PostgreSQL ledger ------------------------------------------------


def test_ledger_verify_show_and_backup_take_database(three, postgres_url, tmp_path, capsys):
    """`ledger verify|show|backup PATH --database URL` read the live PostgreSQL ledger; an edit
    through SQL fails verify (exit 1 naming the row); a database without a ledger and a URL that
    is not PostgreSQL are one line each (exit 2)."""
    from distprivacy.cli import main

    assert main(["ledger", "verify", str(three), "--database", postgres_url]) == 0
    assert "verified 3 release(s)" in " ".join(capsys.readouterr().out.split())
    assert main(["ledger", "show", str(three), "--database", postgres_url, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["releases"]) == 3
    copy = tmp_path / "copy.db"
    assert main(["ledger", "backup", str(three), str(copy), "--database", postgres_url]) == 0
    capsys.readouterr()
    assert main(["ledger", "verify", str(copy)]) == 0  # the copy: an SQLite ledger, no server
    assert "verified 3 release(s)" in " ".join(capsys.readouterr().out.split())
    _sql(postgres_url, "UPDATE releases SET release_values = '[0.5, 0.5]' WHERE id = 2")
    assert main(["ledger", "verify", str(three), "--database", postgres_url]) == 1
    assert "FAILED at release 2" in capsys.readouterr().err
    empty = postgres_url.rsplit("/", 1)[0] + "/postgres"
    for url, words in ((empty, "holds no distprivacy ledger"), ("mysql://x@h/y", "PostgreSQL URL")):
        assert main(["ledger", "show", str(three), "--database", url]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
