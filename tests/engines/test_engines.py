"""The engine layer: pandas and DuckDB give the same models; bad input gives one-line errors.

Spark is tested in tests/test_engines_spark.py (one SparkSession for the module).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from distprivacy.engines import (
    EngineError,
    SQLCompileError,
    UnsupportedStatisticError,
    resolve_engine,
)
from distprivacy.exceptions import DistPrivacyError
from distprivacy.models import ExactModel, MonteCarloModel, fit_model
from distprivacy.query import ADULT_DEFAULT_STATISTICS, CallableStatistic, Mean, Query
from distprivacy.spec import ProtectionSpec

STATS = ADULT_DEFAULT_STATISTICS + ",sum:capital_gain,mean:fnlwgt,proportion:race==White"
RTOL = 1e-9


@pytest.fixture(scope="module")
def spec() -> ProtectionSpec:
    return ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])


@pytest.fixture(scope="module")
def query() -> Query:
    return Query.parse(STATS)


@pytest.fixture(scope="module")
def adult_files(adult, tmp_path_factory) -> dict[str, str]:
    """Adult as Parquet and as a CSV written the way the UCI file is (a space after each
    comma), for the engines to scan."""
    d = tmp_path_factory.mktemp("adult")
    pq = d / "adult.parquet"
    adult.to_parquet(pq, index=False, row_group_size=4096)  # DuckDB scans row groups in parallel
    csv = d / "adult.csv"
    spaced = adult.copy()
    for c in spaced.columns:
        spaced[c] = " " + spaced[c].astype(str)
    spaced.columns = [" " + c for c in spaced.columns]
    spaced.to_csv(csv, index=False)
    tsv = d / "adult.tsv.gz"
    spaced.to_csv(tsv, index=False, sep="\t")
    return {"parquet": str(pq), "csv": str(csv), "tsv.gz": str(tsv)}


def assert_same_moments(a, b, rtol: float = RTOL) -> None:
    """Means, covariances and record sensitivities equal to ``rtol`` relative (entries of a
    covariance compared relative to its largest entry on their row and column)."""
    np.testing.assert_allclose(a.means_, b.means_, rtol=rtol, atol=0)
    for Sa, Sb in zip(a.covariances_, b.covariances_, strict=True):
        d = np.sqrt(np.outer(np.diag(Sa), np.diag(Sa)))  # Cauchy–Schwarz scale of each entry
        assert np.all(np.abs(Sa - Sb) <= rtol * d)
        np.testing.assert_allclose(np.diag(Sa), np.diag(Sb), rtol=rtol, atol=0)
    np.testing.assert_allclose(a.record_sensitivities_, b.record_sensitivities_, rtol=rtol)


# ---------------------------------------------------------------------------------------------
# Exact moments
# ---------------------------------------------------------------------------------------------


def test_exact_moments_duckdb_equal_pandas_on_adult(adult, spec, query):
    ref = ExactModel().fit(adult, spec, query)
    duck = ExactModel().fit(adult, spec, query, engine="duckdb")
    assert_same_moments(ref, duck)
    assert duck.statistic_names_ == ref.statistic_names_ and duck.method_ == "exact"


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["parquet", "csv", "tsv.gz"])
def test_files_scanned_by_duckdb_equal_load_table(adult_files, spec, query, fmt):
    """A path goes to DuckDB by default and is read as load_table reads it (stripped names
    and strings, numbers parsed from ' 39')."""
    from distprivacy.datasets import load_table

    path = adult_files[fmt]
    ref = ExactModel().fit(load_table(path), spec, query)
    duck = fit_model(path, spec, query, method="exact")
    assert_same_moments(ref, duck)
    pandas_path = fit_model(path, spec, query, method="exact", engine="pandas")
    np.testing.assert_array_equal(pandas_path.covariances_, ref.covariances_)


def test_resolve_engine_auto(adult, adult_files):
    assert resolve_engine("auto", adult).name == "pandas"
    assert resolve_engine(None, adult).name == "pandas"
    eng = resolve_engine("auto", adult_files["parquet"])
    assert eng.name == "duckdb" and eng.source == adult_files["parquet"]
    assert resolve_engine("auto", eng) is eng
    assert resolve_engine("pandas", adult_files["parquet"]).data.shape == adult.shape


def test_adult_directory_is_loaded_then_queried(adult, adult_dir, spec, query):
    """The Adult files are not a table with a header: a directory holding them is loaded as
    the Adult data (as --data DIR is today), then handed to the engine."""
    eng = resolve_engine("duckdb", str(adult_dir))
    assert eng.name == "duckdb" and eng.source == "DataFrame"
    assert resolve_engine("auto", str(adult_dir)).name == "pandas"
    assert_same_moments(ExactModel().fit(adult, spec, query), ExactModel().fit(eng, spec, query))


def test_money_columns_keep_precision_at_large_offsets(spec):
    """Centred sums: a large common offset does not cancel the variance away (a raw
    Σx² − N x̄² would lose every digit here)."""
    rng = np.random.default_rng(1)
    N = 200_000
    df = pd.DataFrame(
        {
            "income": np.where(rng.random(N) < 0.3, ">50K", "<=50K"),
            "balance": 1e9 + rng.normal(0, 1.0, N).round(2),
            "cents": rng.integers(0, 10**6, N) / 100,
        }
    )
    q = Query.parse("sum:balance,mean:cents")
    ref = ExactModel().fit(df, spec, q)
    duck = ExactModel().fit(df, spec, q, engine="duckdb")
    assert_same_moments(ref, duck)


def _money_by_stratum(rng: np.random.Generator, N: int = 50_000) -> pd.DataFrame:
    """Balances near 0 for one stratum and near a billion (SD 1) for the other, the file
    sorted by stratum: its first rows hold no record of the second, whose one-pass shift then
    falls back to the first rows' mean, a billion SDs off."""
    rich = np.sort(rng.random(N) < 0.3)
    return pd.DataFrame(
        {
            "income": np.where(rich, ">50K", "<=50K"),
            "balance": np.where(rich, 1e9, 0.0) + rng.normal(0, 1.0, N).round(2),
            "age": rng.integers(18, 90, N).astype(float),
        }
    )


def test_exact_moments_take_one_scan_and_refine_when_the_shift_is_far(spec, monkeypatch):
    """One grouped scan (after a read of the first rows) gives the exact moments; a file whose
    first rows are far from the mean gets a second, centred scan — and the same moments as the
    two-pass NumPy reference either way."""
    from distprivacy.engines._sql import SQLEngine

    calls = []
    original = SQLEngine._centred_scatter

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    monkeypatch.setattr(SQLEngine, "_centred_scatter", counting)
    rng = np.random.default_rng(7)
    q = Query.parse("sum:balance,mean:age")
    shuffled = _money_by_stratum(rng).sample(frac=1.0, random_state=3).reset_index(drop=True)
    assert_same_moments(
        ExactModel().fit(shuffled, spec, q), ExactModel().fit(shuffled, spec, q, engine="duckdb")
    )
    assert calls == []  # one pass sufficed
    df = _money_by_stratum(rng)
    eng = resolve_engine("duckdb", df)
    assert_same_moments(ExactModel().fit(df, spec, q), ExactModel().fit(eng, spec, q))
    assert calls == [1]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_many_statistics_stream_into_numpy_with_the_same_moments(
    adult, adult_files, spec, query, fmt
):
    """Past ``wide_statistics`` the moments come from the values streamed into NumPy (one SQL
    query with m(m + 1)/2 sums of products crashed DuckDB at m = 200): the same moments, and
    the same refusals."""
    from distprivacy.datasets import load_table

    eng = resolve_engine("duckdb", adult_files[fmt])
    eng.wide_statistics = 2
    seen = []
    eng.progress = lambda done, total: seen.append(done)
    ref = ExactModel().fit(load_table(adult_files[fmt]), spec, query)
    assert_same_moments(ref, ExactModel().fit(eng, spec, query))
    assert seen and seen[-1] == len(adult)


def test_many_statistics_refuse_missing_values_as_one_query_does(tmp_path, spec):
    path = tmp_path / "gaps.csv"
    pd.DataFrame(
        {"income": [">50K", "<=50K"] * 50, "a": [1.0, np.nan] * 50, "b": np.arange(100.0)}
    ).to_csv(path, index=False)
    q = Query.parse("mean:a,mean:b,sum:b")
    messages = []
    for wide in (24, 2):
        eng = resolve_engine("duckdb", str(path))
        eng.wide_statistics = wide
        with pytest.raises(DistPrivacyError) as err:
            ExactModel().fit(eng, spec, q)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "'a' has 50 missing" in messages[0]


def test_padded_predicate_values_match_as_in_memory(tmp_path):
    """Predicates on text compare stripped values: a padded CSV value matches, a quoted padded
    literal matches nothing (as in pandas), whatever the fast path of the SQL form."""
    from distprivacy.datasets import load_table

    path = tmp_path / "t.csv"
    path.write_text("sex,x\n Female,1\nFemale ,2\nMale,3\nFemales,4\n", encoding="utf-8")
    eng = resolve_engine("duckdb", str(path))
    frame = load_table(str(path))
    for text in ("sex==Female", "sex!=Female", "sex=='Female '", "sex!='Female '"):
        q = Query.parse(f"count:{text}")
        got = eng.random_subset_statistics(q, 4, random_state=0)  # all 4 rows: the whole count
        assert got[0] == q.evaluate(frame)[0], text


# ---------------------------------------------------------------------------------------------
# Monte-Carlo subsets
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["DataFrame", "parquet", "csv"])
def test_monte_carlo_duckdb_draws_the_same_subsets_as_pandas(adult, adult_files, spec, fmt):
    """DuckDB numbers each stratum's records in file order, as pandas does: from one seed the
    subsets, hence the samples of F, are the same bit for bit (the Parquet file has 12 row
    groups, scanned in parallel)."""
    from distprivacy.datasets import load_table

    q = Query.parse("mean:age,count:sex==Female,sum:capital_gain,proportion:income==>50K")
    source = adult if fmt == "DataFrame" else adult_files[fmt]
    ref = MonteCarloModel(300, random_state=11).fit(
        adult if fmt == "DataFrame" else load_table(source), spec, q
    )
    duck = MonteCarloModel(300, random_state=11).fit(source, spec, q, engine="duckdb")
    for x, y in zip(ref.samples_, duck.samples_, strict=True):
        np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(duck.covariances_, ref.covariances_)


def test_monte_carlo_batches_and_fetching_only_drawn_records_change_nothing(
    adult, adult_files, spec, monkeypatch
):
    """Many subsets are drawn and summed a batch at a time, and a large stratum's records are
    fetched only where drawn (the draws made twice from one seed): the samples equal, bit for
    bit, those of pandas, and of DuckDB fetching everything."""
    import distprivacy.sampling as sampling

    monkeypatch.setattr(sampling, "BATCH_INDICES", 1000)  # 10 subsets of 100 per batch
    q = Query.parse("mean:age,count:sex==Female,sum:capital_gain")
    ref = MonteCarloModel(95, random_state=5).fit(adult, spec, q)
    whole = MonteCarloModel(95, random_state=5).fit(adult_files["parquet"], spec, q)
    eng = resolve_engine("duckdb", adult_files["parquet"])
    eng.gather_all_bytes = 0  # fetch only the drawn records
    some = MonteCarloModel(95, random_state=5).fit(eng, spec, q)
    for x, y, z in zip(ref.samples_, whole.samples_, some.samples_, strict=True):
        np.testing.assert_array_equal(y, x)
        np.testing.assert_array_equal(z, x)


def test_draw_subsets_is_the_sampler_in_batches():
    """One batch is exactly sample_without_replacement's draw (so results from before batching
    are unchanged when a draw fits one batch), and every row is a set of distinct positions."""
    from distprivacy.sampling import draw_subsets, sample_without_replacement

    gen = np.random.default_rng(3)
    (ia, ib), *rest = list(draw_subsets(50, 80, 7, 20, 30, np.random.default_rng(3)))
    assert rest == []
    np.testing.assert_array_equal(ia, sample_without_replacement(50, 7, 30, gen))
    np.testing.assert_array_equal(ib, sample_without_replacement(80, 13, 30, gen))
    for a, b in draw_subsets(50, 80, 30, 60, 1000, 4):
        assert all(len(set(r)) == 30 for r in a) and all(len(set(r)) == 30 for r in b)


def test_monte_carlo_duckdb_estimates_the_exact_moments(adult, spec, query):
    """The DuckDB subsets are draws from f_θ: each sample mean lies within 5 standard errors
    of the exact mean and each sample variance within 5 standard errors (√(2/(R−1)) σ²) of the
    exact variance."""
    R = 2000
    exact = ExactModel().fit(adult, spec, query)
    mc = MonteCarloModel(R, random_state=3).fit(adult, spec, query, engine="duckdb")
    assert [s.shape for s in mc.samples_] == [(R, query.dim)] * 2
    var = np.array([np.diag(S) for S in exact.covariances_])
    assert np.all(np.abs(mc.means_ - exact.means_) <= 5 * np.sqrt(var / R))
    mc_var = np.array([np.diag(S) for S in mc.covariances_])
    assert np.all(np.abs(mc_var - var) <= 5 * np.sqrt(2 / (R - 1)) * var)


def test_monte_carlo_duckdb_reproducible_and_counts_respected(adult, spec):
    """Bit for bit from a seed; every subset holds exactly round(p·n) records with the
    property (proportion:income==>50K is then exactly p)."""
    q = Query.parse("proportion:income==>50K,mean:age")
    a = MonteCarloModel(300, random_state=7).fit(adult, spec, q, engine="duckdb")
    b = MonteCarloModel(300, random_state=7).fit(adult, spec, q, engine="duckdb")
    for x, y, p in zip(a.samples_, b.samples_, spec.values, strict=True):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_allclose(x[:, 0], p, rtol=0, atol=1e-12)


def test_auto_modelling_on_a_path_uses_exact_moments_and_engine_samples(adult_files, spec, query):
    m = fit_model(adult_files["parquet"], spec, query, n_samples=50, random_state=0)
    assert m.method_ == "monte-carlo+exact" and m.samples_[0].shape == (50, query.dim)
    exact = fit_model(adult_files["parquet"], spec, query, method="exact")
    # (DuckDB adds its parallel partial sums in no fixed order: equal to rounding)
    np.testing.assert_allclose(m.covariances_, exact.covariances_, rtol=1e-12)


def test_random_subset_statistics_duckdb(adult, query):
    eng = resolve_engine("duckdb", adult)
    q = Query.parse("count:sex==Female,mean:age")
    v = eng.random_subset_statistics(q, 100, np.random.default_rng(0))
    assert v.shape == (2,) and 0 <= v[0] <= 100 and v[0] == int(v[0]) and 17 <= v[1] <= 90
    ref = resolve_engine("pandas", adult).random_subset_statistics(q, 100, np.random.default_rng(0))
    np.testing.assert_array_equal(v, ref)


# ---------------------------------------------------------------------------------------------
# Same treatment of the data as load_table, and one-line errors
# ---------------------------------------------------------------------------------------------


def _one_line_error(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg and msg
    return msg


def test_csv_missing_values_refused_like_pandas(tmp_path, spec):
    """NA and blank fields are missing in a CSV, as pandas reads them: the same one-line
    errors as the in-memory path."""
    from distprivacy.datasets import load_table

    path = tmp_path / "t.csv"
    path.write_text("income, age,sex\n" + ">50K, 30,F\n<=50K, NA,M\n<=50K, 40, \n" * 60)
    cases = [
        (spec, "mean:age", "column 'age' has 60 missing or non-finite values"),
        (spec, "count:sex==F", "column 'sex' has missing values"),
        (
            ProtectionSpec("sex==F", n=10, values=[0.4, 0.6]),
            "count:income==>50K",
            "column 'sex' has 60 missing values; the predicate sex==F cannot be decided",
        ),
    ]
    for sp, stats, expected in cases:
        with pytest.raises(DistPrivacyError) as mem:
            ExactModel().fit(load_table(path), sp, Query.parse(stats))
        with pytest.raises(DistPrivacyError) as duck:
            fit_model(str(path), sp, Query.parse(stats), method="exact")
        assert expected in _one_line_error(duck)
        assert str(duck.value) == str(mem.value)


def test_csv_typing_and_question_marks_like_load_table(tmp_path):
    """'?' stays a string (load_table keeps it), a column with a non-number is a string column,
    and the counts equal the in-memory ones."""
    from distprivacy.datasets import load_table

    path = tmp_path / "t.csv"
    rows = ["w,code,y"] + [f" {w}, {c},{y}" for w, c, y in [("?", "1", "a"), ("Private", "x", "b")]]
    path.write_text("\n".join(rows * 50) + "\n")
    spec = ProtectionSpec("w==?", n=10, values=[0.3, 0.7])
    q = Query.parse("count:code==1,count:y==a")
    assert_same_moments(
        ExactModel().fit(load_table(path), spec, q), ExactModel().fit(str(path), spec, q)
    )
    with pytest.raises(DistPrivacyError) as e:
        fit_model(str(path), spec, Query.parse("mean:code"), method="exact")
    assert "'code' is not numeric" in _one_line_error(e)


def test_callable_statistic_is_pandas_only(adult, spec):
    q = Query(
        [Mean("age"), CallableStatistic("median", lambda X: np.median(X[..., 0], -1), ["age"])]
    )
    m = fit_model(adult, spec, q, method="monte-carlo", n_samples=20, random_state=0)
    assert m.samples_[0].shape == (20, 2)
    with pytest.raises(UnsupportedStatisticError) as e:
        fit_model(adult, spec, q, method="monte-carlo", n_samples=20, engine="duckdb")
    assert "'median' is arbitrary Python and runs only on the pandas engine" in _one_line_error(e)


def test_predicates_that_do_not_compile(adult, spec):
    eng = resolve_engine("duckdb", adult.assign(day=pd.Timestamp("2020-01-01")))
    with pytest.raises(SQLCompileError) as e:
        eng.validate(Query.parse("count:age==nan"))
    assert "does not compile to SQL" in _one_line_error(e)
    with pytest.raises(SQLCompileError) as e:
        eng.validate(Query.parse("count:day==2020-01-01"))
    assert "column 'day' has type TIMESTAMP" in _one_line_error(e)
    with pytest.raises(DistPrivacyError, match="only == and != apply"):
        eng.validate(Query.parse("count:sex<Female"))
    with pytest.raises(DistPrivacyError, match="compares it with 'old'; give a number"):
        eng.validate(Query.parse("count:age>=old"))
    with pytest.raises(DistPrivacyError, match="unknown column 'agee'; the data has columns: age"):
        eng.validate(Query.parse("mean:agee"))


def test_non_finite_sums_fail_closed_naming_the_statistic(spec):
    df = pd.DataFrame({"income": [">50K", "<=50K"] * 100, "x": [1e308] * 200, "y": 1.0})
    with pytest.raises(EngineError) as e:
        ExactModel().fit(df, spec, Query.parse("mean:y,sum:x"), engine="duckdb")
    assert "the sum of sum(x) over the records is not finite" in _one_line_error(e)
    df["x"] = np.inf
    with pytest.raises(DistPrivacyError, match="'x' has 200 missing or non-finite values"):
        ExactModel().fit(df, spec, Query.parse("sum:x"), engine="duckdb")


def test_bad_sources(tmp_path):
    with pytest.raises(DistPrivacyError, match="data file not found"):
        resolve_engine("duckdb", str(tmp_path / "nope.parquet"))
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    with pytest.raises(EngineError) as e:
        resolve_engine("duckdb", str(junk))
    assert _one_line_error(e).startswith(f"cannot read {junk} as Parquet")
    with pytest.raises(DistPrivacyError, match="unknown file type"):
        resolve_engine("auto", str(tmp_path / "x.xlsx"))
    with pytest.raises(DistPrivacyError, match="unknown engine 'polars'"):
        resolve_engine("polars", pd.DataFrame({"a": [1]}))
    with pytest.raises(DistPrivacyError, match="`spark_master` applies to `engine='spark'` only"):
        resolve_engine("duckdb", pd.DataFrame({"a": [1]}), spark_master="local[1]")


def test_strata_checks_as_in_memory(adult):
    spec = ProtectionSpec("income==>50K", n=100, values=[0.0, 1.0])
    tiny = adult.head(150)
    q = Query.parse("mean:age")
    with pytest.raises(DistPrivacyError) as mem:
        ExactModel().fit(tiny, spec, q)
    with pytest.raises(DistPrivacyError) as duck:
        ExactModel().fit(tiny, spec, q, engine="duckdb")
    assert str(duck.value) == str(mem.value)


def test_pandas_engine_reproduces_the_in_memory_draws(adult, spec, query):
    """The CLI wiring through engines keeps today's numbers on pandas: the release
    demonstration's subset and the audit's real samples are the same draws from a seed."""
    from distprivacy.mechanism_audit import draw_pair_samples

    eng = resolve_engine("pandas", adult)
    rows = np.random.default_rng(4).choice(len(adult), size=spec.n, replace=False)
    np.testing.assert_array_equal(
        eng.random_subset_statistics(query, spec.n, np.random.default_rng(4)),
        query.evaluate(adult.iloc[rows]),
    )
    ref = draw_pair_samples(adult, spec, query, (0, 1), 50, np.random.default_rng(9))
    got = eng.subset_statistics(spec, query, spec.counts, 50, np.random.default_rng(9))
    for x, y in zip(ref, got, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_engines_take_a_seed_and_models_record_query_and_spec(adult, spec, query, engine):
    """random_state: a seed gives the stream of default_rng(seed) on every engine; a model
    fitted through an engine records the query and spec it was fitted with."""
    eng = resolve_engine(engine, adult)
    a = eng.subset_statistics(spec, query, spec.counts, 20, random_state=3)
    b = eng.subset_statistics(spec, query, spec.counts, 20, np.random.default_rng(3))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(
        eng.random_subset_statistics(query, spec.n, random_state=8),
        eng.random_subset_statistics(query, spec.n, np.random.default_rng(8)),
    )
    for m in (
        ExactModel().fit(adult, spec, query, engine=engine),
        MonteCarloModel(20, random_state=0).fit(adult, spec, query, engine=engine),
    ):
        assert m.query_ is query and m.spec_ is spec


def test_duckdb_refuses_repeated_csv_header_names(tmp_path):
    """DuckDB would rename a repeated header (age, age_1) silently; the engine refuses it as the
    pandas reader does (issue 21)."""
    from distprivacy.engines import resolve_engine
    from distprivacy.exceptions import DistPrivacyError

    path = tmp_path / "dup.csv"
    path.write_text("age, age ,income\n30,31,>50K\n40,41,<=50K\n")
    with pytest.raises(DistPrivacyError, match=r"duplicate column names.*age"):
        resolve_engine("duckdb", str(path))


def test_duckdb_takes_the_library_memory_limit(monkeypatch, tmp_path):
    """DISTPRIVACY_MEMORY_LIMIT bounds DuckDB too (it used to keep its own default of 80 % of
    the machine's RAM)."""
    from distprivacy.engines import resolve_engine

    path = tmp_path / "t.csv"
    path.write_text("age,income\n30,>50K\n40,<=50K\n")
    monkeypatch.setenv("DISTPRIVACY_MEMORY_LIMIT", "1GiB")
    eng = resolve_engine("duckdb", str(path))
    limit = eng.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.replace(" ", "") in ("1.0GiB", "1024.0MiB")


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_unicode_names_are_never_mapped_and_the_near_miss_is_named(tmp_path, engine, spec):
    """A column written with a combining accent (NFD) is not the one typed precomposed (NFC):
    the name is refused, with both spellings escaped so the difference can be seen."""
    import unicodedata

    nfd, nfc = unicodedata.normalize("NFD", "âge"), unicodedata.normalize("NFC", "âge")
    path = tmp_path / "u.csv"
    path.write_text(f"{nfd},income\n30,>50K\n40,<=50K\n", encoding="utf-8")
    eng = resolve_engine(engine, str(path))
    with pytest.raises(DistPrivacyError, match=r"a\\u0302ge.*never applied"):
        eng.validate(Query.parse(f"mean:{nfc}"), spec)
    eng.validate(Query.parse(f"mean:{nfd}"), None)  # the file's own spelling works


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
def test_a_fifo_is_refused_by_every_engine_before_reading(tmp_path, engine):
    """Reading a named pipe blocks until someone writes: every engine (Spark before it starts
    its JVM) refuses it in one line instead of hanging."""
    import os

    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    with pytest.raises(DistPrivacyError, match="FIFO"):
        resolve_engine(engine, str(fifo))
