"""The privacy ledger (distprivacy.ledger), on a ledger of secrets (schema 3): budget,
record-then-reveal, refusals that leave the file unchanged, concurrency, crashes."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from secrets_world import PROTECT, SECRET, SECRET_KEY, WAVE1, new_ledger, steward_path

from distprivacy.composition import CompositionError
from distprivacy.guarantee import Guarantee
from distprivacy.ledger import (
    SCHEMA_VERSION,
    BudgetExceededError,
    Ledger,
    LedgerEntry,
    LedgerError,
    StewardKey,
    data_fingerprint,
    plan_composer,
)
from distprivacy.ledger._verify import secret_composer
from distprivacy.profiles import gdp_delta
from distprivacy.targets import GDP, EpsDelta

EPS = 0.5
DELTA = 1e-3
SPEC = ("income==>50K", 100, [0.45, 0.55])
PROP = "income==>50K"


def _group_dp(mu: float = 1.0) -> Guarantee:
    return Guarantee(
        epsilon=1.0,
        delta=float(gdp_delta(1.0, mu)),
        theorem="group DP",
        mu=mu,
        curve="gdp",
        verified=True,
        holds_for_every_input=True,
    )


def _entry(g: Guarantee, prop: str = SECRET_KEY, **kw) -> LedgerEntry:
    """A hand-made release of the registered dataset wave1 under a secret (``prop``)."""
    kw.setdefault("mechanism", "GroupDP-G")
    return LedgerEntry(
        fingerprint=WAVE1, property=prop, statistics=("s",), guarantee=g, values=(1.0,), **kw
    )


def _first(entries):
    return entries[-1].guarantee


def _snapshot(path: Path) -> dict[str, bytes | None]:
    out = {}
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        out[suffix] = p.read_bytes() if p.exists() else None
    return out


# -- Adult: plans released twice, the third refused ----------------------------------------------


def test_two_releases_then_the_budget_refuses_a_third(tmp_path, ledger_world):
    mu = ledger_world["plan"].guarantee.mu
    path = tmp_path / "ledger.db"
    # ε at δ = 0.001: 0.50 after one release, 0.75 after two, above 0.85 after three. (A μ
    # budget would refuse the plan: its fitted Gaussians are not μ-GDP.)
    new_ledger(path, ledger_world, EpsDelta(0.85, DELTA))
    with Ledger(path) as led:
        first = led.release("means", "wave1").cumulative
        assert first.mu == pytest.approx(mu, rel=1e-9)
        r2 = led.release("means", "wave1")
        second = r2.cumulative
        assert mu < second.mu < math.sqrt(2) * mu
        assert r2.releases_of_dataset == 2 and len(led.releases(WAVE1, SECRET_KEY)) == 2
    before = _snapshot(path)
    assert before["-wal"] is None  # closing checkpointed and removed the WAL
    with Ledger(path) as led:
        with pytest.raises(BudgetExceededError) as err:
            led.release("means", "wave1")
        msg = str(err.value)
        assert "cumulative δ = " in msg and "budget (ε, δ) = (0.85, 0.001)" in msg
        assert "\n" not in msg
        assert "2 earlier releases of this secret" in msg and "nothing was recorded" in msg
        assert len(led.releases()) == 2
        assert led.integrity_check() == "ok"
        shown = led.show()
    assert _snapshot(path) == before  # byte-for-byte, db and WAL
    json.dumps(shown, allow_nan=False)
    [cum] = shown["cumulative"]
    assert cum["secret"] == SECRET and cum["releases"] == 2
    assert cum["mu"] == pytest.approx(second.mu)
    assert cum["at_delta"] == DELTA and cum["delta"] <= DELTA * (1 + 1e-6)
    assert 0.5 < cum["max_attack_accuracy"] < 1 and cum["epsilon"] > EPS
    assert [r["id"] for r in shown["releases"]] == [1, 2]
    assert shown["releases"][1]["values"] == pytest.approx(list(r2.release.values))
    # Recomputing from the stored plans gives the stored cumulative guarantee.
    with Ledger(path) as led:
        again = led.cumulative(WAVE1, SECRET_KEY, secret_composer(led))
    assert again.mu == pytest.approx(second.mu, rel=1e-12)


@pytest.fixture(scope="module")
def adult_plan(adult):
    """A DauM-G calibration and the parts of its plan the ledger composes with."""
    from distprivacy.mechanisms import DauM
    from distprivacy.mechanisms.plans import model_to_dict
    from distprivacy.models import ExactModel
    from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec(*SPEC)
    query = Query.parse(ADULT_DEFAULT_STATISTICS)
    model = ExactModel().fit(adult, spec, query)
    cal = DauM(EpsDelta(EPS, DELTA)).calibrate(model)
    plan = {
        "spec": spec.to_dict(),
        "query": ADULT_DEFAULT_STATISTICS,
        "model": model_to_dict(model),
        "digest": "sha256:plan",
    }
    g = Guarantee(
        epsilon=EPS,
        delta=cal.delta_achieved,
        theorem=cal.theorem,
        mu=cal.mu,
        max_attack_accuracy=cal.max_attack_accuracy,
        verified=True,
    )
    fp = data_fingerprint(adult.iloc[:100], list(adult.columns))
    return cal, plan, g, fp


def _plan_entry(adult_plan, values) -> LedgerEntry:
    cal, plan, g, fp = adult_plan
    return LedgerEntry(
        fingerprint=fp,
        property=PROP,
        mechanism=cal.mechanism,
        statistics=cal.statistic_names,
        guarantee=g,
        values=values,
        noise_family=cal.noise.family,
        noise_covariance=cal.noise_covariance,
        plan=plan,
        plan_digest=plan["digest"],
    )


def test_releases_of_different_statistics_need_one_joint_model(tmp_path, adult, adult_plan):
    from distprivacy.mechanisms import DauM
    from distprivacy.mechanisms.plans import model_to_dict
    from distprivacy.models import ExactModel
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec

    cal, plan, _, fp = adult_plan
    sub_text = "mean(age)"  # the name; the query text is mean:age
    sub_model = ExactModel().fit(adult, ProtectionSpec(*SPEC), Query.parse("mean:age"))
    sub_cal = DauM(EpsDelta(EPS, DELTA)).calibrate(sub_model)
    sub_plan = {**plan, "query": "mean:age", "model": model_to_dict(sub_model)}
    sub = LedgerEntry(
        fingerprint=fp,
        property=PROP,
        mechanism="DauM-G",
        statistics=(sub_text,),
        guarantee=Guarantee(EPS, sub_cal.delta_achieved, "A.1", mu=sub_cal.mu),
        values=(40.0,),
        noise_family="gaussian",
        noise_covariance=sub_cal.noise_covariance,
        plan=sub_plan,
    )
    full = _plan_entry(adult_plan, np.zeros(5))
    # The full plan's model covers mean(age) and agrees with the sub-plan's moments.
    joint = plan_composer(at_delta=DELTA)([full, sub])
    assert joint.mu > cal.mu
    # Different statistics not covered by one model: refused without the data, refitted with.
    other_model = ExactModel().fit(adult, ProtectionSpec(*SPEC), Query.parse("mean:capital_gain"))
    other = LedgerEntry(
        **{
            **sub.__dict__,
            "statistics": ("mean(capital_gain)",),
            "plan": {**plan, "query": "mean:capital_gain", "model": model_to_dict(other_model)},
        }
    )
    with pytest.raises(CompositionError, match="different statistics"):
        plan_composer(at_delta=DELTA)([sub, other])
    texts = []

    def fit(text):
        texts.append(text)
        return ExactModel().fit(adult, ProtectionSpec(*SPEC), Query.parse(text))

    refit = plan_composer(at_delta=DELTA, fit=fit)([sub, other])
    assert texts == ["mean:age,mean:capital_gain"] and refit.mu > sub_cal.mu


# -- budgets, refusals, opening -----------------------------------------------------------------


def test_epsilon_delta_budget_and_refusals_leave_the_file_unchanged(tmp_path, ledger_world):
    path = tmp_path / "l.db"
    point = Guarantee(0.4, 1e-4, "group DP", verified=True, holds_for_every_input=True)
    compose = plan_composer(at_delta=1e-3)
    steward = new_ledger(path, ledger_world, EpsDelta(1.0, 1e-3))
    with Ledger(path) as led:
        led.record(_entry(point), compose)
        g = led.record(_entry(point), compose)
        assert (g.epsilon, g.delta) == (pytest.approx(0.8), pytest.approx(2e-4))
    before = _snapshot(path)
    with Ledger(path) as led:
        with pytest.raises(BudgetExceededError, match=r"would exceed the budget \(ε, δ\)"):
            led.record(_entry(point), compose)
        # A model-based release without a joint model cannot be composed: refused, unchanged.
        laplace = Guarantee(0.1, 0.0, "Thm 4.3", verified=True)
        with pytest.raises(CompositionError, match="no exact joint computation"):
            led.record(_entry(laplace, mechanism="DirM-L", noise_family="laplace"), compose)
        # A compose that fails in any way also leaves it unchanged.
        with pytest.raises(ZeroDivisionError):
            led.record(_entry(point), lambda entries: 1 / 0)
    assert _snapshot(path) == before
    # Another secret has its own account.
    with Ledger(path) as led:
        led.add_secret(steward, "sex", "sex==Female", EpsDelta(1.0, 1e-3),
                       population=ledger_world["population"])  # fmt: skip
        assert led.record(_entry(laplace, prop="secret:sex"), compose) == laplace
    with Ledger(path) as led:
        assert [e.property for e in led.releases()] == [SECRET_KEY, SECRET_KEY, "secret:sex"]
        assert len(led.releases(property="secret:sex")) == 1
        assert led.releases(fingerprint="dataset:other@1") == []


def test_opening_a_ledger_reads_it_only_through_sqlite(tmp_path, ledger_world, monkeypatch):
    """Opening a ledger never opens a descriptor of its own on the file: closing one would drop
    every POSIX lock the process holds on it, another thread's SQLite locks included (two
    service threads on one ledger corrupted it, issue 34). The header is checked by SQLite."""
    import builtins
    import io

    path = tmp_path / "ledger.db"
    new_ledger(path, ledger_world)
    real_open, real_io_open = builtins.open, io.open
    opened: list[str] = []

    def watch(opener):
        def inner(file, *a, **kw):
            if isinstance(file, str | os.PathLike) and Path(file).resolve() == path.resolve():
                opened.append(str(file))
            return opener(file, *a, **kw)

        return inner

    monkeypatch.setattr(builtins, "open", watch(real_open))
    monkeypatch.setattr(io, "open", watch(real_io_open))
    with Ledger(path) as led:
        assert led.verify().ok
    assert opened == []


def test_init_and_open_refuse_what_is_not_a_ledger(tmp_path, ledger_world):
    path = tmp_path / "l.db"
    steward = StewardKey.generate(steward_path(path))

    def init(budget=None, **kw):
        budget = GDP(1.0) if budget is None else budget
        kw = {"steward": steward, "secret": SECRET, "protect": PROTECT, "budget": budget,
              "population": ledger_world["population"], **kw}  # fmt: skip
        return Ledger.init(path, **kw)

    with pytest.raises(LedgerError, match="a budget is GDP"):
        init(budget=1.0)
    with pytest.raises(LedgerError, match="steward"):
        init(steward=tmp_path / "no-such.key")
    assert not path.exists()
    init().close()
    with pytest.raises(LedgerError, match="already exists"):
        init(budget=GDP(2.0))
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    con.close()
    with pytest.raises(LedgerError, match="no ledger at"):
        Ledger(tmp_path / "missing.db")
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    with pytest.raises(LedgerError, match="not an SQLite database") as err:
        Ledger(text)
    assert "\n" not in str(err.value)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(LedgerError, match="not a distprivacy ledger"):
        Ledger(other)
    with Ledger(path) as led:
        assert not led.read_only
        assert led.budget == GDP(1.0)
        assert "0 releases" in repr(led) and f"secret {SECRET}" in repr(led)


def test_data_fingerprint_is_canonical():
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [0.5, 1.5, 2.5]})
    fp = data_fingerprint(df, ["a", "b"])
    assert fp.startswith("sha256:") and len(fp) == 7 + 64
    assert data_fingerprint(df.assign(c=[9.0, 9.0, 9.0]), ["b", "a"]) == fp
    assert data_fingerprint(df.iloc[[1, 0, 2]], ["a", "b"]) != fp
    assert data_fingerprint(df.assign(a=[1, 2, 4]), ["a", "b"]) != fp
    assert data_fingerprint(df.rename(columns={"a": "A"}), ["A", "b"]) != fp
    # Text: a changed value, two values swapped (same distinct values, other rows), a missing
    # value against the text "nan"; integers beyond 2^53 are exact.
    assert data_fingerprint(df.assign(b=["x", "y", "w"]), ["a", "b"]) != fp
    assert data_fingerprint(df.assign(b=["y", "x", "z"]), ["a", "b"]) != fp
    na = data_fingerprint(df.assign(b=["x", None, "z"]), ["b"])
    assert na != data_fingerprint(df.assign(b=["x", "nan", "z"]), ["b"])
    big = pd.DataFrame({"n": [2**53, 1]})
    assert data_fingerprint(big, ["n"]) != data_fingerprint(big.assign(n=[2**53 + 1, 1]), ["n"])


# -- two processes at once ----------------------------------------------------------------------


def _racer(path: str, go, out) -> None:
    from distprivacy.composition import compose_guarantees

    def slow(entries):
        time.sleep(0.3)  # inside the transaction: widen the race
        return compose_guarantees([e.guarantee for e in entries])

    led = Ledger(path)
    go.wait()
    try:
        g = led.record(_entry(_group_dp(1.0)), slow)
        out.put(("ok", g.mu))
    except BudgetExceededError as exc:
        out.put(("refused", str(exc)))
    led.close()


@pytest.mark.parametrize("budget", [1.2, 1.5])
def test_two_processes_serialise(tmp_path, ledger_world, budget):
    """μ-GDP releases of μ = 1 each: √2 = 1.414 is above a budget of 1.2 and below 1.5."""
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, GDP(budget))
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(str(path), go, out)) for _ in range(2)]
    for p in procs:
        p.start()
    time.sleep(0.2)
    go.set()
    results = sorted(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Ledger(path) as led:
        mus = [e.cumulative.mu for e in led.releases()]
    if budget == 1.2:
        assert [r[0] for r in results] == ["ok", "refused"]
        assert "1 earlier release" in results[1][1] and mus == [1.0]
    else:
        assert [r[0] for r in results] == ["ok", "ok"]
        # The second saw the first: serialised, never two releases each believing it is alone.
        assert mus == pytest.approx([1.0, math.sqrt(2)])


# -- SIGKILL between record and reveal ----------------------------------------------------------


def _record_then_print(path: str, fd: int) -> None:
    led = Ledger(path)
    os.write(fd, b"ready\n")
    for _ in range(10_000):
        led.record(_entry(_group_dp(0.01)), _first)
        os.write(fd, f"{led.last_id}\n".encode())  # reveal only after the commit


def test_sigkill_never_leaves_a_printed_release_unrecorded(tmp_path, ledger_world):
    path = tmp_path / "l.db"
    new_ledger(path, ledger_world, GDP(1.0))
    ctx = multiprocessing.get_context("fork")
    rng = np.random.default_rng(14)
    printed_total = 0
    t0 = time.monotonic()
    seen: set[int] = set()
    for _ in range(20):
        r, w = os.pipe()
        p = ctx.Process(target=_record_then_print, args=(str(path), w))
        p.start()
        os.close(w)
        with os.fdopen(r, "rb") as pipe:
            assert pipe.readline() == b"ready\n"
            time.sleep(float(rng.uniform(0.0, 0.15)))
            os.kill(p.pid, signal.SIGKILL)
            p.join(30)
            printed = [int(x) for x in pipe.read().split()]
        assert p.exitcode == -signal.SIGKILL
        with Ledger(path) as led:
            assert led.integrity_check() == "ok"
            assert led._verified()[0].ok  # chain, head and anchor
            recorded = {int(e.id) for e in led.releases()} - seen  # this run's
        seen |= recorded
        assert set(printed) <= recorded  # every revealed release has its entry
        assert len(recorded) - len(printed) <= 1  # at most the one being revealed is lost
        printed_total += len(printed)
    assert printed_total > 0
    assert time.monotonic() - t0 < 90


def test_a_mu_budget_also_bounds_the_attack(tmp_path, ledger_world):
    """A cumulative guarantee whose exact profile failed closed (attack bound 1) is refused
    under a μ budget even when its μ fits; one stated at a point (not μ-GDP) is refused
    whatever its μ label."""
    failed = Guarantee(1.0, 1.0, "joint", mu=0.1, curve="gdp", max_attack_accuracy=1.0)
    point = Guarantee(1.0, 1e-3, "joint", mu=0.1)
    new_ledger(tmp_path / "l.db", ledger_world, GDP(1.0))
    with Ledger(tmp_path / "l.db") as led:
        with pytest.raises(BudgetExceededError, match=r"attack bound = 100\.00%"):
            led.record(_entry(failed), _first)
        with pytest.raises(BudgetExceededError, match=r"is not μ-GDP.*\(ε, δ\) budget"):
            led.record(_entry(point), _first)
        assert led.releases() == []


def test_entry_from_plan(adult_plan):
    from types import SimpleNamespace

    cal, plan, g, fp = adult_plan
    fake = SimpleNamespace(
        to_dict=lambda: plan,
        calibration=cal,
        guarantee=g,
        data_fingerprint=fp,
        protected_property=PROP,
    )
    e = LedgerEntry.from_plan(fake, np.ones(5))
    assert (e.fingerprint, e.property, e.mechanism) == (fp, PROP, "DauM-G")
    assert e.plan_digest == "sha256:plan" and e.noise_family == "gaussian"
    assert np.array_equal(e.noise_covariance, cal.noise_covariance)
    assert e.values == (1.0,) * 5 and e.statistics == cal.statistic_names
    with pytest.raises(LedgerError, match="no protected property"):
        LedgerEntry.from_plan(SimpleNamespace(**{**fake.__dict__, "protected_property": None}), [1])
