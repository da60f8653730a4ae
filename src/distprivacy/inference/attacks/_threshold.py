"""Attacks that train no meta-classifier (Suri & Evans §3.2, Appendix A.2): the loss test and
the threshold test on the adversary's test sets D0, D1."""

from __future__ import annotations

from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.attacks._base import (
    Population,
    _check_arch,
    _check_data,
    _check_fitted,
    _check_pair,
    _check_population,
    _ModelAttack,
)
from distprivacy.randomness import RandomState, check_random_state


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
        random_state: RandomState = None,
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
        gen = check_random_state(self.random_state, secure=False)
        S0, S1 = self._stats(pop0), self._stats(pop1)
        i0 = gen.permutation(S0.shape[0])[: self.n_select]
        i1 = gen.permutation(S1.shape[0])[: self.n_select]
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
