"""Mechanisms: calibrate on a model of f_θ, inspect the calibration, then release.

A :class:`Mechanism` is a small object holding ε, δ and the calibration rule; ``calibrate(model)``
returns a :class:`Calibration` — the noise (family, directions, scales, covariance), the expected
L2 error, the guarantee, the theorem it rests on, its assumptions and any warnings — and only
``Calibration.release(F(D))`` draws noise. Calibrating never touches the data being released.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from threadpoolctl import threadpool_limits

from distprivacy.accounting import (
    check_delta,
    check_epsilon,
    check_number,
    check_rule,
    check_vector,
)
from distprivacy.exceptions import DistPrivacyError, ExactReleaseError, NotApplicableError
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import RandomState, check_random_state, is_secure

#: What a guarantee rests on (``Calibration.basis``).
BASIS_FITTED = "exact profile of the fitted Gaussian model (unequal covariances included)"
BASIS_UNCONDITIONAL = "every dataset (group differential privacy)"
BASIS_EQUAL_COVARIANCES = "the fitted Gaussian model with one covariance per pair (assumed)"
BASIS_TRANSLATION = "f_θi a translation of f_θj for every pair (assumed, not verified)"
BASIS_SAMPLES = "the empirical distributions of the Monte-Carlo samples (W∞ computed on them)"


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.floating | np.integer):
        return x.item()
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


@dataclass(frozen=True, repr=False)
class Calibration:
    """A calibrated mechanism, inspectable before any release.

    Attributes
    ----------
    mechanism : str
        Shorthand (Table 1 of the paper: ``ExpM-G``, ``DauM-G``, ...).
    theorem : str
        The result that proves the guarantee (paper and number).
    epsilon, delta : float
        The guarantee: (ε, δ)-distribution privacy w.r.t. the model's pairs Ψ.
    noise : NoiseDistribution
        Family, orthonormal directions and scales of the added noise Z.
    statistic_names : tuple of str
    sensitivity : float or None
        The distance the noise is scaled to (Δ_E,2, Δ_W, W, ...), named by ``sensitivity_label``.
    rule : str or None
        Gaussian calibration rule (``classic``); None for pure-ε Laplace mechanisms.
    assumptions : tuple of str
        What the guarantee rests on (model assumptions of the theorem).
    warnings : tuple of str
        Where an assumption is visibly off or the rule is outside its proven range.
    details : mapping
        Mechanism-specific intermediate quantities (per-pair variances, directions, ...).
    accounting : mapping
        The guarantee in its three forms — ``mu`` (Gaussian mechanisms), the (ε, δ) curve
        (``delta_achieved`` at ε; ``shared_covariance`` / ``unequal_covariance`` profiles) and
        ``max_attack_accuracy`` — see :mod:`distprivacy.mechanisms.gaussian`.
    """

    mechanism: str
    theorem: str
    epsilon: float
    delta: float
    noise: NoiseDistribution
    statistic_names: tuple[str, ...]
    sensitivity: float | None = None
    sensitivity_label: str = ""
    rule: str | None = None
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    accounting: Mapping[str, Any] = field(default_factory=dict)
    statistic_scales: np.ndarray | None = None
    statistic_levels: np.ndarray | None = None
    basis: str = ""

    @property
    def verified(self) -> bool:
        """Whether the guarantee was verified for this noise without an unchecked modelling
        assumption: exact accounting on the fitted Gaussian model as it is (unequal covariances
        included), or a guarantee that holds for every dataset (group DP)."""
        return self.basis in (BASIS_FITTED, BASIS_UNCONDITIONAL) and (
            self.delta_achieved <= self.delta * (1 + 1e-6)
        )

    @property
    def noise_sd(self) -> np.ndarray:
        """Standard deviation of each released statistic's noise (in the statistic's units)."""
        return np.sqrt(np.maximum(np.diag(self.noise_covariance), 0.0))

    @property
    def relative_error(self) -> np.ndarray:
        """Noise SD over the statistic's typical magnitude (mean over θ of |E F_k|); NaN where
        that is 0."""
        if self.statistic_levels is None:
            return np.full(len(self.statistic_names), np.nan)
        lv = np.asarray(self.statistic_levels, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(lv > 0, self.noise_sd / np.where(lv > 0, lv, 1.0), np.nan)

    @property
    def noise_to_sampling(self) -> np.ndarray:
        """Noise SD over the statistic's own sampling SD under f_θ (its scale s_k)."""
        if self.statistic_scales is None:
            return np.full(len(self.statistic_names), np.nan)
        return self.noise_sd / np.asarray(self.statistic_scales, dtype=float)

    def utility_cost(self, utility: str = "scaled") -> float:
        """The noise's cost under a utility: ``scaled`` Σ_k Var(Z_k)/s_k² (unit-free),
        ``l2`` E‖Z‖₂ (raw units, the paper's)."""
        if utility == "l2":
            return self.expected_l2_error
        if self.statistic_scales is None:
            raise DistPrivacyError("this calibration carries no statistic scales")
        return float(np.sum(self.noise_sd**2 / np.asarray(self.statistic_scales) ** 2))

    def per_statistic(self) -> list[dict[str, Any]]:
        """Per statistic: name, noise SD, relative error, noise SD over sampling SD."""
        return [
            {
                "statistic": n,
                "noise_sd": float(sd),
                "relative_error": _jsonable(float(re)),
                "noise_to_sampling_sd": _jsonable(float(ns)),
            }
            for n, sd, re, ns in zip(
                self.statistic_names,
                self.noise_sd,
                self.relative_error,
                self.noise_to_sampling,
                strict=True,
            )
        ]

    def __repr__(self) -> str:
        mu = "" if self.mu is None else f", μ={self.mu:.4g}"
        return (
            f"Calibration({self.mechanism}, ε={self.epsilon:g}, δ={self.delta_achieved:.3g}{mu}, "
            f"E‖Z‖₂={self.expected_l2_error:.4g}, {'verified' if self.verified else 'assumed'})"
        )

    def summary(self) -> str:
        """A few lines a person can read: the guarantee, what it rests on, and each
        statistic's noise SD and relative error."""
        mu = "" if self.mu is None else f"μ = {self.mu:.4g}-GDP, "
        lines = [
            f"{self.mechanism} ({self.theorem})",
            f"  guarantee: {mu}({self.epsilon:.4g}, {self.delta_achieved:.3g})-distribution "
            f"privacy; no attacker above {self.max_attack_accuracy:.1%} accuracy",
            f"  rests on: {self.basis or 'the assumptions below'}"
            f" ({'verified' if self.verified else 'not verified'})",
            f"  noise: {self.noise.family}, E‖Z‖₂ = {self.expected_l2_error:.4g}",
        ]
        for row in self.per_statistic():
            rel = row["relative_error"]
            rel_text = "—" if rel is None else f"{rel:.2%}"
            lines.append(f"    {row['statistic']}: SD {row['noise_sd']:.4g} ({rel_text})")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    @property
    def mu(self) -> float | None:
        """μ of the μ-GDP guarantee (Gaussian mechanisms; None for pure-ε Laplace ones)."""
        shared = self.accounting.get("shared_covariance")
        return None if shared is None else float(shared["mu"])

    @property
    def max_attack_accuracy(self) -> float:
        """Upper bound on any attacker's accuracy between two equally likely θ of a pair:
        Φ(μ/2) for μ-GDP (or (1 + TV)/2 of the fitted Gaussians, if worse), and
        (e^ε + δ)/(1 + e^ε) for an (ε, δ) guarantee."""
        if "max_attack_accuracy" in self.accounting:
            return float(self.accounting["max_attack_accuracy"])
        e = math.exp(min(self.epsilon, 700.0))
        return (e + self.delta) / (1 + e)

    @property
    def delta_achieved(self) -> float:
        """The δ the noise actually achieves at ``epsilon`` (exact accounting; equals ``delta``
        for pure-ε mechanisms)."""
        return float(self.accounting.get("delta_achieved", self.delta))

    def delta_at(self, epsilon: float) -> float:
        """δ(ε) of the μ-GDP guarantee (shared-covariance form), at any ε ≥ 0."""
        from distprivacy.profiles import gdp_delta

        if self.mu is None:
            raise DistPrivacyError(f"{self.mechanism} is pure-ε: it has no (ε, δ) curve")
        return float(gdp_delta(check_number(epsilon, "epsilon", low=0), self.mu))

    def epsilon_at(self, delta: float) -> float:
        """Smallest ε with δ(ε) ≤ delta for the μ-GDP guarantee."""
        from distprivacy.profiles import gdp_epsilon

        if self.mu is None:
            raise DistPrivacyError(f"{self.mechanism} is pure-ε: it has no (ε, δ) curve")
        return gdp_epsilon(check_delta(delta), self.mu)

    @property
    def noise_covariance(self) -> np.ndarray:
        """Cov(Z), shape (m, m)."""
        return self.noise.covariance

    @property
    def expected_l2_error(self) -> float:
        """E‖M(D) − F(D)‖₂ = E‖Z‖₂, computed exactly (the paper's Table 2 metric)."""
        return self.noise.expected_l2_error

    @property
    def expected_squared_error(self) -> float:
        """E‖Z‖₂² = tr Cov(Z)."""
        return self.noise.expected_squared_error

    @property
    def bias(self) -> np.ndarray:
        """E[M(D)] − F(D): zero, every noise here is centred."""
        return np.zeros(len(self.statistic_names))

    @property
    def variance(self) -> np.ndarray:
        """Variance of each released statistic's noise."""
        return np.diag(self.noise_covariance).copy()

    @property
    def adds_noise(self) -> bool:
        """Whether the release adds any noise (False: it would publish F(D) itself)."""
        n = self.noise
        return n.family != "none" and bool(np.any(n.scales > 0))

    def sample_noise(self, size: int | None = None, rng: RandomState = None) -> np.ndarray:
        """Draw the noise Z (one call for all ``size`` draws; ``size`` a non-negative integer)."""
        return self.noise.sample(size, rng)

    def release(
        self,
        value: np.ndarray | list[float],
        rng: RandomState = None,
        *,
        allow_exact: bool = False,
    ) -> Release:
        """Release M(D) = F(D) + Z.

        Parameters
        ----------
        value : array (m,)
            F(D), the true statistics of the dataset being released (finite real numbers).
        rng : None, int, Generator or SecureGenerator
            None (default): cryptographically secure noise (OpenDP). A seed or generator makes the
            release reproducible — for experiments only, never for a real release.
        allow_exact : bool
            Release even when the calibration adds no noise, i.e. publish the true statistics
            (NoNoise, Thm 4.4, or any calibration whose noise came out zero). Off by default.

        Raises
        ------
        ExactReleaseError
            When the calibration adds no noise and ``allow_exact`` is False.
        DistPrivacyError
            When ``value`` is not a vector of m finite real numbers, or the release overflows.
        """
        v = check_vector(value, "the value to release", len(self.statistic_names))
        if not self.adds_noise and not allow_exact:
            raise ExactReleaseError(exact_release_reason(self))
        gen = check_random_state(rng, secure=True)
        noisy = v + self.noise.sample(None, gen)
        bad = [n for n, x in zip(self.statistic_names, noisy, strict=True) if not np.isfinite(x)]
        if bad:
            raise DistPrivacyError(
                f"the release of {', '.join(bad)} overflowed (value plus noise is not a finite "
                "number); rescale the statistic"
            )
        return Release(noisy, self.statistic_names, self, is_secure(gen))

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON output of ``distprivacy calibrate``)."""
        return _jsonable(
            {
                "name": self.mechanism,
                "theorem": self.theorem,
                "epsilon": self.epsilon,
                "delta": self.delta,
                "rule": self.rule,
                "noise_family": self.noise.family,
                "noise_directions": self.noise.basis.T,
                "noise_scales": self.noise.scales,
                "noise_covariance": self.noise_covariance,
                "expected_l2_error": self.expected_l2_error,
                "expected_squared_error": self.expected_squared_error,
                "sensitivity": self.sensitivity,
                "sensitivity_label": self.sensitivity_label,
                "statistics": list(self.statistic_names),
                "assumptions": list(self.assumptions),
                "warnings": list(self.warnings),
                "details": dict(self.details),
                "mu": self.mu,
                "max_attack_accuracy": self.max_attack_accuracy,
                "delta_achieved": self.delta_achieved,
                "accounting": dict(self.accounting),
                "per_statistic": self.per_statistic(),
                "basis": self.basis,
                "verified": self.verified,
                "utility_scaled": (
                    self.utility_cost("scaled") if self.statistic_scales is not None else None
                ),
            }
        )


@dataclass(frozen=True, repr=False)
class Release:
    """Released statistics M(D) and the calibration that produced them."""

    values: np.ndarray
    statistic_names: tuple[str, ...]
    calibration: Calibration
    secure: bool

    def __repr__(self) -> str:
        vals = ", ".join(
            f"{n}={v:.4g}" for n, v in zip(self.statistic_names, self.values, strict=True)
        )
        return f"Release({vals}; by {self.calibration.mechanism}, secure={self.secure})"

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(
            {
                "statistics": dict(zip(self.statistic_names, self.values.tolist(), strict=True)),
                "noise_added": self.calibration.adds_noise,
                "secure_randomness": self.secure,
                "calibration": self.calibration.to_dict(),
            }
        )


class Mechanism(ABC):
    """A distribution-privacy mechanism M(D) = F(D) + Z.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float
        δ ∈ (0, 1) for (ε, δ) mechanisms; ignored (and reported as 0) by pure-ε ones.
    calibration : str
        Gaussian calibration rule, ``exact`` (default) or the paper's ``classic``; pure-ε
        mechanisms ignore it.
    """

    name: ClassVar[str]
    theorem: ClassVar[str]
    #: What the guarantee rests on (one of the ``BASIS_*`` texts); Gaussian mechanisms set it
    #: per calibration.
    basis: ClassVar[str] = BASIS_TRANSLATION
    uses_delta: ClassVar[bool] = True
    needs_samples: ClassVar[bool] = False

    def __init__(self, epsilon: float, delta: float = 0.0, calibration: str = "exact") -> None:
        self.epsilon = check_epsilon(epsilon)
        # Pure-ε mechanisms ignore δ (reported as 0), but a δ outside [0, 1) is still refused.
        d = check_delta(delta, allow_zero=not self.uses_delta)
        self.delta = d if self.uses_delta else 0.0
        self.calibration = check_rule(calibration)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, delta={self.delta:g})"

    def calibrate(self, model: FModel) -> Calibration:
        """Calibrate the noise on ``model`` (raises NotApplicableError when the theorem's
        hypotheses cannot be met)."""
        model._check_fitted()
        if self.needs_samples and model.samples_ is None:
            raise NotApplicableError(
                f"{self.name} needs samples of F under each θ; fit a Monte-Carlo model "
                "(--modeling auto or monte-carlo) or give samples in the model file"
            )
        model.check_finite()
        # Small-matrix numerics: one BLAS thread is 10-20x faster than a pool (measured on the
        # 2-core machine under load: bench/bench_calibration.py).
        with threadpool_limits(limits=1):
            cal = self._calibrate(model)
        check_calibration_finite(cal)
        return _flag_swamped(cal)

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
            **{"basis": self.basis, **kw},
        )


def _flag_swamped(cal: Calibration) -> Calibration:
    """Add a warning naming the statistics whose noise SD exceeds their typical magnitude (a
    raw-unit mechanism next to small-scale statistics, e.g. dollars beside a share)."""
    rel = cal.relative_error
    bad = [
        f"{n} ({r:.3g}×)"
        for n, r in zip(cal.statistic_names, rel, strict=True)
        if np.isfinite(r) and r > 1
    ]
    if not bad:
        return cal
    text = f"noise SD above the statistic's typical value (swamped): {', '.join(bad)}"
    return dataclasses.replace(cal, warnings=(*cal.warnings, text))


def exact_release_reason(cal: Calibration) -> str:
    """Why a zero-noise release is refused, naming Theorem 4.4 and the way to allow it."""
    return (
        f"{cal.mechanism} adds no noise here: the release would publish the true statistics "
        "(Chen & Ohrimenko 2023, Theorem 4.4: the model's own randomness gives the guarantee); "
        "pass --allow-exact (allow_exact=True) to release them exactly"
    )


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


def covariance_assumption(model: FModel, threshold: float = 0.1) -> tuple[str, str | None]:
    """The equal-covariance assumption's text and, when visibly off, a warning."""
    mis = model.covariance_mismatch()
    text = (
        "f_θi and f_θj have equal covariances for every pair (measured: largest relative "
        f"difference {mis:.1%}; each θ's own covariance is used in the sup)"
    )
    warn = None
    if mis > threshold:
        warn = (
            f"the covariances of a protected pair differ by {mis:.1%} (relative Frobenius "
            "norm): the equal-covariance/translation assumption is visibly off"
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
