"""Third-party mechanisms register through the entry-point group ``distprivacy.mechanisms``
(issue 32 item 4): a tiny distribution written into a temporary directory on ``sys.path``
(``importlib.metadata`` finds its ``.dist-info``; nothing is installed) adds a mechanism to the
registry, to ``make_mechanism`` and to the names the command line lists; a broken one is
skipped with a warning."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from distprivacy.exceptions import DistPrivacyWarning
from distprivacy.mechanisms import MECHANISMS, load_mechanism_plugins, make_mechanism
from distprivacy.targets import EpsDelta

# (imported before any test puts a plug-in on the path: the tests load it themselves)

SRC = Path(__file__).resolve().parents[1] / "src"

_MODULE = '''
from distprivacy.mechanisms import ExpectedValueGaussian


class TinyMechanism(ExpectedValueGaussian):
    """ExpM-G under another name: a plug-in needs nothing more."""

    name = "TinyM-G"
    theorem = "Chen & Ohrimenko (2023), Thm 4.2 (as ExpM-G)"
'''


def _distribution(root: Path, entry_points: str) -> Path:
    """A package ``tinyplug`` and its ``tinyplug-0.1.dist-info`` under ``root``."""
    (root / "tinyplug.py").write_text(textwrap.dedent(_MODULE), encoding="utf-8")
    info = root / "tinyplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tinyplug\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return root


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    root = _distribution(tmp_path, "[distprivacy.mechanisms]\nTinyM-G = tinyplug:TinyMechanism\n")
    monkeypatch.syspath_prepend(str(root))
    yield root
    from distprivacy.mechanisms import base

    base._REGISTRY.pop("TinyM-G", None)
    sys.modules.pop("tinyplug", None)


def test_an_entry_point_registers_a_mechanism(plugin_path):
    from distprivacy.registry import BUILTIN_MECHANISMS, mechanism_names

    assert "TinyM-G" in mechanism_names()  # read from the metadata, nothing imported
    assert "tinyplug" not in sys.modules
    assert load_mechanism_plugins() == ("TinyM-G",)
    assert tuple(MECHANISMS) == mechanism_names() == (*BUILTIN_MECHANISMS, "TinyM-G")
    mech = make_mechanism("tinym-g", EpsDelta(1.0, 1e-3))  # case-insensitive, like the built-ins
    assert type(mech).__name__ == "TinyMechanism" and mech.name == "TinyM-G"


def test_a_broken_plugin_is_skipped_with_a_warning(tmp_path, monkeypatch):
    root = _distribution(
        tmp_path,
        "[distprivacy.mechanisms]\nWrongName-G = tinyplug:TinyMechanism\n"
        "Missing-G = no_such_module:Nothing\n",
    )
    monkeypatch.syspath_prepend(str(root))
    try:
        with pytest.warns(DistPrivacyWarning) as caught:
            assert load_mechanism_plugins() == ()
        words = [str(w.message) for w in caught]
        assert any("'WrongName-G'" in w and "not 'WrongName-G'" in w for w in words)
        assert any("'Missing-G'" in w and "no_such_module" in w for w in words)
        assert "WrongName-G" not in MECHANISMS and "TinyM-G" not in MECHANISMS
    finally:
        sys.modules.pop("tinyplug", None)


def test_the_command_line_lists_the_plugin(plugin_path):
    """In a fresh process with the plug-in on the path: ``release --help`` names it (without
    importing a mechanism), and importing the mechanisms registers it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(SRC)])}
    probe = (
        "import contextlib, io, sys\n"
        "from distprivacy.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    main(['release', '--help'])\n"
        "print(' '.join(out.getvalue().split()))\n"
        "print('distprivacy.mechanisms' in sys.modules)\n"
        "import distprivacy.mechanisms as m\n"
        "print(list(m.MECHANISMS)[-1])\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert res.returncode == 0, res.stderr
    help_text, imported, last = res.stdout.strip().splitlines()[-3:]
    assert "GroupDP-G, TinyM-G" in help_text
    assert imported == "False"
    assert last == "TinyM-G"  # importing the mechanisms loads the plug-in after the built-ins
