"""The Calibrator owns the strategy (issue 32, item 3): a Gaussian calibration is a pipeline of
small typed steps chosen by what the mechanism declares (``GaussianProperties``) and what the
user asked (``CalibrationOptions``), never by flags read inside ``_calibrate``; one top-up
search; NoNoise refused (never fixed) by its own declared property."""

from __future__ import annotations

import ast
import inspect
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import distprivacy as dp
from distprivacy.exceptions import DistPrivacyError, MoreNoiseWarning, NotApplicableError
from distprivacy.mechanisms import MECHANISMS, GaussianMechanism, GDPMechanism, make_mechanism
from distprivacy.mechanisms import _calibrator as calib
from distprivacy.mechanisms.calibration import (
    BASIS_EQUAL_COVARIANCES,
    BASIS_FITTED,
    BASIS_UNCONDITIONAL,
)
from distprivacy.models import GaussianModel
from distprivacy.noise import NoiseDistribution
from distprivacy.request import GaussianOptions
from distprivacy.targets import GDP, EpsDelta

EXACT_FITTED = calib.CalibrationOptions("exact", "fitted", True, "average")
EXACT_POOLED = calib.CalibrationOptions("exact", "pooled", True, "average")
POOLED_UNCHECKED = calib.CalibrationOptions("exact", "pooled", False, "average")
CLASSIC = calib.CalibrationOptions("classic", "fitted", True, "own")


def _types(steps) -> list[str]:
    return [type(s).__name__ for s in steps]


@pytest.mark.parametrize(
    ("properties", "options", "epsilon_given", "expected"),
    [
        (calib.GaussianProperties(), EXACT_FITTED, True,
         ["Propose", "EnforceFitted", "VerifyFitted", "AccountModelMu", "ShortfallNotice",
          "SetBasis"]),
        (calib.GaussianProperties(), EXACT_FITTED, False,
         ["Propose", "EnforceFitted", "VerifyFitted", "AccountModelMu", "SetBasis"]),
        (calib.GaussianProperties(needs_invertible=True, adds_noise=False), EXACT_FITTED, True,
         ["RequireInvertible", "Propose", "RefuseUnfitted", "VerifyFitted", "AccountModelMu",
          "ShortfallNotice", "SetBasis"]),
        (calib.GaussianProperties(guarantee="theorem"), EXACT_POOLED, True,
         ["Propose", "VerifyFitted", "NoteSupportMismatch", "AccountTheoremMu",
          "ShortfallNotice", "SetBasis"]),
        (calib.GaussianProperties(), POOLED_UNCHECKED, False,
         ["Propose", "AccountModelMu", "SetBasis"]),
        (calib.GaussianProperties(), CLASSIC, True,
         ["Propose", "VerifyFitted", "NoteSupportMismatch", "AccountModelMu", "ClassicCaveat",
          "ShortfallNotice", "SetBasis"]),
        (calib.GaussianProperties(guarantee="every-input"), EXACT_FITTED, True,
         ["Propose", "AccountTheoremMu", "ShortfallNotice", "SetBasis"]),
        (calib.GaussianProperties(guarantee="every-input", needs_invertible=True), CLASSIC, False,
         ["RequireInvertible", "Propose", "AccountTheoremMu", "ClassicCaveat", "SetBasis"]),
    ],
)  # fmt: skip
def test_steps_follow_the_declared_properties_and_the_options(
    properties, options, epsilon_given, expected
):
    steps = calib.steps_for(properties, options, epsilon_given)
    assert _types(steps) == expected
    assert all(isinstance(s, calib.Calibrator.STEP_TYPES) for s in steps)
    basis = steps[-1].basis
    if not properties.reads_model:
        assert basis == BASIS_UNCONDITIONAL
    elif "EnforceFitted" in expected or "RefuseUnfitted" in expected:
        assert basis == BASIS_FITTED
        assert any(isinstance(s, calib.VerifyFitted) and s.enforced for s in steps)
    else:
        assert basis == BASIS_EQUAL_COVARIANCES


def test_every_step_names_the_result_it_implements():
    for step in calib.Calibrator.STEP_TYPES:
        doc = inspect.getdoc(step) or ""
        assert doc, step
    named = ("Thm", "Theorem", "Cor.", "Algorithm", "Dong", "Balle", "Dwork", "BASIS")
    for step in calib.Calibrator.STEP_TYPES:
        if step is not calib.Propose:  # Propose runs the mechanism's own `theorem`
            assert any(w in inspect.getdoc(step) for w in named), step


# -- a test mechanism declaring properties gets the right steps --------------------------------


class _Declared(GaussianMechanism):
    """Isotropic σ = Δ/μ*, μ by the Gaussian mechanism's theorem, Σ_θ⁻¹ required (a test)."""

    name = "Declared-G"
    theorem = "test: Dong, Roth & Su 2019, Thm 2.7"
    properties = calib.GaussianProperties(needs_invertible=True, guarantee="theorem")

    def propose(self, model, mu, convention):
        d2 = float(np.linalg.norm(model.mean_differences(), axis=1).max())
        noise = NoiseDistribution.isotropic("gaussian", model.dim, d2 / mu)
        return calib.Proposal.of(noise, sensitivity=d2, details={"sigma": d2 / mu})


def _model(cov_b: float = 1.0) -> GaussianModel:
    return GaussianModel(
        ["a", "b"], [[0.0, 0.0], [1.0, 0.5]], [np.eye(2), cov_b * np.eye(2)], [("a", "b")]
    )


def test_a_declared_mechanism_gets_its_steps_and_a_verified_calibration():
    model = _model()
    mech = _Declared(EpsDelta(1.0, 1e-3))
    assert _types(mech.calibrator(model).steps) == [
        "RequireInvertible", "Propose", "EnforceFitted", "VerifyFitted", "AccountTheoremMu",
        "ShortfallNotice", "SetBasis",
    ]  # fmt: skip
    cal = mech.calibrate(model)
    assert cal.verified and cal.basis == BASIS_FITTED
    # Equal covariances: no fix, and μ is the theorem's μ* (Δ/σ), the target itself.
    assert cal.mu == pytest.approx(mech.target_mu(), rel=1e-12)
    assert cal.delta_achieved <= 1e-3 * (1 + 1e-9)
    assert cal.details["sigma"] == pytest.approx(1.25**0.5 / mech.target_mu(), rel=1e-12)
    pooled = _Declared(
        EpsDelta(1.0, 1e-3), GaussianOptions(covariances="pooled", check_profile=False)
    )
    assert _types(pooled.calibrator(model).steps) == [
        "RequireInvertible", "Propose", "AccountTheoremMu", "ShortfallNotice", "SetBasis",
    ]  # fmt: skip


def test_require_invertible_runs_before_anything_is_proposed():
    singular = GaussianModel(
        ["a", "b"], [[0.0, 0.0], [1.0, 0.0]], [np.diag([1.0, 0.0])] * 2, [("a", "b")]
    )
    with pytest.raises(dp.DistPrivacyError):
        _Declared(EpsDelta(1.0, 1e-3)).calibrate(singular)


def test_unequal_covariances_are_fixed_with_more_noise_and_verified():
    model = _model(cov_b=3.0)
    mech = _Declared(EpsDelta(1.0, 1e-3))
    cal = mech.calibrate(model)
    assert any(w.category is MoreNoiseWarning for w in cal.warnings)
    assert cal.verified and cal.accounting.unequal["delta_at_epsilon"] <= 1e-3 * (1 + 1e-9)


def test_nonoise_is_refused_never_fixed():
    """Equal means (Thm 4.4's test passes at any μ*) but unequal covariances: the release of
    F(D) itself misses the target under the fitted Gaussians. NoNoise is refused with the
    figure; a mechanism that adds noise is fixed on the same model."""
    model = GaussianModel(
        ["a", "b"], [[0.0, 0.0], [0.0, 0.0]], [np.eye(2), 4 * np.eye(2)], [("a", "b")]
    )
    with pytest.raises(NotApplicableError, match=r"no noise of its form meets the target .*δ = "):
        make_mechanism("NoNoise", EpsDelta(1.0, 1e-3)).calibrate(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = make_mechanism("ExpM-G", EpsDelta(1.0, 1e-3)).calibrate(model)
    assert cal.verified and cal.details["unequal_covariance_top_up"] > 0


# -- no flags left ------------------------------------------------------------------------------

FLAGS = ("requires_invertible", "checks_model_profile", "no_noise_fix", "_guarantee_mu")


def test_no_calibrate_flags_remain():
    """Neither the base nor any registered Gaussian mechanism carries the old flags or hook, and
    ``GDPMechanism._calibrate`` reads nothing of the mechanism but its calibrator and its
    rule: the strategy is the Calibrator's."""
    gaussian = [c for c in MECHANISMS.values() if c.targets_gdp]
    assert len(gaussian) >= 7
    for cls in [GDPMechanism, GaussianMechanism, *gaussian]:
        assert not [f for f in FLAGS if hasattr(cls, f)], cls
        assert "_calibrate" not in vars(cls) or cls is GDPMechanism, cls
        assert isinstance(cls.properties, calib.GaussianProperties)
    src = textwrap.dedent(inspect.getsource(GDPMechanism._calibrate))
    fn = ast.parse(src).body[0]
    read = {
        n.attr
        for n in ast.walk(fn)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }
    assert read <= {"calibrator", "_make", "calibration"}, read
    branches = [n for n in ast.walk(fn) if isinstance(n, ast.If | ast.IfExp | ast.BoolOp)]
    assert not branches


def test_the_declared_properties_of_the_builtins():
    P = {n: MECHANISMS[n].properties for n in MECHANISMS if MECHANISMS[n].targets_gdp}
    assert P["NoNoise"] == calib.GaussianProperties(needs_invertible=True, adds_noise=False)
    assert P["DauM-G"] == calib.GaussianProperties(needs_invertible=True)
    # ExpM-G and DirM-G state the μ of their noise on the model, not their target μ* (issue 33).
    assert P["ExpM-G"] == P["DirM-G"] == calib.GaussianProperties()
    assert P["GroupDP-G"].guarantee == "every-input"
    assert P["EigM-G"] == P["OptM-G"] == calib.GaussianProperties()


# -- one top-up search ---------------------------------------------------------------------------


@pytest.mark.parametrize("search", [calib.CERTIFY, calib.VERIFY])
def test_least_top_up_brackets_the_boundary_from_above(search):
    boundary = 0.3721
    calls = []

    def feasible(tau):
        calls.append(tau)
        return tau >= boundary, tau

    tau, payload = calib.least_top_up(feasible, search)
    assert tau == payload >= boundary
    assert tau - boundary <= search.rtol * tau * 1.0000001 + 1e-15
    assert calib.least_top_up(lambda t: (False, None), search) is None


@pytest.mark.parametrize("search", [calib.CERTIFY, calib.VERIFY])
def test_least_top_up_gives_up_only_when_told_and_is_otherwise_the_same_search(search):
    """``hopeless`` is asked of the infeasible τ only; until it says so the search visits the
    same τ and returns the same answer; when it does, None. Every τ found infeasible lies below
    the τ returned (what lets a caller give a search up on its cost)."""
    boundary = 0.3721

    def run(hopeless):
        seen = []

        def feasible(tau):
            seen.append(tau)
            return tau >= boundary, tau

        return calib.least_top_up(feasible, search, hopeless), seen

    (tau, _), plain = run(None)
    asked = []
    (same, _), seen = run(lambda t: asked.append(t) or False)
    assert same == tau and seen == plain
    assert asked == [t for t in plain if t < boundary] and max(asked) < tau
    cut, seen = run(lambda t: t > boundary / 2)
    assert cut is None and len(seen) < len(plain)


@pytest.fixture(scope="module")
def adult_fitted(adult):
    """The default `calibrate`'s model of Adult (its spec, statistics and modelling)."""
    from distprivacy.models import fit_model
    from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
    from distprivacy.request import Modelling
    from distprivacy.spec import ProtectionSpec

    m = Modelling()
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    return fit_model(adult, spec, Query.parse(ADULT_DEFAULT_STATISTICS), method=m.method,
                     n_samples=m.samples, random_state=m.seed)  # fmt: skip


def test_top_up_given_up_against_a_cheaper_lowered_mu_changes_nothing(adult_fitted):
    """fix(): the top-up is searched only while it could still cost less than the lowered μ*
    (which wins a tie); with the bound or without it, each mechanism's fix is the same (on
    the default `calibrate`'s model, where DirM-G and DauM-G lower μ* and EigM-G tops up)."""
    fixed = 0
    for name in ("DirM-G", "DauM-G", "EigM-G"):
        mech = make_mechanism(name, EpsDelta(1.0, 1e-3), GaussianOptions())
        cal = mech.calibrator(adult_fitted)
        proposal = cal.propose(cal.target.mu)
        if not cal.misses(proposal.noise):
            continue
        lowered = cal.lower_mu()
        assert lowered is not None
        beat = cal.cost(lowered[0].noise)
        full = cal.top_up(proposal)
        bounded = cal.top_up(proposal, beat=beat)
        assert full is not None
        fixed += 1
        if cal.cost(full[0]) < beat:
            assert bounded is not None and bounded[1] == full[1]
            assert np.array_equal(bounded[0].covariance, full[0].covariance)
        else:
            assert bounded is None or bounded[1] == full[1]
    assert fixed == 3


def test_certify_and_verify_share_the_one_search():
    """certify_top_up (Cor. A.1 inside a proposal) and the fitted-profile fix both go through
    least_top_up; no other bisection on τ is left in the mechanisms."""
    from distprivacy.mechanisms import adversarial, gaussian, optimal

    assert "least_top_up(" in inspect.getsource(gaussian.certify_top_up)
    assert "least_top_up(" in inspect.getsource(calib.Calibrator.top_up)
    for mod in (gaussian, adversarial, optimal):
        src = inspect.getsource(mod)
        assert "bisect(" not in src and "expand(" not in src, mod.__name__


def test_no_noise_is_its_own_class_and_callers_ask_a_declared_property():
    """NoNoise (Thm 4.4) releases F(D) itself: a GDPMechanism, not a GaussianMechanism. Callers
    branch on the declared ``targets_gdp``, never on ancestry; a GaussianMechanism that declares
    ``adds_noise=False`` is refused when defined."""
    from distprivacy.mechanisms import NoNoise

    assert issubclass(NoNoise, GDPMechanism) and not issubclass(NoNoise, GaussianMechanism)
    assert NoNoise.targets_gdp and not NoNoise.properties.adds_noise
    gdp = {n for n, c in MECHANISMS.items() if c.targets_gdp}
    assert gdp == {n for n, c in MECHANISMS.items() if issubclass(c, GDPMechanism)}
    assert not any(c.targets_gdp for c in MECHANISMS.values() if not issubclass(c, GDPMechanism))
    for path in ("commands/calibrate.py", "experiments/paper.py", "workflow.py",
                 "mechanisms/__init__.py", "commands/_common.py"):  # fmt: skip
        text = (Path(dp.__file__).parent / path).read_text(encoding="utf-8")
        assert "issubclass(" not in text or "GaussianMechanism)" not in text, path
    with pytest.raises(DistPrivacyError, match="GDPMechanism"):

        class Silent(GaussianMechanism):
            properties = calib.GaussianProperties(adds_noise=False)

    cal = make_mechanism("NoNoise", GDP(1e6), GaussianOptions(report_delta=1e-3)).calibrate(
        _model()
    )
    assert not cal.adds_noise
