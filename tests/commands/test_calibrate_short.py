"""``calibrate`` is short by default (issue 33, item 4): the recommended mechanism — the best
verified one available in this install, which ``release`` then uses — with its noise per
statistic, a compact comparison of every applicable mechanism, a line on choosing
``--values``; ``--all`` shows the full tables. On Adult it fits in 40 lines at 80 columns, and
at 60, 80 and 120 columns no statistic's name is broken inside a word."""

from __future__ import annotations

import json
import re

import pytest
from rich.cells import cell_len

from distprivacy.cli import main

pytestmark = pytest.mark.slow

#: The statistics of the default Adult run.
NAMES = ["mean(age)", "mean(education_num)", "count(marital_status==Never-married)",
         "count(sex==Female)", "mean(hours_per_week)"]  # fmt: skip


def _run(capsys, monkeypatch, width: int, *args: object) -> tuple[int, str, str]:
    monkeypatch.setenv("COLUMNS", str(width))
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.fixture(scope="module")
def outputs(adult_dir):
    """calibrate on Adult, short and --all, at 60, 80 and 120 columns (printed through a
    fresh process-wide COLUMNS each time; captured here without capsys, module-wide)."""
    import contextlib
    import io
    import os

    out = {}
    old = os.environ.get("COLUMNS")
    try:
        for width in (60, 80, 120):
            for mode in ((), ("--all",)):
                os.environ["COLUMNS"] = str(width)
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    rc = main(["calibrate", "--data", str(adult_dir), *mode])
                assert rc == 0
                out[width, bool(mode)] = buf.getvalue()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return out


def test_short_by_default_fits_40_lines_at_80_columns(outputs):
    text = outputs[80, False]
    lines = text.splitlines()
    assert len(lines) <= 40, f"{len(lines)} lines:\n{text}"
    assert "Recommended: DirM-G" in text or "Recommended: DauM-G" in text
    # The compact comparison lists every applicable mechanism, NoNoise (not applicable) not.
    for name in ("ExpM-L", "DirM-G", "EigM-G", "DauM-G", "GroupDP-G"):
        assert re.search(rf"^ {re.escape(name)}\b", text, re.M), name
    assert "Choosing --values" in text and "0.45 vs 0.55" in text
    assert "--all: the full tables" in text and "NoNoise" in text
    # The full tables only with --all.
    assert "Calibrations (" not in text and "Calibrations (" in outputs[80, True]
    assert "Noise per statistic" in outputs[80, True]
    assert "Choosing --values" in outputs[80, True]


def _names_whole(text: str, width: int) -> None:
    """No line wider than ``width``, nothing cut with an ellipsis, and every piece of a
    statistic's name shown in a table cell starting and ending where the name may break:
    never between two letters or digits (`mean(edu` / `cation)`)."""
    for line in text.splitlines():
        assert cell_len(line) <= width, line
    assert "…" not in text
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)]
        for cell in cells or [line.strip()]:
            for name in NAMES:
                if not cell or cell == name or cell not in name or len(cell) < 3:
                    continue
                k = name.index(cell)
                end = k + len(cell)
                assert k == 0 or not (name[k - 1].isalnum() and name[k].isalnum()), (cell, line)
                inside = end < len(name) and name[end - 1].isalnum() and name[end].isalnum()
                assert not inside, (cell, line)


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("full", [False, True])
def test_lines_fit_and_names_never_break_inside_a_word(outputs, width, full):
    _names_whole(outputs[width, full], width)


def test_release_table_never_breaks_a_name_inside_a_word(capsys, monkeypatch, adult_dir):
    rc, out, err = _run(capsys, monkeypatch, 60, "release", "--data", adult_dir, "--mechanism",
                        "DauM-G", "--seed", "1", "--modeling", "exact")  # fmt: skip
    assert rc == 0, err
    assert "count(marital_status" in out
    _names_whole(out, 60)
    # The whole table fits: every row keeps its right border (rich crops a table wider than
    # the terminal, which cut the relative-error column at 60 columns).
    rows = [x for x in out.splitlines() if x.startswith(("┏", "┃", "┡", "│", "└"))]
    assert rows and all(x.rstrip()[-1] in "┓┃┩│┘" for x in rows), rows


def test_name_pieces_and_lines():
    from distprivacy.commands._display import name_lines, name_pieces

    name = "count(marital_status==Never-married)"
    assert "".join(name_pieces(name)) == name
    assert name_pieces(name) == ["count(", "marital_", "status", "==Never-", "married)"]
    for width in range(8, 40):
        lines = name_lines(name, width)
        assert "".join(lines) == name
        assert all(cell_len(x) <= width for x in lines)
    assert name_lines("mean(education_num)", 9) == ["mean(", "education", "_num)"]


def test_the_recommended_mechanism_is_available_in_this_install(adult_dir, monkeypatch):
    """Without cvxpy OptM-G is never recommended (and is listed as not applicable); a
    mechanism that adds no noise is never recommended."""
    from distprivacy.commands import _display
    from distprivacy.datasets import load_adult
    from distprivacy.mechanisms import calibrate_all
    from distprivacy.models import fit_model
    from distprivacy.query import Query
    from distprivacy.request import GaussianOptions
    from distprivacy.spec import ProtectionSpec
    from distprivacy.targets import EpsDelta

    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    model = fit_model(load_adult(adult_dir), spec, Query.parse("mean:age,mean:hours_per_week"),
                      method="exact")  # fmt: skip
    cals, _ = calibrate_all(model, EpsDelta(1.0, 1e-3), GaussianOptions(utility="l2"),
                            names=["DauM-G", "OptM-G", "ExpM-G"])  # fmt: skip
    opt = next(c for c in cals if c.mechanism == "OptM-G")
    # Make OptM-G the least noisy, then take cvxpy away.
    cheap = min(cals, key=lambda c: c.expected_l2_error)
    assert _display.recommend(cals, "l2")["mechanism"] == cheap.mechanism
    monkeypatch.setattr(_display, "available", lambda name: name != "OptM-G")
    rec = _display.recommend([opt, *[c for c in cals if c is not opt]], "l2")
    assert rec["mechanism"] != "OptM-G" and rec["among"] == "verified"
    assert _display.recommend([], "l2") is None


def test_release_uses_the_recommended_mechanism_by_default(capsys, monkeypatch, adult_dir):
    common = ["--data", str(adult_dir), "--modeling", "exact", "--json"]
    rc, out, err = _run(capsys, monkeypatch, 80, "calibrate", *common)
    assert rc == 0, err
    best = json.loads(out)["best"]["mechanism"]
    rc, out, err = _run(capsys, monkeypatch, 80, "release", "--seed", "1", *common)
    assert rc == 0, err
    assert json.loads(out)["calibration"]["name"] == best
