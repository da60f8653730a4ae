"""Sphinx configuration of the distprivacy documentation (docs/decisions.md says why Sphinx).

Build: ``python3 -m sphinx -W --keep-going -b html docs docs/_build/html`` (``.ci/run`` does,
warnings as errors, then ``-b linkcheck``-free internal link checking through ``nitpicky``
references and MyST's cross-reference warnings)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from distprivacy._version import __version__  # noqa: E402

project = "distprivacy"
author = "the distprivacy authors"
copyright = "2026, the distprivacy authors"  # noqa: A001
version = release = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "api_pages",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "examples",
]
templates_path = ["_templates"]

# MyST: the guides are GitHub-flavoured markdown; headings get anchors for `page.md#anchor`.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]
suppress_warnings = ["myst.header", "ref.python"]

# Autodoc: numpy-style docstrings (napoleon), signatures with type hints in the description.
autosummary_generate = True
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False

html_theme = "alabaster"
html_title = f"distprivacy {__version__}"
html_static_path: list[str] = []
html_theme_options = {
    "description": "Distribution privacy for dataset statistics",
    "fixed_sidebar": True,
    "page_width": "1240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
