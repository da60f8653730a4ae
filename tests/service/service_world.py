"""The service tests' helpers: a real ``distprivacy serve`` process on a free port (never a
mock), and the world its tests share: a population and two datasets from the public CPS 1991
table (tests/public_data.py), a plan calibrated on it, a steward's and an analyst's tokens."""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import select
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
#: The secret's budget (ε, δ) = (0.7, 10⁻³): two releases of one dataset fit (cumulative
#: ε = 0.6668 at δ = 10⁻³), a third does not (0.7658) — measured on this plan, see test_api.py.
EPSILON, DELTA = 0.7, 1e-3


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
    #: The command line's options beyond --state and --port (e.g. --database URL).
    extra: tuple[str, ...] = ()

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
    # the server's log goes to a file beside its state (a pipe nobody reads could fill up)
    state.parent.mkdir(parents=True, exist_ok=True)
    log = open(state.parent / f"{state.name}.log", "a")
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
        stderr=log,
        env=env,
        text=True,
    )
    token = ""
    server = Server(f"http://127.0.0.1:{port}", state, token, proc, extra=tuple(extra))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # the first start prints the steward's token on stdout; a restart prints nothing there
        ready, _, _ = select.select([proc.stdout], [], [], 0.05)
        if ready and not server.token:
            line = proc.stdout.readline() if proc.stdout else ""
            if "first login token" in line:
                server.token = line.rsplit(" ", 1)[-1].strip()
        if proc.poll() is not None:
            log.close()
            text = (state.parent / f"{state.name}.log").read_text()
            raise RuntimeError(f"the service exited: {text[-3000:]}")
        try:
            status, _, _ = server.call("GET", "/api/openapi.json")
            if status == 200:
                if not server.token and proc.stdout:
                    ready, _, _ = select.select([proc.stdout], [], [], 1.0)
                    line = proc.stdout.readline() if ready else ""
                    if "first login token" in line:
                        server.token = line.rsplit(" ", 1)[-1].strip()
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
    """The steward's flow over the API: a secret (budget (0.7, 10⁻³)), wave1 registered, the plan
    reviewed and approved as ``means``, an analyst token for the secret."""
    st = server.token
    pop = upload(server, st, files["population"])
    mu = plan_mu(files["plan"])
    budget = {"epsilon": EPSILON, "delta": DELTA}
    status, out, _ = server.call(
        "POST",
        "/api/secrets",
        {
            "name": secret,
            "protect": PROTECT,
            "population": pop,
            "budget": budget,
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


def make_cps_files(root: Path) -> dict[str, Path]:
    """In ``root``: the population (2,000 rows of CPS 1991, tests/public_data.py), two samples
    of 100 and a plan for DauM-G at ε = 0.5 fitted on the population (``calibrate --save``;
    μ = 0.2057, verified on the fitted Gaussians with their unequal covariances — not a μ-GDP
    curve, so the tests give secrets (ε, δ) budgets, which any release can be held to)."""
    import contextlib
    import io

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import public_data
    finally:
        sys.path.pop(0)
    from distprivacy.cli import main

    pop = public_data.small("cps91")
    pop.to_csv(root / "population.csv", index=False)
    pop.sample(n=100, random_state=1).to_csv(root / "wave1.csv", index=False)
    pop.sample(n=100, random_state=2).to_csv(root / "wave2.csv", index=False)
    plan = root / "plan.json"
    args = [
        "calibrate",
        "--data",
        str(root / "population.csv"),
        "--protect",
        PROTECT,
        "--values",
        "0.05,0.10,0.15",
        "--statistics",
        STATISTICS,
        "--subset-size",
        "100",
        "--mechanism",
        "DauM-G",
        "--epsilon",
        "0.5",
        "--save",
        str(plan),
        "--json",
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(args)
    if rc != 0:
        raise RuntimeError(f"calibrate --save failed (exit {rc})")
    return {
        "population": root / "population.csv",
        "wave1": root / "wave1.csv",
        "wave2": root / "wave2.csv",
        "plan": plan,
    }


def make_analysts(server: Server, n: int, secret: str = "hisp") -> list[str]:
    """``n`` analysts' tokens for ``secret`` (made by the steward over the API)."""
    out = []
    for i in range(n):
        status, made, _ = server.call(
            "POST",
            "/api/users",
            {"name": f"analyst{i}", "role": "analyst", "secrets": [secret]},
            server.token,
        )
        assert status == 201, made
        out.append(made["token"])
    return out


def hammer(
    server: Server,
    tokens: list[str],
    *,
    stop_on_refusal: bool = True,
    dataset: str = "wave1",
    plan: str = "means",
) -> list[tuple[int, Any, float]]:
    """Every token in its own thread releasing until refused (or the connection fails):
    (status, answer, seconds) per request; status 0 for a failed connection."""
    import threading

    results: list[tuple[int, Any, float]] = []
    lock = threading.Lock()

    def worker(token: str) -> None:
        while True:
            t0 = time.perf_counter()
            try:
                status, out, _ = server.call(
                    "POST", "/api/releases", {"dataset": dataset, "plan": plan}, token
                )
            except (OSError, http.client.HTTPException) as e:  # killed mid-answer
                status, out = 0, str(e)
            with lock:
                results.append((status, out, time.perf_counter() - t0))
            if status != 201 and (stop_on_refusal or status == 0):
                return

    threads = [threading.Thread(target=worker, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def hammer_split(pairs: list[tuple[Server, list[str]]]) -> list[tuple[int, Any, float]]:
    """:func:`hammer` on several servers at once, each with its own analysts' tokens."""
    import threading

    results: list[tuple[int, Any, float]] = []
    runs = [
        threading.Thread(target=lambda s=s, t=t: results.extend(hammer(s, t))) for s, t in pairs
    ]
    for r in runs:
        r.start()
    for r in runs:
        r.join()
    return results


def spent_exactly(results: list[tuple[int, Any, float]], analysts: int) -> list[int]:
    """Check that the analysts' releases spent a budget of 5 to 7 releases exactly — ids
    1..K answered once each, one refusal per analyst, each naming K — and return the ids."""
    ok = sorted(out["release_id"] for status, out, _ in results if status == 201)
    refused = [out for status, out, _ in results if status == 409]
    k = len(ok)
    assert 5 <= k <= 7 and ok == list(range(1, k + 1)), ok
    assert len(refused) == analysts and len(results) == k + analysts, results
    odd = [r["error"] for r in refused if f"({k} earlier releases" not in r["error"]]
    assert odd == [], (k, odd)
    return ok


def ledger_ids(state: Path, database: str | None = None) -> tuple[list[int], Any]:
    """The release ids the ledger of ``state`` holds (in ``database`` when given), and its
    verify report."""
    from distprivacy.ledger import Ledger

    with Ledger(state / "ledger.db", database=database) as led:
        ids = [int(e["id"]) for e in led.show()["releases"]]
        report = led.verify()
        assert led.integrity_check() == "ok"
    return ids, report


def database_of(server: Server) -> str | None:
    """The ``--database`` the server was started with (None: its SQLite ledger)."""
    args = list(server.extra)
    return args[args.index("--database") + 1] if "--database" in args else None


def restart(server: Server) -> Server:
    """The same state served again (a new process, a new port), the steward's token kept."""
    again = start_server(server.state, *server.extra)
    assert again.token == "", "a restart must not make a new steward token"
    again.token = server.token
    return again


def kill_trial(server: Server, tokens: list[str], delay: float) -> tuple[Server, dict[str, Any]]:
    """Analysts release while the service is SIGKILLed after ``delay`` seconds; then every
    answered release must be in the ledger and in the service's own records, the ledger must
    verify, and a restarted service must release again. Returns the restarted server."""
    import threading

    results: list[tuple[int, Any, float]] = []
    runner = threading.Thread(
        target=lambda: results.extend(hammer(server, tokens, stop_on_refusal=False))
    )
    runner.start()
    time.sleep(delay)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    runner.join()
    answered = [out["release_id"] for status, out, _ in results if status == 201]
    refused = [out for status, out, _ in results if status not in (0, 201)]
    ids, report = ledger_ids(server.state, database_of(server))
    missing = sorted(set(answered) - set(ids))
    again = restart(server)
    _status, recorded, _ = again.call("GET", "/api/releases", token=server.token)
    kept = {r["release_id"] for r in recorded}
    status2, out, _ = again.call(
        "POST", "/api/releases", {"dataset": "wave1", "plan": "means"}, tokens[0]
    )
    return again, {
        "answered": len(answered),
        "recorded": len(ids),
        "missing": missing,
        "missing_in_service": sorted(set(answered) - kept),
        "duplicates": len(answered) - len(set(answered)),
        "verified": report.ok,
        "other": refused,
        "resumed": status2 == 201 and out["release_id"] == max(ids, default=0) + 1,
    }
