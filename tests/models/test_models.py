"""Models of f_θ: exact finite-population moments, Monte-Carlo, user-supplied files."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from distprivacy.exceptions import DistPrivacyError
from distprivacy.models import (
    ExactModel,
    GaussianModel,
    MonteCarloModel,
    fit_model,
    load_model_file,
    sample_statistics,
    sample_without_replacement,
)
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.spec import ProtectionSpec


def tiny_population(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.integers(0, 50, 11).astype(float),
            "y": rng.normal(size=11),
            "g": ["a"] * 5 + ["b"] * 6,
            "h": rng.choice(["u", "v"], 11),
        }
    )


def test_exact_moments_equal_enumeration_of_every_subset():
    """E[F] and Cov[F] from the finite-population formulas equal the moments over all
    C(5,k)·C(6,n−k) equally likely datasets of θ."""
    df = tiny_population()
    q = Query.parse("mean:x,sum:y,count:h==u,proportion:h==v")
    spec = ProtectionSpec("g==a", 5, [0.4, 0.6])
    model = ExactModel().fit(df, spec, q)
    pos, neg = np.arange(5), np.arange(5, 11)
    for t, k in enumerate(spec.counts):
        rows = [
            list(a) + list(b)
            for a in itertools.combinations(pos, k)
            for b in itertools.combinations(neg, spec.n - k)
        ]
        F = np.array([q.evaluate(df.iloc[r]) for r in rows])
        np.testing.assert_allclose(model.means_[t], F.mean(axis=0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            model.covariances_[t], np.cov(F, rowvar=False, ddof=0), rtol=1e-10, atol=1e-12
        )


def test_monte_carlo_and_exact_agree_within_monte_carlo_error(adult):
    """(a) and (b) agree: means within 5 standard errors, variances within 5 standard errors
    of the sample variance (SE ≈ σ²·√((κ − 1)/R), κ the kurtosis estimated from the samples)."""
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    R = 20_000
    mc = MonteCarloModel(R, random_state=1).fit(adult, spec, q)
    ex = ExactModel().fit(adult, spec, q)
    for t in range(2):
        X = mc.samples_[t]
        se_mean = np.sqrt(np.diag(ex.covariances_[t]) / R)
        assert np.all(np.abs(mc.means_[t] - ex.means_[t]) < 5 * se_mean)
        var_true = np.diag(ex.covariances_[t])
        kurt = stats.kurtosis(X, axis=0, fisher=False)
        se_var = var_true * np.sqrt((kurt - 1) / R)
        assert np.all(np.abs(np.diag(mc.covariances_[t]) - var_true) < 5 * se_var)


def test_monte_carlo_is_reproducible_bit_for_bit(adult):
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    a = MonteCarloModel(200, random_state=7).fit(adult, spec, q)
    b = MonteCarloModel(200, random_state=7).fit(adult, spec, q)
    c = MonteCarloModel(200, random_state=8).fit(adult, spec, q)
    for x, y in zip(a.samples_, b.samples_, strict=True):
        assert np.array_equal(x, y)
    assert not np.array_equal(a.samples_[0], c.samples_[0])


@pytest.mark.parametrize("population,k", [(1000, 10), (30, 25)])  # rejection / partition paths
def test_sample_without_replacement_rows_are_distinct_and_uniform(population, k):
    rng = np.random.default_rng(0)
    R = 20_000
    idx = sample_without_replacement(population, k, R, rng)
    assert idx.shape == (R, k)
    s = np.sort(idx, axis=1)
    assert not (s[:, 1:] == s[:, :-1]).any()
    assert idx.min() >= 0 and idx.max() < population
    # Each element is included with probability k/population: chi-square test at α = 1e-6.
    counts = np.bincount(idx.ravel(), minlength=population)
    expected = R * k / population
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    # Inclusion indicators are negatively correlated (sum fixed), which only shrinks chi2.
    assert chi2 < stats.chi2.ppf(1 - 1e-6, population - 1)


def test_sample_without_replacement_rejects_impossible():
    with pytest.raises(DistPrivacyError, match="distinct"):
        sample_without_replacement(5, 6, 1, np.random.default_rng(0))


def test_auto_uses_exact_moments_and_keeps_samples(adult):
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    auto = fit_model(adult, spec, q, method="auto", n_samples=50, random_state=0)
    ex = fit_model(adult, spec, q, method="exact")
    assert np.array_equal(auto.means_, ex.means_)
    assert auto.samples_ is not None and auto.samples_[0].shape == (50, 5)
    assert ex.samples_ is None
    with pytest.raises(DistPrivacyError, match="unknown modelling method"):
        fit_model(adult, spec, q, method="magic")


def test_exact_model_refuses_nonlinear_statistics(adult):
    from distprivacy.query import CallableStatistic

    q = Query([CallableStatistic("median", lambda X: np.median(X[..., 0], axis=-1), ["age"])])
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    with pytest.raises(DistPrivacyError, match="linear statistics"):
        ExactModel().fit(adult, spec, q)
    m = fit_model(adult, spec, q, method="auto", n_samples=100, random_state=0)
    assert m.method_ == "monte-carlo" and m.means_.shape == (2, 1)


@pytest.mark.parametrize("method", ["exact", "monte-carlo", "auto"])
def test_fitted_models_record_their_query_and_spec(adult, method):
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    m = fit_model(adult, spec, q, method=method, n_samples=50, random_state=0)
    assert m.query_ is q and m.spec_ is spec
    # What a release evaluates: F of an n-record dataset, through the recorded query.
    target = adult.iloc[:100]
    assert np.array_equal(m.query_.evaluate(target, n=m.spec_.n), q.evaluate(target))


def test_user_models_have_no_query_or_spec(tmp_path):
    gm = GaussianModel(["a", "b"], [[0.0], [1.0]], [[[1.0]], [[1.0]]], [("a", "b")])
    assert gm.query_ is None and gm.spec_ is None
    path = tmp_path / "m.json"
    path.write_text(json.dumps(PAPER_EXAMPLE))
    loaded = load_model_file(path)
    assert loaded.query_ is None and loaded.spec_ is None


def test_sampling_takes_a_seed_or_a_generator(adult):
    a = sample_without_replacement(1000, 10, 50, 3)
    b = sample_without_replacement(1000, 10, 50, np.random.default_rng(3))
    assert np.array_equal(a, b)
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    pos, neg = spec.groups(adult)
    x = sample_statistics(adult, q, pos, neg, 45, 100, 20, random_state=5)
    y = sample_statistics(adult, q, pos, neg, 45, 100, 20, np.random.default_rng(5))
    assert np.array_equal(x, y)
    with pytest.raises(DistPrivacyError, match="random_state"):
        sample_without_replacement(1000, 10, 5, random_state=1.5)


def test_every_name_stays_importable_from_the_package():
    """models.py became a package; every name it had is still importable from it."""
    import distprivacy.models as models

    for name in (
        "Data", "ExactModel", "FModel", "GaussianModel", "MODEL_FILE_SCHEMA",
        "MODEL_MEMORY_LIMIT", "MonteCarloModel", "ProgressCallback", "fit_model",
        "load_model_file", "model_file_memory", "sample_statistics", "sample_statistics_bytes",
        "sample_without_replacement",
    ):  # fmt: skip
        assert hasattr(models, name), name


PAPER_EXAMPLE = {
    "statistics": ["x", "y"],
    "thetas": [
        {"label": "a", "mean": [100, 101], "covariance": [[22, -6], [-6, 13]]},
        {"label": "b", "mean": [99, 102], "covariance": [[22, -6], [-6, 13]]},
    ],
    "pairs": [["a", "b"]],
}


def test_load_model_file_json_and_toml(tmp_path):
    pj = tmp_path / "m.json"
    pj.write_text(json.dumps(PAPER_EXAMPLE))
    pt = tmp_path / "m.toml"
    pt.write_text(
        'statistics = ["x", "y"]\npairs = [["a", "b"]]\n'
        '[[thetas]]\nlabel = "a"\nmean = [100, 101]\ncovariance = [[22, -6], [-6, 13]]\n'
        '[[thetas]]\nlabel = "b"\nmean = [99, 102]\ncovariance = [[22, -6], [-6, 13]]\n'
    )
    for p in (pj, pt):
        m = load_model_file(p)
        assert m.statistic_names_ == ("x", "y")
        assert m.pair_indices_ == ((0, 1), (1, 0))
        np.testing.assert_array_equal(m.mean_differences()[0], [1, -1])


@pytest.mark.parametrize(
    "cov,match",
    [
        ([[22, -6], [-5, 13]], "not symmetric"),
        ([[1, 2], [2, 1]], "positive semidefinite"),
        ([[1, 0], [0, float("nan")]], "finite"),
    ],
)
def test_bad_covariances_are_refused_not_regularised(tmp_path, cov, match):
    bad = json.loads(json.dumps(PAPER_EXAMPLE))
    bad["thetas"][1]["covariance"] = cov
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad).replace("NaN", "NaN"))
    with pytest.raises(DistPrivacyError, match=match):
        load_model_file(p)


def test_singular_covariance_is_named():
    m = GaussianModel(
        ["a", "b"],
        [[0, 1], [1, 1]],
        [np.diag([1.0, 0.0])] * 2,
        [("a", "b")],
        statistic_names=["x", "const"],
    )
    with pytest.raises(DistPrivacyError, match=r"singular \(const has zero variance\)"):
        m.require_invertible()


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda d: d.pop("pairs"), "needs 'thetas' and 'pairs'"),
        (lambda d: d.update(pairs=[["a", "zz"]]), "unknown θ"),
        (lambda d: d.update(pairs=[["a", "a"]]), "itself"),
        (lambda d: d.update(pairs=[]), "empty"),
        (lambda d: d["thetas"][0].pop("mean"), "'label', 'mean' and 'covariance'"),
        (lambda d: d["thetas"][0].update(samples=[[1, 2]]), "samples for every θ"),
    ],
)
def test_model_file_errors(tmp_path, mutate, match):
    d = json.loads(json.dumps(PAPER_EXAMPLE))
    mutate(d)
    p = tmp_path / "m.json"
    p.write_text(json.dumps(d))
    with pytest.raises(DistPrivacyError, match=match):
        load_model_file(p)


def test_model_file_not_found_or_bad_syntax(tmp_path):
    with pytest.raises(DistPrivacyError, match="not found"):
        load_model_file(tmp_path / "none.json")
    p = tmp_path / "m.json"
    p.write_text("{not json")
    with pytest.raises(DistPrivacyError, match="not valid"):
        load_model_file(p)
    q = tmp_path / "m.yaml"
    q.write_text("a: 1")
    with pytest.raises(DistPrivacyError, match=r"\.json or \.toml"):
        load_model_file(q)
