"""Gaussian mechanisms as μ-GDP calibrations, with exact accounting.

The key fact (issue #4; Dong, Roth & Su 2019; Balle & Wang 2018): if f_θ = N(μ_θ, S) for both
members of a pair and the mechanism adds Z ~ N(0, Σ_Z), distinguishing θ_i from θ_j from the
output is exactly testing N(0, 1) against N(μ_ij, 1) with
μ_ij = √((μ_i − μ_j)ᵀ (S + Σ_Z)⁻¹ (μ_i − μ_j)). The mechanism is μ-GDP with μ = max_Ψ μ_ij and
(ε, δ)-distribution private exactly when δ ≥ Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2); no attacker
between two equally likely θ does better than Φ(μ/2).

Every Gaussian mechanism here is therefore "choose Σ_Z so that μ ≤ μ*":

* rule ``classic`` (the paper's): μ* = ε/c with c = √(2 ln(1.25/δ)) — this is what
  σ = cΔ/ε and the bound (ε/c)² of Thm 4.4/4.5/A.1 amount to; each pair's conditions use each
  member's own covariance (worst case);
* rule ``exact`` (default): μ* is the largest μ with δ(ε; μ) ≤ δ (or a μ given directly, or
  2Φ⁻¹(a) for a target maximum attack accuracy a); each pair uses one covariance, the average of
  its two members' (the paper's modelling assumption, as its code does), and then the exact
  privacy profile of the two fitted Gaussians *as they are* (unequal covariances, noise included)
  is computed; if it is worse than the target, μ* is lowered until it is not.

Every calibration reports its guarantee in three forms: μ, the (ε, δ) curve, and the maximum
attack accuracy.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from distprivacy.accounting import (
    check_delta,
    check_epsilon,
    check_number,
    check_rule,
    classic_c,
    classic_warning,
)
from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.mechanisms.base import Calibration, Mechanism
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.profiles import (
    gaussian_profile,
    gdp_accuracy,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    mu_for_accuracy,
)

Convention = str  # "own" (each member's covariance) or "average" (one per pair)

#: How the unequal fitted covariances of a pair are treated (see :class:`GaussianMechanism`).
COVARIANCE_MODES = ("fitted", "pooled")


def pair_covariances(model: FModel, convention: Convention) -> list[tuple[np.ndarray, list]]:
    """For every unordered protected pair: (μ_i − μ_j, the covariances its conditions use)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for i, j in model.pair_indices_:
        key = (min(i, j), max(i, j))
        if key in seen:
            continue
        seen.add(key)
        Si, Sj = model.covariances_[i], model.covariances_[j]
        covs = [Si, Sj] if convention == "own" else [(Si + Sj) / 2]
        out.append((model.means_[i] - model.means_[j], covs))
    return out


def max_mahalanobis(
    pairs: list[tuple[np.ndarray, list]], noise_covariance: np.ndarray | None
) -> float:
    """max over pairs and their covariances of √(dᵀ (S + Σ_Z)⁻¹ d); ∞ if d is not in the range
    of a singular S + Σ_Z."""
    worst = 0.0
    for d, covs in pairs:
        for S in covs:
            C = S if noise_covariance is None else S + noise_covariance
            w, V = np.linalg.eigh((C + C.T) / 2)
            y = V.T @ d
            tol = 1e-12 * max(float(w[-1]), 1e-300)
            if np.any((w <= tol) & (np.abs(y) > 1e-9 * max(float(np.abs(d).max()), 1e-300))):
                return math.inf
            keep = w > tol
            worst = max(worst, float(np.sum(y[keep] ** 2 / w[keep])))
    return math.sqrt(worst)


class GaussianMechanism(Mechanism):
    """Base of the Gaussian mechanisms: calibrate Σ_Z to a μ-GDP target μ*.

    Parameters
    ----------
    epsilon, delta : float
        Target (ε, δ). With ``mu`` or ``max_accuracy`` given, ε may be None and δ only chooses
        the point of the (ε, δ) curve that is reported.
    calibration : {"exact", "classic"}
        ``exact`` (default) or the paper's ``classic`` rule (module docstring).
    mu : float, optional
        Target μ directly (exact rule only).
    max_accuracy : float, optional
        Target: no attacker above this accuracy between two equally likely θ (exact rule only).
    covariances : {"fitted", "pooled"}
        ``fitted`` (default): under the exact rule the target must also hold for the fitted
        Gaussians with their *unequal* covariances (noise included); if it does not, the cheaper
        of two fixes is applied — the mechanism's own noise at a lowered μ*, or an isotropic
        top-up. ``pooled``: the paper's modelling assumption (one covariance per pair, the
        average of the two fits); the unequal-covariance profile is still computed and reported
        (with a warning when it falls short), but not enforced. The classic rule never enforces.
    check_profile : bool
        False skips computing the unequal-covariance profile (only with ``pooled`` or the
        classic rule; faster, for experiments that do not report it).
    """

    #: Whether the mechanism's conditions need every Σ_θ invertible (NoNoise, DauM-G).
    requires_invertible: ClassVar[bool] = False
    #: Whether the unequal-covariance profile of the model is checked (not for group DP, whose
    #: guarantee does not depend on the model).
    checks_model_profile: ClassVar[bool] = True

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float = 1e-3,
        calibration: str = "exact",
        *,
        mu: float | None = None,
        max_accuracy: float | None = None,
        covariances: str = "fitted",
        check_profile: bool = True,
    ) -> None:
        self.calibration = check_rule(calibration)
        if not check_profile and calibration == "exact" and covariances == "fitted":
            raise DistPrivacyError(
                "covariances='fitted' needs the unequal-covariance profile; use "
                "check_profile=True, or covariances='pooled'"
            )
        self.check_profile = bool(check_profile)
        if covariances not in COVARIANCE_MODES:
            raise DistPrivacyError(
                f"unknown covariances mode {covariances!r}; use one of "
                + ", ".join(COVARIANCE_MODES)
            )
        self.covariances = covariances
        if mu is not None and max_accuracy is not None:
            raise DistPrivacyError("give a target μ or a target maximum accuracy, not both")
        self._mu = None
        if mu is not None or max_accuracy is not None:
            if self.calibration != "exact":
                raise DistPrivacyError(
                    "targets given as μ or as a maximum attack accuracy need --calibration exact"
                )
            if mu is not None:
                # Above μ = 1e6 nothing is hidden (accuracy Φ(μ/2) = 1) and ε(δ) overflows.
                self._mu = check_number(mu, "target μ", low=0, low_open=True)
                if self._mu > 1e6:
                    raise DistPrivacyError(
                        f"target μ must be at most 1e6, got {mu!r}: beyond that nothing is "
                        "hidden (attack accuracy Φ(μ/2) = 1) and ε(δ) overflows"
                    )
            else:
                self._mu = mu_for_accuracy(check_number(max_accuracy, "max_accuracy"))
                if self._mu <= 0:
                    raise DistPrivacyError(
                        "a maximum attack accuracy of 0.5 allows no information at all; no "
                        "finite noise achieves it — choose an accuracy above 0.5"
                    )
        self.delta = check_delta(delta)
        if epsilon is None:
            if self._mu is None:
                raise DistPrivacyError("give epsilon, a target μ, or a target maximum accuracy")
            self.epsilon = gdp_epsilon(self.delta, self._mu)
            self._epsilon_given = False
        else:
            self.epsilon = check_epsilon(epsilon)
            self._epsilon_given = True
            if self._mu is not None:
                raise DistPrivacyError(
                    "give either (epsilon, delta) or a target μ / maximum accuracy, not both"
                )

    @property
    def convention(self) -> Convention:
        return "own" if self.calibration == "classic" else "average"

    def target_mu(self) -> float:
        """μ*: ε/c (classic), the exact μ for (ε, δ), or the μ given."""
        if self._mu is not None:
            return self._mu
        if self.calibration == "classic":
            return self.epsilon / classic_c(self.delta)
        return gdp_mu(self.epsilon, self.delta)

    # Subclasses --------------------------------------------------------------------------------

    @abstractmethod
    def _noise(
        self, model: FModel, mu: float, convention: Convention
    ) -> tuple[NoiseDistribution, dict[str, Any]]:
        """The noise meeting μ ≤ ``mu``, and keyword arguments for the Calibration."""

    def _guarantee_mu(
        self, model: FModel, noise: NoiseDistribution, mu_star: float, convention: Convention
    ) -> float:
        """The μ the mechanism guarantees (by default, from the Gaussian model)."""
        return max_mahalanobis(pair_covariances(model, convention), noise.covariance)

    # Accounting --------------------------------------------------------------------------------

    def _model_profile(
        self, model: FModel, noise: NoiseDistribution, full: bool = True
    ) -> dict[str, Any] | None:
        """Exact profile of the fitted Gaussians with unequal covariances (worst ordered pair):
        δ at ε (with its numerical error bound), and the maximum attack accuracy (1 + TV)/2.

        The integral is evaluated to absolute accuracy 1e-10, or 1e-7 when that is out of
        reach; the reported δ is the computed value plus its error bound (an upper bound). If
        neither accuracy is reached, the entry ``failed`` says why and only the shared-covariance
        figure stands (the calibration then carries a warning saying so). ``full=False`` skips
        the accuracy (used inside the searches, when only δ at ε decides)."""
        Z = noise.covariance
        worst: dict[str, Any] = {
            "delta_at_epsilon": 0.0,
            "max_attack_accuracy": 0.5,
            "error_bound": 0.0,
        }
        for i, j in model.pair_indices_:
            P = (model.means_[i], model.covariances_[i] + Z)
            Q = (model.means_[j], model.covariances_[j] + Z)
            first = 1e-10 if full else min(1e-8, 1e-4 * self.delta)
            for atol in (first, 1e-7):
                try:
                    dlt, err = gaussian_profile(*P, *Q, self.epsilon, atol=atol)
                    tv, tv_err = (
                        gaussian_profile(*P, *Q, 0.0, atol=atol)
                        if full or not self._epsilon_given
                        else (0.0, 0.0)
                    )
                    break
                except DistPrivacyError as exc:
                    reason = str(exc)
            else:
                return {"failed": reason}
            worst["delta_at_epsilon"] = max(worst["delta_at_epsilon"], min(1.0, dlt + err))
            worst["error_bound"] = max(worst["error_bound"], err, tv_err)
            worst["max_attack_accuracy"] = max(
                worst["max_attack_accuracy"], min(1.0, (1 + tv + tv_err) / 2)
            )
        return worst

    def _violates(self, profile: dict[str, Any] | None, mu_star: float) -> bool:
        if profile is None or "failed" in profile:
            return False
        # Relative slack 1e-9: noise that meets μ* exactly (DauM, EigM, OptM do by design)
        # must not count as a violation through rounding or the integral's error bound.
        if self._epsilon_given:
            return profile["delta_at_epsilon"] > self.delta * (1 + 1e-9)
        return profile["max_attack_accuracy"] > gdp_accuracy(mu_star) * (1 + 1e-9)

    def _tighten_mu(self, model: FModel, mu_star: float, conv: Convention):
        """Strategy 1: the mechanism's own noise at a lowered μ* (bisection; first bracketed in
        [0.8 μ*, μ*], where the answer usually lies)."""
        lo, hi = 0.0, mu_star
        best = None
        try:
            n_try, kw_try = self._noise(model, 0.8 * mu_star, conv)
            p_try = self._model_profile(model, n_try, full=False)
            if not self._violates(p_try, mu_star):
                lo, best = 0.8 * mu_star, (n_try, kw_try, p_try, 0.8 * mu_star)
            else:
                hi = 0.8 * mu_star
        except NotApplicableError:
            hi = 0.8 * mu_star
        for _ in range(40):
            mid = (lo + hi) / 2
            try:
                n_mid, kw_mid = self._noise(model, mid, conv)
            except NotApplicableError:
                hi = mid
                continue
            p_mid = self._model_profile(model, n_mid, full=False)
            if self._violates(p_mid, mu_star):
                hi = mid
            else:
                lo, best = mid, (n_mid, kw_mid, p_mid, mid)
            if best is not None and hi - lo <= 2e-3 * lo:
                break
        return best

    def _tighten_top_up(self, model: FModel, noise: NoiseDistribution, mu_star: float):
        """Strategy 2: the mechanism's noise at μ* plus the least isotropic τ·I (bisection;
        δ(ε) is non-increasing in τ, adding noise being post-processing)."""
        Z = noise.covariance
        eye = np.eye(model.dim)

        def with_tau(tau: float):
            n = NoiseDistribution.gaussian_from_covariance(Z + tau * eye)
            return n, self._model_profile(model, n, full=False)

        scale = float(np.mean([np.trace(c) for c in model.covariances_])) / model.dim
        hi = 1e-3 * max(scale, 1e-300)
        for _ in range(80):
            n_hi, p_hi = with_tau(hi)
            if not self._violates(p_hi, mu_star):
                break
            hi *= 4
        else:  # pragma: no cover - the covariance ratio tends to 1 as τ grows
            return None
        lo = 0.0
        for _ in range(40):
            if hi - lo <= 2e-3 * hi:
                break
            mid = (lo + hi) / 2
            n_mid, p_mid = with_tau(mid)
            if self._violates(p_mid, mu_star):
                lo = mid
            else:
                hi, n_hi, p_hi = mid, n_mid, p_mid
        return n_hi, p_hi, hi

    def _calibrate(self, model: FModel) -> Calibration:
        if self.requires_invertible:
            model.require_invertible()
        mu_star = self.target_mu()
        conv = self.convention
        noise, kw = self._noise(model, mu_star, conv)
        profile = (
            self._model_profile(model, noise)
            if self.checks_model_profile and self.check_profile
            else None
        )
        mu_used = mu_star
        warnings_: list[str] = [w for w in kw.pop("warnings", ()) if w]
        enforce = self.calibration == "exact" and self.covariances == "fitted"
        if enforce and self._violates(profile, mu_star):
            lowered = self._tighten_mu(model, mu_star, conv)
            topped = self._tighten_top_up(model, noise, mu_star)
            options = []
            if lowered is not None:
                options.append((lowered[0].expected_l2_error, "lower", lowered))
            if topped is not None:
                options.append((topped[0].expected_l2_error, "top-up", topped))
            if not options:
                raise NotApplicableError(
                    f"{self.name} is not applicable: no noise of its form meets the target once "
                    "the fitted covariances' difference is accounted for"
                )
            _, how, best = min(options, key=lambda o: o[0])
            if how == "lower":
                noise, kw, _, mu_used = best
                warnings_ += [w for w in kw.pop("warnings", ()) if w]
                warnings_.append(
                    "the fitted covariances of a pair differ; meeting the target under them "
                    f"needed μ* lowered from {mu_star:.4g} to {mu_used:.4g} (more noise)"
                )
            else:
                noise, _, tau = best
                kw.setdefault("details", {})["unequal_covariance_top_up"] = tau
                warnings_.append(
                    "the fitted covariances of a pair differ; meeting the target under them "
                    f"needed isotropic variance {tau:.4g} added to the noise (cheaper than "
                    "lowering μ*)"
                )
            profile = self._model_profile(model, noise)  # with the accuracy
        if profile is not None and "failed" in profile:
            warnings_.append(
                "the exact unequal-covariance profile could not be computed ("
                + profile["failed"]
                + "); only the shared-covariance guarantee is reported"
            )
            profile = None
        mu = self._guarantee_mu(model, noise, mu_used, conv)
        acct = self._accounting(mu, mu_star, mu_used, profile)
        if self.calibration == "classic" and (caveat := classic_warning(self.epsilon)):
            warnings_.append(caveat)
        achieved = acct["delta_achieved"]
        if self._epsilon_given and achieved > self.delta * (1 + 1e-9):
            why = (
                "the classic rule"
                if acct["shared_covariance"]["delta_at_epsilon"] > self.delta * (1 + 1e-9)
                else "the equal-covariance assumption (the fitted covariances differ)"
            )
            warnings_.append(
                f"exact accounting: at ε = {self.epsilon:g} this noise achieves only "
                f"δ = {achieved:.3g} > the nominal {self.delta:g}; the shortfall comes from {why}"
            )
        if warnings_:
            import warnings as _w

            for w in warnings_:
                if "classic rule" in w:
                    _w.warn(w, stacklevel=4)
        return self._make(
            model,
            noise,
            rule=self.calibration,
            accounting=acct,
            warnings=tuple(dict.fromkeys(warnings_)),
            **kw,
        )

    def _accounting(
        self, mu: float, mu_star: float, mu_used: float, profile: dict[str, float] | None
    ) -> dict[str, Any]:
        eps = self.epsilon
        shared = {
            "mu": mu,
            "delta_at_epsilon": float(gdp_delta(eps, mu)) if math.isfinite(mu) else 1.0,
            "epsilon_at_delta": gdp_epsilon(self.delta, mu) if math.isfinite(mu) else math.inf,
            "max_attack_accuracy": gdp_accuracy(mu) if math.isfinite(mu) else 1.0,
        }
        achieved = shared["delta_at_epsilon"]
        acc = shared["max_attack_accuracy"]
        if profile is not None:
            achieved = max(achieved, profile["delta_at_epsilon"])
            acc = max(acc, profile["max_attack_accuracy"])
        return {
            "rule": self.calibration,
            "target_mu": mu_star,
            "mu_used": mu_used,
            "epsilon": eps,
            "delta": self.delta,
            "shared_covariance": shared,
            "unequal_covariance": profile,
            "delta_achieved": achieved,
            "max_attack_accuracy": acc,
        }
