"""The typed accounting of a Gaussian calibration: μ, the (ε, δ) point and the attack bound.

A Gaussian mechanism reports its guarantee in three forms (:mod:`distprivacy.mechanisms.
gaussian`): the μ-GDP parameter under the shared-covariance model (:class:`SharedCovariance`),
the exact profile of the fitted Gaussians with their unequal covariances (``unequal``, the plain
form of the :class:`~distprivacy.mechanisms._fitted.FittedProfile` of
:func:`~distprivacy.mechanisms.gaussian.fitted_profile`, or None when it was not computed)
and the worse of the two at ε (``delta_achieved``, ``max_attack_accuracy``).
:meth:`GaussianAccounting.to_dict` writes the JSON of ``distprivacy calibrate`` (key
``accounting``) and :meth:`GaussianAccounting.from_dict` reads it back exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from distprivacy._json import number
from distprivacy.exceptions import DistPrivacyError

#: The keys of the unequal-covariance profile (:func:`~distprivacy.mechanisms.gaussian.
#: fitted_profile`).
PROFILE_KEYS = (
    "delta_at_epsilon",
    "max_attack_accuracy",
    "error_bound",
    "violated",
    "worst_pair",
    "support_mismatch",
    "pairs_exact",
)


def _fields(raw: Any, what: str, keys: tuple[str, ...], required: tuple[str, ...]) -> dict:
    if not isinstance(raw, Mapping):
        raise DistPrivacyError(f"{what} must be an object, got {type(raw).__name__}")
    extra = sorted(map(str, set(raw) - set(keys)))
    if extra:
        raise DistPrivacyError(f"unknown key(s) in {what}: {', '.join(extra)}")
    missing = [k for k in required if k not in raw]
    if missing:
        raise DistPrivacyError(f"{what} is missing {', '.join(missing)}")
    return dict(raw)


def _float(x: Any, what: str) -> float:
    v = number(x)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise DistPrivacyError(f"{what} must be a number, got {x!r}")
    return float(v)


@dataclass(frozen=True)
class SharedCovariance:
    """The μ-GDP guarantee of the shared-covariance model (one covariance per pair).

    Attributes
    ----------
    mu : float
        μ = max over the pairs of the Mahalanobis distance of the means (noise included).
    delta_at_epsilon : float
        δ_μ(ε) at the calibration's ε.
    epsilon_at_delta : float
        ε_μ(δ) at the calibration's δ.
    max_attack_accuracy : float
        Φ(μ/2).
    """

    mu: float
    delta_at_epsilon: float
    epsilon_at_delta: float
    max_attack_accuracy: float

    @classmethod
    def of(cls, mu: float, epsilon: float, delta: float) -> SharedCovariance:
        """The three forms of a μ-GDP guarantee at (ε, δ) (fail closed for μ = ∞)."""
        from distprivacy.profiles import gdp_accuracy, gdp_delta, gdp_epsilon

        finite = math.isfinite(mu)
        return cls(
            mu=mu,
            delta_at_epsilon=float(gdp_delta(epsilon, mu)) if finite else 1.0,
            epsilon_at_delta=gdp_epsilon(delta, mu) if finite else math.inf,
            max_attack_accuracy=gdp_accuracy(mu) if finite else 1.0,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mu": self.mu,
            "delta_at_epsilon": self.delta_at_epsilon,
            "epsilon_at_delta": self.epsilon_at_delta,
            "max_attack_accuracy": self.max_attack_accuracy,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SharedCovariance:
        keys = ("mu", "delta_at_epsilon", "epsilon_at_delta", "max_attack_accuracy")
        kw = _fields(raw, "the shared-covariance accounting", keys, keys)
        return cls(**{k: _float(v, k) for k, v in kw.items()})


@dataclass(frozen=True)
class GaussianAccounting:
    """The accounting of a Gaussian calibration (module docstring).

    Attributes
    ----------
    rule : str or None
        ``exact`` or ``classic``.
    target_mu : float
        μ* the rule asked for.
    mu_used : float
        μ* the noise was calibrated to (lower than ``target_mu`` when meeting the target under
        the fitted covariances needed it).
    epsilon, delta : float
        The target (ε, δ).
    shared : SharedCovariance
        The μ-GDP guarantee of the shared-covariance model.
    unequal : dict or None
        The exact profile of the fitted Gaussians with unequal covariances (keys
        :data:`PROFILE_KEYS`), None when it was not computed.
    delta_achieved : float
        The δ the noise achieves at ε: the worse of the two.
    max_attack_accuracy : float
        The largest accuracy of any attacker between two equally likely θ: the worse of the two.
    """

    rule: str | None
    target_mu: float
    mu_used: float
    epsilon: float
    delta: float
    shared: SharedCovariance
    unequal: dict[str, Any] | None
    delta_achieved: float
    max_attack_accuracy: float

    @classmethod
    def of(
        cls,
        rule: str | None,
        mu: float,
        target_mu: float,
        mu_used: float,
        epsilon: float,
        delta: float,
        profile: Mapping[str, Any] | None,
    ) -> GaussianAccounting:
        """The accounting of a noise with μ-GDP parameter ``mu`` and, if computed, the
        unequal-covariance ``profile`` (the worse of the two is achieved)."""
        shared = SharedCovariance.of(mu, epsilon, delta)
        achieved = shared.delta_at_epsilon
        acc = shared.max_attack_accuracy
        if profile is not None:
            achieved = max(achieved, profile["delta_at_epsilon"])
            acc = max(acc, profile["max_attack_accuracy"])
        return cls(
            rule=rule,
            target_mu=target_mu,
            mu_used=mu_used,
            epsilon=epsilon,
            delta=delta,
            shared=shared,
            unequal=None if profile is None else dict(profile),
            delta_achieved=achieved,
            max_attack_accuracy=acc,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``accounting`` entry of a calibration's JSON (same keys as ever)."""
        return {
            "rule": self.rule,
            "target_mu": self.target_mu,
            "mu_used": self.mu_used,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "shared_covariance": self.shared.to_dict(),
            "unequal_covariance": None if self.unequal is None else dict(self.unequal),
            "delta_achieved": self.delta_achieved,
            "max_attack_accuracy": self.max_attack_accuracy,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> GaussianAccounting:
        """Inverse of :meth:`to_dict` (its JSON form too; unknown keys refused).

        Raises
        ------
        DistPrivacyError
        """
        keys = (
            "rule", "target_mu", "mu_used", "epsilon", "delta", "shared_covariance",
            "unequal_covariance", "delta_achieved", "max_attack_accuracy",
        )  # fmt: skip
        kw = _fields(raw, "a calibration's accounting", keys, keys)
        rule = kw["rule"]
        if rule is not None and not isinstance(rule, str):
            raise DistPrivacyError(f"the accounting's rule must be text, got {rule!r}")
        unequal = kw["unequal_covariance"]
        if unequal is not None:
            unequal = _fields(
                unequal, "the unequal-covariance profile", PROFILE_KEYS, ("delta_at_epsilon",)
            )
            for k in ("delta_at_epsilon", "max_attack_accuracy", "error_bound"):
                if unequal.get(k) is not None:
                    unequal[k] = _float(unequal[k], k)
            if unequal.get("worst_pair") is not None:
                unequal["worst_pair"] = tuple(int(i) for i in unequal["worst_pair"])
        return cls(
            rule=rule,
            target_mu=_float(kw["target_mu"], "target_mu"),
            mu_used=_float(kw["mu_used"], "mu_used"),
            epsilon=_float(kw["epsilon"], "epsilon"),
            delta=_float(kw["delta"], "delta"),
            shared=SharedCovariance.from_dict(kw["shared_covariance"]),
            unequal=unequal,
            delta_achieved=_float(kw["delta_achieved"], "delta_achieved"),
            max_attack_accuracy=_float(kw["max_attack_accuracy"], "max_attack_accuracy"),
        )
