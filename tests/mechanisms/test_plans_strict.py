"""Plans check themselves and their schema (issues 20 and 21.3): the bypasses, refused."""

from __future__ import annotations

import copy
import json
import math
import os
import stat

import numpy as np
import pytest
from plan_fixtures import SPEC, STATISTICS, make_plan

from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms.plans import Plan, PlanError, _digest
from distprivacy.targets import EpsDelta


@pytest.fixture(scope="module")
def plan(adult):
    return make_plan(adult)


def _redigest(raw: dict) -> dict:
    raw["digest"] = _digest({k: v for k, v in raw.items() if k not in ("digest", "seal")})
    return raw


def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg and msg
    return msg


def test_less_noise_re_digested_is_refused_by_the_self_check(plan):
    """Issue 20's bypass: 10× less noise, digest recomputed, the stated μ left as it was."""
    raw = copy.deepcopy(plan.to_dict())
    c = raw["calibration"]
    c["noise"]["scales"] = [s / 10 for s in c["noise"]["scales"]]
    c["noise_scales"] = [s / 10 for s in c["noise_scales"]]
    c["noise_covariance"] = (np.asarray(c["noise_covariance"]) / 100).tolist()
    with pytest.raises(PlanError, match=r"states μ = 0\.21") as e:
        Plan.from_dict(_redigest(raw))
    msg = _one_line(e)
    # the recomputed μ is the Mahalanobis distance of the stored model under the new noise
    m = plan.model
    d = m.means_[0] - m.means_[1]
    S = (m.covariances_[0] + m.covariances_[1]) / 2 + np.asarray(c["noise_covariance"])
    true_mu = math.sqrt(d @ np.linalg.solve(S, d))
    assert true_mu > 3 * plan.guarantee.mu
    assert f"{true_mu:.6g}" in msg


def test_an_untouched_plan_passes_its_self_check(plan, tmp_path):
    loaded = Plan.load(plan.save(tmp_path / "p.json"))
    assert loaded.guarantee == plan.guarantee


def test_a_raised_stated_delta_with_less_noise_is_refused(plan):
    """Editing the stated figures along with the noise does not help: the stated δ is checked
    against the exact profile of the stored model with the stored noise."""
    raw = copy.deepcopy(plan.to_dict())
    c = raw["calibration"]
    c["noise"]["scales"] = [s / 2 for s in c["noise"]["scales"]]
    c["noise_scales"] = [s / 2 for s in c["noise_scales"]]
    c["noise_covariance"] = (np.asarray(c["noise_covariance"]) / 4).tolist()
    with pytest.raises(DistPrivacyError) as e:
        Plan.from_dict(_redigest(raw))
    _one_line(e)


def _edited(plan, path: str, value):
    raw = copy.deepcopy(plan.to_dict())
    keys = path.split(".")
    node = raw
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return _redigest(raw)


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("calibration.delta", 2, "calibration.delta"),
        ("calibration.delta", True, "calibration.delta"),
        ("calibration.epsilon", -1.0, "calibration.epsilon"),
        ("mechanism", "NoNoise", "mechanism"),
        ("mechanism", "Bogus", "mechanism"),
        ("spec.n", 100.0, "spec.n"),
        ("spec.n", True, "spec.n"),
        ("spec", None, "spec"),
        ("statistics", "mean(age)", "statistics"),
        ("format_version", True, "format_version"),
        ("calibration.mu", math.nan, "calibration.mu"),
        ("calibration.delta_achieved", math.inf, "calibration.delta_achieved"),
        ("calibration.details", {"x": [1.0, math.nan]}, "calibration.details.x[1]"),
        ("calibration.noise_covariance", [[1.0, 0.0]], "calibration.noise_covariance"),
        ("calibration.statistics", ["mean(age)"], "calibration.statistics"),
        ("calibration.noise.scales", [0.0], "calibration"),
        ("model.n", False, "model.n"),
        ("columns", "age", "columns"),
    ],
)
def test_malformed_plans_are_refused_naming_the_key(plan, path, value, named):
    raw = _edited(plan, path, value)
    with pytest.raises(PlanError) as e:
        Plan.from_dict(raw)
    assert named in _one_line(e)


def test_a_spec_without_a_property_and_odd_theta_shapes(plan):
    raw = copy.deepcopy(plan.to_dict())
    del raw["spec"]["property"]
    with pytest.raises(PlanError, match="spec"):
        Plan.from_dict(_redigest(raw))
    raw = copy.deepcopy(plan.to_dict())
    raw["model"]["thetas"][1]["mean"] = [1.0, 2.0, 3.0]
    with pytest.raises(PlanError, match=r"model.thetas\[1\].mean"):
        Plan.from_dict(_redigest(raw))


def test_deep_documents_are_refused_before_parsing(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(PlanError, match="nested 100000 levels") as e:
        Plan.load(path)
    _one_line(e)
    # and a deep value handed over in Python (no parser involved)
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    raw = {"format": "distprivacy-plan", "modelling": deep}
    with pytest.raises(PlanError):
        Plan.from_dict(raw)


def test_a_nonoise_plan_round_trips_and_a_noisy_one_cannot_claim_nonoise(plan):
    raw = copy.deepcopy(plan.to_dict())
    raw["mechanism"] = raw["calibration"]["name"] = "NoNoise"
    with pytest.raises(PlanError, match='mechanism is "NoNoise" but the calibration adds noise'):
        Plan.from_dict(_redigest(raw))
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import GaussianModel

    model = GaussianModel(
        thetas=["a", "b"],
        means=[[1.0, 2.0], [1.0, 2.0]],
        covariances=[np.eye(2), np.eye(2)],
        pairs=[("a", "b")],
        statistic_names=["s1", "s2"],
    )
    cal = make_mechanism("NoNoise", EpsDelta(0.5, 1e-3)).calibrate(model)
    plan = Plan.from_calibration(cal, model)
    assert Plan.from_dict(plan.to_dict()).calibration.mechanism == "NoNoise"


def test_api_argument_types_are_one_line_errors(plan, tmp_path):
    for bad in (3, None, b"", ["p.json"]):
        with pytest.raises(DistPrivacyError):
            Plan.load(bad)  # type: ignore[arg-type]
        with pytest.raises(DistPrivacyError):
            plan.save(bad)  # type: ignore[arg-type]
    for bad in (None, 3, "x"):
        with pytest.raises(DistPrivacyError):
            Plan.from_calibration(bad)  # type: ignore[arg-type]
    for bad in (None, [], "plan", {"format": "distprivacy-plan"}):
        with pytest.raises(DistPrivacyError):
            Plan.from_dict(bad)  # type: ignore[arg-type]


def test_plan_files_are_private_and_never_written_over_a_non_regular_path(plan, tmp_path):
    path = plan.save(tmp_path / "p.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(DistPrivacyError):
        plan.save(fifo)
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(DistPrivacyError):
        plan.save(tmp_path / "dir.json")
    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(DistPrivacyError):
        plan.save(link)
    assert target.read_text() == "keep"


def test_saved_json_is_the_loaded_plan(plan, tmp_path):
    sealed = plan.seal(bytes(32))
    raw = json.loads(sealed.save(tmp_path / "s.json").read_text())
    assert raw["seal"] == sealed.seal_mac


def test_a_release_needs_only_the_statistics_columns(plan, adult):
    target = adult.iloc[:100]
    stats_only = target[["age", "hours_per_week"]]
    assert plan.statistic_columns() == ("age", "hours_per_week")
    np.testing.assert_array_equal(plan.target_values(stats_only), plan.target_values(target))
    with pytest.raises(PlanError, match="income") as e:
        plan.target_values(stats_only, require_property=True)
    _one_line(e)
    assert plan.target_values(target, require_property=True).shape == (2,)


def test_means_moved_closer_are_refused_by_the_self_check(plan):
    """Issue 30's R2: the θ means 10× closer (digest recomputed, stated guarantee unchanged).
    The plan is consistent with itself in one direction only — its numbers now give a *smaller*
    μ than it states — and the two-sided self-check refuses it: the release would be accounted
    on a model that is not the one calibrated."""
    raw = copy.deepcopy(plan.to_dict())
    thetas = raw["model"]["thetas"]
    means = np.asarray([t["mean"] for t in thetas], dtype=float)
    centre = means.mean(axis=0)
    for t, m in zip(thetas, centre + (means - centre) / 10, strict=True):
        t["mean"] = m.tolist()
    with pytest.raises(PlanError, match="not the guarantee it states") as e:
        Plan.from_dict(_redigest(raw))
    assert "states μ = 0.21" in _one_line(e)


@pytest.mark.parametrize("mechanism", ["DauM-G", "ExpM-G", "DirM-G", "EigM-G", "GroupDP-G"])
def test_every_gaussian_plan_passes_the_two_sided_self_check(adult, mechanism, tmp_path):
    """ExpM-G and DirM-G state their theorem's μ* (the noise alone), the others the model's
    μ: each is recomputed the way it was stated, so an untouched plan always loads."""
    made = make_plan(adult, mechanism)
    assert Plan.load(made.save(tmp_path / "p.json")).guarantee == made.guarantee


@pytest.mark.parametrize(
    ("mechanism", "rule"),
    [("GroupDP-G", "exact"), ("GroupDP-G", "classic"), ("GroupDP-L", "exact")],
)
def test_group_dp_plans_are_checked_by_their_own_theorem(adult, mechanism, rule, tmp_path):
    """A group-DP plan's guarantee holds for every input, so a ledger composes its releases as
    such: the self-check recomputes it from the stored noise, k and per-record sensitivities
    (μ = k·Δ₂/σ; ε = k·Δ₁/b), and an untouched plan of either rule loads."""
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import ExactModel
    from distprivacy.query import Query
    from distprivacy.request import GaussianOptions
    from distprivacy.spec import ProtectionSpec
    from distprivacy.targets import EpsDelta

    model = ExactModel().fit(adult, ProtectionSpec(*SPEC), Query.parse(STATISTICS))
    options = GaussianOptions(rule=rule) if rule != "exact" else None
    cal = make_mechanism(mechanism, EpsDelta(0.5, 1e-3), options).calibrate(model)
    made = Plan.from_calibration(cal, model, data=adult)
    assert Plan.load(made.save(tmp_path / "p.json")).guarantee == made.guarantee
    raw = copy.deepcopy(made.to_dict())
    c = raw["calibration"]
    c["noise"]["scales"] = [s / 4 for s in c["noise"]["scales"]]
    c["noise_scales"] = [s / 4 for s in c["noise_scales"]]
    if c.get("noise_covariance") is not None:
        c["noise_covariance"] = (np.asarray(c["noise_covariance"]) / 16).tolist()
    with pytest.raises(PlanError, match="not the guarantee it states") as e:
        Plan.from_dict(_redigest(raw))
    k = made.calibration.details["group_size"]
    sens = np.asarray(made.model.record_sensitivities_, float)
    b = made.calibration.noise.scales[0] / 4
    want = k * np.linalg.norm(sens) / b if mechanism == "GroupDP-G" else k * sens.sum() / b
    assert f"{want:.6g}" in _one_line(e)  # the theorem's figure for the edited noise


def test_a_model_based_plan_relabelled_as_group_dp_is_refused(plan):
    """The bypass of a plan that keeps its mechanism (DauM-G) and noise but claims the group-DP
    basis (so that a ledger would compose it as holding for every input, and the model-based
    self-check would be skipped): refused, naming the mechanism."""
    from distprivacy.mechanisms.calibration import BASIS_UNCONDITIONAL

    raw = copy.deepcopy(plan.to_dict())
    raw["calibration"]["basis"] = BASIS_UNCONDITIONAL
    raw["calibration"]["details"]["group_size"] = 100
    for g in (raw["guarantee"], raw["calibration"].get("guarantee") or {}):
        if "holds_for_every_input" in g:
            g["holds_for_every_input"] = True
    with pytest.raises(PlanError, match="edited") as e:
        Plan.from_dict(_redigest(raw))
    _one_line(e)


def test_a_group_dp_plan_renamed_to_a_model_based_mechanism_is_refused(adult):
    """A group-DP basis stays with the mechanisms whose theorem gives it: the same noise and
    guarantee under another mechanism's name is refused, naming it."""
    raw = copy.deepcopy(make_plan(adult, "GroupDP-G").to_dict())
    raw["calibration"]["name"] = raw["mechanism"] = "DauM-G"
    with pytest.raises(PlanError, match="DauM-G's guarantee rests on the model") as e:
        Plan.from_dict(_redigest(raw))
    _one_line(e)
