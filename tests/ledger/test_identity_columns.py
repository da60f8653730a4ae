"""The columns that identify a dataset in a ledger (distprivacy.ledger._identity): declared or
fixed by the first release, required of every target, and covered by the head MAC."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.ledger import BudgetExceededError, Ledger, LedgerError
from distprivacy.ledger._chain import _head_mac
from distprivacy.mechanisms import DauM
from distprivacy.mechanisms.plans import Plan
from distprivacy.models import fit_model
from distprivacy.query import Query
from distprivacy.spec import ProtectionSpec


@pytest.fixture(scope="module")
def plans(adult):
    """Sealable plans for two statistics read from different columns of Adult."""
    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    out = {}
    for text in ("mean:age", "mean:hours_per_week", "mean:age,mean:hours_per_week"):
        model = fit_model(adult, spec, Query.parse(text), method="exact")
        out[text] = Plan.from_calibration(DauM(epsilon=1.0, delta=1e-3).calibrate(model), model)
    return out


def _refit(adult):
    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    return lambda text: fit_model(adult, spec, Query.parse(text), method="exact")


@pytest.fixture
def records(adult):
    return adult.sample(n=100, random_state=11)


def _meta(path, key):
    con = sqlite3.connect(path)
    try:
        row = con.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
    finally:
        con.close()
    return None if row is None else row[0]


def _set_meta(path, key, value):
    con = sqlite3.connect(path)
    try:
        if value is None:
            con.execute("DELETE FROM ledger_meta WHERE key = ?", (key,))
        else:
            con.execute("UPDATE ledger_meta SET value = ? WHERE key = ?", (value, key))
        con.commit()
    finally:
        con.close()


def test_declared_identity_columns_link_releases_of_other_statistics(
    adult, plans, records, tmp_path
):
    """identify_by: a steward's own columns. Other statistics of the same records, a target
    with only those columns and the read ones, and re-ordered rows are one dataset."""
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0, identify_by=["sex", "age", "income"]) as led:
        assert led.identity_columns == ("age", "income", "sex")
        a, h = led.seal(plans["mean:age"]), led.seal(plans["mean:hours_per_week"])
        led.release(a, records)
        slim = records[["age", "sex", "income", "hours_per_week"]].sample(frac=1.0, random_state=1)
        second = led.release(h, slim, fit=_refit(adult))  # composed: the joint model refitted
        assert second.releases_of_dataset == 2
        with pytest.raises(LedgerError, match="lacks column 'sex', one of the 3 columns"):
            led.release(h, records.drop(columns=["sex"]))
    with Ledger(path) as led:
        assert led.identity_columns == ("age", "income", "sex")
        assert led.verify().ok


def test_the_first_release_fixes_all_its_columns(plans, records, tmp_path):
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        assert led.identity_columns is None and _meta(path, "identity_columns") is None
        led.release(led.seal(plans["mean:age"]), records)
        assert led.identity_columns == tuple(sorted(records.columns))
        assert json.loads(_meta(path, "identity_columns")) == sorted(records.columns)
        assert led.verify().ok


@pytest.mark.parametrize("value", [json.dumps(["age", "income"]), None, "not json"])
def test_editing_or_deleting_the_identity_columns_is_caught(plans, records, tmp_path, value):
    """Narrowing the identity columns (so that dropping a column makes a new dataset),
    deleting them (so that each release is identified by what it reads) or garbling them fails
    verification, and every release is refused with the file unchanged."""
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        led.release(led.seal(plans["mean:age"]), records)
        h = led.seal(plans["mean:hours_per_week"])
    _set_meta(path, "identity_columns", value)
    with Ledger(path) as led:
        report = led.verify()
        assert not report.ok and "identity columns" in report.reason
        before = path.read_bytes()
        with pytest.raises(LedgerError):
            led.release(h, records[["age", "income", "hours_per_week"]])
        assert path.read_bytes() == before


def test_an_empty_declared_ledger_cannot_lose_its_columns(tmp_path):
    path = tmp_path / "l.db"
    Ledger.init(path, budget_mu=1.0, identify_by=["person_id"]).close()
    _set_meta(path, "identity_columns", None)
    with Ledger(path) as led:
        assert not led.verify().ok


def test_a_ledger_from_before_identity_columns_keeps_its_rule(plans, records, tmp_path):
    """A ledger with releases and no identity columns (written by an earlier version: its head
    MAC has none) still opens, verifies and identifies each release by the columns it reads,
    so its earlier budgets are not reset."""
    path = tmp_path / "l.db"
    with Ledger.init(path, budget_mu=100.0) as led:
        a = led.seal(plans["mean:age"])
        led.release(a, records[["age", "income"]])  # as an earlier version identified it
        key = led.key
    con = sqlite3.connect(path)
    (last,) = con.execute("SELECT chain FROM releases").fetchone()
    con.execute("DELETE FROM ledger_meta WHERE key IN ('identity_columns', 'anchored')")
    con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", (_head_mac(key, 1, last),))
    con.commit()
    con.close()
    Path(str(path) + ".anchor").unlink()  # nor an anchor
    with Ledger(path) as led:
        assert led.identity_columns is None and led.verify().ok
        rec = led.release(a, records)  # identified by the columns it reads, as before
        assert rec.releases_of_dataset == 2
        assert [c["releases"] for c in led.show()["cumulative"]] == [2]
        assert led.show()["identity_columns"] is None


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ("age", "non-empty list"),
        ([], "non-empty list"),
        (["age", ""], "column names"),
        (["age", 3], "column names"),
        (["age", "age"], "twice"),
    ],
)
def test_bad_identify_by_is_one_line(tmp_path, bad, match):
    with pytest.raises(LedgerError, match=match):
        Ledger.init(tmp_path / "l.db", budget_mu=1.0, identify_by=bad)
    assert not (tmp_path / "l.db").exists()


def test_budget_refusal_across_columns(adult, plans, records, tmp_path):
    """The budget itself: mean:hours_per_week after mean:age of the same records is composed
    with it (the joint model refitted on the data) and refused by a budget that either alone
    meets; of other records it is recorded on a budget of its own."""
    fit = _refit(adult)
    mu = max(p.guarantee.mu for p in plans.values())
    with Ledger.init(tmp_path / "l.db", budget_mu=1.2 * mu) as led:
        a, h = led.seal(plans["mean:age"]), led.seal(plans["mean:hours_per_week"])
        led.release(a, records, fit=fit)
        with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
            led.release(h, records.sample(frac=1.0, random_state=4), fit=fit)
        other = adult.drop(index=records.index).sample(n=100, random_state=5)
        led.release(h, other, fit=fit)
        assert sorted(c["releases"] for c in led.show()["cumulative"]) == [1, 1]


def test_rewriting_columns_the_release_does_not_read_does_not_make_a_new_dataset(
    adult, plans, records, tmp_path
):
    """The bypass the all-columns identity opens, closed: replace a column of the first table
    that no release reads (workclass ↦ junk, native_country ↦ shuffled) and the identity is
    another; but every column the release reads still holds the first dataset's values,
    record by record with the property, so it is composed with that dataset's releases —
    the same statistics again, and other statistics (mean:hours_per_week after mean:age)."""
    fit = _refit(adult)
    junk = records.assign(
        workclass="x",
        native_country=records["native_country"].sample(frac=1.0, random_state=8).to_numpy(),
    )
    mu = max(p.guarantee.mu for p in plans.values())
    with Ledger.init(tmp_path / "l.db", budget_mu=1.05 * mu) as led:
        a, h = led.seal(plans["mean:age"]), led.seal(plans["mean:hours_per_week"])
        led.release(a, records, fit=fit)
        for plan in (a, h):
            with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
                led.release(plan, junk, fit=fit)
        assert len(led.releases()) == 1
    with Ledger.init(tmp_path / "m.db", budget_mu=100.0) as led:
        a, h = led.seal(plans["mean:age"]), led.seal(plans["mean:hours_per_week"])
        led.release(a, records, fit=fit)
        rec = led.release(h, junk, fit=fit)
        assert rec.releases_of_dataset == 2 and "recorded with them" in rec.warnings[0]
        assert "release 1" in rec.warnings[0]
        fps = {e.fingerprint for e in led.releases()}
        assert len(fps) == 1, "recorded under the first dataset's identity"
        assert led.verify().ok
        # A release that reads a changed column — its hours given to other records — is still
        # the same records (every column it does not read holds the first table's values with
        # the property), and it releases the same mean: linked. It was a dataset of its own
        # with a fresh budget before (found by shuffling one column in review).
        hours = records["hours_per_week"].sample(frac=1.0, random_state=3).to_numpy()
        changed = records.assign(hours_per_week=hours)
        rec = led.release(h, changed, fit=fit)
        assert rec.releases_of_dataset == 3 and "the columns read differ" in rec.warnings[0]


def test_release_identity_is_the_three_computed_apart(adult):
    """One canonical pass per column gives exactly the identity, the sketch and the column
    identities of the public functions (what earlier ledgers stored stays comparable)."""
    import os

    from distprivacy.fingerprint import (
        column_identities,
        column_marginals,
        dataset_identity,
        dataset_sketch,
        release_identity,
    )

    t = adult.sample(n=500, random_state=3).assign(age=lambda d: d["age"].astype(str))
    key, cols, read = os.urandom(32), ["workclass", "age", "income"], ["sex", "income"]
    r = release_identity(t, cols, read, "income", key=key)
    assert r.identity == dataset_identity(t, cols, key=key)
    assert list(r.sketch) == dataset_sketch(t, cols, key=key)
    assert r.column_identities == column_identities(t, [*cols, *read], "income", key=key)
    assert r.column_marginals == column_marginals(t, [*cols, *read], key=key)
    assert r.column_distinct == {c: t[c].nunique() for c in r.column_marginals}
    # A column's marginal identity does not depend on which record holds which value.
    shuffled = t.assign(age=t["age"].sample(frac=1.0, random_state=1).to_numpy())
    assert column_marginals(shuffled, ["age"], key=key) == column_marginals(t, ["age"], key=key)
    assert set(r.column_identities) == {"workclass", "age", "income", "sex"}


def test_a_dataset_made_to_look_new_first_is_still_checked_against_the_original(
    adult, plans, records, tmp_path
):
    """The longer way round: after mean:age of the records, a release that *reads* the
    rewritten column (count of workclass, on a table whose every column but age and income is
    junk, so that nothing links it) gives the rewritten table a dataset of its own; mean:age of
    that table afterwards is then recorded with its own dataset, but the budget is checked
    against the original's releases too, and refuses it."""
    fit = _refit(adult)
    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    wmodel = fit_model(adult, spec, Query.parse("count:workclass==Private"), method="exact")
    wplan = Plan.from_calibration(DauM(epsilon=0.2, delta=1e-3).calibrate(wmodel), wmodel)
    others = [c for c in records.columns if c not in ("age", "income")]
    junk = records.assign(**dict.fromkeys(others, "junk")).assign(workclass="Private")
    a_mu = plans["mean:age"].guarantee.mu
    with Ledger.init(tmp_path / "l.db", budget_mu=1.05 * max(a_mu, wplan.guarantee.mu)) as led:
        a, w = led.seal(plans["mean:age"]), led.seal(wplan)
        led.release(a, records, fit=fit)
        rec = led.release(w, junk, fit=fit)  # reads the rewritten column: its own dataset
        assert rec.releases_of_dataset == 1
        assert not any("record by record" in x for x in rec.warnings)  # (a near-duplicate)
        with pytest.raises(BudgetExceededError, match="2 earlier releases of this dataset"):
            led.release(a, junk, fit=fit)
        assert len(led.releases()) == 2


def test_rewriting_a_declared_record_id_does_not_make_a_new_dataset(
    adult, plans, records, tmp_path
):
    """identify_by=['person_id']: the ids renumbered make another identity, but every column
    of the first target was fingerprinted with the property, so mean:hours_per_week of the
    renumbered records (a column no earlier release read) is linked to the first dataset and
    refused by a budget one release meets."""
    fit = _refit(adult)
    ids = records.assign(person_id=range(len(records)))
    renumbered = ids.assign(person_id=ids["person_id"] + 1000)
    mu = max(p.guarantee.mu for p in plans.values())
    with Ledger.init(tmp_path / "l.db", budget_mu=1.05 * mu, identify_by=["person_id"]) as led:
        a, h = led.seal(plans["mean:age"]), led.seal(plans["mean:hours_per_week"])
        led.release(a, ids, fit=fit)
        with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
            led.release(h, renumbered, fit=fit)
        assert len(led.releases()) == 1


def test_a_column_in_other_units_is_the_same_records(adult, plans, records, tmp_path):
    """Re-encoding the data: the same records with age in months (×12) are another identity
    (other values), but the release reads a column that orders the records exactly as before
    with the property, so it is linked to the first dataset. Its plan is in months, the first
    in years: the joint guarantee cannot be computed from the two plans' moments, and the
    release is refused saying so (it was given a budget of its own before). Ages shifted by
    one year are linked and refused by the budget, and so is a table in which the ages are
    given to other records (the same records in every other column; the same mean age)."""
    from distprivacy.fingerprint import column_identities

    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    months = fit_model(adult.assign(age=adult["age"] * 12), spec, Query.parse("mean:age"),
                       method="exact")  # fmt: skip
    p_months = Plan.from_calibration(DauM(epsilon=1.0, delta=1e-3).calibrate(months), months)
    mu = plans["mean:age"].guarantee.mu
    assert p_months.guarantee.mu == pytest.approx(mu, rel=1e-12)  # units do not move μ
    with Ledger.init(tmp_path / "l.db", budget_mu=1.05 * mu) as led:
        a, am = led.seal(plans["mean:age"]), led.seal(p_months)
        led.release(a, records)
        before = (tmp_path / "l.db").read_bytes()
        with pytest.raises(DistPrivacyError, match=r"mean\(age\) in other units .*×144"):
            led.release(am, records.assign(age=records["age"] * 12))
        assert (tmp_path / "l.db").read_bytes() == before
        with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
            led.release(a, records.assign(age=records["age"] + 1))
        other = records["age"].sample(frac=1.0, random_state=1).to_numpy()
        shuffled_ages = records.assign(age=other)
        key = b"k" * 16
        assert (column_identities(shuffled_ages, ["age"], "income", key=key)["age"]
                != column_identities(records, ["age"], "income", key=key)["age"])  # fmt: skip
        with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
            led.release(a, shuffled_ages)


# -- The columns read changed: the records are still the records --------------------------


def test_jittered_or_shuffled_read_columns_are_the_same_dataset(adult, plans, records, tmp_path):
    """The attacks on the read column itself (found in review): mean:age, then mean:age of the
    same records with every age jittered by a hundredth of a year (the mean moves by less than
    the noise) or the ages handed to other records (the mean does not move). Each got a budget
    of its own, and averaging such releases wears the noise away. Now the columns the release
    does not read identify the records ("records"), and on a table holding only the columns
    read, the ages' multiset does ("values")."""
    gen = np.random.default_rng(4)
    jitter = records.assign(age=records["age"] + gen.uniform(-0.01, 0.01, len(records)))
    shuffled = records.assign(age=records["age"].sample(frac=1.0, random_state=5).to_numpy())
    narrow = records[["age", "income", "sex"]]
    narrow_shuffled = shuffled[["age", "income", "sex"]]
    mu = plans["mean:age"].guarantee.mu
    cases = (
        (records, jitter, "the columns read differ"),
        (records, shuffled, "the columns read differ"),
        (narrow, narrow_shuffled, "given to other records"),
    )
    for k, (first, second, why) in enumerate(cases):
        with Ledger.init(tmp_path / f"b{k}.db", budget_mu=1.05 * mu) as led:
            a = led.seal(plans["mean:age"])
            led.release(a, first)
            with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
                led.release(a, second)
        with Ledger.init(tmp_path / f"w{k}.db", budget_mu=100.0) as led:
            a = led.seal(plans["mean:age"])
            led.release(a, first)
            rec = led.release(a, second)
            assert rec.releases_of_dataset == 2 and why in rec.warnings[0], rec.warnings


def test_other_records_are_not_linked(adult, plans, records, tmp_path):
    """Another sample of the population is another dataset: no test links it (its own
    budget), on the full table and on the columns read alone."""
    other = adult.drop(records.index).sample(n=100, random_state=12)
    mu = plans["mean:age"].guarantee.mu
    for cols in (list(records.columns), ["age", "income", "sex"]):
        with Ledger.init(tmp_path / f"o{len(cols)}.db", budget_mu=1.05 * mu) as led:
            a = led.seal(plans["mean:age"])
            led.release(a, records[cols])
            rec = led.release(a, other[cols])
            assert rec.releases_of_dataset == 1
            assert not any("budget is checked against" in w for w in rec.warnings)


def test_a_column_of_few_values_shuffled_alone_is_not_enough_to_link(adult, records, tmp_path):
    """What the "values" test leaves out, on purpose: the read column has few values (sex),
    so the same number of women is too common among other datasets to stand for the records;
    a table of the columns read and one other column, the sexes shuffled, is its own dataset
    (the limit docs/ledger.md states). With two or more other columns kept, it is linked."""
    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    model = fit_model(adult, spec, Query.parse("count:sex==Female"), method="exact")
    plan = Plan.from_calibration(DauM(epsilon=1.0, delta=1e-3).calibrate(model), model)
    sexes = records["sex"].sample(frac=1.0, random_state=6).to_numpy()
    with Ledger.init(tmp_path / "s.db", budget_mu=100.0) as led:
        p = led.seal(plan)
        led.release(p, records[["sex", "income", "age"]])
        shuffled = records[["sex", "income", "age"]].assign(sex=sexes)
        assert led.release(p, shuffled).releases_of_dataset == 1
    with Ledger.init(tmp_path / "t.db", budget_mu=100.0) as led:
        p = led.seal(plan)
        led.release(p, records)
        rec = led.release(p, records.assign(sex=sexes))
        assert rec.releases_of_dataset == 2 and "the columns read differ" in rec.warnings[0]
