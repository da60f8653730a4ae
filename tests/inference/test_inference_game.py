"""The game (Suri & Evans §2): disjoint stratified splits, dataset sampling, models per
transformer, and the adversary's advantage / accuracy with confidence intervals checked against
SciPy, Newcombe's worked example, and coverage simulations (which do catch a too-narrow
interval)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.game import (
    absolute_ci,
    advantage,
    binomial_ci,
    difference_ci,
    sample_datasets,
    split_game,
    stratified_split,
    train_models,
)
from distprivacy.inference.transformers import RatioTransformer


def _toy(N=2000, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.random(N) < 0.3
    y = rng.random(N) < np.where(f, 0.6, 0.2)
    x = rng.standard_normal((N, 3)) + np.column_stack([f, y, np.zeros(N)])
    df = pd.DataFrame({"g": np.where(f, "a", "b"), "y": y.astype(int), "c": rng.integers(0, 3, N)})
    return df, x, y.astype(np.int8)


# ---------------------------------------------------------------------------------------------
# Splits
# ---------------------------------------------------------------------------------------------


def test_stratified_split_is_disjoint_covering_and_proportional():
    df, _, _ = _toy()
    shares = [0.5, 0.3, 0.2]
    parts = stratified_split(df, by=["g", "y==1", "c"], shares=shares, random_state=1)
    allrows = np.concatenate(parts)
    assert allrows.size == len(df) and np.unique(allrows).size == len(df)
    codes = df["g"].astype(str) + df["y"].astype(str) + df["c"].astype(str)
    for stratum in codes.unique():
        rows = np.flatnonzero(codes == stratum)
        for part, share in zip(parts, shares, strict=True):
            got = np.isin(rows, part).sum()
            assert abs(got - share * rows.size) < 1  # largest remainders: within one row
    again = stratified_split(df, by=["g", "y==1", "c"], shares=shares, random_state=1)
    for a, b in zip(parts, again, strict=True):
        np.testing.assert_array_equal(a, b)
    other = stratified_split(df, by=["g"], shares=shares, random_state=2)
    assert not np.array_equal(other[0], parts[0])


def test_split_game_on_adult(adult):
    sp = split_game(adult, property=["sex", "race"], label="income", random_state=0)
    parts = [sp.victim_train, sp.victim_test, sp.adversary_train, sp.adversary_test]
    assert sum(p.size for p in parts) == len(adult)
    assert np.unique(np.concatenate(parts)).size == len(adult)  # disjoint
    assert sp.sizes()["victim_train"] == pytest.approx(0.4 * len(adult), abs=60)
    for col, value in [("sex", "Female"), ("race", "White"), ("income", ">50K")]:
        share = (adult[col] == value).to_numpy()
        shares = [share[p].mean() for p in parts]
        assert max(shares) - min(shares) < 0.005  # stratification keeps every ratio


def test_sample_datasets_and_train_models():
    df, X, y = _toy()
    sp = split_game(df, property="g", label="y", random_state=3)
    t = RatioTransformer("g==a", 0.2, label="y==1")
    idx = sample_datasets(df, t, n=100, n_datasets=4, rows=sp.adversary_train, random_state=4)
    assert idx.shape == (4, 100) and np.all(np.isin(idx, sp.adversary_train))
    pop = train_models(df, X, y, t, rows=sp.victim_train, n=100, n_models=3, random_state=5, b=1,
                       hidden=(4,), epochs=2)  # fmt: skip
    assert pop.n_models == 3 and pop.layer_sizes == (3, 4, 1)
    assert pop.meta["label"] == 1 and pop.meta["transformer"]["ratio"] == 0.2
    assert pop.meta["ratio"] == 0.2 and pop.meta["property"] == "g==a"
    assert pop.meta["n_train"] == 100 and pop.meta["seed"] == 5
    same = train_models(df, X, y, t, rows=sp.victim_train, n=100, n_models=3, random_state=5, b=1,
                        hidden=(4,), epochs=2)  # fmt: skip
    np.testing.assert_array_equal(same.flat_parameters(), pop.flat_parameters())


# ---------------------------------------------------------------------------------------------
# Advantage and intervals
# ---------------------------------------------------------------------------------------------


def test_advantage_counts():
    b = np.array([1] * 10 + [0] * 10)
    b_hat = np.array([1] * 9 + [0] + [1] * 3 + [0] * 7)
    out = advantage(b, b_hat)
    assert (out.tpr, out.fpr, out.n1, out.n0) == (0.9, 0.3, 10, 10)
    assert out.advantage == pytest.approx(0.6)
    assert out.accuracy == pytest.approx(0.8) == pytest.approx((1 + out.tpr - out.fpr) / 2)
    flipped = advantage(b, 1 - b_hat)  # the advantage is symmetric in the guess's sign
    assert flipped.advantage == pytest.approx(out.advantage)
    assert flipped.advantage_ci == pytest.approx(out.advantage_ci)
    assert advantage(b, b).advantage == 1.0 and advantage(b, b).accuracy == 1.0
    assert set(out.to_dict()) >= {"accuracy", "advantage_ci", "method"}


def test_binomial_ci_is_the_one_of_intervals():
    """One Clopper–Pearson in the library: the game re-exports distprivacy.intervals'."""
    from distprivacy import intervals

    assert binomial_ci is intervals.binomial_ci


def test_binomial_ci_matches_scipy():
    for k, n in [(0, 20), (7, 20), (20, 20), (613, 1000)]:
        res = stats.binomtest(k, n)
        w = res.proportion_ci(confidence_level=0.9, method="wilson")
        e = res.proportion_ci(confidence_level=0.9, method="exact")
        assert binomial_ci(k, n, level=0.9) == pytest.approx((w.low, w.high), abs=1e-12)
        assert binomial_ci(k, n, level=0.9, method="clopper-pearson") == pytest.approx(
            (e.low, e.high), abs=1e-12
        )


def test_newcombe_worked_example():
    """Newcombe (1998), Stat. Med. 17:873, example (a): 56/70 − 48/80, method 10 gives
    0.0524 to 0.3339."""
    lo, hi = difference_ci(56, 70, 48, 80)
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)
    b = np.r_[np.ones(70), np.zeros(80)].astype(int)
    b_hat = np.r_[np.ones(56), np.zeros(14), np.ones(48), np.zeros(32)].astype(int)
    assert advantage(b, b_hat).advantage_ci == pytest.approx((lo, hi))
    assert absolute_ci(-0.3, -0.1) == pytest.approx((0.1, 0.3))
    assert absolute_ci(-0.1, 0.3) == (0.0, 0.3)


@pytest.mark.parametrize(
    ("method", "narrow", "narrow_max"), [("wilson", 0.6, 0.8), ("clopper-pearson", 0.2, 0.85)]
)
def test_advantage_interval_covers_the_true_advantage(method, narrow, narrow_max):
    """Simulated games (tpr 0.7, fpr 0.45, 150 models each): the 95% interval covers the true
    advantage 0.25 at least ~95% of the time (Newcombe's ≈ 0.944 here; Clopper–Pearson with
    Bonferroni is conservative, ≈ 0.999); the same check rejects an interval computed at a
    lower level but presented as 95%."""
    rng = np.random.default_rng(7)
    sims, n = 4000, 150
    k1 = rng.binomial(n, 0.7, sims)
    k0 = rng.binomial(n, 0.45, sims)

    def coverage(level):
        lo, hi = absolute_ci(*difference_ci(k1, n, k0, n, level=level, method=method))
        return np.mean((lo <= 0.25) & (0.25 <= hi))

    # binomial SE of a coverage estimate near 0.95 over 4000 games ≈ 0.0035; 0.935 is > 4 SE
    assert coverage(0.95) > 0.935
    assert coverage(narrow) < narrow_max  # a too-narrow interval is caught


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: advantage(np.array([0, 1, 2]), np.array([0, 1, 1])), "b must hold bits"),
        (lambda: advantage(np.array([0, 1]), np.array([0, 1, 1])), "same length"),
        (lambda: advantage(np.array([1, 1]), np.array([0, 1])), "both distributions"),
        (lambda: advantage(np.array([0, 1]), np.array([0, 1]), level=1.5), "level must be"),
        (lambda: advantage(np.array([0, 1]), np.array([0, 1]), method="wald"), "unknown CI"),
        (lambda: binomial_ci(5, 3), "0 ≤ k ≤ n"),
    ],
)
def test_bad_advantage_inputs(call, message):
    with pytest.raises(DistPrivacyError, match=message) as e:
        call()
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda df: stratified_split(df, by=["g"], shares=[0.5, 0.6], random_state=0), "sum to 1"),
        (lambda df: stratified_split(df, by=["g"], shares=[1.0], random_state=0), "at least two"),
        (lambda df: stratified_split(df, by=["g"], shares=[1.2, -0.2], random_state=0), "positive"),
        (
            lambda df: stratified_split(df, by=["nope"], shares=[0.5, 0.5], random_state=0),
            "unknown column",
        ),
        (
            lambda df: split_game(df, property="g", label="y", test_share=1.0, random_state=0),
            "test_share",
        ),
        (
            lambda df: split_game(df, property="sex", label="y", random_state=0),
            "unknown column 'sex'",
        ),
    ],
)
def test_bad_split_inputs(call, message):
    df, _, _ = _toy()
    with pytest.raises(DistPrivacyError, match=message) as e:
        call(df)
    assert "\n" not in str(e.value)


def test_no_random_state_means_fresh_entropy():
    """random_state=None (once "seed is required") draws fresh OS entropy, as everywhere in the
    library's simulations; train_models records the integer seed it drew, so the population can
    still be retrained bit for bit."""
    df, X, y = _toy()
    parts = stratified_split(df, by=["g"], shares=[0.5, 0.5], random_state=None)
    assert np.unique(np.concatenate(parts)).size == len(df)
    other = stratified_split(df, by=["g"], shares=[0.5, 0.5], random_state=None)
    assert not np.array_equal(parts[0], other[0])  # 2000 rows: a repeat is impossible in practice
    t = RatioTransformer("g==a", 0.5, label="y==1")
    kw = dict(rows=np.arange(1000), n=50, n_models=2, hidden=(3,), epochs=1)
    pop = train_models(df, X, y, t, random_state=None, **kw)
    seed = pop.meta["seed"]
    assert isinstance(seed, int) and seed >= 0
    again = train_models(df, X, y, t, random_state=seed, **kw)
    np.testing.assert_array_equal(again.flat_parameters(), pop.flat_parameters())
    drawn = train_models(df, X, y, t, random_state=np.random.default_rng(7), **kw)
    same = train_models(df, X, y, t, random_state=np.random.default_rng(7), **kw)
    np.testing.assert_array_equal(drawn.flat_parameters(), same.flat_parameters())
    with pytest.raises(DistPrivacyError, match="random_state must be"):
        train_models(df, X, y, t, random_state="seven", **kw)


def test_bad_train_models_inputs():
    df, X, y = _toy()
    t = RatioTransformer("g==a", 0.5, label="y==1")
    with pytest.raises(DistPrivacyError, match="features and labels of every row"):
        train_models(df, X[:10], y, t, rows=np.arange(500), n=50, n_models=2, random_state=0)
    with pytest.raises(DistPrivacyError, match="b must be 0"):
        train_models(df, X, y, t, rows=np.arange(500), n=50, n_models=2, random_state=0, b=2)
    with pytest.raises(DistPrivacyError, match="n_models must be"):
        train_models(df, X, y, t, rows=np.arange(500), n=50, n_models=0, random_state=0)


# ---------------------------------------------------------------------------------------------
# The Adult encoder the game's models train on
# ---------------------------------------------------------------------------------------------


def test_adult_encoder_gives_the_papers_42_features(adult):
    from distprivacy.inference.features import adult_encoder, binary_labels

    enc = adult_encoder()
    X = enc.fit_transform(adult)
    assert X.shape == (len(adult), 42) and X.dtype == np.float32  # Appendix A.1: 42 features
    assert len(enc.feature_names_) == 42 and "sex==Female" in enc.feature_names_
    num = X[:, :5].astype(np.float64)
    np.testing.assert_allclose(num.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(num.std(axis=0), 1, atol=1e-4)
    onehot = X[:, 8:]
    assert set(np.unique(onehot)) == {0.0, 1.0}
    np.testing.assert_array_equal(onehot.sum(axis=1), 4)  # one category of each of 4 columns
    np.testing.assert_array_equal(X[:, 5], (adult["sex"] == "Female").to_numpy())
    again = adult_encoder().fit(adult.iloc[::-1]).transform(adult)  # order of rows irrelevant
    np.testing.assert_allclose(again, X, atol=1e-5)
    y = binary_labels(adult, "income", ">50K")
    assert y.mean() == pytest.approx(0.2478, abs=1e-4)


def test_encoder_errors():
    from distprivacy.inference.features import TabularEncoder, binary_labels

    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": ["x", "y", "x"]})
    enc = TabularEncoder(numeric=["a"], onehot=["c"])
    with pytest.raises(DistPrivacyError, match="not fitted"):
        enc.transform(df)
    enc.fit(df)
    assert enc.feature_names_ == ["a", "c==x", "c==y"]
    with pytest.raises(DistPrivacyError, match="not seen when fitting"):
        enc.transform(pd.DataFrame({"a": [1.0], "c": ["z"]}))
    with pytest.raises(DistPrivacyError, match="missing from the data"):
        enc.transform(pd.DataFrame({"a": [1.0]}))
    with pytest.raises(DistPrivacyError, match="missing values"):
        enc.transform(pd.DataFrame({"a": [np.nan], "c": ["x"]}))
    with pytest.raises(DistPrivacyError, match="holds non-numbers"):
        TabularEncoder(numeric=["c"]).fit(df)
    with pytest.raises(DistPrivacyError, match="no columns"):
        TabularEncoder().fit(df)
    with pytest.raises(DistPrivacyError, match="label column 'y' is not in the data"):
        binary_labels(df, "y", 1)
    with pytest.raises(DistPrivacyError, match="no row has c == 'q'"):
        binary_labels(df, "c", "q")
