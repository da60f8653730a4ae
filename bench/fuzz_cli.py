"""A fuzz campaign of the command line and the API (issue 21).

    python3 bench/fuzz_cli.py [--quick] [--out bench/results_fuzz.txt]

Generates malformed and extreme inputs for `calibrate`, `release`, `ledger` and `local city` —
numbers, lists, predicates, statistics, paths (missing, directories, FIFOs, device nodes,
malformed CSV/JSON/TOML, deep documents), plans and ledgers edited by hand, side doors (seeds,
config files) — and library calls with wrong types, NaN and unknown keywords, runs each in
process with a time limit, and classifies the outcome:

* ``ok`` — exit 0 on valid input, or a clean refusal (exit 2, one line ``error: …``) of invalid
  input (exit 1 only where a command documents it: ``ledger verify`` on a tampered ledger);
* ``traceback`` — an exception escaped, or exit 1 with a Python traceback;
* ``exact`` — exit 0 printing a true statistic of the target without ``--allow-exact``;
* ``silent`` — exit 0 on input the generator marks as clearly invalid;
* ``hang`` — no answer within the time limit.

It prints the tally and writes it (with every non-``ok`` case) to ``--out``. The goal is 0 of
every kind but ``ok``. ``tests/test_fuzz_sample.py`` runs a fixed sample of the same cases.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from public_data import adult_dir_or_exit  # noqa: E402

LIMIT_S = 90


@dataclass(frozen=True)
class Case:
    """One command line (``args``) or library call (``call``), and whether it is invalid."""

    name: str
    args: tuple[str, ...] = ()
    invalid: bool = True
    call: Callable[[], object] | None = None
    exact_check: bool = False
    allow_exit_1: bool = False


class _HangError(Exception):
    pass


@contextlib.contextmanager
def _limit(seconds: int) -> Iterator[None]:
    def fire(*_):
        raise _HangError

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_case(case: Case, world: dict) -> tuple[str, str]:
    """(kind, detail) of one case (module docstring)."""
    from distprivacy.cli import main
    from distprivacy.exceptions import DistPrivacyError

    out, err = io.StringIO(), io.StringIO()
    try:
        with _limit(LIMIT_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if case.call is not None:
                try:
                    case.call()
                    rc = 0
                except DistPrivacyError as e:
                    msg = str(e)
                    if "\n" in msg or not msg:
                        return "traceback", f"multi-line or empty message: {msg!r}"
                    rc = 2
            else:
                rc = main(list(case.args))
    except _HangError:
        return "hang", f"no answer within {LIMIT_S} s"
    except BaseException as e:
        return "traceback", f"{type(e).__name__}: {e}"[:300]
    stderr, stdout = err.getvalue(), out.getvalue()
    if "Traceback" in stderr:
        return "traceback", stderr.strip().splitlines()[-1][:300]
    if rc == 2:
        lines = [x for x in stderr.strip().splitlines() if x.strip()]
        if case.call is None and not (len(lines) == 1 and lines[0].startswith("error: ")):
            return "traceback", f"exit 2 without one error line: {stderr[:200]!r}"
        return "ok", ""
    if rc == 1 and case.allow_exit_1:
        return "ok", ""
    if rc not in (0,):
        return "traceback", f"exit {rc}: {stderr.strip()[-200:]!r}"
    if case.exact_check and "--allow-exact" not in case.args:
        released = _released_values(stdout)
        for t, x in zip(world["true"], released, strict=False):
            if abs(x - t) <= 1e-12 * max(1.0, abs(t)):
                return "exact", f"released the true value {t}"
    if case.invalid:
        return "silent", f"exit 0 on invalid input: {stdout[:120]!r}"
    return "ok", ""


def _released_values(stdout: str) -> list[float]:
    """The released statistics, in order: from ``--json`` output, or from the rows of the
    release table (the number after each statistic's name)."""
    import re

    try:
        stats = json.loads(stdout).get("statistics", {})
        return [float(v) for v in stats.values()]
    except (ValueError, AttributeError):
        pass
    out = []
    for name in ("mean(age)", "count(sex==Female)"):
        m = re.search(re.escape(name) + r"\s*│?\s*(-?[0-9.]+(?:e[-+]?[0-9]+)?)", stdout)
        if m:
            out.append(float(m.group(1)))
    return out


def make_world(tmp: Path) -> dict:
    """Small files every case can point at: a 2,000-row Adult table, a target of 50 of its
    records, a sealed plan, a ledger, and the odd paths (FIFO, device, directory, garbage)."""
    import distprivacy as dp
    from distprivacy.cli import main

    adult = dp.load_adult(adult_dir_or_exit())
    data = adult.sample(n=2000, random_state=0)
    data.to_csv(tmp / "data.csv", index=False)
    target = data.sample(n=50, random_state=1)
    target.to_csv(tmp / "target.csv", index=False)
    base = [
        "--data",
        str(tmp / "data.csv"),
        "--engine",
        "pandas",
        "--subset-size",
        "50",
        "--protect",
        "income==>50K",
        "--statistics",
        "mean:age,count:sex==Female",
        "--modeling",
        "exact",
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(["calibrate", *base, "--mechanism", "DauM-G", "--save", str(tmp / "plan.json")])
            == 0
        )
        assert main(["ledger", "init", str(tmp / "ledger.db"), "--budget-mu", "100"]) == 0
        assert main(["ledger", "seal", str(tmp / "ledger.db"), str(tmp / "plan.json")]) == 0
        assert (
            main(
                [
                    "release",
                    "--plan",
                    str(tmp / "plan.json"),
                    "--target",
                    str(tmp / "target.csv"),
                    "--ledger",
                    str(tmp / "ledger.db"),
                ]
            )
            == 0
        )
    true = dp.Query.parse("mean:age,count:sex==Female").evaluate(target)
    os.mkfifo(tmp / "fifo.csv")
    with contextlib.suppress(OSError):
        os.mknod(tmp / "null.csv", 0o600 | 0o020000, os.makedev(1, 3))
    (tmp / "dir.csv").mkdir()
    (tmp / "garbage.csv").write_bytes(b"\x00\xff\xfe" * 100)
    (tmp / "empty.csv").write_text("")
    (tmp / "header.csv").write_text("age,income\n")
    (tmp / "dup.csv").write_text("age,age,income\n1,2,>50K\n3,4,<=50K\n")
    (tmp / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (tmp / "notjson.json").write_text("{plan")
    (tmp / "deep.toml").write_text("a = " + "[" * 500 + "]" * 500 + "\n")
    (tmp / "bad.toml").write_text("= =\n")
    (tmp / "exact.toml").write_text("allow-exact = true\n")
    (tmp / "text.db").write_text("not a database")
    return {"tmp": tmp, "base": base, "true": true, "data": data}


NUMBERS = {
    "--epsilon": ["-1", "0", "nan", "inf", "1e309", "abc", "", "5e-324", "true", "1e400"],
    "--delta": ["0", "1", "2", "-1", "nan", "1e-400", "x"],
    "--subset-size": ["0", "-5", "1.5", "1e12", "abc", "3000"],
    "--target-mu": ["0", "-1", "1e-300", "1e7", "nan", "inf"],
    "--max-attack-accuracy": ["0.5", "1", "2", "nan", "0"],
    "--samples": ["0", "-1", "1e12", "x"],
    "--seed": ["-1", "1.5", "4294967296", "x", "nan"],
}
LISTS = {
    "--values": ["", ",", "0.45,,0.55", "0.45", "1.5,0.5", "a,b", "0.45;0.55", "0.5,0.5"],
    "--pairs": ["", ":", "0.45:", "0.45:0.55,", "0.4:0.6", "x:y"],
    "--statistics": [
        "",
        "mean:",
        "MEAN:age",
        "mean:nosuch",
        "count:sex",
        "mean:age,,",
        "median:age",
        "mean:income",
        "sum:",
        ",,",
    ],
    "--protect": ["", "sex", "nosuch==1", "age>>3", "income==nothing", "==", "age<=>3"],
    "--mechanism": ["", "nosuch", "DAUM-G ", "ExpM-G,DauM-G"],
}
#: The generated option values that are valid (everything else above is invalid).
#: (--samples is not used with --modeling exact, so any count is accepted there.)
VALID = {
    ("--epsilon", "5e-324"),
    ("--pairs", "0.4:0.6"),
    ("--mechanism", "DAUM-G "),
    ("--samples", "1e12"),
}
PATHS = [
    "missing.csv",
    "fifo.csv",
    "null.csv",
    "dir.csv",
    "garbage.csv",
    "empty.csv",
    "header.csv",
    "dup.csv",
    "deep.json",
    "notjson.json",
]


def cases(world: dict) -> list[Case]:
    tmp, base = world["tmp"], world["base"]
    out: list[Case] = []

    def with_option(base_args: list[str], opt: str, value: str) -> tuple[str, ...]:
        args = list(base_args)
        if opt in args:
            i = args.index(opt)
            args[i + 1] = value
            return tuple(args)
        return (*args, opt, value)

    for cmd, extra in (
        ("calibrate", ["--mechanism", "DauM-G"]),
        ("release", ["--mechanism", "DauM-G", "--target", str(tmp / "target.csv")]),
    ):
        good = [cmd, *base, *extra]
        out.append(Case(f"{cmd} valid", tuple(good), invalid=False, exact_check=cmd == "release"))
        for opt, values in {**NUMBERS, **LISTS}.items():
            for v in values:
                if opt == "--pairs" and v == "0.4:0.6":
                    args = with_option(with_option(good, "--values", "0.4,0.6"), opt, v)
                else:
                    args = with_option(good, opt, v)
                # Each also with --json: its output path formats errors and numbers apart.
                for tail in ((), ("--json",)):
                    out.append(
                        Case(
                            f"{cmd} {opt}={v!r} {' '.join(tail)}".strip(),
                            (*args, *tail),
                            invalid=(opt, v) not in VALID,
                            exact_check=cmd == "release",
                        )
                    )
        # Two bad options at once: the first error is reported, on one line.
        opts = list(NUMBERS)
        for a_i, a in enumerate(opts):
            for b in opts[a_i + 1 :]:
                args = with_option(with_option(good, a, NUMBERS[a][0]), b, NUMBERS[b][-1])
                out.append(Case(f"{cmd} {a}+{b}", args, exact_check=cmd == "release"))
        for p in PATHS:
            out.append(Case(f"{cmd} --data {p}", with_option(good, "--data", str(tmp / p))))
            if cmd == "release":
                out.append(
                    Case(f"release --target {p}", with_option(good, "--target", str(tmp / p)))
                )
        for cfg in ("missing.toml", "deep.toml", "bad.toml", "exact.toml"):
            out.append(
                Case(
                    f"{cmd} --config {cfg}",
                    (*good, "--config", str(tmp / cfg)),
                    exact_check=cmd == "release",
                )
            )
        for eps in ("1e20", "1e300", "1e100"):
            for mech in ("ExpM-L", "DirM-L", "GroupDP-L", "Wasserstein", "DauM-G"):
                args = with_option(with_option(good, "--mechanism", mech), "--epsilon", eps)
                out.append(
                    Case(f"{cmd} {mech} ε={eps}", args, invalid=False, exact_check=cmd == "release")
                )
    plan, ledger, target = str(tmp / "plan.json"), str(tmp / "ledger.db"), str(tmp / "target.csv")
    rel = ["release", "--plan", plan, "--target", target]
    out.append(Case("release --plan valid", tuple(rel), invalid=False, exact_check=True))
    for p in [*PATHS, "text.db"]:
        out.append(
            Case(f"release --plan {p}", ("release", "--plan", str(tmp / p), "--target", target))
        )
        out.append(Case(f"release --ledger {p}", (*rel, "--ledger", str(tmp / p))))
        out.append(Case(f"ledger show {p}", ("ledger", "show", str(tmp / p))))
        out.append(Case(f"ledger verify {p}", ("ledger", "verify", str(tmp / p))))
    for v in ("0,0", "1e308,1e308", "nan,1", "1", "1,2,3", "", "40,25"):
        out.append(
            Case(
                f"release --plan --value {v}",
                ("release", "--plan", plan, "--value", v, "--seed", "1"),
                invalid=v != "40,25",
            )
        )
    out.append(Case("release --ledger --seed", (*rel, "--ledger", ledger, "--seed", "7")))
    out.append(
        Case("release --ledger valid", (*rel, "--ledger", ledger), invalid=False, exact_check=True)
    )
    raw = json.loads(Path(plan).read_text())
    edits = {
        "calibration.delta=2": ("calibration", "delta", 2),
        "mechanism=NoNoise": (None, "mechanism", "NoNoise"),
        "spec=null": (None, "spec", None),
        "statistics=str": (None, "statistics", "mean(age)"),
        "format_version=2": (None, "format_version", 2),
        "digest=x": (None, "digest", "sha256:00"),
        "seal=x": (None, "seal", "hmac-sha256:" + "0" * 64),
    }
    for name, (outer, key, value) in edits.items():
        r = json.loads(json.dumps(raw))
        (r[outer] if outer else r)[key] = value
        path = tmp / f"edit-{len(out)}.json"
        path.write_text(json.dumps(r))
        # Without a ledger a seal is not checked (it is a ledger's approval): a valid plan.
        out.append(
            Case(
                f"plan edit {name}",
                ("release", "--plan", str(path), "--target", target),
                invalid=name != "seal=x",
            )
        )
        out.append(
            Case(
                f"plan edit {name} + ledger",
                ("release", "--plan", str(path), "--target", target, "--ledger", ledger),
            )
        )
    for sql in (
        "UPDATE budget SET mu = 1e9",
        "DELETE FROM releases",
        "UPDATE budget SET mu = -1",
        "UPDATE releases SET guarantee = '{'",
        "DROP TABLE budget",
    ):
        path = tmp / f"tampered-{len(out)}.db"
        import shutil

        shutil.copy(ledger, path)
        shutil.copy(ledger + ".key", str(path) + ".key")
        con = sqlite3.connect(path)
        with contextlib.suppress(sqlite3.Error):
            con.execute(sql)
            con.commit()
        con.close()
        out.append(
            Case(
                f"ledger verify after {sql!r}",
                ("ledger", "verify", str(path)),
                invalid=False,
                allow_exit_1=True,
            )
        )
        out.append(Case(f"release after {sql!r}", (*rel, "--ledger", str(path))))
    budgets = {
        "--budget-mu": ["0", "-1", "nan", "inf", "x", "", "1e400"],
        "--budget-epsilon": ["0", "-1", "nan", "inf", "x"],
        "--budget-delta": ["0", "1", "2", "nan", "-0.1"],
    }
    for opt, values in budgets.items():
        for v in values:
            extra = ["--budget-delta", "1e-3"] if opt == "--budget-epsilon" else []
            extra = ["--budget-epsilon", "1"] if opt == "--budget-delta" else extra
            path = str(tmp / f"new-{len(out)}.db")
            out.append(Case(f"ledger init {opt}={v!r}", ("ledger", "init", path, opt, v, *extra)))
    out.append(
        Case(
            "ledger init both budgets",
            (
                "ledger",
                "init",
                str(tmp / "both.db"),
                "--budget-mu",
                "1",
                "--budget-epsilon",
                "1",
                "--budget-delta",
                "1e-3",
            ),
        )
    )
    out.append(Case("ledger init no budget", ("ledger", "init", str(tmp / "none.db"))))
    out.append(Case("ledger init again", ("ledger", "init", ledger, "--budget-mu", "1")))
    for o in ("null.csv", "dir.csv", "fifo.csv"):
        out.append(Case(f"local city --out {o}", ("local", "city", "--out", str(tmp / o))))
        out.append(Case(f"ledger init {o}", ("ledger", "init", str(tmp / o), "--budget-mu", "1")))
    out.extend(api_cases(world))
    return out


def api_cases(world: dict) -> list[Case]:
    """Library calls with wrong types, NaN and unknown keywords (each must raise the library's
    one-line error)."""
    import distprivacy as dp
    from distprivacy.engines import resolve_engine
    from distprivacy.fingerprint import (
        canonical_property,
        dataset_identity,
        dataset_sketch,
        sketch_similarity,
    )

    data = world["data"]
    spec = dp.ProtectionSpec("income==>50K", n=50, values=[0.45, 0.55])
    query = dp.Query.parse("mean:age")
    # Each is invalid for every call below (a number where a path or a predicate belongs, NaN,
    # containers and objects, a negative, a boolean).
    bad_values = [b"x", float("nan"), [], {}, object(), -1, True]
    bad_or_none = [None, *bad_values]
    tmp = world["tmp"]
    calls: list[tuple[str, Callable[[], object]]] = []
    cov = [[[1.0]], [[1.0]]]
    cal = dp.DauM(epsilon=1.0, delta=1e-3).calibrate(
        dp.GaussianModel(["a", "b"], [[1.0], [2.0]], [[[0.1]], [[0.1]]], [("a", "b")])
    )
    for i, v in enumerate(bad_or_none):
        calls += [
            (f"ProtectionSpec({i})", lambda v=v: dp.ProtectionSpec(v, n=50, values=[0.4, 0.5])),
            (f"Spec n={i}", lambda v=v: dp.ProtectionSpec("sex==Female", n=v, values=[0.4, 0.5])),
            (f"Spec values={i}", lambda v=v: dp.ProtectionSpec("sex==Female", n=50, values=v)),
            (f"fit_model spec={i}", lambda v=v: dp.fit_model(data, v, query)),
            (f"fit_model query={i}", lambda v=v: dp.fit_model(data, spec, v)),
            (f"make_mechanism({i})", lambda v=v: dp.make_mechanism(v, 1.0, 1e-3)),
            (f"DauM delta={i}", lambda v=v: dp.DauM(epsilon=1.0, delta=v)),
            (
                f"GaussianModel thetas={i}",
                lambda v=v: dp.GaussianModel(v, [[1.0], [2.0]], cov, [("a", "b")]),
            ),
            (
                f"GaussianModel pairs={i}",
                lambda v=v: dp.GaussianModel(["a", "b"], [[1.0], [2.0]], cov, v),
            ),
            (f"Plan.load({i})", lambda v=v: dp.Plan.load(v)),
            (f"Ledger({i})", lambda v=v: dp.Ledger(v)),
            (f"Ledger.init({i})", lambda v=v: dp.Ledger.init(v, budget_mu=1.0)),
            (f"dataset_identity({i})", lambda v=v: dataset_identity(v, ["age"])),
            (f"dataset_identity cols={i}", lambda v=v: dataset_identity(data, v)),
            (f"canonical_property({i})", lambda v=v: canonical_property(v)),
        ]
        if v is not None:  # None is "auto"
            calls.append((f"resolve_engine({i})", lambda v=v: resolve_engine(v, data)))
    for i, v in enumerate(bad_values):
        calls += [
            (f"load_adult({i})", lambda v=v: dp.load_adult(v)),
            (f"DauM eps={i}", lambda v=v: dp.DauM(epsilon=v, delta=1e-3)),
            (
                f"Ledger.init budget={i}",
                lambda v=v, i=i: dp.Ledger.init(tmp / f"b{i}.db", budget_mu=v),
            ),
            (f"check_random_state({i})", lambda v=v: dp.check_random_state(v, secure=False)),
            (f"Query.parse({i})", lambda v=v: dp.Query.parse(v)),
            (f"Calibration.release({i})", lambda v=v: cal.release(v, random_state=0)),
            (f"dataset_sketch key={i}", lambda v=v: dataset_sketch(data, ["age"], key=v)),
            (f"Plan.from_dict({i})", lambda v=v: dp.Plan.from_dict(v)),
            (f"make_mechanism delta={i}", lambda v=v: dp.make_mechanism("DauM-G", 1.0, v)),
            (
                f"Ledger.init epsilon={i}",
                lambda v=v, i=i: dp.Ledger.init(
                    tmp / f"e{i}.db", budget_epsilon=v, budget_delta=1e-3
                ),
            ),
        ]
    for i, v in enumerate([b"x", float("nan"), {}, object(), -1, True, ["not hex"]]):
        calls.append((f"sketch_similarity({i})", lambda v=v: sketch_similarity(v, v)))
    return [Case(name, call=f) for name, f in calls]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="every 10th case")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        world = make_world(Path(d))
        todo = cases(world)
        if a.quick:
            todo = todo[::10]
        tally: dict[str, int] = {}
        bad: list[str] = []
        n_cli = sum(1 for c in todo if c.call is None)
        for k, case in enumerate(todo):
            kind, detail = run_case(case, world)
            tally[kind] = tally.get(kind, 0) + 1
            if kind != "ok":
                bad.append(f"  {kind}: {case.name}: {detail}")
            if (k + 1) % 50 == 0:
                print(f"{k + 1}/{len(todo)} {tally}", file=sys.stderr)
    lines = [
        f"# fuzz_cli: {len(todo)} cases ({n_cli} command lines, {len(todo) - n_cli} API calls)",
        "  " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())),
        *bad,
    ]
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    np.seterr(all="ignore")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
