"""The built documentation site in a real browser (issue 35, item 3): Sphinx builds it (warnings
as errors) into a temporary folder, Python's own HTTP server serves it on 127.0.0.1 (the search
page fetches pages, which browsers refuse over file://), and headless Chromium loads the front
page, the search page asked for ``DauM``, and the API page of ``Ledger``: nothing is logged to
the console, the search lists DauM's API page, and the Ledger page shows the class with its
methods. Skipped without Chromium or without Sphinx (the ``[docs]`` extra; ``[test]`` has it).

With ``DISTPRIVACY_DOCS_SCREENSHOTS=DIR`` the test also saves the three pages' screenshots
there (docs/screenshots/ holds the committed ones)."""

from __future__ import annotations

import html
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROWSER = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
pytestmark = [
    pytest.mark.skipif(
        BROWSER is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
    ),
    pytest.mark.slow,
]

PAGES = {
    "index": "index.html",
    "search": "search.html?q=DauM",
    "ledger-api": "api/generated/distprivacy.Ledger.html",
}


def _chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [BROWSER, "--headless=new", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--no-default-browser-check", "--enable-logging=stderr", "--v=0", *args]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root inside its sandbox
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built from docs/ as .ci/run builds it (a fresh build, warnings as errors)."""
    pytest.importorskip("sphinx", reason="the docs need the [docs] extra (sphinx, myst-parser)")
    pytest.importorskip("myst_parser", reason="the docs need the [docs] extra")
    out = tmp_path_factory.mktemp("site") / "html"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    doctrees = out.parent / "doctrees"
    args = ["-E", "-W", "--keep-going", "-q", "-b", "html", "-d", str(doctrees)]
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", *args, str(ROOT / "docs"), str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def server(site):
    """``python -m http.server`` on a free port of 127.0.0.1, serving the site."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=site,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def loaded(server):
    """Per page: the DOM after its scripts ran, and what it logged to the console."""
    out = {}
    for name, path in PAGES.items():
        args = ["--dump-dom", "--virtual-time-budget=10000", "--window-size=1280,900"]
        run = _chromium(*args, f"{server}/{path}")
        out[name] = (run.stdout, _console(run.stderr))
    return out


@pytest.mark.parametrize("name", list(PAGES))
def test_page_logs_nothing_to_the_console(loaded, name):
    dom, console = loaded[name]
    assert "</html>" in dom
    assert console == []


def test_search_finds_daum(loaded):
    dom, _ = loaded["search"]
    summary = re.search(r'class="search-summary">([^<]*)<', dom)
    assert summary is not None, dom[-2000:]
    found = int(re.search(r"found (\d+) page", summary.group(1)).group(1))
    assert found >= 1
    results = re.search(r'<ul[^>]*class="search"[^>]*>(.*?)</ul>', dom, re.S).group(1)
    links = re.findall(r'<a href="([^"]+)"', results)
    assert "api/generated/distprivacy.DauM.html#distprivacy.DauM" in links, links[:10]


def test_ledger_api_page_renders(loaded):
    dom, _ = loaded["ledger-api"]
    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    assert re.search(r'<dt class="sig sig-object py" id="distprivacy.Ledger">', dom)
    for method in ("init", "register", "approve", "release", "verify"):
        assert f'id="distprivacy.Ledger.{method}"' in dom, method
    assert "Parameters" in text


def test_screenshots(server, tmp_path):
    """Each page's screenshot is written and not blank (kept with DISTPRIVACY_DOCS_SCREENSHOTS)."""
    keep = os.environ.get("DISTPRIVACY_DOCS_SCREENSHOTS")
    folder = Path(keep) if keep else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in PAGES.items():
        png = folder / f"docs-{name}.png"
        args = [f"--screenshot={png}", "--virtual-time-budget=10000", "--window-size=1280,900"]
        _chromium(*args, f"{server}/{path}")
        assert png.stat().st_size > 10_000, (name, png.stat().st_size)
