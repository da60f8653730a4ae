"""The core install, for real (issue 22, item 6): a fresh venv, `pip install REPO` (no extras),
then check that matplotlib, cvxpy and scikit-learn are NOT installed and that `distprivacy
calibrate --epsilon 1 --delta 0.001` works (OptM-G named as needing the [optimal] extra).

    python3 bench/check_core_install.py [--venv /tmp/corevenv] [--data DIR]
        [--out bench/results_core_install.txt]

--data: the Adult files (default: tests/public_data.py's adult_dir, i.e. ../shared/data/adult
or the library's cache, fetched into it once if need be, so that the venv fetches nothing). Exit
status 1 when a check fails. tests/test_extras.py checks the same behaviour in the test
environment by making the extras unimportable.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from public_data import adult_dir_or_exit  # noqa: E402

EXTRAS = ("matplotlib", "cvxpy", "scikit-learn")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", default="/tmp/corevenv")
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    venv = Path(a.venv)
    data = Path(a.data) if a.data else adult_dir_or_exit()
    lines = [
        "# check_core_install: a fresh venv with the core only",
        f"# python3 bench/check_core_install.py --venv {venv} --data {data}",
    ]
    ok = True

    def record(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    if venv.exists():
        shutil.rmtree(venv)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # PIP_* settings of this machine (indexes, constraints) apply; PYTHONPATH must not leak in.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [py, "-m", "pip", "install", "-q", str(ROOT)], check=True, env=env, cwd=venv.parent
    )
    record(f"  python -m venv + pip install REPO (core): {time.perf_counter() - t0:.0f} s")
    listed = subprocess.run(
        [py, "-m", "pip", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    names = {d["name"].lower(): d["version"] for d in json.loads(listed.stdout)}
    present = [e for e in EXTRAS if e in names]
    ok &= not present
    record(f"  installed extras among {', '.join(EXTRAS)}: {', '.join(present) or 'none'}")
    core = ("numpy", "scipy", "pandas", "pyarrow", "duckdb", "click", "rich", "opendp")
    record("  core: " + ", ".join(f"{n} {names.get(n, 'MISSING')}" for n in core))
    record(f"  {len(names)} distributions installed in the venv")

    cmd = ["-m", "distprivacy", "calibrate", "--epsilon", "1", "--delta", "0.001", "--json"]
    t0 = time.perf_counter()
    res = subprocess.run(
        [py, *cmd],
        capture_output=True,
        text=True,
        env={**env, "DISTPRIVACY_DATA": str(data)},
        cwd=venv.parent,
    )
    secs = time.perf_counter() - t0
    record(
        f"  distprivacy calibrate --epsilon 1 --delta 0.001: exit {res.returncode}, {secs:.1f} s"
    )
    if res.returncode == 0:
        out = json.loads(res.stdout)
        done = [c["name"] for c in out["mechanisms"]]
        record(f"    calibrated: {', '.join(done)}")
        for name, reason in out["not_applicable"].items():
            record(f"    not applicable: {name}: {reason}")
        ok &= "needs cvxpy: pip install 'distprivacy[optimal]'" in out["not_applicable"].get(
            "OptM-G", ""
        )
    else:
        ok = False
        record(f"    stderr: {res.stderr.strip()}")
    for args in (["calibrate", "--mechanism", "OptM-G"], ["reproduce", "table2", "--out", "x"]):
        res = subprocess.run(
            [py, "-m", "distprivacy", *args],
            capture_output=True,
            text=True,
            env={**env, "DISTPRIVACY_DATA": str(data)},
            cwd=venv.parent,
        )
        ok &= res.returncode == 2
        record(f"  distprivacy {' '.join(args)}: exit {res.returncode}: {res.stderr.strip()}")
    record(f"# {'PASS' if ok else 'FAIL'}")
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
