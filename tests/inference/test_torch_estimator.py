"""TorchEstimator: the user's PyTorch network as a scikit-learn classifier (issue 24)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.base import clone  # noqa: E402

from distprivacy.exceptions import DistPrivacyError  # noqa: E402
from distprivacy.inference.torch_estimator import (  # noqa: E402
    TORCH_EXTRA,
    TorchEstimator,
    TorchUnavailableError,
    load_torch_factory,
    parse_factory_spec,
    require_torch,
)
from distprivacy.randomness import check_random_state  # noqa: E402

NET = """
import torch

def make(n_features, n_classes):
    return torch.nn.Sequential(
        torch.nn.Linear(n_features, 8), torch.nn.ReLU(), torch.nn.Linear(8, n_classes)
    )

def not_a_module(n_features, n_classes):
    return 3
"""


@pytest.fixture
def net_file(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(NET)
    return path


def _data(n=400, seed=0):
    gen = check_random_state(seed, secure=False)
    X = gen.standard_normal((n, 3))
    y = np.where(X[:, 0] - X[:, 1] > 0, "yes", "no")  # linearly separable, string labels
    return X, y


def test_learns_a_separable_problem_and_reports_sklearn_attributes(net_file):
    X, y = _data()
    est = TorchEstimator(f"torch:{net_file}:make", epochs=30, lr=0.02, random_state=1).fit(X, y)
    assert list(est.classes_) == ["no", "yes"]
    assert est.n_features_in_ == 3
    proba = est.predict_proba(X)
    assert proba.shape == (400, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    # a separable problem: far above the 50 % of guessing
    assert est.score(X, y) > 0.9
    assert set(est.predict(X)) <= {"no", "yes"}


def test_clone_and_seeds_reproduce_bit_for_bit_and_leave_global_torch_state(net_file):
    X, y = _data()
    est = TorchEstimator(f"torch:{net_file}:make", epochs=3, random_state=7)
    before = torch.random.get_rng_state().clone()
    a = est.fit(X, y).parameters_vector()
    assert torch.equal(torch.random.get_rng_state(), before)
    b = clone(est).fit(X, y).parameters_vector()
    np.testing.assert_array_equal(a, b)
    c = clone(est).set_params(random_state=8).fit(X, y).parameters_vector()
    assert not np.array_equal(a, c)
    assert clone(est).get_params()["epochs"] == 3


def test_parameters_vector_is_named_parameters_in_registration_order(net_file):
    X, y = _data(100)
    est = TorchEstimator(load_torch_factory(f"torch:{net_file}:make"), epochs=1, random_state=0)
    est.fit(X, y)
    assert est.parameter_names() == ["0.weight", "0.bias", "2.weight", "2.bias"]
    expected = np.concatenate([p.detach().numpy().ravel() for p in est.module_.parameters()])
    np.testing.assert_array_equal(est.parameters_vector(), expected.astype(np.float64))
    assert est.parameters_vector().size == 3 * 8 + 8 + 8 * 2 + 2


def test_factory_errors_are_one_line(net_file, tmp_path):
    for spec, words in (
        (f"torch:{tmp_path / 'missing.py'}:make", "not found"),
        (f"torch:{net_file}:nope", "has no function 'nope'"),
        ("torch:no-function-here", "torch:FILE.py:FUNCTION"),
    ):
        with pytest.raises(DistPrivacyError, match=words) as err:
            load_torch_factory(spec)
        assert "\n" not in str(err.value)
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(DistPrivacyError, match=r"importing .* failed .*boom"):
        load_torch_factory(f"torch:{broken}:make")
    X, y = _data(50)
    with pytest.raises(DistPrivacyError, match=r"not a torch\.nn\.Module"):
        TorchEstimator(f"torch:{net_file}:not_a_module").fit(X, y)
    assert parse_factory_spec("torch:a/b.py:make")[1] == "make"


def test_bad_input_is_refused(net_file):
    X, y = _data(50)
    est = TorchEstimator(f"torch:{net_file}:make", epochs=1, random_state=0)
    with pytest.raises(DistPrivacyError, match="one class"):
        est.fit(X, np.zeros(50))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(DistPrivacyError, match="NaN"):
        est.fit(Xn, y)
    with pytest.raises(DistPrivacyError, match="not fitted"):
        clone(est).predict(X)
    with pytest.raises(DistPrivacyError, match="epochs"):
        clone(est).set_params(epochs=0).fit(X, y)
    est.fit(X, y)
    with pytest.raises(DistPrivacyError, match="3"):
        est.predict(X[:, :2])


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(TorchUnavailableError) as err:
        require_torch()
    assert str(err.value) == TORCH_EXTRA
    assert "pip install 'distprivacy[torch]'" in TORCH_EXTRA
