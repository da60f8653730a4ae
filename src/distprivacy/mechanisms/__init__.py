"""Distribution-privacy mechanisms of Chen & Ohrimenko (2023) and the group-DP baselines.

Use :func:`make_mechanism` with a request (:class:`~distprivacy.request.MechanismSpec`: a
Table-1 shorthand, a target, options), or the classes directly with a target; then
``calibration = mechanism.calibrate(model)`` and ``calibration.release(F_of_D)`` (or
``calibration.release(dataset)``, a DataFrame of n records, for a model fitted on data). A
:class:`Calibration` follows the :class:`~distprivacy.guarantee.Calibrated` protocol: its
``guarantee``, ``to_dict()`` / ``Calibration.from_dict()``, and a
:class:`~distprivacy.guarantee.Release`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from distprivacy.checks import (
    check_callable,
    check_instance,
    check_text,
    check_texts,
)
from distprivacy.exceptions import (
    DistPrivacyError,
    DistPrivacyTypeError,
    MissingExtraError,
    NotApplicableError,
)
from distprivacy.guarantee import Release
from distprivacy.mechanisms._accounting import GaussianAccounting, SharedCovariance
from distprivacy.mechanisms._calibrator import Calibrator, Proposal
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
from distprivacy.mechanisms.gaussian import GaussianMechanism, GDPMechanism
from distprivacy.mechanisms.group_dp import GroupDPGaussian, GroupDPLaplace
from distprivacy.mechanisms.optimal import OptimalGaussian
from distprivacy.mechanisms.wasserstein import (
    ApproximateWassersteinMechanism,
    BoundedWassersteinMechanism,
    WassersteinMechanism,
)
from distprivacy.models import FModel
from distprivacy.registry import BUILTIN_MECHANISMS, plugin_entry_points
from distprivacy.request import GaussianOptions, MechanismSpec
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


def mechanism_class(name: str) -> type[Mechanism]:
    """The registered class of shorthand ``name`` (case-insensitive).

    Parameters
    ----------
    name : str
        The shorthand, e.g. ``"DauM-G"`` (``MECHANISMS`` lists them).

    Returns
    -------
    type
        The mechanism's class (not an instance: nothing is calibrated).

    Raises
    ------
    DistPrivacyError
        An unknown name, in one line naming the mechanisms.
    """
    check_text(name, "the mechanism name", what=f"one of {', '.join(MECHANISMS)}")
    lookup = {k.lower(): v for k, v in MECHANISMS.items()}
    cls = lookup.get(name.strip().lower())
    if cls is None:
        raise DistPrivacyError(f"unknown mechanism {name!r}; choose one of {', '.join(MECHANISMS)}")
    return cls


def make_mechanism(
    spec: MechanismSpec | str,
    target: Target | None = None,
    options: GaussianOptions | None = None,
    **old: Any,
) -> Mechanism:
    """The mechanism a request asks for.

    ``make_mechanism(MechanismSpec("DauM-G", EpsDelta(1, 1e-3)))``, or, for short, a name (any
    case), a target and the Gaussian options: ``make_mechanism("DauM-G", GDP(0.5),
    GaussianOptions(report_delta=1e-5))`` (:mod:`distprivacy.request`).

    Parameters
    ----------
    spec : MechanismSpec or str
        The request, or the mechanism's shorthand (``"DauM-G"``, any case; ``MECHANISMS``
        lists them) with ``target`` and ``options``.
    target : EpsDelta, GDP or MaxAttackAccuracy, optional
        The target, when ``spec`` is a name.
    options : GaussianOptions, optional
        The Gaussian mechanisms' options (rule, covariances, utility, the δ reported for a μ or
        accuracy target), when ``spec`` is a name.
    **old
        Refused: the loose arguments of the API before issue 32.

    Returns
    -------
    Mechanism
        The mechanism, not yet calibrated (``.calibrate(model)`` next).

    Raises
    ------
    DistPrivacyTypeError
        Not a request; the loose ``epsilon``/``delta``/``mu``/``max_accuracy`` arguments of the
        API before issue 32 are refused in one line naming the new call.
    DistPrivacyError
        An unknown name; :class:`NotApplicableError` for a μ or accuracy target of a pure-ε
        mechanism.
    """
    if old or not (
        isinstance(spec, MechanismSpec) or isinstance(target, EpsDelta | GDP | MaxAttackAccuracy)
    ):
        if isinstance(spec, MechanismSpec | str):
            name = spec.name if isinstance(spec, MechanismSpec) else spec
            raise DistPrivacyTypeError(
                "make_mechanism takes a MechanismSpec, or a name, a target and GaussianOptions: "
                f"make_mechanism({name!r}, EpsDelta(1, 1e-3)) or make_mechanism({name!r}, "
                "GDP(0.5), GaussianOptions(rule='exact')) (distprivacy.targets, "
                "distprivacy.request)"
            )
        check_instance(spec, "spec", (MechanismSpec, str), "a MechanismSpec or a mechanism's name")
    if isinstance(spec, str):
        spec = MechanismSpec(spec, target, options)  # type: ignore[arg-type]
    elif target is not None or options is not None:
        raise DistPrivacyError("a MechanismSpec carries its target and options; give it alone")
    return mechanism_class(spec.name)(spec.target, spec.options)


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
    request: Target | Sequence[MechanismSpec],
    options: GaussianOptions | None = None,
    names: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Calibration], dict[str, str]]:
    """Calibrate every mechanism asked for; returns the calibrations and, for the others,
    why not.

    Parameters
    ----------
    model : FModel
        A fitted model of f_θ.
    request : target or sequence of MechanismSpec
        The mechanisms, each with its target and options (:mod:`distprivacy.request`); or one
        target for every mechanism of ``names`` with ``options``.
    options : GaussianOptions, optional
        With a target: the Gaussian mechanisms' options.
    names : list of str, optional
        With a target: the mechanisms (default: all of :data:`MECHANISMS`).
    progress : callable, optional
        ``progress(done, total)`` after each mechanism.

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
    if isinstance(request, EpsDelta | GDP | MaxAttackAccuracy):
        todo = [MechanismSpec(n, request, options) for n in (names or MECHANISMS)]
    else:
        check_instance(request, "request", (list, tuple),
                       "a target or a list of MechanismSpec (distprivacy.request)")  # fmt: skip
        if options is not None or names is not None:
            raise DistPrivacyError("MechanismSpecs carry their names and options; give them alone")
        for s in request:
            check_instance(s, "each request", MechanismSpec, "a MechanismSpec")
        todo = list(request)
    done: list[Calibration] = []
    skipped: dict[str, str] = {}
    for k, spec in enumerate(todo):
        try:
            mech = make_mechanism(spec)
        except NotApplicableError as e:
            skipped[spec.name] = str(e)
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
    "GDPMechanism",
    "GaussianAccounting",
    "GaussianMechanism",
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
    "mechanism_class",
    "register_mechanism",
    "registered_mechanisms",
]

# Third-party mechanisms (entry-point group ``distprivacy.mechanisms``), after the built-ins.
load_mechanism_plugins()
