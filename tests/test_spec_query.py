"""Tests of the protection specification (spec.py) and the released statistics (query.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.query import (
    ADULT_DEFAULT_STATISTICS,
    CallableStatistic,
    Count,
    Mean,
    Proportion,
    Query,
    Sum,
    parse_statistic,
)
from distprivacy.spec import Predicate, ProtectionSpec, grid_pairs_within, proportion_to_count


@pytest.fixture
def small() -> pd.DataFrame:
    """Four records with hand-computable statistics."""
    return pd.DataFrame(
        {
            "age": [20, 30, 40, 50],
            "hours": [10.0, 20.0, 30.0, 45.5],
            "sex": ["Male", "Female", "Female", "Male"],
            "income": [">50K", "<=50K", ">50K", "<=50K"],
        }
    )


@pytest.fixture
def ten() -> pd.DataFrame:
    """Ten records, three of them with income >50K."""
    return pd.DataFrame(
        {
            "age": np.arange(20, 30),
            "income": [">50K"] * 3 + ["<=50K"] * 7,
        }
    )


def _random_frame(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, rows),
            "hours": rng.normal(40.0, 12.0, rows),
            "sex": rng.choice(["Male", "Female"], rows),
            "income": rng.choice([">50K", "<=50K"], rows),
        }
    )


# --------------------------------------------------------------------------------------------
# Predicate
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "column", "op", "value"),
    [
        ('income==">50K"', "income", "==", ">50K"),
        ("income=='>50K'", "income", "==", ">50K"),
        ("income==>50K", "income", "==", ">50K"),
        ("income == '<=50K'", "income", "==", "<=50K"),
        ("income==<=50K", "income", "==", "<=50K"),
        ("sex == Female", "sex", "==", "Female"),
        ("  sex!=Male  ", "sex", "!=", "Male"),
        ("age>=40", "age", ">=", "40"),
        ("age <= 40", "age", "<=", "40"),
        ("hours<40.5", "hours", "<", "40.5"),
        ("hours >  7", "hours", ">", "7"),
        ("marital_status==Never-married", "marital_status", "==", "Never-married"),
        ('name == "two words"', "name", "==", "two words"),
    ],
)
def test_predicate_parse_variants(text, column, op, value):
    p = Predicate.parse(text)
    assert (p.column, p.op, p.value) == (column, op, value)
    assert str(p) == f"{column}{op}{value}"


@pytest.mark.parametrize("text", ["age", "age=40", "age>=", "==5", "", "   "])
def test_predicate_parse_rejects_malformed(text):
    with pytest.raises(DistPrivacyError, match="cannot parse predicate"):
        Predicate.parse(text)


def test_predicate_constructor_validates_operator_and_column():
    with pytest.raises(DistPrivacyError, match="unknown operator"):
        Predicate("age", "=~", "4")
    with pytest.raises(DistPrivacyError, match="empty column"):
        Predicate("  ", "==", "4")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("age>=40", [False, False, True, True]),
        ("age>40", [False, False, False, True]),
        ("age<30", [True, False, False, False]),
        ("age<=30", [True, True, False, False]),
        ("age==30", [False, True, False, False]),
        ("age!=30", [True, False, True, True]),
        ("hours<20", [True, False, False, False]),
        ("hours>=45.5", [False, False, False, True]),
        ("sex == Female", [False, True, True, False]),
        ("sex!=Female", [True, False, False, True]),
        ('income==">50K"', [True, False, True, False]),
        ("income==<=50K", [False, True, False, True]),
    ],
)
def test_predicate_evaluate(small, text, expected):
    mask = Predicate.parse(text).evaluate(small)
    assert mask.dtype == bool
    assert mask.tolist() == expected


def test_predicate_evaluate_strips_string_values():
    df = pd.DataFrame({"sex": [" Female", "Male ", "Female"]})
    assert Predicate.parse("sex==Female").evaluate(df).tolist() == [True, False, True]


@pytest.mark.parametrize(
    "values",
    [
        [" a", "b ", "a", "\ta\u3000", "A", "", "a b"],  # exactly str: one comparison per value
        ["a", 1, "1", 1.0, True, " a "],  # mixed objects: the general path
        ["a", np.str_("a"), " a"],  # a str subclass: the general path
    ],
)
@pytest.mark.parametrize("op", ["==", "!="])
def test_predicate_on_strings_is_the_stripped_comparison_of_every_record(values, op):
    """A column of str objects is compared once per distinct value (pd.factorize), others
    record by record: either way the mask is ``astype(str).str.strip() OP value``."""
    df = pd.DataFrame({"c": pd.Series(values * 3, dtype=object)})
    for value in ("a", "1", "True", "a b", "zz"):
        want = df["c"].astype(str).str.strip().to_numpy()
        want = want == value if op == "==" else want != value
        got = Predicate("c", op, value).evaluate(df)
        assert got.dtype == bool and np.array_equal(got, want), (value, op)


def test_predicate_order_on_string_column_is_an_error(small):
    with pytest.raises(DistPrivacyError, match=r"not numeric; only == and != apply"):
        Predicate.parse("sex<Male").evaluate(small)


def test_predicate_numeric_column_compared_with_word_is_an_error(small):
    with pytest.raises(DistPrivacyError, match=r"'age' is numeric .*'old'; give a number"):
        Predicate.parse("age>=old").evaluate(small)


def test_predicate_unknown_column(small):
    with pytest.raises(DistPrivacyError, match=r"unknown column 'nosuch'.*age, hours, sex, income"):
        Predicate.parse("nosuch==1").evaluate(small)


# --------------------------------------------------------------------------------------------
# proportion_to_count, grid_pairs_within, ProtectionSpec
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "n", "count"),
    [
        (0.125, 100, 13),  # 12.5 rounds half up
        (0.285, 100, 29),  # 0.285 * 100 == 28.499999999999996 in floating point
        (0.015, 100, 2),  # 0.015 * 100 == 1.4999999999999998 in floating point
        (0.45, 100, 45),
        (0.55, 100, 55),
        (0.5, 1, 1),
        (0.25, 2, 1),  # 0.5 → 1
        (0.0, 100, 0),
        (1.0, 100, 100),
        (0.3, 7, 2),  # 2.1 → 2
    ],
)
def test_proportion_to_count_rounds_half_up_exactly(p, n, count):
    assert proportion_to_count(p, n) == count


def test_spec_counts_and_default_pairs_are_all_ordered_pairs():
    spec = ProtectionSpec('income==">50K"', 100, [0.125, 0.285, 0.45])
    assert spec.counts == (13, 29, 45)
    assert spec.n == 100
    assert spec.values == (0.125, 0.285, 0.45)
    assert str(spec.predicate) == "income==>50K"
    assert set(spec.pair_indices) == {(i, j) for i in range(3) for j in range(3) if i != j}
    assert len(spec.pair_indices) == 6
    assert spec.to_dict() == {
        "property": "income==>50K",
        "n": 100,
        "values": [0.125, 0.285, 0.45],
        "counts": [13, 29, 45],
        "pairs": [list(p) for p in spec.pairs],
    }


def test_spec_accepts_a_predicate_object_and_numpy_integer_n():
    pred = Predicate("sex", "==", "Female")
    spec = ProtectionSpec(pred, np.int64(10), np.array([0.2, 0.4]))
    assert spec.predicate is pred
    assert spec.n == 10 and type(spec.n) is int
    assert spec.counts == (2, 4)


def test_spec_explicit_pairs_are_symmetrised():
    spec = ProtectionSpec("income==>50K", 100, [0.3, 0.45, 0.55], pairs=[(0.45, 0.55)])
    assert spec.pair_indices == ((1, 2), (2, 1))
    assert spec.pairs == ((0.45, 0.55), (0.55, 0.45))
    both = ProtectionSpec(
        "income==>50K", 100, [0.3, 0.45, 0.55], pairs=[(0.55, 0.45), (0.45, 0.55), (0.3, 0.45)]
    )
    assert both.pair_indices == ((0, 1), (1, 0), (1, 2), (2, 1))


def test_spec_pair_value_not_among_values():
    with pytest.raises(DistPrivacyError, match=r"p=0.6 is not among the candidate values"):
        ProtectionSpec("income==>50K", 100, [0.45, 0.55], pairs=[(0.45, 0.6)])


def test_spec_pair_joining_a_value_to_itself():
    with pytest.raises(DistPrivacyError, match="joins a value to itself"):
        ProtectionSpec("income==>50K", 100, [0.45, 0.55], pairs=[(0.45, 0.45)])


def test_spec_pairs_and_pairs_within_are_exclusive():
    with pytest.raises(DistPrivacyError, match="not both"):
        ProtectionSpec("income==>50K", 100, [0.45, 0.55], pairs=[(0.45, 0.55)], pairs_within=0.2)


@pytest.mark.parametrize("k", [0.0, -0.1, float("nan"), float("inf")])
def test_spec_pairs_within_must_be_positive_finite(k):
    with pytest.raises(DistPrivacyError, match="positive distance"):
        ProtectionSpec("income==>50K", 100, [0.45, 0.55], pairs_within=k)


def test_grid_pairs_within_example_2_1_adjacent_pairs_only():
    grid = np.arange(0.1, 1.0, 0.1)  # holds 0.30000000000000004 and 0.7000000000000001
    assert grid[2] != 0.3
    expected = {(i, i + 1) for i in range(8)} | {(i + 1, i) for i in range(8)}
    got = grid_pairs_within(grid, 0.1)
    assert set(got) == expected
    assert len(got) == 16
    # The same set from the exact decimal literals.
    exact = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert set(grid_pairs_within(exact, 0.1)) == expected


def test_grid_pairs_within_wider_k():
    got = set(grid_pairs_within([0.1, 0.2, 0.3, 0.4], 0.2))
    assert got == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (0, 2), (2, 0), (1, 3), (3, 1)}


def test_spec_pairs_within_example_2_1():
    spec = ProtectionSpec("income==>50K", 100, np.arange(0.1, 1.0, 0.1), pairs_within=0.1)
    assert spec.counts == (10, 20, 30, 40, 50, 60, 70, 80, 90)
    assert set(spec.pair_indices) == {(i, i + 1) for i in range(8)} | {(i + 1, i) for i in range(8)}


def test_spec_empty_psi():
    with pytest.raises(DistPrivacyError, match="Ψ is empty"):
        ProtectionSpec("income==>50K", 100, [0.1, 0.5, 0.9], pairs_within=0.05)


@pytest.mark.parametrize("bad", [1.2, -0.1, float("nan"), float("inf"), 45.0])
def test_spec_proportion_outside_unit_interval(bad):
    with pytest.raises(DistPrivacyError, match="outside \\[0, 1\\]"):
        ProtectionSpec("income==>50K", 100, [0.45, bad])


@pytest.mark.parametrize("n", [0, -5, 2.5, 100.0, True, "100", None])
def test_spec_n_must_be_positive_integer(n):
    with pytest.raises(DistPrivacyError, match="positive integer"):
        ProtectionSpec("income==>50K", n, [0.45, 0.55])


@pytest.mark.parametrize("values", [[0.5], []])
def test_spec_needs_two_values(values):
    with pytest.raises(DistPrivacyError, match="at least two"):
        ProtectionSpec("income==>50K", 100, values)


@pytest.mark.parametrize("values", [[0.45, 0.451], [0.5, 0.5], [0.445, 0.45]])
def test_spec_values_with_same_count(values):
    with pytest.raises(DistPrivacyError, match="same count"):
        ProtectionSpec("income==>50K", 100, values)


def test_spec_bad_predicate_text():
    with pytest.raises(DistPrivacyError, match="cannot parse predicate"):
        ProtectionSpec("income", 100, [0.45, 0.55])


# --------------------------------------------------------------------------------------------
# ProtectionSpec.groups
# --------------------------------------------------------------------------------------------


def test_groups_returns_positions(ten):
    pos, neg = ProtectionSpec("income==>50K", 5, [0.2, 0.6]).groups(ten)
    assert pos.tolist() == [0, 1, 2]
    assert neg.tolist() == [3, 4, 5, 6, 7, 8, 9]


def test_groups_n_larger_than_data(ten):
    with pytest.raises(DistPrivacyError, match=r"n=11 is larger than the data \(10 records\)"):
        ProtectionSpec("income==>50K", 11, [0.1, 0.2]).groups(ten)


def test_groups_no_record_satisfies(ten):
    with pytest.raises(DistPrivacyError, match="no record satisfies the predicate income==nobody"):
        ProtectionSpec("income==nobody", 5, [0.2, 0.4]).groups(ten)


def test_groups_every_record_satisfies(ten):
    with pytest.raises(DistPrivacyError, match="every record satisfies the predicate age>=0"):
        ProtectionSpec("age>=0", 5, [0.2, 0.4]).groups(ten)


def test_groups_count_exceeds_property_group(ten):
    with pytest.raises(DistPrivacyError, match=r"p=0.5 needs round\(p·n\)=5 records .*only 3"):
        ProtectionSpec("income==>50K", 10, [0.3, 0.5]).groups(ten)


def test_groups_complement_exceeds_other_group(ten):
    # p=0.1, n=10: one record with the property and 9 without, but only 7 lack it.
    with pytest.raises(DistPrivacyError, match=r"p=0.1 needs 9 records without .*only 7"):
        ProtectionSpec("income==>50K", 10, [0.1, 0.3]).groups(ten)


@pytest.mark.parametrize("text", ["income!=>50K", "income==>50K", "age<3"])
def test_groups_missing_property_value_is_an_error(text):
    df = pd.DataFrame(
        {
            "income": [">50K", None, "<=50K", "<=50K", ">50K", "<=50K"],
            "age": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0],
        }
    )
    with pytest.raises(DistPrivacyError, match="missing"):
        ProtectionSpec(text, 2, [0.0, 0.5]).groups(df)


# --------------------------------------------------------------------------------------------
# Query parsing
# --------------------------------------------------------------------------------------------


def test_query_parse_adult_defaults():
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    assert q.names == (
        "mean(age)",
        "mean(education_num)",
        "count(marital_status==Never-married)",
        "count(sex==Female)",
        "mean(hours_per_week)",
    )
    assert q.dim == 5
    assert q.is_linear
    kinds = [type(s) for s in q.statistics]
    assert kinds == [Mean, Mean, Count, Count, Mean]
    assert q.statistics[2].predicate == Predicate("marital_status", "==", "Never-married")
    assert q.statistics[3].predicate == Predicate("sex", "==", "Female")


def test_query_parse_spaces_case_and_all_kinds():
    """Spaces around items and their parts are ignored (documented); kinds are lower case and
    an empty item is refused — no silent folding (issue 21)."""
    for bad, why in (
        (" MEAN:age , sum:hours", "lower case"),
        ("mean:age,sum:hours,", "empty item"),
        ("mean:age,,sum:hours", "empty item"),
    ):
        with pytest.raises(DistPrivacyError, match=why):
            Query.parse(bad)
    q = Query.parse(" mean:age , sum:hours,count: sex == Female ,proportion:income==>50K\n")
    assert q.names == (
        "mean(age)",
        "sum(hours)",
        "count(sex==Female)",
        "proportion(income==>50K)",
    )
    assert [type(s) for s in q.statistics] == [Mean, Sum, Count, Proportion]


@pytest.mark.parametrize("text", ["median:age", "mean", "mean:", ":age", "age", "count:"])
def test_parse_statistic_errors(text):
    with pytest.raises(DistPrivacyError, match="cannot parse statistic"):
        parse_statistic(text)


def test_parse_statistic_bad_predicate():
    with pytest.raises(DistPrivacyError, match="cannot parse predicate"):
        parse_statistic("count:sex")


@pytest.mark.parametrize("text", ["", ",", " , ", None])
def test_query_empty(text):
    with pytest.raises(DistPrivacyError, match="no statistics"):
        Query.parse(text)


def test_query_empty_list():
    with pytest.raises(DistPrivacyError, match="no statistics"):
        Query([])


def test_query_duplicate_statistics():
    with pytest.raises(DistPrivacyError, match=r"repeated in the query: mean\(age\)"):
        Query.parse("mean:age,count:sex==Female,mean:age")
    with pytest.raises(DistPrivacyError, match="repeated"):
        Query.parse("count:sex==Female,count: sex == Female")


# --------------------------------------------------------------------------------------------
# Evaluation and sensitivities
# --------------------------------------------------------------------------------------------


def test_statistics_evaluate_hand_computed(small):
    assert Mean("age").evaluate(small) == 35.0
    assert Mean("hours").evaluate(small) == pytest.approx(105.5 / 4, abs=1e-12)
    assert Sum("hours").evaluate(small) == 105.5
    assert Sum("age").evaluate(small) == 140.0
    assert Count(Predicate.parse("sex==Female")).evaluate(small) == 2.0
    assert Count(Predicate.parse("age>=40")).evaluate(small) == 2.0
    assert Proportion(Predicate.parse("income==>50K")).evaluate(small) == 0.5
    assert Proportion(Predicate.parse("age>45")).evaluate(small) == 0.25


def test_query_evaluate_hand_computed(small):
    q = Query.parse("mean:age,sum:hours,count:sex==Female,proportion:income==>50K,count:age<25")
    np.testing.assert_array_equal(q.evaluate(small), [35.0, 105.5, 2.0, 0.5, 1.0])
    np.testing.assert_array_equal(q.scales(4), [0.25, 1.0, 1.0, 0.25, 1.0])
    np.testing.assert_array_equal(
        q.record_matrix(small),
        [
            [20, 10.0, 0, 1, 1],
            [30, 20.0, 1, 0, 0],
            [40, 30.0, 1, 1, 0],
            [50, 45.5, 0, 0, 0],
        ],
    )


def test_evaluate_of_empty_dataset_is_an_error(small):
    with pytest.raises(DistPrivacyError, match="empty dataset"):
        Mean("age").evaluate(small.iloc[:0])


def test_record_sensitivities(small):
    n = 10
    assert Mean("age").record_sensitivity(small, n) == pytest.approx(30 / 10)
    assert Mean("hours").record_sensitivity(small, n) == pytest.approx(35.5 / 10)
    assert Sum("hours").record_sensitivity(small, n) == pytest.approx(35.5)
    assert Count(Predicate.parse("sex==Female")).record_sensitivity(small, n) == 1.0
    assert Proportion(Predicate.parse("sex==Female")).record_sensitivity(small, n) == 0.1
    q = Query.parse("mean:age,sum:hours,count:sex==Female,proportion:income==>50K")
    np.testing.assert_allclose(q.record_sensitivities(small, 4), [7.5, 35.5, 1.0, 0.25])


def test_record_sensitivity_unknown_for_callable_is_nan(small):
    med = CallableStatistic("median(age)", lambda X: np.median(X[..., 0], axis=-1), ["age"])
    given = CallableStatistic("max(age)", lambda X: X[..., 0].max(axis=-1), ["age"], 30.0)
    s = Query([Mean("age"), med, given]).record_sensitivities(small, 4)
    assert s[0] == 7.5
    assert np.isnan(s[1])
    assert s[2] == 30.0


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_in_queried_numeric_column(small, bad):
    df = small.copy()
    df["hours"] = df["hours"].astype(float)
    df.loc[2, "hours"] = bad
    for stat in (Mean("hours"), Sum("hours")):
        with pytest.raises(DistPrivacyError, match=r"'hours' has 1 missing or non-finite"):
            stat.evaluate(df)
    with pytest.raises(DistPrivacyError, match="missing or non-finite"):
        Query.parse("mean:age,mean:hours").validate(df)
    idx = np.array([[0, 1], [2, 3]])
    with pytest.raises(DistPrivacyError, match="missing or non-finite"):
        Query.parse("mean:hours").evaluate_batch(df, idx)


def test_missing_value_in_count_column(small):
    df = small.copy()
    df.loc[1, "sex"] = None
    with pytest.raises(DistPrivacyError, match=r"'sex' has missing values"):
        Count(Predicate.parse("sex!=Female")).evaluate(df)
    with pytest.raises(DistPrivacyError, match="missing values"):
        Query.parse("count:sex==Male").validate(df)


def test_mean_of_non_numeric_column(small):
    with pytest.raises(DistPrivacyError, match=r"mean needs a numeric column but 'sex'"):
        Mean("sex").evaluate(small)
    with pytest.raises(DistPrivacyError, match=r"sum needs a numeric column"):
        Query.parse("sum:income").validate(small)


def test_mean_of_boolean_column_is_rejected():
    df = pd.DataFrame({"flag": [True, False, True]})
    with pytest.raises(DistPrivacyError, match="numeric column"):
        Mean("flag").evaluate(df)


def test_query_validate_unknown_column(small):
    with pytest.raises(DistPrivacyError, match="unknown column 'nosuch'"):
        Query.parse("mean:age,mean:nosuch").validate(small)
    with pytest.raises(DistPrivacyError, match="unknown column 'nosuch'"):
        Query.parse("count:nosuch==1").validate(small)


# --------------------------------------------------------------------------------------------
# Batched evaluation
# --------------------------------------------------------------------------------------------


def test_evaluate_batch_linear_equals_loop():
    df = _random_frame(60, seed=11)
    q = Query.parse("mean:age,sum:hours,count:sex==Female,proportion:income==>50K,mean:hours")
    rng = np.random.default_rng(5)
    n, R = 9, 13
    index = np.array([rng.choice(len(df), n, replace=False) for _ in range(R)])
    loop = np.array([q.evaluate(df.iloc[row]) for row in index])
    for chunk in (256, 4, 1):
        batch = q.evaluate_batch(df, index, chunk=chunk)
        assert batch.shape == (R, 5)
        np.testing.assert_allclose(batch, loop, rtol=1e-12, atol=1e-12)


def test_callable_statistic_median_through_evaluate_batch():
    df = _random_frame(50, seed=3)
    median = CallableStatistic(
        "median(hours)", lambda X: np.median(X[..., 0], axis=-1), ["hours"], sensitivity=None
    )
    spread = CallableStatistic(
        "max(age)-min(hours)",
        lambda X: X[..., 0].max(axis=-1) - X[..., 1].min(axis=-1),
        ["age", "hours"],
    )
    q = Query([Mean("age"), median, Count(Predicate.parse("sex==Female")), spread])
    assert not q.is_linear
    assert q.names == ("mean(age)", "median(hours)", "count(sex==Female)", "max(age)-min(hours)")
    rng = np.random.default_rng(21)
    n, R = 7, 11
    index = np.array([rng.choice(len(df), n, replace=False) for _ in range(R)])
    batch = q.evaluate_batch(df, index, chunk=3)
    per_subset = np.array([q.evaluate(df.iloc[row]) for row in index])
    np.testing.assert_allclose(batch, per_subset, rtol=1e-12, atol=1e-12)
    direct = [np.median(df["hours"].to_numpy()[row]) for row in index]
    np.testing.assert_allclose(batch[:, 1], direct, rtol=0, atol=0)
    direct_spread = [
        df["age"].to_numpy()[row].max() - df["hours"].to_numpy()[row].min() for row in index
    ]
    np.testing.assert_allclose(batch[:, 3], direct_spread, rtol=1e-12)


def test_callable_statistic_wrong_shape():
    df = _random_frame(20, seed=1)
    no_reduce = CallableStatistic("bad", lambda X: X[..., 0], ["age"])
    with pytest.raises(DistPrivacyError, match=r"statistic 'bad' returned shape \(20,\)"):
        no_reduce.evaluate(df)
    everything = CallableStatistic("total", lambda X: X.sum(), ["age"])
    index = np.arange(10).reshape(2, 5)
    with pytest.raises(DistPrivacyError, match=r"'total' returned shape \(\).*reduce over axis -2"):
        Query([everything]).evaluate_batch(df, index)


def test_callable_statistic_construction_errors():
    with pytest.raises(DistPrivacyError, match="func must be callable"):
        CallableStatistic("x", 3, ["age"])
    with pytest.raises(DistPrivacyError, match="at least one column"):
        CallableStatistic("x", np.mean, [])


def test_callable_statistic_needs_numeric_finite_columns(small):
    stat = CallableStatistic("median(sex)", lambda X: np.median(X[..., 0], axis=-1), ["sex"])
    with pytest.raises(DistPrivacyError, match="needs a numeric column"):
        Query([stat]).validate(small)


def test_record_matrix_needs_linear_query(small):
    med = CallableStatistic("median(age)", lambda X: np.median(X[..., 0], axis=-1), ["age"])
    with pytest.raises(DistPrivacyError, match="linear statistics only"):
        Query([Mean("age"), med]).record_matrix(small)


def test_query_evaluate_is_the_release_value_and_checks_the_size(small):
    q = Query.parse("mean:age,count:sex==Female,sum:hours")
    expected = np.array([35.0, 2.0, 105.5])
    np.testing.assert_allclose(q.evaluate(small), expected, rtol=0, atol=0)
    np.testing.assert_allclose(q.evaluate(small, n=4), expected, rtol=0, atol=0)
    with pytest.raises(DistPrivacyError, match=r"4 records .* n = 5"):
        q.evaluate(small, n=5)
    with pytest.raises(DistPrivacyError, match="pandas DataFrame"):
        q.evaluate(small.to_numpy(), n=4)
    with pytest.raises(DistPrivacyError, match="nosuch"):
        Query.parse("mean:nosuch").evaluate(small, n=4)
