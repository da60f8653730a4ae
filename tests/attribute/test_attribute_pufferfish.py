"""Tests of the Pufferfish Wasserstein Mechanism (Song, Wang & Chaudhuri 2017, Alg. 1)."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from distprivacy.attribute.framework import ValueSet
from distprivacy.attribute.pufferfish import (
    DiscreteConditional,
    GaussianConditional,
    PufferfishWassersteinMechanism,
    enumerate_conditionals,
    sample_conditionals,
    winf,
)
from distprivacy.exceptions import DistPrivacyError, NotApplicableError

ALPHA = 1e-6

# Records: (female, tall) ∈ {(1,0), (1,1), (0,0), (0,1)} with weights 3:1:1:3 (women are
# mostly short, others mostly tall). F = share of tall records, g = share of women.
WEIGHTS = np.array([3, 1, 1, 3])
N = 4


def share_tall(C: np.ndarray) -> np.ndarray:
    return (C[:, 1] + C[:, 3]) / N


def share_women(C: np.ndarray) -> np.ndarray:
    return (C[:, 0] + C[:, 1]) / N


def brute_force_conditional(share: float) -> dict[float, float]:
    """P(F = f | g = share) by enumerating all 4^N ordered datasets."""
    p = WEIGHTS / WEIGHTS.sum()
    out: dict[float, float] = {}
    for recs in itertools.product(range(4), repeat=N):
        counts = np.bincount(recs, minlength=4)[None]
        if share_women(counts)[0] != share:
            continue
        f = float(share_tall(counts)[0])
        out[f] = out.get(f, 0.0) + float(np.prod(p[list(recs)]))
    total = sum(out.values())
    return {k: v / total for k, v in sorted(out.items())}


def brute_force_winf(a: dict[float, float], b: dict[float, float]) -> float:
    """W∞ on the line: sup over u of |F_a⁻¹(u) − F_b⁻¹(u)| on a fine grid of u."""
    u = (np.arange(100_000) + 0.5) / 100_000

    def quantile(d: dict[float, float]) -> np.ndarray:
        xs = np.array(list(d))
        cdf = np.cumsum(list(d.values()))
        return xs[np.minimum(np.searchsorted(cdf, u), len(xs) - 1)]

    return float(np.max(np.abs(quantile(a) - quantile(b))))


def test_exact_conditionals_match_brute_force_enumeration() -> None:
    secrets = [ValueSet.point(0.25), ValueSet.point(0.75)]
    cond = enumerate_conditionals(WEIGHTS, N, share_tall, share_women, secrets)
    for s in secrets:
        c = cond[str(s)]
        got: dict[float, float] = {}
        for x, w in zip(c.atoms, c.weights / c.weights.sum(), strict=True):
            got[float(x)] = got.get(float(x), 0.0) + float(w)
        ref = brute_force_conditional(s.low)
        assert set(got) == set(ref)
        for k in ref:
            assert got[k] == pytest.approx(ref[k], rel=1e-12)


def test_wasserstein_sensitivity_matches_brute_force() -> None:
    secrets = [ValueSet.point(0.25), ValueSet.point(0.5), ValueSet.point(0.75)]
    cond = enumerate_conditionals(WEIGHTS, N, share_tall, share_women, secrets)
    pairs = [("0.25", "0.5"), ("0.25", "0.75"), ("0.5", "0.75")]
    cal = PufferfishWassersteinMechanism(epsilon=0.5).calibrate({"θ": cond}, pairs)
    ref = max(
        brute_force_winf(brute_force_conditional(float(a)), brute_force_conditional(float(b)))
        for a, b in pairs
    )
    assert cal.sensitivity == pytest.approx(ref)
    assert cal.scale == pytest.approx(ref / 0.5)
    assert cal.worst[1:] == ("0.25", "0.75")


def test_impossible_secret_is_skipped_and_all_impossible_is_an_error() -> None:
    secrets = [ValueSet.point(0.25), ValueSet.parse("(0.3,0.4)")]  # no share k/4 in (0.3, 0.4)
    cond = enumerate_conditionals(WEIGHTS, N, share_tall, share_women, secrets)
    assert cond["(0.3, 0.4)"] is None
    mech = PufferfishWassersteinMechanism(epsilon=1.0)
    with pytest.raises(DistPrivacyError, match="no θ gives both secrets of any pair"):
        mech.calibrate({"θ": cond}, [("0.25", "(0.3, 0.4)")])
    other = enumerate_conditionals(
        WEIGHTS, N, share_tall, share_women, [ValueSet.point(0.25), ValueSet.point(0.5)]
    )
    both = {"θ1": cond, "θ2": {"0.25": other["0.25"], "(0.3, 0.4)": other["0.5"]}}
    cal = mech.calibrate(both, [("0.25", "(0.3, 0.4)")])
    assert cal.worst[0] == "θ2"


def test_gaussian_conditionals_closed_form() -> None:
    a = GaussianConditional([0.0, 1.0], np.eye(2))
    b = GaussianConditional([2.0, -1.0], np.eye(2))
    assert winf(a, b) == pytest.approx(4.0)  # ‖m_a − m_b‖₁
    c = GaussianConditional([0.0, 1.0], 2 * np.eye(2))
    assert math.isinf(winf(a, c))
    with pytest.raises(NotApplicableError, match="W∞ is infinite"):
        PufferfishWassersteinMechanism(epsilon=1).calibrate({"t": {"a": a, "c": c}}, [("a", "c")])


def test_empirical_conditionals_from_samples() -> None:
    """Monte-Carlo conditionals (shares of 10 Bernoulli(0.5) records) give the empirical W∞."""

    def sampler(k: int, rng: np.random.Generator) -> np.ndarray:
        gender = rng.random((k, 10, 1)) < 0.5
        tall = rng.random((k, 10, 1)) < np.where(gender, 0.2, 0.8)
        return np.concatenate([gender, tall], axis=2).astype(float)

    cond = sample_conditionals(
        sampler,
        lambda X: X[..., 1].mean(axis=1),
        lambda X: X[..., 0].mean(axis=1),
        [ValueSet.point(0.3), ValueSet.point(0.7)],
        samples=5000,
        random_state=0,
    )
    cal = PufferfishWassersteinMechanism(epsilon=1).calibrate({"θ": cond}, [("0.3", "0.7")])
    # the supports are {0, 0.1, ..., 1}: W∞ is a multiple of 0.1 between the mean shift 0.24 and 1
    assert 0.2 <= cal.sensitivity <= 1.0
    assert cal.sensitivity * 10 == pytest.approx(round(cal.sensitivity * 10))
    assert not cal.guarantee.verified  # W∞ of the samples, not of the true conditionals


def test_laplace_scale_is_right_and_a_wrong_scale_is_caught() -> None:
    cal = PufferfishWassersteinMechanism(epsilon=2.0).calibrate(
        {"t": {"a": GaussianConditional([0.0], [[1.0]]), "b": GaussianConditional([3.0], [[1.0]])}},
        [("a", "b")],
    )
    assert cal.scale == pytest.approx(1.5)
    z = cal.release(0.0, np.random.default_rng(5), size=20_000).values
    assert stats.kstest(z / cal.scale, "laplace").pvalue > ALPHA
    wrong = dataclasses.replace(cal, sensitivity=cal.sensitivity * 0.9)
    zw = wrong.release(0.0, np.random.default_rng(5), size=20_000).values
    assert stats.kstest(zw / cal.scale, "laplace").pvalue < ALPHA
    assert cal.expected_error == pytest.approx(1.5)
    assert cal.accuracy(0.05) == pytest.approx(1.5 * math.log(20))


def test_bad_inputs() -> None:
    with pytest.raises(DistPrivacyError, match="epsilon must be a positive number"):
        PufferfishWassersteinMechanism(epsilon=0)
    with pytest.raises(DistPrivacyError, match="non-negative integers"):
        enumerate_conditionals(
            np.array([0.5, 0.5]), 3, share_tall, share_women, [ValueSet.point(0.5)]
        )
    with pytest.raises(DistPrivacyError, match="too many to enumerate"):
        enumerate_conditionals(
            np.ones(30, dtype=int), 20, share_tall, share_women, [ValueSet.point(0.5)]
        )
    with pytest.raises(DistPrivacyError, match="exceed 2"):
        enumerate_conditionals(
            np.array([999_983, 1_000_003, 1, 1]),
            4,
            share_tall,
            share_women,
            [ValueSet.parse("(-1,2)")],
        )
    with pytest.raises(DistPrivacyError, match="at least one atom"):
        DiscreteConditional(np.array([]))
    with pytest.raises(DistPrivacyError, match="different dimension"):
        winf(GaussianConditional([0.0], [[1.0]]), GaussianConditional([0.0, 0.0], np.eye(2)))
    with pytest.raises(DistPrivacyError, match="at least one secret pair"):
        PufferfishWassersteinMechanism(epsilon=1).calibrate({"t": {}}, [])
