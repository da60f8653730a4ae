"""Distribution-privacy mechanisms of Chen & Ohrimenko (2023) and the group-DP baselines.

Use :func:`make_mechanism` with a Table-1 shorthand, or the classes directly; then
``calibration = mechanism.calibrate(model)`` and ``calibration.release(F_of_D)``.
"""

from __future__ import annotations

from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.mechanisms.adversarial import DauM, EigenvectorGaussian, NoNoise, daum_variance
from distprivacy.mechanisms.base import Calibration, Mechanism, Release, delta_e
from distprivacy.mechanisms.expected_value import (
    DirectionalGaussian,
    DirectionalLaplace,
    ExpectedValueGaussian,
    ExpectedValueLaplace,
)
from distprivacy.mechanisms.group_dp import GroupDPGaussian, GroupDPLaplace
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
        NoNoise,
        WassersteinMechanism,
        ApproximateWassersteinMechanism,
        BoundedWassersteinMechanism,
        GroupDPLaplace,
        GroupDPGaussian,
    )
}


def make_mechanism(
    name: str, epsilon: float, delta: float = 0.0, calibration: str = "classic"
) -> Mechanism:
    """A mechanism by shorthand (case-insensitive), e.g. ``make_mechanism("DauM-G", 1, 1e-3)``."""
    lookup = {k.lower(): v for k, v in MECHANISMS.items()}
    cls = lookup.get(name.strip().lower())
    if cls is None:
        raise DistPrivacyError(f"unknown mechanism {name!r}; choose one of {', '.join(MECHANISMS)}")
    return cls(epsilon, delta if cls.uses_delta else 0.0, calibration)


def calibrate_all(
    model: FModel, epsilon: float, delta: float, calibration: str = "classic"
) -> tuple[list[Calibration], dict[str, str]]:
    """Calibrate every mechanism; returns the calibrations and, for the others, why not."""
    done: list[Calibration] = []
    skipped: dict[str, str] = {}
    for name in MECHANISMS:
        try:
            done.append(make_mechanism(name, epsilon, delta, calibration).calibrate(model))
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
    "GroupDPGaussian",
    "GroupDPLaplace",
    "Mechanism",
    "NoNoise",
    "Release",
    "WassersteinMechanism",
    "calibrate_all",
    "daum_variance",
    "delta_e",
    "make_mechanism",
]
