"""The audit: confidence intervals, the ε lower bound, its validity on exactly Gaussian data, a
deliberately wrong scale caught, the Adult audit and the CLI."""

from __future__ import annotations

import dataclasses
import json
import math
import zlib

import numpy as np
import pytest
from scipy import stats

from distprivacy.cli import main
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanism_audit import (
    ATTACKS,
    AttackAudit,
    AuditResult,
    audit,
    audit_calibrations,
    audit_model,
    clopper_pearson,
    epsilon_lower_bound,
    mechanism_random_state,
    worst_pair,
)
from distprivacy.mechanisms import make_mechanism
from distprivacy.models import ExactModel, GaussianModel
from distprivacy.noise import NoiseDistribution
from distprivacy.profiles import gdp_epsilon
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.randomness import check_random_state
from distprivacy.request import GaussianOptions
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

DELTA = 1e-3


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 50), (3, 50), (25, 50), (50, 50), (917, 10_000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    lo, hi = clopper_pearson(k, n, 0.05)
    ref = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    assert float(lo) == pytest.approx(ref.low, abs=1e-12)
    assert float(hi) == pytest.approx(ref.high, abs=1e-12)


def test_epsilon_lower_bound_formulas():
    # TPR = 0.5, FPR = 0.1, δ = 0: log(0.5/0.1) from E, log(0.9/0.5) from its complement.
    lb = epsilon_lower_bound(0.5, 0.5, 0.1, 0.1, 0.0)
    assert float(lb) == pytest.approx(math.log(5.0))
    lb = epsilon_lower_bound(0.5, 0.5, 0.1, 0.1, 0.05)
    assert float(lb) == pytest.approx(math.log(0.45 / 0.1))
    # Reversed roles (the attack predicts the other θ): the bound is symmetric.
    assert float(epsilon_lower_bound(0.1, 0.1, 0.5, 0.5, 0.0)) == pytest.approx(math.log(5.0))
    # No evidence: equal rates give ε ≥ 0 only.
    assert float(epsilon_lower_bound(0.3, 0.3, 0.3, 0.3, 0.0)) == pytest.approx(0.0)
    # Rates below δ: only the complement event speaks, and it says nothing (ε ≥ a negative).
    lb = epsilon_lower_bound(0.001, 0.001, 0.0, 0.0, 0.01)
    assert float(lb) == pytest.approx(math.log(0.99 / 0.999))
    # Both events' probabilities within δ of each other: no information at all.
    assert float(epsilon_lower_bound(0.004, 0.004, 0.0, 0.0, 0.01)) < 0


# --------------------------------------------------------------------------------------------
# On exactly Gaussian data: the bound is valid, the accuracy meets Φ(μ/2), a wrong scale is caught
# --------------------------------------------------------------------------------------------


def _gaussian_setting(seed: int, size: int = 20_000):
    rng = np.random.default_rng(seed)
    m = 3
    A = rng.normal(size=(m, m))
    S = A @ A.T + m * np.eye(m)
    d = rng.normal(size=m)
    d *= 1.5 / math.sqrt(d @ np.linalg.solve(S, d))  # no-noise μ = 1.5
    model = GaussianModel(["p1", "p2"], [np.zeros(m), d], [S, S], [("p1", "p2")])
    clean = (
        rng.multivariate_normal(np.zeros(m), S, size),
        rng.multivariate_normal(d, S, size),
    )
    moments = ([np.zeros(m), d], [S, S])
    return model, clean, moments


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_audit_bound_never_exceeds_the_true_epsilon_on_gaussian_data(seed):
    """Samples exactly from the model: the mechanism's true ε at δ is gdp_epsilon(δ, μ), and
    the audit's lower bound (valid with probability ≥ 1 − α) stays below it."""
    model, clean, moments = _gaussian_setting(seed)
    for name in ("DauM-G", "OptM-G", "ExpM-G"):
        cal = make_mechanism(
            name, EpsDelta(1.0, DELTA), GaussianOptions(covariances="pooled")
        ).calibrate(model)
        res = audit(cal, clean, model_moments=moments, random_state=seed, alpha=0.05)
        true_eps = gdp_epsilon(DELTA, cal.mu)
        assert true_eps <= 1.0 + 1e-6
        assert res.epsilon_lower_bound <= true_eps
        assert not res.refuted and not res.accuracy_exceeded


def test_likelihood_ratio_accuracy_is_the_exact_bound_on_gaussian_data():
    """With f_θ Gaussian and the noise Gaussian, the likelihood-ratio test *is* the optimal
    attack: its accuracy's interval covers Φ(μ/2)."""
    model, clean, moments = _gaussian_setting(7, size=40_000)
    cal = make_mechanism(
        "DauM-G", EpsDelta(1.0, DELTA), GaussianOptions(covariances="pooled")
    ).calibrate(model)
    res = audit(cal, clean, model_moments=moments, attacks=["likelihood-ratio"], random_state=3)
    [lr] = res.attacks
    bound = stats.norm.cdf(cal.mu / 2)
    assert res.accuracy_bound == pytest.approx(bound)
    assert lr.accuracy_interval[0] <= bound <= lr.accuracy_interval[1]


def test_a_deliberately_wrong_scale_is_caught():
    """The same calibration with a tenth of the noise scale: the audit refutes its claimed ε."""
    model, clean, moments = _gaussian_setting(1)
    cal = make_mechanism(
        "DauM-G", EpsDelta(1.0, DELTA), GaussianOptions(covariances="pooled")
    ).calibrate(model)
    wrong = dataclasses.replace(
        cal, noise=NoiseDistribution(cal.noise.family, cal.noise.basis, cal.noise.scales / 10)
    )
    res = audit(wrong, clean, model_moments=moments, random_state=0)
    assert res.refuted and res.epsilon_lower_bound > 1.0
    assert res.accuracy_exceeded
    honest = audit(cal, clean, model_moments=moments, random_state=0)
    assert not honest.refuted


def test_every_attack_runs_and_results_serialise():
    model, clean, _ = _gaussian_setting(2, size=2_000)
    cal = make_mechanism("ExpM-L", EpsDelta(1.0, 0.0)).calibrate(model)
    res = audit(
        cal, clean, attacks=ATTACKS, random_state=0
    )  # LR fitted to the noisy training split
    assert [a.attack for a in res.attacks] == list(ATTACKS)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["mechanism"] == "ExpM-L" and d["delta"] == 0.0
    assert d["accuracy_bound"] == pytest.approx(math.e / (1 + math.e))
    for a in res.attacks:
        assert 0.0 <= a.fpr <= 1.0 and 0.0 <= a.tpr <= 1.0
        assert a.fpr_interval[0] <= a.fpr <= a.fpr_interval[1]


@pytest.mark.parametrize(
    ("kwargs", "keyword"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"split": (0.5, 0.5)}, "split"),
        ({"split": (0.5, 0.6, -0.1)}, "split"),
        ({"attacks": ["svm"]}, "unknown attack"),
        ({"attacks": []}, "at least one attack"),
    ],
)
def test_bad_arguments(kwargs, keyword):
    model, clean, _ = _gaussian_setting(0, size=200)
    cal = make_mechanism("ExpM-L", EpsDelta(1.0, 0.0)).calibrate(model)
    with pytest.raises(DistPrivacyError, match=keyword):
        audit(cal, clean, **kwargs)


def test_bad_samples():
    model, (a, b), _ = _gaussian_setting(0, size=200)
    cal = make_mechanism("ExpM-L", EpsDelta(1.0, 0.0)).calibrate(model)
    with pytest.raises(DistPrivacyError, match="shape"):
        audit(cal, (a[:, :2], b))
    with pytest.raises(DistPrivacyError, match="at least 40"):
        audit(cal, (a[:10], b))
    bad = a.copy()
    bad[0, 0] = np.nan
    with pytest.raises(DistPrivacyError, match="NaN"):
        audit(cal, (bad, b))


# --------------------------------------------------------------------------------------------
# Adult
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult_setting(adult):
    spec = ProtectionSpec('income == ">50K"', 100, [0.45, 0.5, 0.55], pairs_within=0.05)
    query = Query.parse(ADULT_DEFAULT_STATISTICS)
    return spec, query, ExactModel().fit(adult, spec, query)


def test_worst_pair_is_the_largest_mahalanobis_distance(adult_setting):
    _, _, model = adult_setting
    cal = make_mechanism("ExpM-G", EpsDelta(1.0, DELTA)).calibrate(model)
    Z = cal.noise_covariance

    def q(i, j):
        d = model.means_[i] - model.means_[j]
        C = (model.covariances_[i] + model.covariances_[j]) / 2 + Z
        return d @ np.linalg.solve(C, d)

    i, j = worst_pair(model, cal)
    assert q(i, j) == pytest.approx(max(q(a, b) for a, b in model.pair_indices_))


@pytest.mark.parametrize("name", ["DauM-G", "OptM-G", "DirM-L"])
def test_adult_audit_is_consistent_with_the_claims(adult, adult_setting, name):
    spec, query, model = adult_setting
    cal = make_mechanism(name, EpsDelta(1.0, DELTA)).calibrate(model)
    res = audit_model(cal, model, adult, spec, query, samples_per_value=6_000, random_state=5)
    assert not res.refuted and not res.accuracy_exceeded
    assert res.epsilon_lower_bound <= 1.0
    assert res.pair[1] - res.pair[0] == pytest.approx(0.05)


@pytest.mark.parametrize("seed", [0, 11, 2**40 + 3])
@pytest.mark.parametrize("mechanism", ["DauM-G", "ExpM-L", "OptM-G"])
def test_mechanism_random_state_is_the_cli_stream(seed, mechanism):
    """The command line seeded each audit with default_rng([seed, crc32(name)])."""
    seq = mechanism_random_state(seed, mechanism)
    assert isinstance(seq, np.random.SeedSequence)
    ref = np.random.default_rng([seed, zlib.crc32(mechanism.encode())]).random(8)
    assert np.array_equal(check_random_state(seq, secure=False).random(8), ref)


def test_mechanism_random_state_refuses_a_bad_seed():
    for bad in (-1, 2**128, 1.5, True, "0"):
        with pytest.raises(DistPrivacyError, match="seed"):
            mechanism_random_state(bad, "DauM-G")


def test_audit_calibrations_reproduces_the_per_mechanism_seeding(adult, adult_setting):
    spec, query, model = adult_setting
    cals = [make_mechanism(m, EpsDelta(1.0, DELTA)).calibrate(model) for m in ("DauM-G", "ExpM-L")]
    calls = []
    kw = {"samples_per_value": 400, "attacks": ["likelihood-ratio", "logistic"], "alpha": 0.1}
    got = audit_calibrations(
        cals, model, adult, spec, query, random_state=7, progress=lambda *a: calls.append(a), **kw
    )
    assert calls == [(1, 2), (2, 2)]
    for cal, res in zip(cals, got, strict=True):
        crc = zlib.crc32(cal.mechanism.encode())
        ref = audit_model(
            cal, model, adult, spec, query, random_state=np.random.default_rng([7, crc]), **kw
        )
        assert res == ref
    # One mechanism's audit does not depend on which others are listed.
    alone = audit_calibrations(cals[1:], model, adult, spec, query, random_state=7, **kw)
    assert alone == got[1:]
    # None means seed 0 (the command line's default), reproducibly.
    a = audit_calibrations(cals[:1], model, adult, spec, query, random_state=None, **kw)
    b = audit_calibrations(cals[:1], model, adult, spec, query, random_state=0, **kw)
    assert a == b


def test_audit_calibrations_refuses_a_generator_as_seed(adult, adult_setting):
    spec, query, model = adult_setting
    cal = make_mechanism("DauM-G", EpsDelta(1.0, DELTA)).calibrate(model)
    with pytest.raises(DistPrivacyError, match="random_state"):
        audit_calibrations([cal], model, adult, spec, query, random_state=np.random.default_rng())


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def test_cli_audit_json(capsys, adult_dir, monkeypatch):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    rc = main(
        [
            "audit",
            "--mechanism",
            "DauM-G",
            "--mechanism",
            "ExpM-L",
            "--modeling",
            "exact",
            "--audit-samples",
            "2000",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    d = json.loads(out)
    assert [a["mechanism"] for a in d["audits"]] == ["DauM-G", "ExpM-L"]
    assert d["refuted"] == [] and d["seed"] == 0
    for a in d["audits"]:
        assert {x["attack"] for x in a["attacks"]} == {"likelihood-ratio", "logistic", "boosting"}


def test_cli_audit_human_readable(capsys, adult_dir, monkeypatch):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.setenv("COLUMNS", "200")
    rc = main(["audit", "--mechanism", "OptM-G", "--modeling", "exact", "--audit-samples", "1000"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Empirical lower bounds on ε" in out and "OptM-G" in out
    # Not refuted: "consistent", or — when the best attack's accuracy is above the bound but
    # its interval is not wholly above — said so in words that follow the numbers (issue 33).
    assert "consistent" in out or "(above bound, not significantly)" in out


def test_cli_audit_refuted_exits_1(capsys, adult_dir, monkeypatch):
    """A refuted claim makes the command fail (exit status 1), e.g. for use in CI."""
    import distprivacy.mechanism_audit as audit_module

    real = audit_module.audit_model

    def sabotaged(cal, *args, **kwargs):
        wrong = dataclasses.replace(
            cal, noise=NoiseDistribution(cal.noise.family, cal.noise.basis, cal.noise.scales / 20)
        )
        return real(wrong, *args, **kwargs)

    monkeypatch.setattr(audit_module, "audit_model", sabotaged)
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    rc = main(
        [
            "audit",
            "--mechanism",
            "DauM-G",
            "--modeling",
            "exact",
            "--audit-samples",
            "4000",
            "--json",
        ]
    )
    d = json.loads(capsys.readouterr().out)
    assert rc == 1 and d["refuted"] == ["DauM-G"]


@pytest.mark.parametrize(
    ("args", "keyword"),
    [
        (["--alpha", "2"], "--alpha"),
        (["--audit-samples", "10"], "--audit-samples"),
        (["--model", "x.json"], "--model"),
    ],
)
def test_cli_audit_bad_input(capsys, args, keyword, tmp_path, monkeypatch):
    if args[0] == "--model":
        path = tmp_path / "m.json"
        path.write_text(
            json.dumps(
                {
                    "statistics": ["x"],
                    "thetas": [
                        {"label": "a", "mean": [0.0], "covariance": [[1.0]]},
                        {"label": "b", "mean": [1.0], "covariance": [[1.0]]},
                    ],
                    "pairs": [["a", "b"]],
                }
            )
        )
        args = ["--model", str(path)]
    rc = main(["audit", "--mechanism", "DauM-G", *args])
    cap = capsys.readouterr()
    assert rc == 2
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in cap.err
    assert keyword.lstrip("-").split("-")[0] in lines[0]


@pytest.mark.slow
def test_cli_audit_of_a_mechanism_does_not_depend_on_the_others_listed(
    capsys, adult_dir, monkeypatch
):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    base = ["audit", "--modeling", "exact", "--audit-samples", "1000", "--json"]
    assert main([*base, "--mechanism", "DauM-G"]) == 0
    alone = json.loads(capsys.readouterr().out)["audits"][0]
    assert main([*base, "--mechanism", "ExpM-L", "--mechanism", "DauM-G"]) == 0
    listed = json.loads(capsys.readouterr().out)["audits"][1]
    assert listed["mechanism"] == "DauM-G" and listed == alone


def _accuracy_only_result(lower: float, bound: float) -> AuditResult:
    """An audit whose attack's accuracy interval starts at ``lower`` while its ε lower bound
    stays below the claim (the case the ε check alone misses)."""
    attack = AttackAudit(
        attack="likelihood-ratio",
        threshold=0.0,
        tpr=0.7,
        fpr=0.3,
        tpr_interval=(0.69, 0.71),
        fpr_interval=(0.29, 0.31),
        epsilon_lower_bound=0.5,
        accuracy=lower + 0.01,
        accuracy_interval=(lower, lower + 0.02),
        n_test=20_000,
    )
    return AuditResult("DauM-G", 1.0, 1e-3, (0.45, 0.55), bound, 0.05, (attack,))


def test_accuracy_interval_above_the_bound_refutes():
    """An accuracy interval wholly above the claimed maximum accuracy refutes the claim even
    when no attack's ε lower bound exceeds the claimed ε."""
    bad = _accuracy_only_result(lower=0.70, bound=0.62)
    assert bad.accuracy_exceeded and not bad.epsilon_exceeded and bad.refuted
    assert bad.to_dict()["refuted"] is True
    ok = _accuracy_only_result(lower=0.60, bound=0.62)
    assert not ok.accuracy_exceeded and not ok.refuted


def test_cli_audit_accuracy_above_bound_exits_1(capsys, adult_dir, monkeypatch):
    """The CLI exits 1 (and says REFUTED) when only the accuracy check fails."""
    import distprivacy.mechanism_audit as audit_module

    def fake(cal, *args, **kwargs):
        return _accuracy_only_result(lower=0.99, bound=cal.max_attack_accuracy)

    monkeypatch.setattr(audit_module, "audit_model", fake)
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    rc = main(["audit", "--mechanism", "DauM-G", "--modeling", "exact", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 1 and d["refuted"] == ["DauM-G"]
