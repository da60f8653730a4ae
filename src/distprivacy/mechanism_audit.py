"""Auditing a calibrated mechanism: empirical lower bounds on ε from the strongest attacks.

A calibration's guarantee rests on a model of f_θ (Gaussian, shared covariance, …). The audit
checks it against *real* samples of F — size-n datasets drawn from the data with the property
fixed — passed through the mechanism's noise, in the manner of differential-privacy auditing
(Jagielski, Ullman & Oprea 2020; Nasr et al. 2021):

1. Each attack learns a score s(x) (large → θ_b) on a training split:
   ``likelihood-ratio`` — the Neyman–Pearson statistic log N(x; μ_b, S_b + Σ_Z) − log N(x; μ_a,
   S_a + Σ_Z) of the Gaussian model (the attacker knows f_θ's moments: the optimal test when the
   model holds); ``logistic`` — the meta-classifier of §5.3 trained on *noisy* shadows (the
   defence-aware attacker); ``boosting`` — gradient-boosted trees on noisy shadows, a
   nonparametric classifier that needs no model at all; ``knn`` — k-nearest neighbours on
   standardised noisy shadows (also nonparametric; slower, not run by default).
2. A threshold t is chosen on a second split (the one giving the largest ε estimate).
3. On a third split, the counts of s > t under θ_a and θ_b give Clopper–Pearson intervals for the
   false- and true-positive rates; an (ε, δ) guarantee for the pair implies, for every event E,
   P_b(E) ≤ e^ε P_a(E) + δ and P_a(E) ≤ e^ε P_b(E) + δ, so with E = {s > t} and its complement

       ε ≥ max( log((TPR − δ)/FPR), log((1 − FPR − δ)/(1 − TPR)),
                log((FPR − δ)/TPR), log((1 − TPR − δ)/(1 − FPR)) ),

   each evaluated with the numerator's lower and the denominator's upper confidence bound.
   The result ε_lb is a valid lower bound on the true ε with probability ≥ 1 − α (α split over
   the attacks by Bonferroni). If ε_lb exceeds the claimed ε, the claim is refuted (up to α):
   the sign that a modelling assumption fails.

Each attack's accuracy (equal priors, its natural threshold) is also measured and compared with
the calibration's bound on any attacker's accuracy, Φ(μ/2) (or (1 + TV)/2 with unequal
covariances; (e^ε + δ)/(1 + e^ε) for pure-ε mechanisms).
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from distprivacy.checks import (
    check_callable,
    check_instance,
    check_int,
    check_keywords,
    check_number,
    check_texts,
    check_vector,
)
from distprivacy.exceptions import (
    DistPrivacyError,
    DistPrivacyWarning,
    MissingExtraError,
    has_extra,
)
from distprivacy.intervals import clopper_pearson
from distprivacy.mechanisms.base import Calibration
from distprivacy.models import FModel, sample_statistics
from distprivacy.query import Query
from distprivacy.randomness import MAX_SEED, RandomState, check_random_state
from distprivacy.spec import ProtectionSpec
from distprivacy.statistic_attacks import LikelihoodRatioAttack

if TYPE_CHECKING:
    from distprivacy.engines import Engine

__all__ = [
    "ATTACKS",
    "DEFAULT_ATTACKS",
    "SKLEARN_ATTACKS",
    "AttackAudit",
    "AuditResult",
    "audit",
    "audit_calibrations",
    "audit_model",
    "clopper_pearson",
    "draw_pair_samples",
    "epsilon_lower_bound",
    "mechanism_random_state",
    "worst_pair",
]

#: Every attack the audit knows.
ATTACKS = ("likelihood-ratio", "logistic", "boosting", "knn")
#: The attacks run by default (kNN is slower and, on these statistics, no stronger).
DEFAULT_ATTACKS = ("likelihood-ratio", "logistic", "boosting")
#: The attacks that train a scikit-learn classifier (the ``[models]`` extra).
SKLEARN_ATTACKS = ("logistic", "boosting", "knn")


# ------------------------------------------------------------------------------------------------
# Statistics
# ------------------------------------------------------------------------------------------------


def _log_ratio(num: np.ndarray, den: np.ndarray, delta: float) -> np.ndarray:
    """log((num − δ)/den), −∞ where num ≤ δ, +∞ where den = 0 < num − δ."""
    num = np.asarray(num, dtype=float) - delta
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.where(num > 0, num, 1.0)) - np.log(np.where(den > 0, den, 1.0))
    out = np.where(num > 0, out, -np.inf)
    return np.where((num > 0) & (den <= 0), np.inf, out)


def epsilon_lower_bound(
    tpr_lo: np.ndarray,
    tpr_hi: np.ndarray,
    fpr_lo: np.ndarray,
    fpr_hi: np.ndarray,
    delta: float,
) -> np.ndarray:
    """The ε that (ε, δ) must at least have given the rates' confidence bounds (module
    docstring): the max of the four inequalities, each pessimistic for the bound. −∞ means no
    information."""
    return np.maximum.reduce(
        [
            _log_ratio(tpr_lo, fpr_hi, delta),
            _log_ratio(1 - fpr_hi, 1 - tpr_lo, delta),
            _log_ratio(fpr_lo, tpr_hi, delta),
            _log_ratio(1 - tpr_hi, 1 - fpr_lo, delta),
        ]
    )


def _choose_threshold(
    scores_a: np.ndarray, scores_b: np.ndarray, delta: float, alpha: float
) -> float:
    """The threshold (among ≤ 199 quantiles of the pooled scores) whose Clopper–Pearson ε bound
    is largest on this split — so that the test split is likely to confirm it."""
    pooled = np.concatenate([scores_a, scores_b])
    cand = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 201)[1:-1]))
    fp = (scores_a[None, :] > cand[:, None]).sum(axis=1)
    tp = (scores_b[None, :] > cand[:, None]).sum(axis=1)
    f_lo, f_hi = clopper_pearson(fp, scores_a.size, alpha)
    t_lo, t_hi = clopper_pearson(tp, scores_b.size, alpha)
    eps = epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi, delta)
    return float(cand[int(np.argmax(eps))])


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttackAudit:
    """One attack's audit: the rates at its chosen threshold, their intervals, ε_lb and its
    accuracy with equal priors."""

    attack: str
    threshold: float
    tpr: float
    fpr: float
    tpr_interval: tuple[float, float]
    fpr_interval: tuple[float, float]
    epsilon_lower_bound: float
    accuracy: float
    accuracy_interval: tuple[float, float]
    n_test: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "threshold": self.threshold,
            "tpr": self.tpr,
            "fpr": self.fpr,
            "tpr_interval": list(self.tpr_interval),
            "fpr_interval": list(self.fpr_interval),
            "epsilon_lower_bound": _finite_or_none(self.epsilon_lower_bound),
            "accuracy": self.accuracy,
            "accuracy_interval": list(self.accuracy_interval),
            "n_test": self.n_test,
        }


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class AuditResult:
    """The audit of one calibration on one pair (θ_a, θ_b).

    ``refuted`` is True when the claim is contradicted either way: some attack's ε lower bound
    exceeds the claimed ε (``epsilon_exceeded``), or some attack's accuracy interval lies
    wholly above the calibration's bound on any attacker's accuracy (``accuracy_exceeded``).

    Attributes
    ----------
    mechanism : str
        The audited mechanism's name.
    claimed_epsilon : float
        The ε the calibration claims.
    delta : float
        The δ it claims, at which the attacks' ε lower bounds are computed.
    pair : tuple of float
        The protected pair (p_a, p_b) the attacks tell apart.
    accuracy_bound : float
        The calibration's bound on any attacker's accuracy between the two.
    alpha : float
        One minus the confidence of the Clopper–Pearson intervals.
    attacks : tuple of AttackAudit
        Each attack's error rates, accuracy interval and ε lower bound.
    """

    mechanism: str
    claimed_epsilon: float
    delta: float
    pair: tuple[float, float]
    accuracy_bound: float
    alpha: float
    attacks: tuple[AttackAudit, ...] = field(default_factory=tuple)

    @property
    def epsilon_lower_bound(self) -> float:
        """The largest lower bound over the attacks (−∞: none informative)."""
        return max((a.epsilon_lower_bound for a in self.attacks), default=-math.inf)

    @property
    def epsilon_exceeded(self) -> bool:
        return self.epsilon_lower_bound > self.claimed_epsilon * (1 + 1e-12)

    @property
    def refuted(self) -> bool:
        return self.epsilon_exceeded or self.accuracy_exceeded

    @property
    def accuracy_exceeded(self) -> bool:
        return any(a.accuracy_interval[0] > self.accuracy_bound + 1e-12 for a in self.attacks)

    @property
    def best_accuracy(self) -> float:
        return max((a.accuracy for a in self.attacks), default=0.5)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "claimed_epsilon": self.claimed_epsilon,
            "delta": self.delta,
            "pair": list(self.pair),
            "alpha": self.alpha,
            "epsilon_lower_bound": _finite_or_none(self.epsilon_lower_bound),
            "refuted": self.refuted,
            "epsilon_exceeded": self.epsilon_exceeded,
            "accuracy_bound": self.accuracy_bound,
            "best_accuracy": self.best_accuracy,
            "accuracy_exceeded": self.accuracy_exceeded,
            "attacks": [a.to_dict() for a in self.attacks],
        }


# ------------------------------------------------------------------------------------------------
# Samples
# ------------------------------------------------------------------------------------------------


def worst_pair(model: FModel, calibration: Calibration) -> tuple[int, int]:
    """The protected pair (indices into model.thetas_) the model finds hardest to hide:
    largest √(dᵀ (S̄ + Σ_Z)⁻¹ d), S̄ the pair's average covariance."""
    Z = calibration.noise_covariance
    best, arg = -1.0, model.pair_indices_[0]
    for i, j in model.pair_indices_:
        d = model.means_[i] - model.means_[j]
        C = (model.covariances_[i] + model.covariances_[j]) / 2 + Z
        q = float(d @ np.linalg.lstsq(C, d, rcond=None)[0])
        if q > best:
            best, arg = q, (min(i, j), max(i, j))
    return arg


def draw_pair_samples(
    data: pd.DataFrame | Engine,
    spec: ProtectionSpec,
    query: Query,
    pair: tuple[int, int],
    size: int,
    random_state: RandomState = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Real samples of F: ``size`` random size-n datasets at each value of the pair (indices
    into ``spec.values``), drawn from ``data`` — one index matrix and one gather per value.
    ``random_state``: seed or generator of the datasets (a simulation: None is fresh OS
    entropy, see :func:`distprivacy.randomness.check_random_state`)."""
    gen = check_random_state(random_state, secure=False)
    if not isinstance(data, pd.DataFrame):  # an engine (DuckDB, Spark): it draws the subsets
        counts = [spec.counts[t] for t in pair]
        return tuple(data.subset_statistics(spec, query, counts, size, gen))  # type: ignore[return-value]
    pos, neg = spec.groups(data)
    return tuple(  # type: ignore[return-value]
        sample_statistics(data, query, pos, neg, spec.counts[t], spec.n, size, gen) for t in pair
    )


# ------------------------------------------------------------------------------------------------
# Attacks as score functions
# ------------------------------------------------------------------------------------------------


def _standardise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    mu = train.mean(axis=0)
    sd = train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return [(x - mu) / sd for x in (train, *others)]


def _scores(
    attack: str,
    train: tuple[np.ndarray, np.ndarray],
    evaluate: list[np.ndarray],
    model_moments: tuple[Sequence[np.ndarray], Sequence[np.ndarray]] | None,
    noise_cov: np.ndarray,
    knn_neighbors: int | None,
) -> list[np.ndarray]:
    """The attack's score on each array of ``evaluate`` (large → θ_b) and its natural threshold
    is 0 for every attack (log-odds)."""
    if attack == "likelihood-ratio":
        if model_moments is not None:
            lr, Z = LikelihoodRatioAttack(*map(np.asarray, model_moments)), noise_cov
        else:  # Gaussian fit to the noisy training samples (the noise is already in them)
            means = [t.mean(axis=0) for t in train]
            lr, Z = LikelihoodRatioAttack(means, [np.cov(t, rowvar=False) for t in train]), None
        return [lr.log_likelihood_ratio(x, Z) for x in evaluate]
    X = np.concatenate(train)
    y = np.repeat([0, 1], [len(train[0]), len(train[1])])
    Xs, *E = _standardise(X, *evaluate)
    if attack == "logistic":
        from sklearn.linear_model import LogisticRegression

        clf = LogisticRegression(C=1.0, max_iter=1000).fit(Xs, y)
        return [clf.decision_function(e) for e in E]
    if attack == "boosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        clf = HistGradientBoostingClassifier(max_iter=200, early_stopping=True, random_state=0)
        # One OpenMP thread: on a busy machine OpenMP's spinning threads made this fit 34x
        # slower (19.4 s vs 0.57 s for 20,000 samples, load 4.7 on 2 cores); idle, a second
        # thread saves little at these sizes. The result does not depend on the thread count.
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            clf.fit(Xs, y)
            return [clf.decision_function(e) for e in E]
    if attack == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        k = knn_neighbors or max(5, round(math.sqrt(len(Xs))) | 1)
        clf = KNeighborsClassifier(n_neighbors=k).fit(Xs, y)
        out = []
        for e in E:
            p = clf.predict_proba(e)[:, 1]
            # Log-odds with the neighbour counts smoothed (ties between thresholds kept).
            out.append(np.log((p * k + 0.5) / ((1 - p) * k + 0.5)))
        return out
    raise DistPrivacyError(f"unknown attack {attack!r}; choose from {', '.join(ATTACKS)}")


# ------------------------------------------------------------------------------------------------
# The audit
# ------------------------------------------------------------------------------------------------


def _installed_attacks(attacks: tuple[str, ...]) -> tuple[str, ...]:
    """The attacks to run: without scikit-learn (the ``[models]`` extra) the default set runs
    the likelihood-ratio attack only, with a warning; a classifier attack asked for by name is
    refused (MissingExtraError)."""
    if all(a not in SKLEARN_ATTACKS for a in attacks) or has_extra("sklearn"):
        return attacks
    if attacks != DEFAULT_ATTACKS:
        named = next(a for a in attacks if a in SKLEARN_ATTACKS)
        raise MissingExtraError(f"the {named} attack", "sklearn")
    kept = tuple(a for a in attacks if a not in SKLEARN_ATTACKS)
    dropped = " and ".join(a for a in attacks if a in SKLEARN_ATTACKS)
    need = MissingExtraError("", "sklearn")
    warnings.warn(
        f"the audit runs the {', '.join(kept)} attack only: the {dropped} attacks need "
        f"{need.package}: pip install 'distprivacy[{need.extra}]'",
        DistPrivacyWarning,
        stacklevel=3,
    )
    return kept


def audit(
    calibration: Calibration,
    samples: tuple[np.ndarray, np.ndarray],
    *,
    pair: tuple[float, float] = (0.0, 1.0),
    model_moments: tuple[Sequence[np.ndarray], Sequence[np.ndarray]] | None = None,
    attacks: Sequence[str] = DEFAULT_ATTACKS,
    split: tuple[float, float, float] = (0.25, 0.25, 0.5),
    alpha: float = 0.05,
    knn_neighbors: int | None = None,
    random_state: RandomState = None,
    on_step: Callable[[str], None] | None = None,
) -> AuditResult:
    """Audit ``calibration`` on real clean samples of F under the two members of a pair.

    Parameters
    ----------
    calibration : Calibration
        The mechanism to audit (its noise is drawn here, from ``random_state``).
    samples : (array (N_a, m), array (N_b, m))
        Clean F of random datasets under θ_a and θ_b (see :func:`draw_pair_samples`); each is
        split into training, threshold-selection and test parts by ``split``.
    pair : (float, float)
        The values of p, for the report.
    model_moments : (means, covariances), optional
        The Gaussian model (μ_a, μ_b), (S_a, S_b) for the likelihood-ratio attack; default: the
        Gaussian fitted to the noisy training samples.
    attacks : sequence of str
        From :data:`ATTACKS` (default :data:`DEFAULT_ATTACKS`).
    split : three fractions summing to 1
    alpha : float
        Total error probability of the ε lower bound (Bonferroni over the attacks).
    knn_neighbors : int, optional
        k of the kNN attack (default √(training size), odd).
    random_state : None, int, SeedSequence or Generator
        Seed of the noise and the splits (audits are experiments: pass a seed to reproduce
        them; None is fresh OS entropy, see :func:`distprivacy.randomness.check_random_state`).
    on_step : callable (text), optional
        Told before each attack starts (``"boosting attack"``), for a progress display.

    Returns
    -------
    AuditResult
    """
    check_number(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)
    split = tuple(check_vector(split, "split"))
    if len(split) != 3 or min(split) <= 0 or abs(sum(split) - 1) > 1e-9:
        raise DistPrivacyError(f"split must be three positive fractions summing to 1, got {split}")
    if knn_neighbors is not None:
        check_int(knn_neighbors, "knn_neighbors", low=1)
    check_callable(on_step, "on_step", "a function on_step(text)", optional=True)
    attacks = check_texts(attacks, "attacks")
    if not attacks:
        raise DistPrivacyError("give at least one attack")
    for a in attacks:
        if a not in ATTACKS:
            raise DistPrivacyError(f"unknown attack {a!r}; choose from {', '.join(ATTACKS)}")
    attacks = _installed_attacks(attacks)
    A, B = (np.asarray(s, dtype=float) for s in samples)
    m = calibration.noise.dim
    for name, s in (("θ_a", A), ("θ_b", B)):
        if s.ndim != 2 or s.shape[1] != m:
            raise DistPrivacyError(f"the samples under {name} must have shape (N, {m})")
        if len(s) < 40:
            raise DistPrivacyError(f"the audit needs at least 40 samples per θ, got {len(s)}")
        if not np.isfinite(s).all():
            raise DistPrivacyError(f"the samples under {name} contain NaN or infinite values")
    gen = check_random_state(random_state, secure=False)
    A = A[gen.permutation(len(A))] + calibration.sample_noise(len(A), gen).reshape(A.shape)
    B = B[gen.permutation(len(B))] + calibration.sample_noise(len(B), gen).reshape(B.shape)

    def parts(X: np.ndarray) -> list[np.ndarray]:
        c1 = int(len(X) * split[0])
        c2 = c1 + int(len(X) * split[1])
        return [X[:c1], X[c1:c2], X[c2:]]

    (A1, A2, A3), (B1, B2, B3) = parts(A), parts(B)
    delta = float(calibration.delta)
    a_each = alpha / len(attacks)
    results = []
    for attack in attacks:
        if on_step is not None:
            on_step(f"{attack} attack")
        sA2, sB2, sA3, sB3 = _scores(
            attack, (A1, B1), [A2, B2, A3, B3], model_moments,
            calibration.noise_covariance, knn_neighbors,
        )  # fmt: skip
        t = _choose_threshold(sA2, sB2, delta, a_each / 2)
        fp, tp = int((sA3 > t).sum()), int((sB3 > t).sum())
        na, nb = len(sA3), len(sB3)
        # Two intervals per attack, each at level a_each/2 (union bound).
        f_lo, f_hi = clopper_pearson(fp, na, a_each / 2)
        t_lo, t_hi = clopper_pearson(tp, nb, a_each / 2)
        eps_lb = float(epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi, delta))
        correct = int((sA3 <= 0).sum() + (sB3 > 0).sum())
        acc_lo, acc_hi = clopper_pearson(correct, na + nb, alpha)
        results.append(
            AttackAudit(
                attack=attack,
                threshold=t,
                tpr=tp / nb,
                fpr=fp / na,
                tpr_interval=(float(t_lo), float(t_hi)),
                fpr_interval=(float(f_lo), float(f_hi)),
                epsilon_lower_bound=eps_lb,
                accuracy=correct / (na + nb),
                accuracy_interval=(float(acc_lo), float(acc_hi)),
                n_test=na + nb,
            )
        )
    return AuditResult(
        mechanism=calibration.mechanism,
        claimed_epsilon=float(calibration.epsilon),
        delta=delta,
        pair=(float(pair[0]), float(pair[1])),
        accuracy_bound=float(calibration.max_attack_accuracy),
        alpha=alpha,
        attacks=tuple(results),
    )


def audit_model(
    calibration: Calibration,
    model: FModel,
    data: pd.DataFrame | Engine,
    spec: ProtectionSpec,
    query: Query,
    *,
    samples_per_value: int = 20_000,
    pair: tuple[int, int] | None = None,
    random_state: RandomState = None,
    on_step: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> AuditResult:
    """Audit on the data: draw ``samples_per_value`` real datasets at each value of the pair
    (default: :func:`worst_pair`), give the likelihood-ratio attack the model's moments, and run
    :func:`audit` (``random_state`` seeds both the datasets and the audit; ``on_step`` is told
    before the drawing and each attack; ``kwargs`` go to :func:`audit`).

    Parameters
    ----------
    calibration : Calibration
        The calibration audited (``Mechanism.calibrate``).
    model : FModel
        The fitted model of f_θ it was calibrated on (the likelihood-ratio attack's moments).
    data : DataFrame or Engine
        The population the real datasets are drawn from.
    spec : ProtectionSpec
        What is protected: the property, n and the values.
    query : Query
        The statistics released.
    samples_per_value : int, default 20000
        Real datasets drawn at each value of the pair.
    pair : tuple of int, optional
        Two indices into ``spec.values``; default: the worst pair for the calibration.
    random_state : None, int or Generator
        Seeds the datasets and the audit (None: fresh entropy).
    on_step : callable, optional
        ``on_step(text)`` is called before the drawing and before each attack.
    **kwargs
        ``attacks``, ``split``, ``alpha``, ``knn_neighbors``: passed to :func:`audit`.

    Returns
    -------
    AuditResult
        Each attack's accuracy interval and ε lower bound, and whether the claim is refuted.
    """
    from distprivacy.engines import Engine

    check_instance(calibration, "calibration", Calibration, "a Calibration (Mechanism.calibrate)")
    check_instance(model, "model", FModel, "a fitted model of f_θ (fit_model)")
    check_instance(data, "data", pd.DataFrame | Engine, "the population (a DataFrame or an engine)")
    check_instance(spec, "spec", ProtectionSpec, "a ProtectionSpec")
    check_instance(query, "query", Query, "a Query")
    check_int(samples_per_value, "samples_per_value", low=1)
    if pair is not None:
        check_instance(pair, "pair", tuple | list, "two indices into spec.values, e.g. (0, 1)")
        if len(pair) != 2:
            raise DistPrivacyError(f"pair must be two indices into spec.values, got {pair!r}")
        for t in pair:
            check_int(t, "a pair's index", low=0, high=len(spec.values) - 1)
    check_callable(on_step, "on_step", "a function on_step(text)", optional=True)
    check_keywords(kwargs, ("attacks", "split", "alpha", "knn_neighbors"), "audit_model()")
    gen = check_random_state(random_state, secure=False)
    if on_step is not None:
        on_step(f"drawing {samples_per_value:,} datasets at each value")
    i, j = worst_pair(model, calibration) if pair is None else pair
    samples = draw_pair_samples(data, spec, query, (i, j), samples_per_value, gen)
    moments = ([model.means_[i], model.means_[j]], [model.covariances_[i], model.covariances_[j]])
    return audit(
        calibration,
        samples,
        pair=(spec.values[i], spec.values[j]),
        model_moments=moments,
        random_state=gen,
        on_step=on_step,
        **kwargs,
    )


def mechanism_random_state(seed: int, mechanism: str) -> np.random.SeedSequence:
    """The seed of one mechanism's audit: ``SeedSequence([seed, crc32(mechanism)])``.

    Derived per mechanism so that a mechanism's audit does not depend on which others are
    audited with it (the command line's ``audit`` seeds each calibration this way).
    ``check_random_state`` turns it into ``numpy.random.default_rng([seed, crc32(mechanism)])``,
    the same stream.

    Parameters
    ----------
    seed : int
        The audit's seed, in [0, 2¹²⁸ − 1].
    mechanism : str
        The calibration's mechanism name (e.g. ``"DauM-G"``).
    """
    seed = check_int(seed, "seed", low=0, high=MAX_SEED)
    return np.random.SeedSequence([seed, zlib.crc32(str(mechanism).encode())])


def _prefixed(on_step: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda text: on_step(f"{name}: {text}")


def audit_calibrations(
    calibrations: Sequence[Calibration],
    model: FModel,
    data: pd.DataFrame | Engine,
    spec: ProtectionSpec,
    query: Query,
    *,
    samples_per_value: int = 20_000,
    attacks: Sequence[str] = DEFAULT_ATTACKS,
    alpha: float = 0.05,
    random_state: int | None = 0,
    progress: Callable[[int, int], None] | None = None,
    on_step: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> list[AuditResult]:
    """Audit several calibrations on the data, each with its own seed, as the command line does.

    Calibration ``cal`` is audited by :func:`audit_model` with
    ``random_state=mechanism_random_state(seed, cal.mechanism)``, so a Python user gets the
    numbers of ``distprivacy audit --seed SEED`` exactly, and one mechanism's audit does not
    depend on which others are listed.

    Parameters
    ----------
    calibrations : sequence of Calibration
        The calibrations to audit (their ``mechanism`` names seed their audits).
    model, data, spec, query
        As in :func:`audit_model`.
    samples_per_value : int
        Real datasets drawn at each value of the audited pair.
    attacks : sequence of str
        From :data:`ATTACKS` (default :data:`DEFAULT_ATTACKS`).
    alpha : float
        Total error probability of each ε lower bound.
    random_state : int or None
        The audit's seed (None means 0, as the command line's default: an audit is an
        experiment, reproducible by default).
    progress : callable (done, total), optional
        Called after each calibration's audit.
    on_step : callable (text), optional
        Told before each long step — drawing a calibration's datasets, each attack — what it
        is (``"DauM-G: boosting attack"``), for a progress display: a calibration's audit
        takes 1 + len(attacks) steps.
    **kwargs
        Passed on to :func:`audit_model` (``pair``) and :func:`audit` (``split``,
        ``knn_neighbors``).

    Returns
    -------
    list of AuditResult
        One per calibration, in order.
    """
    seed = 0 if random_state is None else random_state
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise DistPrivacyError(
            f"random_state must be an integer seed in [0, 2^128 - 1] or None, got {seed!r}"
        )
    cals = list(calibrations)
    attacks = _installed_attacks(tuple(attacks))  # before any sampling
    results = []
    for k, cal in enumerate(cals):
        step = None if on_step is None else _prefixed(on_step, cal.mechanism)
        results.append(
            audit_model(
                cal,
                model,
                data,
                spec,
                query,
                samples_per_value=samples_per_value,
                attacks=attacks,
                alpha=alpha,
                random_state=mechanism_random_state(seed, cal.mechanism),
                on_step=step,
                **kwargs,
            )
        )
        if progress is not None:
            progress(k + 1, len(cals))
    return results
