"""The models wing's front door: :func:`audit` and :func:`defend` on a user's table.

``distprivacy models audit`` and ``models defend`` translate their flags into these calls and
print what comes back; a Python user makes the same calls::

    import distprivacy as dp

    found = dp.inference.audit("adult.csv", label="income", protect="sex==Female",
                               ratios=(0.3, 0.5), estimator="logistic", random_state=0)
    print(found.verdict)          # one line
    found.epsilon_lower_bound     # what the attacks prove about ε, at found.delta

    kept = dp.inference.defend(table, label="income", protect="sex==Female",
                               ratios=(0.3, 0.5),
                               settings=dp.inference.DefenceSettings(epsilon=1.0))
    kept.recommended              # the best defence whose bound held, or None

Both take the game's shape as a :class:`GameSettings` (models per ratio, rows per model,
features, workers); :func:`defend` takes what it releases and how it is protected as a
:class:`DefenceSettings`. Results are frozen dataclasses holding the numbers, a verdict and
the (ε, δ) in question; ``to_dict()`` is the command's ``--json``.

The game itself lives in :mod:`~distprivacy.inference.models_audit` (populations, attacks,
regression of the share) and :mod:`~distprivacy.inference.models_defend` (calibration on the
release, defence-aware attacks); this module decides only the game's shape: two ratios are
one game, more are every pair of them plus the regression of the share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distprivacy.exceptions import DistPrivacyError

__all__ = [
    "DEFAULT_DELTA",
    "DefenceAttack",
    "DefenceOutcome",
    "DefenceSettings",
    "GameSettings",
    "ModelAuditResult",
    "ModelDefendResult",
    "PairAudit",
    "audit",
    "defend",
    "implied_epsilon",
]

#: The δ of every (ε, δ) the library states by default (the mechanisms', ``calibrate``'s,
#: ``local distp``'s; ``models defend`` said 1e-5 until issue 33).
DEFAULT_DELTA = 1e-3

#: The releases ``defend`` can protect.
RELEASES = ("outputs", "parameters")

#: The mechanisms ``defend`` calibrates by default (ExpM-G: the baseline).
DEFAULT_DEFENCES: tuple[str, ...] = ("DauM-G", "OptM-G", "ExpM-G")

ProgressFn = Callable[[int, int], None]


# ------------------------------------------------------------------------------------------------
# Settings
# ------------------------------------------------------------------------------------------------


def _positive_int(value: Any, name: str, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DistPrivacyError(f"`{name}` must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class GameSettings:
    """The shape of the game on the user's table (Suri & Evans, §2).

    Attributes
    ----------
    n_models : int
        Models per ratio and population (the adversary's shadows, the victim's models; a
        defence also trains the defender's).
    n_train : int
        Rows per training set (exactly ``round(α · n_train)`` of them protected).
    features : tuple of str, optional
        The feature columns (default: every column but the label; the protected one included).
    n_jobs : int, optional
        Parallel workers for estimators fitted one by one (default: every CPU available).
    """

    n_models: int = 100
    n_train: int = 500
    features: tuple[str, ...] | None = None
    n_jobs: int | None = None

    def __post_init__(self) -> None:
        _positive_int(self.n_models, "n_models")
        _positive_int(self.n_train, "n_train")
        _positive_int(self.n_jobs, "n_jobs", optional=True)
        if self.features is not None:
            if isinstance(self.features, str):
                raise DistPrivacyError("`features` must be a sequence of column names")
            object.__setattr__(self, "features", tuple(str(f) for f in self.features))


@dataclass(frozen=True)
class DefenceSettings:
    """What :func:`defend` releases and how it protects it.

    Attributes
    ----------
    release : {"outputs", "parameters"}
        ``outputs``: the model's probabilities on a public query set of ``n_query`` rows;
        ``parameters``: a binary linear model's coefficients and intercept.
    mechanisms : tuple of str
        Gaussian mechanisms of Chen & Ohrimenko (registry names ending in ``-G``).
    epsilon, delta : float
        The (ε, δ) each mechanism is calibrated to (δ default :data:`DEFAULT_DELTA`).
    n_query : int
        Rows of the public query set (``outputs``).
    level : float
        Confidence of each attack's Clopper–Pearson interval and of the above-the-bound check.
    """

    release: str = "outputs"
    mechanisms: tuple[str, ...] = DEFAULT_DEFENCES
    epsilon: float = 1.0
    delta: float = DEFAULT_DELTA
    n_query: int = 8
    level: float = 0.95

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise DistPrivacyError(
                f"`release` must be one of {', '.join(RELEASES)}, got {self.release!r}"
            )
        names = (self.mechanisms,) if isinstance(self.mechanisms, str) else self.mechanisms
        names = tuple(str(m).strip() for m in names if str(m).strip())
        object.__setattr__(self, "mechanisms", names)
        gaussian = gaussian_mechanisms()
        bad = [m for m in names if m not in gaussian]
        if not names or bad:
            raise DistPrivacyError(
                f"`mechanisms`: unknown or non-Gaussian {bad or list(names)!r}; choose from "
                f"{', '.join(gaussian)}"
            )
        for name, value, ok, words in (
            ("epsilon", self.epsilon, lambda v: 0 < v < math.inf, "a positive number"),
            ("delta", self.delta, lambda v: 0 <= v < 1, "a number in [0, 1)"),
            ("level", self.level, lambda v: 0.5 <= v < 1, "a number in [0.5, 1)"),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not ok(value):
                raise DistPrivacyError(f"`{name}` must be {words}, got {value!r}")
        _positive_int(self.n_query, "n_query")


def gaussian_mechanisms() -> tuple[str, ...]:
    """The registered Gaussian mechanisms (names ending in ``-G``), in registry order."""
    from distprivacy.mechanisms import MECHANISMS

    return tuple(m for m in MECHANISMS if m.endswith("-G"))


# ------------------------------------------------------------------------------------------------
# What an accuracy proves about ε
# ------------------------------------------------------------------------------------------------


def implied_epsilon(accuracy: float, delta: float) -> float:
    """The least ε of any (ε, δ) guarantee an attack of this accuracy (equal priors) is
    consistent with: (ε, δ) bounds every such accuracy by (e^ε + δ)/(1 + e^ε), so
    ε ≥ log((acc − δ)/(1 − acc)); 0 when the accuracy is within that bound at ε = 0, ∞ at
    accuracy 1 (above δ).

    Examples
    --------
    >>> round(implied_epsilon(0.75, 0.0), 4)
    1.0986
    >>> implied_epsilon(0.5, 1e-3)
    0.0
    """
    a = float(accuracy)
    if a >= 1:
        return math.inf if delta < 1 else 0.0
    ratio = (a - delta) / (1 - a)
    return math.log(ratio) if ratio > 1 else 0.0


# ------------------------------------------------------------------------------------------------
# audit
# ------------------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * float(x):.0f} %"


def _share(a: float) -> str:
    return f"{100 * float(a):g} %"


@dataclass(frozen=True)
class PairAudit:
    """The attacks on one pair of shares (α0, α1): each an
    :class:`~distprivacy.inference.AttackScore` (accuracy with its interval)."""

    ratios: tuple[float, float]
    attacks: tuple[Any, ...]

    @property
    def best(self) -> Any:
        """The attack whose accuracy interval lies highest (its lower end)."""
        return max(self.attacks, key=lambda s: s.interval[0])

    @property
    def reveals(self) -> bool:
        """Whether some attack's whole interval lies above a coin flip (50 %)."""
        return bool(self.attacks) and self.best.interval[0] > 0.5

    def to_dict(self) -> dict[str, Any]:
        return {"ratios": list(self.ratios), "attacks": [s.to_dict() for s in self.attacks]}


@dataclass(frozen=True)
class ModelAuditResult:
    """What :func:`audit` measured.

    Attributes
    ----------
    protect : str
        The protected predicate.
    ratios : tuple of float
        The shares told apart.
    estimator : str
        The kind of model (the spec given, or the estimator's class name).
    label_classes : tuple of str
    pairs : tuple of PairAudit
        One per pair of ratios (one for two ratios).
    regression : tuple of RatioRegression
        The share predicted from each model (three distinct ratios or more; else empty).
    delta : float
        The δ at which :attr:`epsilon_lower_bound` is stated.
    game : RatioAudit
        The trained populations (for the report; not compared, not printed).
    """

    protect: str
    ratios: tuple[float, ...]
    estimator: str
    label_classes: tuple[str, ...]
    pairs: tuple[PairAudit, ...]
    regression: tuple[Any, ...]
    delta: float
    game: Any = field(default=None, repr=False, compare=False)

    @property
    def reveals(self) -> bool:
        """Whether the models measurably reveal the share: some attack's interval wholly above
        a coin flip, or a regression's gain interval wholly above 0."""
        return any(p.reveals for p in self.pairs) or any(
            r.gain_interval[0] > 0 for r in self.regression
        )

    @property
    def strongest(self) -> tuple[PairAudit, Any]:
        """The pair and attack whose accuracy interval lies highest."""
        return max(((p, p.best) for p in self.pairs), key=lambda pb: pb[1].interval[0])

    @property
    def epsilon_lower_bound(self) -> float:
        """The ε the strongest attack proves at :attr:`delta` (95 % per interval):
        :func:`implied_epsilon` of its accuracy's lower confidence bound. The models carry no
        guarantee (ε = ∞ as far as anyone can promise); this is what the attacks measured."""
        if not self.pairs:
            return 0.0
        return implied_epsilon(self.strongest[1].interval[0], self.delta)

    @property
    def verdict(self) -> str:
        """One line: whether the share leaks, the strongest attack, and ε at δ."""
        if not self.pairs:
            return "Verdict: no attack was run"
        pair, best = self.strongest
        lo, hi = best.interval
        told = f"{_share(pair.ratios[0])} from {_share(pair.ratios[1])}"
        measured = f"{_pct(best.accuracy)} [{_pct(lo)}, {_pct(hi)}]"
        eps = f"ε ≥ {self.epsilon_lower_bound:.3g} at δ = {self.delta:g}"
        if self.reveals and pair.reveals:
            return (
                f"Verdict: THE SHARE LEAKS. {best.name} tells {told} with accuracy "
                f"{measured}, above a coin flip; no guarantee, and the attacks prove {eps}"
            )
        if self.reveals:  # only the regression of the share reveals it
            return (
                "Verdict: THE SHARE LEAKS: predicted from each model better than guessing the "
                f"mean share; the best attack on a pair: {measured} ({told}); {eps}"
            )
        return (
            f"Verdict: no attack did measurably better than a coin flip (best: {best.name}, "
            f"{measured}, {told}); not a guarantee: the models carry none (ε = ∞ at "
            f"δ = {self.delta:g}); models defend gives one"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``models audit --json``."""
        out: dict[str, Any] = {
            "protect": self.protect,
            "ratios": list(self.ratios),
            "estimator": self.estimator,
            "label_classes": list(self.label_classes),
        }
        if len(self.ratios) == 2:
            out["attacks"] = [s.to_dict() for s in self.pairs[0].attacks]
        else:
            out["pairs"] = [p.to_dict() for p in self.pairs]
            out["regression"] = [r.to_dict() for r in self.regression]
        out.update(
            reveals=self.reveals,
            delta=self.delta,
            epsilon_lower_bound=self.epsilon_lower_bound,
            verdict=self.verdict,
        )
        return out

    def games(self) -> list[dict[str, Any]]:
        """The pairs as the report pages read them: ``{"ratios": [...], "attacks": [...]}``."""
        return [{"ratios": list(p.ratios), "attacks": list(p.attacks)} for p in self.pairs]


def _table(data: Any) -> Any:
    if isinstance(data, str | Path):
        from distprivacy.datasets import load_table

        return load_table(data)
    return data


def _estimator(estimator: Any) -> tuple[Any, str]:
    """The unfitted estimator and its name (a spec string is built by ``make_estimator``)."""
    if isinstance(estimator, str):
        from distprivacy.inference.estimators import make_estimator

        return make_estimator(estimator), estimator
    return estimator, type(estimator).__name__


def audit(
    data: Any,
    label: str,
    protect: str,
    ratios: Sequence[float] = (0.3, 0.5),
    estimator: Any = "logistic",
    *,
    game: GameSettings | None = None,
    delta: float = DEFAULT_DELTA,
    random_state: Any = None,
    progress: ProgressFn | None = None,
) -> ModelAuditResult:
    """How well do models trained on a table reveal the share of protected rows?

    Suri & Evans' game (:mod:`~distprivacy.inference.models_audit`): two ratios are one game
    (every applicable attack, its accuracy with a 95 % interval); more are every pair of them
    and the regression of the share (with three distinct ratios or more). One ratio given twice
    is the null game.

    Parameters
    ----------
    data : DataFrame or path
        The table (a CSV/Parquet path is loaded after the settings are checked).
    label, protect : str
        The column the models predict; the protected predicate, e.g. ``"sex==Female"``.
    ratios : sequence of float
        Two to 11 shares in [0, 1].
    estimator : str or scikit-learn classifier
        ``logistic``, ``mlp``, ``tree``, ``sklearn:MODULE:CLASS``, ``torch:FILE.py:FACTORY``,
        or an unfitted classifier (cloned per model).
    game : GameSettings, optional
        Models per ratio, rows per model, features, workers.
    delta : float
        The δ at which the ε the attacks prove is stated.
    random_state : int, Generator or None
        The game's randomness (a simulation).
    progress : callable (done, total), optional

    Returns
    -------
    ModelAuditResult
    """
    from distprivacy.inference.models_audit import (
        audit_ratios,
        check_ratios,
        pairwise_attacks,
        ratio_regression,
        run_attacks,
    )

    game = GameSettings() if game is None else game
    if not 0 <= float(delta) < 1:
        raise DistPrivacyError(f"`delta` must lie in [0, 1), got {delta!r}")
    alphas = check_ratios(ratios, game.n_train, null_game=True)  # before the table is read
    est, name = _estimator(estimator)
    found = audit_ratios(
        _table(data), label=label, protect=protect, ratios=alphas, estimator=est,
        n_models=game.n_models, n_train=game.n_train, features=game.features,
        random_state=random_state, n_jobs=game.n_jobs, progress=progress,
    )  # fmt: skip
    if len(alphas) == 2:  # seeded as `models audit` of two ratios always was
        pairs = [PairAudit(alphas, tuple(run_attacks(found.game(0, 1), random_state)))]
    else:
        pairs = [
            PairAudit(tuple(g["ratios"]), tuple(g["attacks"]))  # type: ignore[arg-type]
            for g in pairwise_attacks(found, random_state=random_state)
        ]
    regression = ratio_regression(found, random_state=random_state) if len(set(alphas)) > 2 else []
    return ModelAuditResult(
        protect=protect, ratios=alphas, estimator=name,
        label_classes=tuple(str(c) for c in found.prep.classes), pairs=tuple(pairs),
        regression=tuple(regression), delta=float(delta), game=found,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------
# defend
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DefenceAttack:
    """A defence-aware attack on one pair of shares: its accuracy with the interval at the
    settings' ``level``, and whether that interval lies wholly above the defence's bound."""

    name: str
    pair: tuple[float, float]
    accuracy: float
    interval: tuple[float, float]
    exceeds_bound: bool


@dataclass(frozen=True)
class DefenceOutcome:
    """One defence of the release (``"none"``: the release as it is).

    Attributes
    ----------
    defence : str
        ``"none"`` or the mechanism's name.
    epsilon, delta : float or None
        The guarantee calibrated for (None without a defence).
    verified : bool
        Whether the guarantee was verified for this noise.
    max_attack_accuracy : float or None
        The guarantee's bound on any attack (None unless verified).
    task_accuracy : float
        The defended release's accuracy at the model's task.
    expected_l2_error : float
    attacks : tuple of DefenceAttack
    within_bound : bool or None
        No attack's interval wholly above the bound (None without a verified bound).
    """

    defence: str
    epsilon: float | None
    delta: float | None
    verified: bool
    max_attack_accuracy: float | None
    task_accuracy: float
    expected_l2_error: float
    attacks: tuple[DefenceAttack, ...]
    within_bound: bool | None

    @property
    def holds(self) -> bool:
        """A verified bound that no attack's interval lies above."""
        return self.verified and self.within_bound is True

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DefenceOutcome:
        attacks = tuple(
            DefenceAttack(
                name=str(a["name"]),
                pair=(float(a["pair"][0]), float(a["pair"][1])),
                accuracy=float(a["accuracy"]),
                interval=tuple(float(v) for v in a.get("ci", a["ci95"])),  # type: ignore[arg-type]
                exceeds_bound=bool(a["exceeds_bound"]),
            )
            for a in row["attacks"]
        )
        return cls(
            defence=str(row["defence"]), epsilon=row["epsilon"], delta=row["delta"],
            verified=bool(row["verified"]), max_attack_accuracy=row["max_attack_accuracy"],
            task_accuracy=float(row["task_accuracy"]),
            expected_l2_error=float(row["expected_l2_error"]), attacks=attacks,
            within_bound=row["within_bound"],
        )  # fmt: skip


@dataclass(frozen=True)
class ModelDefendResult:
    """What :func:`defend` found.

    Attributes
    ----------
    protect : str
    ratios : tuple of float
    estimator : str
    settings : DefenceSettings
        The release, mechanisms, (ε, δ), query rows and confidence level.
    dimension : int
        Numbers in the release.
    defences : tuple of DefenceOutcome
        The undefended release first, then each calibrated mechanism.
    skipped : mapping
        Mechanisms not calibrated, and why.
    game : DefendResult
        The game's raw result (for :meth:`save`; not compared, not printed).
    """

    protect: str
    ratios: tuple[float, ...]
    estimator: str
    settings: DefenceSettings
    dimension: int
    defences: tuple[DefenceOutcome, ...]
    skipped: Mapping[str, str]
    game: Any = field(default=None, repr=False, compare=False)
    estimator_object: Any = field(default=None, repr=False, compare=False)

    @property
    def epsilon(self) -> float:
        return self.settings.epsilon

    @property
    def delta(self) -> float:
        return self.settings.delta

    @property
    def undefended(self) -> DefenceOutcome:
        return self.defences[0]

    @property
    def recommended(self) -> DefenceOutcome | None:
        """The defence whose bound is verified and held against every attack, with the least
        noise (expected L2 error; ties: the order of ``settings.mechanisms``); None if there is
        none. (All are calibrated to the same (ε, δ); the least noise is the most utility, and
        unlike the measured task accuracy it does not vary with the draw.)"""
        held = [d for d in self.defences[1:] if d.holds]
        return min(held, key=lambda d: d.expected_l2_error) if held else None

    @property
    def verdict(self) -> str:
        """One line: the defence to release with, its guarantee and its cost, or that none held."""
        shares = " vs ".join(_share(a) for a in self.ratios)
        best = self.recommended
        if best is None:
            return (
                f"Verdict: no defence both verified its (ε = {self.epsilon:g}, "
                f"δ = {self.delta:g}) guarantee and held against the attacks: do not release "
                "(raise `epsilon` or `n_models`, or try another `mechanism`)"
            )
        bound = best.max_attack_accuracy
        return (
            f"Verdict: release with {best.defence}: it hides the shares {shares} at "
            f"ε = {self.epsilon:g}, δ = {self.delta:g} (verified): no attack beats "
            f"{100 * (bound or 0):.1f} % accuracy, and none measured above it; least noise "
            f"(expected L2 error {best.expected_l2_error:.3g}), task accuracy "
            f"{best.task_accuracy:.3f} (undefended {self.undefended.task_accuracy:.3f})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``models defend --json``."""
        best = self.recommended
        return {
            "estimator": self.estimator,
            "level": self.settings.level,
            **self.game.to_dict(),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "recommended": None if best is None else best.defence,
            "verdict": self.verdict,
        }

    def save(self, path: str | Path, game: Mapping[str, Any], *, random_state: Any = None) -> Path:
        """Release one model with the first verified mechanism of the settings and write it
        with its guarantee (:func:`~distprivacy.inference.models_defend.save_defended`)."""
        from distprivacy.inference.models_defend import save_defended

        return save_defended(
            str(path), self.game, self.estimator_object, self.settings.mechanisms, game,
            random_state=random_state,
        )  # fmt: skip


def defend(
    data: Any,
    label: str,
    protect: str,
    ratios: Sequence[float] = (0.3, 0.5),
    estimator: Any = "logistic",
    *,
    settings: DefenceSettings | None = None,
    game: GameSettings | None = None,
    random_state: Any = None,
    progress: ProgressFn | None = None,
) -> ModelDefendResult:
    """Defend what a model trained on a table releases, and measure what is left.

    Calibrates each Gaussian mechanism of ``settings`` on the release at (ε, δ), then
    re-attacks the defended release with defence-aware attacks
    (:mod:`~distprivacy.inference.models_defend`). Every pair of ``ratios`` is protected.

    Parameters
    ----------
    data : DataFrame or path
    label, protect : str
    ratios : sequence of float
        Two or more distinct shares.
    estimator : str or scikit-learn classifier
    settings : DefenceSettings, optional
        The release, mechanisms, ε, δ (default 1e-3), query rows, confidence level.
    game : GameSettings, optional
        Models per ratio (each of the adversary's, the defender's and the released), rows per
        model, features, workers.
    random_state : int, Generator or None
    progress : callable (done, total), optional

    Returns
    -------
    ModelDefendResult
    """
    from distprivacy.inference.models_audit import check_ratios
    from distprivacy.inference.models_defend import defend_game
    from distprivacy.targets import EpsDelta

    settings = DefenceSettings() if settings is None else settings
    game = GameSettings() if game is None else game
    alphas = check_ratios(ratios, game.n_train, null_game=False)  # before the table is read
    est, name = _estimator(estimator)
    found = defend_game(
        _table(data), label=label, protect=protect, ratios=alphas, estimator=est,
        release=settings.release, target=EpsDelta(settings.epsilon, settings.delta),
        mechanisms=list(settings.mechanisms), n_models=game.n_models, n_train=game.n_train,
        n_query=settings.n_query, features=game.features, random_state=random_state,
        n_jobs=game.n_jobs, progress=progress, level=settings.level,
    )  # fmt: skip
    return ModelDefendResult(
        protect=protect, ratios=alphas, estimator=name, settings=settings,
        dimension=len(found.model.statistic_names_),
        defences=tuple(DefenceOutcome.from_row(r) for r in found.rows),
        skipped=dict(found.skipped), game=found, estimator_object=est,
    )  # fmt: skip
