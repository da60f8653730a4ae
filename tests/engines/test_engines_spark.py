"""The Spark engine, in local mode: one SparkSession for the module (local[2], 4 shuffle
partitions). Needs pyspark and a Java runtime; .ci/run installs both, so these tests run in CI
(they are not skipped: a missing Spark fails them)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from distprivacy.engines import (
    EngineError,
    EngineUnavailableError,
    UnsupportedStatisticError,
    resolve_engine,
    spark_session,
)
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import make_mechanism
from distprivacy.models import ExactModel, MonteCarloModel, fit_model
from distprivacy.query import ADULT_DEFAULT_STATISTICS, CallableStatistic, Query
from distprivacy.request import GaussianOptions
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning"),
    pytest.mark.slow,
]

STATS = ADULT_DEFAULT_STATISTICS + ",sum:capital_gain,proportion:race==White"


@pytest.fixture(scope="module")
def spark():
    session = spark_session("local[2]", **{"spark.sql.shuffle.partitions": "4"})
    yield session


@pytest.fixture(scope="module")
def spec() -> ProtectionSpec:
    return ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])


@pytest.fixture(scope="module")
def query() -> Query:
    return Query.parse(STATS)


@pytest.fixture(scope="module")
def on_spark(spark, adult):
    eng = resolve_engine("spark", adult, spark_master="local[2]")
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def adult_parquet(adult, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("adult") / "adult.parquet"
    adult.to_parquet(path, index=False)
    return str(path)


def test_exact_moments_equal_pandas_and_duckdb(adult, on_spark, spec, query):
    ref = ExactModel().fit(adult, spec, query)
    duck = ExactModel().fit(adult, spec, query, engine="duckdb")
    spk = ExactModel().fit(adult, spec, query, engine=on_spark)
    for other in (duck, spk):
        np.testing.assert_allclose(other.means_, ref.means_, rtol=1e-9, atol=0)
        for Sa, Sb in zip(ref.covariances_, other.covariances_, strict=True):
            scale = np.sqrt(np.outer(np.diag(Sa), np.diag(Sa)))
            assert np.all(np.abs(Sa - Sb) <= 1e-9 * scale)
        np.testing.assert_allclose(other.record_sensitivities_, ref.record_sensitivities_)


def test_daum_noise_covariance_spark_equals_embedded(adult, adult_parquet, spark, spec):
    """What `calibrate --engine spark --modeling exact --mechanism DauM-G` computes on Adult
    (ε = 1, δ = 0.001, exact rule, fitted covariances) equals DuckDB's to 1e-6 relative."""
    query = Query.parse(ADULT_DEFAULT_STATISTICS)
    mech = make_mechanism(
        "DauM-G", EpsDelta(1.0, 1e-3), GaussianOptions(rule="exact", covariances="fitted")
    )
    duck = mech.calibrate(fit_model(adult_parquet, spec, query, method="exact"))
    spk = mech.calibrate(fit_model(adult_parquet, spec, query, method="exact", engine="spark"))
    Zd, Zs = np.asarray(duck.noise_covariance), np.asarray(spk.noise_covariance)
    assert np.abs(Zd).max() > 0
    np.testing.assert_allclose(Zs, Zd, rtol=1e-6, atol=1e-6 * np.abs(Zd).max())
    assert spk.expected_l2_error == pytest.approx(duck.expected_l2_error, rel=1e-6)


def test_monte_carlo_estimates_the_exact_moments(adult, on_spark, spec):
    """Spark numbers each stratum by value (DuckDB and pandas by file order), so its subsets
    differ from theirs, but they are draws from the same f_θ: every subset holds exactly
    round(p·n) records with the property, each sample mean lies within 5 standard errors of
    the exact mean and each sample variance within 5 standard errors (√(2/(R−1)) σ²) of the
    exact variance; the same seed gives the same samples."""
    R = 500
    q = Query.parse("mean:age,count:sex==Female,proportion:income==>50K")
    exact = ExactModel().fit(adult, spec, q)
    mc = MonteCarloModel(R, random_state=5).fit(adult, spec, q, engine=on_spark)
    for x, p in zip(mc.samples_, spec.values, strict=True):
        assert x.shape == (R, 3)
        np.testing.assert_allclose(x[:, 2], p, atol=1e-12)
    var = np.array([np.diag(S) for S in exact.covariances_])[:, :2]
    assert np.all(np.abs(mc.means_ - exact.means_)[:, :2] <= 5 * np.sqrt(var / R))
    mc_var = np.array([np.diag(S) for S in mc.covariances_])[:, :2]
    assert np.all(np.abs(mc_var - var) <= 5 * np.sqrt(2 / (R - 1)) * var)
    again = MonteCarloModel(R, random_state=5).fit(adult, spec, q, engine=on_spark)
    np.testing.assert_array_equal(again.samples_[0], mc.samples_[0])


def test_table_names_and_csv_paths(adult, spark, spec, tmp_path):
    q = Query.parse("mean:age,count:sex==Female")
    ref = ExactModel().fit(adult, spec, q)
    spark.createDataFrame(adult).createOrReplaceTempView("adult_tbl")
    by_table = ExactModel().fit("adult_tbl", spec, q, engine="spark")
    np.testing.assert_allclose(by_table.covariances_, ref.covariances_, rtol=1e-9)
    csv = tmp_path / "adult.csv"
    spaced = adult[["age", "sex", "income"]].astype(str).map(lambda v: " " + v)
    spaced.to_csv(csv, index=False)
    by_csv = ExactModel().fit(str(csv), spec, q, engine="spark")
    np.testing.assert_allclose(by_csv.covariances_, ref.covariances_, rtol=1e-9)


def test_bad_input_one_line_errors(adult, on_spark, spark, spec, tmp_path):
    def one_line(exc_info) -> str:
        msg = str(exc_info.value)
        assert msg and "\n" not in msg
        return msg

    with pytest.raises(EngineError) as e:
        resolve_engine("spark", "no_such_table")
    assert one_line(e).startswith("Spark cannot read table 'no_such_table'")
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    with pytest.raises(EngineError) as e:
        resolve_engine("spark", str(junk))
    assert one_line(e).startswith(f"Spark cannot read {junk} as Parquet")
    with pytest.raises(DistPrivacyError, match="data file not found"):
        resolve_engine("spark", str(tmp_path / "missing.parquet"))
    med = CallableStatistic("median", lambda X: np.median(X[..., 0], -1), ["age"])
    with pytest.raises(UnsupportedStatisticError) as e:
        fit_model(adult, spec, Query([med]), method="monte-carlo", n_samples=10, engine=on_spark)
    assert "runs only on the pandas engine" in one_line(e)
    with pytest.raises(DistPrivacyError) as e:
        on_spark.validate(Query.parse("count:age==nan"))
    assert "does not compile to SQL" in one_line(e)
    with pytest.raises(EngineError, match="already running"):
        spark_session("local[3]")


def test_no_java_and_no_pyspark(monkeypatch):
    """Checked before Spark starts: no Java runtime, or pyspark not installed."""
    from pyspark.sql import SparkSession

    import distprivacy.engines._spark as sp

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setenv("JAVA_HOME", "/nonexistent-jdk")
    assert sp.find_java() is None
    with pytest.raises(EngineUnavailableError) as e:
        spark_session("local[1]")
    assert "needs a Java runtime" in str(e.value) and "openjdk-17-jre-headless" in str(e.value)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(EngineUnavailableError, match=r"needs pyspark: pip install -e"):
        spark_session()
