"""Every wing on the same protocols (issue 32 item 4, :mod:`distprivacy.protocols`): each
mechanism class the core and the attribute wing export is a
:class:`~distprivacy.protocols.CalibratingMechanism` whose ``calibrate`` returns a
:class:`~distprivacy.guarantee.Calibrated`; each local mechanism is a
:class:`~distprivacy.protocols.LocalRandomizer` whose ``calibrate_local`` does; every
calibration class any wing exports is a ``Calibrated``. A class a wing adds must be listed here
(the sets of exported classes are compared), so none escapes the check."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import distprivacy.attribute as attribute
import distprivacy.local as local
from distprivacy.attribute.markov_quilt import school_networks
from distprivacy.attribute.pufferfish import GaussianConditional
from distprivacy.exceptions import NotApplicableError
from distprivacy.experiments.attribute_privacy import hospital_framework, hospital_theta
from distprivacy.guarantee import Calibrated, Release
from distprivacy.mechanisms import MECHANISMS, Calibration, Mechanism, make_mechanism
from distprivacy.models import GaussianModel
from distprivacy.protocols import CalibratingMechanism, LocalRandomizer
from distprivacy.targets import EpsDelta


def _classes(module) -> dict[str, type]:
    return {n: getattr(module, n) for n in module.__all__ if inspect.isclass(getattr(module, n))}


def _attribute_calibrations():
    """Each attribute mechanism with a small problem of its own, calibrated."""
    apgm = attribute.AttributeGaussianMechanism(EpsDelta(1.0, 1e-3))
    quilt = attribute.AttributeQuiltMechanism(
        school_networks(), query="count:height>66&sat>1300", secrets="income", epsilon=1.0
    )
    conds = {"t": {"a": GaussianConditional([0.0], [[1.0]]),
                   "b": GaussianConditional([3.0], [[1.0]])}}  # fmt: skip
    puff = attribute.PufferfishWassersteinMechanism(epsilon=2.0)
    return {
        "AttributeGaussianMechanism": (
            apgm,
            apgm.calibrate(
                hospital_framework(), hospital_theta(), "weight", pair_distance="centres"
            ),
        ),
        "AttributeQuiltMechanism": (quilt, quilt.calibrate(200)),
        "PufferfishWassersteinMechanism": (puff, puff.calibrate(conds, [("a", "b")], ["F"])),
    }


#: Exported classes with a ``calibrate`` that are problems, not mechanisms (each builds a
#: mechanism of the wing and calibrates it).
PROBLEMS = {"GaussianProblem"}


def test_every_attribute_mechanism_and_calibration_follows_the_protocols():
    done = _attribute_calibrations()
    exported = _classes(attribute)
    mechanisms = {n for n, c in exported.items() if hasattr(c, "calibrate")} - PROBLEMS
    assert mechanisms == set(done)
    for name, (mech, cal) in done.items():
        assert isinstance(mech, CalibratingMechanism), name
        assert isinstance(cal, Calibrated), name
        assert cal.mechanism == mech.name and cal.theorem == mech.theorem, name
        assert isinstance(cal.release(np.zeros(len(cal.statistic_names)), 1), Release)
        assert mech.name in cal.summary()
    calibrations = {n for n in exported if n.endswith("Calibration")}
    assert calibrations == {type(cal).__name__ for _, cal in done.values()} - {
        "WassersteinCalibration"  # exported by attribute.pufferfish, checked above
    }


def _local_mechanisms():
    g = local.grid(3)
    rng = np.random.default_rng(1)
    return {
        "RandomizedResponse": local.RandomizedResponse(9, 2.0),
        "SnappedLaplace": local.SnappedLaplace(g, 0.7),
        "SnappedGaussian": local.SnappedGaussian(g, 1.5),
        "ExponentialMechanism": local.ExponentialMechanism(g, 1.0),
        "FiniteMechanism": local.FiniteMechanism(rng.dirichlet(np.ones(4), size=9), name="m"),
        "TuplingMechanism": local.TuplingMechanism(local.RandomizedResponse(9, 3.0), 1),
    }


def test_every_local_mechanism_is_a_randomizer_and_calibrates_to_the_protocol():
    mechs = _local_mechanisms()
    exported = _classes(local)
    randomizers = {
        n for n, c in exported.items()
        if issubclass(c, local.FiniteMechanism | local.TuplingMechanism)
    }  # fmt: skip
    assert randomizers == set(mechs)
    lam0, lam1 = local.clustered_city(local.grid(3), random_state=0)
    for name, mech in mechs.items():
        assert isinstance(mech, LocalRandomizer), name
        assert not isinstance(mech, CalibratingMechanism), name  # the sibling, documented
        cal = local.calibrate_local(mech, (lam0, lam1), 1e-3)
        assert isinstance(cal, Calibrated) and cal.mechanism == mech.name, name
        assert mech.name in cal.summary()
    assert {n for n in exported if n.endswith("Calibration")} == {"LocalCalibration"}


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_every_core_mechanism_follows_the_same_protocol(name):
    """One calibrate for all (the base class's), returning a Calibration: a Calibrated."""
    mech = make_mechanism(name, EpsDelta(1.0, 1e-3))
    assert isinstance(mech, CalibratingMechanism)
    assert type(mech).calibrate is Mechanism.calibrate
    model = GaussianModel(["a", "b"], [[0.0, 0.0], [1.0, 0.5]], [np.eye(2), np.eye(2)],
                          [("a", "b")])  # fmt: skip
    try:
        cal = mech.calibrate(model)
    except NotApplicableError:  # needs samples, a group size or a larger spread: not here
        return
    assert isinstance(cal, Calibration) and isinstance(cal, Calibrated)
    assert cal.mechanism == mech.name
