"""Wasserstein mechanisms (Chen & Ohrimenko 2023, §3): Laplace noise scaled to how far f_θi must
move to become f_θj, from samples of F under each θ.

The sup over the protected pairs Ψ is computed by :func:`distprivacy.distances.closeness_radii`:
each θ's samples are prepared once and each unordered pair solved once, so the cost is linear in
|Ψ| (``--pairs-within`` gives a linear number of pairs). Set a mechanism's ``progress`` attribute
to a ``(done, total)`` callable to follow the pairs.
"""

from __future__ import annotations

import numpy as np

from distprivacy.distances import ProgressCallback, closeness_radii
from distprivacy.exceptions import LimitWarning, Notice
from distprivacy.mechanisms.base import (
    BASIS_SAMPLES,
    Calibration,
    Mechanism,
    delta_e,
    register_mechanism,
)
from distprivacy.models import FModel
from distprivacy.noise import NoiseDistribution

_EMPIRICAL = (
    "f_θ is represented by the empirical distribution of its samples; a distance between "
    "empirical distributions estimates, and is not a bound on, the one between the true f_θ"
)


def _unordered(model: FModel) -> list[tuple[int, int]]:
    return sorted({(min(i, j), max(i, j)) for i, j in model.pair_indices_})


def _per_pair(model: FModel, delta: float, progress: ProgressCallback | None) -> dict:
    """Exact radius (W∞ for δ = 0) of every unordered protected pair, keyed by the pair."""
    pairs = _unordered(model)
    radii = closeness_radii(model.samples_, pairs, delta, progress=progress)  # type: ignore[arg-type]
    return dict(zip(pairs, radii, strict=True))


@register_mechanism
class WassersteinMechanism(Mechanism):
    """Lap(0, Δ_W/ε) on every coordinate, Δ_W = sup_Ψ W∞(f_θi, f_θj) (L1 ground metric).

    Chen & Ohrimenko (2023), Theorem 3.1 (adapted from Song et al. 2017): (ε, 0)-distribution
    privacy w.r.t. Ψ. W∞ is computed exactly between the samples' empirical distributions
    (sorting in 1-D, bottleneck matching in m-D; :func:`distprivacy.distances.wasserstein_inf`).
    """

    name = "Wasserstein"
    basis = BASIS_SAMPLES
    theorem = "Chen & Ohrimenko 2023, Theorem 3.1"
    uses_delta = False
    needs_samples = True
    progress: ProgressCallback | None = None  # (done, total) over the pairs, e.g. a bar

    def _calibrate(self, model: FModel) -> Calibration:
        per_pair = _per_pair(model, 0.0, self.progress)
        W = max(per_pair.values())
        return self._make(
            model,
            NoiseDistribution.isotropic("laplace", model.dim, W / self.epsilon),
            sensitivity=W,
            sensitivity_label="Δ_W",
            assumptions=(_EMPIRICAL,),
            details={"per_pair_w_inf": [[*k, v] for k, v in per_pair.items()]},
        )


@register_mechanism
class ApproximateWassersteinMechanism(Mechanism):
    """Lap(0, W/ε) on every coordinate, W the smallest value making every pair (W, δ)-close.

    Chen & Ohrimenko (2023), Definition 3.2 and Theorem 3.2: (ε, δ)-distribution privacy w.r.t. Ψ
    when f_θi and f_θj are (W, δ)-close for every pair. W is computed exactly between the samples'
    empirical distributions (bottleneck matching that may leave a δ share unmatched;
    :func:`distprivacy.distances.closeness_radius`).
    """

    name = "ApproxWasserstein"
    basis = BASIS_SAMPLES
    theorem = "Chen & Ohrimenko 2023, Theorem 3.2"
    needs_samples = True
    progress: ProgressCallback | None = None  # (done, total) over the pairs, e.g. a bar

    def _calibrate(self, model: FModel) -> Calibration:
        S = model.samples_
        per_pair = _per_pair(model, self.delta, self.progress)
        W = max(per_pair.values())
        warns: list[Notice] = []
        n_min = min(len(s) for s in S)  # type: ignore[union-attr]
        if n_min * self.delta < 1:
            warns.append(
                Notice(
                    f"δ·R = {self.delta * n_min:.3g} < 1 with R = {n_min} samples: no sample may "
                    "be left unmatched, so W equals the empirical W∞; draw more samples",
                    LimitWarning,
                )
            )
        return self._make(
            model,
            NoiseDistribution.isotropic("laplace", model.dim, W / self.epsilon),
            sensitivity=W,
            sensitivity_label="W ((W, δ)-closeness)",
            assumptions=(_EMPIRICAL,),
            warnings=tuple(warns),
            details={"per_pair_w": [[*k, v] for k, v in per_pair.items()]},
        )


@register_mechanism
class BoundedWassersteinMechanism(Mechanism):
    """Lap(0, (Δ_E,1 + 2c)/ε) on every coordinate, c the (1 − δ/2)-quantile of ‖F − E F‖₁.

    Chen & Ohrimenko (2023), Theorem 3.3 with Theorem 3.2: if ‖F − E F‖₁ ≤ c with probability at
    least 1 − δ/2 under every θ, all pairs are (Δ_E,1 + 2c, δ)-close, so the Laplace noise above
    gives (ε, δ)-distribution privacy. c is the largest over θ of the empirical quantile of the
    samples (upper order statistic).
    """

    name = "ApproxWasserstein-Bounded"
    basis = BASIS_SAMPLES
    theorem = "Chen & Ohrimenko 2023, Theorem 3.3 with Theorem 3.2"
    needs_samples = True

    def _calibrate(self, model: FModel) -> Calibration:
        S = model.samples_
        level = 1 - self.delta / 2
        cs = [
            float(np.quantile(np.abs(s - mu).sum(axis=1), level, method="higher"))
            for s, mu in zip(S, model.means_, strict=True)  # type: ignore[arg-type]
        ]
        c = max(cs)
        d1 = delta_e(model, 1)
        W = d1 + 2 * c
        warns: list[Notice] = []
        n_min = min(len(s) for s in S)  # type: ignore[union-attr]
        if n_min * self.delta / 2 < 1:
            warns.append(
                Notice(
                    f"the (1 − δ/2)-quantile lies beyond the resolution of R = {n_min} samples "
                    f"(R·δ/2 = {n_min * self.delta / 2:.3g} < 1): c is the sample maximum and "
                    "may be too small; draw at least 2/δ samples",
                    LimitWarning,
                )
            )
        return self._make(
            model,
            NoiseDistribution.isotropic("laplace", model.dim, W / self.epsilon),
            sensitivity=W,
            sensitivity_label="Δ_E,1 + 2c",
            assumptions=(
                "‖F − E F‖₁ ≤ c with probability ≥ 1 − δ/2 under every θ (c estimated from the "
                "samples)",
            ),
            warnings=tuple(warns),
            details={"c": c, "c_per_theta": cs, "delta_e1": d1},
        )


__all__ = [
    "ApproximateWassersteinMechanism",
    "BoundedWassersteinMechanism",
    "WassersteinMechanism",
]
