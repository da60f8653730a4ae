"""The plotting module: each function writes a readable PNG from small synthetic frames."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest

from distprivacy.experiments import figures
from distprivacy.experiments import reference as ref

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EPS = (0.2, 1.0, 5.0)
RNG = np.random.default_rng(0)


@pytest.fixture
def captured(monkeypatch) -> list[dict]:
    """What each figure held when it was saved: its visible axes and all legend labels."""
    seen: list[dict] = []
    save = figures._style._save  # every figure is written through it

    def spy(fig, path):
        legends = [*fig.legends, *(a.get_legend() for a in fig.axes if a.get_legend())]
        seen.append(
            {
                "axes": [a for a in fig.axes if a.axison],
                "labels": [t.get_text() for lg in legends for t in lg.get_texts()],
            }
        )
        return save(fig, path)

    monkeypatch.setattr(figures._style, "_save", spy)
    return seen


def assert_png(path: Path, expected: Path) -> None:
    assert path == expected and path.is_file()
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert path.stat().st_size > 20_000
    h, w, _ = mpimg.imread(path).shape
    assert h > 400 and w > 600


def l2_rows(mechs, xs, x: str, **const) -> list[dict]:
    rows = []
    for k, (m, v) in enumerate(product(mechs, xs)):
        exact = (
            0.0
            if (m == "DauM-G" and v == xs[-1])
            else 10.0 * (k + 1) / (v if x == "epsilon" else 1 - v)
        )
        rows.append(
            {
                **const,
                "mechanism": m,
                x: v,
                "delta": 1e-3,
                "l2_exact": exact,
                "l2_mean_of_draws": exact * 1.05,
                "draws": 50,
            }
        )
    return rows


def test_plot_table2(tmp_path, captured):
    mechs = ("ExpM-G", "EigM-G", "DauM-G", "GroupDP-G")
    df = pd.DataFrame(l2_rows(mechs, EPS, "epsilon"))
    df["l2_exact"] = df.l2_exact + 1.0
    df["protocol_mean"] = df.l2_exact * 0.98
    df["protocol_sd"] = df.l2_exact * 0.05
    df["paper"] = [ref.TABLE2[(m, e)] for m, e in zip(df.mechanism, df.epsilon, strict=True)]
    out = tmp_path / "sub" / "table2.png"
    assert_png(figures.plot_table2(df, out), out)
    (fig,) = captured
    assert len(fig["axes"]) == 2
    assert any("paper" in label for label in fig["labels"])


def test_plot_figure2(tmp_path, captured):
    df = pd.concat(
        [
            pd.DataFrame(
                l2_rows(figures.TABLE1, (0.1, 1.0, 10.0), "epsilon", property=p, delta_p=d)
            )
            for p, d in (("income", 0.1), ("workclass", 0.04))
        ]
    )
    out = tmp_path / "figure2.png"
    assert_png(figures.plot_figure2(df, out), out)
    (fig,) = captured
    assert len(fig["axes"]) == 3
    assert set(figures.TABLE1) <= set(fig["labels"])
    assert "paper (Table 2)" in fig["labels"]
    assert any("error 0" in label for label in fig["labels"])


def test_plot_figure3(tmp_path, captured):
    mechs = (*figures.TABLE1, "DP-G")
    df = pd.concat(
        [
            pd.DataFrame(l2_rows(mechs, (0.04, 0.12, 0.28), "delta_p", property=p, epsilon=1.0))
            for p in ("income", "workclass")
        ]
    )
    cross = pd.DataFrame(
        {
            "property": ["income", "workclass"],
            "crossing_delta_p": [0.118, np.nan],
            "paper": [0.12, 0.28],
        }
    )
    out = tmp_path / "figure3.png"
    assert_png(figures.plot_figure3(df, cross, out), out)
    (fig,) = captured
    assert len(fig["axes"]) == 2
    assert "DP-G" in fig["labels"]
    assert sum(label.startswith("paper:") for label in fig["labels"]) == 2
    assert sum(label.startswith("DauM-G = DP-G") for label in fig["labels"]) == 1


def attack_rows(attacks, mechs, eps, deltas) -> list[dict]:
    rows = []
    for a in attacks:
        acc = 0.75 + 0.01 * RNG.standard_normal()
        rows.append(
            {
                "attack": a,
                "mechanism": "none",
                "epsilon": np.nan,
                "delta": np.nan,
                "accuracy": acc,
                "ci_low": acc - 0.01,
                "ci_high": acc + 0.01,
                "repetitions": 5,
            }
        )
        for m, e, d in product(mechs, eps, deltas):
            acc = 0.5 + 0.05 * np.log10(10 * e) + 0.01 * RNG.standard_normal()
            rows.append(
                {
                    "attack": a,
                    "mechanism": m,
                    "epsilon": e,
                    "delta": d,
                    "accuracy": acc,
                    "ci_low": acc - 0.01,
                    "ci_high": acc + 0.01,
                    "repetitions": 5,
                }
            )
    return rows


def test_plot_figure4(tmp_path, captured):
    df = pd.DataFrame(
        attack_rows(
            ("paper", "adaptive", "likelihood-ratio"), figures.DEFENCES, (0.1, 1.0, 10.0), (1e-3,)
        )
    )
    out = tmp_path / "figure4.png"
    assert_png(figures.plot_figure4(df, out), out)
    (fig,) = captured
    assert len(fig["axes"]) == 3
    assert {*figures.DEFENCES, "no defence"} <= set(fig["labels"])
    assert any(label.startswith("paper") for label in fig["labels"])


def test_plot_table3(tmp_path, captured):
    mechs = ("ExpM-G", "EigM-G", "DauM-G")
    df = pd.DataFrame(attack_rows(("paper", "adaptive"), mechs, EPS, (1e-4, 1e-3, 1e-2)))
    df["paper"] = [
        ref.NO_DEFENCE_ACCURACY if m == "none" else ref.TABLE3[(m, e, d)]
        for m, e, d in zip(df.mechanism, df.epsilon, df.delta, strict=True)
    ]
    out = tmp_path / "table3.png"
    assert_png(figures.plot_table3(df, out), out)
    (fig,) = captured
    assert len(fig["axes"]) == 3
    assert {"δ = 0.0001", "δ = 0.001", "δ = 0.01", "paper (Table 3)"} <= set(fig["labels"])


def test_plot_figure5(tmp_path, captured):
    names = ["mean(age)", "count(sex==Female)", "mean(hours_per_week)"]
    samples = {
        p: np.column_stack(
            [
                RNG.normal(40, 1.2, 300),
                RNG.binomial(100, 0.3 - p / 10, 300),
                RNG.normal(42, 1.2, 300),
            ]
        ).astype(float)
        for p in (0.45, 0.55)
    }
    summary = pd.DataFrame(
        [
            {
                "statistic": n,
                "p": p,
                "mean": x[:, k].mean(),
                "variance": x[:, k].var(ddof=1),
                "paper_variance": ref.FIG5_FEMALE_VARIANCE[p] if "Female" in n else np.nan,
            }
            for p, x in samples.items()
            for k, n in enumerate(names)
        ]
    )
    out = tmp_path / "figure5.png"
    assert_png(figures.plot_figure5(summary, samples, out), out)
    (fig,) = captured
    assert len(fig["axes"]) == 3
    assert sum(label.startswith("p = 0.45: N(") for label in fig["labels"]) == 3


def test_no_pyplot_figures_left_open(tmp_path):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    df = pd.DataFrame(
        l2_rows(figures.TABLE1, (0.1, 1.0), "epsilon", property="income", delta_p=0.1)
    )
    figures.plot_figure2(df, tmp_path / "f.png")
    assert plt.get_fignums() == before


def test_mechanism_colours_distinct():
    colours = list(figures.MECHANISM_COLORS.values())
    assert len(set(colours)) == len(colours)
    for m in (
        "ExpM-L",
        "DirM-L",
        "ExpM-G",
        "DirM-G",
        "EigM-G",
        "DauM-G",
        "GroupDP-G",
        "DP-G",
        "none",
    ):
        assert figures.mechanism_color(m) == figures.MECHANISM_COLORS[m]


def test_plot_all_skips_missing_frames(tmp_path):
    src = tmp_path / "frames"
    src.mkdir()
    names = ["mean(age)", "count(sex==Female)"]
    x = {
        p: np.column_stack([RNG.normal(40, 1, 200), RNG.binomial(100, 0.27, 200)])
        for p in (0.45, 0.55)
    }
    pd.DataFrame(
        [
            {"statistic": n, "p": p, "mean": a[:, k].mean(), "variance": a[:, k].var(ddof=1)}
            for p, a in x.items()
            for k, n in enumerate(names)
        ]
    ).to_csv(src / "figure5.csv", index=False)
    np.savez(src / "figure5_samples.npz", **{f"p{p:g}": a for p, a in x.items()})
    written = figures.plot_all(src, tmp_path / "out")
    assert written == [tmp_path / "out" / "figure5.png"]
    assert_png(written[0], written[0])
