"""Saved populations (safetensors for PyTorch, skops for scikit-learn; never pickle) and the
adapter the attacks read (issue 24)."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.attacks import LossTest, SortedWeightsMetaClassifier
from distprivacy.inference.saved import (
    EstimatorPopulation,
    attack_features,
    load_population,
    model_parameters,
    save_population,
)
from distprivacy.randomness import check_random_state

NET = """
import torch

def make(n_features, n_classes):
    return torch.nn.Sequential(torch.nn.Linear(n_features, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, n_classes))
"""


class HomeMadeClassifier(LogisticRegression):
    """A type skops does not know: loading a file holding it must be refused."""


def _data(n, ratio, seed):
    """Rows with a binary property f in share ``ratio``; the label depends on x and on f."""
    gen = check_random_state(seed, secure=False)
    f = (gen.random(n) < ratio).astype(float)
    x = gen.standard_normal((n, 2))
    X = np.column_stack([x, f])
    y = ((x[:, 0] + 1.5 * f - 0.75 + 0.5 * gen.standard_normal(n)) > 0).astype(int)
    return X, y


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_torch_population_round_trip(tmp_path):
    pytest.importorskip("torch")
    from distprivacy.inference.torch_estimator import TorchEstimator

    net = tmp_path / "net.py"
    net.write_text(NET)
    X, y = _data(200, 0.5, 0)
    models = [
        TorchEstimator(f"torch:{net}:make", epochs=2, random_state=s).fit(X, y) for s in range(3)
    ]
    meta = {"ratio": 0.5, "feature_names": ["a", "b", "f"], "label": 0}
    path = save_population(tmp_path / "pop", models, meta)
    assert path.suffix == ".safetensors" and _mode(path) == 0o600
    # no pickle anywhere: the header is JSON in the safetensors metadata
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as fh:
        header = json.loads(fh.metadata()["distprivacy"])
    assert header["factory"] == f"torch:{net}:make" and header["n_models"] == 3
    assert header["seeds"] == [m.seed_ for m in models]
    # the saved factory runs code: it is imported only when the caller names it
    with pytest.raises(DistPrivacyError, match="pass it explicitly") as err:
        load_population(path)
    assert f"torch:{net}:make" in str(err.value) and "\n" not in str(err.value)
    pop = load_population(path, factory=f"torch:{net}:make")
    assert pop.n_models == 3 and pop.meta["ratio"] == 0.5
    assert pop.meta["feature_names"] == ["a", "b", "f"]
    for i, m in enumerate(models):
        np.testing.assert_array_equal(pop.parameter_matrix()[i], m.parameters_vector())
        np.testing.assert_allclose(pop.predict_proba(X)[i], m.predict_proba(X)[:, 1], rtol=1e-6)
    # a header whose training settings hold an unknown key is refused, not passed on
    from safetensors.numpy import save_file

    header["params"]["evil"] = 1
    bad = tmp_path / "bad.safetensors"
    save_file({"m0/x": np.zeros(1)}, str(bad), metadata={"distprivacy": json.dumps(header)})
    with pytest.raises(DistPrivacyError, match="damaged population header"):
        load_population(bad, factory=f"torch:{net}:make")


@pytest.mark.slow
def test_sklearn_population_round_trip_and_trusted_types(tmp_path):
    X, y = _data(200, 0.5, 1)
    models = [LogisticRegression(C=c).fit(X, y) for c in (0.1, 1.0)]
    path = save_population(tmp_path / "lr", models, {"ratio": 0.5})
    assert path.suffix == ".skops" and _mode(path) == 0o600
    pop = load_population(path)
    np.testing.assert_allclose(pop.predict_proba(X)[1], models[1].predict_proba(X)[:, 1])
    np.testing.assert_array_equal(
        pop.parameter_matrix()[0], np.r_[models[0].coef_.ravel(), models[0].intercept_]
    )
    # trees: scikit-learn's own Tree type is on the explicit trusted list
    tree = save_population(tmp_path / "tree", [DecisionTreeClassifier().fit(X, y)], {})
    assert load_population(tree).accuracy(X, y)[0] == 1.0
    # an unknown type is refused with one line, unless named
    odd = save_population(tmp_path / "odd", [HomeMadeClassifier().fit(X, y)], {})
    with pytest.raises(DistPrivacyError, match=r"not trusted: .*HomeMadeClassifier") as err:
        load_population(odd)
    assert "\n" not in str(err.value)
    name = f"{__name__}.HomeMadeClassifier"
    assert load_population(odd, trusted=[name]).n_models == 1


def test_files_are_refused_cleanly(tmp_path):
    X, y = _data(50, 0.5, 2)
    lr = LogisticRegression().fit(X, y)
    (tmp_path / "dir.skops").mkdir()
    with pytest.raises(DistPrivacyError):
        save_population(tmp_path / "dir.skops", [lr], {})
    with pytest.raises(DistPrivacyError, match="JSON"):
        save_population(tmp_path / "x", [lr], {"a": np.arange(2)})
    with pytest.raises(DistPrivacyError, match="not found"):
        load_population(tmp_path / "none.skops")
    junk = tmp_path / "junk.skops"
    junk.write_bytes(b"not a zip")
    with pytest.raises(DistPrivacyError, match="not a readable skops"):
        load_population(junk)
    other = tmp_path / "x.pkl"
    other.write_bytes(b"")
    with pytest.raises(DistPrivacyError, match="neither"):
        load_population(other)
    old = tmp_path / "old.skops"
    old.write_text("x")
    os.chmod(old, 0o644)
    save_population(old, [lr], {})
    assert _mode(old) == 0o600
    with pytest.raises(DistPrivacyError, match="black-box"):
        model_parameters(DecisionTreeClassifier().fit(X, y))


@pytest.mark.slow
def test_saved_populations_feed_the_attacks(tmp_path):
    """Shadow and victim logistic regressions trained on datasets with property share 0.2 (G0)
    or 0.8 (G1): loaded from skops files, the white-box meta-classifier and the loss test of
    inference.attacks tell them apart far above chance (f shifts the intercept and coefficient
    of f by about 1.5 × Δratio)."""

    def population(ratio, label, seed, n_models=12):
        models = [
            LogisticRegression().fit(*_data(300, ratio, seed * 1000 + i)) for i in range(n_models)
        ]
        path = save_population(tmp_path / f"p{seed}", models, {"ratio": ratio, "label": label})
        return load_population(path)

    shadow0, shadow1 = population(0.2, 0, 1), population(0.8, 1, 2)
    victim0, victim1 = population(0.2, 0, 3), population(0.8, 1, 4)
    assert shadow0.layer_sizes == (3, 4)
    meta = SortedWeightsMetaClassifier(random_state=0).fit(shadow0, shadow1)
    score = meta.score(victim0, victim1)
    assert score.interval[0] > 0.5, score
    test = LossTest(_data(2000, 0.2, 99), _data(2000, 0.8, 98)).fit(shadow0, shadow1)
    assert test.score(victim0, victim1).interval[0] > 0.5
    F = attack_features(victim0, _data(7, 0.5, 5)[0])
    assert F.shape == (12, 7)
    assert attack_features(victim0, white_box=True).shape == (12, 4)
    with pytest.raises(DistPrivacyError, match="query"):
        attack_features(victim0)


def test_multiclass_models_give_every_class_and_mixed_class_sets_are_refused():
    gen = check_random_state(0, secure=False)
    X = gen.standard_normal((60, 2))
    y = np.arange(60) % 3
    three = LogisticRegression().fit(X, y)
    pop = EstimatorPopulation([three, three])
    P = three.predict_proba(X)
    # (m, N·K) probabilities, row by row; loss = cross-entropy; accuracy = arg-max's.
    np.testing.assert_allclose(pop.predict_proba(X)[0], P.ravel())
    np.testing.assert_allclose(pop.logits(X)[1], np.log(P).ravel())
    np.testing.assert_allclose(pop.loss(X, y), -np.log(P[np.arange(60), y]).mean())
    np.testing.assert_allclose(pop.accuracy(X, y), (P.argmax(1) == y).mean())
    two = LogisticRegression().fit(X, y % 2)
    with pytest.raises(DistPrivacyError, match="different sets of classes"):
        EstimatorPopulation([three, two]).predict_proba(X)
    with pytest.raises(DistPrivacyError, match=r"label 0\.\.2"):
        pop.loss(X, y + 1)


def test_the_cli_loader_reads_every_kind(tmp_path):
    from distprivacy.commands._models_saved import load_any
    from distprivacy.inference.population import ModelPopulation

    X, y = _data(80, 0.5, 6)
    path = save_population(tmp_path / "lr", [LogisticRegression().fit(X, y)], {"ratio": 0.5})
    pop = load_any(str(path))
    assert isinstance(pop, EstimatorPopulation) and pop.n_parameters == 4
    assert pop.activation == "identity" and pop.meta == {"ratio": 0.5}
    npz = ModelPopulation((np.zeros((2, 3, 1)),), (np.zeros((2, 1)),), "relu", {}).save(
        tmp_path / "m"
    )
    assert isinstance(load_any(str(npz)), ModelPopulation)
