"""The service's JSON API end to end on a real server: the steward declares a secret,
registers a CPS 1991 sample, reviews and approves a plan; an analyst releases twice and is
refused the third time with the budget's exact figures; the ledger and the audit log hold the
three; the client and `distprivacy release --server` speak to it."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest
from service_world import DELTA, EPSILON, ROOT, set_up, skip_without_serve, start_server

import distprivacy as dp

skip_without_serve()


@pytest.fixture(scope="module")
def flow(tmp_path_factory, cps_files):
    server = start_server(tmp_path_factory.mktemp("state") / "svc")
    try:
        world = set_up(server, cps_files)
        yield server, world
    finally:
        server.stop()


def test_first_start_prints_the_token_once_and_keeps_state_private(flow):
    server, _ = flow
    assert server.token.startswith("dps_") and len(server.token) > 40
    assert stat.S_IMODE(os.stat(server.state).st_mode) == 0o700
    for name in ("service.db", "ledger.db", "ledger.db.key"):
        assert stat.S_IMODE(os.stat(server.state / name).st_mode) == 0o600, name
    # the database holds no token, only hashes; the steward's signing key is not in clear
    raw = (server.state / "service.db").read_bytes()
    assert server.token.encode() not in raw
    assert b"PRIVATE KEY" not in raw


def test_two_releases_then_the_exact_refusal(flow):
    server, world = flow
    analyst, mu = world["analyst"], world["mu"]
    outs = []
    for k in (1, 2):
        status, out, _ = server.call(
            "POST", "/api/releases", {"dataset": "wave1", "plan": "means"}, analyst
        )
        assert status == 201, out
        assert out["release_id"] == k and out["releases_of_secret"] == k
        assert set(out["statistics"]) == {"mean(faminc)", "mean(hours)", "proportion(inlf==1)"}
        assert out["guarantee"]["mu"] == pytest.approx(mu, rel=1e-12)
        outs.append(out)
    # one release alone is the single calibration; two of one dataset lie strictly between
    # μ and √2 μ (they share F(D))
    assert outs[0]["cumulative"]["mu"] == pytest.approx(mu, rel=1e-9)
    assert mu < outs[1]["cumulative"]["mu"] < 2**0.5 * mu
    assert outs[1]["cumulative"]["epsilon"] <= EPSILON
    status, out, _ = server.call(
        "POST", "/api/releases", {"dataset": "wave1", "plan": "means"}, analyst
    )
    assert status == 409, out
    assert set(out) == {"error"}
    m = re.search(
        r"cumulative δ = ([0-9.e-]+) at ε = 0.7 \(ε = ([0-9.]+) at δ = 0.001\) would exceed the "
        r"budget \(ε, δ\) = \(0.7, 0.001\)",
        out["error"],
    )
    assert m, out["error"]
    assert float(m.group(1)) > DELTA and float(m.group(2)) > EPSILON
    assert "2 earlier releases" in out["error"] and "nothing was recorded" in out["error"]
    # the analyst sees their two releases, the steward the ledger and the three events
    status, mine, _ = server.call("GET", "/api/releases", token=analyst)
    assert status == 200 and [r["release_id"] for r in mine] == [1, 2]
    status, led, _ = server.call("GET", "/api/secrets/hisp/ledger", token=server.token)
    assert status == 200 and [r["id"] for r in led["releases"]] == [1, 2]
    assert [e["kind"] for e in led["events"]] == ["secret", "dataset", "plan"]
    status, events, _ = server.call("GET", "/api/events", token=server.token)
    releases = [e for e in events if e["action"] == "release"]
    assert [e["outcome"] for e in reversed(releases)] == ["released", "released", "refused"]
    assert all(e["user"] == "ana" for e in releases)
    assert "would exceed the budget" in releases[0]["detail"]["error"]
    # another analyst of the same secret sees neither the values nor the releases of the first
    status, bea, _ = server.call(
        "POST", "/api/users", {"name": "bea", "role": "analyst", "secrets": ["hisp"]}, server.token
    )
    assert server.call("GET", "/api/releases", token=bea["token"])[1] == []
    assert server.call("GET", "/api/releases/1", token=bea["token"])[0] == 404
    assert server.call("GET", "/api/releases/1", token=analyst)[0] == 200
    # the analyst's view of the ledger has no released values, the steward's has them
    status, seen, _ = server.call("GET", "/api/secrets/hisp/ledger", token=analyst)
    assert status == 200 and "events" not in seen
    assert all("values" not in r for r in seen["releases"])
    assert all(len(r["values"]) == 3 for r in led["releases"])


def test_a_budget_raise_is_recorded_and_lets_the_third_through(flow, cps_files):
    server, world = flow
    status, out, _ = server.call(
        "POST",
        "/api/secrets/hisp/budget",
        {"budget": {"epsilon": 0.8, "delta": DELTA}, "reason": "a third wave"},
        world["analyst"],
    )
    assert status == 403, out
    status, out, _ = server.call(
        "POST",
        "/api/secrets/hisp/budget",
        {"budget": {"epsilon": 0.8, "delta": DELTA}, "reason": "a third wave"},
        server.token,
    )
    assert status == 200, out
    status, out, _ = server.call(
        "POST", "/api/releases", {"dataset": "wave1", "plan": "means"}, world["analyst"]
    )
    assert status == 201 and out["release_id"] == 3, out
    status, led, _ = server.call("GET", "/api/secrets/hisp/ledger", token=server.token)
    assert [e["kind"] for e in led["events"]][-1] == "budget"


def test_the_client_and_the_command_line(flow, tmp_path):
    server, world = flow
    client = dp.Client(server.url, world["analyst"])
    assert client.me()["role"] == "analyst"
    assert [p["name"] for p in client.plans()["approved"]] == ["means"]
    with pytest.raises(dp.DistPrivacyError) as info:
        client.release(dataset="wave1", plan="nope")
    assert info.value.status == 404 and "no approved plan 'nope'" in str(info.value)
    token_file = tmp_path / "token"
    token_file.write_text(world["analyst"] + "\n")
    os.chmod(token_file, 0o644)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("DISTPRIVACY_TOKEN", None)
    cmd = [
        sys.executable,
        "-m",
        "distprivacy",
        "release",
        "--server",
        server.url,
        "--dataset",
        "wave1",
        "--plan",
        "means",
        "--token-file",
        str(token_file),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "readable by others" in done.stderr, done.stderr
    os.chmod(token_file, 0o600)
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=120)
    budget_left = done.returncode == 0
    if budget_left:  # run alone after the budget raise: the fourth fits or is refused
        assert json.loads(done.stdout)["plan"] == "means"
    else:
        assert done.stderr.startswith("error: release refused: cumulative δ = "), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    env["DISTPRIVACY_TOKEN"] = "dps_not-a-token"
    done = subprocess.run(cmd[:-2], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: the token is unknown or was revoked"


def test_openapi_document(flow):
    server, _ = flow
    status, doc, _ = server.call("GET", "/api/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    assert {"/api/releases", "/api/secrets/{name}/ledger"} <= set(doc["paths"])
    assert "409" in doc["paths"]["/api/releases"]["post"]["responses"]


def test_steward_token_rotation(flow):
    """A logged-in steward makes a second steward token (its own wrapped copy of the signing
    key), revokes the first; the new one signs decisions, the old one is refused."""
    server, _world = flow
    old = server.token
    status, made, _ = server.call("POST", "/api/users", {"name": "steward", "role": "steward"}, old)
    assert status == 201 and made["token"] != old
    users = server.call("GET", "/api/users", token=made["token"])[1]
    (first,) = [t for u in users if u["name"] == "steward" for t in u["tokens"] if t["id"] == 1]
    status, out, _ = server.call("POST", f"/api/tokens/{first['id']}/revoke", token=made["token"])
    assert status == 200, out
    assert server.call("GET", "/api/me", token=old)[0] == 401
    status, out, _ = server.call(
        "POST",
        "/api/secrets/hisp/budget",
        {"budget": {"epsilon": 1.0, "delta": DELTA}, "reason": "signed with the new token"},
        made["token"],
    )
    assert status == 200, out
    status, led, _ = server.call("GET", "/api/secrets/hisp/ledger", token=made["token"])
    assert [e["kind"] for e in led["events"]][-1] == "budget"
    server.token = made["token"]


def test_a_port_in_use_is_one_line(flow, tmp_path):
    server, _ = flow
    port = server.url.rsplit(":", 1)[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "distprivacy", "serve", "--state", str(tmp_path / "s"), "--port",
         port],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert not (tmp_path / "s").exists()
