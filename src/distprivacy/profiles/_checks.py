"""Validation of the inputs of :mod:`distprivacy.profiles`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike


def _finite_float(value: float, name: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise DistPrivacyError(f"{name} must be finite, got {value!r}")
    return x


def _check_epsilon(epsilon: float) -> float:
    e = _finite_float(epsilon, "epsilon")
    if e < 0:
        raise DistPrivacyError(f"epsilon must be ≥ 0, got {epsilon!r}")
    return e


def _check_mu(mu: float) -> float:
    x = _finite_float(mu, "mu")
    if x < 0:
        raise DistPrivacyError(f"mu must be ≥ 0, got {mu!r}")
    return x


def _check_atol(atol: float) -> float:
    a = _finite_float(atol, "atol")
    if not 0 < a < 1:
        raise DistPrivacyError(f"atol must lie in (0, 1), got {atol!r}")
    return a


def _as_array(value: ArrayLike, name: str) -> np.ndarray:
    import numpy as np

    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be numeric") from None
    if not np.isfinite(arr).all():
        raise DistPrivacyError(f"{name} contains NaN or infinite values")
    return arr


def _check_gaussians(
    mean_p: ArrayLike,
    cov_p: ArrayLike,
    mean_q: ArrayLike,
    cov_q: ArrayLike,
    *,
    definite: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Means as (m,) arrays and symmetric covariances as (m, m) arrays (scalars allowed for
    m = 1), positive definite unless ``definite`` is False."""
    import numpy as np

    mp = np.atleast_1d(_as_array(mean_p, "mean_p"))
    mq = np.atleast_1d(_as_array(mean_q, "mean_q"))
    if mp.ndim != 1 or mq.ndim != 1 or mp.size == 0:
        raise DistPrivacyError(
            f"means must be vectors of the same length m ≥ 1, got shapes {mp.shape}, {mq.shape}"
        )
    if mp.shape != mq.shape:
        raise DistPrivacyError(f"mean_p has shape {mp.shape} but mean_q has shape {mq.shape}")
    m = mp.size
    covs = []
    for name, value in (("cov_p", cov_p), ("cov_q", cov_q)):
        c = _as_array(value, name)
        if c.ndim == 0 and m == 1:
            c = c.reshape(1, 1)
        if c.shape != (m, m):
            raise DistPrivacyError(f"{name} has shape {c.shape}; expected ({m}, {m}) for m = {m}")
        if not np.allclose(c, c.T, rtol=1e-10, atol=1e-12 * float(np.max(np.abs(c), initial=0))):
            raise DistPrivacyError(
                f"{name} is not symmetric; pass a symmetric positive definite covariance"
            )
        c = (c + c.T) / 2
        if not definite:
            covs.append(c)
            continue
        from scipy import linalg

        try:
            linalg.cholesky(c, lower=True)
        except linalg.LinAlgError:
            raise DistPrivacyError(
                f"{name} is not positive definite (Cholesky failed); pass a symmetric positive "
                "definite covariance"
            ) from None
        covs.append(c)
    return mp, covs[0], mq, covs[1]
