"""Security of the service on a real server: tokens and roles (401/403), revocation, CSRF on
every form, registration paths (traversal, symlinks, FIFOs, directories), what an analyst may
read (never moments, keys, data paths or another secret), HTML injection escaped under a
strict CSP, and oversize bodies (413)."""

from __future__ import annotations

import json
import os
import re
import urllib.parse

import pytest
from pages_client import Pages
from service_world import PROTECT, set_up, skip_without_serve, start_server, upload

skip_without_serve()


@pytest.fixture(scope="module")
def world(tmp_path_factory, cps_files):
    server = start_server(tmp_path_factory.mktemp("state") / "svc", "--max-upload", "1000000")
    try:
        w = set_up(server, cps_files)
        st = server.token
        # a second secret the analyst may not use, with its own dataset and plan
        pop = upload(server, st, cps_files["population"], "population2.csv")
        status, out, _ = server.call(
            "POST",
            "/api/secrets",
            {
                "name": "other",
                "protect": PROTECT,
                "population": pop,
                "budget": {"epsilon": 1.0, "delta": 1e-3},
            },
            st,
        )
        assert status == 201, out
        w2 = upload(server, st, cps_files["wave2"])
        status, out, _ = server.call(
            "POST",
            "/api/datasets",
            {
                "name": "secret-wave",
                "secret": "other",
                "path": w2,
                "confirm_overlap": "a test of scope",
            },
            st,
        )
        assert status == 201, out
        plan = json.loads(cps_files["plan"].read_text())
        status, out, _ = server.call("POST", "/api/plans", {"secret": "other", "plan": plan}, st)
        pid = out["pending"]
        status, out, _ = server.call(
            "POST", f"/api/plans/pending/{pid}/approve", {"name": "other-means"}, st
        )
        assert status == 200, out
        w["other_pending"] = pid
        w["plan"] = plan
        yield server, w
    finally:
        server.stop()


def one_line_error(status_body: tuple[int, object, dict], status: int, server) -> str:
    got, body, _ = status_body
    assert got == status, body
    assert isinstance(body, dict) and set(body) == {"error"}, body
    text = body["error"]
    assert "\n" not in text and "Traceback" not in text
    assert str(server.state) not in text and "/tmp" not in text, text
    return text


STEWARD_ONLY = [
    (
        "POST",
        "/api/secrets",
        {"name": "x", "protect": PROTECT, "population": "p.csv", "budget": {"mu": 1}},
    ),
    ("POST", "/api/secrets/hisp/budget", {"budget": {"mu": 9}, "reason": "more"}),
    ("POST", "/api/datasets", {"name": "x", "secret": "hisp", "path": "x.csv"}),
    ("POST", "/api/plans", {"secret": "hisp", "plan": {}}),
    ("GET", "/api/plans/pending/1", None),
    ("POST", "/api/plans/pending/1/approve", {"name": "stolen"}),
    ("GET", "/api/users", None),
    ("POST", "/api/users", {"name": "mallory", "role": "steward"}),
    ("POST", "/api/tokens/1/revoke", None),
    ("GET", "/api/events", None),
    ("POST", "/api/uploads?name=x.csv", None),
]


@pytest.mark.parametrize(("method", "path", "body"), STEWARD_ONLY)
def test_no_token_401_analyst_403(world, method, path, body):
    server, w = world
    raw = b"a,b\n1,2\n" if path.startswith("/api/uploads") else None
    got = server.call(method, path, body, raw=raw)
    one_line_error(got, 401, server)
    assert got[2].get("www-authenticate") == "Bearer"
    got = server.call(method, path, body, w["analyst"], raw=raw)
    assert "steward" in one_line_error(got, 403, server)
    got = server.call(method, path, body, "dps_" + "A" * 43, raw=raw)
    one_line_error(got, 401, server)


def test_a_steward_does_not_release_and_bad_auth_headers(world):
    server, _w = world
    got = server.call("POST", "/api/releases", {"dataset": "wave1", "plan": "means"}, server.token)
    one_line_error(got, 403, server)
    for header in ("Basic abc", "Bearer", "Bearer  ", "bearer " + "x" * 5000, "Token abc"):
        got = server.call("GET", "/api/me", headers={"Authorization": header})
        assert got[0] in (401, 400), got


def test_a_revoked_token_and_its_sessions(world):
    server, _w = world
    status, made, _ = server.call(
        "POST", "/api/users", {"name": "bob", "role": "analyst", "secrets": ["hisp"]}, server.token
    )
    assert status == 201
    browser = Pages(server.url)
    assert browser.login(made["token"]) == 303
    assert browser.get("/analyst")[0] == 200
    assert server.call("GET", "/api/me", token=made["token"])[0] == 200
    status, out, _ = server.call(
        "POST", f"/api/tokens/{made['token_id']}/revoke", token=server.token
    )
    assert status == 200 and out["revoked"]
    one_line_error(server.call("GET", "/api/me", token=made["token"]), 401, server)
    status, _, hdrs = browser.get("/analyst")
    assert status == 303 and hdrs["location"] == "/login"
    assert browser.login(made["token"]) == 401
    # the last steward token cannot be revoked (the service would lose its steward)
    users = server.call("GET", "/api/users", token=server.token)[1]
    (st,) = [t for u in users if u["role"] == "steward" for t in u["tokens"]]
    one_line_error(
        server.call("POST", f"/api/tokens/{st['id']}/revoke", token=server.token), 409, server
    )


STEWARD_FORMS = [
    (
        "/steward/secrets",
        {
            "name": "s2",
            "protect": PROTECT,
            "population_path": "x.csv",
            "budget_kind": "mu",
            "budget_value": "1",
        },
    ),
    ("/steward/datasets", {"name": "d2", "secret": "hisp", "file_path": "x.csv"}),
    ("/steward/plans", {"secret": "hisp"}),
    (
        "/steward/budget",
        {"secret": "hisp", "budget_kind": "mu", "budget_value": "9", "reason": "csrf"},
    ),
    ("/steward/users", {"name": "eve", "role": "steward"}),
    ("/steward/tokens/1/revoke", {}),
    ("/steward/plans/1/approve", {"name": "csrf"}),
    ("/logout", {}),
]


def test_csrf_on_every_form(world):
    server, w = world
    steward = Pages(server.url)
    assert steward.login(server.token) == 303
    good = steward.csrf
    assert good
    for path, fields in STEWARD_FORMS:
        for csrf in (None, "", "x" * 43, good[:-1] + ("A" if good[-1] != "A" else "B")):
            data = dict(fields)
            if csrf is not None:
                data["csrf"] = csrf
            status, text, _ = steward.post(path, data, csrf=False)
            assert status == 403, (path, csrf, status)
            assert "CSRF" in text
    analyst = Pages(server.url)
    assert analyst.login(w["analyst"]) == 303
    for csrf in (None, good):  # another session's token does not do either
        data = {"dataset": "wave1", "plan": "means"}
        if csrf is not None:
            data["csrf"] = csrf
        status, _, _ = analyst.post("/analyst/releases", data, csrf=False)
        assert status == 403
    # the login form too: without the cookie's nonce, or with another
    fresh = Pages(server.url)
    status, _, _ = fresh.post("/login", {"token": server.token, "csrf": "forged"}, csrf=False)
    assert status == 403
    # no release, no budget change, no user happened
    events = server.call("GET", "/api/events", token=server.token)[1]
    assert not [e for e in events if e["subject"] in ("eve", "s2", "d2")]
    assert not [e for e in events if e["detail"].get("reason") == "csrf"]
    # cookies: HttpOnly and SameSite=Strict
    probe = Pages(server.url)
    probe.get("/login")
    status, _, hdrs = probe.post("/login", {"token": server.token})
    cookies = hdrs["set-cookie"].lower().splitlines()
    assert any(c.startswith("dps_session=") for c in cookies)
    assert all("httponly" in c and "samesite=strict" in c for c in cookies), cookies


def test_registration_paths(world, tmp_path):
    server, _w = world
    root = server.state / "data"
    outside = tmp_path / "outside.csv"
    outside.write_text("hispanic,faminc\n1,2\n")
    os.symlink(outside, root / "link.csv")
    os.symlink(server.state / "ledger.db.key", root / "key.csv")
    os.mkfifo(root / "fifo.csv")
    (root / "dir.csv").mkdir()
    bad = {
        "../service.db": "no '..'",
        "uploads/../../ledger.db": "no '..'",
        "/etc/passwd": "not absolute",
        str(server.state / "ledger.db.key"): "not absolute",
        "~/x.csv": "not absolute",
        "link.csv": "symbolic link",
        "key.csv": "symbolic link",
        "fifo.csv": "not a regular file",
        "dir.csv": "not a regular file",
        "missing.csv": "no file",
        "a\x00b.csv": "relative to the data directory",
        "": "relative to the data directory",
    }
    for path, words in bad.items():
        got = server.call(
            "POST", "/api/datasets", {"name": "evil", "secret": "hisp", "path": path}, server.token
        )
        text = one_line_error(got, 400, server)
        assert words in text, (path, text)
    # an upload's name never chooses where it lands
    for name in ("../../ledger.db.csv", "/etc/x.csv", "..\\..\\x.csv", ".hidden.csv"):
        status, out, _ = server.call(
            "POST", f"/api/uploads?name={name}", raw=b"a\n1\n", token=server.token
        )
        assert status == 201 and re.fullmatch(r"uploads/[0-9a-f]{16}-[A-Za-z0-9._-]+", out["path"])
        assert ".." not in out["path"]
    one_line_error(
        server.call("POST", "/api/uploads?name=x.sh", raw=b"a", token=server.token), 400, server
    )


def test_an_analyst_reads_no_moments_keys_paths_or_other_secrets(world):
    server, w = world
    a = w["analyst"]
    one_line_error(server.call("GET", "/api/secrets/other/ledger", token=a), 404, server)
    one_line_error(
        server.call("GET", f"/api/plans/pending/{w['other_pending']}", token=a), 403, server
    )
    one_line_error(
        server.call("POST", "/api/releases", {"dataset": "secret-wave", "plan": "other-means"}, a),
        404,
        server,
    )
    one_line_error(
        server.call("POST", "/api/releases", {"dataset": "wave1", "plan": "other-means"}, a),
        404,
        server,
    )
    # everything the analyst can GET, as text: no other secret, no path, no key, no moments
    seen = ""
    for path in (
        "/api/me",
        "/api/overview",
        "/api/secrets",
        "/api/datasets",
        "/api/plans",
        "/api/releases",
        "/api/secrets/hisp/ledger",
        "/api/openapi.json",
    ):
        status, body, _ = server.call("GET", path, token=a)
        assert status == 200, path
        seen += json.dumps(body)
    pages = Pages(server.url)
    pages.login(a)
    seen += pages.get("/analyst")[1]
    assert "other" not in seen.replace("another", "")
    assert "secret-wave" not in seen
    assert str(server.state) not in seen and "uploads/" not in seen
    assert "ledger.db" not in seen and ".key" not in seen
    model = w["plan"]["model"]
    moments = [
        x
        for x in json.dumps(model).replace("[", " ").replace("]", " ").replace(",", " ").split()
        if re.fullmatch(r"-?\d+\.\d{6,}(e-?\d+)?", x)
    ]
    assert len(moments) > 10
    leaked = [x for x in moments if x in seen]
    assert leaked == []
    for field in ("model", "statistic_levels", "noise_covariance", "data_fingerprint"):
        assert f'"{field}"' not in seen


EVIL = "<img src=x onerror=alert(1)>"


def test_html_injection_is_escaped_under_a_strict_csp(world, cps_files, tmp_path):
    """A column named like markup (it reaches the plan's statistics' names, shown on the
    review, dashboard and analyst pages), a budget's reason and names in refusals."""
    import pandas as pd

    from distprivacy.cli import main

    server, _w = world
    st = server.token
    pop = pd.read_csv(cps_files["population"]).rename(columns={"hours": EVIL})
    pop.to_csv(tmp_path / "evil-pop.csv", index=False)
    pop.sample(n=100, random_state=3).to_csv(tmp_path / "evil-wave.csv", index=False)
    plan = tmp_path / "evil-plan.json"
    assert (
        main(
            [
                "calibrate",
                "--data",
                str(tmp_path / "evil-pop.csv"),
                "--protect",
                PROTECT,
                "--values",
                "0.05,0.10,0.15",
                "--statistics",
                f"mean:faminc,mean:{EVIL},proportion:inlf==1",
                "--subset-size",
                "100",
                "--mechanism",
                "DauM-G",
                "--epsilon",
                "0.5",
                "--save",
                str(plan),
            ]
        )
        == 0
    )
    status, out, _ = server.call(
        "POST",
        "/api/secrets",
        {
            "name": "markup",
            "protect": PROTECT,
            "population": upload(server, st, tmp_path / "evil-pop.csv"),
            "budget": {"epsilon": 1.0, "delta": 1e-3},
        },
        st,
    )
    assert status == 201, out
    status, out, _ = server.call(
        "POST",
        "/api/datasets",
        {
            "name": "markup-wave",
            "secret": "markup",
            "path": upload(server, st, tmp_path / "evil-wave.csv"),
            "confirm_overlap": "the same people as hisp, on purpose",
        },
        st,
    )
    assert status == 201, out
    status, out, _ = server.call(
        "POST", "/api/plans", {"secret": "markup", "plan": json.loads(plan.read_text())}, st
    )
    pid = out["pending"]
    status, out, _ = server.call(
        "POST",
        "/api/secrets/markup/budget",
        {"budget": {"epsilon": 1.1, "delta": 1e-3}, "reason": EVIL},
        st,
    )
    assert status == 200, out
    status, made, _ = server.call(
        "POST", "/api/users", {"name": "mark", "role": "analyst", "secrets": ["markup"]}, st
    )
    steward = Pages(server.url)
    steward.login(st)
    review = steward.get(f"/steward/plans/{pid}")
    assert f"mean({EVIL})" not in review[1] and "mean(&lt;img src=x" in review[1]
    steward.post(f"/steward/plans/{pid}/approve", {"name": "markup-means"})
    analyst = Pages(server.url)
    analyst.login(made["token"])
    status, text, _ = analyst.post(
        "/analyst/releases", {"dataset": "markup-wave", "plan": "markup-means"}
    )
    assert status == 200 and "mean(&lt;img src=x onerror=alert(1)&gt;)" in text
    refused = analyst.post("/analyst/releases", {"dataset": EVIL, "plan": EVIL})
    assert refused[0] == 404 and "no approved plan &#39;&lt;img" in refused[1]
    pages = [
        review,
        steward.get("/steward"),
        analyst.get("/analyst"),
        refused,
        analyst.get("/analyst/releases/1"),
        steward.get("/nowhere" + urllib.parse.quote(EVIL)),
    ]
    for _status, text, hdrs in pages:
        assert EVIL not in text, text[:2000]
        assert "<script" not in text and " style=" not in text
        csp = hdrs["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp
        assert "'unsafe-inline'" not in csp
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[1][1]  # the reason, in the log


def raw_request(server, head: str, body: bytes) -> tuple[int, dict]:
    """Send a request as bytes (the body may be cut off by the server's answer) and read the
    answer: (status, JSON body)."""
    import socket

    parts = urllib.parse.urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        try:
            sock.sendall(head.encode() + body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        while True:
            try:
                got = sock.recv(65536)
            except ConnectionResetError:
                break
            if not got:
                break
            data += got
    head_, _, rest = data.partition(b"\r\n\r\n")
    return int(head_.split()[1]), json.loads(rest)


def test_oversize_bodies(world):
    server, w = world
    body = json.dumps({"dataset": "x" * 70_000, "plan": "means"}).encode()
    status, out = raw_request(
        server,
        f"POST /api/releases HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {w['analyst']}\r\nContent-Type: "
        f"application/json\r\nContent-Length: {len(body)}\r\n\r\n",
        body,
    )
    assert status == 413 and set(out) == {"error"}, out
    body = b"a,b\n" * 300_000
    status, out = raw_request(
        server,
        f"POST /api/uploads?name=big.csv HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {server.token}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n",
        body,
    )
    assert status == 413 and "larger than 1000000 bytes" in out["error"], out
    # a body sent in chunks, without Content-Length, is cut off as soon as it passes the limit
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(server.url)
    con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    con.putrequest("POST", "/api/releases")
    con.putheader("Authorization", f"Bearer {w['analyst']}")
    con.putheader("Transfer-Encoding", "chunked")
    con.putheader("Content-Type", "application/json")
    con.endheaders()
    chunk = b"x" * 16_384
    try:
        for _ in range(8):
            con.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        con.send(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    resp = con.getresponse()
    body = json.loads(resp.read())
    assert resp.status == 413 and set(body) == {"error"}
    con.close()
    # a bad Content-Length
    con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    con.putrequest("POST", "/api/releases", skip_accept_encoding=True)
    con.putheader("Content-Length", "-5")
    con.endheaders()
    resp = con.getresponse()
    assert resp.status == 400
    con.close()


def test_a_trickled_body_is_cut_off_and_a_flood_is_turned_away(tmp_path, cps_files):
    """Slowloris: a client that trickles a request's body gets 408 once ``--body-timeout`` has
    passed, one that sends no (or half a) head gets 408 after ``--header-timeout``, each in one
    line of JSON, while other requests are served meanwhile; beyond ``--max-connections`` a
    connection gets 503 at once, and the held connections are freed by the timeouts."""
    import socket
    import threading
    import time

    server = start_server(
        tmp_path / "svc", "--body-timeout", "1.5", "--header-timeout", "1", "--max-connections", "4"
    )
    try:
        parts = urllib.parse.urlsplit(server.url)
        head = (
            "POST /api/releases HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            f"{server.token}\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
        )
        got: dict = {}

        def slow() -> None:
            t0 = time.monotonic()
            with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
                sock.sendall(head.encode() + b'{"dataset": ')
                data = b""
                while True:
                    try:
                        more = sock.recv(65536)
                    except (ConnectionResetError, TimeoutError):
                        break
                    if not more:
                        break
                    data += more
            got["seconds"] = time.monotonic() - t0
            got["raw"] = data

        runner = threading.Thread(target=slow)
        runner.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        status, _, _ = server.call("GET", "/api/openapi.json")
        assert status == 200 and time.monotonic() - t0 < 1.0  # not held up by the slow one
        runner.join(30)
        head_, _, rest = got["raw"].partition(b"\r\n\r\n")
        assert int(head_.split()[1]) == 408, got["raw"][:300]
        out = json.loads(rest)
        assert out == {"error": "the request body did not arrive within 1.5 s"}, out
        assert 1.4 <= got["seconds"] < 10, got["seconds"]
        # the slow-headers half: a connection that sends nothing, and one that trickles its
        # head, are each answered 408 and closed after --header-timeout
        for first in (b"", b"GET /api/openapi.json HTTP/1.1\r\nHost: x\r\n"):
            t0 = time.monotonic()
            with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
                if first:
                    sock.sendall(first)
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
            assert data.startswith(b"HTTP/1.1 408 "), data[:200]
            assert json.loads(data.partition(b"\r\n\r\n")[2]) == {
                "error": "the request's headers did not arrive within 1 s"
            }
            assert 0.9 <= time.monotonic() - t0 < 10
        # four connections holding requests open against a limit of four: the fifth is
        # turned away at once; once the held ones time out, the service answers again
        socks = [socket.create_connection((parts.hostname, parts.port)) for _ in range(4)]
        try:
            time.sleep(0.3)
            status, out, _ = server.call("GET", "/api/openapi.json")
            assert status == 503, (status, out)
            time.sleep(1.5)  # the four are closed by the header timeout
            assert server.call("GET", "/api/openapi.json")[0] == 200
        finally:
            for s in socks:
                s.close()
    finally:
        server.stop()
