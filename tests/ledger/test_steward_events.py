"""The steward's key and signed events (issue 30, "two keys, two roles"): only the steward's
Ed25519 key makes an event the ledger accepts; an edited, reordered, removed or foreign event
is named."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import stat

import pytest

from distprivacy.ledger._entry import LedgerError
from distprivacy.ledger._registry import (
    REGISTRY_SCHEMA,
    Registry,
    append_event,
    check_events,
    read_events,
)
from distprivacy.ledger._steward import StewardKey, StewardPublicKey

LEDGER_ID = "00" * 16


@pytest.fixture
def steward(tmp_path):
    return StewardKey.generate(tmp_path / "steward.key")


@pytest.fixture
def con():
    c = sqlite3.connect(":memory:")
    for stmt in REGISTRY_SCHEMA:
        c.execute(stmt)
    return c


def test_key_file_is_private_exclusive_and_round_trips(steward, tmp_path):
    p = tmp_path / "steward.key"
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    again = StewardKey.load(p)
    assert again.public == steward.public
    assert len(steward.public.fingerprint) == 16
    with pytest.raises(LedgerError, match="already exists"):
        StewardKey.generate(p)
    assert StewardKey.load(p).public == steward.public  # not overwritten


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "not a regular file"),
        (lambda p: p.write_text("not a key"), "cannot be read"),
    ],
)
def test_bad_key_files_are_one_line_errors(tmp_path, make, words):
    p = tmp_path / "k.pem"
    make(p)
    if p.is_file():
        os.chmod(p, 0o600)
    with pytest.raises(LedgerError, match=words) as e:
        StewardKey.load(p)
    assert "\n" not in str(e.value)


def test_a_key_readable_by_others_is_refused(steward, tmp_path):
    p = tmp_path / "steward.key"
    os.chmod(p, 0o644)
    with pytest.raises(LedgerError, match="chmod 600"):
        StewardKey.load(p)


def test_public_key_text_is_checked():
    with pytest.raises(LedgerError, match="64 hex digits"):
        StewardPublicKey("abc")


def _budget(mu: float) -> dict:
    return {"kind": "mu", "mu": mu, "epsilon": None, "delta": None}


def _secret(con, steward, name="s", mu=0.3):
    payload = {
        "property": "income==>50K",
        "population": {"name": "adult", "fingerprint": "x"},
        "budget": _budget(mu),
    }
    return append_event(con, steward, LEDGER_ID, steward.public, "secret", name, payload)


def test_events_chain_and_replay(con, steward):
    _secret(con, steward)
    append_event(
        con, steward, LEDGER_ID, steward.public, "budget", "s",
        {"secret": "s", "budget": _budget(0.5), "previous": _budget(0.3), "reason": "more"},
    )  # fmt: skip
    events = read_events(con)
    assert [e.seq for e in events] == [1, 2]
    assert check_events(events, LEDGER_ID, steward.public) is None
    reg = Registry.from_events(events)
    assert reg.secret("s").budget.mu == 0.5
    assert reg.secret(None).name == "s"


def test_a_releaser_without_the_steward_key_cannot_add_or_edit_events(con, steward, tmp_path):
    _secret(con, steward)
    other = StewardKey.generate(tmp_path / "releaser.key")
    # Signing with another key is refused up front ...
    with pytest.raises(LedgerError, match="not the ledger's steward"):
        append_event(con, other, LEDGER_ID, steward.public, "secret", "t", {})
    # ... and an event written by hand with another key's signature fails verification.
    append_event(
        con, other, LEDGER_ID, other.public, "budget", "s",
        {"secret": "s", "budget": _budget(9.0), "previous": _budget(0.3), "reason": "x"},
    )  # fmt: skip
    why = check_events(read_events(con), LEDGER_ID, steward.public)
    assert why is not None and "not signed by the ledger's steward" in why


@pytest.mark.parametrize("edit", ["payload", "delete_first", "other_ledger", "reorder"])
def test_edited_events_are_named(con, steward, edit):
    _secret(con, steward, "a")
    _secret(con, steward, "b")
    events = read_events(con)
    ledger_id = LEDGER_ID
    if edit == "payload":
        e = events[0]
        events[0] = dataclasses.replace(e, payload={**e.payload, "budget": _budget(99.0)})
    elif edit == "delete_first":
        events = events[1:]
    elif edit == "other_ledger":
        ledger_id = "11" * 16
    else:
        events = events[::-1]
    why = check_events(events, ledger_id, steward.public)
    assert why is not None and "event" in why


def test_replay_refuses_inconsistent_events(con, steward):
    _secret(con, steward, "a")
    _secret(con, steward, "a")  # signed, but a second declaration of one secret
    with pytest.raises(LedgerError, match="declared twice"):
        Registry.from_events(read_events(con))
