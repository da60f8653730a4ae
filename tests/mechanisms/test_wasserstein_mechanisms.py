"""The Wasserstein mechanisms (Chen & Ohrimenko 2023, Theorems 3.1 and 3.2) over many pairs: one
exact radius per unordered protected pair, the sup as the sensitivity, and a progress hook."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from distprivacy.distances import closeness_radius, wasserstein_inf
from distprivacy.mechanisms import make_mechanism
from distprivacy.models import GaussianModel
from distprivacy.targets import EpsDelta


def _model(n_theta: int = 5, n: int = 120, m: int = 3) -> GaussianModel:
    """Integer-valued samples (heavy ties) per θ; Ψ = neighbouring θ in both orders plus one
    pair given twice, so the mechanisms must dedupe to unordered pairs."""
    rng = np.random.default_rng(8)
    samples = [rng.binomial(20, 0.2 + 0.1 * t, size=(n, m)).astype(float) for t in range(n_theta)]
    labels = [f"t{t}" for t in range(n_theta)]
    pairs = [(labels[t], labels[t + 1]) for t in range(n_theta - 1)]
    pairs += [(b, a) for a, b in pairs] + [(labels[0], labels[2])]
    means = [s.mean(axis=0) for s in samples]
    covs = [np.cov(s, rowvar=False) for s in samples]
    return GaussianModel(labels, means, covs, pairs, samples=samples)


@pytest.mark.parametrize(("name", "delta"), [("Wasserstein", 0.0), ("ApproxWasserstein", 0.05)])
def test_sup_over_unordered_pairs_with_progress(name: str, delta: float) -> None:
    model = _model()
    mech = make_mechanism(name, EpsDelta(1.0, delta))
    calls: list[tuple[int, int]] = []
    mech.progress = lambda done, total: calls.append((done, total))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = mech.calibrate(model)
    key = "per_pair_w_inf" if delta == 0.0 else "per_pair_w"
    per_pair = {(i, j): w for i, j, w in cal.details[key]}
    assert sorted(per_pair) == [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4)]
    S = model.samples_
    for (i, j), w in per_pair.items():
        want = wasserstein_inf(S[i], S[j]) if delta == 0.0 else closeness_radius(S[i], S[j], delta)
        assert w == want
    assert cal.sensitivity == max(per_pair.values())
    assert calls == [(k, 5) for k in range(1, 6)]
