"""A small Adult plan shared by the plan tests (a helper module, not a test file)."""

from __future__ import annotations

import pandas as pd

from distprivacy.mechanisms.plans import Plan
from distprivacy.targets import EpsDelta

SPEC = ("income==>50K", 100, [0.45, 0.55])
STATISTICS = "mean:age,mean:hours_per_week"


def make_plan(adult: pd.DataFrame, mechanism: str = "DauM-G") -> Plan:
    """A DauM-G plan (ε = 0.5, δ = 1e-3) of two means on Adult, n = 100."""
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import ExactModel
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec(*SPEC)
    query = Query.parse(STATISTICS)
    model = ExactModel().fit(adult, spec, query)
    cal = make_mechanism(mechanism, EpsDelta(0.5, 1e-3)).calibrate(model)
    return Plan.from_calibration(cal, model, data=adult)
