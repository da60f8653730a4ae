"""Property inference attacks on released statistics: does a defence actually work?

* :class:`MetaClassifierAttack` — Chen & Ohrimenko (2023), §5.3 (after Ateniese et al. 2015 and
  Zhang et al. 2021): the attacker samples shadow datasets of size n from auxiliary data with the
  property at p1 or p2, computes the statistics, trains a classifier and is scored on datasets from
  disjoint test data passed through the defence. ``adaptive=False`` is the paper's protocol (the
  classifier is trained on the clean shadow statistics); ``adaptive=True`` passes the shadows
  through the same mechanism, which is the stronger, defence-aware attacker.
* :class:`LikelihoodRatioAttack` — the Neyman–Pearson test between the two Gaussian models
  N(μ_θ, Σ_θ + Cov Z): the optimal attack when the Gaussian model holds (logistic regression on
  the raw statistics is not).

Everything is vectorised across repetitions: datasets are rows of index matrices, noise is one
draw per defence, and the default classifier is an L2-regularised logistic regression solved for
all repetitions at once (:func:`batched_logistic_regression`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from distprivacy.checks import check_array, check_bool, check_int
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms.base import Calibration
from distprivacy.models import ExactModel, sample_statistics
from distprivacy.query import Query
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.spec import ProtectionSpec

__all__ = [
    "AttackResult",
    "LikelihoodRatioAttack",
    "MetaClassifierAttack",
    "batched_logistic_regression",
    "split_data",
]


def split_data(
    data: pd.DataFrame,
    sizes: tuple[int, ...] = (10_000, 10_000),
    random_state: RandomState = None,
) -> list[pd.DataFrame]:
    """Random disjoint parts of ``data``: one per size, then the rest (the paper's §5.1 split:
    10,000 auxiliary, 10,000 test, the remainder for modelling f_θ). ``random_state``: seed or
    generator of the permutation (a simulation: None is fresh OS entropy)."""
    if sum(sizes) >= len(data):
        raise DistPrivacyError(
            f"cannot split {len(data)} records into parts of {list(sizes)} and a remainder"
        )
    perm = check_random_state(random_state, secure=False).permutation(len(data))
    cuts = np.cumsum(sizes)
    return [data.iloc[idx].reset_index(drop=True) for idx in np.split(perm, cuts)]


# ------------------------------------------------------------------------------------------------
# Batched logistic regression
# ------------------------------------------------------------------------------------------------


def _logistic_objective(
    W: np.ndarray, X1: np.ndarray, s: np.ndarray, C: float, penal: np.ndarray
) -> np.ndarray:
    z = np.einsum("bnd,bd->bn", X1, W) * s
    return 0.5 * np.einsum("bd,d,bd->b", W, penal, W) + C * np.logaddexp(0.0, -z).sum(axis=1)


def batched_logistic_regression(
    X: np.ndarray, y: np.ndarray, C: float = 1.0, max_iter: int = 100, tol: float = 1e-10
) -> tuple[np.ndarray, np.ndarray]:
    """Fit B independent L2-regularised logistic regressions at once (damped Newton).

    Minimises, for each b, ½‖w_b‖² + C Σ_i log(1 + exp(−s_i (x_bi·w_b + c_b))) with s_i = ±1 —
    the objective of scikit-learn's ``LogisticRegression(C=C)`` (intercept not penalised), solved
    to convergence. Each Newton step solves B (d+1)×(d+1) systems in one call; the step length is
    the best of a few halvings, evaluated for all problems at once.

    Parameters
    ----------
    X : array (B, N, d)
    y : array (N,) or (B, N) of 0/1 labels
    C : float
        Inverse regularisation strength.

    Returns
    -------
    (coef, intercept) : arrays (B, d) and (B,)
    """
    X = np.asarray(X, dtype=float)
    B, N, d = X.shape
    y = np.broadcast_to(np.asarray(y), (B, N))
    s = np.where(y > 0, 1.0, -1.0)
    X1 = np.concatenate([X, np.ones((B, N, 1))], axis=2)
    penal = np.r_[np.ones(d), 0.0]
    W = np.zeros((B, d + 1))
    steps = 0.5 ** np.arange(8)
    f = _logistic_objective(W, X1, s, C, penal)
    for _ in range(max_iter):
        z = np.einsum("bnd,bd->bn", X1, W) * s
        p = 0.5 * (1 + np.tanh(-z / 2))  # σ(−z), stable
        grad = penal * W - C * np.einsum("bn,bnd->bd", p * s, X1)
        h = C * p * (1 - p)
        H = np.einsum("bn,bni,bnj->bij", h, X1, X1) + np.diag(penal)[None]
        H[:, d, d] += 1e-12 * N  # keeps the intercept's row non-singular for degenerate data
        delta = np.linalg.solve(H, grad[..., None])[..., 0]
        cand = W[:, None, :] - steps[None, :, None] * delta[:, None, :]
        fc = np.stack(
            [_logistic_objective(cand[:, k], X1, s, C, penal) for k in range(len(steps))], axis=1
        )
        best = fc.argmin(axis=1)
        f_new = fc[np.arange(B), best]
        improve = f_new < f
        W = np.where(improve[:, None], cand[np.arange(B), best], W)
        dec = np.where(improve, f - f_new, 0.0)
        f = np.minimum(f, f_new)
        if np.all(dec <= tol * np.maximum(1.0, np.abs(f))):
            break
    return W[:, :d], W[:, d]


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttackResult:
    """Accuracy of an attack over repetitions.

    Attributes
    ----------
    name : str
        Attack and defence, e.g. ``"meta-classifier vs DauM-G"``.
    accuracies : ndarray (R,)
        Test accuracy of each repetition.
    """

    name: str
    accuracies: np.ndarray

    @property
    def mean(self) -> float:
        return float(np.mean(self.accuracies))

    @property
    def std(self) -> float:
        return float(np.std(self.accuracies, ddof=1)) if self.accuracies.size > 1 else 0.0

    def confidence_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Student-t interval for the mean accuracy over repetitions."""
        r = self.accuracies.size
        if r < 2:
            return (self.mean, self.mean)
        half = stats.t.ppf(0.5 + level / 2, r - 1) * self.std / np.sqrt(r)
        return (self.mean - half, self.mean + half)

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.confidence_interval()
        return {
            "name": self.name,
            "mean": self.mean,
            "ci95": [lo, hi],
            "repetitions": int(self.accuracies.size),
        }


# ------------------------------------------------------------------------------------------------
# Attacks
# ------------------------------------------------------------------------------------------------


def _two_values(spec: ProtectionSpec) -> None:
    if len(spec.values) != 2:
        raise DistPrivacyError(
            f"the attack distinguishes two values of p; the spec has {len(spec.values)}"
        )


def _draw_labelled(
    data: pd.DataFrame,
    spec: ProtectionSpec,
    query: Query,
    per_value: int,
    reps: int,
    gen: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """F of reps × 2·per_value datasets (half at each p), shape (reps, 2·per_value, m), and the
    labels (0 for p1, 1 for p2)."""
    pos, neg = spec.groups(data)
    parts = [
        sample_statistics(data, query, pos, neg, k, spec.n, reps * per_value, gen).reshape(
            reps, per_value, query.dim
        )
        for k in spec.counts
    ]
    labels = np.repeat([0, 1], per_value)
    return np.concatenate(parts, axis=1), labels


def _noisy(F: np.ndarray, cal: Calibration | None, gen: np.random.Generator) -> np.ndarray:
    if cal is None:
        return F
    Z = cal.sample_noise(F.shape[0] * F.shape[1], gen).reshape(F.shape)
    return F + Z


class MetaClassifierAttack:
    """The meta-classifier property inference attack (Chen & Ohrimenko 2023, §5.3).

    Parameters
    ----------
    n_shadow, n_test : int
        Shadow (training) and test datasets per repetition, half at each value (paper: 200).
    repetitions : int
        Independent repetitions (paper: 50).
    classifier : scikit-learn classifier or None
        None: L2 logistic regression with C = 1 (the paper's ``LogisticRegression()``), fitted for
        all repetitions at once. Any scikit-learn classifier is accepted (cloned per fit).
    adaptive : bool
        False: the paper's protocol, trained on clean shadow statistics. True: shadows pass
        through the same defence (fresh noise), the defence-aware attacker.
    random_state : None, int or Generator
        Seed or generator of the datasets, the noise and the classifiers' draws (a simulation:
        None is fresh OS entropy, see :func:`distprivacy.randomness.check_random_state`).
    """

    def __init__(
        self,
        n_shadow: int = 200,
        n_test: int = 200,
        repetitions: int = 50,
        classifier: Any = None,
        adaptive: bool = False,
        random_state: RandomState = None,
    ) -> None:
        for name, v in (("n_shadow", n_shadow), ("n_test", n_test)):
            if (k := check_int(v, name)) < 2 or k % 2:
                raise DistPrivacyError(f"{name} must be an even integer ≥ 2, got {v!r}")
        check_int(repetitions, "repetitions", low=1)
        check_bool(adaptive, "adaptive")
        self.n_shadow = n_shadow
        self.n_test = n_test
        self.repetitions = repetitions
        self.classifier = classifier
        self.adaptive = adaptive
        self.random_state = random_state

    def draw(
        self,
        aux: pd.DataFrame,
        test: pd.DataFrame,
        spec: ProtectionSpec,
        query: Query,
        random_state: RandomState = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Clean statistics of all shadow and test datasets: (S, T, labels).

        ``random_state``: seed or generator of the datasets (a simulation: None is fresh OS
        entropy); a generator's state advances, so :meth:`run_on` can go on drawing from it.
        """
        _two_values(spec)
        gen = check_random_state(random_state, secure=False)
        S, lab = _draw_labelled(aux, spec, query, self.n_shadow // 2, self.repetitions, gen)
        T, _ = _draw_labelled(test, spec, query, self.n_test // 2, self.repetitions, gen)
        return S, T, lab

    def _fit_predict(self, S: np.ndarray, lab_s: np.ndarray, T: np.ndarray) -> np.ndarray:
        """Predicted labels, shape (R, n_test)."""
        if self.classifier is None:
            w, b = batched_logistic_regression(S, lab_s)
            return (np.einsum("rnd,rd->rn", T, w) + b[:, None] > 0).astype(int)
        from sklearn.base import clone

        return np.stack(
            [clone(self.classifier).fit(S[r], lab_s).predict(T[r]) for r in range(S.shape[0])]
        )

    def run(
        self,
        aux: pd.DataFrame,
        test: pd.DataFrame,
        spec: ProtectionSpec,
        query: Query,
        defences: Mapping[str, Calibration | None],
    ) -> dict[str, AttackResult]:
        """Attack each defence (None = no defence) on the same shadow and test datasets."""
        gen = check_random_state(self.random_state, secure=False)
        S, T, lab = self.draw(aux, test, spec, query, gen)
        return self.run_on(S, T, lab, defences, gen)

    def run_on(
        self,
        S: np.ndarray,
        T: np.ndarray,
        lab: np.ndarray,
        defences: Mapping[str, Calibration | None],
        random_state: RandomState = None,
    ) -> dict[str, AttackResult]:
        """As :meth:`run`, on already drawn clean statistics (reuse across many defences);
        ``random_state``: seed or generator of the noise (a simulation: None is fresh OS
        entropy)."""
        gen = check_random_state(random_state, secure=False)
        out: dict[str, AttackResult] = {}
        clean_pred_model = None if self.adaptive else self._trained(S, lab)
        for name, cal in defences.items():
            Tn = _noisy(T, cal, gen)
            if self.adaptive:
                pred = self._fit_predict(_noisy(S, cal, gen), lab, Tn)
            else:
                pred = clean_pred_model(Tn)  # type: ignore[misc]
            acc = (pred == lab[None, :]).mean(axis=1)
            out[name] = AttackResult(f"meta-classifier vs {name}", acc)
        return out

    def _trained(self, S: np.ndarray, lab: np.ndarray):
        """A predictor trained once on clean shadows (the paper's protocol)."""
        if self.classifier is None:
            w, b = batched_logistic_regression(S, lab)
            return lambda T: (np.einsum("rnd,rd->rn", T, w) + b[:, None] > 0).astype(int)
        from sklearn.base import clone

        fitted = [clone(self.classifier).fit(S[r], lab) for r in range(S.shape[0])]
        return lambda T: np.stack([f.predict(T[r]) for r, f in enumerate(fitted)])


class LikelihoodRatioAttack:
    """Bayes-optimal test between two Gaussian models of the release.

    Predicts θ_2 when log N(x; μ_2, Σ_2 + Σ_Z) > log N(x; μ_1, Σ_1 + Σ_Z) (equal priors), with
    (μ_θ, Σ_θ) the attacker's model of f_θ (by default the exact moments on its auxiliary data) and
    Σ_Z the defence's noise covariance. When f_θ is Gaussian and the noise Gaussian this is the
    Neyman–Pearson most powerful test, so its accuracy is the best any attacker can reach; for
    Laplace noise it is a Gaussian approximation.

    Parameters
    ----------
    means : array (2, m), covariances : array (2, m, m)
        The attacker's model; see :meth:`from_data`.
    """

    def __init__(self, means: np.ndarray, covariances: np.ndarray) -> None:
        self.means = check_array(means, "means", "two mean vectors (2×m)")
        self.covariances = check_array(covariances, "covariances", "two m×m covariances")
        m = self.means.shape[-1] if self.means.ndim else 0
        if self.means.shape[:1] != (2,) or self.covariances.shape[:1] != (2,):
            raise DistPrivacyError("the likelihood-ratio attack needs exactly two θ")
        if self.means.ndim != 2 or self.covariances.shape != (2, m, m):
            raise DistPrivacyError(
                f"the likelihood-ratio attack needs means of shape (2, m) and covariances of "
                f"shape (2, m, m), got {self.means.shape} and {self.covariances.shape}"
            )

    @classmethod
    def from_data(
        cls, aux: pd.DataFrame, spec: ProtectionSpec, query: Query
    ) -> LikelihoodRatioAttack:
        """The attacker's model: exact moments of f_θ on its auxiliary data."""
        _two_values(spec)
        m = ExactModel().fit(aux, spec, query)
        return cls(m.means_, m.covariances_)

    def log_likelihood_ratio(
        self, X: np.ndarray, noise_covariance: np.ndarray | None
    ) -> np.ndarray:
        """log p_2(x) − log p_1(x) for every row of X (any leading shape)."""
        m = self.means.shape[1]
        Z = np.zeros((m, m)) if noise_covariance is None else noise_covariance
        out = []
        for t in range(2):
            S = self.covariances[t] + Z
            L = np.linalg.cholesky(S)
            D = X - self.means[t]
            y = np.linalg.solve(L, D.reshape(-1, m).T).T.reshape(D.shape)
            out.append(-0.5 * (y**2).sum(axis=-1) - np.log(np.diag(L)).sum())
        return out[1] - out[0]

    def accuracy(
        self,
        T: np.ndarray,
        lab: np.ndarray,
        cal: Calibration | None,
        random_state: RandomState = None,
        name: str = "",
    ) -> AttackResult:
        """Accuracy on test statistics T (R, n, m) with labels lab, through defence ``cal``
        (``random_state``: seed or generator of its noise; a simulation: None is fresh OS
        entropy)."""
        Tn = _noisy(T, cal, check_random_state(random_state, secure=False))
        cov = None if cal is None else cal.noise_covariance
        pred = (self.log_likelihood_ratio(Tn, cov) > 0).astype(int)
        return AttackResult(f"likelihood ratio vs {name}", (pred == lab[None, :]).mean(axis=1))
