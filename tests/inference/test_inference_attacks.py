"""Attacks of Suri & Evans §3.2 on synthetic model populations built to leak and not to leak.

Tolerances: when the two populations are drawn from the same distribution, an attack's guesses
are independent of the victim's labels, so its accuracy on n victim models is exactly
Binomial(n, 1/2)/n; we accept the central 99.9 % of that law. "Near 100 %" means the
Clopper–Pearson 95 % lower bound is above 0.9.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.attacks import (
    BlackBoxMetaClassifier,
    LossTest,
    PermutationInvariantNetwork,
    RatioRegressor,
    SortedWeightsMetaClassifier,
    ThresholdTest,
    _pin_backward,
    _pin_forward,
    _pin_init,
    accuracy_interval,
    best_threshold,
    canonical_parameters,
    score_predictions,
)
from distprivacy.inference.population import ModelPopulation

SIZES = (6, 8, 4, 1)


def mlp_population(m: int, seed: int, shift: float = 0.0, ratio: float | None = None):
    """Random MLPs; ``shift`` is added to every weight leaving input feature 0 (a property that
    survives any permutation of the hidden neurons)."""
    rng = np.random.default_rng(seed)
    W = [rng.standard_normal((m, a, b)) / np.sqrt(a) for a, b in itertools.pairwise(SIZES)]
    b = [0.1 * rng.standard_normal((m, b)) for b in SIZES[1:]]
    W[0][:, 0, :] += shift
    meta = {} if ratio is None else {"ratio": ratio}
    return ModelPopulation(tuple(W), tuple(b), "relu", meta)


def logistic_population(m: int, w: np.ndarray, seed: int, spread: float = 0.3):
    rng = np.random.default_rng(seed)
    W = w[None, :, None] + spread * rng.standard_normal((m, w.size, 1))
    return ModelPopulation((W,), (np.zeros((m, 1)),), "relu", {})


def chance_band(n: int, level: float = 0.999) -> tuple[float, float]:
    a = (1 - level) / 2
    return stats.binom.ppf(a, n, 0.5) / n, stats.binom.isf(a, n, 0.5) / n


def linear_data(w: np.ndarray, n: int, seed: int):
    X = np.random.default_rng(seed).standard_normal((n, w.size))
    return X, (X @ w > 0).astype(int)


D = 4
W0 = np.array([3.0, 0.0, 0.0, 0.0])
W1 = np.array([0.0, 3.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def leaky_linear():
    return {
        "adv": (logistic_population(100, W0, 1), logistic_population(100, W1, 2)),
        "vic": (logistic_population(100, W0, 3), logistic_population(100, W1, 4)),
        "d0": linear_data(W0, 300, 5),
        "d1": linear_data(W1, 300, 6),
    }


@pytest.fixture(scope="module")
def null_linear():
    return {
        "adv": (logistic_population(100, W0, 11), logistic_population(100, W0, 12)),
        "vic": (logistic_population(200, W0, 13), logistic_population(200, W0, 14)),
        "d0": linear_data(W0, 300, 15),
        "d1": linear_data(W1, 300, 16),
    }


@pytest.fixture(scope="module")
def leaky_mlp():
    return (
        (mlp_population(300, 1), mlp_population(300, 2, shift=0.8)),
        (mlp_population(100, 3), mlp_population(100, 4, shift=0.8)),
    )


@pytest.fixture(scope="module")
def null_mlp():
    return (
        (mlp_population(300, 21), mlp_population(300, 22)),
        (mlp_population(200, 23), mlp_population(200, 24)),
    )


def near_perfect(score) -> bool:
    return score.interval[0] > 0.9


def at_chance(score) -> bool:
    lo, hi = chance_band(score.n)
    return lo <= score.accuracy <= hi


# ------------------------------------------------------------------------------- loss/threshold
def test_loss_test_leaks_and_not(leaky_linear, null_linear):
    s = LossTest(leaky_linear["d0"], leaky_linear["d1"]).fit(*leaky_linear["adv"])
    assert near_perfect(s.score(*leaky_linear["vic"]))
    s0 = LossTest(null_linear["d0"], null_linear["d1"]).fit(*null_linear["adv"])
    assert at_chance(s0.score(*null_linear["vic"]))


def test_threshold_test_leaks_and_not(leaky_linear, null_linear):
    for statistic in ("accuracy", "loss"):
        t = ThresholdTest(
            leaky_linear["d0"], leaky_linear["d1"], statistic=statistic, random_state=0
        ).fit(*leaky_linear["adv"])
        assert near_perfect(t.score(*leaky_linear["vic"]))
    t0 = ThresholdTest(null_linear["d0"], null_linear["d1"], random_state=0)
    assert at_chance(t0.fit(*null_linear["adv"]).score(*null_linear["vic"]))


def test_threshold_beats_loss_test_when_one_distribution_is_easier():
    """§3.2's reason for the threshold test: if every model does better on D1 the loss test
    always says G0-or-G1 the same way; the threshold test reads the size of the gap."""
    w = np.array([3.0, 0.0, 0.0, 0.0])
    adv = (logistic_population(100, w, 1, 0.2), logistic_population(100, 2 * w, 2, 0.2))
    vic = (logistic_population(100, w, 3, 0.2), logistic_population(100, 2 * w, 4, 0.2))
    d = linear_data(w, 400, 7)
    loss = LossTest(d, d).fit(*adv).score(*vic)
    thr = ThresholdTest(d, d, statistic="loss", random_state=0).fit(*adv).score(*vic)
    assert loss.accuracy == 0.5  # equal test sets: l(M, D0) > l(M, D1) never holds
    assert near_perfect(thr)


def test_best_threshold_is_optimal_by_brute_force():
    rng = np.random.default_rng(0)
    v = np.round(rng.standard_normal(60), 1)  # ties
    lab = (v + rng.standard_normal(60) > 0).astype(int)
    lam, side, acc = best_threshold(v, lab)
    assert acc == np.mean((side * (v - lam) > 0) == lab)
    cands = np.r_[v, v - 1e-9, v + 1e-9, -10, 10]
    brute = max(np.mean((s * (v - c) > 0) == lab) for c in cands for s in (1, -1))
    assert acc == pytest.approx(brute)


# ------------------------------------------------------------------------------- white-box
def test_canonical_parameters_undo_hidden_permutations():
    pop = mlp_population(5, 0)
    rng = np.random.default_rng(1)
    W = [w.copy() for w in pop.weights]
    b = [x.copy() for x in pop.biases]
    for layer in range(len(W) - 1):
        perm = rng.permutation(W[layer].shape[2])
        W[layer], b[layer] = W[layer][:, :, perm], b[layer][:, perm]
        W[layer + 1] = W[layer + 1][:, perm, :]
    perm_pop = ModelPopulation(tuple(W), tuple(b), "relu", {})
    X = rng.standard_normal((20, SIZES[0]))
    np.testing.assert_allclose(perm_pop.logits(X), pop.logits(X), rtol=1e-10, atol=1e-12)
    Wc, bc = canonical_parameters(pop)
    Wp, bp = canonical_parameters(perm_pop)
    for a, c in zip(Wc + bc, Wp + bp, strict=True):
        np.testing.assert_allclose(a, c)
    # ...and the canonical network computes the same function.
    canon = ModelPopulation(tuple(Wc), tuple(bc), "relu", {})
    np.testing.assert_allclose(canon.logits(X), pop.logits(X), rtol=1e-10, atol=1e-12)
    # A network whose hidden neurons were NOT permuted consistently differs (the test can fail).
    W[1] = W[1][:, ::-1, :]
    broken = ModelPopulation(tuple(W), tuple(b), "relu", {})
    assert not np.allclose(canonical_parameters(broken)[0][1], Wc[1])


def test_pin_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    pop = mlp_population(3, 5)
    W = [np.asarray(w, float) for w in pop.weights]
    b = [np.asarray(x, float) for x in pop.biases]
    params = _pin_init(SIZES, 5, 3, rng)
    params = [p + 0.1 * rng.standard_normal(p.shape) for p in params]  # non-zero biases
    g = rng.standard_normal(3)
    _, caches, z = _pin_forward(params, W, b)
    grads = _pin_backward(params, W, caches, z, g)
    h = 1e-6
    for k, p in enumerate(params):
        for idx in list(np.ndindex(p.shape))[:6]:
            old = p[idx]
            p[idx] = old + h
            up = g @ _pin_forward(params, W, b)[0]
            p[idx] = old - h
            down = g @ _pin_forward(params, W, b)[0]
            p[idx] = old
            assert grads[k][idx] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-7)


def test_pin_output_is_invariant_to_hidden_permutations():
    rng = np.random.default_rng(2)
    pop = mlp_population(4, 7)
    params = _pin_init(SIZES, 6, 3, rng)
    W = [np.asarray(w, float) for w in pop.weights]
    b = [np.asarray(x, float) for x in pop.biases]
    ref = _pin_forward(params, W, b)[0]
    for layer in range(len(W) - 1):
        perm = rng.permutation(W[layer].shape[2])
        W[layer], b[layer] = W[layer][:, :, perm], b[layer][:, perm]
        W[layer + 1] = W[layer + 1][:, perm, :]
    np.testing.assert_allclose(_pin_forward(params, W, b)[0], ref, rtol=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        lambda: SortedWeightsMetaClassifier(random_state=0),
        lambda: PermutationInvariantNetwork(epochs=30, random_state=0),
    ],
    ids=["sorted-weights", "pin"],
)
def test_meta_classifiers_leak_and_not(make, leaky_mlp, null_mlp):
    (a0, a1), (v0, v1) = leaky_mlp
    assert near_perfect(make().fit(a0, a1).score(v0, v1))
    (a0, a1), (v0, v1) = null_mlp
    assert at_chance(make().fit(a0, a1).score(v0, v1))


def test_black_box_meta_classifier_leaks_and_not(leaky_linear, null_linear):
    query = np.random.default_rng(9).standard_normal((30, D))
    for case, check in ((leaky_linear, near_perfect), (null_linear, at_chance)):
        attack = BlackBoxMetaClassifier(query, random_state=0).fit(*case["adv"])
        assert check(attack.score(*case["vic"]))


def test_pin_is_reproducible_and_learns():
    a0, a1 = mlp_population(60, 1), mlp_population(60, 2, 0.8)
    p1 = PermutationInvariantNetwork(epochs=5, random_state=3).fit(a0, a1)
    p2 = PermutationInvariantNetwork(epochs=5, random_state=3).fit(a0, a1)
    np.testing.assert_array_equal(p1.decision_function(a0), p2.decision_function(a0))
    assert p1.loss_curve_[-1] < p1.loss_curve_[0]


def test_pin_early_stopping_keeps_the_best_held_out_epoch():
    a0, a1 = mlp_population(60, 1), mlp_population(60, 2, 0.8)
    p = PermutationInvariantNetwork(epochs=6, validation_fraction=0.25, random_state=0)
    p.fit(a0, a1)
    assert p.validation_curve_.shape == (6,)
    assert p.best_epoch_ == 1 + int(np.argmin(p.validation_curve_))
    with pytest.raises(DistPrivacyError, match="validation_fraction"):
        PermutationInvariantNetwork(validation_fraction=1.0).fit(a0, a1)


def test_ratio_regression_recovers_alpha():
    ratios = [0.0, 0.25, 0.5, 0.75, 1.0]
    train = [mlp_population(80, 100 + i, shift=1.2 * r, ratio=r) for i, r in enumerate(ratios)]
    test = [mlp_population(40, 200 + i, shift=1.2 * r, ratio=r) for i, r in enumerate(ratios)]
    reg = RatioRegressor(epochs=40, random_state=0).fit(train)
    mse = reg.score(test)
    assert 1 - mse / np.var(ratios) > 0.8  # R² > 0.8: far better than predicting the mean α
    # unseen ratio between the training ones
    mid = reg.predict(mlp_population(40, 300, shift=1.2 * 0.6))
    assert abs(np.median(mid) - 0.6) < 0.15


# ------------------------------------------------------------------------------- scores
def test_score_and_interval():
    s = score_predictions(np.array([0, 0, 1, 0]), np.array([1, 1, 1, 0]))
    assert s.accuracy == 6 / 8
    assert s.advantage == pytest.approx(0.75 - 0.25)
    lo, hi = accuracy_interval(6, 8)
    assert (lo, hi) == s.interval
    # Clopper–Pearson: at the bounds the binomial tail equals 2.5 %
    assert stats.binom.sf(5, 8, lo) == pytest.approx(0.025, rel=1e-6)
    assert stats.binom.cdf(6, 8, hi) == pytest.approx(0.025, rel=1e-6)


# ------------------------------------------------------------------------------- bad input
def test_bad_inputs_have_one_line_errors(leaky_linear, leaky_mlp):
    (a0, a1), _ = leaky_mlp
    d0, d1 = leaky_linear["d0"], leaky_linear["d1"]
    cases = [
        (lambda: SortedWeightsMetaClassifier().predict(a0), "not fitted"),
        (lambda: SortedWeightsMetaClassifier().fit(a0, leaky_linear["adv"][0]), "architectures"),
        (lambda: SortedWeightsMetaClassifier().fit(a0, "x"), "must be a ModelPopulation"),
        (lambda: LossTest(d0, (d1[0], d1[1][:-1])).fit(), "one label per row"),
        (lambda: LossTest(d0, (d1[0], d1[1] - 0.5)).fit(), "class indices"),
        (lambda: LossTest(d0, d1).fit(a0, a1), "features but the models take"),
        (lambda: ThresholdTest(d0, d1, statistic="auc").fit(*leaky_linear["adv"]), "statistic"),
        (lambda: ThresholdTest(d0, d1, n_select=0).fit(*leaky_linear["adv"]), "n_select"),
        (lambda: PermutationInvariantNetwork(epochs=0).fit(a0, a1), "epochs"),
        (lambda: PermutationInvariantNetwork(lr=float("nan")).fit(a0, a1), "lr"),
        (lambda: PermutationInvariantNetwork(task="ranking").fit(a0, a1), "task"),
        (lambda: BlackBoxMetaClassifier(np.ones((3, 2))).fit(a0, a1), "query has 2 features"),
        (lambda: RatioRegressor().fit([a0]), "ratio"),
        (lambda: RatioRegressor(task="classification"), "always regresses"),
        (lambda: score_predictions(np.array([]), np.array([1])), "both distributions"),
    ]
    for fn, text in cases:
        with pytest.raises(DistPrivacyError, match=text) as e:
            fn()
        assert "\n" not in str(e.value)
    fitted = SortedWeightsMetaClassifier().fit(a0, a1)
    with pytest.raises(DistPrivacyError, match="fitted on models with layers"):
        fitted.predict(leaky_linear["adv"][0])


# ------------------------------------------------------------------------------- end to end
def _trained(ratio: float, m: int, seed: int, n: int = 200):
    """Models trained (batched, distprivacy.inference.training) on data where the share of a
    binary property p changes the labelling rule: y = 1[x1 + 2·p·x2 > 0]."""
    from distprivacy.inference.training import train_population

    rng = np.random.default_rng(seed)
    p = (rng.random((m, n)) < ratio).astype(float)
    x = rng.standard_normal((m, n, 2))
    X = np.concatenate([p[..., None], x], axis=2)
    y = (x[..., 0] + 2 * p * x[..., 1] > 0).astype(int)
    return train_population(X, y, hidden=(6,), epochs=15, batch_size=50, lr=1e-2, random_state=seed)


def _data(ratio: float, n: int, seed: int):
    rng = np.random.default_rng(seed)
    p = (rng.random(n) < ratio).astype(float)
    x = rng.standard_normal((n, 2))
    return np.column_stack([p, x]), (x[:, 0] + 2 * p * x[:, 1] > 0).astype(int)


@pytest.mark.parametrize(("r1", "check"), [(0.9, near_perfect), (0.1, at_chance)])
def test_attacks_on_trained_models(r1, check):
    """Near 100 % when G1 holds 90 % of the property against 10 % for G0; chance when both are
    at 10 % (the guesses are then independent of the labels: exact binomial band)."""
    adv = (_trained(0.1, 80, 1), _trained(r1, 80, 2))
    vic = (_trained(0.1, 100, 3), _trained(r1, 100, 4))
    d0, d1 = _data(0.1, 400, 5), _data(r1, 400, 6)
    for attack in (
        LossTest(d0, d1),
        ThresholdTest(d0, d1, random_state=0),
        PermutationInvariantNetwork(epochs=20, random_state=0),
        BlackBoxMetaClassifier(d0[0][:20], random_state=0),
    ):
        assert check(attack.fit(*adv).score(*vic)), attack.name
