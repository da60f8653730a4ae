"""Many pairs at once: shared per-θ factorisations, vectorised losses and two-sided bounds;
and a rigorous upper bound on δ(ε) cheap enough to screen many pairs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from distprivacy.profiles._gdp import _delta_zs
from distprivacy.profiles._loss import PrivacyLoss


def _log_bound_constant(s: np.ndarray) -> np.ndarray:
    """log c(s), c(s) = max_x (1 − e^{−x})₊ e^{−sx} = s^s / (1 + s)^{1+s}."""
    return s * np.log(s) - (1 + s) * np.log1p(s)


def profile_upper_bound(loss: PrivacyLoss, epsilon: float) -> float:
    """A rigorous upper bound on δ(ε), cheap enough to screen many pairs.

    (1 − e^{ε−L})₊ ≤ c(s) e^{s(L−ε)} for every s > 0 with c(s) = s^s/(1 + s)^{1+s} (the
    maximum over x of (1 − e^{−x}) e^{−sx}, attained at e^{−x} = s/(1 + s)), so
    δ(ε) ≤ c(s) e^{−sε} E[e^{sL}] with the moment generating function of the quadratic form
    E[e^{sL}] = e^{sγ} Π_k (1 − sλ_k)^{−½} exp(s²β_k²/(2(1 − sλ_k))) (s λ_k < 1). Any s gives
    a valid bound; the minimum over a logarithmic grid of s is returned (never below the true
    δ; capped at 1).

    Parameters
    ----------
    loss : PrivacyLoss
        The privacy loss of the pair.
    epsilon : float
        The ε at which δ is bounded.

    Returns
    -------
    float
        An upper bound on δ(ε) (1 when no s gives a better one).
    """
    lam, b2 = loss.lambdas, loss.betas**2
    lam_max = float(np.max(lam)) if lam.size else 0.0
    s_max = 1e6 if lam_max <= 0 else min(1e6, (1 - 1e-9) / lam_max)
    s = np.geomspace(min(1e-6, s_max / 2), s_max, 240)[:, None]
    z = 1 - s * lam
    log_mgf = s[:, 0] * loss.gamma + np.sum(-0.5 * np.log(z) + s * s * b2 / (2 * z), axis=1)
    log_b = _log_bound_constant(s[:, 0]) - s[:, 0] * epsilon + log_mgf
    best = float(np.min(log_b))
    return 1.0 if not best < 0 else math.exp(best)


@dataclass(frozen=True)
class LossBatch:
    """The privacy losses of P ordered pairs (θ_i, θ_j), as arrays (see :class:`PrivacyLoss`).

    Attributes
    ----------
    gamma : ndarray (P,)
    lambdas, betas : ndarray (P, m)
    """

    gamma: np.ndarray
    lambdas: np.ndarray
    betas: np.ndarray

    def __len__(self) -> int:
        return int(self.gamma.size)

    def loss(self, k: int) -> PrivacyLoss:
        return PrivacyLoss(float(self.gamma[k]), self.lambdas[k], self.betas[k])

    def bounds(self, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """Rigorous lower and upper bounds on each pair's δ(ε), vectorised.

        * Upper: :func:`profile_upper_bound`'s c(s)·E[e^{s(L−ε)}], minimised over a grid of s.
        * Both ways: δ is 1-Lipschitz in L ((1 − e^{ε−L})₊ has slope ≤ 1), so replacing L by a
          normal L' changes δ by at most E|L − L'|: L' = γ + Σβ_k w_k (error ≤ ½Σ|λ_k|) or
          L' = γ + ½Σλ_k + Σβ_k w_k (error ≤ (Σλ_k²/2)^½, Cauchy–Schwarz), each with the
          closed form of :func:`_normal_loss_delta`. Nearly equal covariances (small λ) make
          the interval narrow, so most pairs are settled without an integral.
        """
        eps = float(epsilon)
        lam, beta, gam = self.lambdas, self.betas, self.gamma
        sd = np.sqrt(np.sum(beta**2, axis=1))
        half_sum = np.sum(lam, axis=1) / 2
        errs = (np.sum(np.abs(lam), axis=1) / 2, np.sqrt(np.sum(lam**2, axis=1) / 2))
        lower = np.zeros(len(self))
        upper = np.ones(len(self))
        for mean, err in ((gam, errs[0]), (gam + half_sum, errs[1])):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                z = np.where(sd > 0, (mean - eps) / np.where(sd > 0, sd, 1.0), 0.0)
                closed = np.where(
                    sd > 0,
                    _delta_zs(z, np.where(sd > 0, sd, 1.0)),
                    np.clip(-np.expm1(np.minimum(eps - mean, 700.0)), 0.0, 1.0),
                )
            upper = np.minimum(upper, closed + err)
            lower = np.maximum(lower, closed - err)
        # Chernoff-type upper bound, on a per-pair grid of s in (0, 1/max λ).
        lam_max = np.max(lam, axis=1, initial=0.0)
        cap = (1 - 1e-9) / np.maximum(lam_max, 1e-300)
        s_max = np.where(lam_max > 0, np.minimum(1e6, cap), 1e6)
        grid = np.geomspace(1e-9, 1.0, 96)
        s = s_max[:, None] * grid[None, :]  # (P, K)
        zz = 1 - s[:, :, None] * lam[:, None, :]
        log_mgf = s * gam[:, None] + np.sum(
            -0.5 * np.log(zz) + (s[:, :, None] ** 2) * (beta[:, None, :] ** 2) / (2 * zz), axis=2
        )
        log_b = np.min(_log_bound_constant(s) - s * eps + log_mgf, axis=1)
        with np.errstate(over="ignore"):
            upper = np.minimum(upper, np.where(log_b < 0, np.exp(np.minimum(log_b, 0.0)), 1.0))
        return np.clip(lower, 0.0, 1.0), np.clip(np.maximum(upper, lower), 0.0, 1.0)


def gaussian_pair_losses(
    means: np.ndarray,
    covariances: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    *,
    rank_rtol: float = 1e-9,
) -> tuple[LossBatch, np.ndarray]:
    """The losses of P = N(means[i], covariances[i]) against Q = N(means[j], covariances[j])
    for every (i, j) = (first[k], second[k]), sharing one scaled Cholesky factor per θ.

    Coordinates are scaled by the largest standard deviation over θ (δ is invariant, and the
    rank test is unit-free). M = Rᵀ B⁻¹ (A − B) R⁻ᵀ is formed from the exact difference A − B,
    as in :meth:`PrivacyLoss.from_gaussians`.

    Parameters
    ----------
    means : ndarray, shape (t, m)
        The mean of F under each θ.
    covariances : ndarray, shape (t, m, m)
        The covariance of the release under each θ (the model's plus the noise's).
    first, second : ndarray of int, shape (k,)
        The ordered pairs (first[k], second[k]) of indices into ``means``.
    rank_rtol : float, default 1e-9
        The relative tolerance below which a covariance counts as singular (those pairs are
        left to :func:`common_support`).

    Returns
    -------
    (LossBatch, ndarray of bool)
        The losses (rows of pairs not computed are zeros) and which pairs were computed: a pair
        whose θ has a covariance with a scaled eigenvalue ≤ ``rank_rtol`` (singular, or nearly)
        is left to the exact per-pair path (:func:`common_support`).
    """
    means = np.asarray(means, dtype=float)
    covs = np.asarray(covariances, dtype=float)
    m = means.shape[1]
    sc = np.sqrt(np.max(np.diagonal(covs, axis1=1, axis2=2), axis=0))
    sc = np.where(sc > 0, sc, 1.0)
    C = covs / np.outer(sc, sc)
    C = (C + np.swapaxes(C, 1, 2)) / 2
    mu = means / sc
    good = np.linalg.eigvalsh(C)[:, 0] > rank_rtol
    first = np.asarray(first, dtype=int)
    second = np.asarray(second, dtype=int)
    ok = good[first] & good[second]
    P = first.size
    gamma, lam, beta = np.zeros(P), np.zeros((P, m)), np.zeros((P, m))
    if ok.any():
        L = np.zeros_like(C)
        L[good] = np.linalg.cholesky(C[good])
        logdet = 2 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2).clip(1e-300)), axis=1)
        i, j = first[ok], second[ok]
        Li, Lj = L[i], L[j]
        X = np.linalg.solve(Lj, Li)  # C⁻¹ R with B = C Cᵀ, A = R Rᵀ
        Y = np.linalg.solve(Lj, C[i] - C[j])
        Y = np.swapaxes(np.linalg.solve(Li, np.swapaxes(Y, 1, 2)), 1, 2)  # C⁻¹ (A − B) R⁻ᵀ
        M = np.swapaxes(X, 1, 2) @ Y
        M = (M + np.swapaxes(M, 1, 2)) / 2
        w, U = np.linalg.eigh(M)
        c = np.linalg.solve(Lj, (mu[i] - mu[j])[:, :, None])[:, :, 0]
        b = np.einsum("pki,pjk,pj->pi", U, X, c)  # Uᵀ Xᵀ c
        gamma[ok] = 0.5 * np.sum(c * c, axis=1) + 0.5 * (logdet[j] - logdet[i])
        lam[ok], beta[ok] = w, b
    return LossBatch(gamma, lam, beta), ok
