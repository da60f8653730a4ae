"""``distprivacy reproduce``: outputs, report, per-stage seeding, bad targets."""

from __future__ import annotations

import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.experiments import reference as ref
from distprivacy.experiments.paper import Config, PaperReproduction

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, adult_dir):
    out = tmp_path_factory.mktemp("repro")
    rc = main(["reproduce", "paper", "--quick", "--out", str(out), "--data", str(adult_dir)])
    assert rc == 0
    return out


def test_all_outputs_written(quick_run):
    names = ("table2", "table3", "figure2", "figure3", "figure4", "figure5", "accounting", "audit")
    for name in names:
        assert (quick_run / f"{name}.csv").stat().st_size > 0
        png = (quick_run / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert (quick_run / "figure3_crossover.csv").exists()
    assert (quick_run / "timings.csv").exists()


def test_report_puts_paper_numbers_beside_ours(quick_run):
    report = (quick_run / "report.md").read_text()
    for section in (
        "Table 2",
        "Table 3",
        "Figure 2",
        "Figure 3",
        "Figure 4",
        "Figure 5",
        "exact accounting",
        "audit on real samples",
        "Differences beyond the tolerance",
    ):
        assert section in report
    t2 = pd.read_csv(quick_run / "table2.csv")
    for (mech, eps), paper in ref.TABLE2.items():
        row = t2[(t2.mechanism == mech) & (t2.epsilon == eps)]
        assert row.paper.iloc[0] == paper
        assert f"{paper:.2f}" in report
    assert "![Figure 4](figure4.png)" in report


def test_quick_run_numbers_are_sane(quick_run):
    t3 = pd.read_csv(quick_run / "table3.csv")
    none = t3[(t3.mechanism == "none") & (t3.attack == "paper")].accuracy.iloc[0]
    assert 0.65 < none < 0.85  # 5 repetitions: looser than the full run's ±0.03
    t2 = pd.read_csv(quick_run / "table2.csv")
    # Exact errors do not depend on the repetition counts: Table 2 holds even in quick mode.
    assert t2[t2.epsilon < 5].within_tolerance.all()
    cross = pd.read_csv(quick_run / "figure3_crossover.csv").set_index("property")
    assert 0.04 <= cross.loc["income", "crossing_delta_p"] <= 0.28


@pytest.mark.filterwarnings("ignore:.*classic rule")
def test_a_target_alone_equals_the_same_target_within_all(adult):
    """Every stage has its own generator: Table 3 computed alone equals Table 3 after others."""
    cfg = Config.quick(seed=3)
    a = PaperReproduction(adult, cfg)
    alone = a.table3()
    b = PaperReproduction(adult, cfg)
    b.table2()
    b.figure4()
    pd.testing.assert_frame_equal(alone, b.table3())


def test_report_path_option_links_images_relative_to_it(tmp_path, adult_dir):
    out = tmp_path / "docs" / "reproduction"
    report = tmp_path / "docs" / "reproduction.md"
    rc = main(
        [
            "reproduce",
            "figure3",
            "--quick",
            "--out",
            str(out),
            "--report",
            str(report),
            "--data",
            str(adult_dir),
        ]
    )
    assert rc == 0
    assert "![Figure 3](reproduction/figure3.png)" in report.read_text()


def test_unknown_target_is_a_one_line_error(capsys, tmp_path):
    rc = main(["reproduce", "table9", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "unknown target" in err


def test_quick_run_accounting_and_audit(quick_run):
    """The beyond-the-paper targets: classic δ at ε = 10 above nominal for ExpM-G (its target
    μ* = ε/c gives δ = Φ(−c + μ/2) − e^ε Φ(−c − μ/2) > δ, computed here independently); exact
    rows meet δ; OptM-G never above DauM-G/EigM-G under the pooled assumption; no audit
    refutes a claim."""
    import math

    from scipy.stats import norm

    acc = pd.read_csv(quick_run / "accounting.csv")
    d = 1e-3
    c = math.sqrt(2 * math.log(1.25 / d))
    mu = 10 / c
    expected = norm.cdf(-10 / mu + mu / 2) - math.exp(10) * norm.cdf(-10 / mu - mu / 2)
    row = acc[(acc.rule == "classic") & (acc.mechanism == "ExpM-G") & (acc.epsilon == 10)]
    assert expected > d
    assert row.mu_target.iloc[0] == pytest.approx(mu, rel=1e-9)
    assert row.delta_target.iloc[0] == pytest.approx(expected, rel=1e-6)
    # The μ stated is the noise's on the fitted model (issue 33), at most the target's.
    assert row.mu.iloc[0] <= mu * (1 + 1e-9)
    exact = acc[acc.rule == "exact"]
    assert (exact[exact.covariances == "fitted"].delta_achieved <= d * (1 + 1e-6)).all()
    assert (exact.delta_shared <= d * (1 + 1e-6)).all()
    pooled = exact[exact.covariances == "pooled"].pivot_table(
        index="epsilon", columns="mechanism", values="l2_exact"
    )
    assert (pooled["OptM-G"] <= pooled[["DauM-G", "EigM-G"]].min(axis=1) * (1 + 1e-3)).all()
    audit = pd.read_csv(quick_run / "audit.csv")
    assert len(audit) > 0 and not audit.refuted.any() and not audit.accuracy_exceeded.any()
    assert (audit.epsilon_lower_bound <= audit.epsilon).all()


def test_target_groups_resolve_in_order_without_repeats():
    from distprivacy.experiments.reproduce import (
        ALL_TARGETS,
        EXTRA_TARGETS,
        TARGETS,
        resolve_targets,
    )

    assert resolve_targets(["paper"]) == list(TARGETS)
    assert resolve_targets(["all"]) == list(ALL_TARGETS)
    assert set(EXTRA_TARGETS) <= set(ALL_TARGETS)
    assert resolve_targets(["audit", "Paper", "local-distp"]) == [
        "audit",
        *[t for t in TARGETS if t != "audit"],
        "local-distp",
    ]


def test_the_paper_function_runs_only_the_papers_targets(adult, tmp_path):
    from distprivacy.exceptions import DistPrivacyError
    from distprivacy.experiments.reproduce import reproduce

    with pytest.raises(DistPrivacyError, match="local-distp is not a target of the main paper"):
        reproduce(adult, ["local-distp"], tmp_path)
