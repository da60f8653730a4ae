"""docs/extending.md: a statistic kind is one class (issue 22) — the worked example runs as
written, parses from text, fits on pandas and on DuckDB with the same moments, and plans write
it back as text."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import distprivacy as dp
from distprivacy import query as query_module
from distprivacy.targets import EpsDelta

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _block() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## A new statistic kind is one class") :]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]


def test_a_new_statistic_kind_is_one_class(adult_dir, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.setattr(query_module, "_KINDS", dict(query_module._KINDS))
    module = types.ModuleType("__extending_statistics__")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    ns = module.__dict__
    exec(compile(_block(), "docs/extending.md", "exec"), ns)
    assert "moment2(age)" in capsys.readouterr().out
    model, spec, query = ns["model"], ns["spec"], ns["query"]
    # E[x²] ≥ E[x]² under every θ, and the moments agree with DuckDB's SQL form to 1e-9.
    assert (model.means_[:, 1] >= model.means_[:, 0] ** 2).all()
    data = dp.load_adult()
    path = tmp_path / "adult.csv"
    data.to_csv(path, index=False)
    on_duckdb = dp.fit_model(str(path), spec, query, method="exact", engine="duckdb")
    np.testing.assert_allclose(on_duckdb.means_, model.means_, rtol=1e-9)
    np.testing.assert_allclose(on_duckdb.covariances_, model.covariances_, rtol=1e-7)
    # A plan stores the query as text and reads it back.
    cal = dp.DauM(EpsDelta(1.0, 1e-3)).calibrate(model)
    plan = dp.Plan.from_calibration(cal, model)
    assert plan.query == "mean:age,moment2:age"
    assert dp.Plan.from_dict(plan.to_dict()).guarantee == plan.guarantee
    with pytest.raises(dp.DistPrivacyError, match="already defined"):

        class Clash(query_module.Mean):
            kind = "moment2"
