"""One release, start to finish, as a library call: :func:`release`.

What ``distprivacy release`` decides — a saved plan or a fresh calibration, the statistics of a
target dataset or given values, a ledger or not, seeded (experiments) or secure noise — is
decided here, once, for Python users and for the command (which only parses and prints):

* ``plan`` given: nothing is refitted; the plan's statistics are computed on ``target`` (the
  n records) or taken from ``values``;
* otherwise the model of f_θ is fitted on ``data`` for ``spec`` and ``query`` (any engine) and
  ``mechanism`` calibrated to ``privacy`` (a :mod:`distprivacy.targets` value); the released
  dataset is ``target``, or — a demonstration only — a random size-n dataset drawn from
  ``data`` as a random θ of the spec says;
* ``ledger`` given: the release is recorded before it is revealed (a fresh calibration becomes
  an unsealed plan that the ledger checks and records; a loaded plan must be sealed by it),
  seeds and ``allow_exact=True`` are refused, and the ledger's budget may refuse it (nothing
  recorded).

Every refusal is a one-line :class:`~distprivacy.exceptions.DistPrivacyError` that names the
API's arguments (between backquotes, which the command line turns into its flags).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.checks import (
    check_bool,
    check_callable,
    check_dataframe,
    check_instance,
    check_keywords,
    check_text,
    check_vector,
)
from distprivacy.exceptions import (
    DemonstrationWarning,
    DistPrivacyError,
    Notice,
    UnrecordedWarning,
)
from distprivacy.guarantee import DEMONSTRATION, UNRECORDED, Release
from distprivacy.mechanisms import Calibration, Mechanism, make_mechanism
from distprivacy.mechanisms.plans import Plan
from distprivacy.models import FModel, fit_model
from distprivacy.query import Query
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Target

__all__ = ["ReleaseOutcome", "release"]

#: The keyword arguments :func:`release` passes on to a mechanism given by name.
MECHANISM_OPTIONS = ("calibration", "covariances", "utility", "delta")


@dataclass(frozen=True)
class ReleaseOutcome:
    """What :func:`release` did.

    Attributes
    ----------
    release : Release
        The released values, the noise and the guarantee.
    calibration : Calibration
        The calibration that made it.
    model : FModel
        The model of f_θ it rests on (the plan's, or the one fitted).
    plan : Plan or None
        The plan released (loaded, or made for the ledger).
    target : str
        What was released, in words.
    recorded : object or None
        The ledger's record (:class:`~distprivacy.ledger.RecordedRelease`) when recorded.
    """

    release: Release
    calibration: Calibration
    model: FModel
    plan: Plan | None
    target: str
    recorded: Any = None


def _check(flag: bool, message: str) -> None:
    if not flag:
        raise DistPrivacyError(message)


def release(
    *,
    plan: Plan | None = None,
    data: Any = None,
    spec: ProtectionSpec | None = None,
    query: Query | str | None = None,
    mechanism: str | Mechanism = "DauM-G",
    privacy: Target | None = None,
    target: pd.DataFrame | None = None,
    values: Any = None,
    ledger: Any = None,
    allow_exact: bool = False,
    random_state: RandomState = None,
    modeling: str = "auto",
    n_samples: int = 1000,
    engine: Any = "auto",
    model_seed: int = 0,
    progress: Callable[[int, int | None], None] | None = None,
    on_step: Callable[[str], None] | None = None,
    **mechanism_options: Any,
) -> ReleaseOutcome:
    """Release statistics with a plan, or with a fresh calibration on ``data``.

    Parameters
    ----------
    plan : Plan, optional
        A saved plan (:meth:`Plan.load`): fixes the model and the mechanism; ``data``,
        ``spec``, ``query``, ``mechanism`` and ``privacy`` must then be left out.
    data, spec, query
        Without a plan: the population (DataFrame, path or engine), what to protect, and the
        statistics (a Query or its text, e.g. ``"mean:age,count:sex==Female"``).
    mechanism : str or Mechanism
        The mechanism's name (``"DauM-G"``, ``"ExpM-L"``, ...) with ``privacy`` and
        ``mechanism_options``, or a mechanism already made (:func:`make_mechanism`, which then
        carries its target); without a plan.
    privacy : EpsDelta, GDP or MaxAttackAccuracy
        The privacy target (:mod:`distprivacy.targets`), with a mechanism's name.
    target : DataFrame, optional
        The n records to release.
    values : array, optional
        With a plan: the statistics' values instead of ``target``.
    ledger : Ledger, optional
        Refused: a ledger releases a registered dataset with an approved plan, both named —
        ``ledger.release("PLAN", "DATASET")`` (:meth:`distprivacy.ledger.Ledger.release`).
        Nothing that calibrates in-process, or reads data the caller hands in, spends a
        ledger's budget (issue 30).
    allow_exact : bool
        Release even when the calibration adds no noise (the true statistics). Refused with a
        ``ledger`` (BudgetExceededError): an exact release exceeds every budget.
    random_state : None, int or Generator
        None: cryptographically secure noise. A seed: reproducible noise, for experiments only.
    modeling, n_samples, engine, model_seed
        How the model is fitted without a plan (:func:`distprivacy.models.fit_model`).
    progress : callable, optional
        ``progress(done, total)``: the model's fit, then the calibration's pairs (the
        Wasserstein mechanisms) report here.
    on_step : callable, optional
        ``on_step(text)`` at the start of each step (``"modelling f_θ"``,
        ``"calibrating DauM-G"``).
    **mechanism_options
        ``calibration`` (the rule), ``covariances``, ``utility`` (and ``delta``, the point at
        which a μ or accuracy target's ε is reported) for a Gaussian mechanism given by name.

    Returns
    -------
    ReleaseOutcome
        The release (noisy values only), the calibration it used and what the command prints
        around it (the target check, the notices).

    Raises
    ------
    DistPrivacyTypeError
        An argument of the wrong type, or an unknown keyword (one line naming it).
    DistPrivacyError
        Any other refusal (module docstring).
    """
    # Every argument's type first, so that a mistake is named before any work is done.
    from distprivacy.engines import Engine
    from distprivacy.ledger import Ledger

    check_keywords(mechanism_options, MECHANISM_OPTIONS, "release()")
    check_instance(plan, "plan", Plan, "a Plan (Plan.load)", optional=True)
    check_instance(data, "data", (pd.DataFrame, str, os.PathLike, Engine),
                   "the population (a DataFrame, a path or an engine)", optional=True)  # fmt: skip
    check_instance(spec, "spec", ProtectionSpec, "a ProtectionSpec", optional=True)
    check_instance(query, "query", (Query, str), "a Query or its text", optional=True)
    check_instance(mechanism, "mechanism", (str, Mechanism), "a mechanism's name or a Mechanism")
    check_instance(privacy, "privacy", (EpsDelta, GDP, MaxAttackAccuracy),
                   "a target (EpsDelta, GDP or MaxAttackAccuracy)", optional=True)  # fmt: skip
    check_dataframe(target, "target", optional=True)
    values = None if values is None else check_vector(values, "values")
    check_instance(ledger, "ledger", Ledger, "a Ledger", optional=True)
    check_bool(allow_exact, "allow_exact")
    check_text(modeling, "modeling")
    check_instance(engine, "engine", (str, Engine), "an engine's name or an Engine")
    check_callable(progress, "progress", "a function progress(done, total)", optional=True)
    check_callable(on_step, "on_step", "a function on_step(text)", optional=True)
    if ledger is not None:
        raise DistPrivacyError(
            "a ledger releases a registered dataset with an approved plan, both named: "
            "ledger.release('PLAN', 'DATASET') (the steward registers datasets with "
            "Ledger.register and approves plans with Ledger.approve); dp.release records "
            "nothing"
        )
    if plan is not None:
        named = (("data", data), ("spec", spec), ("query", query), ("privacy", privacy))
        given = [k for k, v in named if v is not None]
        given += sorted(mechanism_options)
        _check(not given, f"a plan fixes the model and the mechanism; drop {', '.join(given)}")
        return _with_plan(plan, target, values, allow_exact, random_state)

    _check(
        values is None,
        "given values (`values=[a, b, …]`) need a plan; without one, give the n records "
        "(`target=records`)",
    )
    _check(
        data is not None and spec is not None and query is not None,
        "without a plan, give the population `data`, the `spec` and the `query`",
    )
    _check(
        isinstance(spec, ProtectionSpec),
        f"spec must be a ProtectionSpec, got {type(spec).__name__}",
    )
    q = Query.parse(query) if isinstance(query, str) else query
    _check(isinstance(q, Query), f"query must be a Query or its text, got {type(query).__name__}")
    mech = _mechanism(mechanism, privacy, mechanism_options)
    if target is not None:
        _check(
            len(target) == spec.n,
            f"the target has {len(target)} records but `n` is {spec.n}; they must agree",
        )
    from distprivacy.engines import resolve_engine

    step = on_step or (lambda text: None)
    eng = resolve_engine(engine, data)
    eng.validate(q, spec)
    step("modelling f_θ")

    model = fit_model(
        eng, spec, q, engine=eng, method=modeling, n_samples=n_samples,
        random_state=model_seed, progress=progress,
    )  # fmt: skip
    step(f"calibrating {mech.name}")
    if progress is not None and hasattr(mech, "progress"):  # the Wasserstein mechanisms' pairs
        mech.progress = progress
    cal = mech.calibrate(model)
    if target is not None:
        q.validate(target)
        vals, what = q.evaluate(target), f"the {len(target)} records given"
    else:
        gen = check_random_state(random_state, secure=False)
        t = int(gen.integers(len(spec.values)))
        vals = eng.subset_statistics(spec, q, [spec.counts[t]], 1, gen)[0][0]
        what = (
            f"a random {spec.n}-record dataset drawn from the data with {spec.values[t]:g} of "
            f"its records satisfying {spec.predicate} (demonstration)"
        )
    rel = cal.release(vals, random_state, allow_exact=allow_exact)
    if target is None:
        rel = _notice(rel, Notice(DEMONSTRATION, DemonstrationWarning))
    return ReleaseOutcome(rel, cal, model, None, what)


def _notice(rel: Release, notice: Notice) -> Release:
    """``rel`` with ``notice`` on it, issued as a Python warning too (at the caller of
    :func:`release`)."""
    notice.emit(stacklevel=3)
    return rel.with_notices(notice)


def _mechanism(mechanism: Any, privacy: Target | None, options: dict[str, Any]) -> Mechanism:
    """The mechanism: made from its name and the target, or given made."""
    if isinstance(mechanism, Mechanism):
        extra = (["privacy"] if privacy is not None else []) + sorted(options)
        _check(
            not extra,
            f"a mechanism given made carries its target and options; drop {', '.join(extra)}",
        )
        return mechanism
    _check(privacy is not None, "state the privacy target: privacy=EpsDelta(1, 1e-3) (or GDP, ...)")
    options = dict(options)
    if getattr(privacy, "delta", None) is None:
        options.setdefault("delta", 1e-3)
    return make_mechanism(mechanism, target=privacy, **options)


def _with_plan(
    plan: Plan,
    target: pd.DataFrame | None,
    values: Any,
    allow_exact: bool,
    random_state: RandomState,
) -> ReleaseOutcome:
    """A release with a saved plan: nothing is refitted."""
    _check(isinstance(plan, Plan), f"plan must be a Plan (Plan.load), got {type(plan).__name__}")
    _check(
        (target is None) != (values is None),
        "a plan releases the statistics of the n records (`target=records`) or given values "
        "(`values=[a, b, …]`); give one",
    )
    cal, model = plan.calibration, plan.model
    if target is not None:
        vals = plan.target_values(target)
        what = f"the {len(target)} records given"
    else:
        vals = np.asarray(values, dtype=float)
        names = cal.statistic_names
        _check(
            vals.shape == (len(names),),
            f"{vals.size} value(s) given (`values=[a, b, …]`) but the plan releases "
            f"{len(names)} statistics ({', '.join(names)})",
        )
        what = "the values given"
    rel = cal.release(vals, random_state, allow_exact=allow_exact)
    if plan.sealed:  # a steward's plan, released where no ledger records it
        rel = _notice(rel, Notice(UNRECORDED, UnrecordedWarning))
    return ReleaseOutcome(rel, cal, model, plan, what)
