"""Fixtures of the ledger tests: a small population file (4000 Adult records, so approving a
plan does not reload the whole of Adult) and a plan fitted on it."""

from __future__ import annotations

import pytest
from secrets_world import make_plan


@pytest.fixture(scope="session")
def ledger_world(adult, tmp_path_factory):
    """``population``: a CSV of 4000 Adult records; ``data``: it as the library reads it;
    ``plan``: two means on it, approvable for secret ``income``."""
    from distprivacy.datasets import load_data

    path = tmp_path_factory.mktemp("population") / "population.csv"
    adult.sample(n=4000, random_state=0).to_csv(path, index=False)
    data = load_data(path)
    return {"population": path, "data": data, "plan": make_plan(data)}
