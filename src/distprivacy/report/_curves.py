"""The figures' numbers: each applicable mechanism recalibrated at a small log-spaced grid of ε
(the privacy–utility curve and the attack bound against ε), and a ledger's cumulative budget
after each release."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError

__all__ = ["Sweep", "epsilon_grid", "sweep"]

#: Points of the ε grid and how far it reaches each side of the chosen ε (a factor).
GRID_POINTS = 8
GRID_REACH = 10.0


def epsilon_grid(
    epsilon: float, points: int = GRID_POINTS, reach: float = GRID_REACH
) -> np.ndarray:
    """``points`` values of ε, log-spaced from ε/reach to ε·reach."""
    if not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon > 0):
        raise DistPrivacyError(f"the report's ε grid needs a finite ε > 0, got {epsilon!r}")
    return np.geomspace(epsilon / reach, epsilon * reach, int(points))


@dataclass
class Sweep:
    """Per mechanism, ε on the grid (plus the chosen calibration's own ε, in order) with the
    expected L2 error E‖Z‖₂ and the bound on any attacker's accuracy there (NaN where the
    mechanism could not be calibrated at that ε). ``assumed`` names the mechanisms whose
    curve rests, at some point, on a calibration that is not verified (a modelling assumption
    the library could not check, e.g. the Laplace mechanisms' translation assumption): the
    figures label them, so that no unverified bound is drawn as a guarantee."""

    epsilon: dict[str, np.ndarray]
    error: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]
    delta: float
    assumed: dict[str, bool] = field(default_factory=dict)

    @property
    def mechanisms(self) -> list[str]:
        return list(self.epsilon)


def sweep(
    model: Any,
    calibrations: Sequence[Any],
    *,
    delta: float,
    rule: str = "exact",
    covariances: str = "fitted",
    utility: str = "scaled",
    grid: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Sweep:
    """Recalibrate each mechanism of ``calibrations`` on ``model`` at every ε of ``grid``
    (default :func:`epsilon_grid` around the first calibration's ε) with the same δ, rule,
    covariances and utility; each calibration's own point is added to its curve.

    A mechanism that fails at some ε (e.g. its noise overflows) has NaN there.
    """
    from distprivacy.checks import check_delta
    from distprivacy.mechanisms import CALIBRATION_FAILURES, make_mechanism
    from distprivacy.request import GaussianOptions
    from distprivacy.targets import EpsDelta

    delta = check_delta(delta, allow_zero=True)  # a bad δ fails here, not as a blank curve
    cals = list(calibrations)
    if not cals:
        return Sweep({}, {}, {}, float(delta))
    if grid is None:
        grid = epsilon_grid(float(cals[0].epsilon))
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
        raise DistPrivacyError("the report's ε grid must be a 1-d array of finite ε > 0")
    total = len(cals) * grid.size
    out_e: dict[str, np.ndarray] = {}
    out_err: dict[str, np.ndarray] = {}
    out_acc: dict[str, np.ndarray] = {}
    assumed: dict[str, bool] = {}
    done = 0
    for c in cals:
        errs, accs = np.full(grid.size, np.nan), np.full(grid.size, np.nan)
        unverified = not c.verified
        for i, eps in enumerate(grid):
            try:
                mech = make_mechanism(
                    c.mechanism,
                    EpsDelta(float(eps), delta),
                    GaussianOptions(rule, covariances, utility),
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = mech.calibrate(model)
                errs[i], accs[i] = r.expected_l2_error, r.max_attack_accuracy
                unverified = unverified or not r.verified
            except CALIBRATION_FAILURES:
                pass
            done += 1
            if progress is not None:
                progress(done, total)
        e = np.append(grid, float(c.epsilon))
        order = np.argsort(e, kind="stable")
        out_e[c.mechanism] = e[order]
        out_err[c.mechanism] = np.append(errs, c.expected_l2_error)[order]
        out_acc[c.mechanism] = np.append(accs, c.max_attack_accuracy)[order]
        assumed[c.mechanism] = unverified
    return Sweep(out_e, out_err, out_acc, float(delta), assumed)
