"""The tree's shape (issue 15): the import graph between the library's modules runs one way,
from the layer below to the layer above (so it has no cycle), and the command-line entry point
is a router under 350 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "distprivacy"

#: Each top-level module or package of distprivacy and its layer: a module may import only
#: from lower layers (the front door ``__init__`` imports everything lazily and is left out).
LAYERS: dict[str, int] = {
    "exceptions": 0, "_version": 0, "_json": 0,
    "resources": 1, "checks": 1, "_paths": 1, "registry": 1, "postgres": 1,
    "accounting": 2, "randomness": 2, "intervals": 2, "spec": 2, "outputs": 2, "files": 2,
    "datasets": 2, "distances": 2,
    "query": 3, "profiles": 3, "noise": 3, "fingerprint": 3,
    "sampling": 4, "guarantee": 4, "targets": 4, "wording": 4,
    "engines": 5, "protocols": 5, "request": 5,
    "models": 6,
    "mechanisms": 7,
    "composition": 8, "statistic_attacks": 8, "attribute": 8, "local": 8,
    "mechanism_audit": 9, "ledger": 9, "inference": 9,
    "experiments": 10, "workflow": 10, "report": 10, "service": 10,
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


def test_a_thin_cli():
    """The command-line entry point is a router. (Source files have no line cap any more:
    issue 32 asks modules to be split by concept, not to fit a number.)"""
    assert len((SRC / "cli.py").read_text(encoding="utf-8").splitlines()) < 350


def test_front_door_exports_what_it_lists():
    import distprivacy as dp

    assert len(set(dp.__all__)) == len(dp.__all__)
    missing = [n for n in dp.__all__ if not hasattr(dp, n)]
    assert missing == []
    for name in ("load_adult", "ProtectionSpec", "Query", "fit_model", "DauM", "make_mechanism",
                 "Guarantee", "Calibration", "check_random_state"):  # fmt: skip
        assert name in dp.__all__


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["distprivacy", *parts])


def _imported_modules(path: Path, known: set[str]) -> set[str]:
    """The distprivacy modules ``path`` imports (anywhere: lazily, under TYPE_CHECKING or not),
    resolved to the most specific module of ``known``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for n in names:
            if n.startswith("distprivacy."):
                while n not in known and "." in n:
                    n = n.rsplit(".", 1)[0]
                if n in known:
                    out.add(n)
    return out


#: Circles still to be removed, each with the issue that removes it (none may be added).
KNOWN_CIRCLES: set[str] = set()


def test_no_circles_inside_packages():
    """Inside a package, the modules' imports form no cycle (issue 22): a package's private
    modules stand in an order, each importing only those below it. A package's ``__init__``
    (its front, re-exporting its modules) is left out, as the front door is."""
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    known = set(files)
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        if path.name == "__init__.py":
            continue
        pkg = name.rsplit(".", 1)[0]
        graph[name] = {
            m
            for m in _imported_modules(path, known)
            if m != name and m.rsplit(".", 1)[0] == pkg and files[m].name != "__init__.py"
        }
    cycles: list[str] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" → ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    new = sorted(set(cycles) - KNOWN_CIRCLES)
    assert new == [], "\n".join(new)
