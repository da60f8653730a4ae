"""The README's Python section runs as written (with the tests' Adult files, conftest's
``adult_dir``, as the data source, as a fresh machine's cache would hold them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(section: str = "## Python") -> list[str]:
    """The ```python blocks of one README section, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(section + "\n")
    end = text.find("\n## ", start + len(section))
    body = text[start : end if end >= 0 else None]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


def test_readme_has_a_python_example():
    blocks = python_blocks()
    assert blocks, "README's Python section has no ```python block"
    assert any("import distprivacy as dp" in b for b in blocks)


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
