"""Library errors speak the API; the command line translates them to its flags (issue 22.5)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from distprivacy.commands._flags import FLAGS, to_flags
from distprivacy.targets import EpsDelta

SRC = Path(__file__).resolve().parents[2] / "src" / "distprivacy"
#: Layers that print for the command line (flags are theirs to name).
CLI_SIDE = ("commands", "cli.py", "experiments", "report", "__main__.py",
            # The service's messages are read in its pages and by `release --server`: they name
            # the commands that make its inputs (a `calibrate --save` plan, `serve --state`).
            "service")  # fmt: skip
#: String constants that are not advice to a Python caller: pip's own arguments, the fetch
#: announcement that names both spellings, the option names the commands pass in.
ALLOWED = {
    "--no-deps", "--only-binary=:all:", "--quiet", "--disable-pip-version-check", "--no-input",
    "--timeout", "--retries", "--out",
}  # fmt: skip
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


@pytest.mark.slow
def test_no_library_message_names_a_command_line_flag():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] in CLI_SIDE:
            continue
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if text.strip() in ALLOWED or "(`load_adult(path)` in Python)" in text:
                continue
            if FLAG.search(text):
                bad.append(f"{rel}:{line}: {text[:80]!r}")
    assert bad == [], "\n".join(bad)


def test_every_translation_is_a_real_flag():
    import click

    from distprivacy.cli import cli

    flags: set[str] = set()

    def walk(cmd: click.Command) -> None:
        for p in cmd.params:
            flags.update(o for o in p.opts if o.startswith("--"))
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        walk(cli.get_command(ctx, name))
    for term, flag in FLAGS.items():
        assert flag.split()[0] in flags, (term, flag)
    assert (
        to_flags("pass `allow_exact=True`; lower `n`") == "pass --allow-exact; lower --subset-size"
    )
    assert to_flags("see `distprivacy models train`") == "see `distprivacy models train`"


def test_the_same_refusal_in_python_and_on_the_command_line(tmp_path):
    """An exact release: Python is told ``allow_exact=True``, the command line --allow-exact."""
    from distprivacy.exceptions import ExactReleaseError
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import GaussianModel

    cov = np.eye(1)
    model = GaussianModel(["a", "b"], [[0.0], [1.0]], [cov, cov], [("a", "b")])
    cal = make_mechanism("ExpM-L", EpsDelta(1e300, 0.0)).calibrate(model)
    with pytest.raises(ExactReleaseError, match="`allow_exact=True`") as err:
        cal.release(np.array([3.0]), random_state=0)
    assert "--allow-exact" not in str(err.value)
    assert "--allow-exact" in to_flags(str(err.value))
