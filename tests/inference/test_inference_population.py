"""ModelPopulation: batched evaluation equals per-model evaluation, flat parameters, save/load,
subset/concat with per-model meta, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference import population as population_module
from distprivacy.inference.population import ModelPopulation


def _pop(m=5, sizes=(4, 3, 2, 1), seed=0, dtype=np.float64, activation="relu", meta=None):
    rng = np.random.default_rng(seed)
    W = tuple(rng.standard_normal((m, a, b)).astype(dtype) for a, b in itertools.pairwise(sizes))
    B = tuple(rng.standard_normal((m, b)).astype(dtype) for b in sizes[1:])
    return ModelPopulation(W, B, activation=activation, meta=meta or {})


def _one_logits(pop, k, X):
    """Model k alone, plain 2-D NumPy."""
    h = X
    L = len(pop.weights)
    for i in range(L):
        h = h @ pop.weights[i][k] + pop.biases[i][k]
        if i < L - 1:
            h = {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh, "identity": lambda v: v}[
                pop.activation
            ](h)
    return h[:, 0]


@pytest.mark.parametrize("activation", ["relu", "tanh", "identity"])
def test_logits_equal_each_model_alone(activation):
    pop = _pop(activation=activation)
    X = np.random.default_rng(1).standard_normal((7, 4))
    z = pop.logits(X)
    assert z.shape == (5, 7)
    for k in range(5):
        np.testing.assert_allclose(z[k], _one_logits(pop, k, X), rtol=1e-12)
    # per-model inputs (m, N, d)
    Xm = np.random.default_rng(2).standard_normal((5, 3, 4))
    zm = pop.logits(Xm)
    for k in range(5):
        np.testing.assert_allclose(zm[k], _one_logits(pop, k, Xm[k]), rtol=1e-12)


def test_chunked_evaluation_is_identical(monkeypatch):
    pop = _pop(m=9)
    X = np.random.default_rng(3).standard_normal((50, 4))
    full = pop.logits(X)
    monkeypatch.setattr(population_module, "CHUNK_BYTES", 1)  # one model per chunk
    np.testing.assert_array_equal(pop.logits(X), full)


def test_probabilities_loss_and_accuracy():
    pop = _pop()
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 4))
    y = rng.integers(0, 2, 40)
    z = pop.logits(X)
    p = pop.predict_proba(X)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-z)), rtol=1e-12)
    expected = -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(axis=1)
    np.testing.assert_allclose(pop.loss(X, y), expected, rtol=1e-9)
    np.testing.assert_allclose(pop.accuracy(X, y), ((z > 0) == y).mean(axis=1))
    # extreme logits stay finite
    big = _pop(m=1, sizes=(1, 1))
    huge = ModelPopulation((np.full((1, 1, 1), 1e4),), (np.zeros((1, 1)),))
    assert np.all(np.isfinite(huge.loss(np.array([[1.0], [-1.0]]), np.array([0, 1]))))
    assert big.n_models == 1


def test_shape_properties_and_flat_parameters():
    pop = _pop(m=3, sizes=(4, 3, 1))
    assert pop.n_models == len(pop) == 3
    assert pop.layer_sizes == (4, 3, 1)
    assert pop.n_parameters == 4 * 3 + 3 + 3 * 1 + 1
    flat = pop.flat_parameters()
    assert flat.shape == (3, pop.n_parameters)
    k = 2
    expected = np.concatenate(
        [pop.weights[0][k].ravel(), pop.biases[0][k], pop.weights[1][k].ravel(), pop.biases[1][k]]
    )
    np.testing.assert_array_equal(flat[k], expected)


def test_save_load_round_trip(tmp_path):
    pop = _pop(dtype=np.float32, meta={"property": "sex==Female", "ratio": 0.5, "label": 1,
                                       "per_model": {"seed": [1, 2, 3, 4, 5]}})  # fmt: skip
    path = pop.save(tmp_path / "victim")
    assert path.name == "victim.npz" and path.is_file()
    back = ModelPopulation.load(path)
    assert back.activation == pop.activation and back.meta == pop.meta
    assert back.dtype == np.float32
    for a, b in zip(back.weights + back.biases, pop.weights + pop.biases, strict=True):
        np.testing.assert_array_equal(a, b)


def test_subset_and_concat_keep_per_model_meta():
    g0 = _pop(m=3, seed=0, meta={"property": "sex==Female", "label": 0, "ratio": 0.5,
                                 "per_model": {"seed": [10, 11, 12]}})  # fmt: skip
    g1 = _pop(m=2, seed=1, meta={"property": "sex==Female", "label": 1, "ratio": 0.2,
                                 "per_model": {"seed": [20, 21]}})  # fmt: skip
    both = g0.concat(g1)
    assert both.n_models == 5
    assert both.meta["property"] == "sex==Female"
    assert both.meta["per_model"]["label"] == [0, 0, 0, 1, 1]
    assert both.meta["per_model"]["ratio"] == [0.5, 0.5, 0.5, 0.2, 0.2]
    assert both.meta["per_model"]["seed"] == [10, 11, 12, 20, 21]
    np.testing.assert_array_equal(both.flat_parameters()[3:], g1.flat_parameters())
    sub = both.subset([4, 0])
    assert sub.meta["per_model"]["label"] == [1, 0]
    np.testing.assert_array_equal(sub.flat_parameters()[0], g1.flat_parameters()[1])
    mask = np.array([True, False, False, True, False])
    assert both.subset(mask).meta["per_model"]["seed"] == [10, 20]
    assert both.subset(slice(1, 3)).n_models == 2
    assert g0.concat(g0).meta == g0.meta | {"per_model": {"seed": [10, 11, 12] * 2}}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ModelPopulation((), ()), "at least one layer"),
        (lambda: ModelPopulation((np.zeros((2, 3, 1)),), ()), "1 weight arrays but 0 bias"),
        (lambda: ModelPopulation((np.zeros((2, 3, 2)),), (np.zeros((2, 2)),)), "one logit"),
        (
            lambda: ModelPopulation(
                (np.zeros((2, 3, 4)), np.zeros((2, 5, 1))), (np.zeros((2, 4)), np.zeros((2, 1)))
            ),
            "sizes must chain",
        ),
        (lambda: ModelPopulation((np.zeros((2, 3, 1)),), (np.zeros((3, 1)),)), "same models"),
        (lambda: ModelPopulation((np.zeros((3, 1)),), (np.zeros((3, 1)),)), "must be (m, d_in"),
        (lambda: _pop(activation="gelu"), "unknown activation"),
        (lambda: _pop(meta={"x": np.arange(3)}), "JSON-serialisable"),
        (lambda: _pop(meta={"per_model": {"seed": [1]}}), "one entry per model"),
        (
            lambda: ModelPopulation((np.zeros((2, 3, 1), int),), (np.zeros((2, 1), int),)),
            "floating point",
        ),
    ],
)
def test_bad_populations(build, message):
    with pytest.raises(DistPrivacyError, match=message.replace("(", r"\(")) as e:
        build()
    assert "\n" not in str(e.value)


def test_bad_evaluation_inputs(tmp_path):
    pop = _pop()
    with pytest.raises(DistPrivacyError, match="X has 3 features but the models take 4"):
        pop.logits(np.zeros((2, 3)))
    with pytest.raises(DistPrivacyError, match="per-model X must be"):
        pop.logits(np.zeros((4, 2, 4)))
    with pytest.raises(DistPrivacyError, match="NaN or infinite"):
        pop.logits(np.full((2, 4), np.inf))
    with pytest.raises(DistPrivacyError, match="binary labels"):
        pop.loss(np.zeros((2, 4)), np.array([0, 2]))
    with pytest.raises(DistPrivacyError, match="y must have shape"):
        pop.accuracy(np.zeros((2, 4)), np.array([0, 1, 1]))
    with pytest.raises(DistPrivacyError, match="model indices must lie"):
        pop.subset([7])
    with pytest.raises(DistPrivacyError, match="selection is empty"):
        pop.subset([])
    with pytest.raises(DistPrivacyError, match="different architectures"):
        pop.concat(_pop(sizes=(4, 1)))
    with pytest.raises(DistPrivacyError, match="no model population file"):
        ModelPopulation.load(tmp_path / "missing.npz")
    other = tmp_path / "other.npz"
    np.savez(other, a=np.arange(3))
    with pytest.raises(DistPrivacyError, match="not a model population file"):
        ModelPopulation.load(other)
    with pytest.raises(DistPrivacyError, match="does not exist"):
        pop.save(tmp_path / "nope" / "p.npz")
