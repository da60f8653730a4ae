"""What every attack shares: the :class:`Population` protocol, scores (:class:`AttackScore`,
:func:`score_predictions`, Clopper–Pearson intervals from :mod:`distprivacy.intervals`), input
checks and :class:`_ModelAttack` (``predict`` on each victim population, then score)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.intervals import binomial_ci


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
        Clopper–Pearson interval of the accuracy at confidence ``level``.
    advantage : float
        |Pr[b̂=1 | b=1] − Pr[b̂=1 | b=0]| (Suri & Evans, §2).
    n : int
        Number of victim models scored.
    level : float
        The interval's confidence (default 0.95).
    correct : int or None
        Number of correct guesses (None: round(accuracy · n)).
    """

    name: str
    accuracy: float
    interval: tuple[float, float]
    advantage: float
    n: int
    level: float = 0.95
    correct: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data. ``ci95`` is always the 95 % interval; at another ``level`` the interval
        at that level is ``ci`` (with ``level``)."""
        out = {
            "name": self.name,
            "accuracy": self.accuracy,
            "ci95": list(self.interval),
            "advantage": self.advantage,
            "n": self.n,
        }
        if self.level != 0.95:
            k = self.correct if self.correct is not None else round(self.accuracy * self.n)
            out["ci95"] = list(accuracy_interval(int(k), self.n, 0.95))
            out["ci"] = list(self.interval)
            out["level"] = self.level
        return out


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
    return AttackScore(
        name, correct / n, accuracy_interval(correct, n, level), adv, n, level, correct
    )


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------


def _has(pop: Any, attr: str) -> bool:
    """``hasattr``, except that a property raising DistPrivacyError (a population of trees has
    no weights) still counts as present: the attacks that need it say so when they read it."""
    try:
        return hasattr(pop, attr)
    except DistPrivacyError:
        return True


def _check_population(pop: Population, what: str) -> None:
    for attr in ("weights", "biases", "n_models", "layer_sizes"):
        if not _has(pop, attr):
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
    if (
        y.dtype.kind not in "biuf"
        or not (np.isfinite(y).all() and (y >= 0).all())
        or not (np.mod(y, 1) == 0).all()
    ):
        raise DistPrivacyError(
            f"{name}: labels y must be class indices 0, 1, ... (0/1 for a binary label)"
        )
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
