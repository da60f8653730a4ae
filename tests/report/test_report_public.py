"""The page to publish and the page to review (issue 33, item 3): ``release --report`` writes
the public page — the released (published, clipped) values with their intervals, the
guarantee, what is protected, the method; no exact statistic, no column relative to the data's
own values, no path; mode 0644 and it says it may be published — and ``--review-report`` the
internal one (0600). Every report's text has no raw backtick and no e-notation; the ledger's
chart counts releases in whole numbers; chart labels sit clear of every line."""

from __future__ import annotations

import html as _html
import itertools
import json
import os
import re
import stat

import pytest
from report_checks import validate

from distprivacy.cli import main
from distprivacy.report._svg import PALETTE, label_box

KINDS = ("calibrate", "release", "public", "audit", "ledger", "models", "models-pairs")


def _statistics_header(text: str) -> list[str]:
    out = validate(text)
    return next(t for t in out.tables if t["id"] == "statistics-table")["header"]


def test_public_page_holds_no_exact_statistic(reports, adult_dir):
    text = reports["public"].read_text(encoding="utf-8")
    assert _statistics_header(text) == ["statistic", "released value", "95 % interval",
                                        "noise SD"]  # fmt: skip
    shown = " ".join(validate(text).text)
    for word in ("typical value", "sampling SD", "relative error", "spread"):
        assert word not in shown, word
    # No path: neither the data, nor the ledger, nor the registered files.
    assert str(adult_dir) not in text and "ledger.db" not in text
    assert str(reports["public"].parent) not in text
    # The guarantee and the method have their own sections; one figure, the attack bound.
    headings = validate(text).headings
    for h in ("Released statistics", "The guarantee", "What is protected", "Method"):
        assert h in headings, h
    assert [s.id for s in validate(text).svgs] == ["fig-accuracy"]
    # The review page keeps the exact figures and says it must not be published.
    review = reports["release"].read_text(encoding="utf-8")
    assert "noise SD / typical value" in _statistics_header(review)
    assert "Do not publish it" in review


def test_every_report_text_has_no_backtick_and_no_e_notation(reports):
    sci = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]?\d+(?![\w.])")
    for kind in KINDS:
        shown = " ".join(validate(reports[kind].read_text(encoding="utf-8")).text)
        assert "`" not in shown, kind
        assert sci.search(shown) is None, (kind, sci.search(shown))


def test_calibrate_report_says_how_to_choose_values(reports):
    text = _html.unescape(reports["calibrate"].read_text(encoding="utf-8"))
    assert "Choosing --values" in text and "the guarantee covers exactly the listed pairs" in text
    assert "the recommended mechanism" in text


def test_ledger_chart_counts_releases_in_whole_numbers(reports):
    out = validate(reports["ledger"].read_text(encoding="utf-8"))
    (svg,) = [s for s in out.svgs if s.id == "fig-budget"]
    text = reports["ledger"].read_text(encoding="utf-8")
    body = text[text.index('id="fig-budget"') :]
    body = body[: body.index("</svg>")]
    # x ticks: the tick texts on the bottom row (y = HEIGHT − BOTTOM + 20 = 322).
    xs = re.findall(r'<text x="[\d.]+" y="322" text-anchor="middle" class="tick">([^<]+)<', body)
    assert xs and all(re.fullmatch(r"\d+", t) for t in xs), xs
    assert [int(t) for t in xs] == list(range(1, len(xs) + 1))
    assert svg.title


def _segments(svg: str) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Every line of the chart's series (coloured paths), their error bars and the dashed
    reference lines, as pixel segments."""
    out = []
    colours = "|".join(PALETTE)
    paths = re.findall(rf'<path d="([^"]+)" fill="none" stroke="(?:{colours})"', svg)
    # Error bars (a measured accuracy's interval): one subpath per stroke.
    paths += re.findall(rf'<path d="([^"]+)" stroke="(?:{colours})" stroke-width="1.6"', svg)
    for d in paths:
        for sub in d.split("M")[1:]:
            pts = [tuple(map(float, p.split())) for p in re.split(r"L", sub)]
            out += list(itertools.pairwise(pts))
    # The dashed reference lines (a coin flip, the budget).
    for x1, y1, x2, y2 in re.findall(
        r'<line x1="([-\d.]+)" y1="([-\d.]+)" x2="([-\d.]+)" y2="([-\d.]+)" stroke="#555" '
        r'stroke-dasharray="5 4"/>',
        svg,
    ):
        out.append(((float(x1), float(y1)), (float(x2), float(y2))))
    return out


def _crosses(box, a, b, steps: int = 200) -> bool:
    x0, y0, x1, y1 = box
    return any(
        x0 <= a[0] + (b[0] - a[0]) * t / steps <= x1
        and y0 <= a[1] + (b[1] - a[1]) * t / steps <= y1
        for t in range(steps + 1)
    )


@pytest.mark.parametrize("kind", KINDS)
def test_chart_labels_sit_clear_of_every_line(reports, kind):
    text = reports[kind].read_text(encoding="utf-8")
    for svg in re.findall(r"<svg class=\"chart\".*?</svg>", text, re.S):
        segs = _segments(svg)
        labels = re.findall(
            r'<text x="([-\d.]+)" y="([-\d.]+)" text-anchor="(\w+)" class="(mark|note)">'
            r"([^<]*)</text>",
            svg,
        )
        for x, y, anchor, kind_, words in labels:
            box = label_box(float(x), float(y), _html.unescape(words), anchor, kind_)
            hit = [s for s in segs if _crosses(box, *s)]
            assert not hit, (kind, words, box, hit[:2])


def test_label_placement_moves_off_a_line_through_the_default_spot():
    """A line running through where the chosen point's label would go first (up and right):
    the label goes elsewhere, clear of it."""
    from distprivacy.report._svg import Mark, Series, line_chart

    # A rising line through the marked point and a second one just above-right of it; then
    # the same near the dashed coin-flip line (the label must not sit on it either).
    test = {}
    cases = (([0.5, 0.6, 0.9], [0.55, 0.66, 0.95], 0.45),
             ([0.9, 0.53, 0.9], [0.95, 0.6, 0.95], 0.40))  # fmt: skip
    for k, (y, y2, low) in enumerate(cases):
        a = Series("a", [0.1, 1, 10], y, style=0)
        b = Series("b", [0.1, 1, 10], y2, style=1)
        test[k] = line_chart([a, b], fig_id="t", title="t", xlabel="x", ylabel="y", xlog=True,
                             marks=[Mark(1.0, y[1], "chosen: a at ε = 1")],
                             hlines=[(0.5, "coin flip")], ylim=(low, 1.0))  # fmt: skip
    for svg in test.values():
        segs = _segments(svg)
        assert segs
        for x, y, anchor, k, words in re.findall(
            r'<text x="([-\d.]+)" y="([-\d.]+)" text-anchor="(\w+)" class="(mark|note)">'
            r"([^<]*)</text>",
            svg,
        ):
            box = label_box(float(x), float(y), words, anchor, k)
            assert not any(_crosses(box, *s) for s in segs), (words, box)


def test_public_page_shows_the_published_clipped_values(tmp_path, capsys, adult_dir, monkeypatch):
    """A proportion whose noisy value falls outside [0, 1] is published clipped (0 or 1) by
    the terminal and in JSON: the public and the review pages show the same value, marked,
    with an interval inside [0, 1]."""
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    plan = str(tmp_path / "plan.json")
    stats = "proportion:sex==Female,count:race==White,mean:age"
    assert main(["calibrate", "--statistics", stats, "--mechanism", "ExpM-G", "--save", plan,
                 "--samples", "200", "--json"]) == 0  # fmt: skip
    capsys.readouterr()
    public, review = tmp_path / "public.html", tmp_path / "review.html"
    for seed in range(50):  # the first seed that clips the proportion, then its reports
        args = ["release", "--plan", plan, "--value", "0.01,99,40", "--seed", str(seed), "--json"]
        assert main(args) == 0
        if "proportion(sex==Female)" in json.loads(capsys.readouterr().out)["clipped"]:
            break
    else:
        pytest.fail("no seed of 50 gave a proportion outside [0, 1]")
    assert main([*args, "--report", str(public), "--review-report", str(review)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert stat.S_IMODE(os.stat(public).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(review).st_mode) == 0o600
    published = got["statistics"]
    for page in (public, review):
        rows = next(t for t in validate(page.read_text(encoding="utf-8")).tables
                    if t["id"] == "statistics-table")["rows"][1:]  # fmt: skip
        for r in rows:
            value = float(r[1].rstrip(" *"))
            assert f"{value:.4f}" == f"{published[r[0]]:.4f}", (page.name, r)
            assert r[1].endswith(" *") == (r[0] in got["clipped"]), r
            lo, hi = (float(x) for x in r[2].strip("[]").split(","))
            assert lo <= value <= hi
        first = rows[0]
        assert first[0] == "proportion(sex==Female)" and first[1] in ("0.0000 *", "1.0000 *")
        lo, hi = (float(x) for x in first[2].strip("[]").split(","))
        assert 0.0 <= lo < hi <= 1.0 and float(first[1][:6]) in (lo, hi)
        assert "was clipped into its range" in page.read_text(encoding="utf-8")


def test_the_noise_matrix_is_split_into_tables_that_fit():
    """Twelve mechanisms: three tables of four (each with the statistic column), every
    mechanism once, so that no table scrolls sideways on a laptop or loses a column on
    paper."""
    from types import SimpleNamespace

    import numpy as np

    from distprivacy.report._pages import MATRIX_COLUMNS, _matrix

    cals = [
        SimpleNamespace(mechanism=f"M{k}", statistic_names=["a", "b"],
                        noise_sd=np.array([1.0, 2.0]), relative_error=np.array([0.1, 0.2]))
        for k in range(12)
    ]  # fmt: skip
    from report_checks import parse

    out = parse(_matrix(cals))
    assert len(out.tables) == 3
    headers = [t["header"] for t in out.tables]
    assert all(h[0] == "statistic" and len(h) == 1 + MATRIX_COLUMNS for h in headers)
    assert [m for h in headers for m in h[1:]] == [f"M{k}" for k in range(12)]
