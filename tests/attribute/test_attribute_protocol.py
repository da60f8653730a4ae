"""The attribute-privacy calibrations (APGM, the Markov quilt, Pufferfish–Wasserstein) follow the
library's :class:`~distprivacy.guarantee.Calibrated` protocol: a typed guarantee, releases as
:class:`~distprivacy.guarantee.Release`, typed warnings, exact ``to_dict``/``from_dict`` round
trips, and refused zero-noise releases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from distprivacy.attribute.gaussian import APGMCalibration, AttributeGaussianMechanism
from distprivacy.attribute.markov_quilt import (
    AttributeQuiltMechanism,
    QuiltCalibration,
    QuiltRelease,
    school_networks,
)
from distprivacy.attribute.pufferfish import (
    GaussianConditional,
    PufferfishWassersteinMechanism,
    WassersteinCalibration,
)
from distprivacy.exceptions import (
    AssumptionWarning,
    ClassicRuleWarning,
    DistPrivacyError,
    DistPrivacyWarning,
    ExactReleaseError,
)
from distprivacy.experiments.attribute_privacy import hospital_framework, hospital_theta
from distprivacy.guarantee import Calibrated, Guarantee, Release
from distprivacy.profiles import gdp_delta
from distprivacy.targets import EpsDelta


def apgm(query: str = "weight", rule: str = "classic") -> APGMCalibration:
    mech = AttributeGaussianMechanism(EpsDelta(1.0, 1e-3), rule=rule)
    return mech.calibrate(hospital_framework(), hospital_theta(), query, pair_distance="centres")


def quilt(query: str = "count:height>66&sat>1300", eps: float = 1.0) -> QuiltCalibration:
    mech = AttributeQuiltMechanism(school_networks(), query=query, secrets="income", epsilon=eps)
    return mech.calibrate(200)


def wasserstein(shift: float = 3.0) -> WassersteinCalibration:
    conds = {
        "t": {
            "a": GaussianConditional([0.0], [[1.0]]),
            "b": GaussianConditional([shift], [[1.0]]),
        }
    }
    return PufferfishWassersteinMechanism(epsilon=2.0).calibrate(conds, [("a", "b")], ["F"])


CALIBRATIONS = {
    "apgm": apgm,
    "apgm-vector": lambda: apgm(["weight", "blood_pressure"], "exact"),  # type: ignore[arg-type]
    "quilt": quilt,
    "wasserstein": wasserstein,
}


@pytest.mark.parametrize("name", CALIBRATIONS)
def test_protocol_and_exact_round_trip(name: str) -> None:
    cal = CALIBRATIONS[name]()
    assert isinstance(cal, Calibrated)
    assert isinstance(cal.guarantee, Guarantee)
    assert "\n" not in repr(cal) and len(repr(cal)) < 120
    assert cal.guarantee.describe() in cal.summary()
    raw = cal.to_dict()
    json.dumps(raw, allow_nan=False)  # plain JSON as it is
    back = type(cal).from_dict(json.loads(json.dumps(raw)))
    assert back.to_dict() == raw
    assert back.guarantee == cal.guarantee
    assert back.noise.family == cal.noise.family
    assert np.array_equal(back.noise.covariance, cal.noise.covariance)
    assert getattr(back, "warnings", ()) == getattr(cal, "warnings", ())
    value = np.full(len(cal.statistic_names), 100.0)
    a, b = cal.release(value, 7), back.release(value, 7)
    assert isinstance(a, Release) and np.array_equal(a.values, b.values)
    assert a.statistic_names == cal.statistic_names and not a.secure
    assert a.to_dict()["guarantee"] == cal.guarantee.to_dict()
    with pytest.raises(DistPrivacyError, match="unknown key"):
        type(cal).from_dict({**raw, "typo": 1})


def test_apgm_guarantee_is_the_mu_gdp_curve() -> None:
    cal = apgm()
    g = cal.guarantee
    assert g.notion == "attribute privacy" and g.curve == "gdp" and g.mu == cal.mu
    assert g.delta == cal.delta_achieved == pytest.approx(gdp_delta(1.0, cal.mu))
    assert g.verified and g.theorem == cal.theorem
    assert g.delta_at(2.0) == pytest.approx(gdp_delta(2.0, cal.mu))
    (w,) = cal.warnings
    assert w.category is ClassicRuleWarning
    rel = cal.release(161.33, 3)
    assert rel.value == cal.release(161.33, 3).value and rel.calibration is cal


def test_apgm_vector_query_on_regression_theta_assumes_independent_residuals() -> None:
    g = apgm(["weight", "blood_pressure"], "exact").guarantee  # type: ignore[arg-type]
    assert not g.verified and any("independent" in a for a in g.assumptions)
    assert apgm("weight").guarantee.verified


def test_apgm_general_form_is_assumed_and_a_secret_dependent_covariance_unverified() -> None:
    mech = AttributeGaussianMechanism(EpsDelta(1.0, 1e-3))
    equal = mech.calibrate_moments("g", [[0.0, 2.0]], [[1.0, 1.0]], [(0, 1)])
    assert not equal.guarantee.verified and not equal.warnings  # Gaussianity assumed
    off = mech.calibrate_moments("g", [[0.0, 2.0]], [[1.0, 1.5]], [(0, 1)])
    assert [w.category for w in off.warnings] == [AssumptionWarning]
    assert not off.guarantee.verified
    assert any("delta_with_moments" in a for a in off.guarantee.assumptions)
    assert APGMCalibration.from_dict(off.to_dict()).warnings == off.warnings


def test_laplace_guarantees_are_pure_points() -> None:
    for cal, notion in ((quilt(), "attribute privacy"), (wasserstein(), "Pufferfish privacy")):
        g = cal.guarantee
        assert g.notion == notion and g.delta == 0.0 and g.curve == "point" and g.mu is None
        assert g.epsilon == cal.epsilon and g.pure
        assert g.max_attack_accuracy == pytest.approx(1 / (1 + math.exp(-cal.epsilon)))


def test_quilt_release_is_a_release_and_the_fallback_warning_is_typed() -> None:
    assert QuiltRelease is Release
    cal = quilt("count:height>66", eps=0.04)
    (w,) = cal.warnings
    assert w.category is DistPrivacyWarning and "fell back" in w
    assert QuiltCalibration.from_dict(cal.to_dict()).warnings == cal.warnings
    rel = cal.release(12.0, 5, size=10)
    assert rel.values.shape == (10,)
    with pytest.raises(DistPrivacyError, match="one finite number"):
        cal.release([1.0, 2.0], 0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: apgm("temperature", "exact"),
        lambda: quilt("count:height>66"),
        lambda: wasserstein(0.0),
    ],
)
def test_zero_noise_release_needs_allow_exact(make) -> None:
    cal = make()
    assert not cal.adds_noise
    value = np.full(len(cal.statistic_names), 98.58)
    with pytest.raises(ExactReleaseError, match="allow_exact"):
        cal.release(value, 0)
    rel = cal.release(value, 0, allow_exact=True)
    assert np.array_equal(rel.values, value)


def test_from_dict_refuses_a_guarantee_that_does_not_match() -> None:
    raw = apgm().to_dict()
    raw["guarantee"] = {**raw["guarantee"], "verified": False}
    with pytest.raises(DistPrivacyError, match="does not match"):
        APGMCalibration.from_dict(raw)
    with pytest.raises(DistPrivacyError, match="missing 'terms'"):
        APGMCalibration.from_dict({k: v for k, v in apgm().to_dict().items() if k != "terms"})
