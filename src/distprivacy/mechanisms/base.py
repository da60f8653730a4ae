"""Mechanisms: calibrate on a model of f_θ, inspect the calibration, then release.

A :class:`Mechanism` is a small object holding ε, δ and the calibration rule; ``calibrate(model)``
returns a :class:`~distprivacy.mechanisms.calibration.Calibration` — the noise (family,
directions, scales, covariance), the expected L2 error, the guarantee, the theorem it rests on,
its assumptions and any warnings — and only ``Calibration.release(F(D))`` draws noise.
Calibrating never touches the data being released. (:class:`Calibration`, the ``BASIS_*`` texts
and :class:`~distprivacy.guarantee.Release` are importable from here too.)
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from threadpoolctl import ThreadpoolController

from distprivacy.checks import check_delta, check_epsilon, check_instance, check_rule, shown
from distprivacy.exceptions import (
    AssumptionWarning,
    DistPrivacyError,
    DistPrivacyTypeError,
    MissingExtraError,
    NotApplicableError,
    Notice,
    WeakGuaranteeWarning,
    has_extra,
)
from distprivacy.guarantee import Release
from distprivacy.mechanisms._exactness import exact_release_reason
from distprivacy.mechanisms._swamped import flag_swamped
from distprivacy.mechanisms.calibration import (
    BASIS_EQUAL_COVARIANCES,
    BASIS_FITTED,
    BASIS_SAMPLES,
    BASIS_TRANSLATION,
    BASIS_UNCONDITIONAL,
    Calibration,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.request import GaussianOptions
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Target

__all__ = [
    "BASIS_EQUAL_COVARIANCES",
    "BASIS_FITTED",
    "BASIS_SAMPLES",
    "BASIS_TRANSLATION",
    "BASIS_UNCONDITIONAL",
    "Calibration",
    "Mechanism",
    "Release",
    "check_calibration_finite",
    "covariance_assumption",
    "delta_e",
    "difference_span",
    "exact_release_reason",
    "not_applicable",
    "register_mechanism",
    "registered_mechanisms",
    "row_span",
]

#: Every registered mechanism class by its shorthand, in the order of registration.
_REGISTRY: dict[str, type[Mechanism]] = {}


class Mechanism(ABC):
    """A distribution-privacy mechanism M(D) = F(D) + Z.

    Parameters
    ----------
    target : EpsDelta, GDP or MaxAttackAccuracy
        What the calibration must meet (:mod:`distprivacy.targets`). Pure-ε and Wasserstein
        mechanisms take an :class:`~distprivacy.targets.EpsDelta` (δ ∈ (0, 1) for (ε, δ)
        mechanisms; pure-ε ones ignore it and report 0); the Gaussian ones also a μ or an
        attack accuracy.
    options : GaussianOptions, optional
        The Gaussian family's options (:mod:`distprivacy.request`); the other families ignore
        them (a request naming several mechanisms carries them for its Gaussian ones).
    """

    name: ClassVar[str]
    theorem: ClassVar[str]
    #: What the guarantee rests on (one of the ``BASIS_*`` texts); Gaussian mechanisms set it
    #: per calibration.
    basis: ClassVar[str] = BASIS_TRANSLATION
    uses_delta: ClassVar[bool] = True
    needs_samples: ClassVar[bool] = False
    #: Its guarantee is a μ-GDP curve: it takes a μ or attack-accuracy target, not only an
    #: (ε, δ), and reads the Gaussian options (True for every
    #: :class:`~distprivacy.mechanisms.gaussian.GDPMechanism`: the Gaussian ones and NoNoise).
    #: Callers ask this, never the class's ancestry.
    targets_gdp: ClassVar[bool] = False
    #: Optional dependencies of the calibration (import names, keys of
    #: :data:`distprivacy.exceptions.EXTRAS`), e.g. OptM-G's ``("cvxpy",)``.
    extras: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def require_extras(cls) -> None:
        """Raise :class:`~distprivacy.exceptions.MissingExtraError` (one line naming the extra
        to install) when an optional dependency of :attr:`extras` is not installed."""
        for module in cls.extras:
            if not has_extra(module):
                raise MissingExtraError(cls.name, module)

    def __init__(
        self, target: Target | None = None, options: GaussianOptions | None = None, **old: Any
    ) -> None:
        self._check_request(target, options, old)
        self.target: Target = target  # type: ignore[assignment]
        self._set_target(self.target, options)

    @classmethod
    def _check_request(cls, target: Any, options: Any, old: dict[str, Any]) -> None:
        """A one-line type error for anything but a target and options, naming the new call
        (``old``: the loose keywords of the API before issue 32, refused)."""
        if old or not isinstance(target, EpsDelta | GDP | MaxAttackAccuracy):
            raise DistPrivacyTypeError(
                f"{cls.__name__} takes a privacy target (EpsDelta, GDP or MaxAttackAccuracy: "
                f"distprivacy.targets) and GaussianOptions, e.g. {_new_call(cls, target, old)}; "
                f"got {', '.join(f'{k}={v!r}' for k, v in old.items()) or shown(target)}"
            )
        check_instance(options, "options", GaussianOptions,
                       "the family's options (GaussianOptions)", optional=True)  # fmt: skip

    def _set_target(self, target: Target, options: GaussianOptions | None) -> None:
        """ε, δ and the rule of a pure-ε or Wasserstein mechanism: an (ε, δ) target only."""
        if not isinstance(target, EpsDelta):
            raise NotApplicableError(
                f"{self.name} is not applicable: it is a pure-ε mechanism and cannot target a "
                "μ or a maximum accuracy; give epsilon"
            )
        self.epsilon = check_epsilon(target.epsilon)
        # Pure-ε mechanisms ignore δ (reported as 0), but a δ outside [0, 1) is still refused.
        d = check_delta(target.delta, allow_zero=not self.uses_delta)
        self.delta = d if self.uses_delta else 0.0
        self.calibration = check_rule((options or GaussianOptions()).rule.value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, delta={self.delta:g})"

    def calibrate(self, model: FModel) -> Calibration:
        """Calibrate the noise on ``model`` (raises NotApplicableError when the theorem's
        hypotheses cannot be met; MissingExtraError when an optional dependency is missing)."""
        check_instance(model, "model", FModel, "a fitted model of f_θ (fit_model)")
        self.require_extras()
        model._check_fitted()
        if self.needs_samples and model.samples_ is None:
            raise NotApplicableError(
                f"{self.name} needs samples of F under each θ; fit a Monte-Carlo model "
                "(`method='auto'` or `method='monte-carlo'`) or give samples in the model file"
            )
        model.check_finite()
        # Small-matrix numerics: one BLAS thread is 10-20x faster than a pool (measured on the
        # 2-core machine under load: bench/bench_calibration.py).
        with _one_blas_thread():
            cal = self._calibrate(model)
        check_calibration_finite(cal)
        return _flag_weak(flag_swamped(cal))

    @abstractmethod
    def _calibrate(self, model: FModel) -> Calibration: ...

    def _make(self, model: FModel, noise: NoiseDistribution, **kw: Any) -> Calibration:
        return Calibration(
            mechanism=self.name,
            theorem=self.theorem,
            epsilon=self.epsilon,
            delta=self.delta,
            noise=noise,
            statistic_names=tuple(model.statistic_names_),
            statistic_scales=model.statistic_scales(),
            statistic_levels=model.statistic_levels(),
            query=getattr(model, "query_", None),
            n=_model_n(model),
            model_=model,
            **{"basis": self.basis, **kw},
        )


_CONTROLLER: tuple[int, ThreadpoolController] | None = None
_CONTROLLER_LOCK = threading.Lock()


def _one_blas_thread() -> Any:
    """``threadpool_limits(limits=1)`` without its search of the loaded libraries on every
    call (reading /proc/self/maps and probing each library: ~5 ms, thirteen times in the
    default ``calibrate``): the controller is kept while the number of imported modules is
    unchanged — threadpoolctl's own rule for its cached controller (a library loaded other
    than by an import is rare) — and made afresh otherwise. The limits are set and restored
    as by ``threadpool_limits``."""
    global _CONTROLLER
    n = len(sys.modules)
    cached = _CONTROLLER
    if cached is None or cached[0] != n:
        with _CONTROLLER_LOCK:
            cached = _CONTROLLER = (n, ThreadpoolController())
    return cached[1].limit(limits=1)


def _new_call(cls: type, target: Any, old: dict[str, Any]) -> str:
    """The call of issue 32 that states what ``old`` (loose keywords) stated."""
    if "mu" in old:
        return f"{cls.__name__}(GDP({old['mu']!r}))"
    if "max_accuracy" in old:
        return f"{cls.__name__}(MaxAttackAccuracy({old['max_accuracy']!r}))"
    eps = old.get("epsilon", target if isinstance(target, int | float) else 1)
    return f"{cls.__name__}(EpsDelta({eps!r}, {old.get('delta', 1e-3)!r}))"


def register_mechanism(cls: type[Mechanism]) -> type[Mechanism]:
    """Class decorator: make a mechanism known by its shorthand ``cls.name`` to
    :func:`~distprivacy.mechanisms.make_mechanism`, :func:`~distprivacy.mechanisms.calibrate_all`
    and the ``MECHANISMS`` listing (docs/extending.md).

    Re-registering the same class (a module reloaded) replaces it; a *different* class under a
    registered name is refused with a one-line error (a mechanism never shadows another).

    Parameters
    ----------
    cls : type
        A :class:`Mechanism` subclass with the class attributes ``name`` (its shorthand) and
        ``theorem`` (the result its guarantee rests on).

    Returns
    -------
    type
        ``cls`` itself, registered.
    """
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise DistPrivacyTypeError(
            f"register_mechanism takes a Mechanism subclass, got {shown(cls)}"
        )
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise DistPrivacyError(
            f"{cls.__qualname__} needs a class attribute `name`, its shorthand (e.g. 'MyM-G')"
        )
    if not isinstance(cls.__dict__.get("theorem"), str):
        raise DistPrivacyError(
            f"{cls.__qualname__} needs a class attribute `theorem` naming the result its "
            "guarantee rests on (paper and number)"
        )
    if getattr(cls, "__abstractmethods__", None):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise DistPrivacyError(f"{cls.__qualname__} does not implement {missing}")
    old = _REGISTRY.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise DistPrivacyError(
            f"a mechanism named {name!r} is already registered ({old.__module__}."
            f"{old.__qualname__}); choose another name"
        )
    clash = [k for k in _REGISTRY if k.lower() == name.lower() and k != name]
    if clash:
        raise DistPrivacyError(
            f"mechanism names are case-insensitive: {name!r} clashes with {clash[0]!r}"
        )
    _REGISTRY[name] = cls
    return cls


def registered_mechanisms() -> dict[str, type[Mechanism]]:
    """A copy of the registry: shorthand → class, in the order of registration."""
    return dict(_REGISTRY)


def _model_n(model: FModel) -> int | None:
    """The specification's n (the model's, for a model without one), None when unknown."""
    spec = getattr(model, "spec_", None)
    n = getattr(spec, "n", None) if spec is not None else getattr(model, "n_", None)
    try:
        k = int(n)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return k if k == n and k >= 1 else None


#: ε above which a calibration warns that its guarantee hides nothing in practice.
ABSURD_EPSILON = 100.0


def _flag_weak(cal: Calibration) -> Calibration:
    """Warn when ε is so large (> :data:`ABSURD_EPSILON`) that the likelihood ratio e^ε of
    the guarantee bounds nothing an attacker cares about."""
    if not cal.epsilon > ABSURD_EPSILON:
        return cal
    text = Notice(
        f"ε = {cal.epsilon:g} bounds the odds an attacker gains by e^ε: nothing is hidden in "
        "practice (distribution privacy is meaningful for ε of order 1)",
        WeakGuaranteeWarning,
    )
    return dataclasses.replace(cal, warnings=(*cal.warnings, text))


def delta_e(model: FModel, ord: float) -> float:
    """Δ_E,ord(Ψ, F) = max over pairs of ‖E f_θi − E f_θj‖_ord (§3.2, §4.1)."""
    return float(np.linalg.norm(model.mean_differences(), ord=ord, axis=1).max())


def row_span(D: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis (m × r) of the row span of D (singular values above rtol × the
    largest)."""
    _, s, Vt = np.linalg.svd(D, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        return np.zeros((D.shape[1], 0))
    return Vt[: int(np.sum(s > rtol * s[0]))].T


def difference_span(model: FModel, rtol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis (m × r) of the span of the mean differences (§4.2)."""
    return row_span(model.mean_differences(), rtol)


def covariance_assumption(model: FModel, threshold: float = 0.1) -> tuple[str, Notice | None]:
    """The equal-covariance assumption's text and, when visibly off, a warning
    (:class:`~distprivacy.exceptions.AssumptionWarning`)."""
    mis = model.covariance_mismatch()
    text = (
        "f_θi and f_θj have equal covariances for every pair (measured: largest relative "
        f"difference {mis:.1%}; each θ's own covariance is used in the sup)"
    )
    warn = None
    if mis > threshold:
        warn = Notice(
            f"the covariances of a protected pair differ by {mis:.1%} (relative Frobenius "
            "norm): the equal-covariance/translation assumption is visibly off",
            AssumptionWarning,
        )
    return text, warn


def check_calibration_finite(cal: Calibration) -> None:
    """Refuse a calibration whose noise overflowed (scale, variance or E‖Z‖₂ not finite),
    naming the statistic.

    Raises
    ------
    DistPrivacyError
    """
    var = cal.variance
    bad = [n for n, v in zip(cal.statistic_names, var, strict=True) if not np.isfinite(v)]
    if bad or not math.isfinite(cal.expected_l2_error):
        what = ", ".join(bad) if bad else "the statistics"
        raise DistPrivacyError(
            f"{cal.mechanism}: the noise for {what} overflowed double precision (its variance "
            "or expected error is not finite); rescale the statistics or use a larger epsilon"
        )


def not_applicable(name: str, reason: str) -> NotApplicableError:
    return NotApplicableError(f"{name} is not applicable: {reason}")
