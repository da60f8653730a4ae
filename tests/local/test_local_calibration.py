"""LocalCalibration: a local mechanism with the pairs it protects follows the Calibrated protocol
(guarantee, summary, release, plain-data round trip), and its guarantees are the library's
exact and theorem-based ones."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from distprivacy._json import dumps_json
from distprivacy.exceptions import DistPrivacyError
from distprivacy.guarantee import Calibrated, Guarantee, Release
from distprivacy.local import (
    LocalCalibration,
    calibrate_local,
    clustered_city,
    compose_same_input,
    distp_epsilon,
    dp_implies_distp,
    grid,
    laplace_distp,
    line,
)
from distprivacy.local.calibration import mechanism_from_dict, mechanism_to_dict
from distprivacy.local.domains import Domain
from distprivacy.local.mechanisms import (
    ExponentialMechanism,
    FiniteMechanism,
    RandomizedResponse,
    SnappedGaussian,
    SnappedLaplace,
    TuplingMechanism,
)

G = grid(4)
LAM0, LAM1 = clustered_city(G, random_state=0)


def _mechanisms():
    rng = np.random.default_rng(1)
    return [
        RandomizedResponse(16, 2.0),
        SnappedLaplace(G, 0.7),
        SnappedGaussian(G, 1.5),
        ExponentialMechanism(G, 1.0),
        FiniteMechanism(rng.dirichlet(np.ones(5), size=16), name="random"),
        TuplingMechanism(RandomizedResponse(16, 3.0), 1),
        TuplingMechanism(
            FiniteMechanism(np.eye(16), name="identity"), 1, nu=np.arange(1, 17) / 136
        ),
    ]


@pytest.mark.parametrize("mech", _mechanisms(), ids=lambda m: m.name)
def test_protocol_and_round_trip(mech):
    cal = calibrate_local(mech, (LAM0, LAM1), 1e-3)
    assert isinstance(cal, Calibrated) and isinstance(cal.guarantee, Guarantee)
    assert cal.mechanism == mech.name
    assert cal.guarantee.notion == "local distribution privacy"
    assert cal.guarantee.curve == "point" and cal.guarantee.delta <= 1e-3
    assert "\n" not in repr(cal) and repr(cal).startswith("LocalCalibration(")
    assert mech.name in cal.summary()
    raw = json.loads(dumps_json(cal.to_dict()))  # valid JSON
    back = LocalCalibration.from_dict(raw)
    assert back.guarantee == cal.guarantee
    assert back.theorem_guarantee == cal.theorem_guarantee
    x = np.arange(16).repeat(3)
    a, b = cal.release(x, random_state=5), back.release(x, random_state=5)
    assert isinstance(a, Release) and not a.secure
    np.testing.assert_array_equal(a.values, b.values)
    assert a.calibration is cal and a.guarantee is cal.guarantee
    json.loads(dumps_json(a.to_dict()))


def test_guarantees_are_the_exact_and_theorem_ones():
    rr = RandomizedResponse(16, 2.0)
    cal = calibrate_local(rr, (LAM0, LAM1), 1e-3)
    exact = distp_epsilon(rr, LAM0, LAM1, 1e-3)
    assert cal.guarantee.epsilon == exact.epsilon and cal.method == "closed-form"
    assert cal.guarantee.verified and not cal.guarantee.holds_for_every_input
    assert cal.theorem_guarantee == dp_implies_distp(2.0)
    lap = SnappedLaplace(G, 0.7)
    cal = calibrate_local(lap, (LAM0, LAM1), 1e-3)
    assert cal.theorem_guarantee == laplace_distp(0.7, LAM0, LAM1, G)
    assert cal.guarantee.epsilon == distp_epsilon(lap, LAM0, LAM1, 1e-3).epsilon
    assert cal.guarantee.epsilon <= cal.theorem_guarantee.epsilon
    # the local-DP side of a same-input composition comes from the theorem guarantee
    both = compose_same_input(cal.guarantee, calibrate_local(rr, (LAM0, LAM1)).theorem_guarantee)
    assert both.epsilon == pytest.approx(cal.guarantee.epsilon + 2.0)


def test_several_pairs_take_the_largest_epsilon():
    rr = RandomizedResponse(16, 2.0)
    other = np.full(16, 1 / 16)
    one = calibrate_local(rr, (LAM0, LAM1)).guarantee.epsilon
    two = calibrate_local(rr, (LAM0, other)).guarantee.epsilon
    both = calibrate_local(rr, [(LAM0, LAM1), (LAM0, other)])
    assert both.guarantee.epsilon == max(one, two) and len(both.pairs) == 2
    assert "2 pairs" in repr(both)


def test_monte_carlo_tupling_needs_an_integer_seed_and_matches_the_calculator():
    tup = TuplingMechanism(RandomizedResponse(16, 6.0), 20)
    with pytest.raises(DistPrivacyError, match="needs a seed"):
        calibrate_local(tup, (LAM0, LAM1), method="monte-carlo", n_samples=2000)
    with pytest.raises(DistPrivacyError, match="integer random_state"):
        calibrate_local(tup, (LAM0, LAM1), random_state=np.random.default_rng(0))
    cal = calibrate_local(tup, (LAM0, LAM1), method="monte-carlo", n_samples=5000, random_state=4)
    res = distp_epsilon(tup, LAM0, LAM1, 1e-3, method="monte-carlo", n_samples=5000, random_state=4)
    assert cal.method == "monte-carlo" and cal.guarantee.epsilon == res.guaranteed
    assert not cal.guarantee.verified and cal.guarantee.assumptions
    back = LocalCalibration.from_dict(cal.to_dict())
    assert back.guarantee == cal.guarantee
    rel = cal.release(np.arange(16), random_state=1)
    assert rel.values.shape == (16, 21) and cal.statistic_names == ("tuple",)


def test_release_is_secure_by_default():
    cal = calibrate_local(RandomizedResponse(16, 1.0), (LAM0, LAM1))
    rel = cal.release(np.zeros(50, dtype=int))
    assert rel.secure and rel.values.shape == (50,)
    assert "secure noise" in repr(rel) and "guarantee:" in repr(rel)
    one = cal.release([3], random_state=0)
    assert one.value in range(16) and not one.secure


def test_identity_is_flagged_as_adding_no_noise():
    cal = calibrate_local(FiniteMechanism(np.eye(16), name="identity"), (LAM0, LAM1))
    assert not cal.adds_noise
    assert math.isinf(cal.theorem_guarantee.epsilon)
    assert calibrate_local(RandomizedResponse(16, 1.0), (LAM0, LAM1)).adds_noise


@pytest.mark.parametrize(
    "domain",
    [grid(3, 5, cell=0.5, metric="manhattan"), line(7, cell=2.0), Domain(np.eye(3), "discrete")],
)
def test_domains_round_trip(domain):
    back = Domain.from_dict(json.loads(dumps_json(domain.to_dict())))
    np.testing.assert_array_equal(back.points, domain.points)
    assert (back.metric, back.shape, back.cell) == (domain.metric, domain.shape, domain.cell)


def test_mechanism_dicts_round_trip():
    for mech in _mechanisms():
        back = mechanism_from_dict(json.loads(dumps_json(mechanism_to_dict(mech))))
        assert type(back) is type(mech) and back.name == mech.name
        base = back.base if isinstance(back, TuplingMechanism) else back
        ref = mech.base if isinstance(mech, TuplingMechanism) else mech
        np.testing.assert_array_equal(base.matrix_, ref.matrix_)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: calibrate_local(RandomizedResponse(16, 1.0), LAM0), "one pair"),
        (lambda: calibrate_local(RandomizedResponse(4, 1.0), (LAM0, LAM1)), "16 entries"),
        (lambda: calibrate_local("rr", (LAM0, LAM1)), "FiniteMechanism"),
        (lambda: mechanism_from_dict({"kind": "nope"}), "unknown local mechanism"),
        (lambda: mechanism_from_dict({"kind": "randomized-response"}), "missing"),
        (lambda: LocalCalibration.from_dict({"pairs": []}), "obfuscation"),
        (lambda: Domain.from_dict({"shape": []}), "points"),
    ],
)
def test_bad_inputs_give_one_line_errors(call, match):
    with pytest.raises(DistPrivacyError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
