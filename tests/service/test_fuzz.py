"""1,000 malformed requests (a fixed seed) against a real server: every answer is a 4xx or a
success — never a 5xx —, every API refusal is one line of JSON, no traceback and no path of
the service's is ever sent, and the ledger still verifies afterwards."""

from __future__ import annotations

import http.client
import json
import os
import random
import urllib.parse

import pytest
from service_world import set_up, skip_without_serve, start_server

skip_without_serve()

N = 1000
SEED = int(os.environ.get("DISTPRIVACY_FUZZ_SEED", "20261127"))

PATHS = [
    "/api/me",
    "/api/overview",
    "/api/secrets",
    "/api/secrets/{s}/ledger",
    "/api/secrets/{s}/budget",
    "/api/datasets",
    "/api/uploads?name={s}",
    "/api/plans",
    "/api/plans/pending/{s}",
    "/api/plans/pending/{s}/approve",
    "/api/releases",
    "/api/releases/{s}",
    "/api/users",
    "/api/tokens/{s}/revoke",
    "/api/events",
    "/api/openapi.json",
    "/api/{s}",
    "/api",
    "/login",
    "/logout",
    "/steward/secrets",
    "/steward/plans/{s}",
    "/analyst/releases",
    "/static/{s}",
]
WORDS = [
    "hisp",
    "wave1",
    "means",
    "1",
    "0",
    "-1",
    "99999999999999999999",
    "..",
    "../..",
    "%2e%2e%2f",
    "%00",
    "é",
    "😀",
    "a" * 300,
    "<b>",
    "'",
    '"',
    "null",
    "1e308",
    " ",
    "%ff%fe",
    "\\",
    "NaN",
]
#: The API's real endpoints (method, path, whose token), chosen 80% of the time so that the
#: bodies reach the parsers and the service's checks rather than a 405 or a 401.
ENDPOINTS = [
    ("POST", "/api/releases", "analyst"),
    ("POST", "/api/releases", "analyst"),
    ("POST", "/api/releases", "analyst"),
    ("GET", "/api/releases/{s}", "analyst"),
    ("GET", "/api/secrets/{s}/ledger", "analyst"),
    ("POST", "/api/secrets", "steward"),
    ("POST", "/api/secrets/{s}/budget", "steward"),
    ("POST", "/api/datasets", "steward"),
    ("POST", "/api/uploads?name={s}", "steward"),
    ("POST", "/api/plans", "steward"),
    ("GET", "/api/plans/pending/{s}", "steward"),
    ("POST", "/api/plans/pending/{s}/approve", "steward"),
    ("POST", "/api/users", "steward"),
    ("POST", "/api/tokens/{s}/revoke", "steward"),
    ("POST", "/login", None),
    ("POST", "/analyst/releases", None),
]
METHODS = ["GET", "POST", "POST", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
CTYPES = [
    "application/json",
    "text/plain",
    "multipart/form-data",
    "multipart/form-data; boundary=zz",
    "application/x-www-form-urlencoded",
    "",
    "\x7f",
]


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(12)
    if kind == 0:
        return rng.choice(WORDS)
    if kind == 1:
        return rng.choice([0, -1, 1e308, -1e308, 1e-320, 2**70, 0.5, 1.35])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3 and depth < 4:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 4 and depth < 4:
        return {rng.choice(WORDS): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    if kind == 5:
        return {"mu": _value(rng, 4)} if rng.random() < 0.5 else {"epsilon": 1, "delta": 2}
    if kind == 6:
        return rng.choice(["hisp", "wave1", "means", "ana", "analyst", "steward", "data.csv"])
    return "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(20)))


def _body(rng: random.Random) -> bytes:
    kind = rng.randrange(10)
    if kind == 0:
        return b""
    if kind == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    if kind == 2:
        return b"[" * 20_000 + b"]" * 20_000  # nested beyond the parser's recursion
    if kind == 3:
        return rng.choice([b"NaN", b"Infinity", b'{"dataset": NaN}', b"{", b'{"a":1,}', b"\xff"])
    fields = [
        "dataset",
        "plan",
        "name",
        "secret",
        "path",
        "protect",
        "population",
        "budget",
        "reason",
        "role",
        "secrets",
        "independent",
        "same_records_as",
        "csrf",
        "token",
    ]
    obj = {rng.choice(fields): _value(rng) for _ in range(rng.randrange(6))}
    if kind == 4:
        return urllib.parse.urlencode({k: str(v) for k, v in obj.items()}).encode()
    return json.dumps(obj if kind != 5 else _value(rng)).encode()


@pytest.fixture(scope="module")
def served(tmp_path_factory, cps_files):
    server = start_server(tmp_path_factory.mktemp("state") / "svc")
    try:
        world = set_up(server, cps_files)
        yield server, world
    finally:
        server.stop()


def test_a_thousand_malformed_requests(served):
    server, world = served
    rng = random.Random(SEED)
    parts = urllib.parse.urlsplit(server.url)
    tokens = [None, server.token, world["analyst"], "dps_" + "x" * 43, "", "\u00e9" * 10]
    statuses: dict[int, int] = {}
    bad: list[str] = []
    for i in range(N):
        role = None
        if rng.random() < 0.8:
            method, path, role = rng.choice(ENDPOINTS)
        else:
            method, path = rng.choice(METHODS), rng.choice(PATHS)
        path = path.replace("{s}", urllib.parse.quote(rng.choice(WORDS), safe="%"))
        body = _body(rng) if method not in ("GET", "HEAD") or rng.random() < 0.1 else b""
        headers = {"Content-Type": rng.choice(CTYPES)}
        token = rng.choice(tokens)
        if role is not None and rng.random() < 0.8:
            token = server.token if role == "steward" else world["analyst"]
        if token is not None:
            scheme = "Bearer " if rng.random() < 0.8 else rng.choice(["bearer ", "", "Basic "])
            headers["Authorization"] = scheme + token
        if rng.random() < 0.1:
            headers["Cookie"] = rng.choice(["dps_session=abc", "dps_session=", "dps_login=x"])
        con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        try:
            con.request(method, path, body=body or None, headers=headers)
            resp = con.getresponse()
            data = resp.read()
        except UnicodeEncodeError:  # a header http.client itself refuses to send
            continue
        finally:
            con.close()
        statuses[resp.status] = statuses.get(resp.status, 0) + 1
        text = data.decode("utf-8", "replace")
        what = f"#{i} {method} {path[:80]} -> {resp.status}: {text[:200]}"
        if resp.status >= 500 or "Traceback" in text or str(server.state) in text:
            bad.append(what)
            continue
        if "/tmp/" in text or "site-packages" in text:
            bad.append(what)
            continue
        if path.startswith("/api") and method != "HEAD" and resp.status >= 400:
            try:
                out = json.loads(text)
            except ValueError:
                bad.append(what)
                continue
            if not (isinstance(out, dict) and set(out) == {"error"} and "\n" not in out["error"]):
                bad.append(what)
    print(f"{N} malformed requests: statuses {dict(sorted(statuses.items()))}")
    assert bad == [], "\n".join(bad[:20])
    assert sum(statuses.values()) >= 0.95 * N
    assert not any(s >= 500 for s in statuses)
    # the ledger is whole
    from distprivacy.ledger import Ledger

    with Ledger(server.state / "ledger.db") as led:
        assert led.verify().ok
        assert led.integrity_check() == "ok"
