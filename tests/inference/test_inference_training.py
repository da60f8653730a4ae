"""Batched training (distprivacy.inference.training): the batched models equal models trained one
at a time with the same seeds (an independent per-model reference trainer below, and
scikit-learn's MLPClassifier for one epoch), chunking and threads change nothing, learnable
tasks are learnt, bad inputs are refused with one-line errors."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.population import ModelPopulation
from distprivacy.inference.training import (
    CENSUS_HIDDEN,
    init_parameters,
    model_seeds,
    train_population,
)

# ---------------------------------------------------------------------------------------------
# A reference trainer for ONE model: plain 2-D NumPy in float64, written from the mathematics in
# the module docstring (not from the batched code): per-layer lists, explicit sigmoid, loops.
# ---------------------------------------------------------------------------------------------


def reference_train_one(
    X, y, rows, seed, *, hidden, epochs, batch_size, lr, l2, optimizer="adam", activation="relu"
):
    sizes = (X.shape[1], *hidden, 1)
    rng = np.random.default_rng(seed)
    flat = init_parameters(rng, sizes)  # Glorot-uniform, layer by layer (W then b)
    Ws, bs, pos = [], [], 0
    for d_in, d_out in itertools.pairwise(sizes):
        Ws.append(flat[pos : pos + d_in * d_out].reshape(d_in, d_out).copy())
        pos += d_in * d_out
        bs.append(flat[pos : pos + d_out].copy())
        pos += d_out
    schedule = rng.permuted(np.broadcast_to(np.arange(len(rows)), (epochs, len(rows))), axis=1)
    params = Ws + bs
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    t = 0
    for e in range(epochs):
        order = rows[schedule[e]]
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            xb, yb = X[batch].astype(np.float64), y[batch].astype(np.float64)
            acts = [xb]
            for i, (W, b) in enumerate(zip(Ws, bs, strict=True)):
                z = acts[-1] @ W + b
                if i < len(Ws) - 1:
                    z = {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh}.get(
                        activation, lambda v: v
                    )(z)
                acts.append(z)
            p = 1 / (1 + np.exp(-acts[-1][:, 0]))
            delta = (p - yb)[:, None]
            gWs, gbs = [None] * len(Ws), [None] * len(Ws)
            for i in range(len(Ws) - 1, -1, -1):
                gWs[i] = (acts[i].T @ delta + l2 * Ws[i]) / len(batch)
                gbs[i] = delta.mean(axis=0)
                if i > 0:
                    deriv = {"relu": acts[i] > 0, "tanh": 1 - acts[i] ** 2}.get(activation, 1.0)
                    delta = (delta @ Ws[i].T) * deriv
            grads = gWs + gbs
            t += 1
            for j, (prm, g) in enumerate(zip(params, grads, strict=True)):
                if optimizer == "adam":
                    m1[j] = 0.9 * m1[j] + 0.1 * g
                    m2[j] = 0.999 * m2[j] + 0.001 * g * g
                    step = lr * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
                    prm -= step * m1[j] / (np.sqrt(m2[j]) + 1e-8)
                else:
                    prm -= lr * g
    return Ws, bs


def _toy(n_rows=600, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, d))
    w = rng.standard_normal(d)
    y = (X @ w + 0.5 * rng.standard_normal(n_rows) > 0).astype(np.int8)
    return X, y


SETTINGS = {"epochs": 3, "batch_size": 64, "lr": 5e-3, "l2": 1e-3}


@pytest.mark.parametrize("hidden", [(), (8, 4), CENSUS_HIDDEN])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_batched_equals_each_model_trained_alone(hidden, optimizer):
    X, y = _toy()
    rng = np.random.default_rng(1)
    idx = np.stack([rng.choice(len(X), 250, replace=False) for _ in range(5)])  # 250 % 64 ≠ 0
    pop = train_population(
        X, y, indices=idx, hidden=hidden, random_state=7, optimizer=optimizer, dtype=np.float64,
        **SETTINGS,
    )  # fmt: skip
    seeds = pop.meta["per_model"]["seed"]
    assert seeds == model_seeds(7, 5)
    for k in range(5):
        Ws, bs = reference_train_one(
            X, y, idx[k], seeds[k], hidden=hidden, optimizer=optimizer, **SETTINGS
        )
        for layer in range(len(Ws)):
            np.testing.assert_allclose(pop.weights[layer][k], Ws[layer], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(pop.biases[layer][k], bs[layer], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("activation", ["tanh", "identity"])
def test_other_activations_equal_the_reference(activation):
    X, y = _toy()
    idx = np.stack([np.arange(0, 250), np.arange(250, 500)])
    pop = train_population(X, y, indices=idx, hidden=(6, 3), random_state=2, activation=activation,
                           dtype=np.float64, **SETTINGS)  # fmt: skip
    assert pop.activation == activation
    for k in range(2):
        Ws, bs = reference_train_one(X, y, idx[k], pop.meta["per_model"]["seed"][k], hidden=(6, 3),
                                     activation=activation, **SETTINGS)  # fmt: skip
        for layer in range(3):
            np.testing.assert_allclose(pop.weights[layer][k], Ws[layer], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(pop.biases[layer][k], bs[layer], rtol=1e-9, atol=1e-12)


def test_float32_is_close_to_float64():
    X, y = _toy()
    idx = np.stack([np.arange(0, 300), np.arange(300, 600)])
    p32 = train_population(X, y, indices=idx, random_state=3, **SETTINGS)
    p64 = train_population(X, y, indices=idx, random_state=3, dtype=np.float64, **SETTINGS)
    assert p32.dtype == np.float32 and p64.dtype == np.float64
    np.testing.assert_allclose(p32.flat_parameters(), p64.flat_parameters(), atol=1e-4)


def test_a_model_retrained_alone_is_bit_identical():
    X, y = _toy()
    rng = np.random.default_rng(2)
    idx = np.stack([rng.choice(len(X), 200, replace=False) for _ in range(6)])
    pop = train_population(X, y, indices=idx, hidden=(8,), random_state=11, **SETTINGS)
    k = 4
    alone = train_population(
        X, y, indices=idx[k : k + 1], hidden=(8,), random_state=[pop.meta["per_model"]["seed"][k]],
        **SETTINGS,
    )  # fmt: skip
    np.testing.assert_array_equal(alone.flat_parameters()[0], pop.flat_parameters()[k])


def test_chunks_threads_and_reruns_do_not_change_the_models():
    X, y = _toy()
    rng = np.random.default_rng(3)
    idx = np.stack([rng.choice(len(X), 200, replace=False) for _ in range(9)])
    kw = dict(indices=idx, hidden=(8, 4), random_state=5, **SETTINGS)
    one = train_population(X, y, **kw)
    tiny_chunks = train_population(X, y, memory_limit=1, **kw)  # one model per chunk
    threads = train_population(X, y, memory_limit=200_000, n_jobs=2, **kw)
    again = train_population(X, y, **kw)
    for other in (tiny_chunks, threads, again):
        np.testing.assert_array_equal(other.flat_parameters(), one.flat_parameters())
    other_seed = train_population(X, y, **{**kw, "random_state": 6})
    assert not np.array_equal(other_seed.flat_parameters(), one.flat_parameters())


def test_one_epoch_matches_sklearn_mlpclassifier():
    """Same initial parameters and the same row order: one epoch of our trainer equals one
    epoch of scikit-learn's MLPClassifier (adam, alpha, batch size), so the benchmark compares
    the same computation."""
    from sklearn.neural_network import MLPClassifier

    X, y = _toy(n_rows=500)
    rows = np.arange(500)
    pop = train_population(
        X, y, indices=rows[None], hidden=(16, 8), epochs=1, batch_size=64, lr=2e-3, l2=1e-3,
        random_state=9, dtype=np.float64,
    )  # fmt: skip
    seed = pop.meta["per_model"]["seed"][0]
    rng = np.random.default_rng(seed)
    sizes = (X.shape[1], 16, 8, 1)
    flat = init_parameters(rng, sizes)
    order = rng.permuted(np.arange(500)[None], axis=1)[0]
    clf = MLPClassifier(
        hidden_layer_sizes=(16, 8), solver="adam", alpha=1e-3, batch_size=64,
        learning_rate_init=2e-3, shuffle=False, max_iter=1,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.partial_fit(X[:10], y[:10], classes=[0, 1])  # builds the network
        pos, coefs, intercepts = 0, [], []
        for d_in, d_out in itertools.pairwise(sizes):
            coefs.append(flat[pos : pos + d_in * d_out].reshape(d_in, d_out).copy())
            pos += d_in * d_out
            intercepts.append(flat[pos : pos + d_out].copy())
            pos += d_out
        clf.coefs_, clf.intercepts_ = coefs, intercepts
        del clf._optimizer  # a fresh Adam state, as ours
        clf.partial_fit(X[order], y[order])
    for layer in range(3):
        np.testing.assert_allclose(pop.weights[layer][0], clf.coefs_[layer], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(pop.biases[layer][0], clf.intercepts_[layer], atol=1e-12)


def test_learnable_tasks_are_learnt():
    rng = np.random.default_rng(0)
    # linear task, separable with a margin: logistic regression
    X = rng.standard_normal((3000, 5))
    y = (X @ np.array([2.0, -1.0, 0.5, 0.0, 1.0]) > 0).astype(np.int8)
    lr_pop = train_population(X[:2000], y[:2000], n_models=8, hidden=(), epochs=30, lr=0.05,
                              random_state=1)  # fmt: skip
    assert lr_pop.layer_sizes == (5, 1)
    assert lr_pop.accuracy(X[2000:], y[2000:]).min() > 0.97
    # XOR of two signs: not linearly separable, an MLP learns it
    Z = rng.uniform(-1, 1, (4000, 2))
    yx = ((Z[:, 0] > 0) ^ (Z[:, 1] > 0)).astype(np.int8)
    mlp = train_population(Z[:3000], yx[:3000], n_models=8, hidden=(32, 16, 8), epochs=60,
                           lr=0.01, random_state=2)  # fmt: skip
    assert mlp.accuracy(Z[3000:], yx[3000:]).min() > 0.9
    lin = train_population(
        Z[:3000], yx[:3000], n_models=8, hidden=(), epochs=30, lr=0.05, random_state=2
    )
    assert lin.accuracy(Z[3000:], yx[3000:]).max() < 0.7  # the control: XOR defeats a line
    # the training loss recorded in meta is the loss on the training rows
    losses = np.array(mlp.meta["per_model"]["train_loss"])
    assert np.all(np.abs(losses - mlp.loss(Z[:3000], yx[:3000])) < 0.05)


def test_per_model_data_and_meta():
    X, y = _toy()
    Xm = np.stack([X[:200], X[200:400]])
    ym = np.stack([y[:200], y[200:400]])
    pop = train_population(
        Xm, ym, hidden=(4,), random_state=0, meta={"property": "toy"}, **SETTINGS
    )
    same = train_population(
        X, y, indices=np.stack([np.arange(200), np.arange(200, 400)]), hidden=(4,), random_state=0,
        **SETTINGS,
    )  # fmt: skip
    np.testing.assert_array_equal(pop.flat_parameters(), same.flat_parameters())
    assert isinstance(pop, ModelPopulation)
    assert pop.meta["property"] == "toy" and pop.meta["n_train"] == 200
    assert pop.meta["hidden"] == [4] and pop.meta["epochs"] == 3
    assert len(pop.meta["per_model"]["seed"]) == 2
    listed = train_population(X, y, indices=[np.arange(200), np.arange(200, 400)], hidden=(4,),
                              random_state=0, **SETTINGS)  # fmt: skip
    np.testing.assert_array_equal(listed.flat_parameters(), same.flat_parameters())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden": (32, 0)}, "hidden must be a tuple of positive"),
        ({"epochs": 0}, "epochs must be a positive integer"),
        ({"batch_size": 2.5}, "batch_size must be a positive integer"),
        ({"lr": 0.0}, "lr must be > 0"),
        ({"l2": -1.0}, "l2 must be a finite number"),
        ({"optimizer": "rmsprop"}, "unknown optimizer"),
        ({"activation": "gelu"}, "unknown activation"),
        ({"random_state": [1, 2]}, "2 seeds for 3 models"),
        ({"dtype": np.int32}, "dtype must be a floating type"),
        ({"memory_limit": 0}, "memory_limit must be a positive"),
        ({"n_jobs": 0}, "n_jobs must be a positive integer"),
        ({"indices": [np.arange(5), np.arange(6)]}, "datasets of different sizes"),
        ({"indices": np.array([[0, 1, 10_000]])}, "indices must lie in"),
        ({"indices": np.ones((2, 3))}, "indices must be (m, n) integer"),
        ({"indices": None, "n_models": None}, "pass indices"),
        ({"n_models": 4}, "n_models=4 but the data describe 3"),
    ],
)
def test_bad_training_inputs(kwargs, message):
    X, y = _toy()
    base = {"indices": np.stack([np.arange(10)] * 3), "random_state": 0}
    with pytest.raises(
        DistPrivacyError, match=message.replace("(", r"\(").replace(")", r"\)")
    ) as e:
        train_population(X, y, **{**base, **kwargs})
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("X", "y", "message"),
    [
        (np.full((4, 2), np.nan), np.zeros(4), "NaN or infinite"),
        (np.zeros((4, 2)), np.array([0, 1, 2, 1]), "binary labels 0/1"),
        (np.zeros((4, 2)), np.zeros(5), "X has 4 rows but y"),
        (np.zeros(4), np.zeros(4), "X must be"),
        (np.zeros((2, 4, 3)), np.zeros(8), "needs y of shape"),
    ],
)
def test_bad_data(X, y, message):
    with pytest.raises(DistPrivacyError, match=message):
        train_population(X, y, n_models=None if X.ndim != 2 else 2, random_state=0, epochs=1)


def test_memory_limit_bounds_the_working_set():
    """tracemalloc sees NumPy's allocations: the peak while training stays within the limit plus
    the inputs' float32 copy and the outputs."""
    import tracemalloc

    rng = np.random.default_rng(4)
    X = rng.standard_normal((2000, 42)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int8)
    idx = np.stack([rng.choice(2000, 500, replace=False) for _ in range(64)])
    limit = 2**20
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        pop = train_population(X, y, indices=idx, epochs=4, random_state=0, memory_limit=limit)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    outputs = 3 * pop.flat_parameters().nbytes  # chunks' results, their concatenation, layers
    assert peak <= limit + outputs + X.nbytes + 2**20
    from distprivacy.inference.training import _chunk_size

    chunk = _chunk_size(64, 500, pop.layer_sizes, 4, 200, 4, limit)
    assert 1 < chunk < 16  # the limit did force several chunks


def test_model_seeds():
    assert model_seeds(3, 5)[:2] == model_seeds(3, 2)  # a prefix does not depend on m
    assert len(set(model_seeds(3, 1000))) == 1000
    assert model_seeds([4, 5], 2) == [4, 5]
    with pytest.raises(DistPrivacyError, match="random_state must be"):
        model_seeds(-1, 2)
    # None (once "seed is required"): fresh entropy, one integer drawn, then as for an integer
    fresh = model_seeds(None, 3)
    assert len(fresh) == 3 and fresh != model_seeds(None, 3)
    gen_seeds = model_seeds(np.random.default_rng(5), 3)
    assert gen_seeds == model_seeds(np.random.default_rng(5), 3)
    with pytest.raises(DistPrivacyError, match="random_state must be"):
        model_seeds("five", 3)
    with pytest.raises(DistPrivacyError, match="one non-negative integer per model"):
        model_seeds([1, -2], 2)
