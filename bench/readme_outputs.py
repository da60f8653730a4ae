"""Run the README's examples as tests/test_readme.py does and print their whole output, to
refresh the output blocks the README shows when the library's wording or numbers change.

    PYTHONPATH=src python3 bench/readme_outputs.py [--data ADULT_DIR]

Prints, for the ten-line Python example and for each command of the five-step walk-through (on
CPS 1988 written to CSV files in a temporary folder, COLUMNS=100), the command and everything
it printed. Copy the lines worth showing into the README's ```text blocks (``…`` for cuts);
tests/test_readme.py then checks them against a fresh run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import public_data  # noqa: E402
from test_readme import PYTHON_SECTION, WALK_SECTION, blocks, run_bash  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None, help="the Adult files (default: adult_dir)")
    a = ap.parse_args()
    data = Path(a.data) if a.data else public_data.adult_dir_or_exit()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["DISTPRIVACY_DATA"] = str(data)
        cwd = os.getcwd()
        os.chdir(work)
        try:
            (source,) = blocks(PYTHON_SECTION, "python")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(source, "README python", "exec"), {"__name__": "__readme__"})
        finally:
            os.chdir(cwd)
        print("# the ten-line example prints:")
        print(out.getvalue())
        wages = public_data.load("cps1988")
        wages.to_csv(work / "wages.csv", index=False)
        wages.sample(n=500, random_state=1).to_csv(work / "survey.csv", index=False)
        (script,) = blocks(WALK_SECTION, "bash")
        command = ""
        for line in script.splitlines():
            if line.lstrip().startswith("#") or not line.strip():
                continue
            command += line.rstrip("\\").rstrip() + " "
            if line.rstrip().endswith("\\"):
                continue
            done = run_bash(command, work)
            print(f"$ {command.strip()}   # exit {done.returncode}")
            print(done.stdout + done.stderr)
            command = ""
    return 0


if __name__ == "__main__":
    sys.exit(main())
