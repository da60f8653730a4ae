"""The whole flow in headless Chromium (Playwright for Python, Debian's chromium): the steward
logs in, declares a secret over a public table (CPS 1991), registers a dataset, reviews and
approves a plan and makes an analyst's token; the analyst logs in, releases twice and is
refused the third time with the budget's exact figures; the steward sees the three events.
Every page is checked at 1280 and 390 px (no horizontal overflow, no CSP violation) and
photographed — into ``$DISTPRIVACY_SCREENSHOTS`` when set (docs/serve/ holds the committed
ones), else a temporary folder."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest
from service_world import DELTA, EPSILON, PROTECT, skip_without_serve, start_server

skip_without_serve()

if importlib.util.find_spec("playwright") is None:
    pytest.skip(
        "the browser test needs playwright: pip install playwright", allow_module_level=True
    )

CHROMIUM = os.environ.get("DISTPRIVACY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip(
        f"no Chromium at {CHROMIUM} (apt-get install chromium, or set DISTPRIVACY_CHROMIUM)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.slow
WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


class Shots:
    """Photographs a page at every width, and checks it there."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.taken: list[Path] = []

    def take(self, page, name: str) -> None:
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            overflow = page.evaluate("document.documentElement.scrollWidth")
            assert overflow <= width, (name, width, overflow)
            out = self.folder / f"{name}-{width}.png"
            page.screenshot(path=str(out), full_page=True)
            self.taken.append(out)
        page.set_viewport_size({"width": 1280, "height": 900})


def test_the_whole_flow_in_chromium(browser, cps_files, tmp_path):
    server = start_server(tmp_path / "svc")
    shots = Shots(Path(os.environ.get("DISTPRIVACY_SCREENSHOTS") or tmp_path / "shots"))
    violations: list[str] = []
    try:
        steward = browser.new_context(viewport={"width": 1280, "height": 900})
        page = steward.new_page()
        page.on(
            "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
        )
        page.goto(server.url + "/")
        assert page.url.endswith("/login")
        shots.take(page, "login")
        page.get_by_label("Token").fill(server.token)
        page.get_by_label("Token").press("Enter")  # the keyboard submits the form
        page.wait_for_url("**/steward")
        shots.take(page, "steward-empty")

        budget = EPSILON
        page.get_by_label("Name", exact=True).first.fill("hisp")
        page.get_by_label("Protected property").fill(PROTECT)
        page.get_by_label("Population file (CSV or Parquet)").set_input_files(
            str(cps_files["population"])
        )
        page.locator("#s-kind").select_option("epsilon-delta")
        page.locator("#s-value").fill(repr(EPSILON))
        page.locator("#s-delta").fill(repr(DELTA))
        page.get_by_role("button", name="Declare the secret").click()
        page.wait_for_load_state()
        assert "declared secret hisp" in page.locator(".notice.ok").inner_text()

        page.locator("#d-name").fill("wave1")
        page.locator("#d-secret").select_option("hisp")
        page.locator("#d-file").set_input_files(str(cps_files["wave1"]))
        page.get_by_role("button", name="Register").click()
        page.wait_for_load_state()
        assert "registered wave1 version 1" in page.locator(".notice.ok").inner_text()

        page.locator("#p-file").set_input_files(str(cps_files["plan"]))
        page.get_by_role("button", name="Submit", exact=True).click()
        page.wait_for_load_state()
        assert "awaits your review" in page.locator(".notice.ok").inner_text()
        page.get_by_role("link", name="Review plan 1").click()
        page.wait_for_url("**/steward/plans/1")
        text = page.locator("main").inner_text()
        assert "DauM-G" in text and "yes (fingerprints match)" in text
        assert "mean(faminc)" in text
        shots.take(page, "review")
        page.get_by_label("Name analysts will use").fill("means")
        page.get_by_role("button", name="Approve plan 1").click()
        page.wait_for_load_state()
        assert "approved plan means" in page.locator(".notice.ok").inner_text()

        page.locator("#u-name").fill("ana")
        page.locator("#u-role").select_option("analyst")
        page.get_by_label("hisp").check()
        page.get_by_role("button", name="Make the token").click()
        page.wait_for_load_state()
        token = page.locator(".secret-token").inner_text().strip()
        assert token.startswith("dps_")

        analyst = browser.new_context(viewport={"width": 1280, "height": 900})
        apage = analyst.new_page()
        apage.on(
            "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
        )
        apage.goto(server.url + "/login")
        apage.get_by_label("Token").fill(token)
        apage.get_by_role("button", name="Log in").click()
        apage.wait_for_url("**/analyst")
        shots.take(apage, "analyst-empty")
        for k in (1, 2):
            apage.locator("#r-dataset").select_option("wave1")
            apage.locator("#r-plan").select_option("means")
            apage.get_by_role("button", name="Release").click()
            apage.wait_for_load_state()
            assert f"(release {k})" in apage.locator(".notice.ok").inner_text()
            assert "proportion(inlf==1)" in apage.locator(".result").inner_text()
        shots.take(apage, "analyst-released")
        apage.get_by_role("button", name="Release").click()
        apage.wait_for_load_state()
        refusal = apage.locator(".notice.error").inner_text()
        m = re.search(
            r"cumulative δ = ([0-9.e-]+) at ε = 0.7 \(ε = ([0-9.]+) at δ = 0.001\) would exceed "
            r"the budget \(ε, δ\) = \(0.7, 0.001\) \(2 earlier releases of this secret\); "
            r"nothing was recorded",
            refusal,
        )
        assert m, refusal
        assert float(m.group(1)) > DELTA and float(m.group(2)) > EPSILON
        shots.take(apage, "analyst-refused")
        apage.get_by_role("link", name="Report of release 1").click()
        apage.wait_for_url("**/analyst/releases/*")
        assert "mean(hours)" in apage.locator("main").inner_text()
        shots.take(apage, "release")

        page.goto(server.url + "/steward")
        rows = page.locator("tr", has=page.locator("td", has_text=re.compile(r"^release$")))
        outcomes = [rows.nth(i).locator("td").nth(4).inner_text() for i in range(rows.count())]
        assert outcomes == ["refused", "released", "released"]  # newest first
        assert "ana (analyst)" in rows.first.inner_text()
        meter = page.locator("meter").first
        assert float(meter.get_attribute("max")) == pytest.approx(budget)
        assert 0 < float(meter.get_attribute("value")) < budget
        chart = page.locator("svg.chart").first.get_attribute("aria-label")
        # one release alone: its own ε at δ = 10⁻³ (0.4995); two: 0.6668
        assert re.fullmatch(
            r"cumulative ε after each of 2 release\(s\): 0\.4995, 0\.6668; "
            r"budget 0\.7",
            chart,
        ), chart
        shots.take(page, "steward")
        assert violations == []
        assert len(shots.taken) == 2 * 8
    finally:
        server.stop()
