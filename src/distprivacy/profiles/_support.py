"""Singular covariances: the affine subspace supporting two Gaussians, and the profile of
Gaussians with positive *semi*definite covariances."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from distprivacy.exceptions import DistPrivacyError
from distprivacy.profiles._checks import _check_epsilon, _check_gaussians
from distprivacy.profiles._integral import gaussian_profile

#: Eigenvalues below this times the dimension (after each coordinate is scaled so that its
#: larger variance is 1) are exact zeros: linear dependencies between statistics, or no noise in
#: that direction. It sits ~100× above double-precision rounding of such a matrix (eigh's
#: absolute error is ≈ m·2.2e-16 there), so a small but real variance — e.g. a statistic whose
#: scale is 1e-16 of the noise on another — is kept, never dropped.
RANK_RTOL = 1e-14
#: Mean differences along a common zero-variance direction below this (in the same scaled
#: coordinates, relative to max(1, ‖d‖)) are rounding; above it, the supports differ.
SUPPORT_RTOL = 1e-12


@dataclass(frozen=True)
class CommonSupport:
    """Two Gaussians reduced to the affine subspace that supports both (see
    :func:`common_support`).

    Attributes
    ----------
    same : bool
        Whether P and Q have the same affine support (else δ_{P‖Q}(ε) = 1 for every ε: one of
        them puts all its mass on a set the other gives probability 0).
    reason : str
        Why the supports differ ("" when they agree).
    mean_p, cov_p, mean_q, cov_q : ndarray
        The two laws in coordinates of the common support (dimension r ≥ 0; positive definite).
    """

    same: bool
    reason: str
    mean_p: np.ndarray
    cov_p: np.ndarray
    mean_q: np.ndarray
    cov_q: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.mean_p.size)


def common_support(
    mean_p: ArrayLike, cov_p: ArrayLike, mean_q: ArrayLike, cov_q: ArrayLike
) -> CommonSupport:
    """Reduce P = N(mean_p, cov_p) and Q = N(mean_q, cov_q), covariances positive
    *semi*definite, to the affine subspace supporting both.

    δ_{P‖Q} is invariant under an invertible affine map applied to both laws, so each coordinate
    is first divided by the larger of its two standard deviations (this makes every decision
    below independent of the statistics' units). Then, with C = A + B:

    * a direction v with vᵀCv ≤ m·``RANK_RTOL`` carries no variance under P nor Q: if the means
      differ along it (beyond ``SUPPORT_RTOL``) the supports are disjoint, else it is dropped;
    * on the rest, if A or B alone is singular, P's and Q's supports differ (one is a proper
      subspace of, or crosses, the other);
    * otherwise both are positive definite there and the profile is that of the reduced pair.

    Parameters
    ----------
    mean_p, cov_p : array_like
        P's mean (m,) and covariance (m, m), symmetric positive semidefinite.
    mean_q, cov_q : array_like
        Q's mean and covariance, of the same dimension.

    Returns
    -------
    CommonSupport
        Whether the supports agree (else why not) and the two laws in its coordinates.

    Raises
    ------
    DistPrivacyError
        Non-finite entries, shapes, asymmetric or indefinite covariances.
    """
    mp, A, mq, B = _check_gaussians(mean_p, cov_p, mean_q, cov_q, definite=False)
    m = mp.size
    for name, c in (("cov_p", A), ("cov_q", B)):
        scale = np.sqrt(np.maximum(np.diag(c), 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(scale > 0, 1 / np.where(scale > 0, scale, 1), 0.0)
        w = np.linalg.eigvalsh(c * np.outer(inv, inv))
        if np.any(np.diag(c) < 0) or (w.size and w[0] < -1e-8):
            raise DistPrivacyError(
                f"{name} is not positive semidefinite (smallest scaled eigenvalue "
                f"{w[0] if w.size else float(np.min(np.diag(c))):.3g})"
            )
    d = mp - mq
    sd = np.sqrt(np.maximum(np.maximum(np.diag(A), np.diag(B)), 0.0))
    empty = np.zeros(0)

    def differ(reason: str) -> CommonSupport:
        return CommonSupport(False, reason, empty, np.zeros((0, 0)), empty, np.zeros((0, 0)))

    const = sd == 0
    if np.any(const):
        size = np.maximum(np.maximum(np.abs(mp), np.abs(mq)), 1e-300)
        if np.any(np.abs(d[const]) > 1e-12 * size[const]):
            k = int(np.flatnonzero(const & (np.abs(d) > 1e-12 * size))[0])
            return differ(f"output {k} is constant under both laws but with different values")
    keep = ~const
    if not np.any(keep):
        z = np.zeros(0)
        return CommonSupport(True, "", z, np.zeros((0, 0)), z.copy(), np.zeros((0, 0)))
    s = sd[keep]
    As = A[np.ix_(keep, keep)] / np.outer(s, s)
    Bs = B[np.ix_(keep, keep)] / np.outer(s, s)
    ds = d[keep] / s
    w, V = np.linalg.eigh((As + Bs) / 2)
    tol = RANK_RTOL * max(1, As.shape[0])
    null = w <= tol
    if np.any(null):
        along = V[:, null].T @ ds
        if np.any(np.abs(along) > SUPPORT_RTOL * max(1.0, float(np.linalg.norm(ds)))):
            return differ(
                "the means differ along a direction in which neither law varies (the noise "
                "does not cover it)"
            )
    # Whitened by the average covariance on the rest (an invertible map of the support, so δ is
    # unchanged): the reduced pair is well conditioned even when its scales differ by 1e30.
    W = V[:, ~null] / np.sqrt(w[~null])
    Ar, Br = W.T @ As @ W, W.T @ Bs @ W
    Ar, Br = (Ar + Ar.T) / 2, (Br + Br.T) / 2
    for name, c in (("P", Ar), ("Q", Br)):
        if c.size and np.linalg.eigvalsh(c)[0] <= tol:
            return differ(
                f"{name} has no variance in a direction in which the other law varies (their "
                "supports differ; the noise does not cover it)"
            )
    del m
    return CommonSupport(True, "", W.T @ (mp[keep] / s), Ar, W.T @ (mq[keep] / s), Br)


def gaussian_profile_psd(
    mean_p: ArrayLike,
    cov_p: ArrayLike,
    mean_q: ArrayLike,
    cov_q: ArrayLike,
    epsilon: float,
    *,
    atol: float = 1e-10,
) -> tuple[float, float]:
    """δ_{P‖Q}(ε) for Gaussians with positive *semi*definite covariances.

    Different affine supports give δ = 1 at every ε (:func:`common_support`); on a common
    support the exact profile of the reduced pair (:func:`gaussian_profile`); on a support of
    dimension 0 (two equal point masses) δ = 0.

    Parameters
    ----------
    mean_p, cov_p : array_like
        P's mean (m,) and covariance (m, m), symmetric positive semidefinite.
    mean_q, cov_q : array_like
        Q's mean and covariance, of the same dimension.
    epsilon : float
        The ε at which δ is computed.
    atol : float, default 1e-10
        The absolute accuracy asked of δ.

    Returns
    -------
    (float, float)
        δ(ε) and its absolute error bound.
    """
    eps = _check_epsilon(epsilon)
    sup = common_support(mean_p, cov_p, mean_q, cov_q)
    if not sup.same:
        return 1.0, 0.0
    if sup.dim == 0:
        return 0.0, 0.0
    return gaussian_profile(sup.mean_p, sup.cov_p, sup.mean_q, sup.cov_q, eps, atol=atol)
