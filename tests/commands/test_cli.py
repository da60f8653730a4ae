"""Tests of the command line (``distprivacy.cli.main``), in-process with capsys, plus one run of
the installed console script."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query

DEFAULT_NAMES = [
    "mean(age)",
    "mean(education_num)",
    "count(marital_status==Never-married)",
    "count(sex==Female)",
    "mean(hours_per_week)",
]
REQUIRED_MECHANISMS = {
    "ExpM-L",
    "DirM-L",
    "ExpM-G",
    "DirM-G",
    "EigM-G",
    "DauM-G",
    "Wasserstein",
    "ApproxWasserstein",
    "GroupDP-L",
    "GroupDP-G",
}
PURE_EPSILON = {"ExpM-L", "DirM-L", "Wasserstein", "GroupDP-L"}
# Chen & Ohrimenko (2023), Table 2: expected L2 error on Adult, p ∈ {0.45, 0.55}, n = 100.
TABLE2 = {
    1.0: {"ExpM-G": 34.98, "EigM-G": 34.87, "DauM-G": 13.40, "GroupDP-G": 1539.93},
    0.2: {"ExpM-G": 177.28, "EigM-G": 175.65, "DauM-G": 69.85, "GroupDP-G": 7394.67},
}
# The paper's §4.3 example.
SECTION_4_3_COV = [[22.0, -6.0], [-6.0, 13.0]]


# --------------------------------------------------------------------------------------------
# Helpers and fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, adult_dir, tmp_path):
    """Default data from the shared Adult files; never the network or the user's cache."""
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")  # rich: no wrapping of the human-readable output


def _user_file_defaults(args: tuple[str, ...]) -> list[str]:
    """A user's --data file needs --protect and --statistics (issue 23): these tests' own
    small files get the Adult-like choices they were written for, unless a test gives its own
    (or gives --model, which replaces the data options)."""
    out = list(args)
    if "--data" in out and "--model" not in out:
        data = out[out.index("--data") + 1]
        if data.endswith(".csv"):
            if "--protect" not in out:
                out += ["--protect", "income==>50K"]
            if "--statistics" not in out:
                out += ["--statistics", "mean:age"]
    return out


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(_user_file_defaults(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def run_json(capsys, *args: str) -> dict:
    rc, out, err = run(capsys, *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def assert_one_line_error(rc: int, out: str, err: str, *keywords: str) -> str:
    """Exit status 2, exactly one stderr line ``error: ...`` naming the problem, no traceback."""
    assert rc == 2
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("error: ")
    for k in keywords:
        assert k.lower() in line.lower(), (k, line)
    return line


def _synthetic(rows: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, rows),
            "hours": np.round(rng.normal(40.0, 10.0, rows), 1),
            "sex": rng.choice(["Male", "Female"], rows),
            "income": np.where(rng.random(rows) < 0.4, ">50K", "<=50K"),
        }
    )


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory) -> str:
    """200 synthetic records (age int, hours float, sex, income), about 40% with >50K."""
    path = tmp_path_factory.mktemp("data") / "small.csv"
    _synthetic().to_csv(path, index=False)
    return str(path)


def _write_model(path, covariances, means=((100.0, 101.0), (99.0, 102.0))) -> str:
    """A model file in the format of load_model_file (JSON or TOML by suffix)."""
    thetas = [
        {"label": lab, "mean": list(m), "covariance": c}
        for lab, m, c in zip(("a", "b"), means, covariances, strict=True)
    ]
    if str(path).endswith(".json"):
        path.write_text(
            json.dumps({"statistics": ["x", "y"], "thetas": thetas, "pairs": [["a", "b"]]})
        )
    else:
        lines = ['statistics = ["x", "y"]', 'pairs = [["a", "b"]]']
        for t in thetas:
            lines += [
                "",
                "[[thetas]]",
                f'label = "{t["label"]}"',
                f"mean = {json.dumps(t['mean'])}",
                f"covariance = {json.dumps(t['covariance'])}",
            ]
        path.write_text("\n".join(lines) + "\n")
    return str(path)


def _numbers(obj) -> list[float]:
    """Every float in a JSON document."""
    if isinstance(obj, bool):
        return []
    if isinstance(obj, float):
        return [obj]
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _numbers(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in _numbers(v)]
    return []


@pytest.fixture(scope="module")
def default_calibration(adult_dir, tmp_path_factory) -> dict:
    """``calibrate --epsilon 1 --delta 0.001 --calibration classic --json`` (the paper's rule, for
    Table 2) on the Adult defaults, run once for the
    module (the seed fixes the Monte-Carlo samples; seed 4 keeps the Wasserstein step fast)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DISTPRIVACY_DATA", str(adult_dir))
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        with redirect_stdout(out), redirect_stderr(err):
            rc = main(
                [
                    "calibrate",
                    "--epsilon",
                    "1",
                    "--delta",
                    "0.001",
                    "--seed",
                    "4",
                    "--calibration",
                    "classic",
                    "--json",
                ]
            )
    assert rc == 0, err.getvalue()
    return json.loads(out.getvalue())


def _by_name(doc: dict) -> dict[str, dict]:
    return {m["name"]: m for m in doc["mechanisms"]}


# --------------------------------------------------------------------------------------------
# calibrate
# --------------------------------------------------------------------------------------------


def test_calibrate_json_adult_defaults(default_calibration):
    d = default_calibration
    assert d["spec"]["property"] == "income==>50K"
    assert d["spec"]["values"] == [0.45, 0.55]
    assert d["spec"]["counts"] == [45, 55]
    assert d["spec"]["n"] == 100
    assert sorted(map(tuple, d["spec"]["pairs"])) == [(0.45, 0.55), (0.55, 0.45)]
    assert d["statistics"] == DEFAULT_NAMES
    assert d["epsilon"] == 1.0 and d["delta"] == 0.001 and d["calibration"] == "classic"
    assert isinstance(d["mechanisms"], list)
    mechs = _by_name(d)
    assert len(mechs) == len(d["mechanisms"])  # no duplicates
    assert REQUIRED_MECHANISMS <= set(mechs)
    for name, m in mechs.items():
        assert m["name"] == name
        cov = np.array(m["noise_covariance"], dtype=float)
        assert cov.shape == (5, 5)
        np.testing.assert_allclose(cov, cov.T, rtol=0, atol=1e-9 * np.abs(cov).max())
        w = np.linalg.eigvalsh((cov + cov.T) / 2)
        assert w.min() >= -1e-9 * w.max(), (name, w)
        err = m["expected_l2_error"]
        assert isinstance(err, float) and math.isfinite(err) and err > 0
        # E‖Z‖ ≤ √E‖Z‖² = √tr Cov(Z) (Jensen), and tr Cov(Z) is the reported squared error.
        assert m["expected_squared_error"] == pytest.approx(np.trace(cov), rel=1e-9)
        assert err <= math.sqrt(np.trace(cov)) * (1 + 1e-9)
        assert m["epsilon"] == 1.0
        assert m["delta"] == (0.0 if name in PURE_EPSILON else 0.001), name
        assert m["statistics"] == DEFAULT_NAMES
    # NoNoise cannot be calibrated at ε = 1 on Adult, and says why.
    assert "NoNoise" not in mechs
    assert "no-noise test fails" in d["not_applicable"]["NoNoise"]


def _check_table2(doc: dict, epsilon: float) -> None:
    mechs = _by_name(doc)
    for name, paper in TABLE2[epsilon].items():
        got = mechs[name]["expected_l2_error"]
        assert got == pytest.approx(paper, rel=0.10), (name, got, paper)
        assert mechs[name]["epsilon"] == epsilon and mechs[name]["delta"] == 0.001


def test_calibrate_matches_table2_at_epsilon_1(default_calibration):
    assert default_calibration["modeling"] == "monte-carlo+exact"  # the default, auto
    _check_table2(default_calibration, 1.0)


def test_calibrate_matches_table2_at_epsilon_0_2(capsys):
    d = run_json(
        capsys,
        "calibrate",
        "--epsilon",
        "0.2",
        "--delta",
        "0.001",
        "--modeling",
        "exact",
        "--calibration",
        "classic",
    )
    assert d["modeling"] == "exact"
    _check_table2(d, 0.2)
    # Without samples the Wasserstein mechanisms are reported, not calibrated.
    assert "needs samples" in d["not_applicable"]["Wasserstein"]
    # ExpM-G: σ = c·Δ_E,2/ε with ε = 0.2 and c = √(2 ln(1.25/δ)).
    c = math.sqrt(2 * math.log(1.25 / 0.001))
    assert _by_name(d)["ExpM-G"]["noise_scales"][0] == pytest.approx(
        5 * _by_name(d)["ExpM-G"]["sensitivity"] * c, rel=1e-12
    )


def test_calibrate_human_readable_lists_mechanisms_and_not_applicable(capsys, default_calibration):
    rc, out, err = run(capsys, "calibrate", "--seed", "4", "--all")
    assert rc == 0, err
    assert "Traceback" not in err
    for name in _by_name(default_calibration):
        assert name in out, name
    assert "income==>50K" in out and "p ∈ [0.45, 0.55]" in out
    head, sep, tail = out.partition("Not applicable")
    assert sep, out
    assert "NoNoise is not applicable" in tail
    assert "no-noise test fails" in tail
    assert "NoNoise" not in head


def test_calibrate_selected_mechanisms(capsys, default_calibration):
    d = run_json(
        capsys,
        "calibrate",
        "--mechanism",
        "DauM-G",
        "--mechanism",
        "expm-g",  # case-insensitive
        "--modeling",
        "exact",
        "--calibration",
        "classic",
    )
    assert [m["name"] for m in d["mechanisms"]] == ["DauM-G", "ExpM-G"]
    assert d["not_applicable"] == {}
    # Exact moments here and in the default run (auto = exact moments + samples): same noise.
    full = _by_name(default_calibration)
    for m in d["mechanisms"]:
        assert m["expected_l2_error"] == pytest.approx(
            full[m["name"]]["expected_l2_error"], rel=1e-9
        )


# --------------------------------------------------------------------------------------------
# release
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_release_seeded_is_reproducible_and_hides_true_statistics(capsys, adult):
    args = ("release", "--seed", "3", "--modeling", "exact", "--mechanism", "DauM-G", "--json")
    rc1, out1, err1 = run(capsys, *args)
    rc2, out2, err2 = run(capsys, *args)
    assert rc1 == rc2 == 0, err1 + err2
    assert out1 == out2
    d = json.loads(out1)
    assert d["secure_randomness"] is False
    assert list(d["statistics"]) == DEFAULT_NAMES
    assert d["calibration"]["name"] == "DauM-G"
    # The released dataset: the CLI draws a θ at random and a dataset as that θ says, with
    # numpy's generator seeded by --seed.
    from distprivacy.engines import resolve_engine
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    gen = np.random.default_rng(3)
    t = int(gen.integers(2))
    query = Query.parse(ADULT_DEFAULT_STATISTICS)
    true = resolve_engine("pandas", adult).subset_statistics(spec, query, [spec.counts[t]], 1, gen)[
        0
    ][0]
    noisy = np.array(list(d["statistics"].values()))
    # DauM-G adds noise along one direction only: released − true is parallel to it.
    v = np.array(d["calibration"]["details"]["direction"])
    z = noisy - true
    assert np.linalg.norm(z) > 1e-6
    assert abs(z @ v) / np.linalg.norm(z) == pytest.approx(1.0, abs=1e-9)
    # The true statistics appear nowhere in the output.
    floats = _numbers(d)
    for t in true:
        assert not any(math.isclose(x, t, rel_tol=1e-9, abs_tol=1e-12) for x in floats), t


def test_release_without_seed_uses_secure_noise(capsys):
    args = ("release", "--modeling", "exact", "--json")
    rc1, out1, err1 = run(capsys, *args)
    rc2, out2, err2 = run(capsys, *args)
    assert rc1 == rc2 == 0, err1 + err2
    d1, d2 = json.loads(out1), json.loads(out2)
    assert d1["secure_randomness"] is True and d2["secure_randomness"] is True
    assert d1["statistics"] != d2["statistics"]
    assert d1["calibration"] == d2["calibration"]  # same calibration, different noise


def test_release_expm_l_human_readable(capsys):
    rc, out, err = run(
        capsys, "release", "--mechanism", "ExpM-L", "--seed", "1", "--modeling", "exact"
    )
    assert rc == 0, err
    assert "Release by ExpM-L" in out
    assert "Theorem 4.1" in out
    assert "(ε, δ) = (1, 0)" in out and "μ-GDP" not in out  # pure ε: no μ (issue 33)
    for name in DEFAULT_NAMES:
        assert name in out
    assert "laplace" in out
    assert "never publish a seeded release" in out


def test_release_target_csv(capsys, adult, tmp_path):
    target = adult.iloc[1000:1100]
    path = tmp_path / "target.csv"
    target.to_csv(path, index=False)
    d = run_json(capsys, "release", "--target", str(path), "--seed", "7", "--modeling", "exact",
                 "--mechanism", "DauM-G")  # fmt: skip
    assert d["target"] == str(path)
    assert d["secure_randomness"] is False
    true = Query.parse(ADULT_DEFAULT_STATISTICS).evaluate(target)
    z = np.array(list(d["statistics"].values())) - true
    v = np.array(d["calibration"]["details"]["direction"])
    assert np.linalg.norm(z) > 1e-6
    assert abs(z @ v) / np.linalg.norm(z) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("rows", [99, 101])
def test_release_target_wrong_size(capsys, adult, tmp_path, rows):
    path = tmp_path / "target.csv"
    adult.iloc[:rows].to_csv(path, index=False)
    rc, out, err = run(capsys, "release", "--target", str(path), "--modeling", "exact")
    assert_one_line_error(rc, out, err, f"target has {rows} records", "--subset-size is 100")
    assert out == ""


# --------------------------------------------------------------------------------------------
# --model
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_model_file_section_4_3_eigm_g(capsys, tmp_path, suffix):
    path = _write_model(tmp_path / f"model{suffix}", [SECTION_4_3_COV, SECTION_4_3_COV])
    d = run_json(
        capsys, "calibrate", "--model", path, "--mechanism", "EigM-G", "--calibration", "classic",
        "--include-model",
    )  # fmt: skip
    assert d["model_file"] == path
    [m] = d["mechanisms"]
    assert m["name"] == "EigM-G" and m["statistics"] == ["x", "y"]
    c = math.sqrt(2 * math.log(1.25 / 0.001))
    T = (c * math.sqrt(2) / 1.0) ** 2  # Δ_E,2 = ‖(1, −1)‖ = √2, ε = 1
    v1 = np.array([1.0, 2.0]) / math.sqrt(5)  # eigenvalue 10
    v2 = np.array([2.0, -1.0]) / math.sqrt(5)  # eigenvalue 25
    assert T - 10 == pytest.approx(18.52, abs=0.01) and T - 25 == pytest.approx(3.52, abs=0.01)
    expected = (T - 10) * np.outer(v1, v1) + (T - 25) * np.outer(v2, v2)
    np.testing.assert_allclose(np.array(m["noise_covariance"]), expected, rtol=1e-3, atol=1e-9)
    assert m["details"]["top_up"] == 0.0
    assert d["model"]["means"] == [[100.0, 101.0], [99.0, 102.0]]


def test_calibrate_json_prints_the_model_only_when_asked(capsys, tmp_path):
    """Issue 30: the fitted θ-means and covariances are exact population statistics (0600 in a
    plan): `calibrate --json` omits them, saying how to get them; --include-model prints them
    and says on stderr that stdout holds them; a --config file never turns it on."""
    path = _write_model(tmp_path / "model.json", [SECTION_4_3_COV, SECTION_4_3_COV])
    args = ("calibrate", "--model", path, "--mechanism", "EigM-G", "--json")
    rc, out, err = run(capsys, *args)
    assert rc == 0 and err == "", err
    d = json.loads(out)
    assert isinstance(d["model"], str) and "--include-model" in d["model"]
    assert "exact population statistics" in d["model"]
    rc, out, err = run(capsys, *args, "--include-model")
    assert rc == 0 and json.loads(out)["model"]["covariances"] == [SECTION_4_3_COV] * 2
    assert len(err.splitlines()) == 1 and "stdout holds exact population statistics" in err
    cfg = tmp_path / "c.toml"
    cfg.write_text("include-model = true\n")
    rc, out, err = run(capsys, *args, "--config", str(cfg))
    assert_one_line_error(rc, out, err, "include-model cannot come from a file")


def test_model_with_data_is_an_error(capsys, tmp_path, small_csv):
    path = _write_model(tmp_path / "model.json", [SECTION_4_3_COV, SECTION_4_3_COV])
    rc, out, err = run(capsys, "calibrate", "--model", path, "--data", small_csv)
    assert_one_line_error(rc, out, err, "--model replaces the data options", "--data")


def test_release_with_model_file_is_an_error(capsys, tmp_path):
    # release computes F of a dataset, which a model file alone cannot give.
    path = _write_model(tmp_path / "model.json", [SECTION_4_3_COV, SECTION_4_3_COV])
    rc, out, err = run(capsys, "release", "--model", path, "--mechanism", "EigM-G")
    assert_one_line_error(rc, out, err, "--model")


# --------------------------------------------------------------------------------------------
# Bad input: exit status 2, one line on stderr
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", ["0", "-1", "0.0", "nan", "inf"])
def test_bad_epsilon(capsys, small_csv, epsilon):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--epsilon", epsilon)
    assert_one_line_error(rc, out, err, "epsilon must be a positive number")


@pytest.mark.parametrize("epsilon", ["0", "-1"])
def test_bad_epsilon_release(capsys, small_csv, epsilon):
    rc, out, err = run(capsys, "release", "--data", small_csv, "--epsilon", epsilon)
    assert_one_line_error(rc, out, err, "epsilon must be a positive number")


@pytest.mark.parametrize("delta", ["0", "1", "1.5", "-0.1"])
def test_bad_delta_calibrate(capsys, small_csv, delta):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--delta", delta)
    assert_one_line_error(rc, out, err, "delta must lie in (0, 1)")


@pytest.mark.parametrize("delta", ["0", "1", "1.5"])
def test_bad_delta_release_gaussian(capsys, small_csv, delta):
    rc, out, err = run(
        capsys, "release", "--data", small_csv, "--mechanism", "ExpM-G", "--delta", delta
    )
    assert_one_line_error(rc, out, err, "delta must lie in (0, 1)")


def test_delta_zero_is_fine_for_a_pure_epsilon_release(capsys, small_csv):
    d = run_json(
        capsys,
        "release",
        "--data",
        small_csv,
        "--protect",
        "income==>50K",
        "--statistics",
        "mean:age",
        "--mechanism",
        "ExpM-L",
        "--delta",
        "0",
        "--seed",
        "0",
    )
    assert d["calibration"]["name"] == "ExpM-L" and d["calibration"]["delta"] == 0.0


@pytest.mark.parametrize(
    "args",
    [
        ("--protect", "nosuch==1", "--statistics", "mean:age"),
        ("--protect", "income==>50K", "--statistics", "mean:age,mean:nosuch"),
        ("--protect", "income==>50K", "--statistics", "count:nosuch==1"),
    ],
    ids=["protect", "statistics-mean", "statistics-count"],
)
def test_unknown_column(capsys, small_csv, args):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, *args)
    line = assert_one_line_error(rc, out, err, "unknown column 'nosuch'")
    assert "age, hours, sex, income" in line


def test_predicate_no_record_satisfies(capsys, small_csv):
    rc, out, err = run(
        capsys,
        "calibrate",
        "--data",
        small_csv,
        "--protect",
        "income==nobody",
        "--statistics",
        "mean:age",
    )
    assert_one_line_error(rc, out, err, "no record satisfies", "income==nobody")


def test_predicate_every_record_satisfies(capsys, small_csv):
    rc, out, err = run(
        capsys, "calibrate", "--data", small_csv, "--protect", "age>=0", "--statistics", "mean:age"
    )
    assert_one_line_error(rc, out, err, "every record satisfies", "age>=0")


def test_count_larger_than_property_group(capsys, tmp_path):
    df = _synthetic(seed=1)
    df["income"] = "<=50K"
    df.loc[:2, "income"] = ">50K"  # three records with the property
    path = tmp_path / "three.csv"
    df.to_csv(path, index=False)
    rc, out, err = run(
        capsys,
        "calibrate",
        "--data",
        str(path),
        "--protect",
        "income==>50K",
        "--subset-size",
        "10",
        "--values",
        "0.1,0.5",
        "--statistics",
        "mean:age",
    )
    assert_one_line_error(rc, out, err, "p=0.5 needs round(p·n)=5 records", "only 3")


def test_subset_size_larger_than_data(capsys, small_csv):
    rc, out, err = run(
        capsys,
        "calibrate",
        "--data",
        small_csv,
        "--protect",
        "income==>50K",
        "--subset-size",
        "100000",
        "--statistics",
        "mean:age",
    )
    assert_one_line_error(rc, out, err, "n=100000 is larger than the data (200 records)")


def test_subset_size_larger_than_adult(capsys):
    rc, out, err = run(capsys, "calibrate", "--subset-size", "100000", "--modeling", "exact")
    assert_one_line_error(rc, out, err, "n=100000 is larger than the data (45222 records)")


@pytest.mark.parametrize("n", ["0", "-3"])
def test_subset_size_not_positive(capsys, small_csv, n):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--subset-size", n)
    assert_one_line_error(rc, out, err, "subset size n must be a positive integer")


@pytest.mark.parametrize("values", ["0.45,1.2", "-0.1,0.5", "45,55"])
def test_value_outside_unit_interval(capsys, small_csv, values):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--values", values)
    assert_one_line_error(rc, out, err, "outside [0, 1]")


def test_values_with_the_same_count(capsys, small_csv):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--values", "0.45,0.451")
    assert_one_line_error(rc, out, err, "same count")


def test_single_value(capsys, small_csv):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--values", "0.45")
    assert_one_line_error(rc, out, err, "at least two")


def test_singular_covariance_release_from_data(capsys):
    # The released count of the protected property is fixed under each θ: zero variance.
    rc, out, err = run(
        capsys,
        "release",
        "--protect",
        "income==>50K",
        "--statistics",
        "count:income==>50K",
        "--mechanism",
        "DauM-G",
        "--modeling",
        "exact",
    )
    assert_one_line_error(rc, out, err, "singular", "count(income==>50K) has zero variance")


def test_singular_covariance_release_from_data_with_other_statistics(capsys, small_csv):
    rc, out, err = run(
        capsys,
        "release",
        "--data",
        small_csv,
        "--protect",
        "income==>50K",
        "--statistics",
        "mean:age,count:income==>50K",
        "--mechanism",
        "DauM-G",
    )
    assert_one_line_error(rc, out, err, "singular", "zero variance")


def test_singular_covariance_model_file_calibrate_daum(capsys, tmp_path):
    """Asking only for DauM-G on a singular model: the reason ("singular") is reported, as a
    one-line error or as the mechanism's not-applicable entry."""
    cov = [[22.0, 0.0], [0.0, 0.0]]
    path = _write_model(tmp_path / "singular.json", [cov, cov])
    rc, out, err = run(capsys, "calibrate", "--model", path, "--mechanism", "DauM-G", "--json")
    if rc == 2:
        assert_one_line_error(rc, out, err, "singular", "y has zero variance")
    else:
        assert rc == 0, err
        d = json.loads(out)
        assert d["mechanisms"] == []
        assert "singular" in d["not_applicable"]["DauM-G"]


def test_singular_covariance_model_file_calibrate_all(capsys, tmp_path):
    cov = [[22.0, 0.0], [0.0, 0.0]]
    path = _write_model(tmp_path / "singular.json", [cov, cov])
    rc, out, err = run(capsys, "calibrate", "--model", path, "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert {"ExpM-L", "ExpM-G", "DirM-G", "EigM-G"} <= {m["name"] for m in d["mechanisms"]}
    assert "singular" in d["not_applicable"]["DauM-G"]
    assert "singular" in d["not_applicable"]["NoNoise"]


def test_non_symmetric_covariance(capsys, tmp_path):
    path = _write_model(tmp_path / "nonsym.json", [[[22.0, -6.0], [-5.0, 13.0]], SECTION_4_3_COV])
    rc, out, err = run(capsys, "calibrate", "--model", path)
    assert_one_line_error(rc, out, err, "not symmetric", "nonsym.json")


def test_non_psd_covariance(capsys, tmp_path):
    path = _write_model(tmp_path / "nonpsd.toml", [SECTION_4_3_COV, [[1.0, 5.0], [5.0, 1.0]]])
    rc, out, err = run(capsys, "calibrate", "--model", path)
    assert_one_line_error(rc, out, err, "not positive semidefinite", "smallest eigenvalue -4")


def test_missing_model_file(capsys, tmp_path):
    rc, out, err = run(capsys, "calibrate", "--model", str(tmp_path / "none.json"))
    assert_one_line_error(rc, out, err, "model file", "not found")


def test_nan_in_queried_column(capsys, tmp_path):
    df = _synthetic(seed=2)
    df["hours"] = df["hours"].astype(object)
    df.loc[7, "hours"] = None  # written as an empty cell
    path = tmp_path / "nan.csv"
    df.to_csv(path, index=False)
    assert ",," in path.read_text()  # the empty cell
    rc, out, err = run(
        capsys, "calibrate", "--data", str(path), "--protect", "income==>50K", "--statistics",
        "mean:hours",
    )  # fmt: skip
    assert_one_line_error(rc, out, err, "'hours' has 1 missing or non-finite")


def test_empty_psi(capsys, small_csv):
    rc, out, err = run(
        capsys,
        "calibrate",
        "--data",
        small_csv,
        "--values",
        "0.1,0.5,0.9",
        "--pairs-within",
        "0.05",
    )
    assert_one_line_error(rc, out, err, "Ψ is empty")


@pytest.mark.parametrize("command", ["calibrate", "release"])
def test_unknown_mechanism(capsys, small_csv, command):
    rc, out, err = run(capsys, command, "--data", small_csv, "--mechanism", "FooM-G")
    assert_one_line_error(rc, out, err, "unknown mechanism 'FooM-G'", "DauM-G")


@pytest.mark.parametrize("command", ["calibrate", "release"])
def test_unknown_calibration_rule(capsys, small_csv, command):
    rc, out, err = run(capsys, command, "--data", small_csv, "--calibration", "analytic")
    assert_one_line_error(rc, out, err, "unknown calibration rule 'analytic'", "classic")


@pytest.mark.parametrize("values", ["0.4,abc", "0.45;0.55", "a"])
def test_unparseable_values(capsys, small_csv, values):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--values", values)
    assert_one_line_error(rc, out, err, "cannot read --values")


@pytest.mark.parametrize("pairs", ["0.45-0.55", "0.45:x", "0.45"])
def test_unparseable_pairs(capsys, small_csv, pairs):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--pairs", pairs)
    assert_one_line_error(rc, out, err, "cannot read pair", "P1:P2")


def test_pair_not_among_values(capsys, small_csv):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--pairs", "0.45:0.6")
    assert_one_line_error(rc, out, err, "p=0.6 is not among the candidate values")


@pytest.mark.parametrize(
    ("statistics", "keyword"),
    [
        ("median:age", "cannot parse statistic"),
        ("mean", "cannot parse statistic"),
        ("count:sex", "cannot parse predicate"),
        (",", "no statistics"),
        ("mean:age,mean:age", "repeated"),
        ("mean:sex", "needs a numeric column"),
        ("count:income<50", "only == and != apply"),
        ("count:age>old", "give a number"),
    ],
)
def test_unparseable_or_invalid_statistics(capsys, small_csv, statistics, keyword):
    rc, out, err = run(
        capsys, "calibrate", "--data", small_csv, "--protect", "income==>50K", "--statistics",
        statistics,
    )  # fmt: skip
    assert_one_line_error(rc, out, err, keyword)


def test_unparseable_protect(capsys, small_csv):
    rc, out, err = run(capsys, "calibrate", "--data", small_csv, "--protect", "income")
    assert_one_line_error(rc, out, err, "cannot parse predicate 'income'")


@pytest.mark.parametrize("command", ["calibrate", "release"])
def test_missing_data_file(capsys, tmp_path, command):
    missing = tmp_path / "missing.csv"
    rc, out, err = run(capsys, command, "--data", str(missing))
    assert_one_line_error(rc, out, err, "data file not found", "missing.csv")


def test_missing_target_file(capsys, small_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "release",
        "--data",
        small_csv,
        "--target",
        str(tmp_path / "gone.csv"),
        "--statistics",
        "mean:age",
    )
    assert_one_line_error(rc, out, err, "data file not found", "gone.csv")


@pytest.mark.parametrize(
    ("args", "keyword"),
    [
        (("calibrate", "--bogus"), "no such option"),
        (("release", "--epsilon", "abc"), "'abc' is not a valid float"),
        (("calibrate", "--modeling", "magic"), "invalid value for '--modeling'"),
        (("calibrate", "--subset-size"), "requires an argument"),
        (("nosuchcommand",), "no such command"),
    ],
    ids=["unknown-option", "bad-float", "bad-choice", "missing-argument", "unknown-command"],
)
def test_click_usage_errors(capsys, args, keyword):
    rc, out, err = run(capsys, *args)
    assert_one_line_error(rc, out, err, keyword, "--help")


def test_usage_error_hint_names_a_valid_command(capsys):
    rc, out, err = run(capsys, "calibrate", "--bogus")
    line = assert_one_line_error(rc, out, err, "no such option")
    assert "(see distprivacy calibrate --help)" in line


def test_help_and_version_exit_zero(capsys):
    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and "distprivacy" in out
    rc, out, _ = run(capsys, "calibrate", "--help")
    assert rc == 0 and "--epsilon" in out and "--mechanism" in out


def test_console_script_bad_input(small_csv, tmp_path):
    exe = shutil.which("distprivacy")
    assert exe is not None, "the distprivacy console script is not installed"
    env = dict(
        os.environ,
        DISTPRIVACY_DATA=str(tmp_path / "no-adult-here"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    proc = subprocess.run(
        [exe, "calibrate", "--data", small_csv, "--epsilon", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "epsilon" in lines[0]
    assert proc.stdout == ""


# --------------------------------------------------------------------------------------------
# Exact accounting: targets and covariance modes
# --------------------------------------------------------------------------------------------

SMALL_STATISTICS = "mean:age,mean:hours,count:sex==Female"


def test_calibrate_to_a_maximum_attack_accuracy(capsys, small_csv):
    from scipy.stats import norm

    d = run_json(
        capsys, "calibrate", "--data", small_csv, "--protect", "income==>50K",
        "--max-attack-accuracy", "0.55",
        "--mechanism", "ExpM-G", "--modeling", "exact", "--statistics", SMALL_STATISTICS,
    )  # fmt: skip
    [m] = d["mechanisms"]
    assert d["max_attack_accuracy"] == 0.55
    assert m["max_attack_accuracy"] <= 0.55 + 1e-9
    assert norm.cdf(m["mu"] / 2) <= 0.55 + 1e-9


def test_calibrate_to_a_target_mu(capsys, small_csv):
    d = run_json(
        capsys, "calibrate", "--data", small_csv, "--protect", "income==>50K",
        "--target-mu", "0.5",
        "--mechanism", "ExpM-G", "--modeling", "exact", "--statistics", SMALL_STATISTICS,
    )  # fmt: skip
    [m] = d["mechanisms"]
    assert m["mu"] <= 0.5 * (1 + 1e-9) and d["target_mu"] == 0.5


@pytest.mark.parametrize(
    ("args", "keywords"),
    [
        (["--target-mu", "0.5", "--max-attack-accuracy", "0.55"], ["not both"]),
        (["--epsilon", "1", "--target-mu", "0.5"], ["--epsilon", "not both"]),
        (["--target-mu", "0.5", "--calibration", "classic"], ["--calibration exact"]),
        (["--max-attack-accuracy", "0.5"], ["accuracy above 0.5"]),
        (["--target-mu", "-1"], ["μ must be a positive number"]),
        (["--covariances", "average"], ["--covariances"]),
    ],
)
def test_bad_targets_and_covariance_modes(capsys, small_csv, args, keywords):
    rc, out, err = run(
        capsys, "calibrate", "--data", small_csv, "--mechanism", "ExpM-G", "--modeling",
        "exact", *args,
    )  # fmt: skip
    assert_one_line_error(rc, out, err, *keywords)
