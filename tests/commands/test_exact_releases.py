"""``distprivacy release`` and the one exactness gate (issue 31): a near-exact release (noise
below a count's half unit at μ = 10⁶) is refused in one line naming the statistics and the
fix, and with --allow-exact says which values are near-exact; a statistic a directional
mechanism leaves noise-free (its mean is the same under every protected share) is released
and said to be, on the terminal at any width and in the JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from rich.cells import cell_len

from distprivacy.cli import main


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> str:
    """x has the same values in both groups (its mean does not depend on the share of g == a);
    y and c do."""
    rng = np.random.default_rng(0)
    g = np.where(np.arange(2000) < 1000, "a", "b")
    x = np.tile(rng.integers(20, 60, 1000), 2).astype(float)
    y = rng.normal(0, 1, 2000) + np.where(g == "a", 2.0, 0.0)
    c = np.where(rng.random(2000) < np.where(g == "a", 0.8, 0.2), 1, 0)
    path = tmp_path_factory.mktemp("exact") / "pop.csv"
    pd.DataFrame({"g": g, "x": x, "y": y, "c": c}).to_csv(path, index=False)
    return str(path)


def _release(capsys, population: str, *args: str) -> tuple[int, str, str]:
    base = ["release", "--data", population, "--protect", "g==a", "--values", "0.3,0.7"]
    rc = main([*base, "--modeling", "exact", "--seed", "1", *args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize("mechanism", ["DirM-G", "DirM-L"])
def test_a_noise_free_statistic_is_said_at_any_width(
    capsys, population, monkeypatch, width, mechanism
):
    monkeypatch.setenv("COLUMNS", str(width))
    rc, out, err = _release(
        capsys, population, "--statistics", "mean:x,mean:y", "--mechanism", mechanism
    )
    assert rc == 0, err
    assert all(cell_len(line) <= width for line in out.splitlines()), out
    flat = _flat(out)
    assert (
        "note: mean(x) is released without noise: its mean is the same under every protected "
        "share (verified by the model)" in flat
    )
    row = next(line for line in out.splitlines() if line.startswith("│ mean(x)"))
    assert "none" in row  # its noise column
    assert "mean(y) is released" not in flat


def test_the_json_and_the_report_say_the_noise_free_statistic(capsys, population, tmp_path):
    report = tmp_path / "release.html"
    args = ["--statistics", "mean:x,mean:y", "--mechanism", "DirM-G", "--json"]
    rc, out, err = _release(capsys, population, *args, "--report", str(report))
    assert rc == 0, err
    d = json.loads(out)
    (e,) = d["exact_statistics"]
    assert e["statistic"] == "mean(x)" and e["justified"] and e["noise_sd"] == 0.0
    assert "without noise" in e["note"]
    assert d["noise_added"] is True
    assert f"<p>{e['note']}</p>" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize("mechanism", ["ExpM-G", "DirM-G", "GroupDP-G"])
def test_a_huge_target_is_refused_then_released_with_allow_exact(capsys, population, mechanism):
    args = ["--statistics", "mean:y,count:c==1", "--mechanism", mechanism, "--target-mu", "1e6"]
    rc, out, err = _release(capsys, population, *args)
    assert rc == 2 and out == "" and "Traceback" not in err
    (line,) = err.strip().splitlines()
    needles = ["count(c==1) has noise SD", "below 0.5 (half a count)", "--allow-exact",
               "lower the privacy target"]  # fmt: skip
    if mechanism not in ("ExpM-G", "DirM-G"):  # these state the μ of their noise on the model,
        needles.append("nothing is hidden")  # where F's own spread hides (issue 33)
    for needle in needles:
        assert needle in line, line
    rc, out, err = _release(capsys, population, *args, "--allow-exact", "--json")
    assert rc == 0, err
    d = json.loads(out)
    exact = {e["statistic"]: e for e in d["exact_statistics"]}
    assert "count(c==1)" in exact and exact["count(c==1)"]["noise_sd"] < 0.5
    assert not any(e["justified"] for e in exact.values())
    rc, out, err = _release(capsys, population, *args, "--allow-exact")
    assert rc == 0, err
    flat = _flat(out)
    assert "warning: count(c==1) is released with noise SD" in flat
    assert "its (near-)exact value (by --allow-exact)" in flat
