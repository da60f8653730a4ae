"""Distribution transformers (Eq. 2 of Suri & Evans): exact property share, preserved label share,
uniform sampling within strata (a chi-square test that does catch a biased sampler), user
functions, and one-line errors for bad inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.transformers import (
    FunctionTransformer,
    IdentityTransformer,
    RatioTransformer,
    as_transformer,
    fit_joint,
    max_dataset_size,
)
from distprivacy.spec import proportion_to_count

CHI2_ALPHA = 1e-6  # false-alarm rate of each uniformity test


def _toy(N=3000, seed=0):
    """Property f (30%) and a label y whose rate depends on f (60% vs 20%)."""
    rng = np.random.default_rng(seed)
    f = rng.random(N) < 0.3
    y = rng.random(N) < np.where(f, 0.6, 0.2)
    return pd.DataFrame({"g": np.where(f, "a", "b"), "y": y.astype(int), "v": rng.random(N)})


def _chi2_uniform_p(counts: np.ndarray) -> float:
    return float(stats.chisquare(counts).pvalue)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.38, 0.5, 0.9, 1.0])
def test_ratio_share_is_exact_and_label_share_preserved(alpha):
    df = _toy()
    f = (df["g"] == "a").to_numpy()
    y = df["y"].to_numpy()
    pool = np.arange(0, 3000, 2)  # a split: every other row
    t = RatioTransformer("g==a", alpha, label="y==1")
    n = 200
    idx = t.sample(df, n=n, n_datasets=200, rows=pool, random_state=1)
    assert idx.shape == (200, n)
    assert np.all(np.isin(idx, pool))
    assert all(np.unique(r).size == n for r in idx)  # rows distinct within a dataset
    np.testing.assert_array_equal(f[idx].sum(axis=1), proportion_to_count(alpha, n))
    pi = y[pool].mean()
    np.testing.assert_array_equal(y[idx].sum(axis=1), proportion_to_count(pi, n))
    # same seed, same datasets
    np.testing.assert_array_equal(t.sample(df, n=n, n_datasets=200, rows=pool, random_state=1), idx)


def test_joint_keeps_the_odds_ratio_and_hits_the_margins():
    table = np.array([[1500.0, 400.0], [300.0, 800.0]])  # [f, y]
    for alpha, pi in [(0.5, 0.25), (0.1, 0.4), (0.9, 0.3)]:
        q = fit_joint(table, alpha, pi)
        np.testing.assert_allclose(q.sum(axis=1), [1 - alpha, alpha], atol=1e-10)
        np.testing.assert_allclose(q.sum(axis=0), [1 - pi, pi], atol=1e-10)
        odds = lambda t: t[0, 0] * t[1, 1] / (t[0, 1] * t[1, 0])  # noqa: E731
        assert odds(q) == pytest.approx(odds(table), rel=1e-8)
    q = fit_joint(table, 1.0, 0.3)
    np.testing.assert_allclose(q, [[0, 0], [0.7, 0.3]], atol=1e-12)
    with pytest.raises(DistPrivacyError, match=r"some \(property, label\) group it needs is empty"):
        fit_joint(np.array([[10.0, 5.0], [7.0, 0.0]]), 1.0, 0.3)


def test_rows_are_uniform_within_each_stratum():
    """p(x | f, y) is the pool's: every row of a stratum is drawn equally often. The same
    chi-square test rejects a sampler that favours some rows."""
    df = _toy(N=1200, seed=2)
    t = RatioTransformer("g==a", 0.5, label="y==1")
    plan = t.plan(df, n=120)
    idx = t.sample(df, n=120, n_datasets=3000, random_state=3)
    counts = np.bincount(idx.ravel(), minlength=len(df))
    for group, k in zip(plan["groups"], plan["counts"].ravel(), strict=True):
        if 0 < k < group.size:
            c = counts[group]
            assert c.sum() == 3000 * k
            assert _chi2_uniform_p(c) > CHI2_ALPHA
    # the control: weights 1 vs 2 over one stratum's rows are detected
    group = plan["groups"][3]
    w = np.where(np.arange(len(df)) % 2 == 0, 1.0, 2.0) * np.isin(np.arange(len(df)), group)
    biased = FunctionTransformer(lambda d: w).sample(df, n=1, n_datasets=3000, random_state=4)
    c = np.bincount(biased.ravel(), minlength=len(df))[group]
    assert _chi2_uniform_p(c) < CHI2_ALPHA


def test_weighted_function_draws_rows_in_proportion_to_weight():
    df = _toy(N=50)
    w = np.arange(50, dtype=float)  # row 0 never drawn
    idx = FunctionTransformer(lambda d: w, name="ramp").sample(
        df, n=1, n_datasets=40_000, random_state=5
    )
    counts = np.bincount(idx.ravel(), minlength=50)
    assert counts[0] == 0
    expected = 40_000 * w[1:] / w.sum()
    assert stats.chisquare(counts[1:], expected).pvalue > CHI2_ALPHA
    # without replacement within a dataset
    many = FunctionTransformer(lambda d: w).sample(df, n=30, n_datasets=50, random_state=6)
    assert all(np.unique(r).size == 30 for r in many)
    assert FunctionTransformer(lambda d: w, name="ramp").describe() == {
        "kind": "function",
        "name": "ramp",
    }


def test_filter_function_and_identity_are_uniform_on_their_rows():
    df = _toy(N=400, seed=7)
    keep = (df["v"] > 0.5).to_numpy()
    idx = as_transformer(lambda d: (d["v"] > 0.5).to_numpy()).sample(
        df, n=20, n_datasets=2000, random_state=8
    )
    assert keep[idx].all()
    counts = np.bincount(idx.ravel(), minlength=400)[keep]
    assert _chi2_uniform_p(counts) > CHI2_ALPHA
    ident = IdentityTransformer().sample(
        df, n=40, n_datasets=1000, rows=np.arange(100), random_state=9
    )
    assert ident.max() < 100 and _chi2_uniform_p(np.bincount(ident.ravel())) > CHI2_ALPHA


def test_without_label_preservation_the_label_share_follows_eq2():
    """Eq. 2 alone keeps p(x | f): the label share becomes α p(y|f=1) + (1 − α) p(y|f=0)."""
    df = _toy(N=4000, seed=10)
    f = (df["g"] == "a").to_numpy()
    y = df["y"].to_numpy()
    alpha, n, reps = 0.8, 200, 2000
    idx = RatioTransformer("g==a", alpha, preserve_label_ratio=False).sample(
        df, n=n, n_datasets=reps, random_state=11
    )
    np.testing.assert_array_equal(f[idx].sum(axis=1), proportion_to_count(alpha, n))
    k1 = proportion_to_count(alpha, n)
    expected = (k1 * y[f].mean() + (n - k1) * y[~f].mean()) / n
    # each dataset's label share has variance ≤ 1/(4n); the mean over reps ≤ 1/(4 n reps)
    assert abs(y[idx].mean() - expected) < 6 * np.sqrt(0.25 / (n * reps))
    assert abs(expected - y.mean()) > 0.1  # the shift that label preservation removes


def test_adult_sex_ratio(adult):
    t = RatioTransformer("sex==Female", 0.38, label="income==>50K")
    idx = t.sample(adult, n=2000, n_datasets=50, random_state=12)
    women = (adult["sex"] == "Female").to_numpy()
    rich = (adult["income"] == ">50K").to_numpy()
    assert np.all(women[idx].mean(axis=1) == 0.38)
    np.testing.assert_array_equal(rich[idx].sum(axis=1), proportion_to_count(rich.mean(), 2000))
    assert t.describe()["property"] == "sex==Female"


def test_max_dataset_size():
    df = _toy(N=2000, seed=13)
    ts = [RatioTransformer("g==a", a, label="y==1") for a in (0.0, 0.5, 1.0)]
    n = max_dataset_size(df, ts)
    for t in ts:
        t.plan(df, n=n)
    with pytest.raises(DistPrivacyError, match="needs"):
        for t in ts:
            t.plan(df, n=n + 1)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: RatioTransformer("g==a", 1.5, label="y==1"),
            r"ratio must be a number in \[0, 1\]",
        ),
        (
            lambda: RatioTransformer("g==a", -0.1, label="y==1"),
            r"ratio must be a number in \[0, 1\]",
        ),
        (lambda: RatioTransformer("g==a", "half", label="y==1"), "ratio must be a number"),
        (lambda: RatioTransformer("g==a", 0.5), "needs the label predicate"),
        (
            lambda: RatioTransformer("g==a", 0.5, preserve_label_ratio=False, label_ratio=0.3),
            "label_ratio only applies",
        ),
        (
            lambda: RatioTransformer("g==a", 0.5, label="y==1", label_ratio=2.0),
            r"label_ratio must be a number in \[0, 1\]",
        ),
        (lambda: RatioTransformer("no operator", 0.5, label="y==1"), "cannot parse predicate"),
        (lambda: RatioTransformer(3, 0.5, label="y==1"), "property must be a predicate"),
        (lambda: FunctionTransformer(3), "needs a callable"),
        (lambda: as_transformer(3), "expected a distribution transformer"),
    ],
)
def test_bad_transformers(build, message):
    with pytest.raises(DistPrivacyError, match=message) as e:
        build()
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("transformer", "kwargs", "message"),
    [
        (RatioTransformer("sex==Female", 0.5, label="y==1"), {}, "unknown column 'sex'"),
        (RatioTransformer("g==a", 0.5, label="income==1"), {}, "unknown column 'income'"),
        (RatioTransformer("g==a", 1.0, label="y==1"), {"n": 2000}, "needs .* rows .* only"),
        (RatioTransformer("g==a", 0.5, label="y==1"), {"n": 0}, "n must be a positive"),
        (RatioTransformer("g==a", 0.5, label="y==1"), {"n_datasets": 0}, "n_datasets must be"),
        (RatioTransformer("g==a", 0.5, label="y==1"), {"rows": [0, 0, 1]}, "repeated positions"),
        (RatioTransformer("g==a", 0.5, label="y==1"), {"rows": [5000]}, "rows must lie in"),
        (IdentityTransformer(), {"n": 5000}, "the pool has 3000 rows"),
        (FunctionTransformer(lambda d: np.ones(3)), {}, "returned shape"),
        (FunctionTransformer(lambda d: -np.ones(len(d))), {}, "negative or non-finite"),
        (FunctionTransformer(lambda d: (d["v"] > 0.99).to_numpy()), {"n": 500}, "keeps .* rows"),
    ],
)
def test_bad_sampling_requests(transformer, kwargs, message):
    df = _toy()
    args = {"n": 100, "n_datasets": 3, "random_state": 0, **kwargs}
    with pytest.raises(DistPrivacyError, match=message) as e:
        transformer.sample(df, **args)
    assert "\n" not in str(e.value)


def test_no_random_state_means_fresh_entropy():
    """random_state=None (once "seed is required"): fresh OS entropy, valid datasets."""
    df = _toy()
    t = RatioTransformer("g==a", 0.5, label="y==1")
    a = t.sample(df, n=100, n_datasets=3, random_state=None)
    b = t.sample(df, n=100, n_datasets=3, random_state=None)
    assert a.shape == b.shape == (3, 100) and not np.array_equal(a, b)
    assert all(np.unique(row).size == 100 for row in a)


def test_data_must_be_a_frame():
    with pytest.raises(DistPrivacyError, match="pandas DataFrame"):
        IdentityTransformer().sample(np.zeros((5, 2)), n=2, n_datasets=1, random_state=0)


def test_rows_within_a_dataset_are_in_random_order():
    df = _toy()
    f = (df["g"] == "a").to_numpy()
    idx = RatioTransformer("g==a", 0.5, label="y==1").sample(
        df, n=200, n_datasets=300, random_state=14
    )
    first_half = f[idx[:, :100]].mean()  # would be 0 if rows were grouped by stratum
    assert abs(first_half - 0.5) < 0.02
