"""Distribution inference on the user's own table: ``distprivacy models audit``.

The game of Suri & Evans (§2, Eq. 2) on any table: the rows are split at random into an
adversary's half and a victim's half; from each half, datasets of ``n_train`` rows are drawn by
the ratio filter (:class:`~distprivacy.inference.transformers.RatioTransformer`: exactly
``round(α n_train)`` rows satisfy the protected predicate, α ∈ {α0, α1}); one model of the
user's kind is fitted on each dataset. The adversary's models train the attacks
(:mod:`distprivacy.inference.attacks`); their accuracy on the victim's models, with a
Clopper–Pearson interval, says how well a model trained on such data reveals α.

The protected column stays among the features (a model trained on the user's data sees it
unless the user drops it with ``features``); the label column never does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError, require_extra
from distprivacy.inference.saved import EstimatorPopulation
from distprivacy.inference.transformers import RatioTransformer
from distprivacy.randomness import RandomState, check_random_state

__all__ = ["AuditGame", "audit_game", "make_estimator", "run_attacks"]

ESTIMATORS = ("logistic", "tree")


def make_estimator(spec: str) -> Any:
    """An unfitted classifier from ``spec``: ``logistic``, ``mlp`` (scikit-learn's
    ``MLPClassifier``, 32-16 hidden units), ``tree``, ``sklearn:MODULE:CLASS`` (imported; must
    have ``fit`` and ``predict_proba``) or ``torch:FILE.py:make``
    (:class:`~distprivacy.inference.torch_estimator.TorchEstimator`)."""
    if spec == "logistic":
        require_extra("sklearn", "the logistic estimator")
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)
    if spec == "mlp":
        require_extra("sklearn", "the mlp estimator")
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(hidden_layer_sizes=(32, 16), max_iter=300)
    if spec.startswith("torch:"):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise DistPrivacyError(
                "torch estimators need PyTorch; install it (pip install torch)"
            ) from None
        require_extra("sklearn", "torch estimators")  # TorchEstimator is a scikit-learn one
        from distprivacy.inference.torch_estimator import TorchEstimator

        return TorchEstimator(spec)
    if spec == "tree":
        require_extra("sklearn", "the tree estimator")
        from sklearn.tree import DecisionTreeClassifier

        return DecisionTreeClassifier(max_depth=5)
    if spec.startswith("sklearn:") and spec.count(":") == 2:
        import importlib

        _, module, name = spec.split(":")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise DistPrivacyError(f"cannot import {name} from {module}: {exc}") from None
        est = cls()
        if not (hasattr(est, "fit") and hasattr(est, "predict_proba")):
            raise DistPrivacyError(
                f"{module}.{name} has no fit/predict_proba; give a probabilistic classifier"
            )
        return est
    raise DistPrivacyError(
        f"unknown estimator {spec!r}; give logistic, mlp, tree, sklearn:MODULE:CLASS or "
        "torch:FILE.py:make"
    )


@dataclass
class AuditGame:
    """Feature matrix, binary labels and the four populations of the game."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    adversary: tuple[EstimatorPopulation, EstimatorPopulation]
    victim: tuple[EstimatorPopulation, EstimatorPopulation]
    test: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _design(
    data: pd.DataFrame, label: str, features: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    if label not in data.columns:
        raise DistPrivacyError(f"label column {label!r} not in the table; columns: {list(data)}")
    cols = [c for c in data.columns if c != label] if features is None else list(features)
    unknown = [c for c in cols if c not in data.columns]
    if unknown:
        raise DistPrivacyError(f"unknown feature columns {unknown}; columns: {list(data)}")
    if label in cols:
        raise DistPrivacyError(f"the label {label!r} cannot also be a feature")
    values = data[label]
    if values.isna().any():
        raise DistPrivacyError(f"label {label!r} has missing values; drop those rows first")
    classes = sorted(values.unique(), key=str)
    if len(classes) != 2:
        raise DistPrivacyError(
            f"label {label!r} has {len(classes)} distinct values; the audit needs a binary "
            "label (recode it, e.g. into two classes)"
        )
    y = (values == classes[1]).to_numpy(dtype=int)
    frame = pd.get_dummies(data[cols], dtype=float)
    if frame.isna().any().any():
        raise DistPrivacyError("the features have missing values; drop or impute them first")
    X = frame.to_numpy(dtype=float)
    scale = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    return X, y, list(frame.columns)


def audit_game(
    data: pd.DataFrame,
    *,
    label: str,
    protect: str,
    ratios: tuple[float, float],
    estimator: Any,
    n_models: int,
    n_train: int,
    n_test: int | None = None,
    features: Sequence[str] | None = None,
    random_state: RandomState = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditGame:
    """Train the adversary's and the victim's populations at ratios α0, α1 (see the module
    docstring). ``estimator``: an unfitted scikit-learn classifier (cloned for every model,
    each with its own integer ``random_state`` when it takes one). ``n_test``: rows of the
    adversary's test sets D0, D1 (ratio α0, α1, from the adversary's half; default
    ``n_train``)."""
    require_extra("sklearn", "the models audit")
    from sklearn.base import clone

    prop = RatioTransformer(protect, 0.5, preserve_label_ratio=False).property
    if prop.column == label:
        raise DistPrivacyError(f"the label {label!r} cannot be the protected column")
    if prop.column not in data.columns:
        raise DistPrivacyError(
            f"protected column {prop.column!r} not in the table; columns: {list(data)}"
        )
    X, y, names = _design(data, label, features)
    gen = check_random_state(random_state, secure=False)
    halves = np.array_split(gen.permutation(len(data)), 2)
    total, done = 4 * n_models, 0
    pops: list[EstimatorPopulation] = []
    for half in halves:
        for ratio in ratios:
            rows = RatioTransformer(protect, ratio, preserve_label_ratio=False).sample(
                data, n=n_train, n_datasets=n_models, rows=np.sort(half), random_state=gen
            )
            fitted = []
            for r in rows:
                m = clone(estimator)
                if "random_state" in m.get_params():
                    m.set_params(random_state=int(gen.integers(2**31)))
                if len(np.unique(y[r])) < 2:
                    raise DistPrivacyError(
                        f"a training set of {n_train} rows held one label only; raise n_train"
                    )
                fitted.append(m.fit(X[r], y[r]))
                done += 1
                if progress is not None:
                    progress(done, total)
            pops.append(EstimatorPopulation(fitted, {"ratio": ratio}))
    tests = []
    for ratio in ratios:
        (r,) = RatioTransformer(protect, ratio, preserve_label_ratio=False).sample(
            data,
            n=n_train if n_test is None else n_test,
            n_datasets=1,
            rows=np.sort(halves[0]),
            random_state=gen,
        )
        tests.append((X[r], y[r]))
    return AuditGame(X, y, names, (pops[0], pops[1]), (pops[2], pops[3]), (tests[0], tests[1]))


def run_attacks(game: AuditGame, random_state: RandomState = None) -> list[Any]:
    """Every applicable attack fitted on the adversary's populations and scored on the
    victim's: loss test, threshold test, black-box meta-classifier (64 query rows) and, when
    the models expose one parameter vector layout, the white-box sorted-weights
    meta-classifier."""
    from distprivacy.inference import attacks as atk

    gen = check_random_state(random_state, secure=False)
    d0, d1 = game.test
    query = np.concatenate([d0[0][:32], d1[0][:32]])
    chosen: list[Any] = [
        atk.LossTest(d0, d1),
        atk.ThresholdTest(d0, d1, random_state=int(gen.integers(2**31))),
        atk.BlackBoxMetaClassifier(query, random_state=int(gen.integers(2**31))),
    ]
    if game.adversary[0].n_parameters > 0:
        chosen.append(atk.SortedWeightsMetaClassifier(random_state=int(gen.integers(2**31))))
    return [a.fit(*game.adversary).score(*game.victim) for a in chosen]
