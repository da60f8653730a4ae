"""A μ budget is a GDP curve, and the ledger speaks at a δ someone chose (issue 33, measured 3
and 4).

* A μ budget never accepts a release whose exact δ(ε) exceeds the budget's GDP curve at some ε
  (the EigM-G case: fitted, unequal covariances, labelled "μ = X" but with exponential tails),
  at approval or at release, even with the budget's μ above the label; a μ-GDP release (equal
  covariances) within it is accepted, its curve below the budget's at every ε.
* The cumulative ε is stated at the releases' own δ under a μ or accuracy budget (a δ = 1e-4
  plan: at δ = 1e-4, not 0.001), in the release, ``ledger show`` and its report.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from secrets_world import PROTECT, SECRET, N, new_ledger, records_path, steward_path

from distprivacy.cli import main
from distprivacy.ledger import BudgetExceededError, Ledger, LedgerError, StewardKey
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, met_by

#: Where to look for an ε at which the exact profile is above the budget's GDP curve.
GRID = np.linspace(0.0, 12.0, 241)


def _plan(data, mechanism: str, epsilon: float, delta: float):
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.models import ExactModel
    from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec(PROTECT, N, [0.45, 0.55])
    model = ExactModel().fit(data, spec, Query.parse(ADULT_DEFAULT_STATISTICS))
    from distprivacy.targets import EpsDelta

    cal = make_mechanism(mechanism, EpsDelta(epsilon, delta)).calibrate(model)
    return Plan.from_calibration(cal, model, data=data)


@pytest.fixture(scope="module")
def eigm(ledger_world):
    """EigM-G at ε = 1, δ = 0.001 on the population: fitted (unequal) covariances."""
    return _plan(ledger_world["data"], "EigM-G", 1.0, 1e-3)


def _witness(g, mu: float) -> tuple[float, float, float] | None:
    """An ε of :data:`GRID` where ``g``'s exact δ(ε) is above GDP(μ)'s, with both δ's."""
    budget = GDP(mu)
    for eps in GRID:
        exact, curve = g.delta_at(float(eps)), budget.delta_at(float(eps))
        if exact > curve * (1 + 1e-6):
            return float(eps), exact, curve
    return None


@pytest.mark.parametrize("room", [1.0, 1.03, 1.5])
def test_a_mu_budget_never_accepts_a_release_above_its_gdp_curve(
    eigm, ledger_world, tmp_path, room
):
    """The EigM-G case: a budget of room × the label μ (the issue's was 0.37 for a label of
    0.3607: 1.026). The exact profile is above the budget's GDP curve at some ε — found here
    on a grid for rooms up to 1.03, so the refusal is not a formality; for 1.5 the crossing
    lies beyond ε = 12, where both δ's are far below 1e-30 (the exponential tail still
    overtakes the Gaussian one: the argument of distprivacy.ledger._budget) — and the ledger
    refuses, at approval, and at release when the budget was set after it, leaving the file
    unchanged."""
    g = eigm.guarantee
    assert g.curve == "point" and g.mu is not None  # a μ label, not a GDP parameter
    mu_budget = room * g.mu
    found = _witness(g, mu_budget)
    if room <= 1.03:
        assert found is not None, f"no ε ≤ {GRID[-1]} where δ exceeds GDP({mu_budget:.4g})"
        _, exact, curve = found
        assert exact > curve
    else:
        assert g.delta_at(12.0) < 1e-30
    assert not met_by(GDP(mu_budget), g)

    # At approval: refused in one line naming the budgets that can hold it.
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, GDP(mu_budget))
    steward = StewardKey.load(steward_path(path))
    with Ledger(path) as led:
        with pytest.raises(LedgerError) as err:
            led.approve(steward, eigm, "eigm")
        msg = str(err.value)
        assert "is not μ-GDP" in msg and "(ε, δ) budget" in msg and "\n" not in msg

    # At release: approved under an (ε, δ) budget, then the budget set to μ.
    with Ledger(path) as led:
        led.set_budget(steward, None, EpsDelta(50.0, 0.5), "to approve it")
        led.approve(steward, eigm, "eigm")
        led.set_budget(steward, None, GDP(mu_budget), "back to μ")
    before = path.read_bytes()
    with Ledger(path) as led:
        with pytest.raises(BudgetExceededError, match="is not μ-GDP") as err:
            led.release("eigm", "wave1")
        assert "nothing was recorded" in str(err.value) and led.releases() == []
        assert led.verify().ok
        (c,) = [s for s in led.show()["secrets"] if s["secret"] == SECRET]
        assert c["releases"] == 0
    assert path.read_bytes() == before


def test_the_same_release_under_an_epsilon_delta_budget_is_recorded_exactly(
    eigm, ledger_world, tmp_path
):
    """What the refusal asks for works: an (ε, δ) budget met by the exact profile."""
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, EpsDelta(1.0, 1e-3))
    with Ledger(path) as led:
        led.approve(StewardKey.load(steward_path(path)), eigm, "eigm")
        rec = led.release("eigm", "wave1")
    assert rec.cumulative.delta_at(1.0) <= 1e-3 * (1 + 1e-9)
    assert rec.at_delta == 1e-3


def test_a_mu_gdp_release_within_a_mu_budget_is_accepted(ledger_world, tmp_path):
    """Equal covariances: the release is μ-GDP; a budget of 1.01 × its μ accepts it, and its
    curve is below the budget's at every ε of the grid (the rule is not a blanket refusal)."""
    from distprivacy.guarantee import Guarantee
    from distprivacy.ledger import LedgerEntry

    mu = 0.3

    def gdp(m: float) -> Guarantee:
        return Guarantee(1.0, GDP(m).delta_at(1.0), "group DP", mu=m, curve="gdp",
                         verified=True, holds_for_every_input=True)  # fmt: skip

    def compose(entries: list) -> Guarantee:  # independent releases of one μ-GDP mechanism
        return gdp(mu * len(entries) ** 0.5)

    budget = GDP(1.01 * mu)
    assert _witness(gdp(mu), budget.mu) is None and met_by(budget, gdp(mu))
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, budget)
    entry = LedgerEntry(fingerprint="dataset:wave1@1", property=f"secret:{SECRET}",
                        mechanism="GroupDP-G", statistics=("s",), guarantee=gdp(mu),
                        values=(1.0,))  # fmt: skip
    with Ledger(path) as led:
        assert led.record(entry, compose).mu == mu
        with pytest.raises(BudgetExceededError, match=r"cumulative μ = 0\.4243"):
            led.record(entry, compose)
        assert len(led.releases()) == 1


def test_the_ledger_speaks_at_the_releases_delta(ledger_world, tmp_path, capsys):
    """A δ = 1e-4 plan under an accuracy budget: the release, `ledger show` (terminal and
    JSON) and the ledger report state the cumulative ε at δ = 1e-4, never at 0.001."""
    plan = _plan(ledger_world["data"], "DauM-G", 0.5, 1e-4)
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, MaxAttackAccuracy(0.9))
    steward = StewardKey.load(steward_path(path))
    with Ledger(path) as led:
        led.approve(steward, plan, "strict")
        rec = led.release("strict", "wave1")
    assert rec.at_delta == 1e-4
    assert rec.cumulative.delta_at(rec.cumulative.epsilon_at(1e-4)) <= 1e-4 * (1 + 1e-6)
    with Ledger(path) as led:
        (s,) = led.show()["secrets"]
    assert s["at_delta"] == 1e-4
    assert s["epsilon"] == pytest.approx(rec.cumulative.epsilon_at(1e-4), rel=1e-6)

    capsys.readouterr()
    assert main(["release", "--ledger", str(path), "--dataset", "wave1", "--plan", "strict",
                 "--json"]) == 0  # fmt: skip
    cum = json.loads(capsys.readouterr().out)["ledger"]["cumulative"]
    assert cum["delta"] == 1e-4
    report = tmp_path / "ledger.html"
    assert main(["ledger", "show", str(path), "--report", str(report)]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    assert "at δ = 0.0001" in out and "at δ = 0.001" not in out
    html = report.read_text()
    assert "0.001<" not in html.replace("0.0001<", "")  # no cell states δ = 0.001
    assert records_path(path).exists()
