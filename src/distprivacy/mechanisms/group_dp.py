"""Group differential privacy baselines (Chen & Ohrimenko 2023, §5.1; Dwork & Roth 2014).

Changing a group of k records of a size-n dataset moves F by at most k·Δ, where Δ is the
per-record (replace-one) sensitivity of each statistic from the data's ranges (means:
range/n; sums: range; counts: 1; proportions: 1/n). The Laplace and Gaussian mechanisms with
that sensitivity are (ε, 0)- and (ε, δ)-DP for groups of k records; with k = n they protect any
global property, which is why they need so much noise. With k = 1 they are plain DP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distprivacy.checks import check_int
from distprivacy.mechanisms._calibrator import GaussianProperties, Proposal
from distprivacy.mechanisms.base import (
    BASIS_UNCONDITIONAL,
    Calibration,
    Mechanism,
    not_applicable,
    register_mechanism,
)
from distprivacy.mechanisms.gaussian import GaussianMechanism
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution
from distprivacy.request import GaussianOptions
from distprivacy.targets import Target


def _check_group_size(group_size: int | None) -> int | None:
    return None if group_size is None else check_int(group_size, "group_size", low=1)


def _sensitivities(mech: Mechanism, model: FModel) -> tuple[np.ndarray, int]:
    """Per-record sensitivities and the group size k (default: the model's n)."""
    k = mech.group_size if mech.group_size is not None else model.n_  # type: ignore[attr-defined]
    if k is None:
        raise not_applicable(mech.name, "the group size is unknown; give group_size or n")
    integral = isinstance(k, int | np.integer | float | np.floating) and float(k).is_integer()
    if isinstance(k, bool) or not integral or k < 1:
        # n = 0 would give zero noise: a group of no records protects nothing.
        raise not_applicable(
            mech.name, f"the group size (the model's n) must be a positive integer, got {k!r}"
        )
    sens = model.record_sensitivities_
    if sens is None or not np.isfinite(sens).all():
        missing = (
            list(model.statistic_names_)
            if sens is None
            else [
                n for n, s in zip(model.statistic_names_, sens, strict=True) if not np.isfinite(s)
            ]
        )
        raise not_applicable(mech.name, f"no per-record sensitivity for {', '.join(missing)}")
    return sens, int(k)


@register_mechanism
class GroupDPLaplace(Mechanism):
    """GroupDP-L: Lap(0, k·Δ₁/ε) on every coordinate, Δ₁ = Σ per-record sensitivities.

    Laplace mechanism (Dwork et al. 2006; Dwork & Roth 2014, Thm 3.6) with group sensitivity
    k·Δ₁: (ε, 0)-DP for groups of k records (the paper's baseline, §5.1, k = n).

    Parameters
    ----------
    epsilon : float
        The target ε.
    delta : float, default 0
        Not used (the guarantee is (ε, 0)); accepted so every mechanism takes (ε, δ).
    calibration : {"exact", "classic"}, default "exact"
        The calibration rule.
    group_size : int, optional
        k, the number of records a group may change; defaults to the model's n.
    """

    basis = BASIS_UNCONDITIONAL
    name = "GroupDP-L"
    theorem = "Dwork & Roth 2014, Theorem 3.6 with group sensitivity k·Δ₁ (paper §5.1)"
    uses_delta = False

    def __init__(
        self,
        target: Target | None = None,
        options: GaussianOptions | None = None,
        *,
        group_size: int | None = None,
        **old: Any,
    ) -> None:
        super().__init__(target, options, **old)
        self.group_size = _check_group_size(group_size)

    def _calibrate(self, model: FModel) -> Calibration:
        sens, k = _sensitivities(self, model)
        d1 = float(k * sens.sum())
        return self._make(
            model,
            NoiseDistribution.isotropic("laplace", model.dim, d1 / self.epsilon),
            sensitivity=d1,
            sensitivity_label=f"k·Δ₁ (k={k})",
            assumptions=(
                "per-record sensitivities from the data's ranges (replace-one neighbours)",
                f"protects any change of up to k={k} records",
            ),
            details={"group_size": k, "record_sensitivities": sens},
        )


@register_mechanism
class GroupDPGaussian(GaussianMechanism):
    """GroupDP-G: N(0, σ² I), σ = k·Δ₂ / μ* (classic: c·k·Δ₂/ε), Δ₂ = ‖per-record
    sensitivities‖₂.

    Gaussian mechanism (Dwork & Roth 2014, Thm A.1; c = √(2 ln(1.25/δ)), ε < 1; exact rule:
    Balle & Wang 2018) with group sensitivity k·Δ₂: (ε, δ)-DP for groups of k records (the paper's
    baseline, §5.1, k = n). Its guarantee does not depend on the model of f_θ.

    Parameters
    ----------
    epsilon : float, optional
        The target ε (with ``delta``); or give one target in ``targets``.
    delta : float, default 1e-3
        The target δ.
    calibration : {"exact", "classic"}, default "exact"
        The calibration rule: exact μ-GDP accounting, or c = √(2 ln(1.25/δ)).
    group_size : int, optional
        k, the number of records a group may change; defaults to the model's n.
    **targets : float
        Another form of the target instead of (ε, δ): ``mu=`` or ``max_accuracy=``.
    """

    basis = BASIS_UNCONDITIONAL
    name = "GroupDP-G"
    theorem = "Dwork & Roth 2014, Theorem A.1 with group sensitivity k·Δ₂ (paper §5.1)"
    #: Dwork & Roth Thm A.1 with group sensitivity: μ = k·Δ₂/σ for every dataset, whatever the
    #: model of f_θ (no fitted profile is checked).
    properties = GaussianProperties(guarantee="every-input")

    def __init__(
        self,
        target: Target | None = None,
        options: GaussianOptions | None = None,
        *,
        group_size: int | None = None,
        **old: Any,
    ) -> None:
        super().__init__(target, options, **old)
        self.group_size = _check_group_size(group_size)

    def propose(self, model: FModel, mu: float, convention: str) -> Proposal:
        sens, k = _sensitivities(self, model)
        d2 = float(k * np.linalg.norm(sens))
        sigma = d2 / mu
        return Proposal.of(
            NoiseDistribution.isotropic("gaussian", model.dim, sigma),
            sensitivity=d2,
            sensitivity_label=f"k·Δ₂ (k={k})",
            assumptions=(
                "per-record sensitivities from the data's ranges (replace-one neighbours)",
                f"protects any change of up to k={k} records",
            ),
            details={"group_size": k, "record_sensitivities": sens, "sigma": sigma},
        )
