"""Mahalanobis distances of the protected pairs' mean differences (Cor. A.1 of Chen &
Ohrimenko 2023): what every Gaussian calibration, a plan's self-check and the joint accounting
compute μ from. Importable from :mod:`distprivacy.mechanisms.gaussian` too."""

from __future__ import annotations

import numpy as np

from distprivacy.models import FModel

__all__ = ["Convention", "mahalanobis_all", "max_mahalanobis", "pair_covariances"]

Convention = str  # "own" (each member's covariance) or "average" (one per pair)


def pair_covariances(model: FModel, convention: Convention) -> list[tuple[np.ndarray, list]]:
    """For every unordered protected pair: (μ_i − μ_j, the covariances its conditions use)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for i, j in model.pair_indices_:
        key = (min(i, j), max(i, j))
        if key in seen:
            continue
        seen.add(key)
        Si, Sj = model.covariances_[i], model.covariances_[j]
        covs = [Si, Sj] if convention == "own" else [(Si + Sj) / 2]
        out.append((model.means_[i] - model.means_[j], covs))
    return out


def _stack(pairs: list[tuple[np.ndarray, list]]) -> tuple[np.ndarray, np.ndarray]:
    """Every (mean difference, covariance) condition of ``pairs`` as arrays (K, m), (K, m, m)."""
    D = np.array([d for d, covs in pairs for _ in covs], dtype=float)
    S = np.array([c for _, covs in pairs for c in covs], dtype=float)
    return D, S


def mahalanobis_all(
    pairs: list[tuple[np.ndarray, list]], noise_covariance: np.ndarray | None
) -> np.ndarray:
    """√(dᵀ (S + Σ_Z)⁻¹ d) for every condition of ``pairs`` (vectorised); ∞ where d is not in
    the range of a singular S + Σ_Z, and ∞ (fail closed) where anything is not finite.

    Each condition's coordinates are divided by their own scale first (the value is invariant
    under that, and the rank decision then does not depend on the statistics' units)."""
    D, S = _stack(pairs)
    C = S if noise_covariance is None else S + np.asarray(noise_covariance, dtype=float)[None]
    finite = np.isfinite(D).all(axis=1) & np.isfinite(C).all(axis=(1, 2))
    D = np.where(finite[:, None], D, 0.0)
    C = np.where(finite[:, None, None], C, 0.0)
    sc = np.sqrt(np.maximum(np.diagonal(C, axis1=1, axis2=2), 0.0))
    sc = np.where(sc > 0, sc, np.abs(D))
    sc = np.where(sc > 0, sc, 1.0)
    ds = D / sc
    Cn = C / (sc[:, :, None] * sc[:, None, :])
    w, V = np.linalg.eigh((Cn + np.swapaxes(Cn, 1, 2)) / 2)
    y = np.einsum("kij,ki->kj", V, ds)
    tol = 1e-12 * np.maximum(w[:, -1], 1e-300)[:, None]
    big = 1e-9 * np.maximum(np.abs(ds).max(axis=1), 1e-300)[:, None]
    uncovered = ((w <= tol) & (np.abs(y) > big)).any(axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.sum(np.where(w > tol, y**2 / np.where(w > tol, w, 1.0), 0.0), axis=1)
    q = np.where(uncovered | ~finite | ~np.isfinite(q), np.inf, q)
    return np.sqrt(q)


def max_mahalanobis(
    pairs: list[tuple[np.ndarray, list]], noise_covariance: np.ndarray | None
) -> float:
    """max over pairs and their covariances of √(dᵀ (S + Σ_Z)⁻¹ d) (:func:`mahalanobis_all`);
    ∞ if some d is not covered or anything is not finite."""
    return float(np.max(mahalanobis_all(pairs, noise_covariance), initial=0.0))
