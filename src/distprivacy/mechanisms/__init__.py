"""Distribution-privacy mechanisms of Chen & Ohrimenko (2023) and the group-DP baselines.

Use :func:`make_mechanism` with a Table-1 shorthand, or the classes directly; then
``calibration = mechanism.calibrate(model)`` and ``calibration.release(F_of_D)``.
"""

from __future__ import annotations

from typing import Any

from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.mechanisms.adversarial import DauM, EigenvectorGaussian, NoNoise, daum_variance
from distprivacy.mechanisms.base import Calibration, Mechanism, Release, delta_e
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

#: Every mechanism by its shorthand, in the order ``distprivacy calibrate`` lists them.
MECHANISMS: dict[str, type[Mechanism]] = {
    cls.name: cls
    for cls in (
        ExpectedValueLaplace,
        DirectionalLaplace,
        ExpectedValueGaussian,
        DirectionalGaussian,
        EigenvectorGaussian,
        DauM,
        OptimalGaussian,
        NoNoise,
        WassersteinMechanism,
        ApproximateWassersteinMechanism,
        BoundedWassersteinMechanism,
        GroupDPLaplace,
        GroupDPGaussian,
    )
}


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
) -> Mechanism:
    """A mechanism by shorthand (case-insensitive), e.g. ``make_mechanism("DauM-G", 1, 1e-3)``.

    Gaussian mechanisms also accept a target ``mu`` or ``max_accuracy`` instead of ε (exact rule;
    δ then picks the reported point of the (ε, δ) curve), ``covariances`` ("fitted" or
    "pooled") and ``utility`` ("scaled" or "l2"), see :class:`GaussianMechanism`.
    """
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
    return cls(epsilon, delta if cls.uses_delta else 0.0, calibration)


def calibrate_all(
    model: FModel,
    epsilon: float | None,
    delta: float,
    calibration: str = "exact",
    names: list[str] | None = None,
    **targets: Any,
) -> tuple[list[Calibration], dict[str, str]]:
    """Calibrate every mechanism (or ``names``); returns the calibrations and, for the others,
    why not. ``targets``: ``mu``, ``max_accuracy``, ``covariances`` as for
    :func:`make_mechanism`."""
    done: list[Calibration] = []
    skipped: dict[str, str] = {}
    for name in names or MECHANISMS:
        try:
            done.append(
                make_mechanism(name, epsilon, delta, calibration, **targets).calibrate(model)
            )
        except NotApplicableError as e:
            skipped[name] = str(e)
    return done, skipped


__all__ = [
    "MECHANISMS",
    "ApproximateWassersteinMechanism",
    "BoundedWassersteinMechanism",
    "Calibration",
    "DauM",
    "DirectionalGaussian",
    "DirectionalLaplace",
    "EigenvectorGaussian",
    "ExpectedValueGaussian",
    "ExpectedValueLaplace",
    "GaussianMechanism",
    "GroupDPGaussian",
    "GroupDPLaplace",
    "Mechanism",
    "NoNoise",
    "OptimalGaussian",
    "Release",
    "WassersteinMechanism",
    "calibrate_all",
    "daum_variance",
    "delta_e",
    "make_mechanism",
]
