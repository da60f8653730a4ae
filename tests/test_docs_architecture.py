"""docs/architecture.md draws the path of a release and of a model audit as ``file:name`` boxes:
every one names a real function, class or method of src/distprivacy (read from the source, so
the drawing cannot drift from the code unnoticed), and its layer table is the test's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_architecture import LAYERS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "distprivacy"
PAGE = ROOT / "docs" / "architecture.md"
NAME = re.compile(r"\b([\w/]+\.py):([A-Za-z_][\w.]*\w)")


def _defined(path: Path) -> set[str]:
    """Qualified names of the functions and classes (and their methods) of a module."""
    out: set[str] = set()

    def visit(node: ast.AST, prefix: str) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out.add(prefix + ch.name)
                visit(ch, f"{prefix}{ch.name}.")

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return out


def test_every_box_names_real_code():
    found = NAME.findall(PAGE.read_text(encoding="utf-8"))
    assert len(found) >= 50
    missing = []
    for rel, name in found:
        path = SRC / rel
        if not path.is_file() or name not in _defined(path):
            missing.append(f"{rel}:{name}")
    assert missing == []


def test_the_layer_table_is_the_tests():
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", PAGE.read_text(encoding="utf-8"), flags=re.M)
    table = {m: int(layer) for layer, mods in rows for m in re.findall(r"`(\w+)`", mods)}
    assert table == LAYERS
