"""Every mechanism's calibration follows the Calibrated protocol of distprivacy.guarantee: its
guarantee agrees with the old properties, it round-trips through JSON exactly, and it releases a
dataset (a DataFrame of n records) exactly as it releases that dataset's statistics."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

from distprivacy._json import dumps_json
from distprivacy.exceptions import (
    ClassicRuleWarning,
    ClassicShortfallWarning,
    DistPrivacyError,
    DistPrivacyWarning,
    Notice,
)
from distprivacy.guarantee import Calibrated, Guarantee
from distprivacy.guarantee import Release as GuaranteeRelease
from distprivacy.mechanisms import (
    MECHANISMS,
    Calibration,
    GaussianAccounting,
    Release,
    make_mechanism,
)
from distprivacy.models import fit_model
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.request import GaussianOptions
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

N = 100
DELTA = 1e-3
#: ε per mechanism: NoNoise needs a large one (the model's own noise must suffice).
EPSILON = {"NoNoise": 10.0}
#: Variants beyond the defaults: the classic rule, and the pooled rule without the
#: unequal-covariance profile (its curve is then the whole μ-GDP one).
VARIANTS = {
    "DauM-G classic": ("DauM-G", {"rule": "classic"}),
    "ExpM-G pooled": ("ExpM-G", {"covariances": "pooled", "check_profile": False}),
}
CASES = [*MECHANISMS, *VARIANTS]


@pytest.fixture(scope="module")
def setting(adult):
    spec = ProtectionSpec("income==>50K", N, [0.45, 0.55])
    query = Query.parse(ADULT_DEFAULT_STATISTICS)
    model = fit_model(adult, spec, query, "auto", n_samples=200, random_state=0)
    if getattr(model, "query_", None) is None:  # fit_model records them (issue 15)
        model.query_, model.spec_ = query, spec
    return model, spec, query


@pytest.fixture(scope="module")
def calibrations(setting) -> dict[str, Calibration]:
    model = setting[0]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in MECHANISMS:
            out[name] = make_mechanism(name, EpsDelta(EPSILON.get(name, 1.0), DELTA)).calibrate(
                model
            )
        for label, (name, kw) in VARIANTS.items():
            options = GaussianOptions(**kw)
            out[label] = MECHANISMS[name](EpsDelta(1.0, DELTA), options).calibrate(model)
    return out


@pytest.fixture(scope="module")
def dataset(adult):
    rows = np.random.default_rng(11).choice(len(adult), size=N, replace=False)
    return adult.iloc[rows]


def _release(cal: Calibration, value, seed: int) -> Release:
    return cal.release(value, random_state=seed, allow_exact=not cal.adds_noise)


@pytest.mark.parametrize("name", CASES)
def test_guarantee_agrees_with_the_calibration(calibrations, name):
    cal = calibrations[name]
    assert isinstance(cal, Calibrated)
    g = cal.guarantee
    assert isinstance(g, Guarantee)
    assert g.notion == "distribution privacy"
    assert g.epsilon == cal.epsilon
    assert g.delta == cal.delta_achieved
    assert g.mu == cal.mu
    assert g.max_attack_accuracy == cal.max_attack_accuracy
    assert g.verified == cal.verified
    assert (g.basis, g.theorem, g.assumptions) == (cal.basis, cal.theorem, cal.assumptions)
    # Only group DP over the whole dataset (k = n) holds for every pair of n-record datasets.
    whole = cal.details.get("group_size") == cal.n and name.startswith("GroupDP")
    assert g.holds_for_every_input is whole
    acct = cal.accounting
    if acct is None:  # pure-ε Laplace or a non-Gaussian (W, δ) mechanism
        assert cal.mu is None and g.curve == "point"
        if not MECHANISMS[name].uses_delta:
            assert g.delta == 0.0 and g.pure
    else:
        assert isinstance(acct, GaussianAccounting)
        assert acct.shared.mu == cal.mu
        assert g.curve == ("gdp" if acct.unequal is None else "point")
    assert g.check(cal.epsilon, cal.delta_achieved)
    if g.delta > 0:
        assert not g.check(cal.epsilon, g.delta / 2)
    assert cal.to_dict()["guarantee"] == g.to_dict()


def test_the_curves_are_the_expected_ones(calibrations):
    assert calibrations["GroupDP-G"].guarantee.curve == "gdp"
    assert calibrations["ExpM-G pooled"].guarantee.curve == "gdp"
    assert calibrations["DauM-G"].guarantee.curve == "point"
    assert calibrations["DauM-G classic"].guarantee.curve == "point"
    assert calibrations["ExpM-L"].guarantee.curve == "point"
    # GroupDP over the whole dataset (k = n): DP for every pair of n-record datasets, so its
    # releases compose by basic / GDP composition (docs/ledger.md).
    cal = calibrations["GroupDP-G"]
    g = cal.guarantee
    assert cal.details["group_size"] == cal.n
    assert g.verified and "every dataset" in g.basis and g.holds_for_every_input


def test_group_dp_over_fewer_records_does_not_hold_for_every_input(calibrations):
    from distprivacy.mechanisms import GroupDPLaplace

    cal = calibrations["GroupDP-L"]
    small = GroupDPLaplace(EpsDelta(1.0, 0.0), group_size=cal.n - 1).calibrate(cal.model_)
    assert small.details["group_size"] == cal.n - 1
    assert not small.guarantee.holds_for_every_input


@pytest.mark.parametrize("name", CASES)
def test_delta_at_is_non_increasing(calibrations, name):
    cal = calibrations[name]
    g = cal.guarantee
    grid = np.linspace(0.0, 3 * cal.epsilon, 31)
    deltas = np.array([g.delta_at(e) for e in grid])
    # The exact profile of unequal fitted covariances is an integral accurate to 1e-10 (each
    # value an upper bound): non-increasing up to that accuracy; the μ-GDP curve exactly.
    assert (np.diff(deltas) <= (1e-15 if g.curve == "gdp" else 1e-9)).all()
    assert g.delta_at(cal.epsilon) == pytest.approx(g.delta, rel=1e-9, abs=1e-300)
    if cal.mu is not None:
        own = np.array([cal.delta_at(e) for e in grid])
        assert (np.diff(own) <= 1e-15).all()
        if g.curve == "gdp":
            np.testing.assert_allclose(deltas, own, rtol=1e-12, atol=1e-300)
    else:
        with pytest.raises(DistPrivacyError, match="pure-ε"):
            cal.delta_at(1.0)
    if g.delta > 0:
        e = g.epsilon_at(g.delta)
        assert e <= cal.epsilon * (1 + 1e-9) and g.delta_at(e) <= g.delta * (1 + 1e-9)


@pytest.mark.parametrize("name", CASES)
def test_round_trip_through_json(calibrations, name):
    cal = calibrations[name]
    raw = json.loads(dumps_json(cal.to_dict()))
    back = Calibration.from_dict(raw)
    assert back.guarantee == cal.guarantee
    assert back.accounting == cal.accounting
    assert np.array_equal(back.noise_covariance, cal.noise_covariance)  # bit for bit
    assert back.noise.family == cal.noise.family
    assert back.expected_l2_error == cal.expected_l2_error
    assert [(str(w), w.category) for w in back.warnings] == [
        (str(w), w.category) for w in cal.warnings
    ]
    assert back.to_dict() == raw
    assert repr(back) == repr(cal)
    value = np.asarray(cal.statistic_levels, dtype=float)
    np.testing.assert_array_equal(_release(back, value, 5).values, _release(cal, value, 5).values)


@pytest.mark.parametrize("name", CASES)
def test_release_of_a_dataset_equals_release_of_its_statistics(
    calibrations, setting, dataset, name
):
    cal = calibrations[name]
    query = setting[2]
    assert cal.n == N and cal.query is not None and cal.model_ is setting[0]
    by_data = _release(cal, dataset, 7)
    by_value = _release(cal, query.evaluate(dataset), 7)
    np.testing.assert_array_equal(by_data.values, by_value.values)
    assert by_data.statistic_names == query.names
    # A calibration read back with the query releases a dataset too.
    back = Calibration.from_dict(cal.to_dict(), query=query)
    np.testing.assert_array_equal(_release(back, dataset, 7).values, by_data.values)


def test_a_dataset_of_the_wrong_size_is_refused(calibrations, dataset):
    cal = calibrations["DauM-G"]
    with pytest.raises(DistPrivacyError) as err:
        cal.release(dataset.iloc[:-1], random_state=0)
    msg = str(err.value)
    assert "\n" not in msg and str(N - 1) in msg and str(N) in msg


def test_a_dataset_needs_the_query(calibrations, dataset):
    cal = dataclasses.replace(calibrations["DauM-G"], query=None)
    with pytest.raises(DistPrivacyError, match="as numbers") as err:
        cal.release(dataset, random_state=0)
    assert "\n" not in str(err.value)
    # Read back without its query: the same.
    with pytest.raises(DistPrivacyError, match="as numbers"):
        Calibration.from_dict(calibrations["DauM-G"].to_dict()).release(dataset, random_state=0)


@pytest.mark.parametrize("name", CASES)
def test_short_repr_and_release(calibrations, name):
    cal = calibrations[name]
    text = repr(cal)
    assert text.startswith(f"Calibration({cal.mechanism}") and "\n" not in text and len(text) < 120
    rel = _release(cal, np.asarray(cal.statistic_levels, dtype=float), 1)
    assert isinstance(rel, GuaranteeRelease) and Release is GuaranteeRelease
    shown = repr(rel)  # the published values, the guarantee and every warning (issue 33)
    assert shown.startswith(f"Release({cal.mechanism}, ") and "SEEDED" in shown
    assert f"guarantee: {cal.guarantee.describe()}" in shown
    assert all(f"warning: {w}" in shown for w in rel.warnings)
    d = rel.to_dict()
    assert {"statistics", "noise_added", "secure_randomness", "calibration"} <= set(d)
    assert d["guarantee"] == cal.guarantee.to_dict() and d["secure_randomness"] is False


@pytest.mark.parametrize("name", CASES)
def test_warnings_are_typed(calibrations, name):
    cal = calibrations[name]
    for w in cal.warnings:
        assert isinstance(w, Notice) and issubclass(w.category, DistPrivacyWarning)
    assert cal.to_dict()["warning_codes"] == [w.code for w in cal.warnings]


def test_classic_rule_caveats_are_issued_by_category(setting):
    with pytest.warns(DistPrivacyWarning) as record:
        cal = make_mechanism(
            "GroupDP-G", EpsDelta(10.0, DELTA), GaussianOptions(rule="classic")
        ).calibrate(setting[0])
    assert {ClassicRuleWarning, ClassicShortfallWarning} == {w.category for w in record}
    assert all(w.filename == __file__ for w in record)  # issued at the caller's line
    assert {ClassicRuleWarning, ClassicShortfallWarning} <= {w.category for w in cal.warnings}
    # Filtered by category, never by text: ignoring the classic rule's caveats ignores both
    # (the rule's shortfall is a ClassicRuleWarning and a ShortfallWarning).
    with warnings.catch_warnings():
        warnings.simplefilter("error", DistPrivacyWarning)
        warnings.filterwarnings("ignore", category=ClassicRuleWarning)
        make_mechanism(
            "GroupDP-G", EpsDelta(10.0, DELTA), GaussianOptions(rule="classic")
        ).calibrate(setting[0])


def test_from_dict_is_strict(calibrations):
    cal = calibrations["DauM-G"]
    raw = cal.to_dict()
    bad = [
        ({**raw, "surprise": 1}, "unknown key"),
        ({k: v for k, v in raw.items() if k != "noise"}, "missing noise"),
        ({**raw, "warning_codes": ["nonsense"] * len(raw["warnings"])}, "warning_codes"),
        ({**raw, "noise_covariance": (2 * cal.noise_covariance).tolist()}, "covariance"),
        ({**raw, "guarantee": {**raw["guarantee"], "delta": 1e-9}}, "does not match"),
        ({**raw, "accounting": {**raw["accounting"], "extra": 0}}, "unknown key"),
        ({**raw, "noise": {**raw["noise"], "family": "cauchy"}}, "family"),
        ({**raw, "epsilon": "abc"}, "malformed"),
        ({**raw, "n": 2.5}, "n must be"),
        ({**raw, "statistics": ["", "x"]}, "non-empty"),
        ("text", "must be an object"),
    ]
    for doc, what in bad:
        with pytest.raises(DistPrivacyError, match=what) as err:
            Calibration.from_dict(doc)
        assert "\n" not in str(err.value)
    with pytest.raises(DistPrivacyError, match="accounting must be"):
        dataclasses.replace(cal, accounting={"delta_achieved": 0.0})


def test_non_gaussian_accounting_is_empty(calibrations):
    for name in ("ExpM-L", "Wasserstein", "ApproxWasserstein", "GroupDP-L"):
        cal = calibrations[name]
        assert cal.accounting is None and cal.to_dict()["accounting"] == {}
        assert cal.delta_achieved == cal.delta
        e = math.exp(cal.epsilon)
        assert cal.max_attack_accuracy == (e + cal.delta) / (1 + e)
