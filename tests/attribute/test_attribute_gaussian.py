"""Tests of the Attribute-Private Gaussian Mechanism (Zhang, Ohrimenko & Cummings 2022, Alg. 1,
Thm 1, Thm 2, §4.2), against the paper's hospital numbers, closed forms and simulation."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from distprivacy.attribute.framework import (
    AttributeDomain,
    DatasetAttributeFramework,
    DistributionalAttributeFramework,
    pairs_from_sets,
)
from distprivacy.attribute.gaussian import (
    AttributeGaussianMechanism,
    GaussianProblem,
    GaussianTheta,
    RegressionTheta,
    SensitivityTerm,
    classic_c,
    conditional_covariance,
    conditional_mean,
    conditional_moments_term,
    delta_with_moments,
)
from distprivacy.exceptions import (
    AssumptionWarning,
    ClassicRuleWarning,
    DistPrivacyError,
    ExactReleaseError,
)
from distprivacy.experiments.attribute_privacy import (
    PAPER,
    hospital_framework,
    hospital_table,
    hospital_theta,
    paper_rows,
)
from distprivacy.profiles import gdp_delta, gdp_mu
from distprivacy.request import GaussianOptions
from distprivacy.targets import EpsDelta

EPS, DELTA = 1.0, 1e-3
ALPHA = 1e-6  # significance of the statistical tests: a false alarm once in a million runs


def calibrate(query: str, rule: str = "classic", reading: str = "centres"):
    mech = AttributeGaussianMechanism(EpsDelta(EPS, DELTA), rule=rule)
    return mech.calibrate(hospital_framework(), hospital_theta(), query, pair_distance=reading)


# ---------------------------------------------------------------------------------------------
# The paper's hospital experiment (§4.2)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["weight", "blood_pressure", "temperature"])
def test_hospital_sensitivity_and_variance_match_the_paper(query: str) -> None:
    cal = calibrate(query)
    assert cal.sensitivity == pytest.approx(PAPER[query]["sensitivity"], rel=1e-12)
    assert cal.conditional_variance == pytest.approx(PAPER[query]["variance"], rel=1e-12)


@pytest.mark.parametrize("query", ["weight", "blood_pressure"])
def test_hospital_expected_error_within_15_percent_of_the_paper(query: str) -> None:
    """Alg. 1's σ² = (cΔ/ε)² − Var; E|Z| = σ √(2/π) is within 3 % of the paper's 100-run
    averages (18.90, 7.40), well inside the issue's ±15 %."""
    cal = calibrate(query)
    c = math.sqrt(2 * math.log(1.25 / DELTA))
    sigma2 = (c * PAPER[query]["sensitivity"] / EPS) ** 2 - PAPER[query]["variance"]
    assert cal.noise_variance == pytest.approx(sigma2, rel=1e-12)
    assert cal.expected_error == pytest.approx(math.sqrt(sigma2 * 2 / math.pi), rel=1e-6)
    assert cal.expected_error == pytest.approx(PAPER[query]["error"], rel=0.03)


def test_hospital_measured_errors_over_100_runs() -> None:
    """The reproduction's 100-run averages (seed 0) are within ±15 % of the paper's."""
    table, data = hospital_table(runs=100, random_state=0)
    rows = paper_rows(table).set_index("query")
    for q in ("weight", "blood_pressure"):
        assert rows.loc[q, "measured_abs_error"] == pytest.approx(PAPER[q]["error"], rel=0.15)
    assert len(data) == 50
    assert set(data["gender"].unique()) <= {0, 1}


def test_hospital_temperature_adds_no_noise() -> None:
    """Exact accounting: σ² = 0 and the true value is released unchanged (the paper's "no
    noise"); the classic c leaves σ² = (c·0.075)² − 0.08 ≈ 2.2e-4."""
    exact = calibrate("temperature", rule="exact")
    assert not exact.adds_noise
    assert exact.noise_variance == 0.0
    with pytest.raises(ExactReleaseError, match="allow_exact"):
        exact.release(98.58, 0)
    assert exact.release(98.58, 0, allow_exact=True).value == 98.58
    assert exact.delta_achieved <= DELTA
    classic = calibrate("temperature", rule="classic")
    assert classic.noise_variance == pytest.approx(classic_c(DELTA) ** 2 * 0.075**2 - 0.08)
    assert 0 < classic.noise_variance < 3e-4


def test_literal_reading_uses_the_producible_shares() -> None:
    assert calibrate("weight", reading="sup").sensitivity == pytest.approx(24.5 * 0.48)


def test_regression_theta_is_the_gaussian_theta_of_its_worst_vertex() -> None:
    """The slope/residual parametrisation gives the same Δ and Var as the covariance matrix of
    the worst θ: V_ii = p(1 − p), V_ij = V_ii·slope, V_jj = V_ii·slope² + τ²."""
    fw = hospital_framework()
    vii, slope, tau2 = 0.24, -24.5, 225.0
    V = np.array([[vii, vii * slope], [vii * slope, vii * slope**2 + tau2]])
    mech = AttributeGaussianMechanism(EpsDelta(EPS, DELTA), rule="classic")
    a = mech.calibrate(
        fw, GaussianTheta(("gender", "weight"), V), "weight", pair_distance="centres"
    )
    b = mech.calibrate(fw, hospital_theta(), "weight", pair_distance="centres")
    assert a.sensitivity == pytest.approx(b.sensitivity)
    assert a.conditional_variance == pytest.approx(b.conditional_variance)
    assert a.noise_variance == pytest.approx(b.noise_variance)


@pytest.mark.parametrize("rule", ["classic", "exact"])
def test_apgm_equals_eigm_g_on_the_translated_problem(rule: str) -> None:
    """For a scalar query Alg. 1 is Chen & Ohrimenko's EigM-G on θ_a, θ_b = the two secrets."""
    import warnings

    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import GaussianModel

    cal = calibrate("blood_pressure", rule=rule)
    model = GaussianModel(["a", "b"], [[0.0], [2.5]], [[[2.0]], [[2.0]]], [("a", "b")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = make_mechanism("EigM-G", EpsDelta(EPS, DELTA), GaussianOptions(rule=rule)).calibrate(
            model
        )
    assert cal.noise_variance == pytest.approx(float(ours.noise_covariance[0, 0]), rel=1e-9)


# ---------------------------------------------------------------------------------------------
# Exact accounting and Thm 2
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["weight", "blood_pressure"])
def test_exact_rule_meets_delta_tightly(query: str) -> None:
    """The exact calibration's μ is μ*(ε, δ): the exact δ it achieves is δ (to rounding), and
    less noise than the classic rule's."""
    exact, classic = calibrate(query, "exact"), calibrate(query, "classic")
    mu = exact.sensitivity / math.sqrt(exact.conditional_variance + exact.noise_variance)
    assert mu == pytest.approx(gdp_mu(EPS, DELTA), rel=1e-9)
    assert gdp_delta(EPS, mu) == pytest.approx(DELTA, rel=1e-6)
    assert exact.delta_achieved <= DELTA * (1 + 1e-9)
    assert exact.noise_variance < classic.noise_variance
    assert classic.delta_achieved < DELTA


def test_classic_rule_warns_at_epsilon_one() -> None:
    (w,) = calibrate("weight").warnings
    assert w.category is ClassicRuleWarning and "proven only for ε < 1" in w
    half = AttributeGaussianMechanism(EpsDelta(0.5, DELTA), rule="classic")
    assert not half.calibrate(hospital_framework(), hospital_theta(), "weight").warnings


def test_theorem_2_accuracy_bound_and_coverage() -> None:
    cal = calibrate("weight")
    beta = 0.05
    alpha = cal.accuracy(beta)
    assert alpha == pytest.approx(math.sqrt(cal.noise_variance) * stats.norm.ppf(1 - beta / 2))
    z = cal.release(0.0, np.random.default_rng(1), size=20_000).values
    miss = int(np.sum(np.abs(z) > alpha))
    # P(miss count) is Binomial(20000, 0.05): a two-sided test at ALPHA
    assert stats.binomtest(miss, 20_000, beta).pvalue > ALPHA
    with pytest.raises(DistPrivacyError, match="beta must lie in"):
        cal.accuracy(0.0)


def _noise_pvalue(noise: np.ndarray, variance: float) -> float:
    return float(stats.kstest(noise / math.sqrt(variance), "norm").pvalue)


def test_noise_has_the_calibrated_scale_and_a_wrong_scale_is_caught() -> None:
    """KS test of 20,000 releases against N(F, σ²): the calibrated mechanism passes at α = 1e-6;
    a mechanism with a deliberately wrong σ (×0.9) fails it."""
    cal = calibrate("weight")
    z = cal.release(161.33, np.random.default_rng(7), size=20_000).values - 161.33
    assert _noise_pvalue(z, cal.noise_variance) > ALPHA
    wrong = dataclasses.replace(cal, noise_covariance=cal.noise_covariance * 0.9**2)
    zw = wrong.release(161.33, np.random.default_rng(7), size=20_000).values - 161.33
    assert _noise_pvalue(zw, cal.noise_variance) < ALPHA


def test_release_is_reproducible_and_secure_by_default() -> None:
    cal = calibrate("blood_pressure")
    assert cal.release(102.18, 3).value == cal.release(102.18, 3).value
    assert cal.release(102.18, np.random.default_rng(3)).value == cal.release(102.18, 3).value
    assert not cal.release(102.18, 3).secure
    secure = cal.release(102.18)  # random_state=None: OpenDP's secure sampler
    assert math.isfinite(secure.value) and secure.secure


# ---------------------------------------------------------------------------------------------
# §4.2 formulas against simulation, Θ by ranges, vector queries, the general form
# ---------------------------------------------------------------------------------------------


def test_conditional_moments_of_gaussian_averages_match_simulation() -> None:
    """F̄ − (V_ij/V_ii) ḡ is independent of ḡ for Gaussian records, so the conditional law of F̄
    given ḡ = a is N(μ_j + (V_ij/V_ii)(a − μ_i), (V_jj − V_ij²/V_ii)/n): check the residual's
    mean and variance on 20,000 simulated datasets (z-test and χ² test at α = 1e-6)."""
    mu = np.array([0.6, 150.0])
    V = np.array([[0.24, -4.0], [-4.0, 300.0]])
    n, reps = 50, 20_000
    X = np.random.default_rng(11).multivariate_normal(mu, V, size=(reps, n))
    g, f = X[..., 0].mean(axis=1), X[..., 1].mean(axis=1)
    beta = V[0, 1] / V[0, 0]
    resid = f - beta * g
    var = float(conditional_covariance(V, 0, 1, n)[0, 0])
    m0 = float(conditional_mean(mu, V, 0, 1, 0.0)[0])
    z = (resid.mean() - m0) / math.sqrt(var / reps)
    assert 2 * stats.norm.sf(abs(z)) > ALPHA
    chi2 = (reps - 1) * resid.var(ddof=1) / var
    p = 2 * min(stats.chi2.cdf(chi2, reps - 1), stats.chi2.sf(chi2, reps - 1))
    assert p > ALPHA
    assert conditional_mean(mu, V, 0, 1, 0.5)[0] == pytest.approx(150 + beta * (0.5 - 0.6))


def test_theta_as_a_list_takes_the_worst_case() -> None:
    fw = DatasetAttributeFramework(
        pairs=pairs_from_sets("a", ["0", "1"]), domains=(AttributeDomain("a"),), n=10
    )
    Vs = np.array([[[1.0, 0.5], [0.5, 1.0]], [[2.0, 0.5], [0.5, 4.0]]])
    cal = AttributeGaussianMechanism(EpsDelta(EPS, DELTA)).calibrate(
        fw, GaussianTheta(("a", "b"), Vs), "b"
    )
    assert cal.sensitivity == pytest.approx(0.5)  # max(0.5/1, 0.5/2) · d(U) = 1
    assert cal.conditional_variance == pytest.approx(min(1 - 0.25, 4 - 0.125) / 10)


def test_covariance_ranges_attain_their_extremes_at_vertices() -> None:
    """Δ and min Var over a box of covariance entries equal the max / min over a fine grid of
    the box's valid (positive definite) points."""
    fw = DatasetAttributeFramework(
        pairs=pairs_from_sets("a", ["0", "1"]), domains=(AttributeDomain("a"),), n=5
    )
    lo = np.array([[0.5, 0.1], [0.1, 2.0]])
    hi = np.array([[1.0, 0.4], [0.4, 3.0]])
    theta = GaussianTheta.from_ranges(("a", "b"), lo, hi, sensitive="a", query=["b"])
    cal = AttributeGaussianMechanism(EpsDelta(EPS, DELTA)).calibrate(fw, theta, "b")
    grid = np.linspace(0, 1, 21)
    vii = 0.5 + 0.5 * grid[:, None, None]
    vij = 0.1 + 0.3 * grid[None, :, None]
    vjj = 2.0 + 1.0 * grid[None, None, :]
    assert cal.sensitivity == pytest.approx(float(np.max(np.abs(vij) / vii)))
    assert cal.conditional_variance == pytest.approx(float(np.min(vjj - vij**2 / vii)) / 5)


def test_vector_query_uses_l2_sensitivity_and_covariance_top_up() -> None:
    fw = hospital_framework()
    mech = AttributeGaussianMechanism(EpsDelta(EPS, DELTA), rule="exact")
    q = ["weight", "blood_pressure", "temperature"]
    cal = mech.calibrate(fw, hospital_theta(), q, pair_distance="centres")
    assert cal.sensitivity == pytest.approx(0.25 * math.sqrt(24.5**2 + 10**2 + 0.3**2))
    floor = np.diag([4.5, 2.0, 0.08])
    target = (cal.sensitivity / gdp_mu(EPS, DELTA)) ** 2
    assert np.linalg.eigvalsh(floor + cal.noise_covariance)[0] == pytest.approx(target, rel=1e-9)
    assert np.allclose(np.diag(cal.noise_covariance), target - np.diag(floor))
    assert cal.mu == pytest.approx(gdp_mu(EPS, DELTA), rel=1e-9)
    out = cal.release([161.0, 102.0, 98.6], 0)
    assert out.values.shape == (3,)


def test_general_form_from_conditional_moments() -> None:
    """Eq. (1) over a finite Θ: max over θ and pairs of the mean difference; the floor is the
    least conditional variance (Alg. 1), also when it varies with the secret."""
    means = [[0.0, 1.0, 3.0], [0.0, 2.0, 2.5]]  # 2 θ × 3 secrets
    variances = [[1.0, 1.0, 1.0], [0.5, 0.7, 0.6]]
    term = conditional_moments_term("g", means, variances, [(0, 1), (0, 2)])
    assert term.sensitivity == pytest.approx(3.0)
    assert term.floor[0, 0] == pytest.approx(0.5)
    cal = AttributeGaussianMechanism(EpsDelta(0.5, 1e-5), rule="classic").calibrate_moments(
        "g", means, variances, [(0, 1), (0, 2)]
    )
    assert cal.noise_variance == pytest.approx((classic_c(1e-5) * 3.0 / 0.5) ** 2 - 0.5)


def test_general_form_vector_and_several_sensitive_attributes() -> None:
    """Vector moments: ℓ2 distance; two sensitive attributes with different floors share one
    isotropic noise that covers both (L_i + Σ_Z ⪰ (cΔ_i/ε)² I for each i)."""
    means = np.array([[[0.0, 0.0], [3.0, 4.0]]])  # 1 θ × 2 secrets × k = 2
    covs = np.broadcast_to(np.diag([1.0, 2.0]), (1, 2, 2, 2))
    t1 = conditional_moments_term("g1", means, covs, [(0, 1)])
    assert t1.sensitivity == pytest.approx(5.0)
    assert np.allclose(t1.floor, np.diag([1.0, 2.0]))
    t2 = SensitivityTerm("g2", 2.0, np.diag([0.5, 0.1]))
    mech = AttributeGaussianMechanism(EpsDelta(1.0, 1e-5), rule="classic")
    cal = mech.calibrate_terms([t1, t2], ["a", "b"])
    r2 = (classic_c(1e-5)) ** 2
    expected = max(r2 * 25 - 1.0, r2 * 4 - 0.1)
    assert np.allclose(cal.noise_covariance, expected * np.eye(2))
    for t in (t1, t2):
        lam = np.linalg.eigvalsh(t.floor + cal.noise_covariance)[0]
        assert lam >= r2 * t.sensitivity**2 * (1 - 1e-12)
    assert cal.binding.attribute == "g1"
    with pytest.raises(DistPrivacyError, match="differ in size"):
        mech.calibrate_terms([t1, SensitivityTerm("g3", 1.0, [[1.0]])])


def test_secret_dependent_variance_warns_and_exact_delta_is_checked() -> None:
    """Thm 1 assumes Var(F | s, θ) constant in s. Equal variances: delta_with_moments is the
    μ-GDP δ; unequal: a warning, and δ equals ∫ (p − e^ε q)₊ computed by quadrature."""
    from scipy import integrate

    mech = AttributeGaussianMechanism(EpsDelta(1.0, 1e-3), rule="exact")
    eq = mech.calibrate_moments("g", [[0.0, 2.0]], [[1.0, 1.0]], [(0, 1)])
    assert not eq.warnings
    assert delta_with_moments(eq, [[0.0, 2.0]], [[1.0, 1.0]], [(0, 1)]) == pytest.approx(
        eq.delta_achieved, rel=1e-6
    )
    cal = mech.calibrate_moments("g", [[0.0, 2.0]], [[1.0, 3.0]], [(0, 1)])
    assert any(
        "varies with the secret" in w and w.category is AssumptionWarning for w in cal.warnings
    )
    got = delta_with_moments(cal, [[0.0, 2.0]], [[1.0, 3.0]], [(0, 1)])
    s2 = cal.noise_variance
    pa, pb = stats.norm(0.0, math.sqrt(1 + s2)), stats.norm(2.0, math.sqrt(3 + s2))

    def excess(x: float, p, q) -> float:
        return max(p.pdf(x) - math.e * q.pdf(x), 0.0)

    ref = max(
        integrate.quad(excess, -200, 200, args=(p, q), points=[0.0, 2.0], limit=500)[0]
        for p, q in ((pa, pb), (pb, pa))
    )
    assert got == pytest.approx(ref, abs=1e-8)


def test_no_correlation_needs_no_noise() -> None:
    term = SensitivityTerm("g", 0.0, [[1.0]])
    cal = AttributeGaussianMechanism(EpsDelta(EPS, DELTA)).calibrate_terms([term])
    assert not cal.adds_noise and cal.mu == 0.0 and cal.expected_error == 0.0


def test_problem_from_dict_and_file(tmp_path) -> None:
    raw = {
        "sensitive": "gender",
        "query": "blood_pressure",
        "n": 50,
        "binary": True,
        "parameter_range": [0.25, 0.75],
        "secrets": ["(0.25,0.5)", "(0.5,0.75)"],
        "slopes": {"blood_pressure": [6, 10]},
        "residual_variances": {"blood_pressure": 100},
        "epsilon": 1,
        "delta": 0.001,
        "rule": "classic",
        "pair_distance": "centres",
    }
    cal = GaussianProblem.from_dict(raw).calibrate()
    assert (cal.sensitivity, cal.conditional_variance) == pytest.approx((2.5, 2.0))
    f = tmp_path / "p.toml"
    f.write_text(
        'sensitive = "gender"\nquery = ["w"]\nn = 10\nsecrets = [0, 1]\n'
        'attributes = ["gender", "w"]\ncovariances = [[1.0, 0.5], [0.5, 1.0]]\n'
    )
    cal2 = GaussianProblem.from_file(str(f)).calibrate(EpsDelta(1, 1e-3))
    assert cal2.sensitivity == pytest.approx(0.5)


def test_wasserstein_on_gaussian_problems() -> None:
    """W = max_θ ‖β_θ‖₁ d(U): the hospital's Δ for a scalar query, the ℓ1 sum for a vector
    one; a covariance list gives the same W as the regression form of its worst θ."""
    raw = {
        "sensitive": "gender",
        "query": ["weight", "blood_pressure"],
        "n": 50,
        "binary": True,
        "parameter_range": [0.25, 0.75],
        "secrets": ["(0.25,0.5)", "(0.5,0.75)"],
        "slopes": {"weight": [-24.5, -9], "blood_pressure": [6, 10]},
        "residual_variances": {"weight": 225, "blood_pressure": 100},
        "pair_distance": "centres",
    }
    w = GaussianProblem.from_dict(raw).calibrate_wasserstein(epsilon=0.5)
    assert w.sensitivity == pytest.approx(0.25 * (24.5 + 10))
    assert w.scale == pytest.approx(0.25 * 34.5 / 0.5)
    V = np.array([[0.24, -5.88, 2.4], [-5.88, 369.06, -58.8], [2.4, -58.8, 124.0]])
    cov_raw = {k: v for k, v in raw.items() if k not in ("slopes", "residual_variances")}
    cov_raw |= {"attributes": ["gender", "weight", "blood_pressure"], "covariances": V.tolist()}
    w2 = GaussianProblem.from_dict(cov_raw).calibrate_wasserstein(epsilon=0.5)
    assert w2.sensitivity == pytest.approx(w.sensitivity)
    with pytest.raises(DistPrivacyError, match="give epsilon"):
        GaussianProblem.from_dict(raw).calibrate_wasserstein()


# ---------------------------------------------------------------------------------------------
# Bad inputs: one-line errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "delta", "rule", "match"),
    [
        (0.0, 1e-3, "exact", "epsilon must be"),
        (-1.0, 1e-3, "exact", "epsilon must be"),
        (1.0, 0.0, "exact", r"delta must lie in \(0, 1\)"),
        (1.0, 1.0, "exact", r"delta must lie in \[0, 1\)"),
        (1.0, 1e-3, "rdp", "unknown calibration rule"),
    ],
)
def test_bad_privacy_parameters(epsilon: float, delta: float, rule: str, match: str) -> None:
    with pytest.raises(DistPrivacyError, match=match):
        AttributeGaussianMechanism(EpsDelta(epsilon, delta), rule=rule)


def test_the_loose_form_is_refused_naming_the_target(tmp_path) -> None:
    """The form before issue 32 (loose ε, δ) is refused in one line naming the new call; a
    problem without ε and δ of its own needs the target."""
    with pytest.raises(DistPrivacyError, match=r"AttributeGaussianMechanism\(EpsDelta\(1.0"):
        AttributeGaussianMechanism(epsilon=1.0, delta=1e-3)
    f = tmp_path / "p.toml"
    f.write_text(
        'sensitive = "gender"\nquery = ["w"]\nn = 10\nsecrets = [0, 1]\n'
        'attributes = ["gender", "w"]\ncovariances = [[1.0, 0.5], [0.5, 1.0]]\n'
    )
    problem = GaussianProblem.from_file(str(f))
    with pytest.raises(DistPrivacyError, match=r"calibrate\(EpsDelta"):
        problem.calibrate(epsilon=1.0, delta=1e-3)
    with pytest.raises(DistPrivacyError, match="give the target"):
        problem.calibrate()


def test_bad_variances_and_shapes() -> None:
    with pytest.raises(DistPrivacyError, match="variance of 'g' is negative"):
        SensitivityTerm("g", 1.0, [[-0.1]])
    with pytest.raises(DistPrivacyError, match="conditional variance of 'g' is negative"):
        conditional_moments_term("g", [[0.0, 1.0]], [[1.0, -1.0]], [(0, 1)])
    with pytest.raises(DistPrivacyError, match=r"expected \(1, 2, 1, 1\)"):
        conditional_moments_term("g", [[0.0, 1.0]], [[1.0, 1.0, 1.0]], [(0, 1)])
    with pytest.raises(DistPrivacyError, match="residual variance of 'w' given 'g'"):
        RegressionTheta({("g", "w"): (1, 2)}, {("g", "w"): -1.0})
    with pytest.raises(DistPrivacyError, match="not positive definite"):
        GaussianTheta(("g", "w"), [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(DistPrivacyError, match="variances on the covariance diagonal"):
        GaussianTheta(("g", "w"), [[-1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(DistPrivacyError, match=r"expected \(3, 3\)"):
        GaussianTheta(("g", "w", "x"), [[1.0, 0.2], [0.2, 1.0]])
    with pytest.raises(DistPrivacyError, match="must be symmetric"):
        GaussianTheta(("g", "w"), [[1.0, 0.2], [0.3, 1.0]])
    with pytest.raises(DistPrivacyError, match=r"vertex .* is not positive definite"):
        GaussianTheta.from_ranges(
            ("g", "w"),
            [[0.2, 0.1], [0.1, 0.1]],
            [[0.25, 0.3], [0.3, 2]],
            sensitive="g",
            query=["w"],
        )
    with pytest.raises(DistPrivacyError, match=r"has shape \(2,\), expected \(1,\)"):
        calibrate("weight").release([1.0, 2.0], 0)


def test_bad_problem_statements() -> None:
    mech = AttributeGaussianMechanism(EpsDelta(EPS, DELTA))
    fw = hospital_framework()
    with pytest.raises(DistPrivacyError, match="unknown attribute 'height'"):
        mech.calibrate(fw, GaussianTheta(("gender", "w"), np.eye(2)), "height")
    with pytest.raises(DistPrivacyError, match="released attributes include the sensitive"):
        mech.calibrate(fw, GaussianTheta(("gender", "w"), np.eye(2)), ["gender"])
    with pytest.raises(DistPrivacyError, match="gives no slope"):
        mech.calibrate(fw, hospital_theta(), "height")
    dist = DistributionalAttributeFramework(
        pairs=pairs_from_sets("gender", ["0.3", "0.6"], kind="distributional"),
        domains=(AttributeDomain("gender", binary=True, parameter_range=(0.25, 0.75)),),
        n=50,
    )
    with pytest.raises(DistPrivacyError, match=r"to_dataset\(\)"):
        mech.calibrate(dist, hospital_theta(), "weight")
    # the §3 route works
    assert mech.calibrate(dist.to_dataset(), hospital_theta(), "weight").sensitivity > 0
    with pytest.raises(DistPrivacyError, match="exactly one form"):
        GaussianProblem.from_dict({"sensitive": "g", "query": "w", "n": 5, "secrets": [0, 1]})
    with pytest.raises(DistPrivacyError, match="unknown key"):
        GaussianProblem.from_dict({"sensitive": "g", "colour": 1})
