"""Property-based tests of the surfaces added since the old fuzzing (issue 21): plans, the
ledger, config files and data identities. Whatever hypothesis generates, the library answers
with its own one-line errors (``DistPrivacyError``) or a correct result — never another
exception — and identities are invariant under what must not matter."""

from __future__ import annotations

import copy
import json
import math

import click
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distprivacy.commands.config import read_config
from distprivacy.exceptions import DistPrivacyError
from distprivacy.fingerprint import canonical_property, dataset_identity
from distprivacy.ledger import Ledger, StewardKey
from distprivacy.mechanisms import DauM
from distprivacy.mechanisms.plans import Plan, _digest
from distprivacy.models import GaussianModel
from distprivacy.targets import GDP, EpsDelta

JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
JSON = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def plan_dict() -> dict:
    cov = np.array([[2.2, -0.6], [-0.6, 1.3]])
    model = GaussianModel(["a", "b"], [[100.0, 101.0], [99.0, 102.0]], [cov, cov], [("a", "b")])
    return Plan.from_calibration(DauM(EpsDelta(1.0, 1e-3)).calibrate(model), model).to_dict()


def _paths(d: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(d, list):
        for i, v in enumerate(d[:3]):
            out += _paths(v, (*prefix, i))
    return out


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), redigest=st.booleans())
def test_any_edit_of_a_plan_is_refused_cleanly_or_loads(plan_dict, data, redigest):
    raw = copy.deepcopy(plan_dict)
    path = data.draw(st.sampled_from(_paths(raw)))
    value = data.draw(JSON)
    node = raw
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    if redigest:
        raw["digest"] = _digest({k: v for k, v in raw.items() if k not in ("digest", "seal")})
    try:
        plan = Plan.from_dict(json.loads(json.dumps(raw, allow_nan=True)))
    except DistPrivacyError as e:
        assert str(e) and "\n" not in str(e)
        return
    # Loaded: then its guarantee is no better than its own model and noise give.
    assert plan.guarantee.mu is None or plan.guarantee.mu >= 0


@pytest.mark.parametrize("key", ["statistic_scales", "statistic_levels"])
@pytest.mark.parametrize("value", [[], [1.0], [1.0, 2.0, 3.0], [float("nan"), 1.0], [[1.0, 2.0]]])
def test_per_statistic_figures_of_the_wrong_shape_are_refused(plan_dict, key, value):
    """Found by the property test above on a fresh machine: a re-digested plan whose
    statistic_scales was [] crashed the swamped check with a NumPy broadcast error."""
    raw = copy.deepcopy(plan_dict)
    raw["calibration"][key] = value
    raw["digest"] = _digest({k: v for k, v in raw.items() if k not in ("digest", "seal")})
    with pytest.raises(DistPrivacyError, match=key):
        Plan.from_dict(json.loads(json.dumps(raw, allow_nan=True)))
    if key == "statistic_scales":
        raw["calibration"][key] = [1.0, -1.0]
        raw["digest"] = _digest({k: v for k, v in raw.items() if k not in ("digest", "seal")})
        with pytest.raises(DistPrivacyError, match="positive"):
            Plan.from_dict(raw)


@settings(max_examples=60, deadline=None)
@given(mu=st.one_of(JSON_LEAVES, st.lists(JSON_LEAVES, max_size=2)))
def test_any_budget_is_refused_cleanly_or_makes_a_ledger(tmp_path_factory, adult_dir, mu):
    """A ledger of secrets' budget: GDP(μ) of anything is refused in one line (nothing
    written) or makes a ledger; a bare number is never taken for a budget."""
    root = tmp_path_factory.mktemp("l")
    path = root / "l.db"
    steward = StewardKey.generate(root / "steward.key")
    kw = dict(steward=steward, secret="income", protect="income==>50K", population=adult_dir)
    with pytest.raises(DistPrivacyError) as e:
        Ledger.init(path, budget=mu, **kw)
    assert "\n" not in str(e.value) and not path.exists()
    try:
        Ledger.init(path, budget=GDP(mu), **kw).close()
    except DistPrivacyError as e:
        assert "\n" not in str(e)
        assert not path.exists()
        return
    assert isinstance(mu, int | float) and not isinstance(mu, bool) and math.isfinite(mu) and mu > 0


TOML_VALUES = st.one_of(
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet="abc019.,:=", max_size=6).map(lambda s: json.dumps(s)),
    st.lists(st.integers(0, 3), max_size=3).map(str),
)


@settings(max_examples=120, deadline=None)
@given(
    key=st.sampled_from(
        [
            "epsilon",
            "delta",
            "seed",
            "json",
            "protect",
            "values",
            "allow-exact",
            "nosuch",
            "subset-size",
            "ledger",
            "dataset",
        ]
    ),
    value=TOML_VALUES,
    table=st.booleans(),
)
def test_any_config_value_is_typed_or_refused(tmp_path_factory, key, value, table):
    from distprivacy.commands.release import release

    path = tmp_path_factory.mktemp("c") / "c.toml"
    text = f"{key} = {str(value).lower() if isinstance(value, bool) else value}\n"
    path.write_text(("[release]\n" if table else "") + text)
    try:
        settings_ = read_config(path, release)
    except DistPrivacyError as e:
        assert "\n" not in str(e)
        return
    assert key not in ("allow-exact", "nosuch")
    assert isinstance(settings_, dict) and len(settings_) == 1
    (v,) = settings_.values()
    assert not (isinstance(v, bool) and key not in ("json",))


ROWS = st.lists(
    st.tuples(st.integers(18, 90), st.sampled_from(["<=50K", ">50K"]), st.floats(0, 1)),
    min_size=1,
    max_size=30,
)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(rows=ROWS, seed=st.integers(0, 2**16))
def test_identity_ignores_order_spelling_and_unused_columns(rows, seed):
    df = pd.DataFrame(rows, columns=["age", "income", "w"])
    cols = ["age", "income"]
    base = dataset_identity(df, cols)
    shuffled = df.sample(frac=1.0, random_state=seed)
    assert dataset_identity(shuffled, cols) == base
    assert dataset_identity(df.assign(age=df["age"].astype(float)), cols) == base
    assert dataset_identity(df.assign(age=df["age"].astype(str)), cols) == base
    assert dataset_identity(df.drop(columns=["w"]), cols) == base
    assert dataset_identity(df, cols, key=b"k" * 32) != base
    changed = df.copy()
    changed.iloc[0, 0] = int(changed.iloc[0, 0]) + 1
    assert dataset_identity(changed, cols) != base
    a = canonical_property("income==>50K", df["income"])
    b = canonical_property("income!=>50K", df["income"])
    assert a.key == b.key and a.complemented != b.complemented


def test_read_config_refuses_bad_arguments(tmp_path):
    for bad in (None, 3, b"x"):
        with pytest.raises(DistPrivacyError):
            read_config(bad, click.Command("x"))  # type: ignore[arg-type]
    from distprivacy.commands.release import release

    for text in ('report = "a\\u0000b"', 'values = ["0.4", "0.5\\u0000"]'):  # click's
        (tmp_path / "nul.toml").write_text(text + "\n")  # Path type raised a ValueError
        with pytest.raises(DistPrivacyError, match="holds a NUL character"):
            read_config(tmp_path / "nul.toml", release)


# ---------------------------------------------------------------------------------------------
# Engines: any small table, both engines, the same answer
# ---------------------------------------------------------------------------------------------

CELL = st.one_of(
    st.integers(-50, 50).map(str),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: f"{x:.3f}"),
    st.sampled_from(["", "NA", " 7", "7 ", "x", " yes", "no", "nan", "inf"]),
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(st.sampled_from(["a", " a", "b", "b "]), CELL, CELL), min_size=4,
                  max_size=30),
    stats=st.lists(
        st.sampled_from(["mean:x", "sum:y", "count:y==7", "proportion:x!=yes", "count:x>0"]),
        min_size=1, max_size=3, unique=True,
    ),
)  # fmt: skip
def test_any_small_csv_gives_the_same_answer_on_pandas_and_duckdb(tmp_path_factory, rows, stats):
    """A CSV of padded text, numbers, missing markers and junk: DuckDB and pandas both refuse it
    (each with its own one-line error: they may meet the problems in another order) or both give
    the same exact moments."""
    from distprivacy.engines import resolve_engine
    from distprivacy.models import ExactModel
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec

    path = tmp_path_factory.mktemp("csv") / "t.csv"
    lines = ["g,x,y"] + [",".join(f'"{c}"' for c in r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = ProtectionSpec("g==a", n=2, values=[0.0, 0.5, 1.0])
    out = {}
    for engine in ("pandas", "duckdb"):
        try:
            eng = resolve_engine(engine, str(path))
            out[engine] = ExactModel().fit(eng, spec, Query.parse(",".join(stats)))
        except DistPrivacyError as e:
            out[engine] = str(e)
    a, b = out["pandas"], out["duckdb"]
    if isinstance(a, str) or isinstance(b, str):
        assert isinstance(a, str) and isinstance(b, str), (a, b)
        return
    np.testing.assert_allclose(b.means_, a.means_, rtol=1e-9, atol=1e-9)
    for Sa, Sb in zip(a.covariances_, b.covariances_, strict=True):
        np.testing.assert_allclose(Sb, Sa, rtol=1e-7, atol=1e-6 * (1 + np.abs(Sa).max()))


def test_a_plan_whose_guarantee_assumptions_are_null_is_refused_cleanly(plan_dict):
    """Found by hypothesis on a fresh machine: ``guarantee.assumptions = null`` raised a
    TypeError; it is the library's one-line error now."""
    bad = copy.deepcopy(plan_dict)
    bad["guarantee"]["assumptions"] = None
    with pytest.raises(DistPrivacyError):
        Plan.from_dict(bad)
