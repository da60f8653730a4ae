"""The package as a user gets it (issue 35, item 4): build the wheel and the sdist from a clean
copy of the repository, `twine check` both, install the wheel (not editable) into a fresh venv
in a temporary folder outside the checkout, and there run `distprivacy --help`, `distprivacy
--version` and the main job (`python -m distprivacy calibrate --epsilon 1 --delta 0.001`).

    python3 bench/check_wheel.py [--data DIR] [--keep DIR] [--out bench/results_wheel.txt]

--data: the Adult files (default: tests/public_data.py's adult_dir: ../shared/data/adult or the
library's cache, fetched into it once if need be, so that the venv fetches nothing). --keep:
where to leave dist/ and the venv (default: a temporary folder, deleted). The build tools
(`build`, `twine`) come from the running interpreter (`pip install build twine`); the venv
gets the core dependencies from the machine's pip configuration. Prints, and with --out
writes, the wheel's and the sdist's sizes, the install time and each command's exit status;
exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from public_data import adult_dir_or_exit  # noqa: E402


def _version() -> str:
    namespace: dict = {}
    exec((ROOT / "src" / "distprivacy" / "_version.py").read_text(), namespace)
    return namespace["__version__"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--keep", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    data = Path(a.data) if a.data else adult_dir_or_exit()
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="distprivacy-wheel-"))
    work.mkdir(parents=True, exist_ok=True)
    lines = ["# check_wheel: build, twine check, install the wheel in a fresh venv, run it"]
    ok = True

    def record(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    # PYTHONPATH must not leak in: the venv runs the installed wheel, not the checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        # A clean copy of the committed tree (git archive): what a clone would build.
        src = work / "src-tree"
        if src.exists():
            shutil.rmtree(src)
        src.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"],
            check=True,
            capture_output=True,
        )
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
        dist = work / "dist"
        shutil.rmtree(dist, ignore_errors=True)
        t0 = time.perf_counter()
        built = subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(dist), str(src)],
            capture_output=True,
            text=True,
            env=env,
        )
        record(f"  python -m build: exit {built.returncode}, {time.perf_counter() - t0:.0f} s")
        if built.returncode != 0:
            record(built.stderr.strip()[-2000:])
            return 1
        version = _version()
        wheels = sorted(dist.glob("*.whl"))
        sdists = sorted(dist.glob("*.tar.gz"))
        ok &= len(wheels) == 1 and len(sdists) == 1
        wheel, sdist = wheels[0], sdists[0]
        ok &= f"-{version}-" in wheel.name and sdist.name == f"distprivacy-{version}.tar.gz"
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
        record(
            f"  wheel {wheel.name}: {wheel.stat().st_size / 1024:.0f} KiB, {len(names)} files; "
            f"sdist {sdist.name}: {sdist.stat().st_size / 1024:.0f} KiB"
        )
        py_files = sum(n.endswith(".py") for n in names)
        record(f"    {py_files} Python modules; no tests or docs in the wheel")
        ok &= not any(n.startswith(("tests/", "docs/", "bench/")) for n in names)
        checked = subprocess.run(
            [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
            capture_output=True,
            text=True,
            env=env,
        )
        ok &= checked.returncode == 0
        record(f"  twine check --strict: exit {checked.returncode}")
        if checked.returncode != 0:
            record(checked.stdout.strip() + checked.stderr.strip())

        venv = work / "venv"
        shutil.rmtree(venv, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        py = str(venv / "bin" / "python")
        installed = subprocess.run(
            [py, "-m", "pip", "install", "-q", str(wheel)],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
        )
        secs = time.perf_counter() - t0
        ok &= installed.returncode == 0
        record(
            f"  python -m venv + pip install {wheel.name}: exit {installed.returncode}, "
            f"{secs:.0f} s (dependencies from the machine's pip cache or index)"
        )
        if installed.returncode != 0:
            record(installed.stderr.strip()[-2000:])
            return 1
        where = subprocess.run(
            [py, "-c", "import distprivacy; print(distprivacy.__file__, distprivacy.__version__)"],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
        )
        location, _, got = where.stdout.strip().rpartition(" ")
        inside = str(venv) in location and str(ROOT) not in location
        ok &= inside and got == version
        record(f"  import distprivacy: {got} from the venv: {'yes' if inside else location}")
        script = str(venv / "bin" / "distprivacy")
        for args in (["--help"], ["--version"]):
            res = subprocess.run([script, *args], capture_output=True, text=True, env=env, cwd=work)
            ok &= res.returncode == 0 and (args != ["--version"] or version in res.stdout)
            first = (res.stdout.strip().splitlines() or [""])[0]
            record(f"  distprivacy {' '.join(args)}: exit {res.returncode}: {first}")
        t0 = time.perf_counter()
        res = subprocess.run(
            [py, "-m", "distprivacy", "calibrate", "--epsilon", "1", "--delta", "0.001", "--json"],
            capture_output=True,
            text=True,
            env={**env, "DISTPRIVACY_DATA": str(data)},
            cwd=work,
        )
        secs = time.perf_counter() - t0
        record(
            f"  python -m distprivacy calibrate --epsilon 1 --delta 0.001: exit {res.returncode}, "
            f"{secs:.1f} s"
        )
        if res.returncode == 0:
            out = json.loads(res.stdout)
            best = out["best"]["mechanism"]
            record(f"    calibrated {len(out['mechanisms'])} mechanisms; best: {best}")
            ok &= len(out["mechanisms"]) >= 10
        else:
            ok = False
            record(f"    stderr: {res.stderr.strip()[-2000:]}")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    record(f"# {'PASS' if ok else 'FAIL'}")
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
