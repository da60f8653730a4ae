"""Defending a model's outputs with distribution privacy (the defence hook of issue 7).

A deployed model is only seen through what it releases. Here the released statistic F of a
model is its vector of outputs on a fixed, public query set (probabilities by default, so every
coordinate lies in [0, 1]; any other per-model statistic — logits, the parameters — can be given
as a callable). The two training distributions G0 and G1 of Suri & Evans' game are the two θ of
a distribution-privacy specification with the single protected pair (G0, G1): the defender
models F under each θ as a Gaussian fitted on models it trains itself
(:func:`fit_output_model`, a :class:`~distprivacy.models.GaussianModel`), and any Gaussian
mechanism of Chen & Ohrimenko (2023) — ExpM-G (Thm 4.2), DauM-G (Alg. 1), OptM-G — is calibrated
on it by :func:`distprivacy.mechanisms.make_mechanism` with exact accounting. The released
outputs are F + Z.

The DP-style baseline (:func:`range_dp_calibration`) is the Gaussian mechanism whose
sensitivity is the range of F: probabilities in [0, 1] on q query points move by at most √q (L2)
whatever the training set, so σ = √q/μ(ε, δ) (analytic Gaussian mechanism, Balle & Wang 2018;
μ from :func:`distprivacy.profiles.gdp_mu`) is (ε, δ)-DP for *any* two training sets — hence for
any two distributions too, without a model of F, and at a far larger noise.

:func:`evaluate_defences` then reports, per defence, the attack accuracy of two defence-aware
adversaries on the victim's noisy outputs (a likelihood-ratio test between Gaussians fitted on
the adversary's own models with the noise covariance added, and a black-box meta-classifier
trained on the adversary's own noisy outputs) against the task accuracy of the noisy outputs
(thresholded, against the query set's true labels).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError, NotApplicableError, require_extra
from distprivacy.inference.attacks import _check_pair, score_predictions
from distprivacy.mechanisms import (
    Calibration,
    GaussianAccounting,
    SharedCovariance,
    make_mechanism,
)
from distprivacy.models import GaussianModel
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import Generator, RandomState, check_random_state
from distprivacy.request import GaussianOptions, MechanismSpec
from distprivacy.targets import EpsDelta

__all__ = [
    "DEFAULT_MECHANISMS",
    "OutputStatistic",
    "calibrate_defences",
    "evaluate_defences",
    "fit_output_model",
    "fit_output_models",
    "range_dp_calibration",
]

#: The distribution-privacy mechanisms the defence is shown with by default.
DEFAULT_MECHANISMS: tuple[str, ...] = ("ExpM-G", "DauM-G", "OptM-G")


@dataclass(frozen=True)
class OutputStatistic:
    """F(M): a model's outputs on a fixed query set.

    Parameters
    ----------
    query : array (q, d)
        The query inputs (public, fixed before any model is trained).
    output : {"probability", "logit"}
        Probabilities lie in [0, 1] (bounded, so the DP baseline applies); logits do not.
    """

    query: np.ndarray
    output: str = "probability"

    def __post_init__(self) -> None:
        Q = np.asarray(self.query, dtype=float)
        if Q.ndim != 2 or Q.shape[0] == 0 or not np.isfinite(Q).all():
            raise DistPrivacyError(
                f"query must be a non-empty finite 2-D array (q, d), got shape {Q.shape}"
            )
        if self.output not in ("probability", "logit"):
            raise DistPrivacyError(f"output must be 'probability' or 'logit', got {self.output!r}")
        object.__setattr__(self, "query", Q)

    @property
    def dim(self) -> int:
        return int(self.query.shape[0])

    @property
    def decision_threshold(self) -> float:
        """The output above which a model predicts label 1."""
        return 0.5 if self.output == "probability" else 0.0

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"{self.output}[{i}]" for i in range(self.dim))

    def __call__(self, pop: Any) -> np.ndarray:
        """(m, q) outputs of every model of ``pop``."""
        if pop.layer_sizes[0] != self.query.shape[1]:
            raise DistPrivacyError(
                f"the query has {self.query.shape[1]} features but the models take "
                f"{pop.layer_sizes[0]}"
            )
        f = pop.predict_proba if self.output == "probability" else pop.logits
        return np.asarray(f(self.query), dtype=float)


Statistic = Callable[[Any], np.ndarray]


def _values(statistic: Statistic, pop: Any) -> np.ndarray:
    F = np.asarray(statistic(pop), dtype=float)
    if F.ndim != 2 or F.shape[0] != pop.n_models:
        raise DistPrivacyError(
            f"the statistic must give one row per model ({pop.n_models}, k), got shape {F.shape}"
        )
    if not np.isfinite(F).all():
        raise DistPrivacyError("the statistic has NaN or infinite values")
    return F


def fit_output_model(pop0: Any, pop1: Any, statistic: Statistic) -> GaussianModel:
    """Gaussian model of F under G0 and G1 from the defender's own models (sample means and
    covariances, ddof = 1), with the samples kept for the Wasserstein mechanisms and the single
    protected pair (G0, G1): :func:`fit_output_models` with two populations.

    Raises
    ------
    DistPrivacyError
        With fewer models than dimensions + 1 per distribution (the covariance would be
        singular: train more models or use fewer query points).
    """
    return fit_output_models([pop0, pop1], statistic)


def fit_output_models(pops: Sequence[Any], statistic: Statistic) -> GaussianModel:
    """Gaussian model of F under G0, …, G(k−1) from the defender's own models (sample means
    and covariances, ddof = 1, per distribution), protecting every pair (Gi, Gj), i < j — the
    main paper's secrets are pairs of values of the property (Def. 3.1), here k shares of the
    protected rows. The samples are kept for the Wasserstein mechanisms.

    Raises
    ------
    DistPrivacyError
        With fewer than two populations, populations of other architectures, or fewer models
        than dimensions + 1 in one of them (the covariance would be singular).
    """
    if len(pops) < 2:
        raise DistPrivacyError(f"a defence protects two or more distributions, got {len(pops)}")
    for i, pop in enumerate(pops[1:], start=1):
        _check_pair(pops[0], pop, f"the defender's populations (G0 and G{i})")
    Fs = [_values(statistic, pop) for pop in pops]
    k = Fs[0].shape[1]
    for i, F in enumerate(Fs):
        if F.shape[0] < k + 1:
            raise DistPrivacyError(
                f"{F.shape[0]} G{i} models cannot fit a covariance of {k} outputs; train at "
                f"least {k + 1} models per distribution or use fewer query points"
            )
    names = getattr(statistic, "names", None) or tuple(f"F{i}" for i in range(k))
    thetas = tuple(f"G{i}" for i in range(len(Fs)))
    return GaussianModel(
        thetas=thetas,
        means=np.stack([F.mean(axis=0) for F in Fs]),
        covariances=np.stack([np.cov(F, rowvar=False) for F in Fs]).reshape(len(Fs), k, k),
        pairs=[(a, b) for i, a in enumerate(thetas) for b in thetas[i + 1 :]],
        statistic_names=names,
        samples=Fs,
        source="model outputs",
    )


def range_dp_calibration(dim: int, target: EpsDelta, output_range: float = 1.0) -> Calibration:
    """DP-style baseline: the Gaussian mechanism with sensitivity √dim · ``output_range``.

    When each of the ``dim`` released coordinates lies in an interval of length
    ``output_range`` whatever the training data (probabilities: 1), two *arbitrary* training
    sets change F by at most Δ₂ = √dim · range, so σ = Δ₂/μ with μ = gdp_mu(ε, δ) is
    μ-GDP, hence (ε, δ)-DP for every pair of training sets (Balle & Wang 2018, Thm 8; Dong, Roth
    & Su 2019, Cor. 2.13) and thus (ε, δ)-distribution private for every pair of distributions.
    """
    from distprivacy.profiles import gdp_accuracy, gdp_mu

    if not isinstance(target, EpsDelta):
        raise DistPrivacyError(
            f"range_dp_calibration takes an (ε, δ) target, e.g. EpsDelta(1.0, 1e-3); got {target!r}"
        )
    epsilon, delta = target.epsilon, target.delta
    if not isinstance(dim, int | np.integer) or dim < 1:
        raise DistPrivacyError(f"dim must be a positive integer, got {dim!r}")
    if not (isinstance(output_range, int | float) and 0 < output_range < math.inf):
        raise DistPrivacyError(f"output_range must be positive and finite, got {output_range!r}")
    mu = gdp_mu(epsilon, delta)
    sens = math.sqrt(dim) * output_range
    sigma = sens / mu
    return Calibration(
        mechanism="DP-range-G",
        theorem="Gaussian mechanism with sensitivity = output range (Balle & Wang 2018, Thm 8)",
        epsilon=float(epsilon),
        delta=float(delta),
        noise=NoiseDistribution.isotropic("gaussian", int(dim), sigma),
        statistic_names=tuple(f"F{i}" for i in range(dim)),
        sensitivity=sens,
        sensitivity_label="Δ₂ = √q · range",
        rule="exact",
        assumptions=(f"every released coordinate lies in an interval of length {output_range:g}",),
        accounting=GaussianAccounting(
            rule="exact",
            target_mu=mu,
            mu_used=mu,
            epsilon=float(epsilon),
            delta=float(delta),
            shared=SharedCovariance.of(mu, float(epsilon), float(delta)),
            unequal=None,
            delta_achieved=float(delta),
            max_attack_accuracy=gdp_accuracy(mu),
        ),
    )


def calibrate_defences(
    model: GaussianModel,
    epsilons: Sequence[float],
    delta: float,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
    *,
    dp_baseline: bool = True,
    output_range: float | None = 1.0,
) -> tuple[list[Calibration], dict[str, str]]:
    """Calibrate each mechanism at each ε (exact accounting, fitted covariances) on ``model``;
    with ``dp_baseline`` add :func:`range_dp_calibration` (needs ``output_range``).

    Returns the calibrations and, for those that cannot be calibrated, the reason.
    """
    if not epsilons:
        raise DistPrivacyError("give at least one epsilon")
    done: list[Calibration] = []
    skipped: dict[str, str] = {}
    dim = len(model.statistic_names_)
    for eps in epsilons:
        for name in mechanisms:
            try:
                # A model's outputs share one unit (probabilities): the raw L2 objective.
                spec = MechanismSpec(name, EpsDelta(eps, delta), GaussianOptions(utility="l2"))
                done.append(make_mechanism(spec).calibrate(model))
            except NotApplicableError as e:
                skipped[f"{name} ε={eps:g}"] = str(e).splitlines()[0]
        if dp_baseline:
            if output_range is None:
                raise DistPrivacyError(
                    "the DP baseline needs bounded outputs; pass output_range (probabilities: 1) "
                    "or dp_baseline=False"
                )
            done.append(range_dp_calibration(dim, EpsDelta(eps, delta), output_range))
    return done, skipped


def _noisy(F: np.ndarray, cal: Calibration | None, gen: Generator) -> np.ndarray:
    if cal is None:
        return F
    if cal.noise_covariance.shape[0] != F.shape[1]:
        raise DistPrivacyError(
            f"the calibration {cal.mechanism} is for {cal.noise_covariance.shape[0]} outputs but "
            f"the statistic has {F.shape[1]}"
        )
    return F + cal.sample_noise(F.shape[0], gen)


def _shrunk_gaussians(F0: np.ndarray, F1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The adversary's Gaussian model of F: means and Ledoit–Wolf-shrunk covariances (the
    attacker's own choice; keeps the test defined with few models or rank-deficient noise)."""
    require_extra("sklearn", "the Gaussian likelihood-ratio attack on models")
    from sklearn.covariance import LedoitWolf

    means = np.stack([F0.mean(axis=0), F1.mean(axis=0)])
    covs = np.stack([LedoitWolf().fit(F).covariance_ for F in (F0, F1)])
    return means, covs


def evaluate_defences(
    adversary: tuple[Any, Any],
    victim: tuple[Any, Any],
    statistic: OutputStatistic,
    labels: Any,
    calibrations: Mapping[str, Calibration | None],
    *,
    random_state: RandomState = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Attack accuracy against task accuracy for each defence of the victim's outputs.

    Parameters
    ----------
    adversary : (pop0, pop1)
        The adversary's own models from G0 and G1 (its shadows; it knows each defence's noise
        distribution and passes its shadows' outputs through it — the defence-aware attacker).
    victim : (pop0, pop1)
        The released models from G0 and G1 (scored).
    statistic : OutputStatistic
        F: outputs on the query set.
    labels : array (q,)
        True labels of the query points (task accuracy of the noisy outputs).
    calibrations : mapping name -> Calibration or None
        None is the undefended release.
    random_state : seed, Generator or None
        Noise draws (an evaluation, so a simulation: None is fresh entropy, not the secure
        generator a real release would use).
    level : float
        Confidence of the Clopper–Pearson intervals (checking several defences against their
        bounds at once calls for a Bonferroni-corrected level).

    Returns
    -------
    DataFrame with one row per defence: ``defence``, ``mechanism``, ``epsilon``, ``delta``,
    ``mu``, ``max_attack_accuracy`` (the calibration's bound), ``expected_l2_error``,
    ``task_accuracy`` (mean over victim models), ``likelihood_ratio`` and ``meta_classifier``
    accuracies with Clopper–Pearson bounds at ``level`` (``*_lo``, ``*_hi``), ``n_victim``.
    """
    require_extra("sklearn", "the defence evaluation's meta-classifier")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from distprivacy.statistic_attacks import LikelihoodRatioAttack

    if not isinstance(statistic, OutputStatistic):
        raise DistPrivacyError("statistic must be an OutputStatistic (outputs on a query set)")
    _check_pair(*adversary)
    _check_pair(*victim, "the victim's populations")
    y = np.asarray(labels)
    if y.shape != (statistic.dim,) or not np.isin(y, (0, 1)).all():
        raise DistPrivacyError(
            f"labels must be {statistic.dim} values 0/1, one per query point; got shape {y.shape}"
        )
    gen = check_random_state(random_state, secure=False)
    A0, A1 = statistic(adversary[0]), statistic(adversary[1])
    V0, V1 = statistic(victim[0]), statistic(victim[1])
    lab_a = np.r_[np.zeros(len(A0), int), np.ones(len(A1), int)]
    means, covs = _shrunk_gaussians(A0, A1)
    lr_attack = LikelihoodRatioAttack(means, covs)
    rows = []
    for name, cal in calibrations.items():
        An = _noisy(np.concatenate([A0, A1]), cal, gen)
        Vn0, Vn1 = _noisy(V0, cal, gen), _noisy(V1, cal, gen)
        cov = None if cal is None else cal.noise_covariance
        lr0 = lr_attack.log_likelihood_ratio(Vn0, cov) > 0
        lr1 = lr_attack.log_likelihood_ratio(Vn1, cov) > 0
        s_lr = score_predictions(lr0, lr1, "likelihood ratio", level)
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
        clf.fit(An, lab_a)
        s_mc = score_predictions(clf.predict(Vn0), clf.predict(Vn1), "meta-classifier", level)
        Vn = np.concatenate([Vn0, Vn1])
        task = ((Vn > statistic.decision_threshold) == (y == 1)).mean()
        rows.append(
            {
                "defence": name,
                "mechanism": "none" if cal is None else cal.mechanism,
                "epsilon": np.nan if cal is None else cal.epsilon,
                "delta": np.nan if cal is None else cal.delta,
                "mu": np.nan if cal is None or cal.mu is None else cal.mu,
                "max_attack_accuracy": 1.0 if cal is None else cal.max_attack_accuracy,
                "expected_l2_error": 0.0 if cal is None else cal.expected_l2_error,
                "task_accuracy": float(task),
                "likelihood_ratio": s_lr.accuracy,
                "likelihood_ratio_lo": s_lr.interval[0],
                "likelihood_ratio_hi": s_lr.interval[1],
                "meta_classifier": s_mc.accuracy,
                "meta_classifier_lo": s_mc.interval[0],
                "meta_classifier_hi": s_mc.interval[1],
                "n_victim": s_lr.n,
            }
        )
    return pd.DataFrame(rows)
