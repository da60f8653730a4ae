"""The ledger package is split by concept (issue 32, item 6): each module imports only the
public names of its siblings — never a name starting with an underscore, at the top or inside
a function — and the package's own ``__init__`` only re-exports."""

from __future__ import annotations

import ast
from pathlib import Path

import distprivacy.ledger

PACKAGE = Path(distprivacy.ledger.__file__).parent


def _private_imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            continue
        if node.level == 0 and not node.module.startswith("distprivacy.ledger"):
            continue
        for alias in node.names:
            if alias.name.startswith("_"):
                out.append(f"{path.name}: from {node.module} import {alias.name}")
    return out


def test_no_module_imports_a_siblings_private_names():
    found = [x for p in sorted(PACKAGE.glob("*.py")) for x in _private_imports(p)]
    assert found == [], "\n".join(found)


def test_the_package_init_only_re_exports():
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert defined == ["__getattr__"]  # the lazy data_fingerprint
    assert set(distprivacy.ledger.__all__) <= set(dir(distprivacy.ledger)) | {"data_fingerprint"}
