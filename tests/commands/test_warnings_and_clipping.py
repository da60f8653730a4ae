"""Warnings that mean something (issue 23, item 3): the "swamped" caveat compares a statistic's
noise SD with the statistic's own spread across the datasets the model describes (its per-θ SD)
and, for a proportion or a count, with its range — the same test for every mechanism; and
``release`` post-processes proportions into [0, 1] and counts into [0, n] unless ``--no-clip``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from distprivacy.cli import main
from distprivacy.exceptions import SwampedWarning
from distprivacy.guarantee import publish
from distprivacy.mechanisms import make_mechanism
from distprivacy.mechanisms._swamped import statistic_ranges, swamped_statistics
from distprivacy.models import GaussianModel
from distprivacy.targets import EpsDelta

#: The caveat's opening words.
SWAMPED = SwampedWarning.prefix

STATS = "proportion:sex==Female,count:race==White,mean:age"


@pytest.fixture(autouse=True)
def _env(monkeypatch, adult_dir, tmp_path):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


def _swamped(cal) -> list[str]:
    return [str(w) for w in cal.warnings if getattr(w, "category", None) is SwampedWarning]


def _one_statistic(epsilon: float):
    """ExpM-G on one statistic whose mean moves by 1 between the two θ, sampling SD 1: the
    Gaussian noise must bring the Mahalanobis distance 1/√(1 + σ²) down to μ*(ε, δ)."""
    model = GaussianModel([0.4, 0.6], [[0.0], [1.0]], [[[1.0]], [[1.0]]], [(0.4, 0.6)], ["x"])
    return make_mechanism("ExpM-G", EpsDelta(epsilon, 1e-3)).calibrate(
        model
    )  # the library flags it


def test_swamped_when_the_noise_reaches_the_spread():
    # ε = 1, δ = 1e-3: μ* ≈ 0.39, so σ = √(1/μ*² − 1) ≈ 2.4 sampling SDs.
    cal = _one_statistic(1.0)
    ratio = float(cal.noise_to_sampling[0])
    assert ratio >= 1
    assert swamped_statistics(cal) == [f"x {ratio:.3g}×"]
    (text,) = _swamped(cal)
    assert text.startswith(SWAMPED)


def test_not_swamped_when_the_noise_is_far_below_the_spread():
    # ε = 8: μ* > 1, the model's own spread already hides the shift: (almost) no noise.
    cal = _one_statistic(8.0)
    assert float(cal.noise_to_sampling[0]) < 0.5
    assert swamped_statistics(cal) == [] and _swamped(cal) == []


def test_every_mechanism_is_judged_by_the_same_rule(capsys):
    """Across every mechanism, the caveat is there exactly when a statistic's noise SD reaches
    its spread (noise_to_sampling_sd ≥ 1) or ±2 SD of it covers a proportion's [0, 1] or a
    count's [0, n] — not against the statistic's mean (which ExpM-G, EigM-G and the Wasserstein
    mechanisms used to pass)."""
    assert main(["calibrate", "--statistics", STATS, "--samples", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    n = out["spec"]["n"]
    widths = {"proportion(sex==Female)": 1.0, "count(race==White)": float(n)}
    assert len(out["mechanisms"]) >= 10
    for m in out["mechanisms"]:
        expected = any(
            r["noise_to_sampling_sd"] >= 1
            or 4 * r["noise_sd"] >= widths.get(r["statistic"], np.inf)
            for r in m["per_statistic"]
        )
        assert ("swamped" in m["warning_codes"]) == expected, m["name"]
    named = {m["name"] for m in out["mechanisms"] if "swamped" in m["warning_codes"]}
    assert {"ExpM-G", "EigM-G", "Wasserstein"} <= named


def test_ranges_follow_the_statistics():
    model = GaussianModel([0.4, 0.6], [[0.0], [1.0]], [[[1.0]], [[1.0]]], [(0.4, 0.6)], ["x"])
    cal = make_mechanism("ExpM-G", EpsDelta(1.0, 1e-3)).calibrate(model)
    assert statistic_ranges(cal) == [None]  # a model file: the kind is unknown
    pub = publish(np.array([-5.0]), cal.statistic_ranges, None)
    assert pub.values.tolist() == [-5.0] and pub.clipped == ()


def _plan(tmp_path, capsys) -> str:
    plan = str(tmp_path / "plan.json")
    args = ["calibrate", "--statistics", STATS, "--mechanism", "ExpM-G", "--save", plan]
    assert main([*args, "--samples", "200", "--json"]) == 0
    capsys.readouterr()
    return plan


def _release(capsys, plan: str, seed: int, *extra: str) -> tuple[int, str]:
    rc = main(["release", "--plan", plan, "--value", "0.01,99,40", "--seed", str(seed), *extra])
    return rc, capsys.readouterr().out


def test_a_negative_proportion_is_clipped_to_zero_and_the_output_says_so(tmp_path, capsys):
    plan = _plan(tmp_path, capsys)
    # The noise SD of the proportion is ≈ 2.5 (ExpM-G adds the same σ to every statistic), so
    # a value of 0.01 comes out negative about half the time: the first such seed.
    for seed in range(50):
        rc, out = _release(capsys, plan, seed, "--json")
        assert rc == 0
        got = json.loads(out)
        raw = got["raw_statistics"]["proportion(sex==Female)"]
        if raw < 0:
            break
    else:
        pytest.fail("no seed gave a negative proportion")
    assert got["statistics"]["proportion(sex==Female)"] == 0.0
    assert got["clipped_to_range"] is True
    assert "proportion(sex==Female)" in got["clipped"]
    assert got["statistics"]["mean(age)"] == got["raw_statistics"]["mean(age)"]

    rc, out = _release(capsys, plan, seed)
    assert rc == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("* proportion(sex==Female)"))
    assert f"{raw:.4f}" in line
    assert "clipped to [0, 1]" in line and "post-processing keeps the guarantee" in line
    row = next(ln for ln in out.splitlines() if ln.startswith("│ proportion(sex==Female)"))
    assert "0.0000 *" in row

    rc, out = _release(capsys, plan, seed, "--no-clip")
    assert rc == 0
    assert f"{raw:.4f}" in next(ln for ln in out.splitlines() if "│ proportion(" in ln)
    assert "lies outside its range [0, 1] (kept raw: --no-clip)" in out
    rc, out = _release(capsys, plan, seed, "--no-clip", "--json")
    got = json.loads(out)
    assert got["clipped_to_range"] is False and got["clipped"] == []
    assert got["statistics"]["proportion(sex==Female)"] == raw


def test_counts_are_clipped_into_zero_to_n(tmp_path, capsys):
    plan = _plan(tmp_path, capsys)
    for seed in range(50):
        rc, out = _release(capsys, plan, seed, "--json")
        assert rc == 0
        got = json.loads(out)
        if got["raw_statistics"]["count(race==White)"] > 100:
            break
    else:
        pytest.fail("no seed gave a count above n")
    assert got["statistics"]["count(race==White)"] == 100.0
    assert "count(race==White)" in got["clipped"]


def test_the_library_flags_swamping_by_spread_whatever_the_units():
    """Python users get the same caveat as the command line (Mechanism.calibrate applies it,
    a loaded plan recomputes it), and for a unit-free mechanism rescaling one statistic
    (dollars → cents) moves nothing: the test is noise SD against the statistic's own spread."""
    from distprivacy.mechanisms.plans import Plan

    cov = np.diag([4.0, 0.01])
    model = GaussianModel(["a", "b"], [[100.0, 0.30], [101.0, 0.35]], [cov, cov], [("a", "b")])
    scaled = GaussianModel(
        ["a", "b"], [[10000.0, 0.30], [10100.0, 0.35]], [np.diag([4e4, 0.01])] * 2, [("a", "b")]
    )
    for name in ("ExpM-G", "DauM-G", "EigM-G"):
        cal = make_mechanism(name, EpsDelta(1.0, 1e-3)).calibrate(model)
        assert _swamped(cal) and all(s.startswith(SWAMPED) for s in _swamped(cal))
        if name == "DauM-G":  # unit-free noise (ExpM-G/EigM-G are the paper's raw-unit shapes)
            big = make_mechanism(name, EpsDelta(1.0, 1e-3)).calibrate(scaled)
            assert swamped_statistics(cal) == swamped_statistics(big), name
        loaded = Plan.from_dict(Plan.from_calibration(cal, model).to_dict()).calibration
        assert _swamped(loaded) == _swamped(cal)
