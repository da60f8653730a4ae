"""docs/extending.md: an engine is one class (issue 32) — the worked example (a CSV read in
chunks) runs as written, its exact moments equal the pandas engine's, a plan fitted on it
fingerprints its file, and what it does not compute it refuses in one line."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import distprivacy as dp
from distprivacy.engines import EngineError
from distprivacy.query import Query

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _block() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## A new engine is one class") :]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]


def test_a_new_engine_is_one_class(adult_dir, monkeypatch, capsys):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    module = types.ModuleType("__extending_engines__")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    ns = module.__dict__
    exec(compile(_block(), "docs/extending.md", "exec"), ns)
    out = capsys.readouterr().out
    assert out.rstrip().endswith("True")
    engine, spec, plan = ns["engine"], ns["spec"], ns["plan"]
    query = Query.parse(ns["query"])
    # Exact moments merged chunk by chunk equal the pandas engine's on the same file.
    data = dp.load_table(engine.path)
    ref = dp.fit_model(data, spec, query, method="exact", engine="pandas")
    np.testing.assert_allclose(plan.model.means_, ref.means_, rtol=1e-12)
    np.testing.assert_allclose(plan.model.covariances_, ref.covariances_, rtol=1e-9, atol=1e-12)
    chunked, whole = engine.strata_moments(spec, query), ref_engine_moments(data, spec, query)
    for a, b in zip(chunked, whole, strict=True):
        assert a.count == b.count
        np.testing.assert_array_equal(a.minimum, b.minimum)
        np.testing.assert_array_equal(a.maximum, b.maximum)
        np.testing.assert_allclose(a.scatter, b.scatter, rtol=1e-9)
    assert plan.calibration.guarantee.check(1.0, 1e-3)
    # A Monte-Carlo model or a demonstration needs subsets: refused, naming what to do.
    with pytest.raises(EngineError, match="exact moments only"):
        dp.fit_model(engine, spec, query, method="monte-carlo", n_samples=10, random_state=0)
    with pytest.raises(EngineError, match="exact moments only"):
        dp.release(plan, population=engine, random_state=0)


def ref_engine_moments(data, spec, query):
    from distprivacy.engines import resolve_engine

    return resolve_engine("pandas", data).strata_moments(spec, query)
