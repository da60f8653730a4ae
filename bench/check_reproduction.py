"""Rerun the reproductions and compare every CSV with docs/reproduction, byte for byte.

Run: ``python bench/check_reproduction.py [--data DIR] [--out DIR]``.

Runs ``distprivacy reproduce paper attribute-privacy local-distp`` (the commands that made
docs/reproduction; model-inference is left out: it trains thousands of models, ~30 min) into
``--out`` and prints, for each CSV of docs/reproduction those commands write, ``same`` or
``DIFFERENT`` (with the first differing line). Timing files (``timings.csv``) and the timing
column of ``local-distp/tupling_k.csv`` are wall-clock measurements and are compared without
them. Exit status 1 when any file differs: a change that moved a number.

Bit-for-bit equality holds on one machine and library stack; another BLAS or NumPy build can
move the last digit of a float (regenerate docs/reproduction there with the commands in its
manifests).
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reproduction"
#: Files that are wall-clock measurements, and columns of others that are.
TIMING_FILES = {"timings.csv", "local-distp/timings.csv"}
TIMING_COLUMNS = {"local-distp/tupling_k.csv": {"seconds"}}


def _without(text: str, columns: set[str]) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not columns:
        return text
    keep = [k for k, name in enumerate(rows[0]) if name not in columns]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[r[k] for k in keep] for r in rows])
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="Adult directory (default: cache/download)")
    ap.add_argument("--out", default=None, help="where to write the rerun (default: a temp dir)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="distprivacy-repro-"))
    data = ["--data", args.data] if args.data else []
    base = [sys.executable, "-m", "distprivacy", "reproduce"]
    subprocess.run([*base, "paper", "--out", str(out), *data], check=True)
    subprocess.run([*base, "attribute-privacy", "local-distp", "--out", str(out), *data],
                   check=True)  # fmt: skip
    different = 0
    for ref in sorted(DOCS.rglob("*.csv")):
        rel = ref.relative_to(DOCS).as_posix()
        new = out / rel
        if rel.startswith("model-inference/") or rel in TIMING_FILES:
            continue
        if not new.exists():
            print(f"MISSING    {rel}")
            different += 1
            continue
        cols = TIMING_COLUMNS.get(rel, set())
        a = _without(ref.read_text(encoding="utf-8"), cols)
        b = _without(new.read_text(encoding="utf-8"), cols)
        if a == b:
            print(f"same       {rel}")
            continue
        different += 1
        la, lb = a.splitlines(), b.splitlines()
        line = next((k for k, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y),
                    min(len(la), len(lb)))  # fmt: skip
        print(f"DIFFERENT  {rel} (first at line {line + 1})")
    print(f"{different} file(s) differ; rerun in {out}")
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
