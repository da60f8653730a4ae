"""Fail-closed calibration and unit-equivariant noise (issue 12).

* The fail-open cases found on real use: singular covariances that differ across θ, and
  non-finite moments, must end in a refusal or in noise whose guarantee is verified.
* Rescaling one statistic by c rescales its noise by c and leaves the others' unchanged, for
  DauM-G, DirM-G and OptM-G, including their unequal-covariance fixes.

The δ checks here use a Monte-Carlo estimate of E_P[(1 − e^{ε−L})₊] that does not go through
the library's profile code: its standard error gives the tolerance (z = 5, α ≈ 6e-7).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.mechanisms import make_mechanism
from distprivacy.models import GaussianModel, fit_model
from distprivacy.query import CallableStatistic, Query
from distprivacy.request import GaussianOptions
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

GAUSSIAN = ("ExpM-G", "DirM-G", "EigM-G", "DauM-G", "OptM-G", "NoNoise")
EPS, DELTA = 1.0, 1e-3


def mc_delta(mp, A, mq, B, eps: float, n: int = 100_000, seed: int = 0) -> tuple[float, float]:
    """Monte-Carlo δ_{P‖Q}(ε) = E_P[(1 − e^{ε − L})₊] for full-rank Gaussians, with its
    standard error (scipy's densities, not the library's profile code)."""
    rng = np.random.default_rng(seed)
    x = stats.multivariate_normal(mp, A).rvs(n, random_state=rng).reshape(n, -1)
    L = stats.multivariate_normal(mp, A).logpdf(x) - stats.multivariate_normal(mq, B).logpdf(x)
    v = np.clip(-np.expm1(eps - L), 0.0, None)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(n))


def verified_or_refused(model: GaussianModel, name: str) -> str:
    """Calibrate; if it returns, check every ordered pair by Monte Carlo (the output
    covariances must be full rank: different supports would make δ = 1)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = make_mechanism(name, EpsDelta(EPS, DELTA)).calibrate(model)
    except NotApplicableError as exc:
        assert str(exc) and "\n" not in str(exc)
        return "refused"
    assert cal.delta_achieved <= DELTA * (1 + 1e-6)
    Z = cal.noise_covariance
    for i, j in model.pair_indices_:
        A, B = model.covariances_[i] + Z, model.covariances_[j] + Z
        assert np.linalg.eigvalsh(A)[0] > 0 and np.linalg.eigvalsh(B)[0] > 0, name
        est, se = mc_delta(model.means_[i], A, model.means_[j], B, EPS)
        assert est <= DELTA + 5 * se + 1e-6, (name, est, se)
    return "verified"


def test_singular_covariances_with_different_supports():
    """f_a = N(0, diag(1, 0)), f_b = N((1, 0), diag(1, 0.5)): noise along e1 only (DirM-G's
    paper form) leaves the second output exactly 0 under a and continuous under b, δ = 1."""
    model = GaussianModel(
        ["a", "b"], [[0, 0], [1, 0]], [np.diag([1.0, 0]), np.diag([1.0, 0.5])], [("a", "b")]
    )
    outcomes = {name: verified_or_refused(model, name) for name in GAUSSIAN}
    assert outcomes["DirM-G"] == "verified"  # fixed by a model-shaped top-up
    assert outcomes["NoNoise"] == "refused"


def test_equal_means_different_singular_covariances():
    """Equal means, covariances diag(1, 0) and diag(0, 1): zero mean difference, so the
    expected-value mechanisms' own noise is 0 — yet the laws are disjoint (δ = 1)."""
    model = GaussianModel(
        ["a", "b"], [[0, 0], [0, 0]], [np.diag([1.0, 0]), np.diag([0, 1.0])], [("a", "b")]
    )
    outcomes = {name: verified_or_refused(model, name) for name in GAUSSIAN}
    assert outcomes["ExpM-G"] == "verified" and outcomes["OptM-G"] == "verified"
    assert outcomes["NoNoise"] == "refused"


def test_pooled_mode_never_claims_an_infinite_mu():
    """Under the pooled assumption a noise that leaves a mean difference uncovered (μ = ∞) is
    refused, not reported."""
    model = GaussianModel(
        ["a", "b"], [[0, 0], [1, 1]], [np.diag([1.0, 0]), np.diag([1.0, 0])], [("a", "b")]
    )
    with pytest.raises(NotApplicableError, match=r"singular|not applicable"):
        make_mechanism(
            "NoNoise", EpsDelta(EPS, DELTA), GaussianOptions(covariances="pooled")
        ).calibrate(model)


def test_nan_statistic_refused_at_modelling_time(adult):
    """The mean capital gain among those with one is NaN on subsets without any: refused at
    fit time, naming the statistic and the share of bad subsets."""

    def mean_positive_gain(X: np.ndarray) -> np.ndarray:
        g = X[..., 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(g > 0, g, 0).sum(axis=-1) / (g > 0).sum(axis=-1)

    stat = CallableStatistic("mean_positive_gain", mean_positive_gain, columns=("capital_gain",))
    spec = ProtectionSpec("income==>50K", 20, [0.45, 0.55])
    with pytest.raises(
        DistPrivacyError,
        match=r"mean_positive_gain is not a finite number on \d+(\.\d)?% of the 500 sampled",
    ):
        fit_model(adult, spec, Query([stat]), method="monte-carlo", n_samples=500, random_state=0)


def test_overflowing_column_refused(adult):
    """Values near 1e300 overflow the covariance: refused naming the statistic."""
    data = adult.copy()
    data["huge"] = data["age"].astype(float) * 1e300
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    with pytest.raises(DistPrivacyError, match="huge"), np.errstate(all="ignore"):
        fit_model(data, spec, Query.parse("mean:age,sum:huge"), method="exact")


def test_non_finite_user_model_refused():
    with pytest.raises(DistPrivacyError, match="finite"):
        GaussianModel(["a", "b"], [[0.0], [np.nan]], [[[1.0]], [[1.0]]], [("a", "b")])


# ---------------------------------------------------------------------------------------------
# Unit equivariance
# ---------------------------------------------------------------------------------------------

STATISTICS = "mean:age,mean:capital_gain,proportion:sex==Female,mean:hours_per_week"


def _noise_sd(data: pd.DataFrame, name: str, values=(0.3, 0.4, 0.5)) -> np.ndarray:
    spec = ProtectionSpec("income==>50K", 300, list(values))
    model = fit_model(data, spec, Query.parse(STATISTICS), method="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = make_mechanism(name, EpsDelta(0.5, DELTA)).calibrate(model)
    return cal.noise_sd


@pytest.mark.slow
@pytest.mark.parametrize("name", ["DauM-G", "DirM-G", "OptM-G"])
def test_rescaling_one_column_rescales_only_its_noise(adult, name):
    """capital_gain in thousands of dollars instead of dollars (× 1/1000), and age × 1000:
    that statistic's noise SD scales by the same factor within 1%, the others are unchanged
    within 1% (the fitted-covariance fix included: three values, unequal covariances)."""
    base = _noise_sd(adult, name)
    assert np.all(base > 0)
    for column, k, factor in (("capital_gain", 1, 1e-3), ("age", 0, 1e3)):
        data = adult.copy()
        data[column] = data[column].astype(float) * factor
        sd = _noise_sd(data, name)
        expected = base.copy()
        expected[k] *= factor
        np.testing.assert_allclose(sd, expected, rtol=0.01, err_msg=f"{name}, {column}")


def test_a_deliberately_wrong_scale_is_caught():
    """The equivariance check has power: isotropic raw-unit noise (ExpM-G, the paper's design)
    does not rescale with a column, and the comparison above would flag it."""
    S = np.diag([4.0, 1e-4])
    model = GaussianModel(["a", "b"], [[0, 0], [1, 0.01]], [S, S], [("a", "b")])
    scaled = GaussianModel(
        ["a", "b"], [[0, 0], [1, 10.0]], [np.diag([4.0, 100.0])] * 2, [("a", "b")]
    )
    sd = make_mechanism("ExpM-G", EpsDelta(0.5, DELTA)).calibrate(model).noise_sd
    sd2 = make_mechanism("ExpM-G", EpsDelta(0.5, DELTA)).calibrate(scaled).noise_sd
    assert not np.allclose(sd2, sd * np.array([1.0, 1000.0]), rtol=0.01)
    good = make_mechanism("OptM-G", EpsDelta(0.5, DELTA)).calibrate(model).noise_sd
    good2 = make_mechanism("OptM-G", EpsDelta(0.5, DELTA)).calibrate(scaled).noise_sd
    np.testing.assert_allclose(good2, good * np.array([1.0, 1000.0]), rtol=0.01)


def test_per_statistic_output(adult):
    spec = ProtectionSpec("income==>50K", 300, [0.3, 0.4, 0.5])
    model = fit_model(adult, spec, Query.parse(STATISTICS), method="exact")
    cal = make_mechanism("OptM-G", EpsDelta(0.5, DELTA)).calibrate(model)
    rows = cal.to_dict()["per_statistic"]
    assert [r["statistic"] for r in rows] == list(model.statistic_names_)
    np.testing.assert_allclose(
        [r["noise_sd"] for r in rows], np.sqrt(np.diag(cal.noise_covariance))
    )
    level = np.abs(model.means_).mean(axis=0)
    np.testing.assert_allclose([r["relative_error"] for r in rows], cal.noise_sd / level)
    assert cal.utility_cost("scaled") == pytest.approx(
        float(np.sum(cal.noise_sd**2 / model.statistic_scales() ** 2))
    )


def test_short_repr_and_summary(adult):
    """A calibration's repr is one short line; summary() gives the guarantee, its basis and
    every statistic's noise SD."""
    spec = ProtectionSpec("income==>50K", 300, [0.3, 0.4, 0.5])
    model = fit_model(adult, spec, Query.parse(STATISTICS), method="exact")
    cal = make_mechanism("DauM-G", EpsDelta(0.5, DELTA)).calibrate(model)
    assert "\n" not in repr(cal) and len(repr(cal)) < 120 and "verified" in repr(cal)
    text = cal.summary()
    assert all(name in text for name in model.statistic_names_) and cal.basis in text
    rel = cal.release(np.asarray(model.means_[0]), random_state=0)
    shown = repr(rel)  # the values, the guarantee and the warnings, one line each (issue 33)
    assert shown.startswith("Release(DauM-G") and f"guarantee: {cal.guarantee.describe()}" in shown


def test_covariance_mismatch_does_not_depend_on_units(adult):
    """The equal-covariance diagnostic is measured in unit-free coordinates."""
    spec = ProtectionSpec("income==>50K", 300, [0.3, 0.4, 0.5])
    base = fit_model(adult, spec, Query.parse(STATISTICS), method="exact")
    data = adult.copy()
    data["capital_gain"] = data["capital_gain"].astype(float) * 1e-3
    scaled = fit_model(data, spec, Query.parse(STATISTICS), method="exact")
    assert scaled.covariance_mismatch() == pytest.approx(base.covariance_mismatch(), rel=1e-9)
