"""The hinge of a release: a typed request becomes a :class:`~distprivacy.mechanisms.plans.Plan`,
and a plan a release.

* :func:`plan` / :func:`plan_all` are the only place where the engine is resolved, the data
  validated against the query and the specification, the model of f_θ fitted (or a user's
  model file read) and plans built — one mechanism (its failure raises) or several (a failure
  is listed as not applicable, with the reason);
* :func:`release` releases a plan: the statistics of ``target`` (the n records), or given
  ``values``, or — a demonstration only — of a random size-n dataset drawn from the
  ``population`` the plan was fitted on, as a random θ of the spec says.

The command line's ``calibrate``, ``release`` and ``audit`` translate their flags into a
:class:`~distprivacy.request.MechanismSpec` and a :class:`~distprivacy.request.Modelling`
and call these (docs/architecture.md)::

    flags ──► Target, MechanismSpec, Modelling ──► plan / plan_all ──► Plan ──► release

``release(data=…, spec=…, query=…, mechanism=…, privacy=…)``, the form before issue 32, is a
thin translation into ``release(plan(…), …)``. Every refusal is a one-line
:class:`~distprivacy.exceptions.DistPrivacyError` that names the API's arguments (between
backquotes, which the command line turns into its flags).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.checks import (
    check_bool,
    check_callable,
    check_dataframe,
    check_instance,
    check_keywords,
    check_vector,
)
from distprivacy.exceptions import (
    DemonstrationWarning,
    DistPrivacyError,
    Notice,
    UnrecordedWarning,
)
from distprivacy.guarantee import DEMONSTRATION, UNRECORDED, Release
from distprivacy.mechanisms import (
    Calibration,
    Mechanism,
    calibrate_all,
    make_mechanism,
)
from distprivacy.mechanisms.plans import Plan
from distprivacy.models import FModel, fit_model
from distprivacy.query import Query
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.request import GaussianOptions, MechanismSpec, Modelling
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Target

__all__ = ["Planned", "ReleaseOutcome", "plan", "plan_all", "release"]

#: The keyword arguments :func:`release` still takes for a mechanism given by name (the form
#: before issue 32, translated into :class:`~distprivacy.request.GaussianOptions`).
MECHANISM_OPTIONS = ("calibration", "covariances", "utility", "delta")
#: The other keyword arguments of that form (translated into :func:`plan`'s).
_FRESH = ("data", "spec", "query", "mechanism", "privacy", "modeling", "n_samples", "engine",
          "model_seed", "progress", "on_step")  # fmt: skip

Progress = Callable[[int, int | None], None]


@dataclass(frozen=True)
class Planned:
    """What :func:`plan_all` made.

    Attributes
    ----------
    plans : tuple of Plan
        One per mechanism calibrated, in the order asked.
    not_applicable : dict
        Mechanism name → one-line reason it could not be calibrated.
    model : FModel
        The model of f_θ they rest on.
    data : Engine or None
        The engine the model was fitted on (None for a user's model).
    """

    plans: tuple[Plan, ...]
    not_applicable: dict[str, str]
    model: FModel
    data: Any = None

    @property
    def calibrations(self) -> list[Calibration]:
        """The plans' calibrations."""
        return [p.calibration for p in self.plans]


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
        The model of f_θ it rests on (the plan's).
    plan : Plan or None
        The plan released (None for the form before issue 32, whose plan is made in passing).
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


def _check_inputs(
    data: Any, spec: Any, query: Any, modelling: Any, model: Any, on_engine: Any, progress: Any,
    on_step: Any,
) -> Query | None:  # fmt: skip
    """Every argument's type, before any work; the query parsed."""
    from distprivacy.engines import Engine

    check_instance(modelling, "modelling", Modelling, "a Modelling (distprivacy.request)")
    check_instance(model, "model", (FModel, str, os.PathLike),
                   "a fitted model of f_θ or the path of a model file", optional=True)  # fmt: skip
    check_callable(on_engine, "on_engine", "a function on_engine(engine)", optional=True)
    check_callable(progress, "progress", "a function progress(done, total)", optional=True)
    check_callable(on_step, "on_step", "a function on_step(text)", optional=True)
    if model is not None:
        given = [k for k, v in (("data", data), ("spec", spec), ("query", query)) if v is not None]
        _check(not given, f"a model replaces the data; drop {', '.join(given)}")
        return None
    check_instance(data, "data", (pd.DataFrame, str, os.PathLike, Engine),
                   "the population (a DataFrame, a path or an engine)", optional=True)  # fmt: skip
    check_instance(spec, "spec", ProtectionSpec, "a ProtectionSpec", optional=True)
    check_instance(query, "query", (Query, str), "a Query or its text", optional=True)
    _check(
        spec is not None and query is not None,
        "give the population `data`, the `spec` and the `query` (or a fitted `model`)",
    )
    return Query.parse(query) if isinstance(query, str) else query


def _fit(
    data: Any,
    spec: ProtectionSpec,
    query: Query,
    modelling: Modelling,
    on_engine: Callable[[Any], None] | None,
    progress: Progress | None,
) -> tuple[Any, FModel]:
    """The engine of ``data`` (``None``: the Adult data), checked against the query and the
    spec, and the model fitted on it: the one place this is done."""
    from distprivacy.engines import resolve_engine

    eng = resolve_engine(modelling.engine, data, spark_master=modelling.spark_master)
    if on_engine is not None:
        on_engine(eng)
    eng.validate(query, spec)
    model = fit_model(
        eng, spec, query, engine=eng, method=modelling.method, n_samples=modelling.samples,
        random_state=modelling.seed, progress=progress,
    )  # fmt: skip
    return eng, model


def _model(model: FModel | str | os.PathLike) -> tuple[FModel, Any]:
    """A fitted model, or a user's model file read (its path is what a plan fingerprints)."""
    if isinstance(model, FModel):
        return model, None
    from distprivacy.models import load_model_file

    return load_model_file(model), model


def _plans(
    cals: Sequence[Calibration],
    model: FModel,
    source: Any,
    options: dict[str, GaussianOptions | None],
    modelling: Modelling | None,
    fingerprint: bool,
) -> tuple[Plan, ...]:
    """The plans of ``cals``: the modelling and the mechanism's options recorded, the data
    fingerprinted once (as :meth:`Plan.from_calibration` would for each)."""
    if not cals:
        return ()
    from distprivacy.fingerprint import query_columns, source_fingerprint

    fp = None
    if fingerprint and source is not None:
        q = getattr(model, "query_", None)
        columns = () if q is None else query_columns(q, getattr(model, "spec_", None))
        if isinstance(source, str | Path) or columns:
            fp = source_fingerprint(source, columns)
    out = []
    for c in cals:
        opts = options.get(c.mechanism)
        record = {
            **(modelling.to_dict() if modelling is not None else {}),
            **(opts.to_dict() if opts is not None else {}),
        }
        p = Plan.from_calibration(c, model, modelling=record)
        out.append(dataclasses.replace(p, data_fingerprint=fp) if fp is not None else p)
    return tuple(out)


def plan_all(
    data: Any = None,
    spec: ProtectionSpec | None = None,
    query: Query | str | None = None,
    mechanisms: Sequence[MechanismSpec] = (),
    modelling: Modelling | None = None,
    *,
    model: FModel | str | os.PathLike | None = None,
    on_engine: Callable[[Any], None] | None = None,
    progress: Progress | None = None,
    on_step: Callable[[str], None] | None = None,
    fingerprint: bool = True,
) -> Planned:
    """Fit the model of f_θ once and plan every mechanism asked for.

    Parameters
    ----------
    data : DataFrame, path, engine or None
        The population (None: the Adult data).
    spec, query
        What to protect and the statistics (a Query or its text).
    mechanisms : sequence of MechanismSpec
        The mechanisms, each with its target and options (:mod:`distprivacy.request`).
    modelling : Modelling, optional
        How the model is fitted (default ``Modelling()``).
    model : FModel or path, optional
        A fitted model, or a user's model file, instead of ``data``, ``spec`` and ``query``.
    on_engine : callable, optional
        ``on_engine(engine)`` once the data's engine is made, before the query is checked
        against it (e.g. to attach a progress reporter, or a caller's own refusals).
    progress : callable, optional
        ``progress(done, total)``: the model's fit, then each mechanism.
    on_step : callable, optional
        ``on_step(text)`` at the start of each step (``"modelling f_θ"``, ``"calibrating"``).
    fingerprint : bool
        Fingerprint the data for the plans (False: a plan released at once, never saved).

    Returns
    -------
    Planned
        The plans, the mechanisms not applicable (with why), the model and the engine.
    """
    asked, modelling = modelling, Modelling() if modelling is None else modelling
    q = _check_inputs(data, spec, query, modelling, model, on_engine, progress, on_step)
    check_instance(mechanisms, "mechanisms", (list, tuple), "a list of MechanismSpec")
    for m in mechanisms:
        check_instance(m, "each of mechanisms", MechanismSpec, "a MechanismSpec")
    check_bool(fingerprint, "fingerprint")
    step = on_step or (lambda text: None)
    if model is not None:  # the modelling recorded only when given (the caller's record)
        fitted, source = _model(model)
        eng, record = None, asked
    else:
        step("modelling f_θ")
        eng, fitted = _fit(data, spec, q, modelling, on_engine, progress)  # type: ignore[arg-type]
        source, record = eng, modelling
    step("calibrating")
    cals, skipped = calibrate_all(fitted, list(mechanisms), progress=progress)  # type: ignore[arg-type]
    options = {c.name: m.options for m in mechanisms if (c := _class_or_none(m.name))}
    plans = _plans(cals, fitted, source, options, record, fingerprint)
    return Planned(plans, skipped, fitted, eng)


def _class_or_none(name: str) -> Any:
    from distprivacy.mechanisms import mechanism_class

    try:
        return mechanism_class(name)
    except DistPrivacyError:
        return None


def plan(
    data: Any = None,
    spec: ProtectionSpec | None = None,
    query: Query | str | None = None,
    mechanism: MechanismSpec | None = None,
    modelling: Modelling | None = None,
    *,
    model: FModel | str | os.PathLike | None = None,
    on_engine: Callable[[Any], None] | None = None,
    progress: Progress | None = None,
    on_step: Callable[[str], None] | None = None,
    fingerprint: bool = True,
) -> Plan:
    """Fit the model of f_θ and plan one mechanism (arguments as :func:`plan_all`).

    The mechanism is made before anything is fitted (a bad request fails first); its
    calibration's failure is raised (:class:`~distprivacy.exceptions.NotApplicableError` when
    its hypotheses do not hold).

    Parameters
    ----------
    data, spec, query, modelling, model, on_engine, progress, on_step, fingerprint
        As :func:`plan_all`.
    mechanism : MechanismSpec
        The one mechanism to plan, with its target and options.

    Returns
    -------
    Plan
        The mechanism's calibration on the fitted model, with the data's fingerprint: release
        it with :func:`release` (no refit), save it, or have a steward approve it.

    Examples
    --------
    >>> import distprivacy as dp  # doctest: +SKIP
    >>> p = dp.plan(frame, dp.ProtectionSpec("income==>50K", 100, [0.45, 0.55]), "mean:age",
    ...             dp.MechanismSpec("DauM-G", dp.EpsDelta(1, 1e-3)))  # doctest: +SKIP
    >>> dp.release(p, target=records).release.values  # doctest: +SKIP
    """
    check_instance(mechanism, "mechanism", MechanismSpec, "a MechanismSpec (distprivacy.request)")
    return _plan_one(data, spec, query, make_mechanism(mechanism), mechanism.options, modelling,
                     model, on_engine, progress, on_step, fingerprint)  # fmt: skip


def _plan_one(
    data: Any, spec: Any, query: Any, mech: Mechanism, options: GaussianOptions | None,
    modelling: Modelling | None, model: Any, on_engine: Any, progress: Any, on_step: Any,
    fingerprint: bool,
) -> Plan:  # fmt: skip
    """:func:`plan` of a mechanism already made."""
    asked, modelling = modelling, Modelling() if modelling is None else modelling
    q = _check_inputs(data, spec, query, modelling, model, on_engine, progress, on_step)
    check_bool(fingerprint, "fingerprint")
    step = on_step or (lambda text: None)
    if model is not None:
        fitted, source = _model(model)
        record = asked
    else:
        step("modelling f_θ")
        source, fitted = _fit(data, spec, q, modelling, on_engine, progress)  # type: ignore[arg-type]
        record = modelling
    step(f"calibrating {mech.name}")
    if progress is not None and hasattr(mech, "progress"):  # the Wasserstein mechanisms' pairs
        mech.progress = progress
    cal = mech.calibrate(fitted)
    (out,) = _plans([cal], fitted, source, {cal.mechanism: options}, record, fingerprint)
    return out


def release(
    plan: Plan | None = None,
    *,
    target: pd.DataFrame | None = None,
    values: Any = None,
    population: Any = None,
    ledger: Any = None,
    random_state: RandomState = None,
    allow_exact: bool = False,
    **fresh: Any,
) -> ReleaseOutcome:
    """Release statistics with a plan.

    Parameters
    ----------
    plan : Plan
        A plan (:func:`plan`, or :meth:`Plan.load`): nothing is refitted.
    target : DataFrame, optional
        The n records to release.
    values : array, optional
        The statistics' values instead of ``target``.
    population : engine, optional
        Neither ``target`` nor ``values``: a demonstration — a random n-record dataset drawn
        from this population (the engine the plan was fitted on) as a random θ of the spec
        says.
    ledger : Ledger, optional
        Refused: a ledger releases a registered dataset with an approved plan, both named —
        ``ledger.release("PLAN", "DATASET")`` (:meth:`distprivacy.ledger.Ledger.release`).
        Nothing that calibrates in-process, or reads data the caller hands in, spends a
        ledger's budget (issue 30).
    random_state : None, int or Generator
        None: cryptographically secure noise. A seed: reproducible noise, for experiments only.
    allow_exact : bool
        Release even when the calibration adds no noise (the true statistics).
    **fresh
        The form before issue 32, translated: ``data``, ``spec``, ``query``, ``mechanism`` (a
        name, or a Mechanism made), ``privacy`` (a target), ``modeling``, ``n_samples``,
        ``engine``, ``model_seed``, ``progress``, ``on_step`` and the Gaussian options
        ``calibration``, ``covariances``, ``utility`` and ``delta`` (the reported δ of a μ or
        accuracy target): ``release(plan(data, spec, query, MechanismSpec(name, privacy,
        GaussianOptions(...)), Modelling(...)), target=…)``.

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
    from distprivacy.ledger import Ledger

    check_keywords(fresh, (*_FRESH, *MECHANISM_OPTIONS), "release()")
    check_instance(plan, "plan", Plan, "a Plan (Plan.load or workflow.plan)", optional=True)
    check_dataframe(target, "target", optional=True)
    values = None if values is None else check_vector(values, "values")
    check_instance(ledger, "ledger", Ledger, "a Ledger", optional=True)
    check_bool(allow_exact, "allow_exact")
    if ledger is not None:
        raise DistPrivacyError(
            "a ledger releases a registered dataset with an approved plan, both named: "
            "ledger.release('PLAN', 'DATASET') (the steward registers datasets with "
            "Ledger.register and approves plans with Ledger.approve); dp.release records "
            "nothing"
        )
    if plan is None:
        return _fresh(fresh, target, values, allow_exact, random_state)
    given = [k for k in ("data", "spec", "query", "privacy") if fresh.get(k) is not None]
    given += sorted(k for k in fresh if k in MECHANISM_OPTIONS)
    _check(not given, f"a plan fixes the model and the mechanism; drop {', '.join(given)}")
    return _release(plan, target, values, population, allow_exact, random_state)


def _release(
    plan: Plan,
    target: pd.DataFrame | None,
    values: Any,
    population: Any,
    allow_exact: bool,
    random_state: RandomState,
) -> ReleaseOutcome:
    """A release with a plan: nothing is refitted."""
    cal, model = plan.calibration, plan.model
    if population is not None:
        _check(target is None and values is None,
               "a demonstration draws its dataset from `population`: give no `target` or "
               "`values`")  # fmt: skip
        vals, what = _demonstration(plan, population, random_state)
    else:
        _check(
            (target is None) != (values is None),
            "a plan releases the statistics of the n records (`target=records`) or given values "
            "(`values=[a, b, …]`); give one",
        )
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
    if population is not None:
        rel = _notice(rel, Notice(DEMONSTRATION, DemonstrationWarning))
    if plan.sealed:  # a steward's plan, released where no ledger records it
        rel = _notice(rel, Notice(UNRECORDED, UnrecordedWarning))
    return ReleaseOutcome(rel, cal, model, plan, what)


def _notice(rel: Release, notice: Notice) -> Release:
    """``rel`` with ``notice`` on it, issued as a Python warning too (at the caller of
    :func:`release`)."""
    notice.emit(stacklevel=4)
    return rel.with_notices(notice)


def _demonstration(plan: Plan, population: Any, random_state: RandomState) -> tuple[Any, str]:
    """The statistics of a random n-record dataset drawn from ``population`` (an engine) as a
    random θ of the plan's spec says."""
    model = plan.model
    spec, q = getattr(model, "spec_", None), getattr(model, "query_", None)
    _check(spec is not None and q is not None,
           "a demonstration needs a plan fitted on data (its spec and query)")  # fmt: skip
    gen = check_random_state(random_state, secure=False)
    t = int(gen.integers(len(spec.values)))
    vals = population.subset_statistics(spec, q, [spec.counts[t]], 1, gen)[0][0]
    what = (
        f"a random {spec.n}-record dataset drawn from the data with {spec.values[t]:g} of "
        f"its records satisfying {spec.predicate} (demonstration)"
    )
    return vals, what


def _fresh(
    fresh: dict[str, Any],
    target: pd.DataFrame | None,
    values: Any,
    allow_exact: bool,
    random_state: RandomState,
) -> ReleaseOutcome:
    """``release(data=…, spec=…, query=…, mechanism=…, privacy=…)``, the form before issue
    32: translated into :func:`plan` and a release of its plan."""
    from distprivacy.engines import Engine

    data, spec, query = fresh.get("data"), fresh.get("spec"), fresh.get("query")
    mechanism, privacy = fresh.get("mechanism", "DauM-G"), fresh.get("privacy")
    engine, progress, on_step = (
        fresh.get("engine", "auto"),
        fresh.get("progress"),
        fresh.get("on_step"),
    )
    check_instance(data, "data", (pd.DataFrame, str, os.PathLike, Engine),
                   "the population (a DataFrame, a path or an engine)", optional=True)  # fmt: skip
    check_instance(spec, "spec", ProtectionSpec, "a ProtectionSpec", optional=True)
    check_instance(query, "query", (Query, str), "a Query or its text", optional=True)
    check_instance(mechanism, "mechanism", (str, Mechanism), "a mechanism's name or a Mechanism")
    check_instance(privacy, "privacy", (EpsDelta, GDP, MaxAttackAccuracy),
                   "a target (EpsDelta, GDP or MaxAttackAccuracy)", optional=True)  # fmt: skip
    check_instance(engine, "engine", (str, Engine), "an engine's name or an Engine")
    check_callable(progress, "progress", "a function progress(done, total)", optional=True)
    check_callable(on_step, "on_step", "a function on_step(text)", optional=True)
    _check(
        values is None,
        "given values (`values=[a, b, …]`) need a plan; without one, give the n records "
        "(`target=records`)",
    )
    _check(
        data is not None and spec is not None and query is not None,
        "without a plan, give the population `data`, the `spec` and the `query`",
    )
    modelling = Modelling(fresh.get("modeling", "auto"), fresh.get("n_samples", 1000), engine,
                          fresh.get("model_seed", 0))  # fmt: skip
    options = {k: fresh[k] for k in MECHANISM_OPTIONS if k in fresh}
    mech, opts = _mechanism(mechanism, privacy, options)
    if target is not None:
        _check(
            len(target) == spec.n,  # type: ignore[union-attr]
            f"the target has {len(target)} records but `n` is {spec.n}; they must agree",  # type: ignore[union-attr]
        )
    population: list[Any] = []
    p = _plan_one(data, spec, query, mech, opts, modelling, None, population.append, progress,
                  on_step, False)  # fmt: skip
    if target is not None:
        q = p.model.query_
        q.validate(target)
        vals, what = q.evaluate(target), f"the {len(target)} records given"
    else:
        vals, what = _demonstration(p, population[0], random_state)
    rel = p.calibration.release(vals, random_state, allow_exact=allow_exact)
    if target is None:
        rel = _notice(rel, Notice(DEMONSTRATION, DemonstrationWarning))
    return ReleaseOutcome(rel, p.calibration, p.model, None, what)


def _mechanism(
    mechanism: Any, privacy: Target | None, options: dict[str, Any]
) -> tuple[Mechanism, GaussianOptions | None]:
    """The mechanism of the form before issue 32: made from its name, the target and the
    options, or given made."""
    if isinstance(mechanism, Mechanism):
        extra = (["privacy"] if privacy is not None else []) + sorted(options)
        _check(
            not extra,
            f"a mechanism given made carries its target and options; drop {', '.join(extra)}",
        )
        return mechanism, None
    _check(privacy is not None, "state the privacy target: privacy=EpsDelta(1, 1e-3) (or GDP, ...)")
    delta = options.get("delta")
    report = None
    if not isinstance(privacy, EpsDelta):
        report = 1e-3 if delta is None else delta
    elif delta is not None:
        raise DistPrivacyError("an (ε, δ) target states its δ; drop delta")
    opts = GaussianOptions(
        options.get("calibration", "exact"),
        options.get("covariances", "fitted"),
        options.get("utility", "scaled"),
        report_delta=report,
    )
    return make_mechanism(mechanism, privacy, opts), opts
