"""Docs that cannot rot (issue 35, item 3), without Sphinx:

* every ```python example of the guides (docs/**/*.md) runs, the blocks of a page in one
  namespace, in order; what it prints matches the ```text block shown after it (when the
  paragraph between says "prints"), and an expression followed by a comment holding a Python
  literal (``# (2.5, 2.0, 39.43)``) evaluates to that literal (numbers to 1e-9 relative;
  ``(...)`` or ``…`` in a string matches anything). The few fragments that cannot run alone
  are listed in :data:`NOT_RUN` with the reason, and where they are run instead;
* every public name — ``distprivacy.__all__`` and the ``__all__`` of each subpackage the API
  reference documents — has a docstring, with a Parameters section when it takes parameters
  and a Returns (or Yields) section when it returns something;
* the theorem page (docs/theorems.md) names code that exists.

The Sphinx build (warnings as errors: broken links, missing pages) is in ``.ci/run``; the built
site in Chromium is ``tests/test_docs_browser.py``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import re
import sys
from pathlib import Path

import pytest
from doc_output import missing_lines

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

#: Examples that are fragments (they name objects made elsewhere on their page) or that are run
#: by a test of their own: page → (reason, where it runs).
NOT_RUN = {
    "serve.md": "needs a running service and an analyst's token; tests/service/test_api.py "
    "releases through dp.Client against a real server the same way",
    "extending.md": "run by tests/mechanisms/test_extending.py, "
    "tests/test_extending_statistics.py and tests/test_extending_engines.py (they register a "
    "mechanism and a statistic kind once; the engine's moments are checked against pandas')",
    "ledger.md": "needs a plan, a records file and a steward key made on the page; the same calls "
    "run in docs/guide/python.md, and tests/ledger/test_secrets.py runs these",
    "model_inference.md": "a fragment: the populations adv_g0, victim_g0, … come from the page's "
    "game; tests/inference runs the attacks",
    "markov_quilt.md": "a fragment: `data` is the school records of the page's command-line "
    "example; tests/attribute runs the release",
}


def pages() -> list[Path]:
    """The guides: docs/**/*.md, without the build, the generated API pages and run folders."""
    out = []
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS).as_posix()
        if rel.startswith(("_build/", "api/")) or "/report.md" in f"/{rel}":
            continue
        out.append(path)
    return out


FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", flags=re.S | re.M)


def examples(path: Path) -> list[tuple[str, str | None]]:
    """The page's ```python blocks, each with the ```text block shown as its output (the next
    block, when the text between them says "prints"), else None."""
    text = path.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    out = []
    for k, m in enumerate(fences):
        if m.group(1) != "python":
            continue
        shown = None
        if k + 1 < len(fences) and fences[k + 1].group(1) == "text":
            between = text[m.end() : fences[k + 1].start()]
            if "prints" in between:
                shown = fences[k + 1].group(2)
        out.append((m.group(2), shown))
    return out


def run_pages() -> list[str]:
    return [
        p.relative_to(DOCS).as_posix()
        for p in pages()
        if examples(p) and p.relative_to(DOCS).as_posix() not in NOT_RUN
    ]


def test_every_page_with_python_is_run_or_says_why():
    with_python = {p.relative_to(DOCS).as_posix() for p in pages() if examples(p)}
    assert set(NOT_RUN) <= with_python, set(NOT_RUN) - with_python  # no stale excuses
    assert "guide/python.md" in run_pages()


def _close(got, want) -> bool:
    """``got`` equals the literal ``want``: numbers to 1e-9 relative, sequences element-wise
    (NumPy arrays and tuples alike), strings with ``(...)``/``…`` as wildcards."""
    if isinstance(want, str):
        pattern = ".*".join(re.escape(p) for p in re.split(r"\(\.\.\.\)|…", want))
        return isinstance(got, str) and re.fullmatch(pattern, got, flags=re.S) is not None
    if isinstance(want, bool) or want is None:
        return got == want
    if isinstance(want, int | float):
        try:
            g = float(got)
        except (TypeError, ValueError):
            return False
        return math.isclose(g, want, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(want, list | tuple):
        if hasattr(got, "tolist"):
            got = got.tolist()
        return (
            isinstance(got, list | tuple)
            and len(got) == len(want)
            and all(_close(g, w) for g, w in zip(got, want, strict=True))
        )
    return got == want


def _literal_comment(lines: list[str], end_line: int):
    """The literal of the comment line right after a statement ending at ``end_line`` (1-based),
    or ``...`` (Ellipsis) when there is none."""
    if end_line >= len(lines):
        return ...
    nxt = lines[end_line].strip()
    if not nxt.startswith("# "):
        return ...
    try:
        return ast.literal_eval(nxt[2:])
    except (ValueError, SyntaxError):
        return ...


def run_block(source: str, namespace: dict, label: str) -> list[str]:
    """Execute ``source`` statement by statement; return the mismatches of the expressions
    followed by a literal comment."""
    tree = ast.parse(source, filename=label)
    lines = source.splitlines()
    wrong = []
    for node in tree.body:
        if isinstance(node, ast.Expr):
            code = compile(ast.Expression(node.value), label, "eval")
            value = eval(code, namespace)
            want = _literal_comment(lines, node.end_lineno)
            if want is not ... and not _close(value, want):
                wrong.append(f"line {node.lineno}: {lines[node.lineno - 1].strip()} gave {value!r}")
        else:
            exec(compile(ast.Module([node], []), label, "exec"), namespace)
    return wrong


def _any_values(m: re.Match[str]) -> str:
    return re.sub(r"=[-0-9.e+]+(?=[,;])", "=…", m.group(1))


@pytest.mark.parametrize("page", run_pages())
def test_python_examples_run(page, adult_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for k, (source, shown) in enumerate(examples(DOCS / page)):
        label = f"docs/{page} python block {k}"
        try:
            wrong = run_block(source, namespace, label)
        except Exception as e:  # pragma: no cover - the message is the point
            pytest.fail(f"{label} failed: {type(e).__name__}: {e}")
        assert wrong == [], f"{label}: {wrong}"
        out = capsys.readouterr().out
        if shown is not None:
            # A release's values are drawn from the secure source: any number.
            shown = re.sub(r"(?m)^(Release\(.*)$", _any_values, shown)
            assert missing_lines(shown, out) == [], f"{label} printed:\n{out}"


# --------------------------------------------------------------------------------------------
# Docstrings
# --------------------------------------------------------------------------------------------


def public_objects() -> list[tuple[str, object]]:
    """Every name of the API reference: the front door's and each documented subpackage's
    ``__all__`` (docs/api_pages.py decides which), each object once, under its first name."""
    import api_pages

    seen: dict[int, str] = {}
    out = []
    for module_name in api_pages.documented_modules():
        module = importlib.import_module(module_name)
        for name in api_pages.public_names(module_name):
            obj = getattr(module, name)
            if id(obj) in seen:
                continue
            seen[id(obj)] = name
            out.append((f"{module_name}.{name}", obj))
    return out


def _sections(doc: str) -> set[str]:
    return set(re.findall(r"^\s*(\w[\w ]*)\n\s*-{3,}\s*$", doc, flags=re.M))


def _takes_parameters(func) -> bool:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return False
    return any(
        p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in sig.parameters.values()
    )


def _returns_something(func) -> bool:
    try:
        ret = inspect.signature(func).return_annotation
    except (TypeError, ValueError):
        return False
    return ret not in (None, "None", inspect.Signature.empty)


def docstring_problems(qualname: str, obj) -> list[str]:
    """What the docstring of one public object lacks."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return []  # constants and registries: documented by their module
    doc = inspect.getdoc(obj) or ""
    if not doc.strip():
        return [f"{qualname}: no docstring"]
    problems = []
    sections = _sections(doc)
    if inspect.isfunction(obj):
        if _takes_parameters(obj) and "Parameters" not in sections:
            problems.append(f"{qualname}: no Parameters section")
        if _returns_something(obj) and not sections & {"Returns", "Yields"}:
            problems.append(f"{qualname}: no Returns section")
    elif inspect.isclass(obj) and not issubclass(obj, BaseException | Warning):
        init = obj.__dict__.get("__init__")
        init_doc = inspect.getdoc(init) or "" if init else ""
        if (
            init is not None
            and inspect.isfunction(init)
            and _takes_parameters(init)
            and "Parameters" not in sections | _sections(init_doc)
            and "Attributes" not in sections
        ):
            problems.append(f"{qualname}: no Parameters (or Attributes) section")
    return problems


#: What the subpackages' public names lacked when the check was written (issue 35): a ratchet.
#: The front door (``distprivacy.__all__``) has no entry here: every one of its names passes.
DEBT_FILE = Path(__file__).with_name("docstring_debt.txt")


def _debt() -> set[str]:
    lines = DEBT_FILE.read_text(encoding="utf-8").splitlines()
    return {x for x in lines if x.strip() and not x.startswith("#")}


def test_public_names_document_parameters_and_returns():
    problems = {p for q, obj in public_objects() for p in docstring_problems(q, obj)}
    debt = _debt()
    front_door = {p for p in problems if p.split(":")[0].count(".") == 1}
    assert front_door == set(), "the front door's names must all pass:\n" + "\n".join(
        sorted(front_door)
    )
    new = sorted(problems - debt)
    assert new == [], f"{len(new)} public names lack docstring sections:\n" + "\n".join(new)
    fixed = sorted(debt - problems)
    assert fixed == [], f"fixed (or gone): remove these lines from {DEBT_FILE.name}:\n" + "\n".join(
        fixed
    )


def test_the_docstring_check_finds_what_is_missing():
    def bare(x: int) -> int:
        return x

    def documented(x: int) -> int:
        """Double.

        Parameters
        ----------
        x : int
            A number.

        Returns
        -------
        int
            Twice ``x``.
        """
        return 2 * x

    assert docstring_problems("bare", bare) == ["bare: no docstring"]
    bare.__doc__ = "Just words."
    assert docstring_problems("bare", bare) == [
        "bare: no Parameters section",
        "bare: no Returns section",
    ]
    assert docstring_problems("documented", documented) == []


# --------------------------------------------------------------------------------------------
# The theorem page
# --------------------------------------------------------------------------------------------


def test_theorem_page_names_real_code():
    text = (DOCS / "theorems.md").read_text(encoding="utf-8")
    targets = re.findall(r"\{py:(?:class|func|mod|obj)\}`([\w.]+)`", text)
    assert len(targets) >= 40, len(targets)
    missing = []
    for target in targets:
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                missing.append(target)
            break
        else:
            missing.append(target)
    assert missing == [], f"docs/theorems.md names code that does not exist: {missing}"
