"""Helpers for the ledger tests: a plan the steward can approve, and a ledger of secrets with
one registered dataset and one approved plan (schema 3, issue 30)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from distprivacy.ledger import Ledger, StewardKey
from distprivacy.targets import EpsDelta, Target

#: Records per registered dataset (the plans' n).
N = 100
SECRET = "income"
PROTECT = "income==>50K"
#: The keys a release's entry carries in a ledger of secrets.
SECRET_KEY = f"secret:{SECRET}"
WAVE1 = "dataset:wave1@1"


def make_plan(
    data: pd.DataFrame,
    protect: str = PROTECT,
    values: tuple[float, float] = (0.45, 0.55),
    query: str = "mean:age,mean:hours_per_week",
    covariances: str = "fitted",
) -> Any:
    """A DauM-G plan (ε = 0.5, δ = 1e-3) of ``query`` on ``data``, n = 100. With
    ``covariances="pooled"`` its guarantee is μ-GDP (a μ budget can hold it); fitted
    (unequal) covariances are not (:mod:`distprivacy.ledger._budget`)."""
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.models import ExactModel
    from distprivacy.query import Query
    from distprivacy.request import GaussianOptions
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec(protect, N, list(values))
    model = ExactModel().fit(data, spec, Query.parse(query))
    cal = make_mechanism(
        "DauM-G", EpsDelta(0.5, 1e-3), GaussianOptions(covariances=covariances)
    ).calibrate(model)
    return Plan.from_calibration(cal, model, data=data)


def steward_path(path: Path) -> Path:
    return path.with_name(path.name + ".steward")


def records_path(path: Path, name: str = "wave1") -> Path:
    return path.with_name(f"{path.name}.{name}.csv")


def new_ledger(
    path: Path,
    world: dict[str, Any],
    budget: Target | None = None,
    *,
    seed: int = 1,
    database: str | None = None,
) -> StewardKey:
    """Create a ledger at ``path`` (secret ``income`` of ``world['population']``), its steward
    key beside it (``<path>.steward``), dataset ``wave1`` (100 records of the population,
    ``<path>.wave1.csv``) registered and ``world['plan']`` approved as ``means``, then the
    budget set to ``budget`` (default (ε, δ) = (50, 0.5): room for every test's releases; set
    after the approval, so that a μ budget can be tested with hand-made μ-GDP releases — the
    plan's own fitted Gaussians are not μ-GDP); closed. ``database``: a PostgreSQL URL whose
    empty database holds the rows (the key and the anchor beside ``path``). Returns the
    steward key."""
    steward = StewardKey.generate(steward_path(path))
    led = Ledger.init(
        path,
        steward=steward,
        secret=SECRET,
        protect=PROTECT,
        budget=EpsDelta(50.0, 0.5),
        population=world["population"],
        database=database,
    )
    try:
        world["data"].sample(n=N, random_state=seed).to_csv(records_path(path), index=False)
        led.register(steward, "wave1", records_path(path))
        led.approve(steward, world["plan"], "means")
        if budget is not None:
            led.set_budget(steward, None, budget, "the test's budget")
    finally:
        led.close()
    return steward


def release(path: Path, database: str | None = None) -> int:
    """One release of ``wave1`` with ``means`` (a fresh connection); its id."""
    with Ledger(path, database=database) as led:
        return led.release("means", "wave1").release_id
