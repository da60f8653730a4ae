"""Typed privacy targets (issue 22): conversions against independent closed forms (mpmath),
validation, and met_by on real calibrations (including a deliberately wrong target caught)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import DauM
from distprivacy.models import GaussianModel
from distprivacy.request import GaussianOptions, MechanismSpec
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Rule, as_target, met_by

mpmath.mp.dps = 50


def _closed_form_delta(eps: float, mu: float) -> float:
    """Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) at 50 digits (Balle & Wang 2018, Thm 8)."""
    e, m = mpmath.mpf(eps), mpmath.mpf(mu)
    return float(mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2))


@pytest.mark.parametrize("mu", [0.05, 0.21029, 0.5, 1.0, 2.5])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 2.0, 5.0])
def test_gdp_delta_is_the_closed_form(mu, eps):
    want = _closed_form_delta(eps, mu)
    got = GDP(mu).delta_at(eps)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.5])
@pytest.mark.parametrize("delta", [1e-6, 1e-3, 0.05])
def test_epsilon_at_inverts_delta_at(mu, delta):
    g = GDP(mu)
    eps = g.epsilon_at(delta)
    if eps == 0:
        assert g.delta_at(0.0) <= delta
        return
    assert g.delta_at(eps) == pytest.approx(delta, rel=1e-6)
    assert g.delta_at(eps * 0.99) > delta  # the smallest such ε


def test_eps_delta_to_gdp_is_the_largest_mu():
    t = EpsDelta(1.0, 1e-3)
    mu = t.to_gdp().mu
    assert _closed_form_delta(1.0, mu) == pytest.approx(1e-3, rel=1e-6)
    assert _closed_form_delta(1.0, mu * 1.001) > 1e-3
    with pytest.raises(DistPrivacyError, match="delta = 0"):
        EpsDelta(1.0, 0.0).to_gdp()


def test_accuracy_and_mu_are_exact_inverses():
    for a in (0.51, 0.55, 0.576, 0.9):
        mu = MaxAttackAccuracy(a).to_gdp().mu
        assert float(mpmath.ncdf(mpmath.mpf(mu) / 2)) == pytest.approx(a, rel=1e-12)
        assert GDP(mu).max_attack_accuracy.accuracy == pytest.approx(a, rel=1e-12)


def test_composition_and_order():
    assert GDP(0.3).compose(GDP(0.4)).mu == pytest.approx(0.5)
    assert GDP(0.2) <= GDP(0.3) and GDP(0.2) < GDP(0.3) and not GDP(0.3) <= GDP(0.2)
    with pytest.raises(DistPrivacyError):
        GDP(0.3).compose(EpsDelta(1, 1e-3))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make",
    [
        lambda: GDP(-1),
        lambda: GDP(0),
        lambda: GDP(float("nan")),
        lambda: GDP(True),
        lambda: GDP("0.5"),
        lambda: EpsDelta(1, 1),
        lambda: EpsDelta(0, 1e-3),
        lambda: EpsDelta(math.inf, 1e-3),
        lambda: MaxAttackAccuracy(0.5),
        lambda: MaxAttackAccuracy(1.0),
        lambda: as_target(1.0, 1e-3, mu=0.5),
        lambda: as_target(),
        lambda: as_target(1.0),
        lambda: Rule.parse("Exact"),
    ],
)
def test_bad_targets_are_one_line_errors(make):
    with pytest.raises(DistPrivacyError) as e:
        make()
    assert "\n" not in str(e.value)


def test_as_target_forms():
    assert as_target(1.0, 1e-3) == EpsDelta(1.0, 1e-3)
    assert as_target(mu=0.4) == GDP(0.4)
    assert as_target(max_accuracy=0.55) == MaxAttackAccuracy(0.55)
    assert Rule.parse("classic") is Rule.CLASSIC and Rule.parse(Rule.EXACT) is Rule.EXACT


def _model() -> GaussianModel:
    cov = np.array([[22.0, -6.0], [-6.0, 13.0]])
    return GaussianModel(
        ["a", "b"], [[100.0, 101.0], [99.0, 102.0]], [cov, cov], [("a", "b")], ["x", "y"]
    )


def test_met_by_a_real_calibration_and_a_wrong_target_is_caught():
    cal = DauM(EpsDelta(0.5, 1e-3)).calibrate(_model())
    g = cal.guarantee
    assert met_by(EpsDelta(0.5, 1e-3), g)
    # A GDP target is met only by a guarantee on the GDP curve (μ-GDP): a calibration whose
    # unequal-covariance profile was checked states its point (fail closed).
    assert met_by(GDP(g.mu), g) == (g.curve == "gdp")
    assert met_by(MaxAttackAccuracy(g.max_attack_accuracy), g)
    # The same noise does not meet a target ten times stricter, nor a smaller μ.
    assert not met_by(EpsDelta(0.5, 1e-4), g)
    assert not met_by(GDP(g.mu * 0.9), g)
    assert not met_by(MaxAttackAccuracy(0.5 + (g.max_attack_accuracy - 0.5) * 0.9), g)


def test_a_typed_target_makes_the_same_mechanism_as_the_loose_arguments(tmp_path, adult_dir):
    """make_mechanism(target=...) is the loose form, typed: the same calibration bit for bit;
    the ledger's budget is a target too (a secret's budget in Ledger.init(budget=...), kept
    as plain data in the steward's events)."""
    from distprivacy.ledger import Ledger, StewardKey, budget_from_dict, budget_to_dict
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import GaussianModel

    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    model = GaussianModel(["a", "b"], [[0.0, 0.0], [1.0, 0.5]], [cov, cov], [("a", "b")])
    for target, options in (
        (EpsDelta(1.0, 1e-3), None),
        (GDP(0.5), GaussianOptions(report_delta=1e-3)),
        (MaxAttackAccuracy(0.6), GaussianOptions(report_delta=1e-3)),
    ):
        a = make_mechanism(MechanismSpec("DauM-G", target, options)).calibrate(model)
        b = DauM(target, options).calibrate(model)
        np.testing.assert_array_equal(a.noise_covariance, b.noise_covariance)
        assert a.guarantee == b.guarantee
        met = met_by(target, a.guarantee)
        assert met or (isinstance(target, GDP) and a.guarantee.curve != "gdp")
    with pytest.raises(DistPrivacyError, match="carries its target"):
        make_mechanism(MechanismSpec("DauM-G", GDP(0.5)), GDP(0.5))
    # The loose API before issue 32: one line naming the new call.
    with pytest.raises(DistPrivacyError, match=r"make_mechanism\('DauM-G', EpsDelta"):
        make_mechanism("DauM-G", 1.0, 1e-3)
    with pytest.raises(DistPrivacyError, match=r"DauM takes a privacy target"):
        DauM(1.0, 1e-3)

    for budget in (GDP(0.5), EpsDelta(2.0, 1e-5), MaxAttackAccuracy(0.6)):
        assert budget_from_dict(budget_to_dict(budget)) == budget
    steward = StewardKey.generate(tmp_path / "steward.key")
    kw = dict(steward=steward, secret="s", protect="income==>50K", population=adult_dir)
    led = Ledger.init(tmp_path / "l.db", budget=MaxAttackAccuracy(0.6), **kw)
    (secret,) = led.registry.secrets.values()
    assert secret.budget == MaxAttackAccuracy(0.6)
    led.close()
    with pytest.raises(DistPrivacyError, match="budget"):
        Ledger.init(tmp_path / "m.db", budget=0.5, **kw)  # a number is not a target
