"""Joint accounting of repeated releases (distprivacy.composition)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distprivacy.composition import (
    CompositionError,
    JointGaussianModel,
    compose_gaussian,
    compose_guarantees,
    joint_accounting,
)
from distprivacy.exceptions import DistPrivacyError
from distprivacy.guarantee import Guarantee
from distprivacy.mechanisms import DauM
from distprivacy.models import ExactModel, GaussianModel
from distprivacy.profiles import gdp_delta
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

EPS = 0.5
DELTA = 1e-3
SPEC = ("income==>50K", 100, [0.45, 0.55])


@pytest.fixture(scope="module")
def adult_model(adult):
    return ExactModel().fit(adult, ProtectionSpec(*SPEC), Query.parse(ADULT_DEFAULT_STATISTICS))


@pytest.fixture(scope="module")
def daum(adult_model):
    return DauM(EpsDelta(EPS, DELTA)).calibrate(adult_model)


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def test_one_release_alone_is_the_single_calibration(adult_model, daum):
    everything = range(adult_model.dim)
    acct = joint_accounting(adult_model, [(everything, daum.noise_covariance)], epsilon=EPS)
    assert acct.failure is None
    assert _rel(acct.mu, daum.mu) <= 1e-9
    assert _rel(acct.delta, daum.delta_achieved) <= 1e-9
    assert _rel(acct.max_attack_accuracy, daum.max_attack_accuracy) <= 1e-9
    g = acct.guarantee
    assert g.epsilon == EPS and g.notion == "distribution privacy" and g.verified
    assert g.curve == "point"  # the fitted covariances of 0.45 and 0.55 differ
    assert not g.holds_for_every_input
    # Asked at δ: the smallest ε meeting it is at most the calibration's (its δ ≤ 1e-3 at 0.5).
    at_delta = compose_gaussian(adult_model, [(everything, daum.noise)], delta=DELTA)
    assert at_delta.epsilon <= EPS * (1 + 1e-6)
    assert at_delta.delta <= DELTA * (1 + 1e-6)
    assert _rel(at_delta.mu, daum.mu) <= 1e-9


def test_same_statistics_twice_grow_less_than_sqrt2(adult_model, daum):
    """F(D) is shared: μ² = 2 dᵀ(2S + N)⁻¹d < 2 dᵀ(S + N)⁻¹d = 2μ²."""
    r = list(range(adult_model.dim))
    Z = daum.noise_covariance
    one = joint_accounting(adult_model, [(r, Z)], epsilon=EPS)
    two = joint_accounting(adult_model, [(r, Z), (r, Z)], epsilon=EPS)
    assert daum.mu < two.mu < math.sqrt(2) * daum.mu
    assert two.naive_mu == pytest.approx(math.sqrt(2) * daum.mu, rel=1e-12)
    assert two.delta > one.delta and two.max_attack_accuracy > one.max_attack_accuracy
    # The closed form for the same statistics twice (pair average covariance).
    S = adult_model.covariances_.mean(axis=0)
    d = adult_model.mean_differences()[0]
    closed = math.sqrt(2 * d @ np.linalg.solve(2 * S + Z, d))
    assert _rel(two.mu, closed) <= 1e-9
    # The ledger scenario: a budget of 1.6 μ admits two releases, not three.
    three = compose_gaussian(adult_model, [(r, Z)] * 3, epsilon=EPS)
    assert two.mu < 1.6 * daum.mu < three.mu


def _brute_force_mu(model, index_lists, noises) -> float:
    """Stack with explicit block matrices, whiten by Cholesky, take the largest norm."""
    best = 0.0
    for i, j in model.pair_indices_:
        mi = np.concatenate([model.means_[i][list(ix)] for ix in index_lists])
        mj = np.concatenate([model.means_[j][list(ix)] for ix in index_lists])
        S = (model.covariances_[i] + model.covariances_[j]) / 2
        rows = []
        for r, ir in enumerate(index_lists):
            row = []
            for s, js in enumerate(index_lists):
                block = S[np.ix_(list(ir), list(js))]
                row.append(block + noises[r] if r == s else block)
            rows.append(row)
        C = np.block(rows)
        L = np.linalg.cholesky(C)
        best = max(best, float(np.linalg.norm(np.linalg.solve(L, mi - mj))))
    return best


def test_joint_mu_matches_brute_force_whitening(adult, adult_model, daum):
    sub = Query.parse("mean:age,count:marital_status==Never-married")
    sub_model = ExactModel().fit(adult, ProtectionSpec(*SPEC), sub)
    sub_cal = DauM(EpsDelta(EPS, DELTA)).calibrate(sub_model)
    lists = [list(range(adult_model.dim)), [0, 2], [4]]
    noises = [daum.noise_covariance, sub_cal.noise_covariance, np.array([[5.0]])]
    acct = joint_accounting(adult_model, list(zip(lists, noises, strict=True)), epsilon=EPS)
    assert _rel(acct.mu, _brute_force_mu(adult_model, lists, noises)) <= 1e-9
    # Each release alone, by the same route.
    for r, mu_r in enumerate(acct.release_mus):
        assert _rel(mu_r, _brute_force_mu(adult_model, [lists[r]], [noises[r]])) <= 1e-9
    assert sub_cal.mu == pytest.approx(acct.release_mus[1], rel=1e-9)


def _two_correlated(d):
    S = np.array([[1.0, 0.9], [0.9, 1.0]])
    return GaussianModel(["a", "b"], [[0.0, 0.0], d], [S, S], [("a", "b")], ["F1", "F2"])


def test_naive_composition_is_wrong_in_both_directions():
    """Two strongly correlated statistics, each released alone with μ = 0.25. Opposite mean
    differences: F1 − F2 cancels the shared sampling noise and reveals θ, so the joint μ
    exceeds √(Σ μᵢ²); equal ones: the second release repeats the first, it is below."""
    releases = [([0], [[3.0]]), ([1], [[3.0]])]
    up = joint_accounting(_two_correlated([0.5, -0.5]), releases, epsilon=1.0)
    down = joint_accounting(_two_correlated([0.5, 0.5]), releases, epsilon=1.0)
    for acct in (up, down):
        assert acct.release_mus == pytest.approx((0.25, 0.25), rel=1e-12)
        assert acct.naive_mu == pytest.approx(math.sqrt(0.125), rel=1e-12)
        # Equal covariances: the exact profile is the μ-GDP curve.
        assert acct.guarantee.curve == "gdp"
        assert acct.delta == pytest.approx(float(gdp_delta(1.0, acct.mu)), rel=1e-6)
    # dᵀ(S + 3I)⁻¹d with d along an eigenvector of S: ‖d‖² / (3 + 1 ∓ 0.9).
    assert up.mu == pytest.approx(math.sqrt(0.5 / 3.1), rel=1e-12)  # 0.4016
    assert down.mu == pytest.approx(math.sqrt(0.5 / 4.9), rel=1e-12)  # 0.3194
    assert down.mu < up.naive_mu < up.mu
    # Without noise and ρ = 0.99, each statistic alone has μ = 0.5 but together √50 = 7.07:
    # ten times the naive 0.707 (F1 − F2 nearly cancels the sampling noise).
    S = np.array([[1.0, 0.99], [0.99, 1.0]])
    m = GaussianModel(["a", "b"], [[0.0, 0.0], [0.5, -0.5]], [S, S], [("a", "b")])
    bare = joint_accounting(m, [([0], [[0.0]]), ([1], [[0.0]])], delta=1e-3)
    assert bare.release_mus == pytest.approx((0.5, 0.5), rel=1e-12)
    assert bare.mu == pytest.approx(math.sqrt(50.0), rel=1e-9)
    assert bare.naive_mu == pytest.approx(math.sqrt(0.5), rel=1e-12)


def test_fails_closed():
    # A mean difference outside the range of a singular covariance, no noise there: μ = ∞.
    S = np.array([[1.0, 0.0], [0.0, 0.0]])
    m = GaussianModel(["a", "b"], [[0.0, 0.0], [0.0, 1.0]], [S, S], [("a", "b")])
    acct = joint_accounting(m, [([0, 1], np.eye(2) * [1.0, 0.0])], epsilon=1.0)
    assert math.isinf(acct.mu) and acct.delta == 1.0 and acct.max_attack_accuracy == 1.0
    assert acct.failure is not None and not acct.guarantee.verified
    assert math.isinf(compose_gaussian(m, [([0, 1], np.diag([1.0, 0.0]))], delta=1e-3).epsilon)
    # Different supports under the two θ (one variance zero): δ = 1 by the exact profile.
    m2 = GaussianModel(["a", "b"], [[0.0], [0.1]], [[[1.0]], [[0.0]]], [("a", "b")], ["F"])
    g = compose_gaussian(m2, [([0], [[0.0]])], epsilon=1.0)
    assert g.delta == 1.0


def test_bad_releases_are_refused(adult_model, daum):
    Z = daum.noise_covariance
    with pytest.raises(DistPrivacyError, match="5×5"):
        JointGaussianModel.from_model(adult_model, [range(5)], [Z[:2, :2]])
    with pytest.raises(DistPrivacyError, match=r"not in 0\.\.4"):
        JointGaussianModel.from_model(adult_model, [[0, 7]], [np.eye(2)])
    with pytest.raises(DistPrivacyError, match="positive semidefinite"):
        JointGaussianModel.from_model(adult_model, [[0]], [[[-1.0]]])
    with pytest.raises(DistPrivacyError, match="at least one release"):
        JointGaussianModel.from_model(adult_model, [], [])
    with pytest.raises(DistPrivacyError, match="exactly one"):
        compose_gaussian(adult_model, [(range(5), Z)], epsilon=1.0, delta=1e-3)
    joint = JointGaussianModel.from_model(adult_model, [range(5), [1]], [Z, [[2.0]]])
    assert joint.statistic_names_[-1] == "2:mean(education_num)"
    assert joint.noise_covariance_.shape == (6, 6) and joint.noise_covariance_[5, 5] == 2.0


def _every_input(eps: float, delta: float, mu: float | None = None) -> Guarantee:
    return Guarantee(
        epsilon=eps,
        delta=delta if mu is None else float(gdp_delta(eps, mu)),
        theorem="group DP",
        mu=mu,
        curve="point" if mu is None else "gdp",
        verified=True,
        holds_for_every_input=True,
    )


def test_compose_guarantees_only_for_every_dataset_pair(daum):
    basic = compose_guarantees([_every_input(0.5, 1e-4), _every_input(0.25, 2e-4)])
    assert basic.epsilon == 0.75 and basic.delta == pytest.approx(3e-4)
    assert basic.holds_for_every_input and basic.curve == "point" and basic.mu is None
    gdp = compose_guarantees([_every_input(0.5, 0, mu=0.3), _every_input(0.5, 0, mu=0.4)])
    assert gdp.mu == pytest.approx(0.5) and gdp.curve == "gdp"
    assert gdp.delta == pytest.approx(float(gdp_delta(1.0, 0.5)))
    model_based = Guarantee(epsilon=0.5, delta=1e-3, theorem="Thm A.1", mu=0.2)
    with pytest.raises(CompositionError, match="not for every pair of datasets"):
        compose_guarantees([_every_input(0.5, 1e-4), model_based])
    with pytest.raises(CompositionError, match="different notions"):
        compose_guarantees(
            [_every_input(1, 0), Guarantee(1, 0, "LDP", "local distribution privacy",
                                            holds_for_every_input=True)]
        )  # fmt: skip
    with pytest.raises(CompositionError, match="no guarantee"):
        compose_guarantees([])


@pytest.mark.parametrize("factor", [1000.0, 1e-3])
def test_joint_accounting_does_not_depend_on_units(adult_model, daum, factor):
    """Rescale one statistic (years → millennia, or dollars → milli-dollars): its moments and
    its noise rescale with it, and the joint μ, δ and attack bound do not move."""
    c = np.ones(adult_model.dim)
    c[0] = factor
    scaled = GaussianModel(
        thetas=list(adult_model.thetas_),
        means=adult_model.means_ * c,
        covariances=adult_model.covariances_ * np.outer(c, c),
        pairs=[
            (adult_model.thetas_[i], adult_model.thetas_[j]) for i, j in adult_model.pair_indices_
        ],
        statistic_names=adult_model.statistic_names_,
    )
    r = list(range(adult_model.dim))
    Z = daum.noise_covariance
    base = joint_accounting(adult_model, [(r, Z), (r[:2], Z[:2, :2])], epsilon=EPS)
    moved = joint_accounting(
        scaled, [(r, Z * np.outer(c, c)), (r[:2], (Z * np.outer(c, c))[:2, :2])], epsilon=EPS
    )
    assert _rel(moved.mu, base.mu) <= 1e-9
    assert _rel(moved.delta, base.delta) <= 1e-6
    assert _rel(moved.max_attack_accuracy, base.max_attack_accuracy) <= 1e-9
