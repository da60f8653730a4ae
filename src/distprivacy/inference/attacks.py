"""Distribution inference attacks on trained models (Suri & Evans, *Formalizing Distribution
Inference Risks*, §3.2 and Appendix A.2).

The adversary holds its own models trained on datasets from G0 and from G1 (two
:class:`~distprivacy.inference.population.ModelPopulation` objects, label 0 and 1) and must say,
for each of the victim's models, which distribution it was trained on. Every attack here has the
same shape, scikit-learn style:

``attack.fit(pop0, pop1)`` (the adversary's models) → ``attack.predict(pop)`` (0/1 per model) →
``attack.score(victim0, victim1)`` (an :class:`AttackScore`: accuracy with a Clopper–Pearson
interval and the advantage |Pr[b̂=1 | b=1] − Pr[b̂=1 | b=0]| of §2).

* :class:`LossTest` — §3.2: b̂ = 𝟙[l(M, D0) > l(M, D1)] on the adversary's test sets D0 ~ G0,
  D1 ~ G1. Trains nothing.
* :class:`ThresholdTest` — §3.2 and A.2: a few of the adversary's models (50 per distribution)
  pick the test set D_k with the larger performance gap; a linear search over the adversary's
  models then picks the threshold λ (and its side) maximising their accuracy.
* :class:`SortedWeightsMetaClassifier` — a simple meta-classifier on the parameters: each hidden
  layer's neurons are put into a canonical order (sorted by the norm of their incoming weights,
  the next layer's rows permuted to match, so the network computes the same function), flattened,
  standardised, and a scikit-learn classifier (default L2 logistic regression) is trained.
* :class:`PermutationInvariantNetwork` — the meta-classifier of Ganju et al. (CCS 2018) that §3.2
  uses: per layer, a network φ_l shared by all neurons of the layer maps each neuron to a vector,
  the vectors are averaged, and ρ maps the concatenated layer summaries to a logit (or, with
  ``task="regression"``, to a real number). Written in NumPy with hand-written gradients (Adam).
* :class:`BlackBoxMetaClassifier` — a meta-classifier on the models' outputs (logits) on a fixed
  query set: black-box access suffices.
* :class:`RatioRegressor` — predicts the ratio α itself from the parameters (the regression
  variant of §3.3 / Fig. 2, right), with the permutation-invariant network.

Every random choice takes a ``random_state`` (seed or ``numpy.random.Generator``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import check_random_state

__all__ = [
    "AttackScore",
    "BlackBoxMetaClassifier",
    "LossTest",
    "PermutationInvariantNetwork",
    "Population",
    "RatioRegressor",
    "SortedWeightsMetaClassifier",
    "ThresholdTest",
    "accuracy_interval",
    "best_threshold",
    "canonical_parameters",
    "score_predictions",
]


class Population(Protocol):
    """What the attacks need of a model population (see ``inference.population``)."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    activation: str
    meta: dict

    @property
    def n_models(self) -> int: ...

    @property
    def layer_sizes(self) -> tuple[int, ...]: ...

    def logits(self, X: np.ndarray) -> np.ndarray: ...

    def predict_proba(self, X: np.ndarray) -> np.ndarray: ...

    def loss(self, X: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> np.ndarray: ...


# ------------------------------------------------------------------------------------------------
# Scores
# ------------------------------------------------------------------------------------------------


def accuracy_interval(correct: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson (exact binomial) interval for an accuracy of ``correct`` out of ``n``
    (:func:`distprivacy.intervals.binomial_ci`)."""
    from distprivacy.intervals import binomial_ci

    if n <= 0:
        raise DistPrivacyError("an accuracy needs at least one prediction; got none")
    return binomial_ci(int(correct), int(n), level=level, method="clopper-pearson")


@dataclass(frozen=True)
class AttackScore:
    """How well an attack told the victim's G0 models from its G1 models.

    Attributes
    ----------
    name : str
    accuracy : float
        Fraction of correct guesses over all victim models (equal numbers per distribution give
        the game's accuracy with a fair coin b).
    interval : (float, float)
        95 % Clopper–Pearson interval of the accuracy.
    advantage : float
        |Pr[b̂=1 | b=1] − Pr[b̂=1 | b=0]| (Suri & Evans, §2).
    n : int
        Number of victim models scored.
    """

    name: str
    accuracy: float
    interval: tuple[float, float]
    advantage: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "accuracy": self.accuracy,
            "ci95": list(self.interval),
            "advantage": self.advantage,
            "n": self.n,
        }


def score_predictions(
    pred0: np.ndarray, pred1: np.ndarray, name: str = "", level: float = 0.95
) -> AttackScore:
    """Score 0/1 guesses on models truly from G0 (``pred0``) and from G1 (``pred1``), with a
    Clopper–Pearson interval at confidence ``level``."""
    pred0 = np.asarray(pred0).astype(int).ravel()
    pred1 = np.asarray(pred1).astype(int).ravel()
    if pred0.size == 0 or pred1.size == 0:
        raise DistPrivacyError("scoring needs victim models from both distributions; one is empty")
    correct = int((pred0 == 0).sum() + (pred1 == 1).sum())
    n = pred0.size + pred1.size
    adv = abs(float(pred1.mean()) - float(pred0.mean()))
    return AttackScore(name, correct / n, accuracy_interval(correct, n, level), adv, n)


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------


def _check_population(pop: Population, what: str) -> None:
    for attr in ("weights", "biases", "n_models", "layer_sizes"):
        if not hasattr(pop, attr):
            raise DistPrivacyError(
                f"{what} must be a ModelPopulation (missing {attr!r}); load one with "
                "ModelPopulation.load or train one with train_population"
            )
    if pop.n_models < 1:
        raise DistPrivacyError(f"{what} holds no models; give a population with at least one")


def _check_pair(
    pop0: Population, pop1: Population, what: str = "the adversary's populations"
) -> None:
    _check_population(pop0, f"{what} (G0)")
    _check_population(pop1, f"{what} (G1)")
    if tuple(pop0.layer_sizes) != tuple(pop1.layer_sizes):
        raise DistPrivacyError(
            f"{what} have different architectures {tuple(pop0.layer_sizes)} and "
            f"{tuple(pop1.layer_sizes)}; train both with the same hidden layers"
        )


def _check_fitted(obj: Any, attr: str) -> None:
    if not hasattr(obj, attr):
        raise DistPrivacyError(f"{type(obj).__name__} is not fitted; call fit(pop0, pop1) first")


def _check_arch(obj: Any, pop: Population) -> None:
    _check_population(pop, "the population to attack")
    if tuple(pop.layer_sizes) != tuple(obj.layer_sizes_):
        raise DistPrivacyError(
            f"the attack was fitted on models with layers {tuple(obj.layer_sizes_)} but got "
            f"{tuple(pop.layer_sizes)}; attack models of the architecture it was trained on"
        )


def _check_data(data: Any, name: str, d_in: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    try:
        X, y = data
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be a pair (X, y) of arrays") from None
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0:
        raise DistPrivacyError(f"{name}: X must be a non-empty 2-D array, got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise DistPrivacyError(f"{name}: y must have one label per row of X ({X.shape[0]})")
    if not np.isin(y, (0, 1)).all():
        raise DistPrivacyError(f"{name}: labels y must be 0 or 1")
    if not np.isfinite(X).all():
        raise DistPrivacyError(f"{name}: X has NaN or infinite entries")
    if d_in is not None and X.shape[1] != d_in:
        raise DistPrivacyError(f"{name}: X has {X.shape[1]} features but the models take {d_in}")
    return X, y.astype(float)


class _ModelAttack(ABC):
    """Shared scoring: ``predict`` on each victim population, then :func:`score_predictions`."""

    name = "attack"

    @abstractmethod
    def predict(self, pop: Population) -> np.ndarray:
        """0/1 guess (G0/G1) for each model of ``pop``."""

    def score(self, pop0: Population, pop1: Population) -> AttackScore:
        """Accuracy on the victim's models from G0 (``pop0``) and G1 (``pop1``)."""
        return score_predictions(self.predict(pop0), self.predict(pop1), self.name)


# ------------------------------------------------------------------------------------------------
# Loss test and threshold test
# ------------------------------------------------------------------------------------------------


class LossTest(_ModelAttack):
    """Loss test (Suri & Evans §3.2): b̂ = 𝟙[l(M, D0) > l(M, D1)].

    A model should have lower loss on data from its own training distribution. Nothing is
    trained; :meth:`fit` only checks the populations' architecture.

    Parameters
    ----------
    data0, data1 : (X, y)
        The adversary's test sets D0 ~ G0(D) and D1 ~ G1(D) (features as the models take them,
        labels 0/1).
    """

    name = "loss test"

    def __init__(self, data0: tuple[Any, Any], data1: tuple[Any, Any]) -> None:
        self.data0 = data0
        self.data1 = data1

    def fit(self, pop0: Population | None = None, pop1: Population | None = None) -> LossTest:
        X0, y0 = _check_data(self.data0, "data0")
        X1, y1 = _check_data(self.data1, "data1", X0.shape[1])
        if pop0 is not None or pop1 is not None:
            _check_pair(pop0, pop1)
            if pop0.layer_sizes[0] != X0.shape[1]:
                raise DistPrivacyError(
                    f"the test sets have {X0.shape[1]} features but the models take "
                    f"{pop0.layer_sizes[0]}"
                )
        self.n_features_in_ = X0.shape[1]
        self._data = (X0, y0, X1, y1)
        return self

    def losses(self, pop: Population) -> np.ndarray:
        """(m, 2): each model's loss on D0 and on D1."""
        _check_fitted(self, "n_features_in_")
        _check_population(pop, "the population to attack")
        X0, y0, X1, y1 = self._data
        return np.stack([pop.loss(X0, y0), pop.loss(X1, y1)], axis=1)

    def predict(self, pop: Population) -> np.ndarray:
        L = self.losses(pop)
        return (L[:, 0] > L[:, 1]).astype(int)


def best_threshold(values: np.ndarray, labels: np.ndarray) -> tuple[float, int, float]:
    """The threshold λ and side s ∈ {+1, −1} maximising the accuracy of b̂ = 𝟙[s·(v − λ) > 0].

    A linear search over the midpoints between consecutive sorted values (plus both ends),
    vectorised with cumulative counts. Returns (λ, s, accuracy on the given values).
    """
    v = np.asarray(values, dtype=float)
    lab = np.asarray(labels).astype(int)
    order = np.argsort(v, kind="stable")
    v, lab = v[order], lab[order]
    n = v.size
    # Candidate k: predict 1 for the top n−k values (k = 0..n), only where v[k−1] < v[k].
    ones_below = np.r_[0, np.cumsum(lab)]  # labels 1 among the k smallest
    zeros_below = np.arange(n + 1) - ones_below
    ones_total = ones_below[-1]
    acc_up = (zeros_below + (ones_total - ones_below)) / n  # predict 1 above λ
    acc_down = 1 - acc_up  # predict 1 below λ
    valid = np.ones(n + 1, dtype=bool)
    valid[1:n] = v[1:] > v[:-1]
    acc = np.where(valid[:, None], np.stack([acc_up, acc_down], axis=1), -1.0)
    k, side = np.unravel_index(int(np.argmax(acc)), acc.shape)
    if k == 0:
        lam = v[0] - 1.0
    elif k == n:
        lam = v[-1] + 1.0
    else:
        lam = 0.5 * (v[k - 1] + v[k])
    return float(lam), (1 if side == 0 else -1), float(acc[k, side])


class ThresholdTest(_ModelAttack):
    """Threshold test (Suri & Evans §3.2, Appendix A.2).

    The adversary evaluates its own models on its test sets D0 and D1. A random subset of
    ``n_select`` models per distribution picks the set D_k on which the two distributions' models
    differ most (largest gap of the mean statistic); a linear search over all the adversary's
    models then picks λ and the side maximising their accuracy (:func:`best_threshold`).
    b̂ = 𝟙[s·(stat(M, D_k) − λ) > 0].

    Parameters
    ----------
    data0, data1 : (X, y)
        The adversary's test sets D0 ~ G0(D), D1 ~ G1(D).
    statistic : {"accuracy", "loss"}
        The performance measured (their code uses accuracy; §3.2 writes the loss).
    n_select : int
        Models per distribution used to choose k (A.2: 50).
    random_state : int, Generator or None
        Picks the ``n_select`` models.
    """

    name = "threshold test"

    def __init__(
        self,
        data0: tuple[Any, Any],
        data1: tuple[Any, Any],
        *,
        statistic: str = "accuracy",
        n_select: int = 50,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.data0 = data0
        self.data1 = data1
        self.statistic = statistic
        self.n_select = n_select
        self.random_state = random_state

    def _stats(self, pop: Population) -> np.ndarray:
        X0, y0, X1, y1 = self._data
        f = pop.accuracy if self.statistic == "accuracy" else pop.loss
        return np.stack([f(X0, y0), f(X1, y1)], axis=1)

    def fit(self, pop0: Population, pop1: Population) -> ThresholdTest:
        if self.statistic not in ("accuracy", "loss"):
            raise DistPrivacyError(
                f"statistic must be 'accuracy' or 'loss', got {self.statistic!r}"
            )
        if not isinstance(self.n_select, int | np.integer) or self.n_select < 1:
            raise DistPrivacyError(f"n_select must be a positive integer, got {self.n_select!r}")
        _check_pair(pop0, pop1)
        X0, y0 = _check_data(self.data0, "data0", pop0.layer_sizes[0])
        X1, y1 = _check_data(self.data1, "data1", pop0.layer_sizes[0])
        self._data = (X0, y0, X1, y1)
        rng = check_random_state(self.random_state, secure=False)
        S0, S1 = self._stats(pop0), self._stats(pop1)
        i0 = rng.permutation(S0.shape[0])[: self.n_select]
        i1 = rng.permutation(S1.shape[0])[: self.n_select]
        gaps = np.abs(S1[i1].mean(axis=0) - S0[i0].mean(axis=0))
        self.k_ = int(np.argmax(gaps))
        vals = np.r_[S0[:, self.k_], S1[:, self.k_]]
        labs = np.r_[np.zeros(S0.shape[0]), np.ones(S1.shape[0])]
        self.threshold_, self.side_, self.train_accuracy_ = best_threshold(vals, labs)
        self.layer_sizes_ = tuple(pop0.layer_sizes)
        return self

    def predict(self, pop: Population) -> np.ndarray:
        _check_fitted(self, "k_")
        _check_arch(self, pop)
        s = self._stats(pop)[:, self.k_]
        return (self.side_ * (s - self.threshold_) > 0).astype(int)


# ------------------------------------------------------------------------------------------------
# Meta-classifier on canonically ordered parameters
# ------------------------------------------------------------------------------------------------


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


def _default_classifier(random_state: Any) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))


class _FeatureMetaClassifier(_ModelAttack):
    """A scikit-learn classifier on fixed features of each model."""

    def __init__(self, classifier: Any = None, random_state: Any = None) -> None:
        self.classifier = classifier
        self.random_state = random_state

    @abstractmethod
    def _features(self, pop: Population) -> np.ndarray:
        """Features of each model, (m, p)."""

    def fit(self, pop0: Population, pop1: Population) -> _FeatureMetaClassifier:
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


def _seed_of(random_state: Any) -> int | None:
    if isinstance(random_state, np.random.Generator):
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

    def __init__(self, query: Any, classifier: Any = None, random_state: Any = None) -> None:
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


# ------------------------------------------------------------------------------------------------
# Permutation-invariant network (Ganju et al. 2018), NumPy with hand-written gradients
# ------------------------------------------------------------------------------------------------


def _pin_init(
    layer_sizes: Sequence[int], hidden: int, rep: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Parameters [A_0, a_0, B_0, c_0, ..., v, c] (He-normal weights, zero biases)."""
    params: list[np.ndarray] = []
    n_layers = len(layer_sizes) - 1
    for layer in range(n_layers):
        u = (layer_sizes[0] if layer == 0 else rep) + 1
        params += [
            rng.standard_normal((u, hidden)) * math.sqrt(2.0 / u),
            np.zeros(hidden),
            rng.standard_normal((hidden, rep)) * math.sqrt(2.0 / hidden),
            np.zeros(rep),
        ]
    params += [rng.standard_normal(n_layers * rep) * math.sqrt(1.0 / (n_layers * rep)), np.zeros(1)]
    return params


def _pin_forward(
    params: Sequence[np.ndarray], W: Sequence[np.ndarray], b: Sequence[np.ndarray]
) -> tuple[np.ndarray, list[tuple[np.ndarray, ...]], np.ndarray]:
    """Output (m,), per-layer caches and the concatenated layer summaries z (m, L·k).

    Layer 0: neuron j of layer 1 is the vector (W_0[:, j], b_0[j]) — the input features have a
    fixed order. Layer l > 0: neuron j of layer l+1 is (Σ_i W_l[i, j] r_i / d_l, b_l[j]) with r_i
    the representations of layer l's neurons, so any permutation of the hidden neurons leaves the
    output unchanged. φ_l(x) = relu(x A + a) B + c; the layer's summary is the mean of φ_l over
    its neurons; ρ(z) = z·v + c.
    """
    caches = []
    summaries = []
    R_prev = None
    for layer, (Wl, bl) in enumerate(zip(W, b, strict=True)):
        A, a, B, c = params[4 * layer : 4 * layer + 4]
        if layer == 0:
            X = np.concatenate([np.swapaxes(Wl, 1, 2), bl[..., None]], axis=2)
        else:
            mixed = np.matmul(np.swapaxes(Wl, 1, 2), R_prev) / Wl.shape[1]
            X = np.concatenate([mixed, bl[..., None]], axis=2)
        P1 = X @ A + a
        H = np.maximum(P1, 0.0)
        R = H @ B + c
        caches.append((X, P1, H))
        summaries.append(R.mean(axis=1))
        R_prev = R
    z = np.concatenate(summaries, axis=1)
    v, c0 = params[-2], params[-1]
    return z @ v + c0[0], caches, z


def _flat(a: np.ndarray) -> np.ndarray:
    """(m, j, c) -> (m·j, c): sums over models and neurons become one matrix product."""
    return a.reshape(-1, a.shape[-1])


def _pin_backward(
    params: Sequence[np.ndarray],
    W: Sequence[np.ndarray],
    caches: Sequence[tuple[np.ndarray, ...]],
    z: np.ndarray,
    g: np.ndarray,
) -> list[np.ndarray]:
    """Gradients of Σ_m g_m · out_m with respect to every parameter (same order as params)."""
    n_layers = len(W)
    v = params[-2]
    rep = params[3].shape[0]
    grads: list[np.ndarray] = [np.empty(0)] * len(params)
    grads[-2] = z.T @ g
    grads[-1] = np.array([g.sum()])
    dz = g[:, None] * v[None, :]
    dR_next = None
    for layer in range(n_layers - 1, -1, -1):
        A, _a, B, _c = params[4 * layer : 4 * layer + 4]
        X, P1, H = caches[layer]
        width = H.shape[1]
        dS = dz[:, layer * rep : (layer + 1) * rep]
        dR = np.broadcast_to(dS[:, None, :] / width, (dS.shape[0], width, rep))
        if dR_next is not None:
            dR = dR + dR_next
        grads[4 * layer + 2] = _flat(H).T @ _flat(dR)
        grads[4 * layer + 3] = dR.sum(axis=(0, 1))
        dP1 = (dR @ B.T) * (P1 > 0)
        grads[4 * layer] = _flat(X).T @ _flat(dP1)
        grads[4 * layer + 1] = dP1.sum(axis=(0, 1))
        if layer > 0:
            dmixed = (dP1 @ A.T)[..., :rep]
            Wl = W[layer]
            dR_next = np.matmul(Wl, dmixed) / Wl.shape[1]
    return grads


class PermutationInvariantNetwork(_ModelAttack):
    """The permutation-invariant meta-classifier of Ganju et al. (CCS 2018), used by Suri & Evans
    (§3.2) as the state-of-the-art white-box attack.

    Each layer l has its own network φ_l, shared by all neurons of the layer (a DeepSets
    encoder): φ_l maps a neuron's incoming weights and bias to a vector of size ``rep``; the
    vectors are averaged over the layer's neurons; ρ maps the concatenated layer summaries to a
    logit (``task="classification"``) or to a number (``task="regression"``). For layers after
    the first, a neuron's input combines the previous layer's neuron representations weighted
    by its incoming weights (Σ_i w_ij r_i), so the output is invariant to every permutation of
    the hidden neurons — the property Ganju et al. build the network for. Parameters are divided
    by each layer's standard deviation over the training models before use.

    Trained with Adam on the binary cross-entropy (classification) or the squared error on the
    standardised target (regression), with L2 weight decay; all models of a minibatch in one
    batched computation, gradients written out by hand (checked against finite differences in
    the tests).

    Parameters
    ----------
    hidden, rep : int
        Width of φ's hidden layer and of each neuron's representation (Suri & Evans' code: 64, 8).
    epochs, batch_size, lr, weight_decay : training settings.
    validation_fraction : float
        Share of the training models held out (at random) for early stopping: the parameters
        of the epoch with the least held-out loss are kept (``best_epoch_``); 0 trains on all
        models for ``epochs`` epochs.
    task : {"classification", "regression"}
    random_state : int, Generator or None
        Initialisation and minibatch order.
    """

    name = "meta-classifier (permutation-invariant network)"

    def __init__(
        self,
        *,
        hidden: int = 32,
        rep: int = 8,
        epochs: int = 60,
        batch_size: int = 64,
        lr: float = 3e-3,
        weight_decay: float = 1e-4,
        validation_fraction: float = 0.0,
        task: str = "classification",
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.validation_fraction = validation_fraction
        self.hidden = hidden
        self.rep = rep
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.task = task
        self.random_state = random_state

    def _validate(self) -> None:
        for name in ("hidden", "rep", "epochs", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int | np.integer) or v < 1:
                raise DistPrivacyError(f"{name} must be a positive integer, got {v!r}")
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise DistPrivacyError(f"{name} must be a finite number ≥ 0, got {v!r}")
        v = self.validation_fraction
        if not isinstance(v, int | float) or not 0 <= v < 1:
            raise DistPrivacyError(f"validation_fraction must be in [0, 1), got {v!r}")
        if self.lr == 0:
            raise DistPrivacyError("lr must be positive, got 0")
        if self.task not in ("classification", "regression"):
            raise DistPrivacyError(
                f"task must be 'classification' or 'regression', got {self.task!r}"
            )

    def _inputs(self, pop: Population) -> tuple[list[np.ndarray], list[np.ndarray]]:
        W = [
            np.asarray(w, dtype=float) / s for w, s in zip(pop.weights, self.w_scales_, strict=True)
        ]
        b = [
            np.asarray(x, dtype=float) / s for x, s in zip(pop.biases, self.b_scales_, strict=True)
        ]
        return W, b

    def fit_arrays(self, pops: Sequence[Any], targets: np.ndarray) -> PermutationInvariantNetwork:
        """Train on the models of ``pops`` (stacked in order) with one target per model."""
        self._validate()
        for i, p in enumerate(pops):
            _check_population(p, f"population {i}")
            if tuple(p.layer_sizes) != tuple(pops[0].layer_sizes):
                raise DistPrivacyError(
                    f"population {i} has layers {tuple(p.layer_sizes)}, population 0 "
                    f"{tuple(pops[0].layer_sizes)}; train all with the same hidden layers"
                )
        t = np.asarray(targets, dtype=float)
        n = sum(p.n_models for p in pops)
        if t.shape != (n,) or not np.isfinite(t).all():
            raise DistPrivacyError(f"need one finite target per model ({n}), got shape {t.shape}")
        self.layer_sizes_ = tuple(pops[0].layer_sizes)
        Ws = [
            np.concatenate([np.asarray(p.weights[k], float) for p in pops])
            for k in range(len(pops[0].weights))
        ]
        bs = [
            np.concatenate([np.asarray(p.biases[k], float) for p in pops])
            for k in range(len(pops[0].biases))
        ]
        self.w_scales_ = [float(w.std()) or 1.0 for w in Ws]
        self.b_scales_ = [float(x.std()) or 1.0 for x in bs]
        # float32 arithmetic (twice as fast; ample for a meta-classifier), float64 scales
        Ws = [(w / s).astype(np.float32) for w, s in zip(Ws, self.w_scales_, strict=True)]
        bs = [(x / s).astype(np.float32) for x, s in zip(bs, self.b_scales_, strict=True)]
        if self.task == "regression":
            self.target_mean_ = float(t.mean())
            self.target_scale_ = float(t.std()) or 1.0
            t = (t - self.target_mean_) / self.target_scale_
        t = t.astype(np.float32)
        from threadpoolctl import threadpool_limits

        # The matrices are small: one BLAS thread is many times faster than several fighting
        # for two cores (measured 30×), and the result does not depend on it.
        with threadpool_limits(limits=1, user_api="blas"):
            self._train(Ws, bs, t, n)
        return self

    def _loss(self, out: np.ndarray, t: np.ndarray) -> float:
        if self.task == "classification":
            return float(np.mean(np.logaddexp(0, out) - t * out))
        return float(0.5 * np.mean((out - t) ** 2))

    def _train(self, Ws: list[np.ndarray], bs: list[np.ndarray], t: np.ndarray, n: int) -> None:
        rng = check_random_state(self.random_state, secure=False)
        params = [
            p.astype(np.float32) for p in _pin_init(self.layer_sizes_, self.hidden, self.rep, rng)
        ]
        perm = rng.permutation(n)
        n_val = round(self.validation_fraction * n) if n >= 10 else 0
        val, train = perm[:n_val], perm[n_val:]
        m1 = [np.zeros_like(p) for p in params]
        m2 = [np.zeros_like(p) for p in params]
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        step = 0
        losses, val_losses = [], []
        best = (math.inf, 0, [p.copy() for p in params])
        for epoch in range(self.epochs):
            order = train[rng.permutation(train.size)]
            total = 0.0
            for start in range(0, train.size, self.batch_size):
                idx = order[start : start + self.batch_size]
                out, caches, z = _pin_forward(params, [w[idx] for w in Ws], [x[idx] for x in bs])
                if self.task == "classification":
                    g = (0.5 * (1 + np.tanh(out / 2)) - t[idx]) / idx.size
                else:
                    g = (out - t[idx]) / idx.size
                total += self._loss(out, t[idx]) * idx.size
                grads = _pin_backward(params, [w[idx] for w in Ws], caches, z, g)
                step += 1
                for k, (p_, g_) in enumerate(zip(params, grads, strict=True)):
                    if p_.ndim == 2 or k == len(params) - 2:
                        g_ = g_ + self.weight_decay * p_
                    m1[k] = beta1 * m1[k] + (1 - beta1) * g_
                    m2[k] = beta2 * m2[k] + (1 - beta2) * g_**2
                    mh = m1[k] / (1 - beta1**step)
                    vh = m2[k] / (1 - beta2**step)
                    params[k] = p_ - self.lr * mh / (np.sqrt(vh) + eps)
            losses.append(total / train.size)
            if n_val:
                out, _, _ = _pin_forward(params, [w[val] for w in Ws], [x[val] for x in bs])
                val_losses.append(self._loss(out, t[val]))
                if val_losses[-1] < best[0]:
                    best = (val_losses[-1], epoch + 1, [p.copy() for p in params])
        if n_val:
            self.params_ = best[2]
            self.best_epoch_ = best[1]
        else:
            self.params_ = params
            self.best_epoch_ = self.epochs
        self.loss_curve_ = np.array(losses)
        self.validation_curve_ = np.array(val_losses)

    def fit(self, pop0: Population, pop1: Population) -> PermutationInvariantNetwork:
        """Train to tell the adversary's G0 models (label 0) from its G1 models (label 1)."""
        _check_pair(pop0, pop1)
        if self.task != "classification":
            raise DistPrivacyError(
                "fit(pop0, pop1) trains a classifier; for task='regression' use RatioRegressor"
            )
        y = np.r_[np.zeros(pop0.n_models), np.ones(pop1.n_models)]
        return self.fit_arrays([pop0, pop1], y)

    def decision_function(self, pop: Population) -> np.ndarray:
        """Raw output per model: the logit of G1 (classification) or the prediction
        (regression, on the target's scale)."""
        _check_fitted(self, "params_")
        _check_arch(self, pop)
        W, b = self._inputs(pop)
        out, _, _ = _pin_forward(self.params_, W, b)
        if self.task == "regression":
            return out * self.target_scale_ + self.target_mean_
        return out

    def predict(self, pop: Population) -> np.ndarray:
        out = self.decision_function(pop)
        if self.task == "regression":
            return out
        return (out > 0).astype(int)


class RatioRegressor:
    """Predict the ratio α of the training distribution from a model's parameters (the regression
    meta-classifier of Suri & Evans §3.3, Fig. 2 right), with the permutation-invariant network.

    Parameters
    ----------
    **network : keyword arguments of :class:`PermutationInvariantNetwork` (``task`` is fixed to
        ``"regression"``).
    """

    def __init__(self, **network: Any) -> None:
        if "task" in network:
            raise DistPrivacyError("RatioRegressor always regresses; do not pass task")
        self.network = network

    @staticmethod
    def _ratios(pops: Sequence[Any], ratios: Sequence[float] | None) -> np.ndarray:
        if ratios is None:
            try:
                ratios = [float(p.meta["ratio"]) for p in pops]
            except (KeyError, TypeError, ValueError):
                raise DistPrivacyError(
                    "a population has no meta['ratio']; pass ratios=[...] (one per population)"
                ) from None
        if len(ratios) != len(pops):
            raise DistPrivacyError(f"{len(ratios)} ratios for {len(pops)} populations")
        return np.concatenate(
            [np.full(p.n_models, float(r)) for p, r in zip(pops, ratios, strict=True)]
        )

    def fit(self, pops: Sequence[Any], ratios: Sequence[float] | None = None) -> RatioRegressor:
        """Train on populations each trained at one ratio (``ratios`` or ``pop.meta['ratio']``)."""
        if not pops:
            raise DistPrivacyError("give at least one population to fit the ratio regressor")
        self.network_ = PermutationInvariantNetwork(task="regression", **self.network)
        self.network_.fit_arrays(list(pops), self._ratios(pops, ratios))
        return self

    def predict(self, pop: Population) -> np.ndarray:
        """Predicted α per model."""
        _check_fitted(self, "network_")
        return self.network_.predict(pop)

    def score(self, pops: Sequence[Any], ratios: Sequence[float] | None = None) -> float:
        """Mean squared error of the predicted α over all models of ``pops``."""
        t = self._ratios(pops, ratios)
        pred = np.concatenate([self.predict(p) for p in pops])
        return float(np.mean((pred - t) ** 2))
