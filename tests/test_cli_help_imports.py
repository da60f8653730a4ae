"""`--help` of every command and subcommand loads no heavy module (issue 23: each < 0.5 s; the
times are measured by bench/bench_cli_startup.py, not here): a fresh process prints the help
and reports which of pandas, DuckDB, SciPy and the mechanisms it imported — none. The option
names the help shows without the library (commands/_names.py) are checked against the live
registries they copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from distprivacy.cli import cli

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parents[1] / "src"

#: What `--help` must not import (each costs 0.2–1.5 s of a 0.5 s budget).
HEAVY = ("pandas", "duckdb", "scipy", "pyarrow", "distprivacy.mechanisms", "distprivacy.engines")

_PROBE = """
import contextlib, io, json, sys
from distprivacy.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:] + ["--help"])
heavy = [m for m in json.loads(HEAVY) if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy, "usage": "Usage:" in out.getvalue()}))
"""


def _command_paths() -> list[tuple[str, ...]]:
    """Every command path of the CLI: (), ("calibrate",), ("ledger", "show"), …"""
    ctx = click.Context(cli)
    out: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        out.append(path)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))

    walk(cli, ())
    return out


PATHS = _command_paths()


def test_every_group_has_subcommands_listed():
    # The walk reaches the nested groups (a regression here would make the next test vacuous).
    tops = {p[0] for p in PATHS if p}
    assert {"calibrate", "release", "audit", "ledger", "reproduce"} <= tops
    assert {p[0] for p in PATHS if len(p) == 2} >= {"ledger", "attribute", "local", "models"}


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "distprivacy")
def test_help_imports_no_heavy_module(path):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    probe = _PROBE.replace("json.loads(HEAVY)", repr(list(HEAVY)))
    res = subprocess.run(
        [sys.executable, "-c", probe, *path],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["code"] == 0 and got["usage"], got
    assert got["heavy"] == [], f"`distprivacy {' '.join(path)} --help` imports {got['heavy']}"


def test_static_names_match_the_registries():
    from distprivacy.commands import _names
    from distprivacy.engines import ENGINES
    from distprivacy.mechanism_audit import ATTACKS, DEFAULT_ATTACKS
    from distprivacy.mechanisms import MECHANISMS
    from distprivacy.query import ADULT_DEFAULT_STATISTICS

    assert _names.MECHANISM_NAMES == tuple(MECHANISMS)
    assert _names.ENGINE_NAMES == tuple(ENGINES)
    assert _names.ADULT_DEFAULT_STATISTICS == ADULT_DEFAULT_STATISTICS
    assert _names.AUDIT_ATTACKS == tuple(ATTACKS)
    assert _names.DEFAULT_AUDIT_ATTACKS == tuple(DEFAULT_ATTACKS)
