"""The service tests' helpers: a real ``distprivacy serve`` process on a free port (never a
mock), and the world its tests share: a population and two datasets from the public CPS 1991
table (tests/public_data.py), a plan calibrated on it, a steward's and an analyst's tokens."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

MISSING = [
    m
    for m in ("starlette", "uvicorn", "jinja2", "multipart")
    if importlib.util.find_spec(m) is None
]


def skip_without_serve() -> None:
    """Skip the calling test module, naming what is missing, without the ``serve`` extra."""
    if MISSING:
        pytest.skip(
            f"the service needs {', '.join(MISSING)}: pip install 'distprivacy[serve]'",
            allow_module_level=True,
        )


ROOT = Path(__file__).resolve().parents[2]
PROTECT = "hispanic==1"
STATISTICS = "mean:faminc,mean:hours,proportion:inlf==1"
#: The budget as a multiple of one release's μ: two releases of one dataset fit (1.261 μ), a
#: third does not (1.407 μ) — measured on this plan, see test_api.py.
BUDGET_FACTOR = 1.35


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running service: its URL, state directory, the steward's first token, the process."""

    url: str
    state: Path
    token: str
    proc: subprocess.Popen
    tokens: dict[str, str] = field(default_factory=dict)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        """One HTTP request: (status, decoded JSON or text, headers)."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        if body is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                status, text, hdrs = resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as e:
            status, text, hdrs = e.code, e.read(), dict(e.headers)
        try:
            return status, json.loads(text), hdrs
        except ValueError:
            return status, text.decode("utf-8", "replace"), hdrs

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(state: Path, *extra: str) -> Server:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distprivacy",
            "serve",
            "--state",
            str(state),
            "--port",
            str(port),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    token = ""
    line = proc.stdout.readline() if proc.stdout else ""
    if "first login token" in line:
        token = line.rsplit(" ", 1)[-1].strip()
    server = Server(f"http://127.0.0.1:{port}", state, token, proc)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the service exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            status, _, _ = server.call("GET", "/api/openapi.json")
            if status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError("the service did not answer within 60 s")


def plan_mu(plan: Path) -> float:
    return float(json.loads(plan.read_text())["guarantee"]["mu"])


def upload(server: Server, token: str, path: Path, name: str | None = None) -> str:
    status, out, _ = server.call(
        "POST", f"/api/uploads?name={name or path.name}", raw=path.read_bytes(), token=token
    )
    assert status == 201, out
    return out["path"]


def set_up(server: Server, files: dict[str, Path], secret: str = "hisp") -> dict[str, Any]:
    """The steward's flow over the API: a secret (budget 1.35 μ), wave1 registered, the plan
    reviewed and approved as ``means``, an analyst token for the secret."""
    st = server.token
    pop = upload(server, st, files["population"])
    mu = plan_mu(files["plan"])
    status, out, _ = server.call(
        "POST",
        "/api/secrets",
        {
            "name": secret,
            "protect": PROTECT,
            "population": pop,
            "budget": {"mu": BUDGET_FACTOR * mu},
        },
        st,
    )
    assert status == 201, out
    w1 = upload(server, st, files["wave1"])
    status, out, _ = server.call(
        "POST", "/api/datasets", {"name": "wave1", "secret": secret, "path": w1}, st
    )
    assert status == 201, out
    plan = json.loads(files["plan"].read_text())
    status, out, _ = server.call("POST", "/api/plans", {"secret": secret, "plan": plan}, st)
    assert status == 201, out
    pid = out["pending"]
    status, review, _ = server.call("GET", f"/api/plans/pending/{pid}", token=st)
    assert status == 200 and review["fitted_on_population"], review
    status, out, _ = server.call("POST", f"/api/plans/pending/{pid}/approve", {"name": "means"}, st)
    assert status == 200, out
    status, out, _ = server.call(
        "POST", "/api/users", {"name": "ana", "role": "analyst", "secrets": [secret]}, st
    )
    assert status == 201, out
    return {
        "mu": mu,
        "analyst": out["token"],
        "analyst_token_id": out["token_id"],
        "review": review,
    }
