"""Joint accounting of releases of *several* datasets drawn from one θ (issue 30, D1): the
secret's budget covers every dataset, with the datasets' shared records measured.

Distribution privacy does not compose like DP: with the shift in X, releasing X + Y and then Y
gives μ = Δ/√2 and 0 alone but Δ together, so √Σμᵢ² is no upper bound; and two independent
samples of θ leak more about the share than one sample released twice."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from distprivacy.composition import JointGaussianModel, joint_accounting
from distprivacy.exceptions import DistPrivacyError
from distprivacy.ledger._compose import merge_repeats
from distprivacy.mechanisms import DauM
from distprivacy.models import ExactModel, GaussianModel
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

DELTA = 1e-3


def _x_plus_y(shift: float) -> GaussianModel:
    """Statistics (X + Y, Y) of unit-variance independent X, Y; θ shifts X by ``shift``."""
    S = np.array([[2.0, 1.0], [1.0, 1.0]])
    return GaussianModel(["a", "b"], [[0.0, 0.0], [shift, 0.0]], [S, S], [("a", "b")], ["X+Y", "Y"])


@pytest.mark.parametrize("rho", [0.0, 0.5, 1.0])
def test_x_plus_y_then_y(rho):
    """Release X + Y, then Y, each without noise, from datasets sharing a share ρ of their
    records. Alone: μ = Δ/√2 and 0; together: μ² = Δ² / (2 − ρ²) — Δ on one dataset, above
    √(Σ μᵢ²) = Δ/√2 whenever ρ > 0."""
    delta_x = 0.3
    zero = [[0.0]]
    acct = joint_accounting(
        _x_plus_y(delta_x),
        [([0], zero), ([1], zero)],
        delta=DELTA,
        datasets=[0, 1],
        overlap=[[1.0, rho], [rho, 1.0]],
    )
    assert acct.release_mus == pytest.approx((delta_x / math.sqrt(2), 0.0), abs=1e-12)
    assert acct.naive_mu == pytest.approx(delta_x / math.sqrt(2), rel=1e-12)
    assert acct.mu == pytest.approx(delta_x / math.sqrt(2 - rho**2), rel=1e-12)
    if rho > 0:
        assert acct.mu > acct.naive_mu * (1 + 1e-6)
    # One dataset without datasets=: the same as ρ = 1.
    one = joint_accounting(_x_plus_y(delta_x), [([0], zero), ([1], zero)], delta=DELTA)
    assert one.mu == pytest.approx(delta_x, rel=1e-12)


@pytest.fixture(scope="module")
def campaign(adult):
    """The campaign's setting: Adult, n = 100, income==>50K at 45 % / 55 %, the default
    statistics, DauM-G at ε = 0.5, δ = 1e-3."""
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    model = ExactModel().fit(adult, spec, Query.parse(ADULT_DEFAULT_STATISTICS))
    return model, DauM(EpsDelta(0.5, DELTA)).calibrate(model).noise_covariance


@pytest.mark.parametrize(("share", "expected"), [(0.0, 0.4161), (0.5, 0.4116), (1.0, 0.4074)])
def test_two_plus_two_releases_against_the_campaign(campaign, share, expected):
    """2 + 2 releases of one plan on two datasets sharing 0, ½ or all of their records:
    μ 0.4161 / 0.4116 / 0.4074 as the outside campaign measured with the library's joint
    accounting (the campaign's figures to 4 decimals; ½ to within 1e-4, its rounding)."""
    model, Z = campaign
    r = list(range(model.dim))
    releases = merge_repeats([(r, Z)] * 2)  # two releases of one plan: one with noise Z/2
    acct = joint_accounting(
        model,
        releases * 2,
        delta=DELTA,
        datasets=[0, 1],
        overlap=[[1.0, share], [share, 1.0]],
    )
    assert acct.failure is None
    assert acct.mu == pytest.approx(expected, abs=1.5e-4)
    four_on_one = joint_accounting(model, merge_repeats([(r, Z)] * 4), delta=DELTA)
    if share == 1.0:  # the same records: exactly four releases of one dataset
        assert acct.mu == pytest.approx(four_on_one.mu, rel=1e-12)
    else:  # independent (or half-shared) samples leak more than one sample released 4 times
        assert acct.mu > four_on_one.mu


def test_monte_carlo_likelihood_ratio_attack_matches_overlap():
    """Simulate the datasets themselves — n i.i.d. records, two datasets sharing k of them —
    release each dataset's mean with Gaussian noise, and run the likelihood-ratio attack of
    the stacked Gaussian. Its accuracy is the bound Φ(μ/2) of the joint accounting with
    overlap k/n (equal covariances: the Neyman–Pearson test attains it), within a 5-sigma
    binomial tolerance; ignoring the overlap (ρ = 0) states a bound the attack beats."""
    rng = np.random.default_rng(20261127)
    n, k, shift, noise_var, trials = 40, 30, 0.25, 0.02, 200_000
    rho = k / n
    # Per-θ model of the mean of n unit-variance records: mean 0 or shift, variance 1/n.
    S = np.array([[1.0 / n]])
    model = GaussianModel(["a", "b"], [[0.0], [shift]], [S, S], [("a", "b")], ["mean"])
    noise = [[noise_var]]
    acct = joint_accounting(
        model, [([0], noise), ([0], noise)], delta=DELTA, datasets=[0, 1],
        overlap=[[1, rho], [rho, 1]],
    )  # fmt: skip
    bound = float(norm.cdf(acct.mu / 2))
    # The datasets: shared records' sum, each dataset's own records' sums (vectorised).
    theta = rng.integers(0, 2, size=trials)
    shared = rng.normal(size=trials) * math.sqrt(k)
    own = rng.normal(size=(trials, 2)) * math.sqrt(n - k)
    means = (shared[:, None] + own) / n + shift * theta[:, None]
    y = means + rng.normal(size=(trials, 2)) * math.sqrt(noise_var)
    # Likelihood ratio of the stacked Gaussian: linear in y (equal covariances).
    C = np.array([[1 / n + noise_var, rho / n], [rho / n, 1 / n + noise_var]])
    w = np.linalg.solve(C, np.array([shift, shift]))
    guess = (y @ w > w @ np.array([shift, shift]) / 2).astype(int)
    accuracy = float(np.mean(guess == theta))
    tol = 5 * math.sqrt(bound * (1 - bound) / trials)
    assert abs(accuracy - bound) <= tol, (accuracy, bound)
    wrong = joint_accounting(
        model, [([0], noise), ([0], noise)], delta=DELTA, datasets=[0, 1],
        overlap=[[1, 0], [0, 1]],
    )  # fmt: skip
    # A deliberately wrong overlap (independent samples) misstates the bound by more than the
    # simulation's tolerance: the test can tell the two apart.
    assert abs(float(norm.cdf(wrong.mu / 2)) - accuracy) > tol


@pytest.mark.parametrize(
    ("datasets", "overlap", "words"),
    [
        ([0, 1], [[1, 0.5], [0.5, 1]], None),
        ([0, 1], None, "both"),
        ([0, 2], [[1, 0], [0, 1]], "dataset index"),
        ([0, 1], [[1, 0.5], [0.4, 1]], "symmetric"),
        ([0, 1], [[0.9, 0], [0, 1]], "diagonal"),
        ([0, 1], [[1, 1.5], [1.5, 1]], "[0, 1]"),
        ([0, 1, 2], [[1, 1, 0], [1, 1, 1], [0, 1, 1]], "positive semidefinite"),
        ([0, 1], [[1, float("nan")], [float("nan"), 1]], "[0, 1]"),
    ],
)
def test_bad_overlap_is_refused(datasets, overlap, words):
    m = _x_plus_y(0.1)
    releases = [([0], [[1.0]])] * len(datasets)
    if words is None:
        joint = JointGaussianModel.from_model(
            m, *zip(*releases, strict=True), datasets=datasets, overlap=overlap
        )
        assert joint.n_datasets == 2
        assert joint.covariances_[0, 0, 1] == pytest.approx(0.5 * 2.0)
        return
    with pytest.raises(DistPrivacyError, match=words.replace("[", r"\[").replace("]", r"\]")):
        JointGaussianModel.from_model(
            m, *zip(*releases, strict=True), datasets=datasets, overlap=overlap
        )
