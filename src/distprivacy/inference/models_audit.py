"""Distribution inference on the user's own table: ``distprivacy models audit``.

The game of Suri & Evans (§2, Eq. 2) on any table: the rows are split at random into an
adversary's half and a victim's half; from each half, datasets of ``n_train`` rows are drawn by
the ratio filter (:class:`~distprivacy.inference.transformers.RatioTransformer`: exactly
``round(α n_train)`` rows satisfy the protected predicate); one model of the user's kind is
fitted on each dataset. The adversary's models train the attacks
(:mod:`distprivacy.inference.attacks`); their accuracy on the victim's models, with a
Clopper–Pearson interval, says how well a model trained on such data reveals α.

With more than two ratios α_1 < … < α_K (:func:`audit_ratios`) each ratio's populations are
trained once and every pair (α_i, α_j) is one game (:func:`pairwise_attacks`); the regression
variant of §3.3 (:func:`ratio_regression`) predicts α itself from each model and reports the
mean absolute error against a baseline that always predicts the mean ratio.

The protected column stays among the features (a model trained on the user's data sees it
unless the user drops it with ``features``); the label column never does. Labels may have two
or more values (the attacks read every class's probability).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError, require_extra
from distprivacy.inference._fit import fit_models
from distprivacy.inference.estimators import make_estimator
from distprivacy.inference.saved import EstimatorPopulation
from distprivacy.inference.transformers import RatioTransformer
from distprivacy.randomness import Generator, RandomState, check_random_state
from distprivacy.spec import proportion_to_count

__all__ = [
    "MAX_RATIOS",
    "AuditData",
    "AuditGame",
    "RatioAudit",
    "RatioRegression",
    "audit_game",
    "audit_ratios",
    "check_ratios",
    "make_estimator",
    "pairwise_attacks",
    "prepare_audit",
    "ratio_regression",
    "run_attacks",
]


# ------------------------------------------------------------------------------------------------
# The table
# ------------------------------------------------------------------------------------------------


@dataclass
class AuditData:
    """The table as the models see it, and the game's two halves.

    Attributes
    ----------
    data : DataFrame
        The user's table (the ratio filter reads the protected column from it).
    protect : str
        The protected predicate, e.g. ``sex==Female``.
    X : array (N, d)
        Standardised features (text columns one-hot).
    y : array (N,)
        Label codes 0..K−1 (``classes[y]`` is the label value).
    feature_names, classes : list
    halves : (array, array)
        Sorted row positions of the adversary's and the victim's halves.
    """

    data: pd.DataFrame
    protect: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    classes: list[Any]
    halves: tuple[np.ndarray, np.ndarray]

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def _design(
    data: pd.DataFrame,
    label: str,
    features: Sequence[str] | None,
    *,
    binary: bool = False,
    drop_first: bool = False,
) -> tuple[np.ndarray, np.ndarray, list[str], list[Any]]:
    if label not in data.columns:
        raise DistPrivacyError(f"label column {label!r} not in the table; columns: {list(data)}")
    cols = [c for c in data.columns if c != label] if features is None else list(features)
    unknown = [c for c in cols if c not in data.columns]
    if unknown:
        raise DistPrivacyError(f"unknown feature columns {unknown}; columns: {list(data)}")
    if label in cols:
        raise DistPrivacyError(f"the label {label!r} cannot also be a feature")
    if not cols:
        raise DistPrivacyError("no feature columns are left; give `features`")
    values = data[label]
    if values.isna().any():
        raise DistPrivacyError(f"label {label!r} has missing values; drop those rows first")
    classes = sorted(values.unique(), key=str)
    if len(classes) < 2:
        raise DistPrivacyError(f"label {label!r} has one value only; give a label with two or more")
    if binary and len(classes) != 2:
        raise DistPrivacyError(
            f"label {label!r} has {len(classes)} distinct values; this needs a binary label "
            "(recode it into two classes)"
        )
    if len(classes) > 50:
        raise DistPrivacyError(
            f"label {label!r} has {len(classes)} distinct values; give a class label (at most 50 "
            "values), not a continuous column"
        )
    code = {c: i for i, c in enumerate(classes)}
    y = values.map(code).to_numpy(dtype=int)
    frame = pd.get_dummies(data[cols], dtype=float, drop_first=drop_first)
    if frame.isna().any().any():
        bad = [c for c in cols if data[c].isna().any()]
        raise DistPrivacyError(
            f"the features {bad} have missing values; drop or impute them first (or leave them "
            "out with `features`)"
        )
    X = frame.to_numpy(dtype=float)
    scale = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    return X, y, list(frame.columns), classes


def prepare_audit(
    data: pd.DataFrame,
    *,
    label: str,
    protect: str,
    features: Sequence[str] | None = None,
    random_state: RandomState = None,
    binary: bool = False,
    drop_first: bool = False,
) -> AuditData:
    """Check the table, build the design matrix and split the rows into two halves.

    ``binary``: refuse a label of more than two values. ``drop_first``: one-hot text columns
    without their first level (no column is then a linear function of the others: the
    coefficients of a linear model have a non-singular covariance across training sets)."""
    prop = RatioTransformer(protect, 0.5, preserve_label_ratio=False).property
    if prop.column == label:
        raise DistPrivacyError(f"the label {label!r} cannot be the protected column")
    if prop.column not in data.columns:
        raise DistPrivacyError(
            f"protected column {prop.column!r} not in the table; columns: {list(data)}"
        )
    X, y, names, classes = _design(data, label, features, binary=binary, drop_first=drop_first)
    gen = check_random_state(random_state, secure=False)
    halves = tuple(np.sort(h) for h in np.array_split(gen.permutation(len(data)), 2))
    return AuditData(data, protect, X, y, names, classes, (halves[0], halves[1]))


def _rows(prep: AuditData, half: int, ratio: float, n: int, k: int, gen: Generator) -> np.ndarray:
    return RatioTransformer(prep.protect, ratio, preserve_label_ratio=False).sample(
        prep.data, n=n, n_datasets=k, rows=prep.halves[half], random_state=gen
    )


def train_ratio_population(
    prep: AuditData,
    half: int,
    ratio: float,
    estimator: Any,
    *,
    n_models: int,
    n_train: int,
    gen: Generator,
    n_jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> EstimatorPopulation:
    """``n_models`` fitted clones of ``estimator``, each on ``n_train`` rows of half ``half``
    (0: adversary, 1: victim) drawn by the ratio filter at ``ratio``."""
    rows = _rows(prep, half, ratio, n_train, n_models, gen)
    fitted = fit_models(
        estimator, prep.X, prep.y, rows, gen,
        n_classes=prep.n_classes, n_jobs=n_jobs, progress=progress,
    )  # fmt: skip
    return EstimatorPopulation(fitted, {"ratio": ratio, "half": ("adversary", "victim")[half]})


# ------------------------------------------------------------------------------------------------
# Games
# ------------------------------------------------------------------------------------------------


@dataclass
class AuditGame:
    """Feature matrix, labels (codes 0..K−1) and the four populations of one game."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    adversary: tuple[EstimatorPopulation, EstimatorPopulation]
    victim: tuple[EstimatorPopulation, EstimatorPopulation]
    test: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class RatioAudit:
    """Each ratio's adversary and victim populations and the adversary's test set at that
    ratio (index i ↔ ``ratios[i]``)."""

    prep: AuditData
    ratios: tuple[float, ...]
    adversary: list[EstimatorPopulation]
    victim: list[EstimatorPopulation]
    tests: list[tuple[np.ndarray, np.ndarray]]

    def game(self, i: int, j: int) -> AuditGame:
        """The game G0 = ratio i against G1 = ratio j."""
        p = self.prep
        return AuditGame(
            p.X, p.y, p.feature_names,
            (self.adversary[i], self.adversary[j]), (self.victim[i], self.victim[j]),
            (self.tests[i], self.tests[j]),
        )  # fmt: skip

    @property
    def pairs(self) -> list[tuple[int, int]]:
        return list(combinations(range(len(self.ratios)), 2))


#: Most ratios one ``models audit`` / ``models defend`` takes: the grid 0, 0.1, …, 1 of Suri &
#: Evans (§3). Every ratio trains its own populations and every pair of ratios is one game, so
#: K ratios cost K populations and K(K−1)/2 games: 11 ratios are 55 pairs.
MAX_RATIOS = 11


def check_ratios(
    ratios: Sequence[float], n_train: Any, *, null_game: bool = False
) -> tuple[float, ...]:
    """The ratios α of a game, checked: two to :data:`MAX_RATIOS` shares in [0, 1], and no two
    of them giving one training distribution — each training set holds exactly
    ``round(α · n_train)`` protected rows, so two ratios of the same count (``0.3`` and
    ``0.30000000001``) would be one secret told apart from itself. ``null_game``: one ratio
    given twice (α0 = α1, and nothing else) is the null game, which ``models audit`` plays on
    purpose; ``models defend`` protects different ratios only. (A bad ``n_train`` is refused
    where the training sets are drawn.)"""
    try:
        alphas = tuple(float(r) for r in ratios)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"ratios must be numbers in [0, 1], got {ratios!r}") from None
    if len(alphas) < 2:
        raise DistPrivacyError(f"give two or more ratios, got {list(alphas)}")
    if len(alphas) > MAX_RATIOS:
        k = len(alphas)
        raise DistPrivacyError(
            f"{k} ratios (`ratios`) are {k * (k - 1) // 2} games of two; give at most "
            f"{MAX_RATIOS} ({MAX_RATIOS * (MAX_RATIOS - 1) // 2} games), e.g. the grid 0,0.1,…,1"
        )
    if any(not 0 <= r <= 1 for r in alphas):
        raise DistPrivacyError(f"ratios must lie in [0, 1], got {list(alphas)}")
    if null_game and len(alphas) == 2 and alphas[0] == alphas[1]:
        return alphas
    same = sorted({a for a in alphas if alphas.count(a) > 1})
    if same:
        why = (
            "two equal values alone are the null game"
            if null_game
            else "a defence protects different ratios"
        )
        raise DistPrivacyError(
            f"two ratios are equal ({', '.join(f'{a:g}' for a in same)}); give distinct values "
            f"({why})"
        )
    sized = isinstance(n_train, int | np.integer) and not isinstance(n_train, bool) and n_train > 0
    counts = [proportion_to_count(a, int(n_train)) for a in alphas] if sized else []
    for i, j in combinations(range(len(counts)), 2):
        if counts[i] == counts[j]:
            raise DistPrivacyError(
                f"ratios {alphas[i]!r} and {alphas[j]!r} both give {counts[i]} protected rows of "
                f"{int(n_train)} (`n_train`): one training distribution; give ratios further "
                "apart or raise `n_train`"
                + (" (for the null game give one ratio twice)" if null_game else "")
            )
    return alphas


def audit_ratios(
    data: pd.DataFrame,
    *,
    label: str,
    protect: str,
    ratios: Sequence[float],
    estimator: Any,
    n_models: int,
    n_train: int,
    n_test: int | None = None,
    features: Sequence[str] | None = None,
    random_state: RandomState = None,
    n_jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RatioAudit:
    """Train the adversary's and the victim's populations once per ratio (see the module
    docstring). ``estimator``: an unfitted scikit-learn classifier (cloned for every model,
    each with its own integer ``random_state`` when it takes one). ``n_test``: rows of the
    adversary's test set at each ratio (from its half; default ``n_train``). ``n_jobs``:
    parallel workers for estimators fitted one by one (default: every CPU available)."""
    require_extra("sklearn", "the models audit")
    alphas = check_ratios(ratios, n_train, null_game=True)
    gen = check_random_state(random_state, secure=False)
    prep = prepare_audit(data, label=label, protect=protect, features=features, random_state=gen)
    total, done = 2 * len(alphas) * n_models, 0

    def step(k: int) -> None:
        nonlocal done
        done += k
        if progress is not None:
            progress(done, total)

    pops: list[list[EstimatorPopulation]] = [[], []]
    for half in (0, 1):
        for ratio in alphas:
            pops[half].append(
                train_ratio_population(
                    prep,
                    half,
                    ratio,
                    estimator,
                    n_models=n_models,
                    n_train=n_train,
                    gen=gen,
                    n_jobs=n_jobs,
                    progress=step,
                )
            )
    size = n_train if n_test is None else n_test
    tests = []
    for ratio in alphas:
        (r,) = _rows(prep, 0, ratio, size, 1, gen)
        tests.append((prep.X[r], prep.y[r]))
    return RatioAudit(prep, alphas, pops[0], pops[1], tests)


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
    n_jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditGame:
    """The game of two ratios α0, α1 (equal: the null game) — :func:`audit_ratios` with two."""
    if len(ratios) != 2:
        raise DistPrivacyError(f"audit_game takes two ratios α0, α1, got {list(ratios)}")
    audit = audit_ratios(
        data, label=label, protect=protect, ratios=ratios, estimator=estimator,
        n_models=n_models, n_train=n_train, n_test=n_test, features=features,
        random_state=random_state, n_jobs=n_jobs, progress=progress,
    )  # fmt: skip
    return audit.game(0, 1)


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


def pairwise_attacks(audit: RatioAudit, random_state: RandomState = None) -> list[dict[str, Any]]:
    """:func:`run_attacks` on every pair of ratios (the populations are trained once; each
    population's outputs on each test set are computed once and reused by every pair).

    Returns one entry per pair i < j: ``{"ratios": [α_i, α_j], "attacks": [AttackScore]}``.
    """
    gen = check_random_state(random_state, secure=False)
    return [
        {
            "ratios": [audit.ratios[i], audit.ratios[j]],
            "attacks": run_attacks(audit.game(i, j), random_state=int(gen.integers(2**31))),
        }
        for i, j in audit.pairs
    ]


# ------------------------------------------------------------------------------------------------
# Regression of α (Suri & Evans §3.3)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RatioRegression:
    """How well a meta-regressor predicts the ratio α a victim model was trained at.

    Attributes
    ----------
    name : str
        The features the regressor reads (black-box outputs or parameters).
    mae, mae_interval
        Mean absolute error on the victim's models, with a 95 % interval (Student t on the
        victim models' absolute errors: independent models, so the mean is asymptotically
        normal).
    baseline_mae : float
        The error of always predicting the mean of the adversary's ratios (what an adversary
        that learnt nothing from the models achieves).
    gain_interval : (float, float)
        95 % interval of baseline − regressor absolute error (paired over victim models):
        above 0 means the models reveal α.
    n : int
        Victim models scored.
    """

    name: str
    mae: float
    mae_interval: tuple[float, float]
    baseline_mae: float
    gain_interval: tuple[float, float]
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mae": self.mae,
            "ci95": list(self.mae_interval),
            "baseline_mae": self.baseline_mae,
            "gain_ci95": list(self.gain_interval),
            "n": self.n,
        }


def _t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    from scipy import stats

    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if v.size < 2:
        return (-np.inf, np.inf)
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return (m - half, m + half)


def ratio_regression(audit: RatioAudit, random_state: RandomState = None) -> list[RatioRegression]:
    """Predict α from each victim model (§3.3): ridge regressions (penalty chosen by
    leave-one-out on the adversary's models) on the models' log-odds on 64 of the adversary's
    rows (black-box) and, where the models have parameter vectors, on the parameters
    (white-box); predictions clipped to [0, 1]."""
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if len(set(audit.ratios)) < 3:
        raise DistPrivacyError("the regression of α needs at least three distinct ratios")
    gen = check_random_state(random_state, secure=False)
    adv_half = audit.prep.halves[0]
    query = audit.prep.X[gen.choice(adv_half, size=min(64, adv_half.size), replace=False)]
    kinds: list[tuple[str, Callable[[EstimatorPopulation], np.ndarray]]] = [
        ("meta-regressor (black-box outputs)", lambda p: p.logits(query)),
    ]
    if audit.adversary[0].n_parameters > 0:
        kinds.append(("meta-regressor (parameters)", lambda p: p.parameter_matrix()))
    t_adv = np.concatenate(
        [np.full(p.n_models, r) for p, r in zip(audit.adversary, audit.ratios, strict=True)]
    )
    t_vic = np.concatenate(
        [np.full(p.n_models, r) for p, r in zip(audit.victim, audit.ratios, strict=True)]
    )
    base_err = np.abs(t_vic - t_adv.mean())
    out = []
    for name, feats in kinds:
        F_adv = np.concatenate([feats(p) for p in audit.adversary])
        F_vic = np.concatenate([feats(p) for p in audit.victim])
        reg = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 4, 15)))
        reg.fit(F_adv, t_adv)
        err = np.abs(np.clip(reg.predict(F_vic), 0.0, 1.0) - t_vic)
        out.append(
            RatioRegression(
                name,
                float(err.mean()),
                _t_interval(err),
                float(base_err.mean()),
                _t_interval(base_err - err),
                int(err.size),
            )
        )
    return out
