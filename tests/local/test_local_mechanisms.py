"""Domains, distributions and local mechanisms: transition matrices against their definitions,
samplers against their matrices (binomial bounds with a tiny α), bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from distprivacy.exceptions import DistPrivacyError
from distprivacy.local.domains import Domain, check_distribution, clustered_city, grid, line
from distprivacy.local.mechanisms import (
    ExponentialMechanism,
    FiniteMechanism,
    RandomizedResponse,
    SnappedGaussian,
    SnappedLaplace,
    TuplingMechanism,
    planar_laplace_cell_probability,
    planar_laplace_sample,
    snap,
)
from distprivacy.local.utility import service_quality_loss


def _within_binomial(counts, probs, n, alpha=1e-9):
    """Every cell count within a two-sided binomial z bound, Bonferroni over cells."""
    z = stats.norm.isf(alpha / (2 * probs.size))
    sd = np.sqrt(n * probs * (1 - probs))
    return np.all(np.abs(counts - n * probs) <= z * sd + 3)


def test_grid_and_metrics():
    g = grid(3, 4, cell=2.0)
    assert g.size == 12 and g.shape == (3, 4)
    assert g.distances[0, 11] == pytest.approx(math.hypot(6, 4))
    m = grid(3, 4, cell=2.0, metric="manhattan")
    assert m.distances[0, 11] == pytest.approx(10.0)
    assert line(5).distances[0, 4] == 4.0
    d = Domain(np.arange(4.0), metric="discrete")
    assert set(np.unique(d.distances)) == {0.0, 1.0}


def test_clustered_city_is_reproducible_and_valid():
    g = grid(10)
    a0, a1 = clustered_city(g, random_state=7)
    b0, b1 = clustered_city(g, random_state=7)
    np.testing.assert_array_equal(a0, b0)
    np.testing.assert_array_equal(a1, b1)
    for lam in (a0, a1):
        check_distribution(lam, g.size)
        assert lam.min() >= 0.15 / g.size * 0.999  # background floor
    assert 0.5 * np.abs(a0 - a1).sum() > 0.05  # the groups differ
    c0, _ = clustered_city(g, random_state=8)
    assert not np.allclose(a0, c0)


def test_planar_laplace_quadrature_against_dblquad():
    eps = 0.8
    dens = lambda y, x: eps**2 / (2 * np.pi) * np.exp(-eps * math.hypot(x, y))  # noqa: E731
    cells = [((-0.5, -0.5), (0.5, 0.5)), ((0.5, -1.5), (1.5, -0.5)), ((2.5, 0.5), (3.5, 1.5))]
    for lo, hi in cells:
        ref = integrate.dblquad(dens, lo[0], hi[0], lo[1], hi[1], epsabs=1e-13, epsrel=1e-12)[0]
        got = planar_laplace_cell_probability(lo, hi, eps)
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-13)
    # far tails and unbounded border strips keep their relative accuracy
    for e, lo, hi in [
        (5.0, (20.5, -3.5), (21.5, -2.5)),
        (0.05, (-0.5, -np.inf), (0.5, -1.5)),
        (0.8, (14.5, -np.inf), (np.inf, -14.5)),
    ]:
        f = lambda y, x, e=e: e**2 / (2 * np.pi) * np.exp(-e * math.hypot(x, y))  # noqa: E731
        ref = integrate.dblquad(f, lo[0], hi[0], lo[1], hi[1], epsabs=0, epsrel=1e-12)[0]
        assert planar_laplace_cell_probability(lo, hi, e) == pytest.approx(ref, rel=1e-10)
    # the four quadrants cover the plane
    inf = np.inf
    quads = [
        ((0, 0), (inf, inf)),
        ((-inf, 0), (0, inf)),
        ((-inf, -inf), (0, 0)),
        ((0, -inf), (inf, 0)),
    ]
    total = sum(float(planar_laplace_cell_probability(a, b, eps)) for a, b in quads)
    assert total == pytest.approx(1.0, abs=1e-13)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_snapped_laplace_rows_and_symmetry(eps):
    g = grid(5)
    M = SnappedLaplace(g, eps).matrix_
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-12)
    # centre cell: symmetric under the grid's reflections
    c = M[12].reshape(5, 5)
    np.testing.assert_allclose(c, c[::-1, :], atol=1e-13)
    np.testing.assert_allclose(c, c.T, atol=1e-13)


@pytest.mark.parametrize("eps", [0.05, 3.0, 10.0])
def test_snapped_laplace_is_xdp_with_its_epsilon(eps):
    """Snapping is post-processing: every ratio A(x)[y]/A(x′)[y] ≤ e^{ε·d(x, x′)}, checked on
    the whole 12×12 matrix, far tails included (no entry underflows to 0)."""
    from distprivacy.local.guarantees import xdp_epsilon

    g = grid(12)
    mech = SnappedLaplace(g, eps)
    assert mech.matrix_.min() > 0
    assert xdp_epsilon(mech, g.distances) <= eps * (1 + 1e-9)
    assert xdp_epsilon(mech, g.distances) > 0.99 * eps  # and nearly attained


def test_snapped_samplers_match_their_matrices():
    g = grid(6)
    n = 200_000
    x = np.full(n, 14)
    for mech in (SnappedLaplace(g, 0.7), SnappedGaussian(g, 1.3), RandomizedResponse(36, 2.0)):
        counts = np.bincount(mech.sample(x, random_state=1), minlength=36)
        assert _within_binomial(counts, mech.matrix_[14], n), mech.name
    lin = SnappedLaplace(line(9), 0.9)
    counts = np.bincount(lin.sample(np.full(n, 3), random_state=2), minlength=9)
    assert _within_binomial(counts, lin.matrix_[3], n)
    ex = ExponentialMechanism(g, 1.1)
    counts = np.bincount(ex.sample(x, random_state=3), minlength=36)
    assert _within_binomial(counts, ex.matrix_[14], n)


def test_wrong_noise_scale_is_caught():
    """Samples of planar Laplace at 2ε are rejected against the matrix at ε."""
    g = grid(6)
    n = 200_000
    counts = np.bincount(
        SnappedLaplace(g, 1.4).sample(np.full(n, 14), random_state=4), minlength=36
    )
    assert not _within_binomial(counts, SnappedLaplace(g, 0.7).matrix_[14], n)


def test_planar_laplace_sampler_radius():
    pts = planar_laplace_sample(np.zeros((100_000, 2)), 2.0, random_state=5)
    r = np.hypot(pts[:, 0], pts[:, 1])
    # radius ~ Gamma(2, 1/ε): mean 2/ε, KS test at a tiny α
    assert stats.kstest(r, stats.gamma(2, scale=0.5).cdf).pvalue > 1e-6


def test_snap_and_reproducibility():
    g = grid(4)
    assert snap(np.array([[0.4, 0.4], [-3, 9], [2.6, 1.2]]), g).tolist() == [0, 12, 7]
    a = SnappedLaplace(g, 1.0).sample(np.arange(16), random_state=11)
    b = SnappedLaplace(g, 1.0).sample(np.arange(16), random_state=np.random.default_rng(11))
    np.testing.assert_array_equal(a, b)


def test_exponential_and_gaussian_definitions():
    g = grid(4)
    ex = ExponentialMechanism(g, 0.9)
    w = np.exp(-0.45 * g.distances[5])
    np.testing.assert_allclose(ex.matrix_[5], w / w.sum(), rtol=1e-13)
    gs = SnappedGaussian(line(7), 1.5)
    edges = np.array([-np.inf, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, np.inf])
    np.testing.assert_allclose(gs.matrix_[2], np.diff(stats.norm.cdf((edges - 2) / 1.5)))


def test_tupling_sampler_structure():
    base = RandomizedResponse(5, 50.0)  # keeps the input with probability ≈ 1
    mech = TuplingMechanism(base, 4)
    tup, pos = mech.sample_with_position(np.array([0, 1, 2, 3, 4] * 200), random_state=3)
    assert tup.shape == (1000, 5)
    assert (tup[np.arange(1000), pos] == np.tile(np.arange(5), 200)).all()
    assert np.bincount(pos, minlength=5).min() > 100  # uniform position
    g = grid(3)
    pi = np.full(9, 1 / 9)
    lap = SnappedLaplace(g, 1.0)
    assert service_quality_loss(TuplingMechanism(lap, 7), pi, g) == service_quality_loss(lap, pi, g)


def test_rr_sql_closed_form():
    g = grid(4)
    rr = RandomizedResponse(16, 2.0)
    pi = np.random.default_rng(0).dirichlet(np.ones(16))
    other = (1 - rr.keep_probability) / 15
    want = other * float(pi @ g.distances.sum(axis=1))
    assert service_quality_loss(rr, pi, g) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: check_distribution([0.3, 0.3], 2), "sums to 0.6"),
        (lambda: check_distribution([0.5, 0.5], 16), "has 2 entries but the domain has 16"),
        (lambda: check_distribution([1.5, -0.5]), "negative"),
        (lambda: check_distribution([np.nan, 1.0]), "NaN"),
        (lambda: RandomizedResponse(4, 1.0).lift([0.25] * 3), "has 3 entries"),
        (lambda: SnappedLaplace(grid(4), 1.0).lift(np.full(9, 1 / 9)), "domain has 16"),
        (lambda: TuplingMechanism(RandomizedResponse(3, 1.0), -1), "must be ≥ 0"),
        (lambda: TuplingMechanism(RandomizedResponse(3, 1.0), 1.5), "integer"),
        (lambda: RandomizedResponse(4, 0.0), "positive"),
        (lambda: RandomizedResponse(4, -2.0), "positive"),
        (lambda: SnappedLaplace(grid(3), 0), "positive"),
        (lambda: ExponentialMechanism(grid(3), -1), "positive"),
        (lambda: SnappedGaussian(grid(3), 0), "sigma"),
        (lambda: planar_laplace_sample(np.zeros((2, 2)), -1.0, random_state=0), "positive"),
        (
            lambda: RandomizedResponse(4, 1.0).sample(np.zeros(2, dtype=int), random_state="x"),
            "seed",
        ),
        (lambda: grid(0), "positive integer"),
        (lambda: Domain(np.zeros((3, 2)), metric="chebyshev"), "unknown metric"),
        (lambda: FiniteMechanism([[0.5, 0.6], [0.5, 0.5]]), "row 0 sums"),
        (lambda: TuplingMechanism(RandomizedResponse(3, 1.0), 2, nu=[0.5, 0.5, 0.0]), "positive"),
        (lambda: RandomizedResponse(4, 1.0).sample([7], random_state=0), "indices"),
    ],
)
def test_bad_inputs_give_one_line_errors(call, match):
    with pytest.raises(DistPrivacyError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
