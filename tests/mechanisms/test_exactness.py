"""One exactness gate for every mechanism (issue 31): a release whose noise is below a
statistic's resolution (half a count, 0.5/n for a proportion, 10⁻³ of a statistic's spread)
while the statistic's mean moves by more, or whose attack bound rounds to 1, needs
``allow_exact``, whatever the mechanism; a statistic left (almost) noise-free because its mean
moves by no more than its resolution is released, and the release says so."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distprivacy as dp
from distprivacy.exceptions import ExactReleaseError
from distprivacy.ledger import BudgetExceededError
from distprivacy.mechanisms import (
    MECHANISMS,
    Calibration,
    _exactness,
    make_mechanism,
)
from distprivacy.mechanisms._exactness import ATTACK_BOUND_LIMIT, NEAR_EXACT_TOLERANCE
from distprivacy.mechanisms.plans import Plan
from distprivacy.models import GaussianModel, fit_model
from distprivacy.noise import NoiseDistribution
from distprivacy.query import CallableStatistic, Count, Mean, Proportion, Query, Sum
from distprivacy.request import GaussianOptions
from distprivacy.spec import Predicate, ProtectionSpec
from distprivacy.targets import GDP, EpsDelta

SRC = Path(__file__).resolve().parents[2] / "src" / "distprivacy"
STATS = "mean:x,count:c==1"
SPEC = ProtectionSpec("g==a", 50, [0.3, 0.7])


@pytest.fixture(scope="module")
def population() -> pd.DataFrame:
    """600 records, half with g == a; c == 1 for 80 % of them and 20 % of the others (the
    count's mean moves by 12 between the two shares), x shifted by 5 in group a."""
    rng = np.random.default_rng(0)
    g = np.where(np.arange(600) < 300, "a", "b")
    c = np.where(rng.random(600) < np.where(g == "a", 0.8, 0.2), 1, 0)
    x = rng.normal(40, 10, 600) + np.where(g == "a", 5.0, 0.0)
    return pd.DataFrame({"g": g, "c": c, "x": x})


@pytest.fixture(scope="module")
def model(population):
    """A Monte-Carlo model (samples for the Wasserstein mechanisms, record sensitivities for
    the group-DP baselines, the query for the statistics' kinds)."""
    return fit_model(
        population, SPEC, Query.parse(STATS), method="monte-carlo", n_samples=300, random_state=0
    )


def _huge(name: str):
    """The mechanism at μ = 10⁶ (Gaussian) or ε = 10⁶ (pure-ε), by what the registry says."""
    if MECHANISMS[name].targets_gdp:
        return make_mechanism(name, GDP(1e6), GaussianOptions(report_delta=1e-3))
    return make_mechanism(name, EpsDelta(1e6, 1e-3))


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_every_mechanism_at_a_huge_target_needs_allow_exact(model, name):
    cal = _huge(name).calibrate(model)
    value = model.means_[0]
    with pytest.raises(ExactReleaseError) as refused:
        cal.release(value, random_state=0)
    text = str(refused.value)
    assert len(text.splitlines()) == 1 and "`allow_exact=True`" in text
    # It names what is exact: the statistics below their resolution, or no noise at all.
    assert "Theorem 4.4" in text or ("count(c==1) has noise SD" in text and "half a count" in text)
    assert cal.exactness(value).refused
    rel = cal.release(value, random_state=0, allow_exact=True)
    assert rel.exact and np.isfinite(rel.values).all()
    assert {e.statistic for e in rel.exact_statistics} == set(cal.statistic_names)
    assert not any(e.justified for e in rel.exact_statistics)
    d = rel.to_dict()
    assert [e["statistic"] for e in d["exact_statistics"]] == list(cal.statistic_names)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_the_gate_agrees_with_the_mechanisms_own_noise_at_a_usual_target(model, name):
    """At ε = 1 the same rule lets every mechanism release on this model (its noise is far
    above each statistic's resolution)."""
    try:
        cal = make_mechanism(name, EpsDelta(1.0, 1e-3)).calibrate(model)
    except dp.NotApplicableError as e:  # NoNoise: its no-noise test fails at ε = 1
        assert name == "NoNoise", e
        return
    found = cal.exactness(model.means_[0])
    assert not found.refused and found.statistics == ()
    rel = cal.release(model.means_[0], random_state=1)
    assert not rel.exact and rel.notes == ()


@pytest.mark.parametrize("factor", [1 - 1e-6, 1 + 1e-6])
def test_a_count_just_below_or_above_half_a_count(model, factor):
    """Noise SD 0.5 · (1 ∓ 10⁻⁶) on a count whose mean moves by 12: refused just below half
    a count, released just above (the same calibration otherwise)."""
    cal = make_mechanism("ExpM-G", EpsDelta(1.0, 1e-3)).calibrate(model)
    sd = 0.5 * factor
    cal = dataclasses.replace(cal, noise=NoiseDistribution.isotropic("gaussian", 2, sd))
    value = model.means_[0]
    if factor < 1:
        with pytest.raises(ExactReleaseError, match=r"count\(c==1\) has noise SD 0\.5, below 0\.5"):
            cal.release(value, random_state=0)
        (e,) = cal.exactness(value).statistics
        assert e.statistic == "count(c==1)" and e.resolution == 0.5 and not e.justified
        assert e.mean_difference == pytest.approx(np.abs(model.mean_differences()[:, 1]).max())
    else:
        rel = cal.release(value, random_state=0)
        assert rel.exact_statistics == () and not rel.exact


def test_the_attack_bound_alone_refuses(model):
    """Noise above every resolution, but a guarantee whose attack bound rounds to 1."""
    cal = make_mechanism("ExpM-L", EpsDelta(25.0, 0.0)).calibrate(
        model
    )  # (e^25 + 0)/(1 + e^25) > 1 − 1e-9
    assert cal.max_attack_accuracy >= ATTACK_BOUND_LIMIT
    cal = dataclasses.replace(cal, noise=NoiseDistribution.isotropic("laplace", 2, 5.0))
    found = cal.exactness()
    assert found.statistics == () and found.bounds_nothing and found.refused
    with pytest.raises(ExactReleaseError, match="nothing is hidden"):
        cal.release(model.means_[0], random_state=0)
    ok = make_mechanism("ExpM-L", EpsDelta(20.0, 0.0)).calibrate(model)  # 1 − 2.1e-9: still a bound
    assert not ok.exactness().bounds_nothing


def test_resolution_is_the_statistic_kinds_own():
    pred = Predicate.parse("c==1")
    assert Count(pred).resolution(50) == 0.5
    assert Proportion(pred).resolution(50) == pytest.approx(0.01)
    assert Mean("x").resolution(50) == 0.0 and Sum("x").resolution(50) == 0.0
    stat = CallableStatistic("median", lambda X: np.median(X[..., 0], axis=-1), ["x"])
    assert stat.resolution(50) == 0.0
    assert Count(pred).value_range(50) == (0.0, 50.0)
    assert Proportion(pred).value_range(50) == (0.0, 1.0)
    assert Mean("x").value_range(50) is None


def _directional_model() -> GaussianModel:
    """mean(x) has the same mean under both θ, count(c==1) moves by 0.1 (less than half a
    count), mean(y) by 1; the query tells the kinds."""
    cov = np.diag([1.0, 4.0, 1.0])
    model = GaussianModel(
        ["a", "b"],
        [[40.0, 10.0, 0.0], [40.0, 10.1, 1.0]],
        [cov, cov],
        [("a", "b"), ("b", "a")],
        statistic_names=["mean(x)", "count(c==1)", "mean(y)"],
        n=50,
    )
    model.query_ = Query.parse("mean:x,count:c==1,mean:y")
    return model


@pytest.mark.parametrize("name", ["DirM-G", "DirM-L"])
def test_a_directional_mechanism_says_which_statistic_is_released_without_noise(name):
    cal = make_mechanism(name, EpsDelta(1.0, 1e-3)).calibrate(_directional_model())
    # No noise on mean(x) (up to the float rounding of the directions' SVD).
    assert cal.noise_sd[0] < 1e-12 and 0 < cal.noise_sd[1] < 0.5 and cal.noise_sd[2] > 0.1
    rel = cal.release([40.2, 11.0, 0.4], random_state=0)  # no allow_exact needed
    assert not rel.exact and rel.values[0] == 40.2
    free, count = rel.exact_statistics
    assert free.statistic == "mean(x)" and free.noise_free and free.justified
    assert "mean(x) is released without noise" in rel.notes[0]
    assert "the same under every protected share (verified by the model)" in rel.notes[0]
    assert count.statistic == "count(c==1)" and count.justified and not count.noise_free
    assert count.mean_difference == pytest.approx(0.1)
    assert "moves by at most 0.1" in rel.notes[1] and "half a count" in rel.notes[1]
    out = rel.to_dict()["exact_statistics"]
    assert [e["statistic"] for e in out] == ["mean(x)", "count(c==1)"]
    assert out[0]["justified"] and out[0]["note"] == rel.notes[0]
    assert f"note: {rel.notes[0]}" in cal.summary()


def test_without_the_model_nothing_is_justified():
    """A calibration read back without its model cannot show that mean(x) does not move:
    fail closed (a plan keeps its model and releases as before)."""
    cal = make_mechanism("DirM-G", EpsDelta(1.0, 1e-3)).calibrate(_directional_model())
    bare = Calibration.from_dict(cal.to_dict())
    with pytest.raises(ExactReleaseError, match=r"mean\(x\) has noise SD 0"):
        bare.release([40.2, 11.0, 0.4], random_state=0)
    assert bare.release([40.2, 11.0, 0.4], random_state=0, allow_exact=True).exact


def test_a_moving_statistic_without_noise_to_speak_of_needs_consent():
    """Noise below 10⁻³ of a mean's spread while its mean moves: EigM-G's case on Adult's
    mean(fnlwgt). The same rule, another mechanism: refused, with the figures."""
    cal = make_mechanism("ExpM-G", EpsDelta(1.0, 1e-3)).calibrate(_directional_model())
    tiny = 0.5 * NEAR_EXACT_TOLERANCE  # × the spread 1 of mean(y)
    noise = NoiseDistribution.gaussian_from_covariance(np.diag([1.0, 1.0, tiny**2]))
    cal = dataclasses.replace(cal, noise=noise)
    with pytest.raises(ExactReleaseError) as refused:
        cal.release([40.2, 11.0, 0.4], random_state=0)
    assert "mean(y) has noise SD 0.0005, below 0.001 (0.001 × its spread 1 under the model)" in (
        str(refused.value)
    )


def _spy(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = _exactness.check_exact

    def spy(cal, value, allow_exact):
        calls.append(cal.mechanism)
        return real(cal, value, allow_exact)

    import distprivacy.mechanisms.calibration as calibration

    monkeypatch.setattr(calibration, "check_exact", spy)
    return calls


def test_every_release_path_goes_through_the_one_gate(population, model, tmp_path, monkeypatch):
    calls = _spy(monkeypatch)
    cal = make_mechanism("DirM-G", EpsDelta(1.0, 1e-3)).calibrate(model)
    cal.release(model.means_[0], random_state=0)
    assert calls == ["DirM-G"]
    plan = Plan.from_calibration(cal, model, data=population)
    plan.release(values=model.means_[0], random_state=0)
    assert calls == ["DirM-G"] * 2
    target = population.sample(n=50, random_state=1)
    kw = dict(data=population, spec=SPEC, query=STATS, modeling="exact")
    dp.release(**kw, mechanism="ExpM-L", privacy=dp.EpsDelta(1.0, 1e-3), target=target)
    assert calls[-1] == "ExpM-L"
    out = dp.release(**kw, mechanism="DauM-G", privacy=GDP(0.4), target=target)
    assert calls[-1] == "DauM-G" and len(calls) == 4
    led = _ledger(population, target, tmp_path, out.calibration, out.model)
    with led:
        led.release("p", "w")
    assert calls[-1] == "DauM-G" and len(calls) == 5


def _ledger(population, target, tmp_path, cal, model):
    """A ledger of secrets (budget (ε, δ) = (50, 0.5)) over ``population`` (written to a file) with
    ``target`` registered as ``w`` and the plan of ``cal`` approved as ``p``."""
    from ledger_world import lib_ledger

    population.to_csv(tmp_path / "population.csv", index=False)
    target.to_csv(tmp_path / "w.csv", index=False)
    plan = Plan.from_calibration(cal, model, data=tmp_path / "population.csv")
    roomy = dp.EpsDelta(50.0, 0.5)
    led, _ = lib_ledger(tmp_path, tmp_path / "population.csv", roomy, {"w": tmp_path / "w.csv"},
                        {"p": plan}, secret="g", protect="g==a")  # fmt: skip
    return led


def test_the_gate_is_raised_in_one_place():
    """Within the main mechanisms and everything that releases with them, only the gate
    raises ExactReleaseError (the attribute-privacy and local wings, other notions with their
    own calibrations, release through guarantee.noisy_release and their own commands)."""
    raisers = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        wing = rel.parts[0] in ("attribute", "local") or rel.name.startswith("attribute")
        if wing or rel.name == "guarantee.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and "ExactReleaseError" in ast.unparse(node):
                raisers.append(str(rel))
    assert raisers == ["mechanisms/_exactness.py"]


def test_a_ledger_never_records_a_near_exact_release(population, tmp_path):
    """An approved near-exact plan goes through the gate at release (nothing recorded); with
    consent it is refused too: an exact release exceeds every budget (issue 30)."""
    target = population.sample(n=50, random_state=1)
    kw = dict(data=population, spec=SPEC, query=STATS, modeling="exact", mechanism="DirM-G")
    out = dp.release(**kw, privacy=GDP(1e6), target=target, allow_exact=True)
    assert out.release.exact
    with _ledger(population, target, tmp_path, out.calibration, out.model) as led:
        with pytest.raises(ExactReleaseError):
            led.release("p", "w")
        with pytest.raises(BudgetExceededError, match="exceeds every budget"):
            led.release("p", "w", allow_exact=True)
        assert led.releases() == []
