"""The front door raises only the library's errors (issue 31).

For each public callable of ``import distprivacy as dp`` (the functions and classes of
``dp.__all__``) and the public methods of Ledger, Plan, Calibration, Release, Guarantee and the
privacy targets, hypothesis draws calls whose arguments mix good values with junk (None,
booleans, integers, floats with NaN and ±inf, complex numbers, text, bytes, lists, tuples,
dicts, NumPy arrays, DataFrames, paths, objects, callables, the library's own objects in the
wrong place) and unknown keywords where a function takes ``**kwargs``. A call may succeed or
raise a :class:`~distprivacy.exceptions.DistPrivacyError` with a one-line message; any other
exception (``TypeError`` from Python, ``AttributeError``, ``ValueError`` from NumPy, ...) is a
failure, and so is a call that does not answer within :data:`LIMIT_S` seconds. (The junk
functions take any arguments: an exception a caller's own callback raises is the caller's.)

Profiles: the default runs :data:`DEFAULT_EXAMPLES` examples per entry point, derandomized
(the same examples on every run, CI included). ``DISTPRIVACY_FRONT_DOOR=thorough`` runs
10,000 examples in all (spread over the entry points), randomized, e.g.::

    DISTPRIVACY_FRONT_DOOR=thorough python3 -m pytest tests/test_front_door_hypothesis.py -q

Nothing is written outside pytest's temporary directory: the calls run with the working
directory and ``HOME`` there, junk text never holds a path separator, and the Adult data's
download is switched off (no network).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distprivacy as dp
from distprivacy.exceptions import DistPrivacyError
from distprivacy.targets import EpsDelta, as_target, met_by

ROOT = Path(__file__).resolve().parents[1]

#: Longest a call may take before it counts as a hang (seconds).
LIMIT_S = 60
#: Examples per entry point in the default profile.
DEFAULT_EXAMPLES = 5
#: Examples in all in the thorough profile (the issue's done-when).
THOROUGH_TOTAL = 10_000

OMIT = object()  # a parameter left out of the call
#: Calls made per entry point in this session (the thorough run prints the total; ``-s``).
CALLS: Counter[str] = Counter()
#: Names the calls leave in the repository's root whatever they do (the tools' caches).
CACHES = {".hypothesis", ".pytest_cache", "__pycache__", ".ruff_cache"}


@dataclass(frozen=True)
class Entry:
    """One entry point: ``call(**kwargs)`` with each parameter drawn from ``valid`` or junk.

    ``optional`` parameters may also be left out; ``unknown`` entries take ``**kwargs`` (an
    unknown keyword must be refused by the library, not by Python)."""

    call: Callable[..., Any]
    valid: dict[str, Sequence[Any]]
    optional: frozenset[str] = field(default_factory=frozenset)
    unknown: bool = False


class _HangError(BaseException):
    """Raised by the alarm inside a call that runs for more than :data:`LIMIT_S` seconds."""


@contextlib.contextmanager
def _limit(seconds: int) -> Iterator[None]:
    def fire(*_: object) -> None:
        raise _HangError

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------------------------
# The world: small valid objects every entry point can be called with
# ---------------------------------------------------------------------------------------------


class World:
    """Valid arguments (a small table, a spec, a model, a calibration, plans, a ledger) and
    junk objects, all under ``tmp``."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self._count = 0
        rng = np.random.default_rng(0)
        n = 240
        self.df = pd.DataFrame(
            {
                "age": rng.integers(18, 80, n),
                "sex": rng.choice(["Female", "Male"], n),
                "income": rng.choice([">50K", "<=50K"], n, p=[0.3, 0.7]),
                "hours": rng.integers(10, 60, n),
            }
        )
        self.spec = dp.ProtectionSpec("income==>50K", n=20, values=[0.1, 0.9])
        self.query = dp.Query.parse("mean:age,count:sex==Female")
        self.model = dp.fit_model(self.df, self.spec, self.query, method="exact")
        self.gmodel = dp.GaussianModel(
            ["a", "b"], [[1.0, 2.0], [1.5, 2.5]], [np.eye(2), np.eye(2)], [("a", "b")]
        )
        self.cal = dp.DauM(EpsDelta(1.0, 1e-3)).calibrate(self.model)
        self.gcal = dp.DauM(EpsDelta(1.0, 1e-3)).calibrate(self.gmodel)
        self.target = self.df.iloc[:20].reset_index(drop=True)
        self.values = self.cal.evaluate(self.target)
        self.release = self.cal.release(self.values, random_state=0)
        self.guarantee = self.cal.guarantee
        self.plan = dp.Plan.from_calibration(self.cal, self.model, data=self.df)
        self.plan_file = self.plan.save(tmp / "plan.json")
        self.csv = tmp / "table.csv"
        self.df.to_csv(self.csv, index=False)
        from distprivacy.ledger import LedgerEntry, StewardKey
        from distprivacy.ledger._verify import secret_composer

        self.steward = StewardKey.generate(tmp / "steward.key")
        self.target_csv = tmp / "target.csv"
        self.target.to_csv(self.target_csv, index=False)
        self.ledger = dp.Ledger.init(
            tmp / "world.db", steward=self.steward, secret="s", protect="income==>50K",
            budget=dp.EpsDelta(1e6, 0.9), population=self.csv,
        )  # fmt: skip
        self.ledger.register(self.steward, "d", self.target_csv)
        self.ledger.approve(self.steward, self.plan, "p")
        self.ledger.release("p", "d")
        self.sealed = self.plan
        first = self.ledger.releases()[0]
        self.fingerprint, self.property = first.fingerprint, first.property
        self.entry = LedgerEntry.from_plan(
            self.plan, self.values, fingerprint=self.fingerprint, property=self.property
        )
        self.compose = secret_composer(self.ledger)
        (tmp / "dir").mkdir()
        (tmp / "empty.csv").write_text("")
        (tmp / "garbage.json").write_bytes(b"\x00\xff{not json")
        (tmp / "cache").mkdir()
        self.junk_objects: list[Any] = [
            np.array([]),
            np.array([1.0, np.nan]),
            np.array([[1.0, 2.0], [3.0, 4.0]]),
            np.array(["a", "b"]),
            np.array([1, "x"], dtype=object),
            np.array([True, False]),
            np.array(3.0),
            np.float64("nan"),
            np.int64(7),
            np.bool_(True),
            pd.DataFrame(),
            pd.DataFrame({"x": [1, 2]}),
            self.df,
            self.df.iloc[:3],
            self.df.assign(age=np.nan),
            pd.Series([1.0, 2.0]),
            tmp / "missing.json",
            tmp / "dir",
            tmp / "garbage.json",
            tmp / "empty.csv",
            self.plan_file,
            self.csv,
            Path("/dev/null"),
            object(),
            _anything,  # a function of any arguments returning None
            _junk_answer,  # one returning a text
            (x for x in range(2)),
            range(3),
            {1, 2},
            1 + 2j,
            float("inf"),
            -float("inf"),
            self.spec,
            self.query,
            self.model,
            self.gmodel,
            self.cal,
            self.plan,
            self.release,
            self.guarantee,
            self.ledger,
            dp.GDP(1.0),
            dp.EpsDelta(1.0, 1e-3),
            dp.MaxAttackAccuracy(0.6),
            dp.DauM,
            dp.DauM(EpsDelta(1.0, 1e-3)),
        ]

    def fresh(self, stem: str = "f") -> Path:
        """A path in ``tmp`` that does not exist yet."""
        self._count += 1
        return self.tmp / f"{stem}{self._count}"


def _noop(*_: Any) -> None:
    return None


def _anything(*_: Any, **__: Any) -> None:
    return None


def _junk_answer(*_: Any, **__: Any) -> str:
    return "not what was asked"


def _text() -> st.SearchStrategy[str]:
    # No path separator: a junk text used as a path stays in the working directory (tmp).
    return st.text(st.characters(blacklist_characters="/\\"), max_size=6)


def junk(w: World) -> st.SearchStrategy[Any]:
    """Arguments of every wrong kind."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        # Small or astronomically large: a count of a few million is a real (slow) request.
        st.integers(2**40, 2**70),
        st.integers(-(2**70), -1),
        st.sampled_from([2**31 - 1, 2**32, 2**63 - 1, 2**64]),
        st.floats(),
        st.complex_numbers(max_magnitude=1e3),
        _text(),
        st.binary(max_size=4),
    )
    containers = st.one_of(
        st.lists(scalars, max_size=3),
        st.tuples(scalars, scalars),
        st.dictionaries(_text(), scalars, max_size=2),
    )
    return st.one_of(scalars, containers, st.sampled_from(w.junk_objects))


def entry_points(w: World) -> dict[str, Entry]:
    """Every entry point and its good values (module docstring)."""
    cal, plan, led, spec, q, df = w.cal, w.plan, w.ledger, w.spec, w.query, w.df
    eps, delta = [1.0, 0.5], [1e-3, 1e-5]
    rs = [None, 0]
    gdp = dp.GDP(0.5)
    targets = [dp.EpsDelta(1.0, 1e-3), gdp, dp.MaxAttackAccuracy(0.6)]
    options = [dp.GaussianOptions(), dp.GaussianOptions("classic", "pooled", "l2")]
    spec_eps = dp.MechanismSpec("DauM-G", dp.EpsDelta(1.0, 1e-3))
    planning = {
        "data": [df],
        "spec": [spec],
        "query": [q, "mean:age"],
        "modelling": [None, dp.Modelling("exact"), dp.Modelling("monte-carlo", 50)],
        "progress": [None, _noop],
        "on_step": [None, _noop],
    }
    release = {
        "plan": [None, plan, w.sealed],
        "data": [None, df],
        "spec": [None, spec],
        "query": [None, q, "mean:age"],
        "mechanism": ["DauM-G", "ExpM-L"],
        "privacy": [None, dp.EpsDelta(1.0, 1e-3), dp.GDP(0.5)],
        "target": [None, w.target],
        "values": [None, w.values],
        "ledger": [None, led],
        "allow_exact": [False],
        "random_state": rs,
        "modeling": ["exact"],
        "n_samples": [50],
        "engine": ["auto"],
        "model_seed": [0],
        "progress": [None, _noop],
        "on_step": [None, _noop],
        "population": [None],
    }
    out: dict[str, Entry] = {
        # -- privacy targets --------------------------------------------------------------
        "GDP": Entry(dp.GDP, {"mu": [0.5, 1.0, 20.0]}),
        "GDP.delta_at": Entry(lambda epsilon: dp.GDP(0.5).delta_at(epsilon), {"epsilon": [0.0, 1]}),
        "GDP.epsilon_at": Entry(lambda delta: dp.GDP(0.5).epsilon_at(delta), {"delta": delta}),
        "GDP.to_eps_delta": Entry(lambda delta: dp.GDP(2).to_eps_delta(delta), {"delta": delta}),
        "GDP.max_attack_accuracy": Entry(
            lambda mu: dp.GDP(mu).max_attack_accuracy, {"mu": [1e-300, 0.5, 16.6, 40, 1e300]}
        ),
        "GDP.compose": Entry(lambda other: dp.GDP(0.5).compose(other), {"other": [dp.GDP(1)]}),
        "EpsDelta": Entry(dp.EpsDelta, {"epsilon": eps, "delta": [0.0, 1e-3]}),
        "EpsDelta.to_gdp": Entry(lambda e, d: dp.EpsDelta(e, d).to_gdp(), {"e": eps, "d": delta}),
        "MaxAttackAccuracy": Entry(dp.MaxAttackAccuracy, {"accuracy": [0.55, 0.9]}),
        "MaxAttackAccuracy.to_gdp": Entry(
            lambda a: dp.MaxAttackAccuracy(a).to_gdp(), {"a": [0.55, 1 - 1e-16]}
        ),
        "Rule": Entry(dp.Rule, {"value": ["exact", "classic"]}),
        "Rule.parse": Entry(dp.Rule.parse, {"value": ["exact", dp.Rule.CLASSIC]}),
        "as_target": Entry(
            as_target,
            {
                "epsilon": [None, 1.0],
                "delta": [None, 1e-3],
                "mu": [None, 0.5],
                "max_accuracy": [None, 0.6],
            },
            optional=frozenset({"epsilon", "delta", "mu", "max_accuracy"}),
        ),
        "met_by": Entry(
            met_by,
            {
                "target": [dp.GDP(1.0), dp.EpsDelta(1.0, 1e-3), dp.MaxAttackAccuracy(0.9)],
                "guarantee": [w.guarantee, w.gcal.guarantee],
            },
        ),
        # -- guarantees and releases ------------------------------------------------------
        "Guarantee": Entry(
            dp.Guarantee,
            {
                "epsilon": [1.0],
                "delta": [1e-3],
                "theorem": ["Thm 4.3"],
                "notion": ["distribution privacy"],
                "mu": [None, 0.5],
                "curve": ["point", "gdp"],
                "max_attack_accuracy": [None, 0.6],
                "basis": [""],
                "verified": [False, True],
                "assumptions": [(), ("an assumption",)],
                "holds_for_every_input": [False],
                "profile": [None],
            },
            optional=frozenset(
                {
                    "notion",
                    "mu",
                    "curve",
                    "max_attack_accuracy",
                    "basis",
                    "verified",
                    "assumptions",
                    "holds_for_every_input",
                    "profile",
                }
            ),
        ),
        "Guarantee.delta_at": Entry(w.guarantee.delta_at, {"epsilon": [0.0, 1.0]}),
        "Guarantee.epsilon_at": Entry(w.guarantee.epsilon_at, {"delta": delta}),
        "Guarantee.check": Entry(w.guarantee.check, {"epsilon": eps, "delta": delta}),
        "Guarantee.from_dict": Entry(dp.Guarantee.from_dict, {"raw": [w.guarantee.to_dict()]}),
        "Release": Entry(
            dp.Release,
            {
                "values": [w.release.values],
                "statistic_names": [w.release.statistic_names],
                "calibration": [cal],
                "secure": [True, False],
            },
        ),
        "check_random_state": Entry(
            dp.check_random_state,
            {"random_state": [None, 0, np.random.default_rng(0)], "secure": [True, False]},
        ),
        "NoiseDistribution": Entry(
            dp.NoiseDistribution,
            {
                "family": ["gaussian", "laplace"],
                "basis": [np.eye(2)],
                "scales": [np.ones(2)],
                "factor": [None],
            },
            optional=frozenset({"factor"}),
        ),
        "Proposal": Entry(
            dp.Proposal,
            {"noise": [cal.noise], "details": [{}], "warnings": [()]},
            optional=frozenset({"details", "warnings"}),
        ),
        # -- specification and statistics -------------------------------------------------
        "ProtectionSpec": Entry(
            dp.ProtectionSpec,
            {
                "predicate": ["income==>50K", dp.Predicate("age", ">=", 40)],
                "n": [20, 100],
                "values": [[0.4, 0.6], (0.1, 0.2, 0.3)],
                "pairs": [None, [(0.4, 0.6)]],
                "pairs_within": [None, 0.25],
            },
            optional=frozenset({"pairs", "pairs_within"}),
        ),
        "Predicate": Entry(
            dp.Predicate, {"column": ["age", "sex"], "op": ["==", ">="], "value": [40, "Male"]}
        ),
        "Predicate.parse": Entry(dp.Predicate.parse, {"text": ["age>=40", "sex==Female"]}),
        "Query": Entry(dp.Query, {"statistics": [[dp.Mean("age")], (dp.Sum("hours"),)]}),
        "Query.parse": Entry(dp.Query.parse, {"text": ["mean:age", "count:sex==Female"]}),
        "Query.evaluate": Entry(q.evaluate, {"data": [df.iloc[:20]]}),
        "Query.validate": Entry(q.validate, {"data": [df]}),
        "Mean": Entry(dp.Mean, {"column": ["age"]}),
        "Sum": Entry(dp.Sum, {"column": ["hours"]}),
        "Count": Entry(dp.Count, {"predicate": [dp.Predicate("sex", "==", "Female")]}),
        "Proportion": Entry(dp.Proportion, {"predicate": [dp.Predicate("age", ">=", 40)]}),
        "CallableStatistic": Entry(
            dp.CallableStatistic,
            {
                "name": ["f"],
                "func": [lambda X: X[:, 0].mean()],
                "columns": [["age"]],
                "sensitivity": [None, 1.0],
            },
            optional=frozenset({"sensitivity"}),
        ),
        # -- data -------------------------------------------------------------------------
        "load_adult": Entry(
            dp.load_adult,
            {"path": [None, w.tmp / "dir"], "cache_dir": [w.tmp / "cache"], "download": [False]},
            optional=frozenset({"path", "cache_dir", "download"}),
        ),
        "load_table": Entry(dp.load_table, {"path": [w.csv, str(w.csv)]}),
        "load_model_file": Entry(
            dp.load_model_file,
            {"path": [w.plan_file], "memory_limit": [None, 2**30]},
            optional=frozenset({"memory_limit"}),
        ),
        # -- models -----------------------------------------------------------------------
        "fit_model": Entry(
            dp.fit_model,
            {
                "data": [df],
                "spec": [spec],
                "query": [q],
                "method": ["exact", "auto"],
                "n_samples": [50],
                "random_state": rs,
                "progress": [None, _noop],
                "engine": [None, "auto", "pandas"],
            },
            optional=frozenset({"method", "n_samples", "random_state", "progress", "engine"}),
        ),
        "ExactModel.fit": Entry(
            lambda data, spec, query: dp.ExactModel().fit(data, spec, query),
            {"data": [df], "spec": [spec], "query": [q]},
        ),
        "MonteCarloModel": Entry(
            dp.MonteCarloModel,
            {"n_samples": [50], "random_state": rs, "moments": ["sample"]},
            optional=frozenset({"n_samples", "random_state", "moments"}),
        ),
        "MonteCarloModel.fit": Entry(
            lambda data, spec, query: dp.MonteCarloModel(50, 0).fit(data, spec, query),
            {"data": [df], "spec": [spec], "query": [q]},
        ),
        "GaussianModel": Entry(
            dp.GaussianModel,
            {
                "thetas": [["a", "b"]],
                "means": [[[1.0, 2.0], [1.5, 2.5]]],
                "covariances": [[np.eye(2), np.eye(2)]],
                "pairs": [[("a", "b")]],
                "statistic_names": [None, ["x", "y"]],
                "samples": [None],
                "record_sensitivities": [None, [1.0, 1.0]],
                "n": [None, 20],
                "source": ["model"],
            },
            optional=frozenset(
                {"statistic_names", "samples", "record_sensitivities", "n", "source"}
            ),
        ),
        # -- mechanisms -------------------------------------------------------------------
        "make_mechanism": Entry(
            dp.make_mechanism,
            {
                "spec": ["DauM-G", "ExpM-L", "dirm-g", dp.MechanismSpec("DauM-G", gdp)],
                "target": [None, dp.GDP(0.5), dp.EpsDelta(1.0, 1e-3)],
                "options": [None, *options],
            },
            optional=frozenset({"target", "options"}),
            unknown=True,
        ),
        "MechanismSpec": Entry(
            dp.MechanismSpec,
            {"name": ["DauM-G", "ExpM-L"], "target": targets, "options": [None, *options]},
            optional=frozenset({"options"}),
        ),
        "GaussianOptions": Entry(
            dp.GaussianOptions,
            {
                "rule": ["exact", "classic", dp.Rule.EXACT],
                "covariances": ["fitted", "pooled"],
                "utility": ["scaled", "l2"],
                "report_delta": [None, *delta],
                "check_profile": [True, False],
            },
            optional=frozenset({"rule", "covariances", "utility", "report_delta", "check_profile"}),
        ),
        "Modelling": Entry(
            dp.Modelling,
            {
                "method": ["auto", "exact"],
                "samples": [50],
                "engine": ["auto", "pandas"],
                "seed": [0],
                "spark_master": [None],
            },
            optional=frozenset({"method", "samples", "engine", "seed", "spark_master"}),
        ),
        "plan": Entry(
            dp.plan,
            {**planning, "mechanism": [dp.MechanismSpec("DauM-G", gdp), spec_eps]},
            optional=frozenset({"modelling", "progress", "on_step"}),
        ),
        "plan_all": Entry(
            dp.plan_all,
            {**planning, "mechanisms": [[spec_eps], [spec_eps, dp.MechanismSpec("ExpM-L", gdp)]]},
            optional=frozenset({"modelling", "progress", "on_step"}),
        ),
        "register_mechanism": Entry(dp.register_mechanism, {"cls": [dp.DauM]}),
        "calibrate_all": Entry(
            dp.calibrate_all,
            {
                "model": [w.gmodel],
                "request": [dp.EpsDelta(1.0, 1e-3), [spec_eps]],
                "options": [None, *options],
                "names": [None, ["DauM-G", "ExpM-L"]],
                "progress": [None, _noop],
            },
            optional=frozenset({"options", "names", "progress"}),
        ),
        "Mechanism.calibrate": Entry(
            lambda model: dp.DauM(EpsDelta(1.0, 1e-3)).calibrate(model),
            {"model": [w.gmodel]},
        ),
        "DauM": Entry(
            dp.DauM,
            {"target": targets, "options": [None, *options], "v": [None, [1.0, 0.0]]},
            optional=frozenset({"options", "v"}),
            unknown=True,
        ),
        "OptimalGaussian": Entry(
            dp.OptimalGaussian,
            {"target": targets, "options": [None, *options], "weights": [None, [1.0, 2.0]]},
            optional=frozenset({"options", "weights"}),
            unknown=True,
        ),
        "GroupDPGaussian": Entry(
            dp.GroupDPGaussian,
            {"target": targets, "options": [None, *options], "group_size": [None, 3]},
            optional=frozenset({"options", "group_size"}),
            unknown=True,
        ),
        "GroupDPLaplace": Entry(
            dp.GroupDPLaplace,
            {"target": [dp.EpsDelta(1.0, 0.0)], "options": [None], "group_size": [None, 3]},
            optional=frozenset({"options", "group_size"}),
            unknown=True,
        ),
        # -- the calibration --------------------------------------------------------------
        "Calibration": Entry(
            dp.Calibration,
            {
                "mechanism": ["DauM-G"],
                "theorem": ["Thm 4.3"],
                "epsilon": [1.0],
                "delta": [1e-3],
                "noise": [cal.noise],
                "statistic_names": [cal.statistic_names],
                "sensitivity": [None, 1.0],
                "rule": [None, "exact"],
                "assumptions": [()],
                "warnings": [()],
                "details": [{}],
                "accounting": [None, cal.accounting],
                "statistic_scales": [None],
                "basis": [""],
                "query": [None, q],
                "n": [None, 20],
            },
            optional=frozenset(
                {
                    "sensitivity",
                    "rule",
                    "assumptions",
                    "warnings",
                    "details",
                    "accounting",
                    "statistic_scales",
                    "basis",
                    "query",
                    "n",
                }
            ),
        ),
        "Calibration.utility_cost": Entry(cal.utility_cost, {"utility": ["scaled", "l2"]}),
        "Calibration.delta_at": Entry(cal.delta_at, {"epsilon": [0.0, 1.0]}),
        "Calibration.epsilon_at": Entry(cal.epsilon_at, {"delta": delta}),
        "Calibration.sample_noise": Entry(
            cal.sample_noise,
            {"size": [None, 3], "random_state": rs},
            optional=frozenset({"size", "random_state"}),
        ),
        "Calibration.evaluate": Entry(cal.evaluate, {"data": [w.target]}),
        "Calibration.release": Entry(
            cal.release,
            {"value": [w.values, w.target], "random_state": rs, "allow_exact": [False, True]},
            optional=frozenset({"random_state", "allow_exact"}),
        ),
        "Calibration.from_dict": Entry(
            dp.Calibration.from_dict,
            {"raw": [cal.to_dict()], "query": [None, q], "n": [None]},
            optional=frozenset({"query", "n"}),
        ),
        # -- plans ------------------------------------------------------------------------
        "Plan": Entry(
            dp.Plan,
            {
                "calibration": [cal],
                "model": [w.model],
                "spec": [None, spec.to_dict()],
                "query": [None, "mean:age"],
                "columns": [(), ("age",)],
            },
            optional=frozenset({"spec", "query", "columns"}),
        ),
        "Plan.from_calibration": Entry(
            dp.Plan.from_calibration,
            {
                "calibration": [cal],
                "model": [None, w.model],
                "data": [None, df],
                "modelling": [None, {"method": "exact"}],
            },
            optional=frozenset({"model", "data", "modelling"}),
        ),
        "Plan.seal": Entry(plan.seal, {"key": [b"k" * 32]}),
        "Plan.verify_seal": Entry(w.sealed.verify_seal, {"key": [b"k" * 32]}),
        "Plan.save": Entry(plan.save, {"path": st.builds(w.fresh, st.just("plan"))}),
        "Plan.from_dict": Entry(
            dp.Plan.from_dict,
            {"raw": [plan.to_dict()], "source": ["the plan"]},
            optional=frozenset({"source"}),
        ),
        "Plan.load": Entry(dp.Plan.load, {"path": [w.plan_file]}),
        "Plan.target_values": Entry(
            plan.target_values,
            {"target": [w.target], "require_property": [False, True]},
            optional=frozenset({"require_property"}),
        ),
        "Plan.release": Entry(
            plan.release,
            {
                "target": [None, w.target],
                "values": [None, w.values],
                "random_state": rs,
                "allow_exact": [False],
            },
            optional=frozenset({"target", "values", "random_state", "allow_exact"}),
        ),
        # -- the ledger -------------------------------------------------------------------
        "Ledger": Entry(dp.Ledger, {"path": [w.tmp / "world.db"]}),
        "Ledger.init": Entry(
            dp.Ledger.init,
            {
                "path": st.builds(w.fresh, st.just("l")),
                "steward": [w.steward],
                "secret": ["s"],
                "protect": ["income==>50K"],
                "budget": [dp.GDP(1.0), dp.EpsDelta(1.0, 1e-3)],
                "population": [None, w.csv],
            },
            optional=frozenset({"population"}),
        ),
        "Ledger.add_secret": Entry(
            led.add_secret,
            {
                "steward": [w.steward],
                "name": ["s2"],
                "protect": ["sex==Female"],
                "budget": [dp.GDP(1.0)],
                "population": [None, w.csv],
            },
            optional=frozenset({"population"}),
        ),
        "Ledger.register": Entry(
            led.register,
            {
                "steward": [w.steward],
                "name": ["d2"],
                "path": [w.target_csv],
                "secret": [None, "s"],
                "same_records_as": [None],
                "independent": [False, True],
                "confirm_overlap": [None, "why"],
            },
            optional=frozenset({"secret", "same_records_as", "independent", "confirm_overlap"}),
        ),
        "Ledger.approve": Entry(
            led.approve,
            {"steward": [w.steward], "plan": [plan], "name": ["p2"], "secret": [None, "s"]},
            optional=frozenset({"secret"}),
        ),
        "Ledger.set_budget": Entry(
            led.set_budget,
            {
                "steward": [w.steward],
                "secret": [None, "s"],
                "budget": [dp.GDP(1e6)],
                "reason": ["more"],
            },
        ),
        "Ledger.releases": Entry(
            led.releases,
            {"fingerprint": [None, w.fingerprint], "property": [None, w.property]},
            optional=frozenset({"fingerprint", "property"}),
        ),
        "Ledger.cumulative": Entry(
            led.cumulative,
            {"fingerprint": [w.fingerprint], "property": [w.property], "compose": [w.compose]},
        ),
        "Ledger.show": Entry(led.show, {"compose": [None, w.compose]}, frozenset({"compose"})),
        "Ledger.verify": Entry(led.verify, {"compose": [None, w.compose]}, frozenset({"compose"})),
        "Ledger.entry": Entry(
            led.entry,
            {"plan": [w.sealed], "values": [w.values], "target": [w.target], "unbounded": [False]},
            optional=frozenset({"unbounded"}),
        ),
        "Ledger.record": Entry(led.record, {"entry": [w.entry], "compose": [w.compose]}),
        "Ledger.release": Entry(
            led.release,
            {"plan": ["p"], "dataset": ["d"], "random_state": [None], "allow_exact": [False]},
            optional=frozenset({"random_state", "allow_exact"}),
        ),
        "Ledger.seal": Entry(led.seal, {"plan": [plan]}),
        # -- one release, start to finish -------------------------------------------------
        "release": Entry(dp.release, release, frozenset(release), unknown=True),
        "ReleaseOutcome": Entry(
            dp.ReleaseOutcome,
            {
                "release": [w.release],
                "calibration": [cal],
                "model": [w.model],
                "plan": [None, plan],
                "target": ["the values given"],
                "recorded": [None],
            },
            optional=frozenset({"recorded"}),
        ),
        # -- checking a release -----------------------------------------------------------
        "audit_model": Entry(
            dp.audit_model,
            {
                "calibration": [cal],
                "model": [w.model],
                "data": [df],
                "spec": [spec],
                "query": [q],
                "samples_per_value": [40],
                "pair": [None, (0, 1)],
                "random_state": [0],
                "on_step": [None, _noop],
            },
            optional=frozenset({"samples_per_value", "pair", "random_state", "on_step"}),
            unknown=True,
        ),
        "MetaClassifierAttack": Entry(
            dp.MetaClassifierAttack,
            {
                "n_shadow": [20],
                "n_test": [20],
                "repetitions": [2],
                "classifier": [None],
                "adaptive": [False, True],
                "random_state": rs,
            },
            optional=frozenset(
                {"n_shadow", "n_test", "repetitions", "classifier", "adaptive", "random_state"}
            ),
        ),
        "AuditResult": Entry(
            dp.AuditResult,
            {
                "mechanism": ["DauM-G"],
                "claimed_epsilon": [1.0],
                "delta": [1e-3],
                "pair": [(0.1, 0.9)],
                "accuracy_bound": [0.6],
                "alpha": [0.05],
                "attacks": [()],
            },
            optional=frozenset({"attacks"}),
        ),
        "LikelihoodRatioAttack": Entry(
            dp.LikelihoodRatioAttack,
            {"means": [w.model.means_], "covariances": [w.model.covariances_]},
        ),
    }
    return out


# The names of dp.__all__ that are not called, and why.
NOT_CALLED = {
    "MECHANISMS": "a registry (a mapping), not a callable",
    "__version__": "a string",
    "Calibrated": "a typing Protocol (Python refuses to instantiate one)",
    "Mechanism": "an abstract base class (Python refuses to instantiate one); its subclasses "
    "and Mechanism.calibrate are called",
    "ExactModel": "takes no arguments; ExactModel.fit is called",
    "SecureGenerator": "takes no arguments",
    "Planned": "what plan_all returns (plan_all is called)",
    "Client": "needs a running service: tests/service/test_api.py releases through it against "
    "a real server",
}
# Mechanism classes called through make_mechanism, the name-checked door to every one of
# them, beside DauM, OptimalGaussian and the group-DP ones (their own keyword arguments).
SAME_AS_MAKE_MECHANISM = {
    "ApproximateWassersteinMechanism",
    "BoundedWassersteinMechanism",
    "DirectionalGaussian",
    "DirectionalLaplace",
    "EigenvectorGaussian",
    "ExpectedValueGaussian",
    "ExpectedValueLaplace",
    "GaussianMechanism",
    "NoNoise",
    "WassersteinMechanism",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("front_door")
    before = sorted(p.name for p in ROOT.iterdir() if p.name not in CACHES)
    mp = pytest.MonkeyPatch()
    mp.chdir(tmp)
    mp.setenv("HOME", str(tmp))
    mp.delenv("DISTPRIVACY_DATA", raising=False)
    import distprivacy.datasets as datasets

    def offline(_: Path) -> None:
        raise OSError("no network in this test")

    mp.setattr(datasets, "_fetch_uci", offline)
    mp.setattr(datasets, "_fetch_pypi", offline)
    start = time.monotonic()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = World(tmp)
        yield w
        w.ledger.close()
    finally:
        mp.undo()
    print(
        f"\nfront door: {sum(CALLS.values())} calls over {len(CALLS)} entry points in "
        f"{time.monotonic() - start:.0f} s",
        file=sys.stderr,
    )
    assert sorted(p.name for p in ROOT.iterdir() if p.name not in CACHES) == before, (
        "a call wrote into the repository"
    )


def _foreign(call: Callable[..., Any], kwargs: dict[str, Any]) -> str | None:
    """None when the call succeeds or raises the library's one-line error; else what it did."""
    try:
        with _limit(LIMIT_S), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(**kwargs)
    except _HangError:
        return f"no answer within {LIMIT_S} s"
    except DistPrivacyError as e:
        text = str(e)
        if not text or "\n" in text:
            return f"{type(e).__name__} with a message that is not one line: {text!r}"
        return None
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def draw_call(data: st.DataObject, w: World, entry: Entry) -> dict[str, Any]:
    """Keyword arguments for ``entry``: a few parameters (none to three, drawn) get junk, the
    others a good value (or are left out when optional); sometimes an unknown keyword too."""
    names = list(entry.valid)
    bad_names = data.draw(
        st.sets(st.sampled_from(names), max_size=min(3, len(names))), label="junk parameters"
    )
    bad = junk(w)
    kwargs: dict[str, Any] = {}
    for name in names:
        good = entry.valid[name]
        good_s = good if isinstance(good, st.SearchStrategy) else st.sampled_from(list(good))
        if name in bad_names:
            value = data.draw(bad, label=name)
        elif name in entry.optional:
            value = data.draw(st.one_of(good_s, st.just(OMIT)), label=name)
        else:
            value = data.draw(good_s, label=name)
        if value is not OMIT:
            kwargs[name] = value
    if entry.unknown and data.draw(st.integers(0, 3), label="unknown keyword?") == 0:
        kwargs[data.draw(st.sampled_from(["bogus", "epsilonn", "seed"]), label="unknown")] = (
            data.draw(bad, label="its value")
        )
    return kwargs


def _profile() -> settings:
    common: dict[str, Any] = dict(
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    if os.environ.get("DISTPRIVACY_FRONT_DOOR") == "thorough":
        per = math.ceil(THOROUGH_TOTAL / len(ENTRY_NAMES))
        return settings(max_examples=per, derandomize=False, **common)
    return settings(max_examples=DEFAULT_EXAMPLES, derandomize=True, **common)


#: The entry points' names (checked against :func:`entry_points` and ``dp.__all__`` below).
ENTRY_NAMES = (
    "AuditResult",
    "Calibration",
    "Calibration.delta_at",
    "Calibration.epsilon_at",
    "Calibration.evaluate",
    "Calibration.from_dict",
    "Calibration.release",
    "Calibration.sample_noise",
    "Calibration.utility_cost",
    "CallableStatistic",
    "Count",
    "DauM",
    "EpsDelta",
    "EpsDelta.to_gdp",
    "ExactModel.fit",
    "GDP",
    "GDP.compose",
    "GDP.delta_at",
    "GDP.epsilon_at",
    "GDP.max_attack_accuracy",
    "GDP.to_eps_delta",
    "GaussianModel",
    "GaussianOptions",
    "GroupDPGaussian",
    "GroupDPLaplace",
    "Guarantee",
    "Guarantee.check",
    "Guarantee.delta_at",
    "Guarantee.epsilon_at",
    "Guarantee.from_dict",
    "Ledger",
    "Ledger.add_secret",
    "Ledger.approve",
    "Ledger.cumulative",
    "Ledger.entry",
    "Ledger.init",
    "Ledger.record",
    "Ledger.register",
    "Ledger.release",
    "Ledger.releases",
    "Ledger.seal",
    "Ledger.set_budget",
    "Ledger.show",
    "Ledger.verify",
    "LikelihoodRatioAttack",
    "MaxAttackAccuracy",
    "MaxAttackAccuracy.to_gdp",
    "Mean",
    "Mechanism.calibrate",
    "MechanismSpec",
    "MetaClassifierAttack",
    "Modelling",
    "MonteCarloModel",
    "MonteCarloModel.fit",
    "NoiseDistribution",
    "OptimalGaussian",
    "Plan",
    "Plan.from_calibration",
    "Plan.from_dict",
    "Plan.load",
    "Plan.release",
    "Plan.save",
    "Plan.seal",
    "Plan.target_values",
    "Plan.verify_seal",
    "Predicate",
    "Predicate.parse",
    "Proportion",
    "Proposal",
    "ProtectionSpec",
    "Query",
    "Query.evaluate",
    "Query.parse",
    "Query.validate",
    "Release",
    "ReleaseOutcome",
    "Rule",
    "Rule.parse",
    "Sum",
    "as_target",
    "audit_model",
    "calibrate_all",
    "check_random_state",
    "fit_model",
    "load_adult",
    "load_model_file",
    "load_table",
    "make_mechanism",
    "met_by",
    "plan",
    "plan_all",
    "register_mechanism",
    "release",
)


def test_every_public_name_is_called_or_excused(entries: dict[str, Entry]) -> None:
    """The table covers ``dp.__all__``: each name is an entry point, a mechanism reached
    through make_mechanism, an error or warning class, or excused in :data:`NOT_CALLED`."""
    assert sorted(entries) == sorted(ENTRY_NAMES)
    heads = {name.partition(".")[0] for name in ENTRY_NAMES}
    # The command line's names for registered classes (dp.DirM_G is dp.DirectionalGaussian):
    # the same classes, reached through make_mechanism like the rest.
    registered = list(dp.MECHANISMS.values())
    cli_aliases = {n for n in dp.__all__ if any(getattr(dp, n) is c for c in registered)}
    left = [
        name
        for name in dp.__all__
        if name not in heads | set(NOT_CALLED) | SAME_AS_MAKE_MECHANISM | cli_aliases
        and not (isinstance(getattr(dp, name), type) and issubclass(getattr(dp, name), Warning))
        and not (
            isinstance(getattr(dp, name), type) and issubclass(getattr(dp, name), BaseException)
        )
    ]
    assert left == []


@pytest.fixture(scope="module")
def entries(world: World) -> dict[str, Entry]:
    return entry_points(world)


@pytest.mark.parametrize("name", ENTRY_NAMES)
def test_front_door_raises_only_library_errors(
    name: str, world: World, entries: dict[str, Entry]
) -> None:
    """Whatever the arguments, a library error or an answer (module docstring)."""
    entry = entries[name]

    @_profile()
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        kwargs = draw_call(data, world, entry)
        CALLS[name] += 1
        problem = _foreign(entry.call, kwargs)
        assert problem is None, f"{name}(**{kwargs!r}) raised {problem}"

    run()
