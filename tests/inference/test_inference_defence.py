"""The defence hook: outputs on a query set as the released statistic, distribution-privacy
mechanisms calibrated on a Gaussian model of them.

With logistic-regression models whose weights are Gaussian, the logits on a fixed query set are
exactly Gaussian under each distribution, so a mechanism's bound on attack accuracy (Φ(μ/2))
must hold up to sampling error: the Clopper–Pearson 95 % lower bound of the measured accuracy
may not exceed it. A calibration whose noise is deliberately ten times too small must be caught
by the same check.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.output_defence import (
    OutputStatistic,
    calibrate_defences,
    evaluate_defences,
    fit_output_model,
    range_dp_calibration,
)
from distprivacy.inference.population import ModelPopulation
from distprivacy.noise import NoiseDistribution
from distprivacy.profiles import gdp_delta
from distprivacy.targets import EpsDelta

D = 5
W0 = np.array([1.0, 0.5, 0.0, 0.0, 0.0])
W1 = np.array([1.0, 0.5, 1.5, 0.0, 0.0])


def pop(w, m, seed):
    rng = np.random.default_rng(seed)
    W = w[None, :, None] + 0.3 * rng.standard_normal((m, w.size, 1))
    return ModelPopulation((W,), (np.zeros((m, 1)),), "relu", {})


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((4, D))  # q ≤ d: the logits have a non-singular covariance
    y = (Q @ W0 > 0).astype(int)
    return {
        "defender": (pop(W0, 600, 1), pop(W1, 600, 2)),
        "adversary": (pop(W0, 600, 3), pop(W1, 600, 4)),
        "victim": (pop(W0, 500, 5), pop(W1, 500, 6)),
        "Q": Q,
        "y": y,
    }


def test_undefended_leaks_and_mechanisms_respect_their_bound(setup):
    stat = OutputStatistic(setup["Q"], output="logit")
    model = fit_output_model(*setup["defender"], stat)
    cals, skipped = calibrate_defences(model, [0.5], 1e-3, dp_baseline=False)
    assert not skipped
    defences = {"none": None, **{c.mechanism: c for c in cals}}
    # Six checks (three defences, two attacks) of bounds computed from moments estimated on 600
    # models: Bonferroni at family-wise α = 1e-3.
    df = evaluate_defences(
        setup["adversary"],
        setup["victim"],
        stat,
        setup["y"],
        defences,
        random_state=0,
        level=1 - 1e-3 / 6,
    )
    none = df.set_index("defence").loc["none"]
    assert none.likelihood_ratio_lo > 0.9 and none.meta_classifier_lo > 0.9
    for _, r in df[df.defence != "none"].iterrows():
        assert r.max_attack_accuracy < 0.75
        assert r.likelihood_ratio_lo <= r.max_attack_accuracy, r.defence
        assert r.meta_classifier_lo <= r.max_attack_accuracy, r.defence
        assert r.task_accuracy < none.task_accuracy  # noise costs accuracy


def test_too_little_noise_is_caught(setup):
    stat = OutputStatistic(setup["Q"], output="logit")
    model = fit_output_model(*setup["defender"], stat)
    (cal,), _ = calibrate_defences(model, [0.5], 1e-3, ["ExpM-G"], dp_baseline=False)
    n = cal.noise
    wrong = dataclasses.replace(cal, noise=NoiseDistribution(n.family, n.basis, n.scales / 10))
    df = evaluate_defences(
        setup["adversary"], setup["victim"], stat, setup["y"], {"wrong": wrong}, random_state=0
    )
    assert df.likelihood_ratio_lo.iloc[0] > cal.max_attack_accuracy


def test_range_dp_baseline_is_the_analytic_gaussian():
    cal = range_dp_calibration(9, EpsDelta(1.0, 1e-3))
    sigma = cal.noise.scales[0]
    mu = 3.0 / sigma  # Δ₂ = √9 · 1
    assert gdp_delta(1.0, mu) == pytest.approx(1e-3, rel=1e-6)
    np.testing.assert_allclose(cal.noise_covariance, sigma**2 * np.eye(9))


def test_dp_baseline_adds_far_more_noise(setup):
    stat = OutputStatistic(setup["Q"])  # probabilities in [0, 1]
    model = fit_output_model(*setup["defender"], stat)
    cals, _ = calibrate_defences(model, [1.0], 1e-3, ["ExpM-G"])
    by = {c.mechanism: c for c in cals}
    assert by["DP-range-G"].expected_l2_error > 3 * by["ExpM-G"].expected_l2_error


def test_bad_inputs(setup):
    stat = OutputStatistic(setup["Q"])
    a0, a1 = setup["adversary"]
    cases = [
        (lambda: OutputStatistic(np.ones(3)), "query must be"),
        (lambda: OutputStatistic(setup["Q"], output="margin"), "output must be"),
        (lambda: fit_output_model(a0.subset(np.arange(3)), a1, stat), "cannot fit a covariance"),
        (lambda: fit_output_model(a0, a1, OutputStatistic(np.ones((3, 2)))), "query has 2"),
        (lambda: range_dp_calibration(0, EpsDelta(1.0, 1e-3)), "dim must be"),
        (
            lambda: evaluate_defences((a0, a1), (a0, a1), stat, np.ones(3), {"none": None}),
            "labels must be 4",
        ),
        (
            lambda: evaluate_defences(
                (a0, a1),
                (a0, a1),
                stat,
                setup["y"],
                {"x": range_dp_calibration(3, EpsDelta(1.0, 1e-3))},
            ),
            "for 3 outputs",
        ),
        (
            lambda: calibrate_defences(
                fit_output_model(a0, a1, stat), [1.0], 1e-3, ["ExpM-G"], output_range=None
            ),
            "bounded outputs",
        ),
    ]
    for fn, text in cases:
        with pytest.raises(DistPrivacyError, match=text) as e:
            fn()
        assert "\n" not in str(e.value)
