"""A fixed sample of the fuzz campaign of bench/fuzz_cli.py (issue 21): every 12th command line
and every API call, each classified as the campaign does; none may end in a traceback, an exact
release without --allow-exact, a silent accept of invalid input or a hang. The full campaign
(`python3 bench/fuzz_cli.py`) runs every case; its tally is in bench/results_fuzz.txt."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, adult_dir, monkeypatch_module):
    monkeypatch_module.setenv("DISTPRIVACY_DATA", str(adult_dir))
    sys.path.insert(0, str(BENCH))
    try:
        import fuzz_cli
    finally:
        sys.path.remove(str(BENCH))
    world = fuzz_cli.make_world(tmp_path_factory.mktemp("fuzz"))
    return fuzz_cli, world, fuzz_cli.cases(world)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_campaign_is_large_enough(campaign):
    _, _, cases = campaign
    assert sum(1 for c in cases if c.call is None) >= 500
    assert sum(1 for c in cases if c.call is not None) >= 200


def test_a_sample_of_the_campaign(campaign):
    fuzz_cli, world, cases = campaign
    cli = [c for c in cases if c.call is None][::12]
    api = [c for c in cases if c.call is not None]
    bad = []
    for case in [*cli, *api]:
        kind, detail = fuzz_cli.run_case(case, world)
        if kind != "ok":
            bad.append(f"{kind}: {case.name}: {detail}")
    assert bad == []
