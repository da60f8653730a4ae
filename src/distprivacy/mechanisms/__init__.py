"""Distribution-privacy mechanisms of Chen & Ohrimenko (2023) and the group-DP baselines.

Use :func:`make_mechanism` with a Table-1 shorthand, or the classes directly; then
``calibration = mechanism.calibrate(model)`` and ``calibration.release(F_of_D)`` (or
``calibration.release(dataset)``, a DataFrame of n records, for a model fitted on data). A
:class:`Calibration` follows the :class:`~distprivacy.guarantee.Calibrated` protocol: its
``guarantee``, ``to_dict()`` / ``Calibration.from_dict()``, and a
:class:`~distprivacy.guarantee.Release`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from distprivacy.checks import (
    check_callable,
    check_instance,
    check_keywords,
    check_text,
    check_texts,
)
from distprivacy.exceptions import DistPrivacyError, MissingExtraError, NotApplicableError
from distprivacy.guarantee import Release
from distprivacy.mechanisms._accounting import GaussianAccounting, SharedCovariance
from distprivacy.mechanisms._calibrator import Calibrator, GaussianTarget, Proposal
from distprivacy.mechanisms.adversarial import DauM, EigenvectorGaussian, NoNoise, daum_variance
from distprivacy.mechanisms.base import (
    Calibration,
    Mechanism,
    delta_e,
    register_mechanism,
    registered_mechanisms,
)
from distprivacy.mechanisms.expected_value import (
    DirectionalGaussian,
    DirectionalLaplace,
    ExpectedValueGaussian,
    ExpectedValueLaplace,
)
from distprivacy.mechanisms.gaussian import GaussianMechanism
from distprivacy.mechanisms.group_dp import GroupDPGaussian, GroupDPLaplace
from distprivacy.mechanisms.optimal import OptimalGaussian
from distprivacy.mechanisms.wasserstein import (
    ApproximateWassersteinMechanism,
    BoundedWassersteinMechanism,
    WassersteinMechanism,
)
from distprivacy.models import FModel
from distprivacy.registry import BUILTIN_MECHANISMS, plugin_entry_points
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Target

#: The built-in mechanisms in the order ``distprivacy calibrate`` lists them.
_BUILTIN_ORDER = BUILTIN_MECHANISMS

# Every public module of this package is imported, so that a mechanism defined in a new module
# (decorated with @register_mechanism) is known without editing this file (docs/extending.md).
for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")


def load_mechanism_plugins() -> tuple[str, ...]:
    """Register the mechanisms other packages declare under the entry-point group
    ``distprivacy.mechanisms`` (:mod:`distprivacy.registry`); called once when this package is
    imported. An entry point names a :class:`Mechanism` subclass (registered here, its
    ``name`` the entry point's) or a module (imported: its ``@register_mechanism`` classes
    register themselves). A plug-in that fails to load, or names something else, is skipped
    with a :class:`~distprivacy.exceptions.DistPrivacyWarning` naming it: the built-ins never
    depend on one.

    Returns
    -------
    tuple of str
        The names of the entry points loaded.
    """
    import types
    import warnings

    from distprivacy.exceptions import DistPrivacyWarning

    loaded = []
    for ep in plugin_entry_points():
        try:
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, Mechanism):
                if obj.__dict__.get("name") != ep.name:
                    raise DistPrivacyError(
                        f"its class is named {obj.__dict__.get('name')!r}, not {ep.name!r}"
                    )
                register_mechanism(obj)
            elif not isinstance(obj, types.ModuleType):
                raise DistPrivacyError("it names neither a Mechanism subclass nor a module")
        except Exception as err:  # a broken plug-in never breaks the library
            msg = str(err).splitlines()[0] if str(err) else type(err).__name__
            warnings.warn(
                f"mechanism plug-in {ep.name!r} ({ep.value}) not loaded: {msg}",
                DistPrivacyWarning,
                stacklevel=2,
            )
            continue
        loaded.append(ep.name)
    return tuple(loaded)


class _Registry(Mapping[str, type[Mechanism]]):
    """Every registered mechanism by its shorthand (read-only, live): the built-ins in the order
    ``distprivacy calibrate`` lists them, then the others in the order they were registered."""

    def _names(self) -> list[str]:
        reg = registered_mechanisms()
        return [n for n in _BUILTIN_ORDER if n in reg] + [n for n in reg if n not in _BUILTIN_ORDER]

    def __getitem__(self, name: str) -> type[Mechanism]:
        return registered_mechanisms()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(registered_mechanisms())

    def __repr__(self) -> str:
        return f"MECHANISMS({', '.join(self._names())})"


#: Every mechanism by its shorthand, in the order ``distprivacy calibrate`` lists them (a live
#: view of the registry: :func:`register_mechanism` adds to it).
MECHANISMS: Mapping[str, type[Mechanism]] = _Registry()


def make_mechanism(
    name: str,
    epsilon: float | None = None,
    delta: float = 0.0,
    calibration: str = "exact",
    *,
    mu: float | None = None,
    max_accuracy: float | None = None,
    covariances: str = "fitted",
    utility: str = "scaled",
    target: Target | None = None,
) -> Mechanism:
    """A mechanism by shorthand (case-insensitive), e.g. ``make_mechanism("DauM-G", 1, 1e-3)``
    or, typed, ``make_mechanism("DauM-G", target=GDP(0.5), delta=1e-3)``.

    Gaussian mechanisms also accept a target ``mu`` or ``max_accuracy`` instead of ε (exact rule;
    δ then picks the reported point of the (ε, δ) curve), ``covariances`` ("fitted" or
    "pooled") and ``utility`` ("scaled" or "l2"), see :class:`GaussianMechanism`.

    ``target`` (a :mod:`distprivacy.targets` value: ``EpsDelta``, ``GDP`` or
    ``MaxAttackAccuracy``) states the same thing as one typed value and replaces ``epsilon``,
    ``mu`` and ``max_accuracy`` (an ``EpsDelta`` also gives δ); ``calibration`` may be a
    :class:`~distprivacy.targets.Rule`.

    Parameters
    ----------
    name : str
        The shorthand: ``"DauM-G"``, ``"ExpM-L"``, ... (``MECHANISMS`` lists them).
    epsilon : float, optional
        The target ε (with ``delta``).
    delta : float, default 0
        The target δ (for a μ or accuracy target: the point of the curve reported).
    calibration : {"exact", "classic"} or Rule, default "exact"
        The calibration rule.
    mu : float, optional
        A μ-GDP target instead of ε (Gaussian mechanisms).
    max_accuracy : float, optional
        A bound on any attacker's accuracy instead of ε (Gaussian mechanisms).
    covariances : {"fitted", "pooled"}, default "fitted"
        Whether the guarantee must hold for the fitted covariances as they are.
    utility : {"scaled", "l2"}, default "scaled"
        How noise is costed where the mechanism chooses (OptM-G).
    target : EpsDelta, GDP or MaxAttackAccuracy, optional
        The target as one typed value, instead of ``epsilon``, ``mu`` and ``max_accuracy``.

    Returns
    -------
    Mechanism
        The mechanism, not yet calibrated (``.calibrate(model)`` next).
    """
    check_instance(target, "target", (EpsDelta, GDP, MaxAttackAccuracy),
                   "a privacy target (EpsDelta, GDP or MaxAttackAccuracy: distprivacy.targets)",
                   optional=True)  # fmt: skip
    check_text(name, "the mechanism name", what=f"one of {', '.join(MECHANISMS)}")
    if target is not None:
        if epsilon is not None or mu is not None or max_accuracy is not None:
            raise DistPrivacyError(
                "give the target once: target=..., or epsilon / mu / max_accuracy, not both"
            )
        if isinstance(target, EpsDelta):
            epsilon, delta = target.epsilon, target.delta
        elif isinstance(target, GDP):
            mu = target.mu
        else:
            max_accuracy = target.accuracy
    lookup = {k.lower(): v for k, v in MECHANISMS.items()}
    cls = lookup.get(name.strip().lower())
    if cls is None:
        raise DistPrivacyError(f"unknown mechanism {name!r}; choose one of {', '.join(MECHANISMS)}")
    if issubclass(cls, GaussianMechanism):
        return cls(
            epsilon,
            delta,
            calibration,
            mu=mu,
            max_accuracy=max_accuracy,
            covariances=covariances,
            utility=utility,
        )
    if mu is not None or max_accuracy is not None:
        raise NotApplicableError(
            f"{cls.name} is not applicable: it is a pure-ε mechanism and cannot target a μ or "
            "a maximum accuracy; give epsilon"
        )
    if epsilon is None:
        raise DistPrivacyError(f"{cls.name} needs epsilon")
    # Pure-ε mechanisms check δ ∈ [0, 1) too (a δ of 1.5 or NaN is a mistake) and report 0.
    return cls(epsilon, delta, calibration)


#: Failures of one mechanism's calibration that leave the others meaningful: its hypotheses do
#: not hold (DistPrivacyError), or its noise overflowed/underflowed double precision.
CALIBRATION_FAILURES: tuple[type[BaseException], ...] = (
    DistPrivacyError,
    ArithmeticError,
    np.linalg.LinAlgError,
)


def _reason(name: str, exc: BaseException) -> str:
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, MissingExtraError):  # "OptM-G needs cvxpy: pip install …"
        return msg
    if isinstance(exc, DistPrivacyError):
        if msg.startswith(f"{name} is not applicable"):
            return msg
        msg = msg.removeprefix(f"{name}: ")
        return f"{name} is not applicable: {msg}"
    return f"{name} is not applicable: its calibration failed numerically ({msg})"


def calibrate_all(
    model: FModel,
    epsilon: float | None,
    delta: float,
    calibration: str = "exact",
    names: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    **targets: Any,
) -> tuple[list[Calibration], dict[str, str]]:
    """Calibrate every mechanism (or ``names``); returns the calibrations and, for the others,
    why not.

    Parameters
    ----------
    model : FModel
        A fitted model of f_θ.
    epsilon, delta, calibration
        As for :func:`make_mechanism` (validated first: a bad value raises for all).
    names : list of str, optional
        The mechanisms (default: all of :data:`MECHANISMS`).
    progress : callable, optional
        ``progress(done, total)`` after each mechanism.
    **targets
        ``mu``, ``max_accuracy``, ``covariances``, ``utility`` as for :func:`make_mechanism`.

    Returns
    -------
    calibrations : list of Calibration
    not_applicable : dict
        Mechanism name → one-line reason: its hypotheses fail, or its calibration fails for
        these parameters (e.g. the noise overflows at ε = 5e-324).
    """
    check_instance(model, "model", FModel, "a fitted model of f_θ (fit_model)")
    check_texts(names, "names", optional=True)
    check_callable(progress, "progress", "a function progress(done, total)", optional=True)
    check_keywords(targets, ("mu", "max_accuracy", "covariances", "utility", "target"),
                   "calibrate_all()")  # fmt: skip
    done: list[Calibration] = []
    skipped: dict[str, str] = {}
    todo = list(names or MECHANISMS)
    for k, name in enumerate(todo):
        try:
            mech = make_mechanism(name, epsilon, delta, calibration, **targets)
        except NotApplicableError as e:
            skipped[name] = str(e)
        else:
            if progress is not None and hasattr(mech, "progress"):
                # The Wasserstein mechanisms report each pair: keep the bar moving.
                mech.progress = lambda d, t, k=k: progress(k + d / max(t, 1), len(todo))
            try:
                with np.errstate(all="ignore"):
                    done.append(mech.calibrate(model))
            except CALIBRATION_FAILURES as e:
                skipped[mech.name] = _reason(mech.name, e)
        if progress is not None:
            progress(k + 1, len(todo))
    return done, skipped


__all__ = [
    "CALIBRATION_FAILURES",
    "MECHANISMS",
    "ApproximateWassersteinMechanism",
    "BoundedWassersteinMechanism",
    "Calibration",
    "Calibrator",
    "DauM",
    "DirectionalGaussian",
    "DirectionalLaplace",
    "EigenvectorGaussian",
    "ExpectedValueGaussian",
    "ExpectedValueLaplace",
    "GaussianAccounting",
    "GaussianMechanism",
    "GaussianTarget",
    "GroupDPGaussian",
    "GroupDPLaplace",
    "Mechanism",
    "NoNoise",
    "OptimalGaussian",
    "Proposal",
    "Release",
    "SharedCovariance",
    "WassersteinMechanism",
    "calibrate_all",
    "daum_variance",
    "delta_e",
    "load_mechanism_plugins",
    "make_mechanism",
    "register_mechanism",
    "registered_mechanisms",
]

# Third-party mechanisms (entry-point group ``distprivacy.mechanisms``), after the built-ins.
load_mechanism_plugins()
