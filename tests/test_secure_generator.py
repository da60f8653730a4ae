"""The secure generator behind local obfuscation releases: right distributions (tests at tiny α,
so a correct sampler fails with probability ≤ 1e-6 per check), unbiased integers, no seed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from distprivacy.exceptions import DistPrivacyError
from distprivacy.local.domains import grid
from distprivacy.local.mechanisms import (
    RandomizedResponse,
    SnappedLaplace,
    TuplingMechanism,
    planar_laplace_sample,
)
from distprivacy.randomness import SecureGenerator, check_random_state

ALPHA = 1e-6
N = 20_000


def test_uniforms_are_uniform_on_the_unit_interval():
    u = SecureGenerator().random(N)
    assert u.shape == (N,) and u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > ALPHA


def test_integers_are_uniform_and_in_range():
    g = SecureGenerator()
    x = g.integers(3, 10, size=(N,))
    assert x.min() >= 3 and x.max() <= 9
    counts = np.bincount(x - 3, minlength=7)
    assert stats.chisquare(counts).pvalue > ALPHA
    # A range that does not divide 2**64 exercises the rejection step.
    y = g.integers(0, 3 * 2**61, size=1000)
    assert y.min() >= 0 and y.max() < 3 * 2**61


def test_choice_follows_its_probabilities():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    x = SecureGenerator().choice(4, size=N, p=p)
    counts = np.bincount(x, minlength=4)
    assert stats.chisquare(counts, N * p).pvalue > ALPHA


@pytest.mark.slow
def test_erlang_and_laplace_and_normal_draws():
    g = SecureGenerator()
    assert stats.kstest(g.gamma(2.0, 0.5, size=N), stats.gamma(2, scale=0.5).cdf).pvalue > ALPHA
    assert stats.kstest(g.laplace(1.0, 2.0, size=N), stats.laplace(1, 2).cdf).pvalue > ALPHA
    assert stats.kstest(g.standard_normal(N), "norm").pvalue > ALPHA
    with pytest.raises(DistPrivacyError, match="integer shape"):
        g.gamma(1.5, 1.0, size=3)


def test_local_mechanisms_default_to_the_secure_generator():
    assert isinstance(check_random_state(None, secure=True), SecureGenerator)
    rr = RandomizedResponse(4, 1.0)
    y = rr.sample(np.zeros(N, dtype=int))  # random_state=None: secure
    counts = np.bincount(y, minlength=4)
    assert stats.chisquare(counts, N * rr.matrix_[0]).pvalue > ALPHA
    # The secure path of a finite mechanism's inverse-CDF sampler and of tupling.
    lap = SnappedLaplace(grid(4), 1.0)
    z = lap.sample(np.full(N, 5))
    counts = np.bincount(z, minlength=16)
    expected = N * lap.matrix_[5]
    keep = expected >= 5  # chi-square needs expected counts of at least 5
    observed, exp = counts[keep], expected[keep]
    if (~keep).any():  # pool the small cells into one
        observed = np.append(observed, counts[~keep].sum())
        exp = np.append(exp, expected[~keep].sum())
    assert stats.chisquare(observed, exp).pvalue > ALPHA
    tuples, pos = TuplingMechanism(rr, 3).sample_with_position(np.zeros(500, dtype=int))
    assert tuples.shape == (500, 4) and set(np.unique(pos)) <= {0, 1, 2, 3}
    r = np.linalg.norm(planar_laplace_sample(np.zeros((N, 2)), 2.0), axis=1)
    assert stats.kstest(r, stats.gamma(2, scale=0.5).cdf).pvalue > ALPHA


def test_secure_draws_are_not_repeatable_but_seeded_ones_are():
    rr = RandomizedResponse(50, 0.1)
    x = np.arange(50).repeat(20)
    assert not np.array_equal(rr.sample(x), rr.sample(x))
    assert np.array_equal(rr.sample(x, random_state=3), rr.sample(x, random_state=3))


def test_a_wrong_distribution_is_caught():
    """The same check rejects a sampler with the wrong rate (the test has power)."""
    g = SecureGenerator()
    wrong = g.gamma(2.0, 0.6, size=N)
    assert stats.kstest(wrong, stats.gamma(2, scale=0.5).cdf).pvalue < ALPHA
