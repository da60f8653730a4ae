"""Fitting shadow populations (inference/_fit.py): the batched Newton logistic regression is
scikit-learn's optimum; parallel fits do not depend on the number of workers."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from distprivacy.inference._fit import batchable_logistic, fit_models, newton_logistic
from distprivacy.randomness import check_random_state


@pytest.fixture(scope="module")
def data():
    gen = check_random_state(0, secure=False)
    X = gen.standard_normal((2000, 6))
    y = (X @ gen.standard_normal(6) + gen.standard_normal(2000) > 0).astype(int)
    rows = np.stack([gen.choice(2000, 300, replace=False) for _ in range(5)])
    return X, y, rows


@pytest.mark.parametrize("C", [1.0, 0.05])
def test_newton_matches_scikit_learn(data, C):
    # The L2 objective is strictly convex: one minimiser. scikit-learn run to a gradient
    # tolerance of 1e-10 lands on it to ~1e-7; Newton's stops at 1e-8 relative.
    X, y, rows = data
    coef, inter, _ = newton_logistic(X, y, rows, C)
    for r, w, b in zip(rows, coef, inter, strict=True):
        ref = LogisticRegression(C=C, tol=1e-10, max_iter=10_000).fit(X[r], y[r])
        np.testing.assert_allclose(w, ref.coef_[0], atol=1e-5)
        np.testing.assert_allclose(b, ref.intercept_[0], atol=1e-5)


def test_batched_models_are_usable_logistic_regressions(data):
    X, y, rows = data
    models = fit_models(LogisticRegression(), X, y, rows, np.random.default_rng(0), n_classes=2)
    ref = LogisticRegression(tol=1e-10).fit(X[rows[0]], y[rows[0]])
    np.testing.assert_allclose(models[0].predict_proba(X), ref.predict_proba(X), atol=1e-6)
    assert not batchable_logistic(LogisticRegression(class_weight="balanced"), 2)
    assert not batchable_logistic(LogisticRegression(), 3)


@pytest.mark.slow
def test_parallel_fits_do_not_depend_on_workers(data):
    X, y, rows = data
    est = DecisionTreeClassifier(max_depth=3, max_features=2)  # random feature choice
    one = fit_models(est, X, y, rows, np.random.default_rng(1), n_classes=2, n_jobs=1)
    two = fit_models(est, X, y, rows, np.random.default_rng(1), n_classes=2, n_jobs=2)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
