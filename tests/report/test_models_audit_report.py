"""The report of ``models audit --report`` (Suri & Evans' game on the user's table): the
steward's words first with the verdict against a coin flip, one table row per attack and pair
of shares holding exactly the numbers the command printed, the figure of the measured
accuracies with their intervals against the coin flip, and what the numbers rest on (shadow
models, samples, seed)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
from conftest import MODELS_GAME, MODELS_TABLE
from report_checks import validate

from distprivacy.cli import main
from distprivacy.inference.attacks import AttackScore
from distprivacy.report import models_audit_report


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _rows(text: str, table_id: str) -> list[list[str]]:
    out = validate(text)
    return next(t for t in out.tables if t["id"] == table_id)["rows"][1:]


def _table_html(text: str, table_id: str) -> str:
    t = text[text.index(f'<table id="{table_id}"') :]
    return t[: t.index("</table>")]


#: The verdict of an attack whose whole interval lies above 50 % (a styled span).
REVEALS = '<span class="verdict-bad">reveals the share</span>'


def _printed(reports, capsys, ratios: str) -> dict:
    table = reports["models"].parent / MODELS_TABLE
    assert main(["models", "audit", "--data", str(table), *MODELS_GAME, "--ratios", ratios,
                 "--json"]) == 0  # fmt: skip
    return json.loads(capsys.readouterr().out)


def test_two_ratios_table_holds_the_printed_numbers(reports, capsys):
    printed = _printed(reports, capsys, "0.2,0.6")["attacks"]
    text = reports["models"].read_text(encoding="utf-8")
    rows = _rows(text, "statistics-table")
    assert len(rows) == len(printed) == 4  # logistic models: the white-box attack runs too
    for k, (row, a) in enumerate(zip(rows, printed, strict=True), start=1):
        lo, hi = a["ci95"]
        assert row[:6] == ["20 % vs 60 %", str(k), a["name"], _pct(a["accuracy"]),
                           f"[{_pct(lo)}, {_pct(hi)}]", f"{a['advantage']:.3g}"]  # fmt: skip
        assert row[6] == str(a["n"]) == "40"  # 20 victim models per share
        if lo <= 0.5:
            assert row[7] in (
                "not measurably better than a coin flip",
                "below a coin flip (erred consistently)",
            )
    above = sum(a["ci95"][0] > 0.5 for a in printed)
    assert _table_html(text, "statistics-table").count(REVEALS) == above


def test_three_ratios_every_pair_and_the_regression(reports, capsys):
    printed = _printed(reports, capsys, "0.2,0.4,0.6")
    text = reports["models-pairs"].read_text(encoding="utf-8")
    rows = _rows(text, "statistics-table")
    pairs = [f"{100 * p['ratios'][0]:g} % vs {100 * p['ratios'][1]:g} %"
             for p in printed["pairs"] for _ in p["attacks"]]  # fmt: skip
    assert (
        [r[0] for r in rows]
        == pairs
        == ["20 % vs 40 %"] * 4 + ["20 % vs 60 %"] * 4 + ["40 % vs 60 %"] * 4
    )
    accuracies = [_pct(a["accuracy"]) for p in printed["pairs"] for a in p["attacks"]]
    assert [r[3] for r in rows] == accuracies
    reg = _rows(text, "regression-table")
    assert [r[0] for r in reg] == [r["name"] for r in printed["regression"]]
    assert [r[1] for r in reg] == [f"{r['mae']:.3g}" for r in printed["regression"]]
    assert [r[5] for r in reg] == ["60", "60"]  # 20 victim models per share, three shares
    # The verdict in words matches the table: a leak is named iff an interval lies above 50 %.
    statement = text[text.index('<section class="statement"') :]
    statement = statement[: statement.index("</section>")]
    above = sum(a["ci95"][0] > 0.5 for p in printed["pairs"] for a in p["attacks"])
    assert _table_html(text, "statistics-table").count(REVEALS) == above
    assert ("THE SHARE LEAKS" in statement) == (above > 0)
    assert "Predicting the share itself" in statement


def test_figure_accuracy_against_a_coin_flip(reports):
    for kind, n_series in (("models", 1), ("models-pairs", 3)):
        text = reports[kind].read_text(encoding="utf-8")
        out = validate(text)
        (svg,) = out.svgs
        assert svg.id == "fig-models-audit"
        assert svg.title == "Measured attack accuracy against a coin flip"
        assert svg.title in out.headings
        assert [t for c, t in svg.texts if c == "axis"] == [
            "attack (numbered as in the table)",
            "attack accuracy (%)",
        ]
        # The dashed 50 % line, named on the chart where a spot beside it crosses no error
        # bar (else by the legend alone, below).
        assert ("note", "coin flip") in svg.texts or kind == "models-pairs"
        ticks = [t for c, t in svg.texts if c == "tick"]
        assert {"1", "2", "3", "4"} <= set(ticks)  # attacks numbered as in the table
        fig = text[text.index('id="fig-models-audit"') :]
        fig = fig[: fig.index("</figure>")]
        legend = fig[fig.index('<ul class="legend">') :]
        assert legend.count("<li>") == n_series + 1 and "50 %: a coin flip" in legend
        assert "Attacks: 1 loss test; 2 threshold test" in fig
        # One error bar per attack and pair: the vertical interval paths.
        assert fig.count('stroke-width="1.6"') == 4 * n_series


def test_assumptions_and_checks_state_models_samples_and_seed(reports):
    for kind, trained in (("models", 80), ("models-pairs", 120)):
        text = reports[kind].read_text(encoding="utf-8")
        out = validate(text)
        assert out.headings.index("Assumptions and checks") > out.headings.index("Per attack")
        checks = text[text.index('<section id="assumptions-and-checks">') :]
        assert f"{trained} trained: per share, 20 for the adversary and 20 for the victim" in checks
        assert '<td>rows per training set</td><td data-label="value">100</td>' in checks
        assert '<td>seed</td><td data-label="value">1</td>' in checks
        assert "Clopper–Pearson" in checks
        assert "run (" in checks and "parameters per model)" in checks  # white-box attack
        assert "sex" in text and "age, hours_per_week, education_num, income" in text


def _fake(accuracies, intervals, ratios=((0.3, 0.5),), protect="a==b"):
    """A report from made-up scores (no training): the verdict's branches."""
    games = [
        {"ratios": list(r),
         "attacks": [AttackScore(f"attack {k}", a, iv, 2 * a - 1, 100)
                     for k, (a, iv) in enumerate(zip(accuracies, intervals, strict=True))]}
        for r in ratios
    ]  # fmt: skip
    pop = SimpleNamespace(n_models=50, n_parameters=0)
    ratio_list = sorted({x for r in ratios for x in r})
    audit = SimpleNamespace(
        ratios=tuple(ratio_list),
        adversary=[pop] * len(ratio_list),
        victim=[pop] * len(ratio_list),
        tests=[(np.zeros((70, 3)), np.zeros(70))] * len(ratio_list),
        prep=SimpleNamespace(protect=protect),
    )
    return models_audit_report(
        audit, games, context={"protect": protect, "n_train": 300, "seed": 7, "data": "t.csv"}
    )


def _statement(text: str) -> str:
    s = text[text.index('<section class="statement"') :]
    return s[: s.index("</section>")]


def test_the_verdict_in_words():
    leak = _statement(_fake([0.5, 0.8], [(0.4, 0.6), (0.71, 0.87)]))
    assert "THE SHARE LEAKS: telling 30 % vs 50 % apart, the attack 1 guessed right 80.0 %" in leak
    assert (
        "(confidence interval 71.0 % to 87.0 %, 100 victim models), where 50 % is a coin flip"
        in leak
    )
    assert "1 of the 2 intervals lies wholly above 50 %" in leak
    safe = _statement(_fake([0.52, 0.55], [(0.42, 0.62), (0.45, 0.65)]))
    assert "THE SHARE LEAKS" not in safe
    assert "No attack did measurably better than a coin flip" in safe
    assert "attack 1 guessed right 55.0 %" in safe  # the closest call: highest lower end
    assert "a measurement, not a guarantee" in safe
    pairs = _statement(_fake([0.5], [(0.4, 0.6)], ratios=((0.1, 0.3), (0.1, 0.5), (0.3, 0.5))))
    assert "(of the 3 pairs of shares)" in pairs


def test_no_white_box_and_user_text_escaped():
    text = _fake([0.5], [(0.4, 0.6)], protect='x=="<b>&')
    out = validate(text)
    assert "<b>" not in text and "x==&quot;&lt;b&gt;&amp;" in text
    assert 'x=="<b>&' in "".join(out.text)
    assert '<td>white-box attack</td><td data-label="value">not applicable</td>' in text
    assert "no exact statistic" in text
