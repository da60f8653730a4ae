"""The tree's shape (issue 15): the import graph between the library's modules runs one way,
from the layer below to the layer above (so it has no cycle), no source file is over 700 lines,
and the command-line entry point is a router under 350 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "distprivacy"

#: Each top-level module or package of distprivacy and its layer: a module may import only
#: from lower layers (the front door ``__init__`` imports everything lazily and is left out).
LAYERS: dict[str, int] = {
    "exceptions": 0, "_version": 0, "_json": 0,
    "resources": 1, "accounting": 1,
    "randomness": 2, "intervals": 2, "spec": 2, "outputs": 2, "files": 2, "datasets": 2,
    "distances": 2, "fingerprint": 2,
    "query": 3, "profiles": 3, "noise": 3,
    "sampling": 4, "guarantee": 4,
    "engines": 5,
    "models": 6,
    "mechanisms": 7,
    "composition": 8, "attacks": 8, "attribute": 8, "local": 8,
    "audit": 9, "ledger": 9, "inference": 9,
    "experiments": 10,
    "commands": 11,
    "cli": 12,
    "__main__": 13,
}  # fmt: skip


def _top(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    """Top-level distprivacy modules ``path`` imports (anywhere in it, lazily or not)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "distprivacy":
                names = [f"distprivacy.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for n in names:
            parts = n.split(".")
            if parts[0] == "distprivacy" and len(parts) > 1:
                out.add(parts[1])
    return out


def test_every_module_has_a_layer():
    tops = {_top(p) for p in SRC.rglob("*.py")} - {"__init__"}
    assert tops <= set(LAYERS), sorted(tops - set(LAYERS))


def test_imports_only_go_down():
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        me = _top(path)
        if me == "__init__":
            continue
        for other in _imports(path) - {me}:
            if other == "__init__" or LAYERS.get(other, -1) >= LAYERS[me]:
                upward.append(f"{path.relative_to(SRC)} imports distprivacy.{other}")
    assert upward == [], "\n".join(upward)


def test_no_source_file_over_700_lines_and_a_thin_cli():
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert long == {}
    assert len((SRC / "cli.py").read_text(encoding="utf-8").splitlines()) < 350


def test_front_door_exports_what_it_lists():
    import distprivacy as dp

    assert len(set(dp.__all__)) == len(dp.__all__)
    missing = [n for n in dp.__all__ if not hasattr(dp, n)]
    assert missing == []
    for name in ("load_adult", "ProtectionSpec", "Query", "fit_model", "DauM", "make_mechanism",
                 "Guarantee", "Calibration", "check_random_state"):  # fmt: skip
        assert name in dp.__all__
