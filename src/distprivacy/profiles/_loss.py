"""Unequal covariances: the privacy loss L = log(dP/dQ) as a quadratic form in standard
normals (:class:`PrivacyLoss`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg

from distprivacy.exceptions import DistPrivacyError
from distprivacy.profiles._checks import _as_array, _check_gaussians, _finite_float
from distprivacy.randomness import RandomState, check_random_state


@dataclass(frozen=True, eq=False)
class PrivacyLoss:
    """The privacy loss L = log(dP/dQ) under P as a quadratic form in standard normals:

        L = gamma + Σ_k (½ lambdas[k] w_k² + betas[k] w_k),   w ∼ N(0, I).

    Attributes
    ----------
    gamma : float
        γ = ½ dᵀ B⁻¹ d + ½ (log det B − log det A), d = m_P − m_Q.
    lambdas : ndarray, shape (m,)
        Eigenvalues of Rᵀ B⁻¹ R − I (A = R Rᵀ); all > −1. Zero when A = B.
    betas : ndarray, shape (m,)
        Uᵀ Rᵀ B⁻¹ d in the eigenbasis U.
    """

    gamma: float
    lambdas: np.ndarray
    betas: np.ndarray

    def __post_init__(self) -> None:
        g = _finite_float(self.gamma, "gamma")
        lam = np.array(_as_array(self.lambdas, "lambdas"), dtype=float, ndmin=1)
        beta = np.array(_as_array(self.betas, "betas"), dtype=float, ndmin=1)
        if lam.ndim != 1 or lam.shape != beta.shape:
            raise DistPrivacyError(
                f"lambdas and betas must be vectors of equal length, got shapes {lam.shape} "
                f"and {beta.shape}"
            )
        lam.setflags(write=False)
        beta.setflags(write=False)
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "lambdas", lam)
        object.__setattr__(self, "betas", beta)

    @classmethod
    def from_gaussians(
        cls, mean_p: ArrayLike, cov_p: ArrayLike, mean_q: ArrayLike, cov_q: ArrayLike
    ) -> PrivacyLoss:
        """The loss of P = N(mean_p, cov_p) against Q = N(mean_q, cov_q).

        M = Rᵀ B⁻¹ R − I is formed as Rᵀ B⁻¹ (A − B) R⁻ᵀ = Rᵀ (B⁻¹ − A⁻¹) R from the exact
        difference A − B, so nearly equal covariances give accurately small eigenvalues and
        equal covariances give exactly zero ones.

        Raises
        ------
        DistPrivacyError
            Non-finite entries, shape mismatch, or a covariance that is not symmetric
            positive definite.
        """
        mp, A, mq, B = _check_gaussians(mean_p, cov_p, mean_q, cov_q)
        d = mp - mq
        R = linalg.cholesky(A, lower=True)
        C = linalg.cholesky(B, lower=True)
        X = linalg.solve_triangular(C, R, lower=True)  # C⁻¹ R, so Rᵀ B⁻¹ R = Xᵀ X
        Y = linalg.solve_triangular(C, A - B, lower=True)  # C⁻¹ (A − B)
        Y = linalg.solve_triangular(R, Y.T, lower=True).T  # C⁻¹ (A − B) R⁻ᵀ
        M = X.T @ Y
        M = (M + M.T) / 2
        if np.any(M):
            lam, U = linalg.eigh(M)
        else:
            lam, U = np.zeros(mp.size), np.eye(mp.size)
        c = linalg.solve_triangular(C, d, lower=True)  # C⁻¹ d
        beta = U.T @ (X.T @ c)
        gamma = 0.5 * float(c @ c) + float(np.sum(np.log(np.diag(C))) - np.sum(np.log(np.diag(R))))
        return cls(gamma, np.asarray(lam, dtype=float), np.asarray(beta, dtype=float))

    @property
    def mean(self) -> float:
        """E_P[L] = KL(P‖Q) = γ + Σ λ_k / 2."""
        return self.gamma + float(np.sum(self.lambdas)) / 2

    @property
    def variance(self) -> float:
        """Var_P[L] = Σ (λ_k²/2 + β_k²)."""
        return float(np.sum(self.lambdas**2) / 2 + np.sum(self.betas**2))

    def log_abs_cf(self, u: ArrayLike) -> np.ndarray:
        """log |φ(u)| = Σ_k [−¼ log(1 + u²λ_k²) − u² β_k² / (2 (1 + u²λ_k²))]; non-increasing
        in |u|."""
        uu = np.asarray(u, dtype=float)[..., None]
        v2 = (uu * self.lambdas) ** 2
        return np.sum(-0.25 * np.log1p(v2) - uu**2 * self.betas**2 / (2 * (1 + v2)), axis=-1)

    def characteristic_function(self, u: ArrayLike) -> np.ndarray:
        """φ_L(u) = E_P[e^{iuL}] = exp(iuγ + Σ_k [−½ log(1 − iuλ_k) − u²β_k²/(2(1 − iuλ_k))])
        (principal branch, continuous since Re(1 − iuλ) = 1).

        Parameters
        ----------
        u : float or array_like
            Real arguments.

        Returns
        -------
        complex ndarray
            Same shape as ``u``.
        """
        uu = np.asarray(u, dtype=float)
        x = uu[..., None]
        z = 1 - 1j * x * self.lambdas
        log_phi = 1j * uu * self.gamma + np.sum(
            -0.5 * np.log(z) - x**2 * self.betas**2 / (2 * z), axis=-1
        )
        return np.exp(log_phi)

    def sample(self, size: int, random_state: RandomState = None) -> np.ndarray:
        """Independent draws of L under P (for Monte-Carlo checks).

        Parameters
        ----------
        size : int
            Number of draws.
        random_state : None, int or Generator
            Seed or generator (a simulation: None is fresh OS entropy, see
            :func:`distprivacy.randomness.check_random_state`).

        Returns
        -------
        ndarray, shape (size,)
        """
        gen = check_random_state(random_state, secure=False)
        n = int(size)
        out = np.empty(n)
        chunk = 1 << 16
        for start in range(0, n, chunk):
            k = min(chunk, n - start)
            w = gen.standard_normal((k, self.lambdas.size))
            out[start : start + k] = self.gamma + (0.5 * w * w) @ self.lambdas + w @ self.betas
        return out
