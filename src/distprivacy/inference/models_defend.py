"""Defending what ships: ``distprivacy models defend`` on the user's own table.

The game of :mod:`distprivacy.inference.models_audit` (two or more ratios α0, α1, … of a protected
property; the rows split into an adversary's half and a victim's half) with a *release* instead
of the model itself:

* ``outputs`` — the model's probabilities on a public query set of ``n_query`` rows
  (:class:`~distprivacy.inference.output_defence.OutputStatistic`);
* ``parameters`` — the coefficients and intercept of a binary linear model
  (:class:`ParameterStatistic`).

The defender trains its own shadow models on its half at each ratio, fits the Gaussian model
of the release under each
(:func:`~distprivacy.inference.output_defence.fit_output_models`; every pair of
ratios is a secret, Def. 3.1 of the main paper) and calibrates the main paper's Gaussian
mechanisms on it at (ε, δ) with the library's calibration
(:func:`~distprivacy.inference.output_defence.calibrate_defences`: DauM-G, OptM-G; ExpM-G the
baseline). Other models from the victim's half — never used by the defender's fit — are the
released ones. Per mechanism, :func:`evaluate_release` reports:

* the task accuracy of the defended release (outputs: the noisy probabilities thresholded at
  1/2 against the query rows' labels; parameters: the noisy-coefficient model's accuracy on
  rows of the adversary's half, which no released model was trained on), averaged over the
  released models;
* the guarantee's bound on any attacker's accuracy (only when the guarantee is verified for
  this noise; fail closed otherwise);
* two defence-aware attacks — the adversary knows the noise distribution: a likelihood-ratio
  test between Gaussians fitted on its own shadows' releases with the noise covariance added,
  and a meta-classifier trained on its shadows' *noisy* releases — with 95 % Clopper–Pearson
  intervals, and whether an interval lies wholly above the bound (``exceeds_bound``: the
  guarantee is contradicted; a true bound is exceeded so with probability at most 2.5 % per
  attack). With more than two ratios both attacks are run on every pair of them: the bound
  holds for each pair.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference._user_code import user_code
from distprivacy.inference.attacks import score_predictions
from distprivacy.inference.models_audit import (
    AuditData,
    check_ratios,
    prepare_audit,
    train_ratio_population,
)
from distprivacy.inference.output_defence import (
    DEFAULT_MECHANISMS,
    OutputStatistic,
    calibrate_defences,
    fit_output_models,
)
from distprivacy.inference.saved import EstimatorPopulation
from distprivacy.mechanisms import Calibration
from distprivacy.models import GaussianModel
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.targets import EpsDelta

__all__ = [
    "DEFENDED_FORMAT",
    "RELEASES",
    "DefendResult",
    "ParameterStatistic",
    "defend_game",
    "evaluate_release",
    "save_defended",
    "with_noise_scaled",
]

#: What ``models defend`` can release.
RELEASES = ("outputs", "parameters")


@dataclass(frozen=True)
class ParameterStatistic:
    """F(M): a binary linear model's coefficients and intercept (``coef_``, ``intercept_``)."""

    feature_names: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return (*(f"coef[{n}]" for n in self.feature_names), "intercept")

    @property
    def dim(self) -> int:
        return len(self.feature_names) + 1

    def of_model(self, model: Any) -> np.ndarray:
        """One model's (d + 1,) parameter vector."""
        coef = np.asarray(getattr(model, "coef_", None), dtype=float)
        inter = np.atleast_1d(np.asarray(getattr(model, "intercept_", np.zeros(1)), dtype=float))
        if coef.ndim != 2 or coef.shape != (1, self.dim - 1) or inter.shape != (1,):
            raise DistPrivacyError(
                f"`release='parameters'` needs a binary linear model (coef_ of shape (1, "
                f"{self.dim - 1}) and one intercept); {type(model).__name__} has none — use "
                "`estimator='logistic'` or `release='outputs'`"
            )
        return np.r_[coef[0], inter]

    def __call__(self, pop: Any) -> np.ndarray:
        return np.stack([self.of_model(m) for m in pop.models])

    def accuracy(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(m,): accuracy on (X, y) of the linear models with parameters ``params`` (m, d+1)."""
        z = X @ params[:, :-1].T + params[:, -1]
        return ((z > 0) == (y[:, None] == 1)).mean(axis=0)


def with_noise_scaled(cal: Calibration, factor: float) -> Calibration:
    """The calibration with its noise multiplied by ``factor`` but its *claimed* guarantee
    unchanged — a deliberately wrong defence, to check that the attacks catch it (tests)."""
    n = cal.noise
    noise = dataclasses.replace(
        n,
        scales=np.asarray(n.scales) * factor,
        factor=None if n.factor is None else np.asarray(n.factor) * factor,
    )
    return dataclasses.replace(cal, noise=noise, mechanism=f"{cal.mechanism}×{factor:g}")


def _shrunk_gaussians(F0: np.ndarray, F1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.covariance import LedoitWolf

    means = np.stack([F0.mean(axis=0), F1.mean(axis=0)])
    covs = np.stack([LedoitWolf().fit(F).covariance_ for F in (F0, F1)])
    return means, covs


def evaluate_release(
    adversary: Sequence[np.ndarray],
    released: Sequence[np.ndarray],
    task_accuracy: Callable[[np.ndarray], np.ndarray],
    calibrations: Mapping[str, Calibration | None],
    *,
    random_state: RandomState = None,
    level: float = 0.95,
    ratios: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """Task accuracy and defence-aware attack accuracy for each defence of a release.

    Parameters
    ----------
    adversary : (F0, F1, …)
        The release of each of the adversary's shadow models from G0, G1, …: (m_i, k) each.
    released : (V0, V1, …)
        The true release of each released model from G0, G1, … (scored), as many as
        ``adversary``.
    task_accuracy : callable
        (m, k) releases ↦ (m,) task accuracies.
    calibrations : mapping name → Calibration or None
        None: the undefended release.
    random_state : seed, Generator or None
        The noise draws (a simulation: None is fresh entropy).
    level : float
        Confidence of the Clopper–Pearson intervals.
    ratios : sequence of float, optional
        The ratio each distribution stands for, to name the pairs (default 0, 1, …).

    Returns
    -------
    One dict per defence: ``defence``, ``mechanism``, ``epsilon``, ``delta``, ``verified``,
    ``max_attack_accuracy`` (None when the guarantee is not verified, or no defence),
    ``expected_l2_error``, ``task_accuracy``, ``attacks`` (name, accuracy, ``ci95``, advantage,
    n, ``pair`` — the two ratios told apart — and ``exceeds_bound``, read from the interval
    at ``level`` (``ci95``, or ``ci`` at another level); both attacks on every
    pair of distributions, the pairs in order) and ``within_bound`` (no attack's interval
    wholly above the bound; None without a verified bound).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from distprivacy.statistic_attacks import LikelihoodRatioAttack

    A = [np.asarray(a, dtype=float) for a in adversary]
    V = [np.asarray(v, dtype=float) for v in released]
    if len(A) < 2 or len(V) != len(A):
        raise DistPrivacyError(
            f"give the releases of two or more distributions, as many released as the "
            f"adversary's ({len(A)} and {len(V)})"
        )
    labels = list(ratios) if ratios is not None else list(range(len(A)))
    if len(labels) != len(A):
        raise DistPrivacyError(f"{len(labels)} ratios for {len(A)} distributions")
    gen = check_random_state(random_state, secure=False)
    pairs = [(i, j) for i in range(len(A)) for j in range(i + 1, len(A))]
    lrs = {p: LikelihoodRatioAttack(*_shrunk_gaussians(A[p[0]], A[p[1]])) for p in pairs}
    sizes = np.cumsum([0, *(len(a) for a in A)])
    rows = []
    for name, cal in calibrations.items():

        def noisy(F: np.ndarray, cal: Calibration | None = cal) -> np.ndarray:
            return F if cal is None else F + cal.sample_noise(F.shape[0], gen)

        An = noisy(np.concatenate(A))
        Vn = [noisy(v) for v in V]
        cov = None if cal is None else cal.noise_covariance
        verified = cal is not None and cal.verified
        bound = cal.max_attack_accuracy if verified else None
        attacks = []
        for i, j in pairs:
            lr = lrs[(i, j)]
            s_lr = score_predictions(
                lr.log_likelihood_ratio(Vn[i], cov) > 0,
                lr.log_likelihood_ratio(Vn[j], cov) > 0,
                "likelihood-ratio test (knows the noise)",
                level,
            )
            Ai, Aj = An[sizes[i] : sizes[i + 1]], An[sizes[j] : sizes[j + 1]]
            lab = np.r_[np.zeros(len(Ai), int), np.ones(len(Aj), int)]
            clf = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
            clf.fit(np.concatenate([Ai, Aj]), lab)
            s_mc = score_predictions(
                clf.predict(Vn[i]),
                clf.predict(Vn[j]),
                "meta-classifier on noisy shadow releases",
                level,
            )
            attacks += [
                {
                    **s.to_dict(),
                    "pair": [labels[i], labels[j]],
                    "exceeds_bound": bound is not None and s.interval[0] > bound,
                }
                for s in (s_lr, s_mc)
            ]
        rows.append(
            {
                "defence": name,
                "mechanism": "none" if cal is None else cal.mechanism,
                "epsilon": None if cal is None else cal.epsilon,
                "delta": None if cal is None else cal.delta,
                "verified": verified,
                "max_attack_accuracy": bound,
                "expected_l2_error": 0.0 if cal is None else cal.expected_l2_error,
                "task_accuracy": float(np.mean(task_accuracy(np.concatenate(Vn)))),
                "attacks": attacks,
                "within_bound": (
                    None if bound is None else not any(a["exceeds_bound"] for a in attacks)
                ),
            }
        )
    return rows


@dataclass
class DefendResult:
    """What :func:`defend_game` found, and what ``--save`` needs."""

    prep: AuditData
    ratios: tuple[float, ...]
    release: str
    statistic: Any
    model: GaussianModel
    calibrations: list[Calibration]
    skipped: dict[str, str]
    rows: list[dict[str, Any]]
    query_rows: np.ndarray | None = None
    eval_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    #: The true releases of the adversary's shadow models and of the released models, one
    #: array per ratio each, and the task accuracy of releases: :func:`evaluate_release`
    #: again, other noise.
    adversary_values: tuple[np.ndarray, ...] | None = None
    released_values: tuple[np.ndarray, ...] | None = None
    task_accuracy: Callable[[np.ndarray], np.ndarray] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "protect": self.prep.protect,
            "ratios": list(self.ratios),
            "release": self.release,
            "dimension": len(self.model.statistic_names_),
            "defences": self.rows,
            "skipped": self.skipped,
        }


def _check_linear(estimator: Any, prep: AuditData, stat: ParameterStatistic) -> None:
    """Refuse a non-linear estimator for ``--release parameters`` before any real training
    (one fit on a few rows of both labels)."""
    from sklearn.base import clone

    rows = np.r_[np.flatnonzero(prep.y == 0)[:20], np.flatnonzero(prep.y == 1)[:20]]
    with user_code(estimator, "training"):
        model = clone(estimator).fit(prep.X[rows], prep.y[rows])
    stat.of_model(model)


def defend_game(
    data: pd.DataFrame,
    *,
    label: str,
    protect: str,
    ratios: Sequence[float],
    estimator: Any,
    release: str,
    target: EpsDelta,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
    n_models: int,
    n_train: int,
    n_query: int = 8,
    features: Sequence[str] | None = None,
    random_state: RandomState = None,
    n_jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    level: float = 0.95,
) -> DefendResult:
    """Train, fit, calibrate and re-attack (see the module docstring).

    ``level``: confidence of the attacks' Clopper–Pearson intervals (checking several
    defences against their bounds at once calls for a Bonferroni-corrected level).

    ``ratios``: two or more distinct shares of the protected rows; every pair of them is
    protected (the calibration covers each pair, and the attacks are run on each).

    ``target``: the (ε, δ) every defence is calibrated to (:class:`~distprivacy.targets.EpsDelta`).

    ``n_models`` models per ratio for each of: the adversary's shadows, the defender's shadows
    (they fit the Gaussian model) and the released models (scored): 3 · ``n_models`` per ratio.
    """
    if release not in RELEASES:
        raise DistPrivacyError(f"`release` must be one of {', '.join(RELEASES)}, got {release!r}")
    if not isinstance(target, EpsDelta):
        raise DistPrivacyError(f"`target` must be an (ε, δ) target (EpsDelta), got {target!r}")
    alphas = check_ratios(ratios, n_train)
    gen = check_random_state(random_state, secure=False)
    prep = prepare_audit(
        data, label=label, protect=protect, features=features, random_state=gen, binary=True,
        drop_first=True,
    )  # fmt: skip
    stat: Any
    if release == "outputs":
        if n_query < 1 or n_query > prep.halves[0].size:
            raise DistPrivacyError(f"`n_query` must be between 1 and {prep.halves[0].size}")
        query_rows = np.sort(gen.choice(prep.halves[0], size=n_query, replace=False))
        stat = OutputStatistic(prep.X[query_rows])
        y_query = prep.y[query_rows]

        def task(F: np.ndarray) -> np.ndarray:
            return ((F > 0.5) == (y_query == 1)).mean(axis=1)

        eval_rows = query_rows
    else:
        query_rows = None
        stat = ParameterStatistic(tuple(prep.feature_names))
        _check_linear(estimator, prep, stat)
        eval_rows = np.sort(
            gen.choice(prep.halves[0], size=min(2000, prep.halves[0].size), replace=False)
        )
        Xe, ye = prep.X[eval_rows], prep.y[eval_rows]

        def task(F: np.ndarray) -> np.ndarray:
            return stat.accuracy(F, Xe, ye)

    k = len(stat.names)
    if n_models < k + 1:
        raise DistPrivacyError(
            f"the release has {k} numbers; fitting its covariance needs `n_models` of at least "
            f"{k + 1} (or a smaller `n_query` / fewer `features`)"
        )
    total, done = 3 * len(alphas) * n_models, 0

    def step(j: int) -> None:
        nonlocal done
        done += j
        if progress is not None:
            progress(done, total)

    def pop(half: int, ratio: float, m: int) -> EstimatorPopulation:
        return train_ratio_population(
            prep, half, ratio, estimator, n_models=m, n_train=n_train, gen=gen,
            n_jobs=n_jobs, progress=step,
        )  # fmt: skip

    adv = tuple(stat(pop(0, a, n_models)) for a in alphas)
    vic = [pop(1, a, 2 * n_models) for a in alphas]
    defender = [EstimatorPopulation(p.models[:n_models], p.meta) for p in vic]
    released = tuple(stat(EstimatorPopulation(p.models[n_models:], p.meta)) for p in vic)
    model = fit_output_models(defender, stat)
    cals, skipped = calibrate_defences(
        model,
        [target.epsilon],
        target.delta,
        tuple(mechanisms),
        dp_baseline=False,
        output_range=None,
    )
    defences: dict[str, Calibration | None] = {"none": None}
    defences.update({c.mechanism: c for c in cals})
    seed = int(gen.integers(2**31))
    rows = evaluate_release(
        adv, released, task, defences, random_state=seed, level=level, ratios=alphas
    )
    return DefendResult(
        prep, alphas, release, stat, model, cals, skipped, rows, query_rows, eval_rows,
        adv, released, task,
    )  # fmt: skip


#: The ``format`` field of a file written by :func:`save_defended`.
DEFENDED_FORMAT = "distprivacy-defended-release"


def save_defended(
    path: str,
    result: DefendResult,
    estimator: Any,
    mechanisms: Sequence[str],
    game: Mapping[str, Any],
    *,
    random_state: RandomState = None,
) -> Any:
    """Release one model with the first verified mechanism of ``mechanisms`` and write the
    release and its guarantee as JSON (like a plan: format, library version, time, the game,
    the Gaussian model's moments, the calibration and the guarantee, a SHA-256 digest of the
    rest), created 0600 and never over a path that is not a regular file.

    The model is a clone of ``estimator`` fitted on ``n_train`` rows drawn uniformly from the
    whole table (``random_state``): the model the user would ship. Its release F(M) + Z draws
    Z from the secure generator (OpenDP), never from ``random_state``.

    Raises
    ------
    DistPrivacyError
        When no mechanism of ``mechanisms`` was calibrated with a verified guarantee (nothing
        is written: fail closed).
    """
    import hashlib
    import json
    from datetime import UTC, datetime

    from sklearn.base import clone

    from distprivacy._json import dumps_json, jsonable
    from distprivacy._version import __version__
    from distprivacy.outputs import atomic_write, check_output_file

    target = check_output_file(path, option="`save`")
    by_name = {c.mechanism: c for c in result.calibrations}
    chosen = next((by_name[m] for m in mechanisms if m in by_name and by_name[m].verified), None)
    if chosen is None:
        raise DistPrivacyError(
            "no mechanism was calibrated with a verified guarantee; nothing saved (raise "
            "`epsilon` or `n_models`, or try another `mechanism`)"
        )
    prep = result.prep
    gen = check_random_state(random_state, secure=False)
    n_train = int(game["n_train"])
    for _ in range(100):
        rows = gen.choice(len(prep.y), size=min(n_train, len(prep.y)), replace=False)
        if len(np.unique(prep.y[rows])) == prep.n_classes:
            break
    else:
        raise DistPrivacyError("every draw of `n_train` rows held one label only; raise `n_train`")
    with user_code(estimator, "training"):
        fitted = clone(estimator).fit(prep.X[rows], prep.y[rows])
    shipped = EstimatorPopulation([fitted])
    value = result.statistic(shipped)[0]
    released = chosen.release(value)  # secure noise
    model = result.model
    body: dict[str, Any] = {
        "format": DEFENDED_FORMAT,
        "format_version": 1,
        "library_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "game": {**dict(game), "protect": prep.protect, "ratios": list(result.ratios)},
        "release": result.release,
        "statistic_names": list(chosen.statistic_names),
        "query_rows": None if result.query_rows is None else result.query_rows.tolist(),
        "values": np.asarray(released.values, dtype=float).tolist(),
        "secure_noise": bool(released.secure),
        "model": {"means": model.means_, "covariances": model.covariances_},
        "calibration": chosen.to_dict(),
        "guarantee": chosen.guarantee.to_dict(),
    }
    body = jsonable(body)
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    body["digest"] = hashlib.sha256(canonical.encode()).hexdigest()
    return atomic_write(target, dumps_json(body) + "\n", mode=0o600)
