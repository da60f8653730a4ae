"""Make the HTML report of each command on Adult and screenshot it in headless Chromium:
docs/report/{calibrate,public,release,audit,ledger,models-audit}.png at laptop width (1280 px),
docs/report/{calibrate,public,release}-phone.png at phone width (390 px) — public.html is the
page ``release --report`` writes to publish, release.html the internal review page of
``--review-report`` — and the first 1000 px of the release report as
docs/report/release-top.png (the README's); the HTML files go beside them.

    PYTHONPATH=src python bench/make_report_screenshots.py [--out docs/report] [--no-models]

Needs the Adult data (fetched and cached on first use, or DISTPRIVACY_DATA) and chromium on
PATH. Prints each command, its time and each file written.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path) -> str:
    """``distprivacy ARGS`` (this interpreter); its stdout; fails loudly."""
    import distprivacy

    # The same distprivacy as this script's (PYTHONPATH=src made absolute: cwd differs).
    env = dict(os.environ)
    src = str(Path(distprivacy.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "distprivacy", *args]
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    print(f"  {time.perf_counter() - t:6.1f} s  distprivacy {' '.join(args)}")
    if out.returncode not in (0,):
        sys.exit(f"failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("chromium is not on PATH (Debian: apt-get install chromium)")


def _browser(*args: str) -> str:
    cmd = [chromium(), "--headless=new", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           *args]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout


#: Appended to a copy of the page (its Content-Security-Policy, which forbids scripts, removed
#: from the copy only): the document's height at this width, read back from --dump-dom.
MEASURE = (
    "<script>document.documentElement.setAttribute('data-height',"
    "Math.ceil(document.documentElement.scrollHeight))</script>"
)


def page_height(html: Path, width: int) -> int:
    """The rendered page's height at ``width`` px."""
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "measure.html"
        copy.write_text(text.replace("</body>", MEASURE + "</body>"))
        dom = _browser("--dump-dom", f"--window-size={width},900", copy.as_uri())
    m = re.search(r'data-height="(\d+)"', dom)
    if m is None:
        sys.exit(f"could not measure {html}")
    return int(m.group(1))


#: Headless Chromium's window is at least 500 px wide: a phone is a 390-px iframe, cropped.
MIN_WINDOW = 500
PHONE = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>phone</title></head>'
    '<body style="margin:0;background:#fff"><iframe src="{src}" width="{w}" height="{h}" '
    'style="border:0;display:block"></iframe></body></html>'
)


def screenshot(html: Path, png: Path, width: int, height: int | None = None) -> None:
    """A screenshot of the whole page at ``width`` px (the window as tall as the page), or of
    its first ``height`` px."""
    height = height or page_height(html, width)
    if width >= MIN_WINDOW:
        _browser(f"--screenshot={png}", f"--window-size={width},{height}", html.resolve().as_uri())
    else:
        with tempfile.TemporaryDirectory(dir=html.parent) as tmp:
            frame = Path(tmp) / "phone.html"
            frame.write_text(PHONE.format(src=f"../{html.name}", w=width, h=height))
            _browser(f"--screenshot={png}", f"--window-size={MIN_WINDOW},{height}", frame.as_uri())
        crop_png(png, width)
    print(f"  wrote {png} ({width}×{height})")


def crop_png(path: Path, width: int) -> None:
    """Keep the left ``width`` columns of a PNG (read with the tests' PNG reader)."""
    sys.path.insert(0, str(ROOT / "tests" / "report"))
    from png_decode import read_png

    img = read_png(path)[:, :width]
    h, w, c = img.shape
    kind = {1: 0, 3: 2, 4: 6}[c]
    rows = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(tag: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + tag + body
            + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)
        )  # fmt: skip

    head = struct.pack(">IIBBBBB", w, h, 8, kind, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "report")
    ap.add_argument("--no-models", action="store_true", help="keep models-audit as it is")
    a = ap.parse_args()
    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dp-report-"))
    print(f"working in {work}")
    run("calibrate", "--report", str(out / "calibrate.html"), cwd=work)
    run("calibrate", "--mechanism", "DauM-G", "--epsilon", "0.5", "--save", "plan.json", cwd=work)
    import pandas as pd

    import distprivacy as dp

    adult = dp.load_adult()
    adult.sample(n=100, random_state=1).to_csv(work / "records.csv", index=False)
    adult.sample(n=100, random_state=2).to_csv(work / "records2.csv", index=False)
    from distprivacy.mechanisms.plans import Plan

    # A ledger of secrets (issue 30): the secret income over Adult, two registered samples
    # and the approved plan (ε = 0.5); four releases under the secret fit an (ε, δ) budget of
    # (2, 0.001) (a μ budget holds only μ-GDP releases, and Adult's fitted Gaussians are not).
    del Plan
    key = ("--steward-key", "steward.key")
    run("ledger", "keygen", "steward.key", cwd=work)
    run("ledger", "init", "ledger.db", *key, "--secret", "income", "--protect", "income==>50K",
        "--population", os.environ.get("DISTPRIVACY_DATA") or "adult", "--budget-epsilon", "2",
        "--budget-delta", "0.001",
        cwd=work)  # fmt: skip
    for name, target in (("wave1", "records.csv"), ("wave2", "records2.csv")):
        run("ledger", "register", "ledger.db", name, *key, "--data", target, cwd=work)
    run("ledger", "approve", "ledger.db", "plan.json", "--name", "means", *key, cwd=work)
    release = ("release", "--ledger", "ledger.db", "--plan", "means", "--dataset")
    for name in ("wave1", "wave2", "wave1"):
        run(*release, name, cwd=work)
    run(*release, "wave2", "--report", str(out / "public.html"), "--review-report",
        str(out / "release.html"), cwd=work)  # fmt: skip
    run("ledger", "show", "ledger.db", "--report", str(out / "ledger.html"), cwd=work)
    run("audit", "--audit-samples", "2000", "--report", str(out / "audit.html"), cwd=work)
    # models audit on the user's own table (Suri & Evans' game): 5,000 rows of Adult, sex
    # predicted from four columns, the share of high earners protected, three shares.
    adult.sample(n=5000, random_state=0).to_csv(work / "adult5000.csv", index=False)
    kinds = ["calibrate", "public", "release", "audit", "ledger"]
    if not a.no_models:
        kinds.append("models-audit")
        run("models", "audit", "--data", "adult5000.csv", "--label", "sex",
        "--features", "age,hours_per_week,education_num,income", "--protect", "income==>50K",
            "--ratios", "0.2,0.4,0.6", "--n-models", "50", "--n-train", "200", "--seed", "1",
            "--report", str(out / "models-audit.html"), cwd=work)  # fmt: skip
    del pd
    for kind in kinds:
        screenshot(out / f"{kind}.html", out / f"{kind}.png", 1280)
    for kind in ("calibrate", "public", "release"):
        screenshot(out / f"{kind}.html", out / f"{kind}-phone.png", 390)
    screenshot(out / "release.html", out / "release-top.png", 1280, 1000)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
