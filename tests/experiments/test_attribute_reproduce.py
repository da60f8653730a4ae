"""Tests of ``distprivacy reproduce attribute-privacy`` (the §4.2 hospital experiment)."""

from __future__ import annotations

import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.experiments.attribute_privacy import PAPER, run
from distprivacy.experiments.reproduce import run_extra


def test_run_writes_table_figure_and_report(tmp_path, adult_dir) -> None:
    messages: list[str] = []
    result = run(tmp_path, quick=True, seed=0, data_dir=str(adult_dir), progress=messages.append)
    assert result["report"] == tmp_path / "report.md"
    assert result["timings"]["total"] > 0
    assert messages
    table = pd.read_csv(tmp_path / "hospital.csv")
    paper = table[
        (table["reading"] == "paper (d(U)=0.25)") & (table["mechanism"] == "APGM (classic)")
    ].set_index("query")
    for q in ("weight", "blood_pressure", "temperature"):
        assert paper.loc[q, "sensitivity"] == pytest.approx(PAPER[q]["sensitivity"])
        assert paper.loc[q, "conditional_variance"] == pytest.approx(PAPER[q]["variance"])
    exact = table[
        (table["reading"] == "paper (d(U)=0.25)") & (table["mechanism"] == "APGM (exact)")
    ].set_index("query")
    assert exact.loc["temperature", "noise_variance"] == 0.0
    assert exact.loc["temperature", "measured_abs_error"] == 0.0
    sweep = pd.read_csv(tmp_path / "correlation_sweep.csv")
    for _, g in sweep.groupby("rule"):  # the paper's point: σ² non-decreasing in V_ij
        assert g["noise_variance"].is_monotonic_increasing
        assert g["noise_variance"].iloc[0] == 0.0
    assert (tmp_path / "attribute_privacy.png").stat().st_size > 10_000
    report = (tmp_path / "report.md").read_text()
    # Δ equals the paper's | Var equals the paper's | error within ±15 %
    assert "| weight | yes | yes | yes |" in report
    assert "| blood_pressure | yes | yes | yes |" in report
    assert "18.9" in report and "7.4" in report and "attribute_privacy.png" in report
    # both frameworks on Adult: Alg. 1 meets δ exactly with the fitted covariances
    adult = pd.read_csv(tmp_path / "adult_comparison.csv")
    apgm = adult[adult["mechanism"] == "APGM (Alg. 1)"].set_index("rule")
    assert apgm.loc["exact", "delta_achieved"] <= 1e-3
    assert apgm.loc["exact", "expected_l2_error"] < apgm.loc["classic", "expected_l2_error"]
    assert "## Both frameworks on Adult" in report and "ExpM-G" in report


def test_without_local_adult_the_report_says_so(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DISTPRIVACY_DATA", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    result = run(tmp_path / "out", quick=True, seed=0, data_dir=None, progress=lambda _: None)
    assert "Not run: Adult is not available locally" in result["report"].read_text()
    assert not (tmp_path / "out" / "adult_comparison.csv").exists()


@pytest.mark.slow
def test_same_seed_same_table(tmp_path) -> None:
    a = run(tmp_path / "a", quick=True, seed=3, data_dir=None, progress=lambda _: None)
    b = run_extra("attribute-privacy", tmp_path / "b", quick=True, seed=3)
    ta = pd.read_csv(a["report"].parent / "hospital.csv")
    tb = pd.read_csv(b["report"].parent / "hospital.csv")
    pd.testing.assert_frame_equal(ta, tb)


def test_cli_target(tmp_path, adult_dir, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "reproduce",
            "attribute-privacy",
            "--out",
            str(tmp_path),
            "--quick",
            "--data",
            str(adult_dir),
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert (tmp_path / "attribute-privacy" / "report.md").exists()
    assert "attribute-privacy" in out
