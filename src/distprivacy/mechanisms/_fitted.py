"""The exact privacy profile of the fitted Gaussians, unequal covariances included.

A Gaussian mechanism under the exact rule calibrates to one covariance per pair (the paper's
modelling assumption) and then checks the guarantee against the fitted Gaussians *as they are*:
N(μ_θ, Σ_θ + Σ_Z) for each member of each protected pair, with their unequal covariances
(:func:`fitted_profile`; :mod:`distprivacy.mechanisms.gaussian` applies the fixes when they fall
short). Singular covariances, different supports and integrals that miss their accuracy all
fail closed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.models import FModel
from distprivacy.profiles import (
    PrivacyLoss,
    common_support,
    gaussian_pair_losses,
    loss_profile,
    profile_upper_bound,
)


@dataclass(frozen=True)
class FittedProfile:
    """The exact privacy profile of the fitted Gaussians with a noise, worst ordered pair
    (what :func:`fitted_profile` returns).

    Attributes
    ----------
    delta_at_epsilon : float
        An upper bound on the worst pair's δ at ε (exact within ``error_bound``).
    max_attack_accuracy : float or None
        (1 + TV)/2, when computed.
    error_bound : float
    violated : bool
        Search mode: a pair was shown to miss the target.
    worst_pair : tuple of int or None
    support_mismatch : str or None
        Why a pair's output laws have different supports (δ = 1), if one has.
    pairs_exact : int
        How many pairs needed the integral.
    """

    delta_at_epsilon: float
    max_attack_accuracy: float | None
    error_bound: float
    violated: bool
    worst_pair: tuple[int, int] | None
    support_mismatch: str | None
    pairs_exact: int

    def to_dict(self) -> dict[str, Any]:
        """The accounting's ``unequal_covariance`` entry (the keys of ``PROFILE_KEYS``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _pair_problem(model: FModel, Z: np.ndarray, i: int, j: int):
    return (model.means_[i], model.covariances_[i] + Z, model.means_[j], model.covariances_[j] + Z)


class _PairProfile:
    """One ordered pair's output laws under a noise: support check, privacy loss, bounds."""

    def __init__(self, model: FModel, Z: np.ndarray, i: int, j: int) -> None:
        self.pair = (i, j)
        self.loss: PrivacyLoss | None = None
        self.reason = ""
        try:
            sup = common_support(*_pair_problem(model, Z, i, j))
        except DistPrivacyError as exc:
            self.reason = str(exc)
            self.value_if_disjoint = 1.0
            return
        if not sup.same:
            self.reason = sup.reason
            self.value_if_disjoint = 1.0
        elif sup.dim == 0:
            self.value_if_disjoint = 0.0
        else:
            try:
                self.loss = PrivacyLoss.from_gaussians(sup.mean_p, sup.cov_p, sup.mean_q, sup.cov_q)
            except DistPrivacyError as exc:
                self.reason = str(exc)
                self.value_if_disjoint = 1.0

    def bound(self, epsilon: float) -> float:
        """A rigorous upper bound on δ(ε) (1 when nothing better is known)."""
        if self.loss is None:
            return self.value_if_disjoint
        return profile_upper_bound(self.loss, epsilon)

    def exact(self, epsilon: float, atol: float) -> tuple[float, float]:
        """(δ(ε) + its error bound, error bound); falls back to the rigorous bound when the
        integral does not reach the accuracy (fail closed: never below the true δ)."""
        if self.loss is None:
            return self.value_if_disjoint, 0.0
        for tol in (atol, 1e-7):
            try:
                value, err = loss_profile(self.loss, epsilon, atol=tol)
                return min(1.0, value + err), err
            except DistPrivacyError:
                continue
        return self.bound(epsilon), 0.0


def fitted_profile(
    model: FModel,
    noise_covariance: np.ndarray,
    epsilon: float,
    *,
    delta_target: float | None = None,
    tv_target: float | None = None,
    accuracy: bool = True,
    atol: float = 1e-10,
) -> FittedProfile:
    """The exact privacy profile of the fitted Gaussians N(μ_θ, Σ_θ + Σ_Z), worst ordered pair.

    Singular covariances are handled exactly (:func:`distprivacy.profiles.common_support`):
    different supports give δ = 1. The losses of all pairs are formed at once with one scaled
    factorisation per θ (:func:`distprivacy.profiles.gaussian_pair_losses`), each pair is
    bracketed by rigorous lower and upper bounds (:meth:`LossBatch.bounds`), and the exact
    Gil-Pelaez profile is computed only where the bounds do not settle the question (branch and
    bound: the reported maximum is exact, or a rigorous upper bound within the integral's
    accuracy). Anything that cannot be computed counts at its rigorous upper bound (at worst 1),
    never as "not violating".

    Parameters
    ----------
    delta_target, tv_target : float, optional
        Search mode: stop at the first pair shown to exceed the target (``violated`` is set).
    accuracy : bool
        Also compute the maximum attack accuracy (1 + TV)/2 (TV = δ(0)).

    Returns
    -------
    FittedProfile
        ``delta_at_epsilon`` (an upper bound on the worst pair's δ at ε), ``max_attack_accuracy``
        (when computed), ``error_bound``, ``violated`` (search mode), ``worst_pair``,
        ``support_mismatch`` (the reason, if a pair's supports differ), ``pairs_exact`` (how
        many needed the integral).
    """
    out = _profile(model, noise_covariance, epsilon, delta_target, tv_target, accuracy, atol)
    wp = out["worst_pair"]
    return FittedProfile(
        delta_at_epsilon=out["delta_at_epsilon"],
        max_attack_accuracy=out["max_attack_accuracy"],
        error_bound=out["error_bound"],
        violated=bool(out["violated"]),
        worst_pair=None if wp is None else (int(wp[0]), int(wp[1])),
        support_mismatch=out["support_mismatch"],
        pairs_exact=int(out["pairs_exact"]),
    )


def _profile(
    model: FModel,
    noise_covariance: np.ndarray,
    epsilon: float,
    delta_target: float | None,
    tv_target: float | None,
    accuracy: bool,
    atol: float,
) -> dict[str, Any]:
    """The branch and bound of :func:`fitted_profile`, as the dict it fills in."""
    Z = np.asarray(noise_covariance, dtype=float)
    first = np.array([i for i, _ in model.pair_indices_])
    second = np.array([j for _, j in model.pair_indices_])
    C = model.covariances_ + Z[None]
    if np.isfinite(C).all() and np.isfinite(model.means_).all():
        batch, ok = gaussian_pair_losses(model.means_, C, first, second)
    else:
        batch, ok = None, np.zeros(first.size, dtype=bool)
    slow = {k: _PairProfile(model, Z, int(first[k]), int(second[k])) for k in np.flatnonzero(~ok)}
    out: dict[str, Any] = {
        "delta_at_epsilon": 0.0,
        "max_attack_accuracy": 0.5 if accuracy or tv_target is not None else None,
        "error_bound": 0.0,
        "violated": False,
        "worst_pair": None,
        "support_mismatch": next((p.reason for p in slow.values() if p.reason), None),
        "pairs_exact": 0,
    }

    def bounds(eps: float) -> tuple[np.ndarray, np.ndarray]:
        lo = np.zeros(first.size)
        up = np.ones(first.size)
        if batch is not None and ok.any():
            lo_b, up_b = batch.bounds(eps)
            lo[ok], up[ok] = lo_b[ok], up_b[ok]
        for k, p in slow.items():
            up[k] = p.bound(eps)
            lo[k] = p.value_if_disjoint if p.loss is None else 0.0
        return lo, up

    def exact(k: int, eps: float, tol: float) -> tuple[float, float]:
        out["pairs_exact"] += 1
        if k in slow:
            return slow[k].exact(eps, tol)
        loss = batch.loss(k)  # type: ignore[union-attr]
        for t in (tol, 1e-7):
            try:
                value, err = loss_profile(loss, eps, atol=t)
                return min(1.0, value + err), err
            except DistPrivacyError:
                continue
        return float(bounds(eps)[1][k]), 0.0

    def worst(eps: float, target: float | None, tol: float):
        lo, up = bounds(eps)
        pair = lambda k: (int(first[k]), int(second[k]))  # noqa: E731
        if target is not None and (lo > target).any():
            k = int(np.argmax(lo))
            return float(lo[k]), 0.0, pair(k), True
        order = np.argsort(-up, kind="stable")
        best, best_err, who = 0.0, 0.0, None
        for k in order:
            b = float(up[k])
            if (target is not None and b <= target) or (target is None and b <= best):
                break
            value, err = exact(int(k), eps, tol)
            if value > best:
                best, best_err, who = value, err, pair(k)
            if target is not None and value > target:
                return best, best_err, who, True
        if target is not None and len(order):
            # Every remaining pair is settled by its upper bound (≤ target): report the
            # largest of those bounds and of the exact values (valid, and ≤ target).
            rest = [float(up[k]) for k in order if float(up[k]) <= target]
            if rest and rest[0] > best:
                best, who = rest[0], pair(int(order[len(order) - len(rest)]))
        return best, best_err, who, False

    if delta_target is not None or tv_target is None:
        tol = atol if delta_target is None else min(atol * 100, 1e-4 * delta_target)
        dlt, err, who, bad = worst(epsilon, delta_target, max(tol, 1e-12))
        out.update(delta_at_epsilon=dlt, error_bound=err, worst_pair=who, violated=bad)
        if bad:
            return out
    if accuracy or tv_target is not None:
        tv, err, who, bad = worst(0.0, tv_target, atol)
        out["max_attack_accuracy"] = min(1.0, (1 + tv) / 2)
        out["error_bound"] = max(out["error_bound"], err)
        if out["worst_pair"] is None:
            out["worst_pair"] = who
        out["violated"] = bad
    return out
