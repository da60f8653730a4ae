"""The distribution inference game of Suri & Evans (*Formalizing Distribution Inference Risks*,
§2): disjoint data for the victim (the model trainer B) and the adversary A, many datasets per
distribution transformer, models trained on them, and the adversary's advantage.

The game: B picks b ∈ {0, 1} uniformly, samples D ~ G_b(D), trains M on D; A sees M and outputs
b̂. The adversary's advantage is Adv = |Pr[b̂ = 1 | b = 1] − Pr[b̂ = 1 | b = 0]| (§2; written
there as |Pr[b̂ | b] − Pr[b̂ | ¬b]|), 0 for guessing; with equally many models per b, accuracy =
(1 + Pr[b̂=1|b=1] − Pr[b̂=1|b=0]) / 2.

* :func:`stratified_split` / :func:`split_game` — disjoint victim and adversary (and train/test)
  splits, stratified on the property and the label as in Appendix A.1.
* :func:`sample_datasets` — ``n_datasets`` datasets of ``n`` rows from a transformer, one
  vectorised draw, as an ``(n_datasets, n)`` array of row positions.
* :func:`train_models` — sample datasets from G_b on a split and train a
  :class:`~distprivacy.inference.population.ModelPopulation` on them (batched).
* :func:`advantage` — accuracy and advantage of guesses, with confidence intervals (Wilson /
  Newcombe, or Clopper–Pearson with a Bonferroni split); :func:`binomial_ci`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference._seeds import integer_seed
from distprivacy.inference.population import ModelPopulation
from distprivacy.inference.training import train_population
from distprivacy.inference.transformers import (
    DistributionTransformer,
    _check_size,
    _predicate,
    as_transformer,
)
from distprivacy.intervals import CI_METHODS, binomial_ci, check_ci_method, check_level
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.spec import Predicate, check_column

__all__ = [
    "CI_METHODS",
    "GameOutcome",
    "GameSplits",
    "absolute_ci",
    "advantage",
    "binomial_ci",
    "difference_ci",
    "sample_datasets",
    "split_game",
    "stratified_split",
    "train_models",
]


# ---------------------------------------------------------------------------------------------
# Splits
# ---------------------------------------------------------------------------------------------


def _strata_codes(data: pd.DataFrame, by: Sequence[str | Predicate]) -> np.ndarray:
    """One integer code per row: its combination of the ``by`` columns / predicates."""
    if not by:
        return np.zeros(len(data), dtype=np.int64)
    keys = []
    for item in by:
        if isinstance(item, Predicate) or (isinstance(item, str) and _looks_like_predicate(item)):
            keys.append(_predicate(item, "stratum").evaluate(data).astype(np.int64))
        elif isinstance(item, str):
            check_column(data, item)
            col = data[item]
            if col.isna().any():
                raise DistPrivacyError(
                    f"column {item!r} has missing values; drop them before splitting"
                )
            keys.append(pd.factorize(col, sort=True)[0].astype(np.int64))
        else:
            raise DistPrivacyError(
                f"stratify by column names or predicates, got {type(item).__name__}"
            )
    return np.unique(np.column_stack(keys), axis=0, return_inverse=True)[1].ravel()


def _looks_like_predicate(text: str) -> bool:
    return any(op in text for op in ("==", "!=", "<", ">"))


def stratified_split(
    data: pd.DataFrame,
    *,
    by: Sequence[str | Predicate],
    shares: Sequence[float],
    random_state: RandomState = None,
) -> tuple[np.ndarray, ...]:
    """Split the rows of ``data`` into disjoint parts with the same mix of every stratum.

    Parameters
    ----------
    by
        Columns (every distinct value is a stratum) or predicates (two strata each), e.g.
        ``["sex", "race", "income"]``; the strata are their combinations.
    shares
        Fractions of the rows for each part, positive, summing to 1.
    random_state
        Integer seed, Generator, or None (fresh entropy; all of this is simulation,
        :func:`~distprivacy.randomness.check_random_state` with ``secure=False``).

    Returns
    -------
    tuple of ndarray
        Sorted row positions of each part; together they cover every row exactly once. In
        each stratum the part sizes are its size times the shares, rounded by largest
        remainders (ties broken at random).
    """
    if not isinstance(data, pd.DataFrame):
        raise DistPrivacyError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    sh = np.asarray(shares, dtype=np.float64)
    if sh.ndim != 1 or sh.size < 2 or np.any(~np.isfinite(sh)) or np.any(sh <= 0):
        raise DistPrivacyError(
            f"shares must be at least two positive fractions, got {list(shares)}"
        )
    if not math.isclose(float(sh.sum()), 1.0, abs_tol=1e-9):
        raise DistPrivacyError(f"shares must sum to 1, got {float(sh.sum())}")
    if isinstance(by, str | Predicate):
        by = [by]
    codes = _strata_codes(data, list(by))
    gen = check_random_state(random_state, secure=False)
    order = gen.permutation(len(data))
    # stable sort by stratum of the shuffled rows: each stratum's rows in random order
    perm = order[np.argsort(codes[order], kind="stable")]
    sizes = np.bincount(codes)
    # largest-remainder allocation per stratum (vectorised over strata)
    exact = sizes[:, None] * sh[None, :]
    alloc = np.floor(exact).astype(np.int64)
    short = sizes - alloc.sum(axis=1)
    # ties between equal remainders are broken at random (not always for the first part)
    remainder = np.round(exact - alloc, 12)
    order_parts = np.lexsort((gen.random(exact.shape), -remainder), axis=-1)
    rank = np.argsort(order_parts, axis=1)
    alloc += rank < short[:, None]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    part_of = np.empty(len(data), dtype=np.int64)
    pos = np.arange(len(data))
    stratum_of_pos = np.repeat(np.arange(len(sizes)), sizes)
    within = pos - starts[stratum_of_pos]
    cuts = np.cumsum(alloc, axis=1)[stratum_of_pos]
    part_of[perm] = (within[:, None] >= cuts).sum(axis=1)
    return tuple(np.flatnonzero(part_of == j) for j in range(sh.size))


@dataclass(frozen=True)
class GameSplits:
    """Disjoint row positions of the four parts of the game's data."""

    victim_train: np.ndarray
    victim_test: np.ndarray
    adversary_train: np.ndarray
    adversary_test: np.ndarray

    def sizes(self) -> dict[str, int]:
        return {k: int(v.size) for k, v in asdict(self).items()}


def split_game(
    data: pd.DataFrame,
    *,
    property: str | Predicate | Sequence[str | Predicate],
    label: str | Predicate,
    adversary_share: float = 0.5,
    test_share: float = 0.2,
    random_state: RandomState = None,
) -> GameSplits:
    """Victim / adversary and train / test splits, disjoint, stratified on property and label.

    Appendix A.1: "While performing data splits (for adversary/victim and train/test), we use
    stratification with the sex/race attribute and class labels". ``property`` may be one
    predicate/column or several (e.g. ``["sex", "race"]`` to stratify on both, so the same
    splits serve every property). The shares (half for each party, a fifth of each for
    testing) are our choice; the paper does not state them. ``random_state`` as in
    :func:`stratified_split`.
    """
    for name, v in (("adversary_share", adversary_share), ("test_share", test_share)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1:
            raise DistPrivacyError(f"{name} must be a number strictly between 0 and 1, got {v!r}")
    props = [property] if isinstance(property, str | Predicate) else list(property)
    a, t = float(adversary_share), float(test_share)
    vt, vs, at, as_ = stratified_split(
        data,
        by=[*props, label],
        shares=[(1 - a) * (1 - t), (1 - a) * t, a * (1 - t), a * t],
        random_state=random_state,
    )
    return GameSplits(victim_train=vt, victim_test=vs, adversary_train=at, adversary_test=as_)


# ---------------------------------------------------------------------------------------------
# Datasets and models
# ---------------------------------------------------------------------------------------------


def sample_datasets(
    data: pd.DataFrame,
    transformer: DistributionTransformer,
    *,
    n: int,
    n_datasets: int,
    rows: np.ndarray | None = None,
    random_state: RandomState = None,
) -> np.ndarray:
    """``(n_datasets, n)`` row positions into ``data``: independent datasets from G(pool).

    ``rows`` is the pool (a split, e.g. ``splits.adversary_train``); ``transformer`` a
    :class:`~distprivacy.inference.transformers.DistributionTransformer` or a plain function
    (wrapped in a ``FunctionTransformer``); ``random_state`` a seed, a generator or None
    (fresh entropy).
    """
    return as_transformer(transformer).sample(
        data, n=n, n_datasets=n_datasets, rows=rows, random_state=random_state
    )


def train_models(
    data: pd.DataFrame,
    X: np.ndarray,
    y: np.ndarray,
    transformer: DistributionTransformer,
    *,
    rows: np.ndarray,
    n: int,
    n_models: int,
    random_state: RandomState = None,
    b: int | None = None,
    **train_kwargs,
) -> ModelPopulation:
    """Sample ``n_models`` datasets of ``n`` rows from G(pool ``rows``) and train one model on
    each (batched, :func:`~distprivacy.inference.training.train_population`).

    ``X``, ``y`` are the encoded features and labels of every row of ``data``. The dataset
    sampler and the trainer get independent seeds derived from one integer seed: ``random_state``
    itself if an integer, else drawn from it (a generator, or None: fresh entropy). ``meta``
    records the transformer (and, for a ratio filter, ``property`` and ``ratio``), ``label`` =
    ``b`` (which of G0/G1 it is, if given) and that seed (``meta["seed"]``: the population can
    be retrained from it); entries of ``meta=`` passed in take precedence.
    """
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] != len(data) or np.shape(y) != (len(data),):
        raise DistPrivacyError(
            f"X must be ({len(data)}, d) and y ({len(data)},): features and labels of every row "
            "of data"
        )
    _check_size("n_models", n_models)
    seed = integer_seed(random_state)
    transformer = as_transformer(transformer)
    ss = np.random.SeedSequence(seed)
    data_seed, train_seed = (int(s) for s in ss.generate_state(2, dtype=np.uint64))
    idx = transformer.sample(data, n=n, n_datasets=n_models, rows=rows, random_state=data_seed)
    desc = transformer.describe()
    meta = {"transformer": desc, "seed": seed}
    if desc.get("kind") == "ratio":  # top-level, as the attacks' ratio regression reads them
        meta["property"], meta["ratio"] = desc["property"], desc["ratio"]
    if b is not None:
        if b not in (0, 1):
            raise DistPrivacyError(f"b must be 0 (G0) or 1 (G1), got {b!r}")
        meta["label"] = int(b)
    meta.update(train_kwargs.pop("meta", None) or {})
    return train_population(X, y, indices=idx, random_state=train_seed, meta=meta, **train_kwargs)


# ---------------------------------------------------------------------------------------------
# Advantage and accuracy with confidence intervals
# ---------------------------------------------------------------------------------------------


def difference_ci(k1, n1, k0, n0, *, level: float = 0.95, method: str = "wilson"):
    """Interval for d = k1/n1 − k0/n0, two independent proportions (vectorised).

    ``"wilson"``: Newcombe's hybrid score interval (Newcombe 1998, method 10) from the two
    Wilson intervals. ``"clopper-pearson"``: [lo₁ − hi₀, hi₁ − lo₀] from Clopper–Pearson
    intervals at level 1 − (1 − level)/2 each (Bonferroni: jointly at least ``level``).
    """
    level = check_level(level)
    check_ci_method(method)
    p1 = np.asarray(k1, dtype=np.float64) / np.asarray(n1, dtype=np.float64)
    p0 = np.asarray(k0, dtype=np.float64) / np.asarray(n0, dtype=np.float64)
    d = p1 - p0
    if method == "wilson":
        l1, u1 = binomial_ci(k1, n1, level=level, method="wilson")
        l0, u0 = binomial_ci(k0, n0, level=level, method="wilson")
        lo = d - np.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
        hi = d + np.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    else:
        half = 1 - (1 - level) / 2
        l1, u1 = binomial_ci(k1, n1, level=half, method="clopper-pearson")
        l0, u0 = binomial_ci(k0, n0, level=half, method="clopper-pearson")
        lo, hi = np.subtract(l1, u0), np.subtract(u1, l0)
    if np.ndim(lo) == 0:
        return float(lo), float(hi)
    return lo, hi


def absolute_ci(lo, hi):
    """The image of an interval [lo, hi] for d under |·| (vectorised)."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    straddle = (lo <= 0) & (hi >= 0)
    a_lo = np.where(straddle, 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    a_hi = np.maximum(np.abs(lo), np.abs(hi))
    a_lo, a_hi = np.clip(a_lo, 0, 1), np.clip(a_hi, 0, 1)
    if a_lo.ndim == 0:
        return float(a_lo), float(a_hi)
    return a_lo, a_hi


@dataclass(frozen=True)
class GameOutcome:
    """How well guesses b̂ recover b.

    Attributes
    ----------
    accuracy, accuracy_ci
        Share of correct guesses and its interval.
    advantage, advantage_ci
        |Pr[b̂=1 | b=1] − Pr[b̂=1 | b=0]| (Suri & Evans §2) and its interval.
    tpr, fpr
        Pr[b̂=1 | b=1] and Pr[b̂=1 | b=0].
    n0, n1
        Number of models with b = 0 and b = 1.
    level, method
        Confidence level and interval method.
    """

    accuracy: float
    accuracy_ci: tuple[float, float]
    advantage: float
    advantage_ci: tuple[float, float]
    tpr: float
    fpr: float
    n0: int
    n1: int
    level: float
    method: str

    def to_dict(self) -> dict:
        return asdict(self)


def advantage(
    b: np.ndarray, b_hat: np.ndarray, *, level: float = 0.95, method: str = "wilson"
) -> GameOutcome:
    """Accuracy and advantage of guesses ``b_hat`` of the true bits ``b``.

    Accuracy gets a binomial interval (:func:`binomial_ci`); the signed difference
    d = tpr − fpr gets :func:`difference_ci` (Newcombe's score interval, or Clopper–Pearson with
    a Bonferroni split), and the advantage the image of that interval under |·|
    (:func:`absolute_ci`).
    """
    b = np.asarray(b)
    b_hat = np.asarray(b_hat)
    if b.ndim != 1 or b.shape != b_hat.shape:
        raise DistPrivacyError(
            f"b and b_hat must be 1-D arrays of the same length, got {b.shape} and {b_hat.shape}"
        )
    for name, v in (("b", b), ("b_hat", b_hat)):
        if not np.all((v == 0) | (v == 1)):
            raise DistPrivacyError(f"{name} must hold bits 0/1")
    level = check_level(level)
    check_ci_method(method)
    n1 = int(np.sum(b == 1))
    n0 = int(b.size - n1)
    if n0 == 0 or n1 == 0:
        raise DistPrivacyError(
            f"need models of both distributions (got {n0} with b=0 and {n1} with b=1)"
        )
    k1 = int(np.sum(b_hat[b == 1] == 1))
    k0 = int(np.sum(b_hat[b == 0] == 1))
    tpr, fpr = k1 / n1, k0 / n0
    correct = int(np.sum(b == b_hat))
    acc_ci = binomial_ci(correct, b.size, level=level, method=method)
    adv_ci = absolute_ci(*difference_ci(k1, n1, k0, n0, level=level, method=method))
    return GameOutcome(
        accuracy=correct / b.size,
        accuracy_ci=acc_ci,
        advantage=abs(tpr - fpr),
        advantage_ci=adv_ci,
        tpr=tpr,
        fpr=fpr,
        n0=n0,
        n1=n1,
        level=level,
        method=method,
    )
