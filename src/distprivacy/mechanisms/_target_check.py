"""Is the released dataset one the model describes? (issue 21)

A calibration's guarantee is about datasets drawn as the model says: F(D) ~ N(m_θ, S_θ) under
each θ. It says nothing about a dataset that does not look like such a sample — and where the
model holds a statistic constant (S_θ singular along it, and no noise added there, because by
the model it reveals nothing), the release would print the target's exact value of it. So
before any noise is drawn, F(target) is checked:

1. **Support.** Along every direction u in which the output's covariance S_θ + Σ_Z is zero (the
   model holds u·F fixed and the mechanism adds no noise there), the target must have the
   model's value u·m_θ, up to float resolution — for every θ. Otherwise the release is refused,
   naming the statistic ("mean(age) of the target is 38.5; the model holds it at 40 under every
   θ").
2. **Plausibility.** The target's squared Mahalanobis distance to the nearest θ,
   q = min_θ (v − m_θ)ᵀ S_θ⁺ (v − m_θ) (on the range of S_θ, in unit-free coordinates), must not
   exceed the 1 − :data:`LEVEL` quantile of χ²_r (r the rank). For a dataset that *is* a sample
   of the model's population, q ≤ q_{θ*} for its own θ* and q_{θ*} ~ χ²_r if F were exactly
   Gaussian, so a genuine target would be refused with probability at most :data:`LEVEL` =
   10⁻¹² (for r = 2 the limit is q = 55.3, 7.4 standard deviations). Real statistics have
   heavier tails than their Gaussian model: on CPS 1988 (mean wage and mean education of 100
   men, n = 100, wages strongly skewed) 0.1 % of genuine targets exceed the 10⁻⁶ quantile, but
   none of 60,000 exceeds the 10⁻¹² one (largest q 49.8) — hence the small nominal level
   (``tests/mechanisms/test_target_check.py`` draws 6,000 and accepts every one). What it
   catches is gross: another table, another unit, an offset of several standard deviations.

``allow_exact`` never covers a refusal: it allows a release the *model* says is safe without
noise, not one the model does not describe.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from distprivacy.exceptions import DistPrivacyError

__all__ = ["LEVEL", "TargetOutsideModelError", "check_target"]

#: The probability with which a genuine sample of the model's population is refused.
LEVEL = 1e-12
#: Relative eigenvalue below which a direction of a covariance counts as zero.
_RANK_TOL = 1e-12
#: Relative tolerance of "the target has the model's constant value" (float resolution of
#: values computed by different summation orders).
_VALUE_TOL = 1e-9


class TargetOutsideModelError(DistPrivacyError):
    """The dataset to release is not one the fitted model describes (refit on its data)."""


def _scales(means: np.ndarray, covs: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Per statistic, its own scale: the sampling SD averaged over θ, or (for a statistic the
    model holds constant) its magnitude — so that no decision depends on the units."""
    sd = np.sqrt(np.maximum(np.diagonal(covs, axis1=1, axis2=2).mean(axis=0), 0.0))
    mag = np.maximum(np.abs(means).max(axis=0), np.abs(value))
    s = np.where(sd > 0, sd, mag)
    return np.where(s > 0, s, 1.0)


def check_target(
    means: np.ndarray,
    covariances: np.ndarray,
    noise_covariance: np.ndarray,
    value: np.ndarray,
    names: Sequence[str],
    *,
    source: str = "the model",
    level: float = LEVEL,
) -> None:
    """Refuse a target F(target) = ``value`` the model (per-θ ``means`` (T, m) and
    ``covariances`` (T, m, m)) does not describe (module docstring).

    Raises
    ------
    TargetOutsideModelError
        One line naming the statistic and the model's value.
    """
    M = np.asarray(means, dtype=float)
    S = np.asarray(covariances, dtype=float)
    Z = np.asarray(noise_covariance, dtype=float)
    v = np.asarray(value, dtype=float)
    if M.ndim != 2 or S.shape != (*M.shape, M.shape[1]) or v.shape != (M.shape[1],):
        return  # not a moment model this check understands (nothing to compare)
    if not (np.isfinite(M).all() and np.isfinite(S).all() and np.isfinite(Z).all()):
        return
    s = _scales(M, S, v)
    outer = np.outer(s, s)
    d = (v[None, :] - M) / s  # (T, m) unit-free deviations
    # 1. Support: directions with no sampling variance and no noise.
    C = (S + Z[None]) / outer
    w, U = np.linalg.eigh((C + np.swapaxes(C, 1, 2)) / 2)
    top = np.maximum(w[:, -1:], 1e-300)
    null = w <= _RANK_TOL * top  # (T, m)
    along = np.einsum("tij,ti->tj", U, d)  # deviations along each eigenvector
    size = np.maximum(np.abs(v / s), np.abs(M / s).max(axis=0)).max() + 1.0
    off = null & (np.abs(along) > _VALUE_TOL * size)
    if off.any():
        t, j = (int(x) for x in np.argwhere(off)[0])
        k = int(np.argmax(np.abs(U[t][:, j])))
        raise TargetOutsideModelError(
            f"{names[k]} of the target is {v[k]:.6g}; {source} holds it at {M[t, k]:.6g} "
            "(it does not vary in the population the model was fitted on, and no noise is "
            "added to it): the target is not a sample of that population — refit on data "
            "the target comes from"
        )
    # 2. Plausibility: Mahalanobis distance to the nearest θ on the range of S_θ.
    Sn = S / outer
    ws, Us = np.linalg.eigh((Sn + np.swapaxes(Sn, 1, 2)) / 2)
    pos = ws > _RANK_TOL * np.maximum(ws[:, -1:], 1e-300)
    proj = np.einsum("tij,ti->tj", Us, d)
    q = np.where(pos, proj**2 / np.where(pos, ws, 1.0), 0.0).sum(axis=1)
    rank = pos.sum(axis=1)
    limit = stats.chi2.isf(level, np.maximum(rank, 1))
    if (q <= limit).any() or not rank.any():
        return
    t = int(np.argmin(q / limit))
    z = np.abs(d[t]) / np.sqrt(np.maximum(np.diagonal(Sn[t]), 1e-300))
    k = int(np.argmax(z))
    sd = float(np.sqrt(max(S[t, k, k], 0.0)))
    raise TargetOutsideModelError(
        f"the target is implausibly far from every θ of {source}: {names[k]} of the target is "
        f"{v[k]:.6g} where the nearest θ has {M[t, k]:.6g} ± {sd:.3g} (squared Mahalanobis "
        f"distance {q[t]:.4g} > {limit[t]:.4g}, the 1 − {level:g} quantile of χ² with "
        f"{int(rank[t])} degrees of freedom): the model does not describe this target — "
        "refit on data it comes from"
    )
