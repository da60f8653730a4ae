"""A ledger of schema 2 (before secrets, issue 30) opens read-only: it verifies, shows (library
and `ledger show`), backs up; releasing, approving and registering are refused, naming the
commands of a ledger of secrets (`ledger init`, `ledger register`)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from secrets_world import make_plan

from distprivacy.cli import main
from distprivacy.ledger import Ledger, LedgerError, StewardKey
from distprivacy.targets import GDP

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ledger_schema2"


@pytest.fixture
def old(tmp_path) -> Path:
    """The committed schema-2 ledger, copied (0600)."""
    for name in ("ledger.db", "ledger.db.key"):
        shutil.copy(FIXTURE / name, tmp_path / name)
        (tmp_path / name).chmod(stat.S_IRUSR | stat.S_IWUSR)
    return tmp_path / "ledger.db"


def test_it_opens_read_only_verifies_and_shows(old):
    before = old.read_bytes()
    with Ledger(old) as led:
        assert led.read_only and led.version == 2
        assert led.verify().ok
        shown = led.show()
        json.dumps(shown, allow_nan=False)
        assert len(shown["releases"]) == 2 and len(led.releases()) == 2
        (c,) = shown["cumulative"]
        # Its μ budget held the μ label; the exact profile of DauM-G's fitted Gaussians
        # (unequal covariances) is not μ-GDP, so the budget is now shown not to hold it.
        assert c["releases"] == 2 and c["mu"] <= shown["budget"]["mu"]
        assert not c["within_budget"]
        # Stated at the releases' own δ (their plan's 0.001), not at a constant.
        assert c["at_delta"] == 1e-3
        assert "schema 2, read-only" in repr(led)
    assert old.read_bytes() == before


def test_ledger_show_and_verify_print_it(old, capsys):
    assert main(["ledger", "show", str(old)]) == 0
    out = capsys.readouterr().out.replace("\n", "")  # the console wraps long paths
    assert "2 release(s)" in out and str(old) in out
    assert main(["ledger", "show", str(old), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["releases"]) == 2
    assert main(["ledger", "verify", str(old)]) == 0


def test_it_backs_up(old, tmp_path):
    copy = tmp_path / "copy.db"
    with Ledger(old) as led:
        led.backup(copy)
    for p in (copy, Path(str(copy) + ".key")):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    with Ledger(copy) as c:
        assert c.read_only and c.verify().ok and len(c.releases()) == 2


def test_release_approve_and_register_are_refused_naming_the_new_commands(
    old, tmp_path, ledger_world
):
    steward = StewardKey.generate(tmp_path / "steward.key")
    records = tmp_path / "a.csv"
    ledger_world["data"].sample(n=100, random_state=1).to_csv(records, index=False)
    before = old.read_bytes()
    with Ledger(old) as led:
        for call in (
            lambda: led.release("means", "wave1"),
            lambda: led.approve(steward, make_plan(ledger_world["data"]), "means"),
            lambda: led.register(steward, "wave1", records),
            lambda: led.set_budget(steward, None, GDP(1.0), "more"),
            lambda: led.add_secret(steward, "sex", "sex==Female", GDP(1.0)),
        ):
            with pytest.raises(LedgerError) as err:
                call()
            msg = str(err.value)
            assert "ledger init" in msg and "ledger register" in msg and "\n" not in msg
        assert len(led.releases()) == 2
    assert old.read_bytes() == before
