"""``distprivacy reproduce model-inference --quick``: files, report beside the paper, reuse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.experiments import model_inference as mi

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(adult_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("mi")
    messages: list[str] = []
    result = mi.run(out, quick=True, seed=0, data_dir=str(adult_dir), progress=messages.append)
    return out, result, messages


def test_quick_run_writes_everything(quick_run):
    out, result, messages = quick_run
    assert result["report"] == out / "report.md"
    assert set(result["timings"]) >= {"total", "data", "figure1", "defence", "plots"}
    for name in ("figure1", "cases", "regression", "defence"):
        png = out / f"{name}.png"
        assert png.stat().st_size > 10_000, name
        assert (out / f"{name}.csv").is_file()
    assert messages and any("attacking" in m for m in messages)
    cfg = mi.Config.quick(0)
    n_pops = len(list((out / "populations").glob("*.npz")))
    # G0 and each α for both roles and properties, plus the four ratios of the two cases
    assert n_pops == 2 * len(cfg.properties) * (1 + len(cfg.alphas)) + 2 * 4


def test_figure1_frame(quick_run):
    out, _, _ = quick_run
    df = pd.read_csv(out / "figure1.csv")
    cfg = mi.Config.quick(0)
    assert set(df.property) == set(cfg.properties)
    assert set(df.alpha) == set(cfg.alphas)
    counts = df.groupby(["property", "alpha", "attack"]).size()
    assert (counts.xs("loss test", level="attack") == 1).all()
    assert (counts.xs("threshold test", level="attack") == cfg.repetitions).all()
    assert (counts.xs(mi.PIN, level="attack") == cfg.repetitions).all()
    assert df.accuracy.between(0, 1).all() and (df.ci_lo <= df.accuracy).all()
    assert (df.n == 2 * cfg.n_victim).all()
    # accuracies are counts over the victim's models
    k = df.accuracy * df.n
    np.testing.assert_allclose(k, np.round(k), atol=1e-9)


def test_report_places_ours_beside_the_paper(quick_run):
    out, _, _ = quick_run
    text = (out / "report.md").read_text()
    for s in ("62.7 ± 2", "62.1 ± 1.7", "92.4 ± 2.6", "99 ± 0.1", "figure1.png", "defence.png"):
        assert s in text, s
    cases = pd.read_csv(out / "cases.csv")
    ours = 100 * cases[(cases.case == "A") & (cases.attack == "threshold test")].accuracy.mean()
    assert f"{ours - 62.7:+.1f}" in text  # the difference column is computed from the CSV


def test_populations_are_reused_only_when_settings_match(quick_run, adult_dir):
    from distprivacy.datasets import load_adult

    out, _, _ = quick_run
    cfg = mi.Config.quick(0)
    game = mi.load_game_data(load_adult(adult_dir), 0)
    settings = mi.population_settings(cfg, "sex", "victim", 0.0, 1, game)
    pop, loaded = mi.train_or_load(game, settings, out / "populations")
    assert loaded
    fresh, loaded_again = mi.train_or_load(game, settings, None)
    assert not loaded_again
    for a, b in zip(pop.weights, fresh.weights, strict=True):
        np.testing.assert_array_equal(a, b)  # bit-for-bit reproducible training
    changed = {**settings, "epochs": settings["epochs"] + 1}
    _, loaded = mi.train_or_load(game, changed, out / "populations", reuse=True)
    assert not loaded


def test_bad_configs():
    cases = [
        (mi.Config(properties=("age",)), "unknown property"),
        (mi.Config(alphas=(1.2,)), "ratios must lie in"),
        (mi.Config(cases=("C",)), "unknown case"),
        (mi.Config(n_victim=0), "n_victim must be a positive integer"),
        (mi.Config(defence_property="income"), "unknown defence property"),
    ]
    for cfg, text in cases:
        with pytest.raises(DistPrivacyError, match=text) as e:
            cfg.validate()
        assert "\n" not in str(e.value)


def test_render_rebuilds_the_same_report(quick_run, tmp_path):
    out, _, _ = quick_run
    before = (out / "report.md").read_text()
    (out / "figure1.png").unlink()
    assert mi.render(out) == out / "report.md"
    assert (out / "report.md").read_text() == before
    assert (out / "figure1.png").stat().st_size > 10_000
    with pytest.raises(DistPrivacyError, match=r"no run\.json"):
        mi.render(tmp_path)


def test_the_run_folder_is_complete_and_render_keeps_it_so(quick_run, tmp_path):
    from distprivacy.outputs import MARKER, run_status

    out, _, _ = quick_run
    status = run_status(out)
    assert status.complete, status.reason
    assert {"report.md", "run.json", "figure1.csv", "figure1.png"} <= set(status.files)
    assert not any(f.startswith("populations/") for f in status.files)  # a cache, not listed
    mi.render(out)
    after = run_status(out)
    assert after.complete and set(after.files) == set(status.files)
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / MARKER).write_text("interrupted")
    with pytest.raises(DistPrivacyError, match="unfinished run"):
        mi.render(tmp_path)
