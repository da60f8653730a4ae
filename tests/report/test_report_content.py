"""What each HTML report holds (issue 23, item 5): the steward's words first, the
per-statistic table, the figures with their titles, axis labels and legends, the assumptions
with their checks; every user-supplied text escaped; written 0600 when it holds exact
statistics; a bad --report path refused before any work."""

from __future__ import annotations

import html as _html
import math
import os
import stat

import numpy as np
import pytest
from conftest import EVIL_COLUMN, EVIL_FLAG
from report_checks import validate

from distprivacy.cli import main

KINDS = ("calibrate", "release", "public", "audit", "ledger", "models", "models-pairs")


@pytest.mark.parametrize("kind", KINDS)
def test_every_report_is_valid_self_contained_html(reports, kind):
    validate(reports[kind].read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", KINDS)
def test_the_statement_comes_first_and_names_the_attack(reports, kind):
    text = reports[kind].read_text(encoding="utf-8")
    body = text[text.index("<main>") :]
    first_section = body.index("<section")
    assert body[first_section:].startswith('<section class="statement"')
    statement = body[first_section : body.index("</section>")]
    assert "50 % is a coin flip" in statement
    assert "income==&gt;50K" in statement  # the protected property, escaped


@pytest.mark.parametrize("kind", KINDS)
def test_per_statistic_table_and_figures(reports, kind):
    out = validate(reports[kind].read_text(encoding="utf-8"))
    table = next(t for t in out.tables if t["id"] == "statistics-table")
    assert len(table["rows"]) >= 2
    assert out.svgs, "no figure"
    assert out.legends == len(out.svgs)
    for svg in out.svgs:
        assert svg.title, svg.id
        assert svg.title in out.headings  # the title is also shown above the figure
        axis = [t for c, t in svg.texts if c == "axis"]
        assert len(axis) == 2 and all(axis), (svg.id, svg.texts)
        assert svg.children > 10


def test_calibrate_report_content(reports):
    text = reports["calibrate"].read_text(encoding="utf-8")
    out = validate(text)
    rows = next(t for t in out.tables if t["id"] == "statistics-table")["rows"][1:]
    names = [r[0] for r in rows]
    assert names == ["mean(age)", "mean(education_num)", "count(marital_status==Never-married)",
                     "count(sex==Female)", "mean(hours_per_week)"]  # fmt: skip
    assert all(r[2].startswith("± ") for r in rows)  # the 95 % noise interval
    titles = [s.title for s in out.svgs]
    assert any("Privacy–utility" in t for t in titles)
    assert any("Attack bound" in t for t in titles)
    for mech in ("DirM-L", "ExpM-G", "DauM-G", "GroupDP-G"):
        assert mech in text
    assert "Assumptions and checks" in out.headings
    assert "chosen:" in text


def test_an_unverified_bound_is_not_drawn_as_a_guarantee(reports):
    """DirM-L rests on the translation assumption (not verified for Adult): its attack-bound
    curve is labelled so and never merged with a verified one; the caption says why."""
    text = reports["calibrate"].read_text(encoding="utf-8")
    fig = text[text.index('id="fig-accuracy"') :]
    fig = fig[: fig.index("</figure>")]
    assert "DirM-L (assumed, not verified)" in fig
    assert "DauM-G (assumed" not in fig and "DauM-G" in fig
    assert "is not a guarantee" in fig


@pytest.mark.parametrize("kind", ["release", "public"])
def test_release_report_shows_the_released_values_with_intervals(reports, kind):
    out = validate(reports[kind].read_text(encoding="utf-8"))
    rows = next(t for t in out.tables if t["id"] == "statistics-table")["rows"][1:]
    for r in rows:
        clipped = r[1].endswith("*")  # clipped into its range, the interval with it (issue 33)
        value = float(r[1].rstrip(" *"))
        lo, hi = (float(x) for x in r[2].strip("[]").split(","))
        assert lo <= value <= hi if clipped else lo < value < hi
        if clipped:
            continue
        # Gaussian noise: the 95 % interval is ±1.96 SD (to the digits shown), cut at the
        # statistic's range (a count's 0, a share's 0 or 1) on at most one side.
        hw = 1.959964 * float(r[3])
        sides = (value - lo, hi - value)
        assert max(sides) <= hw * (1 + 2e-3)
        assert any(math.isclose(x, hw, rel_tol=2e-3) for x in sides), (r, hw)
    assert "Ledger" in out.headings


def test_audit_report_marks_the_measured_accuracy(reports):
    out = validate(reports["audit"].read_text(encoding="utf-8"))
    rows = next(t for t in out.tables if t["id"] == "statistics-table")["rows"][1:]
    assert {r[0] for r in rows} == {"DauM-G", "ExpM-L"}
    audit = next(s for s in out.svgs if s.id == "fig-audit")
    assert "measured attack accuracy against the claimed bound" in audit.title
    assert [t for c, t in audit.texts if c == "axis"] == [
        "claimed bound on attack accuracy",
        "best measured accuracy",
    ]


def test_ledger_report_budget_over_time(reports):
    text = reports["ledger"].read_text(encoding="utf-8")
    out = validate(text)
    assert [s.id for s in out.svgs] == ["fig-budget"]
    assert "Budget over time" in out.headings
    rows = next(t for t in out.tables if t["id"] == "statistics-table")["rows"][1:]
    assert [r[0] for r in rows] == ["1", "2", "3"]
    # Grouped by secret (issue 30): each release names its registered dataset's version.
    assert [r[2] for r in rows] == ["wave1@1", "wave2@1", "wave1@1"]
    assert "3 releases under 1 secret: income protects income==&gt;50K" in text
    assert "Secret income (protecting income==&gt;50K, 3 releases)" in text


def test_modes_exact_statistics_are_private(reports):
    for kind in ("calibrate", "release", "audit", "ledger"):
        assert stat.S_IMODE(os.stat(reports[kind]).st_mode) == 0o600, kind
        assert "mode 0600" in reports[kind].read_text(encoding="utf-8"), kind
    # The page to publish: readable by all whatever the umask, and it says it may be published.
    public = reports["public"].read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(reports["public"]).st_mode) == 0o644
    assert "It may be published" in public and "mode 0600" not in public
    # The ledger's report holds its contents, private as the ledger (issue 30), and says so.
    assert "(mode 0600), as the ledger is" in reports["ledger"].read_text(encoding="utf-8")
    # A models audit report holds the accuracies of attacks on models trained on random
    # samples: the usual mode.
    umask = os.umask(0)
    os.umask(umask)
    for kind in ("models", "models-pairs"):
        assert "mode 0600" not in reports[kind].read_text(encoding="utf-8")
        assert stat.S_IMODE(os.stat(reports[kind]).st_mode) == 0o666 & ~umask, kind
    assert "no exact statistic" in reports["models"].read_text(encoding="utf-8")


def test_user_text_is_escaped(evil_report):
    text = evil_report.read_text(encoding="utf-8")
    out = validate(text)
    assert "<script" not in text.lower()
    assert "<b>" not in text
    assert _html.escape(EVIL_COLUMN) in text
    shown = "".join(out.text)
    assert f"mean({EVIL_COLUMN})" in shown  # read back as the user wrote it
    assert EVIL_FLAG in shown


def test_bad_report_path_is_one_line_exit_2(tmp_path, capsys, adult_dir):
    for bad in (str(tmp_path), ""):
        rc = main(["calibrate", "--data", str(adult_dir), "--report", bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("error: --report"), err


def test_models_audit_bad_report_path_is_refused_before_any_work(tmp_path, capsys):
    # The table does not exist: the refusal names --report, so it came before reading it.
    for bad in (str(tmp_path), ""):
        rc = main(["models", "audit", "--data", str(tmp_path / "none.csv"), "--label", "y",
                   "--protect", "a==b", "--report", bad])  # fmt: skip
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("error: --report"), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_never_written_over(tmp_path, capsys):
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    rc = main(["ledger", "show", str(tmp_path / "none.db"), "--report", str(fifo)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "not a regular file" in err[0], err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_noise_interval_coverage():
    """The 95 % half-widths hold 95 % of the noise: 400,000 seeded draws, coverage within
    5 standard errors (√(0.95·0.05/400000) = 3.4e-4) of 0.95, for Laplace noise along
    non-axis directions (a sum of Laplace variables) and Gaussian noise."""
    from distprivacy.noise import NoiseDistribution
    from distprivacy.report import noise_halfwidths

    rng = np.random.default_rng(1)
    basis, _ = np.linalg.qr(rng.normal(size=(4, 3)))
    se = math.sqrt(0.95 * 0.05 / 400_000)
    for family in ("laplace", "gaussian"):
        noise = NoiseDistribution(family, basis, np.array([1.0, 0.3, 2.0]))
        h = noise_halfwidths(noise, 0.95)
        z = noise.sample(400_000, np.random.default_rng(2))
        cover = (np.abs(z) <= h).mean(axis=0)
        assert np.all(np.abs(cover - 0.95) < 5 * se), (family, cover)
    one = NoiseDistribution("laplace", np.eye(2), np.array([2.0, 0.5]))
    assert np.allclose(noise_halfwidths(one, 0.95), [2.0 * math.log(20), 0.5 * math.log(20)])
    assert np.all(noise_halfwidths(NoiseDistribution.none(3)) == 0)


def test_epsilon_grid_and_sweep_contain_the_chosen_point(adult):
    from distprivacy.mechanisms import calibrate_all
    from distprivacy.models import fit_model
    from distprivacy.query import Query
    from distprivacy.report import epsilon_grid, sweep
    from distprivacy.spec import ProtectionSpec
    from distprivacy.targets import EpsDelta

    grid = epsilon_grid(0.5)
    assert len(grid) == 8 and math.isclose(grid[0], 0.05) and math.isclose(grid[-1], 5.0)
    assert np.allclose(np.diff(np.log(grid)), np.log(100) / 7)
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    model = fit_model(adult, spec, Query.parse("mean:age,mean:hours_per_week"), method="exact")
    cals, _ = calibrate_all(model, EpsDelta(0.5, 1e-3), names=["ExpM-L", "DauM-G"])
    sw = sweep(model, cals, delta=1e-3, grid=grid)
    for c in cals:
        e, err = sw.epsilon[c.mechanism], sw.error[c.mechanism]
        k = int(np.flatnonzero(e == c.epsilon)[0])
        assert err[k] == c.expected_l2_error
        assert np.all(np.diff(err[np.isfinite(err)]) < 0)  # more ε, less noise
    # Laplace noise scales as 1/ε exactly: the curve is the calibration's point times ε/ε'.
    lap = cals[0]
    assert np.allclose(
        sw.error["ExpM-L"], lap.expected_l2_error * lap.epsilon / sw.epsilon["ExpM-L"]
    )
    with pytest.raises(Exception, match="finite ε > 0"):
        epsilon_grid(0.0)


def test_library_bad_input_is_one_distprivacy_error(adult):
    from distprivacy.exceptions import DistPrivacyError
    from distprivacy.noise import NoiseDistribution
    from distprivacy.report import noise_halfwidths, sweep

    noise = NoiseDistribution("laplace", np.eye(2), np.array([1.0, 1.0]))
    for level in (0, 1, 1.5, float("nan")):
        with pytest.raises(DistPrivacyError, match="level"):
            noise_halfwidths(noise, level)
    for delta in (-0.1, 1.0, float("nan")):
        with pytest.raises(DistPrivacyError):
            sweep(None, [], delta=delta)
    for grid in ([0.0, 1.0], [float("inf")], [[1.0]]):
        with pytest.raises(DistPrivacyError, match="grid"):
            sweep(None, [object()], delta=1e-3, grid=np.array(grid))
