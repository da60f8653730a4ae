"""Each report kind in a real browser (issue 23, item 5): headless Chromium loads it at laptop
(1280 px) and phone (390 px) width — the phone as a 390-px iframe, since headless Chromium's
window is at least 500 px wide — and the test checks that the screenshot is not blank, that
every SVG figure rendered (non-zero size, child elements), that the page logs nothing to the
console (no script error, no invalid SVG attribute, nothing blocked by its
Content-Security-Policy), and that at phone width nothing overflows the page sideways (wide
tables scroll inside their box). Skipped when Chromium is absent; CI installs it (.ci/run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from png_decode import read_png
from report_checks import validate

KINDS = ("calibrate", "release", "public", "audit", "ledger", "models", "models-pairs")
WIDTHS = {"laptop": (1280, 900), "phone": (390, 844)}

BROWSER = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
pytestmark = [
    pytest.mark.skipif(
        BROWSER is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
    ),
    pytest.mark.slow,
]

#: Injected into a copy of the page (its CSP, which forbids any script, removed from the copy
#: only): records errors, then measures every figure and the page's width into the DOM.
PROBE_HEAD = (
    "<script>window.__errors=[];window.onerror=function(m){window.__errors.push(String(m))};"
    "</script>"
)
PROBE_TAIL = """<script>
(function(){var figs=[].map.call(document.querySelectorAll('svg.chart'),function(s){
var r=s.getBoundingClientRect();return {id:s.id,w:r.width,h:r.height,
children:s.childElementCount,painted:s.querySelectorAll('path,circle,line').length};});
var pre=document.createElement('pre');pre.id='probe';
pre.textContent=JSON.stringify({figures:figs,errors:window.__errors,
scrollWidth:document.documentElement.scrollWidth,
clientWidth:document.documentElement.clientWidth,
pageScrollWidth:document.scrollingElement.scrollWidth,innerWidth:window.innerWidth,
boxes:[].map.call(document.querySelectorAll('.scroll'),function(b){
return b.scrollWidth-b.clientWidth;})});
document.body.appendChild(pre);
if(window.parent!==window){window.parent.postMessage(pre.textContent,'*');}})();
</script>"""

#: A page holding the report in a phone-sized iframe; the probe's message lands in its DOM.
PHONE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>phone</title></head>
<body style="margin:0;background:#fff"><iframe src="{src}" width="{w}" height="{h}"
style="border:0;display:block"></iframe><pre id="probe"></pre><script>
window.addEventListener('message',function(e){{document.getElementById('probe')
.textContent=e.data;}});</script></body></html>"""


def _phone_page(src: Path, w: int, h: int) -> Path:
    page = src.with_name(src.stem + "-phone.html")
    page.write_text(PHONE.format(src=src.name, w=w, h=h), encoding="utf-8")
    return page


def _chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [BROWSER, "--headless=new", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--no-default-browser-check", "--enable-logging=stderr", "--v=0", *args]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root inside its sandbox
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def probed(reports, tmp_path_factory):
    """Per kind and width: the probe's measurements of the page."""
    root = tmp_path_factory.mktemp("probe")
    out = {}
    for kind in KINDS:
        text = reports[kind].read_text(encoding="utf-8")
        text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
        text = text.replace("<head>", "<head>" + PROBE_HEAD, 1).replace(
            "</body>", PROBE_TAIL + "</body>", 1
        )
        copy = root / f"{kind}.html"
        copy.write_text(text, encoding="utf-8")
        for name, (w, h) in WIDTHS.items():
            page = copy if name == "laptop" else _phone_page(copy, w, h)
            # The virtual-time budget lets the iframe's message arrive before the dump.
            run = _chromium(
                "--dump-dom", "--virtual-time-budget=3000", "--window-size=1280,900", page.as_uri()
            )
            m = re.search(r'<pre id="probe">(.+?)</pre>', run.stdout, re.S)
            assert m is not None, run.stdout[-500:]
            out[kind, name] = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_report_loads_without_console_messages(reports, kind):
    """The report itself, CSP included: nothing logged (errors, CSP refusals, bad SVG)."""
    run = _chromium("--dump-dom", "--window-size=1280,900", reports[kind].as_uri())
    assert _console(run.stderr) == []
    assert "<svg" in run.stdout and "</main>" in run.stdout


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("kind", KINDS)
def test_screenshot_is_not_blank(reports, kind, width, tmp_path):
    w, h = WIDTHS[width]
    png = tmp_path / f"{kind}-{width}.png"
    page = reports[kind]
    if width == "phone":
        copy = tmp_path / page.name
        shutil.copy(page, copy)
        page = _phone_page(copy, w, h)
    window = f"{max(w, 500)},{h}"
    run = _chromium(f"--screenshot={png}", f"--window-size={window}", page.as_uri())
    assert _console(run.stderr) == []
    img = read_png(png)[:h, :w]  # the phone's frame: the window's left 390 px
    assert img.shape[:2] == (h, w)
    rgb = img[..., :3].astype(int)
    non_white = np.any(rgb < 235, axis=-1).mean()
    assert non_white > 0.02, f"{kind} at {width}: only {non_white:.1%} of pixels are not white"


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("kind", KINDS)
def test_every_figure_rendered(reports, probed, kind, width):
    p = probed[kind, width]
    assert p["errors"] == []
    expected = [s.id for s in validate(reports[kind].read_text(encoding="utf-8")).svgs]
    assert [f["id"] for f in p["figures"]] == expected and expected
    for f in p["figures"]:
        assert f["w"] > 0 and f["h"] > 0, f
        assert f["children"] > 5 and f["painted"] > 3, f
        # The chart keeps its 600 × 360 proportions and fits the window.
        assert abs(f["h"] / f["w"] - 0.6) < 0.01, f
        assert f["w"] <= WIDTHS[width][0], f


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_overflows_a_phone(probed, kind):
    """At 390 px the page never scrolls sideways, and no table scrolls inside its box either
    (a wide table becomes stacked cards)."""
    p = probed[kind, "phone"]
    assert p["innerWidth"] == WIDTHS["phone"][0]
    assert p["scrollWidth"] <= p["clientWidth"], p
    assert p["pageScrollWidth"] <= p["innerWidth"], p
    assert all(extra <= 1 for extra in p["boxes"]), p["boxes"]


@pytest.mark.parametrize("kind", ["public", "release", "calibrate"])
def test_no_table_scrolls_on_a_laptop(probed, kind):
    """At 1280 px every table fits its box (the calibrate report's per-mechanism table
    used to scroll sideways)."""
    p = probed[kind, "laptop"]
    assert p["pageScrollWidth"] <= p["innerWidth"], p
    assert all(extra <= 1 for extra in p["boxes"]), p["boxes"]


def _pdf_text(pdf: Path) -> str:
    """The PDF's text: poppler's pdftotext when installed, else pypdf."""
    tool = shutil.which("pdftotext")
    if tool is not None:
        run = subprocess.run([tool, "-layout", str(pdf), "-"], capture_output=True, text=True,
                             check=True, timeout=60)  # fmt: skip
        return run.stdout
    pypdf = pytest.importorskip("pypdf", reason="needs pdftotext (poppler-utils) or pypdf")
    return "\n".join(page.extract_text() or "" for page in pypdf.PdfReader(str(pdf)).pages)


def _words(text: str) -> list[str]:
    return re.sub(r"\s+", " ", text).strip().split(" ")


@pytest.mark.parametrize("paper", ["Letter", "A4"])
@pytest.mark.parametrize("kind", ["public", "release", "calibrate"])
def test_printed_to_pdf_every_column_is_there(reports, kind, paper, tmp_path):
    """Printed to PDF (Chromium's own print, on Letter and on A4 paper), the statistics
    table keeps every column: each header's words are in the PDF's text, in order, and each
    row's last cell too (it used to lose its last column and print a scrollbar)."""
    page = tmp_path / f"{kind}.html"
    text = reports[kind].read_text(encoding="utf-8")
    page.write_text(text.replace("</style>", f"@page{{size:{paper}}}</style>", 1),
                    encoding="utf-8")  # fmt: skip
    pdf = tmp_path / f"{kind}-{paper}.pdf"
    _chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri())
    assert pdf.read_bytes().startswith(b"%PDF")
    words = _words(_pdf_text(pdf))
    joined = " ".join(words)
    table = next(t for t in validate(text).tables if t["id"] == "statistics-table")
    for header in table["header"]:
        want = _words(header)
        # The header's words, in order (a header that wraps in its cell may have another
        # column's words between its lines).
        at = 0
        for w in want:
            assert w in words[at:], (kind, paper, header, w)
            at = words.index(w, at) + 1
    for row in table["rows"][1:]:
        last = re.sub(r"\s+", " ", row[-1]).strip()
        assert last.replace(" ", "") in joined.replace(" ", ""), (kind, paper, row)


def test_png_reader_agrees_with_pillow(reports, tmp_path):
    image = pytest.importorskip("PIL.Image")
    png = tmp_path / "ledger.png"
    _chromium(f"--screenshot={png}", "--window-size=640,480", reports["ledger"].as_uri())
    ours = read_png(png)
    theirs = np.asarray(image.open(png))
    assert np.array_equal(ours, theirs.reshape(ours.shape))


def test_screenshots_in_docs_are_pngs():
    """The screenshots docs/report.md shows (bench/make_report_screenshots.py): each report at
    1280 px, and the public, review and calibrate reports at 390 px."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "report"
    names = ("calibrate", "public", "release", "audit", "ledger", "calibrate-phone",
             "public-phone", "release-phone")  # fmt: skip
    for name in names:
        img = read_png(docs / f"{name}.png")
        assert img.shape[1] == (390 if name.endswith("phone") else 1280)
