"""Sphinx extension: the API reference's pages, written from the ``__all__`` lists.

One page for the front door (``distprivacy.__all__``) and one per subpackage with an ``__all__``
(``distprivacy.ledger``, ``distprivacy.mechanisms``, …); each lists its names in an autosummary
table, and autosummary writes one page per name from its docstring. A name the front door
already holds is documented there once and linked from the subpackage's page. The pages are
generated into ``docs/api/`` at every build (not committed), so a name added to an ``__all__``
appears without anyone editing the docs, and a name removed disappears.
"""

from __future__ import annotations

import importlib
import re
import pkgutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "api"

#: Subpackages left out of the reference: the command line's internals (documented by
#: ``distprivacy --help`` and the user guide), and the experiments (run by ``reproduce``).
INTERNAL = {"commands", "experiments"}


def documented_modules() -> list[str]:
    """``distprivacy`` and each public subpackage or module that declares ``__all__``."""
    import distprivacy

    names = ["distprivacy"]
    for info in sorted(pkgutil.iter_modules(distprivacy.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in INTERNAL or not info.ispkg:
            continue
        module = importlib.import_module(f"distprivacy.{info.name}")
        if getattr(module, "__all__", None):
            names.append(module.__name__)
    return names


def public_names(module_name: str) -> list[str]:
    """The module's ``__all__`` (the version string left out: it is not an API object)."""
    module = importlib.import_module(module_name)
    return [n for n in module.__all__ if n != "__version__"]


def _front_door() -> dict[int, str]:
    import distprivacy

    return {id(getattr(distprivacy, n)): n for n in public_names("distprivacy")}


def _title(text: str) -> str:
    return f"{text}\n{'=' * len(text)}\n"


def page(module_name: str) -> str:
    """The reStructuredText of one module's page."""
    module = importlib.import_module(module_name)
    doc = (module.__doc__ or "").strip().split("\n\n")[0]
    lines = [_title(f"``{module_name}``"), f".. module:: {module_name}", ""]
    if doc:
        lines += [doc, ""]
    front = _front_door() if module_name != "distprivacy" else {}
    own, linked = [], []
    for name in public_names(module_name):
        obj = getattr(module, name)
        (linked if id(obj) in front else own).append(name)
    if own:
        lines += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
        lines += [f"   {n}" for n in own] + [""]
    if linked:
        lines += ["Also in the front door, ``import distprivacy as dp``:", ""]
        lines += [f"* :obj:`{n} <distprivacy.{front[id(getattr(module, n))]}>`" for n in linked]
        lines += [""]
    return "\n".join(lines)


def write_pages(app=None, config=None) -> list[str]:
    """Write ``docs/api/<module>.rst`` for every documented module; return the page names."""
    OUT.mkdir(exist_ok=True)
    names = documented_modules()
    for name in names:
        text = page(name)
        path = OUT / f"{name}.rst"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    index = [_title("API reference by module"), ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {n}" for n in names] + [""]
    (OUT / "index.rst").write_text("\n".join(index), encoding="utf-8")
    return names


_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")
_IN_WORD_EMPHASIS = re.compile(r"(?<![\w*])\*(\w+)\*(?=\w)")


def plain_text(line: str) -> str:
    """One docstring line with the plain-text mathematics the library's docstrings use made
    safe for reStructuredText: ``|x − y|`` (absolute values and norms) is not a substitution,
    ``*semi*definite`` is not a broken emphasis. Literals and role targets are left alone."""
    stripped = line.lstrip()
    if stripped.startswith(("+-", "+=", "..")):  # a table, a directive
        return line
    parts = _LITERAL.split(line)
    for k in range(0, len(parts), 2):
        parts[k] = _IN_WORD_EMPHASIS.sub(r"\1", parts[k].replace("|", r"\|"))
    return "".join(parts)


_SECTIONS = {"Parameters", "Other Parameters", "Returns", "Yields", "Raises", "Warns",
             "Attributes", "Methods", "See Also", "Notes", "References", "Examples"}
_ENTRY = re.compile(r"^\*{0,2}[A-Za-z_]\w*(, \*{0,2}[A-Za-z_]\w*)*( : .+)?$")


def close_sections(app, what, name, obj, options, lines) -> None:
    """``autodoc-process-docstring``, before napoleon: prose after a numpy section's entries
    (an unindented paragraph that is not an entry, e.g. "Follows :class:`...`" after
    Parameters) gets its own "Notes" heading, so that napoleon does not read it as part of the
    field list (docutils: "Field list ends without a blank line")."""
    out: list[str] = []
    section = None
    for k, line in enumerate(lines):
        nxt = lines[k + 1] if k + 1 < len(lines) else ""
        if line.strip() in _SECTIONS and set(nxt.strip()) == {"-"}:
            section = line.strip()
        elif (
            section in {"Parameters", "Other Parameters", "Returns", "Yields", "Attributes"}
            and line
            and not line[0].isspace()
            and not set(line.strip()) <= {"-"}
            and k > 0
            and not lines[k - 1].strip()
            and not _ENTRY.match(line.strip())
        ):
            out += ["Notes", "-----"]
            section = "Notes"
        out.append(line)
    lines[:] = out


def escape_docstring(app, what, name, obj, options, lines) -> None:
    """``autodoc-process-docstring``: :func:`plain_text` on every line."""
    lines[:] = [plain_text(x) for x in lines]


def setup(app):
    app.connect("config-inited", write_pages)
    app.connect("autodoc-process-docstring", close_sections, priority=400)
    app.connect("autodoc-process-docstring", escape_docstring)
    return {"parallel_read_safe": True, "version": "1"}
