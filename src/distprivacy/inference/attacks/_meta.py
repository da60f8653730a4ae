"""Meta-classifiers on fixed features of each model: the flattened parameters in canonical neuron
order (:class:`SortedWeightsMetaClassifier`) and the outputs on a query set
(:class:`BlackBoxMetaClassifier`), each a scikit-learn classifier."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError, require_extra
from distprivacy.inference.attacks._base import (
    Population,
    _check_arch,
    _check_fitted,
    _check_pair,
    _ModelAttack,
)
from distprivacy.randomness import RandomState, SecureGenerator


def canonical_parameters(pop: Population) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Weights and biases with every hidden layer's neurons in a canonical order.

    Hidden neurons can be permuted without changing the function a network computes; sorting
    each hidden layer's neurons by the L2 norm of their incoming weights and bias (and permuting
    the next layer's rows to match) removes that symmetry, so equal networks get equal features.
    Vectorised over models with ``take_along_axis``.
    """
    W = [np.asarray(w, dtype=float) for w in pop.weights]
    b = [np.asarray(x, dtype=float) for x in pop.biases]
    for layer in range(len(W) - 1):
        key = np.sqrt((W[layer] ** 2).sum(axis=1) + b[layer] ** 2)  # (m, d_{l+1})
        order = np.argsort(-key, axis=1, kind="stable")
        W[layer] = np.take_along_axis(W[layer], order[:, None, :], axis=2)
        b[layer] = np.take_along_axis(b[layer], order, axis=1)
        W[layer + 1] = np.take_along_axis(W[layer + 1], order[:, :, None], axis=1)
    return W, b


def _flat_canonical(pop: Population) -> np.ndarray:
    W, b = canonical_parameters(pop)
    m = W[0].shape[0]
    return np.concatenate([p.reshape(m, -1) for pair in zip(W, b, strict=True) for p in pair], 1)


def _default_classifier(random_state: RandomState) -> Any:
    require_extra("sklearn", "the meta-classifier attack")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))


class _FeatureMetaClassifier(_ModelAttack):
    """A scikit-learn classifier on fixed features of each model."""

    def __init__(self, classifier: Any = None, random_state: RandomState = None) -> None:
        self.classifier = classifier
        self.random_state = random_state

    @abstractmethod
    def _features(self, pop: Population) -> np.ndarray:
        """Features of each model, (m, p)."""

    def fit(self, pop0: Population, pop1: Population) -> _FeatureMetaClassifier:
        require_extra("sklearn", "the meta-classifier attack")
        from sklearn.base import clone

        _check_pair(pop0, pop1)
        self.layer_sizes_ = tuple(pop0.layer_sizes)
        F = np.concatenate([self._features(pop0), self._features(pop1)])
        y = np.r_[np.zeros(pop0.n_models, int), np.ones(pop1.n_models, int)]
        est = clone(self.classifier) if self.classifier is not None else None
        if est is None:
            est = _default_classifier(self.random_state)
        if "random_state" in est.get_params():
            est.set_params(random_state=_seed_of(self.random_state))
        self.classifier_ = est.fit(F, y)
        return self

    def decision_function(self, pop: Population) -> np.ndarray:
        """P(G1 | model) per model."""
        _check_fitted(self, "classifier_")
        _check_arch(self, pop)
        return self.classifier_.predict_proba(self._features(pop))[:, 1]

    def predict(self, pop: Population) -> np.ndarray:
        return (self.decision_function(pop) > 0.5).astype(int)


def _seed_of(random_state: RandomState) -> int | None:
    """What a scikit-learn estimator takes: an integer seed drawn from a generator, else the
    seed (or None) as it is."""
    if isinstance(random_state, np.random.Generator | SecureGenerator):
        return int(random_state.integers(2**31 - 1))
    return random_state


class SortedWeightsMetaClassifier(_FeatureMetaClassifier):
    """Meta-classifier on the flattened parameters in canonical neuron order
    (:func:`canonical_parameters`).

    Parameters
    ----------
    classifier : scikit-learn classifier or None
        None: standardise, then L2 logistic regression (C = 0.1). Any classifier with
        ``predict_proba`` (e.g. ``HistGradientBoostingClassifier``) is accepted and cloned.
    random_state : int, Generator or None
        Passed to the classifier when it takes one.
    """

    name = "meta-classifier (sorted weights)"

    def _features(self, pop: Population) -> np.ndarray:
        return _flat_canonical(pop)


class BlackBoxMetaClassifier(_FeatureMetaClassifier):
    """Black-box meta-classifier: a classifier on each model's logits on a fixed query set.

    Parameters
    ----------
    query : array (q, d)
        Inputs every model is queried on (the adversary's own data).
    classifier, random_state
        As for :class:`SortedWeightsMetaClassifier`.
    """

    name = "meta-classifier (black-box outputs)"

    def __init__(
        self, query: Any, classifier: Any = None, random_state: RandomState = None
    ) -> None:
        super().__init__(classifier, random_state)
        self.query = query

    def _features(self, pop: Population) -> np.ndarray:
        Q = np.asarray(self.query, dtype=float)
        if Q.ndim != 2 or Q.shape[0] == 0 or not np.isfinite(Q).all():
            raise DistPrivacyError(
                f"query must be a non-empty finite 2-D array (q, d), got shape {Q.shape}"
            )
        if Q.shape[1] != pop.layer_sizes[0]:
            raise DistPrivacyError(
                f"query has {Q.shape[1]} features but the models take {pop.layer_sizes[0]}"
            )
        return np.asarray(pop.logits(Q), dtype=float)
