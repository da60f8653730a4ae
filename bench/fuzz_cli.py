"""A fuzz campaign of the command line and the API (issue 21).

    python3 bench/fuzz_cli.py [--quick] [--out bench/results_fuzz.txt]

Generates malformed and extreme inputs for `calibrate`, `release`, `ledger`, `local city` and
`models audit`/`defend` — numbers, lists, predicates, statistics, paths (missing, directories,
FIFOs, device nodes, malformed CSV/JSON/TOML, deep documents, output paths ending in a slash),
plans and ledgers edited by hand (and backed up), side doors (seeds, config files and the types
of their values), ratio lists, estimator specs (issue 31), outputs pointed at inputs (issue
30: a report onto the ledger or its key, a plan onto the data, each spelled plainly, through
``..``, a symbolic or a hard link) — and library calls with wrong types,
NaN and unknown keywords (and a backup onto a read-only file system), runs each in process with
a time limit, and classifies the outcome:

* ``ok`` — exit 0 on valid input, or a clean refusal (exit 2, one line ``error: …``) of invalid
  input (exit 1 only where a command documents it: ``ledger verify`` on a tampered ledger);
* ``traceback`` — an exception escaped, or exit 1 with a Python traceback;
* ``exact`` — exit 0 printing a true statistic of the target without ``--allow-exact``;
* ``silent`` — exit 0 on input the generator marks as clearly invalid;
* ``hang`` — no answer within the time limit;
* ``clobber`` — a file the command reads (``Case.inputs``) was changed: an output wrote over it.

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

from distprivacy.targets import EpsDelta

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
    inputs: tuple[str, ...] = ()


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
    before = {p: _content(p) for p in case.inputs}
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
    changed = [p for p in case.inputs if _content(p) != before[p]]
    if changed:
        return "clobber", f"wrote over {changed[0]}"
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


def _content(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


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
    records, a plan, a ledger of secrets (the table its population, the target registered as
    ``target``, the plan approved as ``plan``, one release), and the odd paths (FIFO, device,
    directory, garbage)."""
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
        for step in ledger_world(tmp):
            assert main(step) == 0, step
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
    (tmp / "nul.toml").write_text('report = "a\\u0000b"\n')
    (tmp / "text.db").write_text("not a database")
    # Issue 31: a second approved plan releasing other statistics of the same records (its
    # release composes on a joint model refitted on the secret's population), and a PyTorch
    # file whose factories raise or return no network.
    base2 = [a if a != "mean:age,count:sex==Female" else "mean:hours_per_week" for a in base]
    with contextlib.redirect_stdout(io.StringIO()):
        p2 = ["calibrate", *base2, "--mechanism", "DauM-G", "--save", str(tmp / "p2.json")]
        assert main(p2) == 0
        approve = ["ledger", "approve", str(tmp / "ledger.db"), str(tmp / "p2.json"), "--name"]
        assert main([*approve, "p2", "--steward-key", str(tmp / "steward.key")]) == 0
    (tmp / "net.py").write_text(
        "def boom(n_features, n_classes):\n    raise ValueError('boom')\n\n"
        "def three(n_features, n_classes):\n    return 3\n"
    )
    return {"tmp": tmp, "base": base, "true": true, "data": data}


def ledger_world(tmp: Path) -> list[list[str]]:
    """The command lines making the world's ledger of secrets (issue 30): the steward's key,
    the ledger (secret income over data.csv, budget (ε, δ) = (100, 0.5)), target.csv registered as
    ``target``, plan.json approved as ``plan``, and one release."""
    led, key = str(tmp / "ledger.db"), str(tmp / "steward.key")
    return [
        ["ledger", "keygen", key],
        ["ledger", "init", led, *steward(tmp), "--secret", "income", "--protect", "income==>50K",
         "--population", str(tmp / "data.csv"), "--budget-epsilon", "100", "--budget-delta",
         "0.5"],
        ["ledger", "register", led, "target", *steward(tmp), "--data", str(tmp / "target.csv")],
        ["ledger", "approve", led, str(tmp / "plan.json"), "--name", "plan", *steward(tmp)],
        list(ledger_release(led)),
    ]  # fmt: skip


def steward(tmp: Path) -> tuple[str, str]:
    """``--steward-key`` of the world's steward."""
    return ("--steward-key", str(tmp / "steward.key"))


def ledger_release(ledger: str | Path, plan: str = "plan") -> tuple[str, ...]:
    """``release --ledger L --dataset target --plan NAME``."""
    return ("release", "--ledger", str(ledger), "--dataset", "target", "--plan", plan)


def copy_ledger(tmp: Path, path: Path) -> None:
    """The world's ledger copied to ``path`` with its key and anchor."""
    import shutil

    shutil.copy(tmp / "ledger.db", path)
    for suffix in (".key", ".anchor"):
        shutil.copy(str(tmp / "ledger.db") + suffix, str(path) + suffix)


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
        for cfg in ("missing.toml", "deep.toml", "bad.toml", "exact.toml", "nul.toml"):
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
        out.append(Case(f"release --ledger {p}", ledger_release(tmp / p)))
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
    lrel = ledger_release(ledger)
    out.append(Case("release --ledger --seed", (*lrel, "--seed", "7")))
    out.append(Case("release --ledger --target", (*lrel, "--target", target)))
    out.append(Case("release --ledger --plan FILE (schema 2)", (*rel, "--ledger", ledger)))
    out.append(Case("ledger seal (schema 2)", ("ledger", "seal", ledger, plan)))
    out.append(Case("release --ledger valid", lrel, invalid=False, exact_check=True))
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
        # Approving it: a seal is ignored (the steward's signature approves), the rest refused.
        out.append(
            Case(
                f"plan edit {name} + ledger approve",
                ("ledger", "approve", ledger, str(path), "--name", f"edit{len(out)}",
                 *steward(tmp)),
                invalid=name != "seal=x",
            )
        )  # fmt: skip
    for sql in TAMPER:
        path = tmp / f"tampered-{len(out)}.db"
        copy_ledger(tmp, path)
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
        out.append(Case(f"release after {sql!r}", ledger_release(path)))
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
            out.append(Case(f"ledger init {opt}={v!r}", (*init(tmp, path), opt, v, *extra)))
    out.append(
        Case(
            "ledger init both budgets",
            (
                *init(tmp, str(tmp / "both.db")),
                "--budget-mu",
                "1",
                "--budget-epsilon",
                "1",
                "--budget-delta",
                "1e-3",
            ),
        )
    )
    out.append(Case("ledger init no budget", init(tmp, str(tmp / "none.db"))))
    out.append(Case("ledger init again", (*init(tmp, ledger), "--budget-mu", "1")))
    out.append(Case("ledger init (schema 2)", ("ledger", "init", str(tmp / "old.db"),
                                                "--budget-mu", "1")))  # fmt: skip
    for o in ("null.csv", "dir.csv", "fifo.csv"):
        out.append(Case(f"local city --out {o}", ("local", "city", "--out", str(tmp / o))))
        out.append(Case(f"ledger init {o}", (*init(tmp, str(tmp / o)), "--budget-mu", "1")))
    out.extend(clobber_cases(world))
    out.extend(issue31_cases(world))
    out.extend(api_cases(world))
    return out


#: Hand edits of the world's ledger (schema 3): a steward's event (the budget, in the secret's
#: payload) or a release rewritten, releases deleted, a table dropped.
TAMPER = (
    "UPDATE events SET payload = replace(payload, '100', '1e9')",
    "DELETE FROM releases",
    "UPDATE events SET payload = '{'",
    "UPDATE releases SET guarantee = '{'",
    "DROP TABLE events",
    "UPDATE approved_plans SET plan = 'x'",
)


def init(tmp: Path, path: str) -> tuple[str, ...]:
    """``ledger init PATH`` with every option but the budget (the world's steward)."""
    return ("ledger", "init", path, *steward(tmp), "--secret", "s", "--protect", "income==>50K",
            "--population", str(tmp / "data.csv"))  # fmt: skip


def clobber_cases(world: dict) -> list[Case]:
    """Outputs pointed at the command's inputs (issue 30, C1), each input spelled four ways:
    as is, through ``sub/..``, through a symbolic link and through a hard link. Each case has
    its own copies of the files (one that wrote over them spoils only its own)."""
    import shutil

    tmp = world["tmp"]
    writers = {  # what writes: (its command line with {out}, the inputs it is pointed at)
        "ledger show --report": (("ledger", "show", "{L}", "--report", "{out}"),
                                 ("L", "K", "W", "S")),
        "release --report": ((*ledger_release("{L}"), "--report", "{out}"), ("L", "K", "R")),
        "calibrate --save": (("calibrate", *world["base"][2:], "--data", "{D}", "--mechanism",
                              "DauM-G", "--save", "{out}"), ("D",)),
        "calibrate --report": (("calibrate", *world["base"][2:], "--data", "{D}", "--report",
                                "{out}"), ("D",)),
        "ledger keygen KEY": (("ledger", "keygen", "{out}"), ("L", "K")),
        "ledger backup OUT": (("ledger", "backup", "{L}", "{out}"), ("L", "K")),
    }  # fmt: skip
    from distprivacy.cli import main as _main

    out: list[Case] = []
    combos = [(w, n, h) for w, (_, ts) in writers.items() for n in ts
              for h in ("plain", "dotdot", "symlink", "hardlink")]  # fmt: skip
    for k, (writer, name, how) in enumerate(combos):
        argv = writers[writer][0]
        d = tmp / f"clobber-{k}"
        (d / "sub").mkdir(parents=True)
        files = {"P": d / "plan.json", "T": d / "target.csv", "L": d / "ledger.db",
                 "D": d / "data.csv"}  # fmt: skip
        shutil.copy(tmp / "plan.json", files["P"])
        shutil.copy(tmp / "target.csv", files["T"])
        copy_ledger(tmp, files["L"])
        if name == "D":
            shutil.copy(tmp / "data.csv", files["D"])
        files["K"] = Path(str(files["L"]) + ".key")
        files["W"], files["S"] = Path(f"{files['L']}-wal"), Path(f"{files['L']}-shm")
        if name == "R":  # a ledger of its own, which registered T (its population D)
            shutil.copy(tmp / "data.csv", files["D"])
            files["L"].unlink()
            for suffix in (".key", ".anchor"):
                Path(str(files["L"]) + suffix).unlink()
            with contextlib.redirect_stdout(io.StringIO()):
                for step in ledger_world(d)[:4]:
                    assert _main(step) == 0, step
            files["R"] = files["T"]
        victim = files[name]
        if how == "dotdot":
            spelled = d / "sub" / ".." / victim.name
        elif how == "symlink":
            spelled = d / "link"
            spelled.symlink_to(victim)
        elif how == "hardlink":
            if not victim.exists():
                continue  # (the -wal and -shm exist only while the ledger is open)
            spelled = d / "hard"
            os.link(victim, spelled)
        else:
            spelled = victim
        args = tuple(a.format(out=spelled, **files) for a in argv)
        inputs = tuple(str(p) for p in files.values() if p.exists())
        out.append(Case(f"clobber: {writer} onto {name} ({how})", args, inputs=inputs))
    return out


def issue31_cases(world: dict) -> list[Case]:
    """Config value types, read-only and broken-ledger backups, ratio limits, output paths
    ending in a slash, tables without a row, estimator specs, and a plan of other statistics
    released with the data to refit (issue 31)."""
    tmp, base = world["tmp"], world["base"]
    ledger, target, data = str(tmp / "ledger.db"), str(tmp / "target.csv"), str(tmp / "data.csv")
    out: list[Case] = []
    for i, line in enumerate(
        ["ledger = 5", "dataset = 5", "report = 5", "save = 1", "target = 1.5", "data = 2024-01-01",
         "protect = 3", "engine = true", "mechanism = [1]", 'mechanism = [["DauM-G"]]']
    ):  # fmt: skip
        cfg = tmp / f"types-{i}.toml"
        cfg.write_text(line + "\n")
        for cmd in ("calibrate", "release"):
            out.append(Case(f"{cmd} --config '{line}'", (cmd, *base, "--config", str(cfg))))
    for sql in ("UPDATE releases SET release_values = '[0.0]'", "DELETE FROM releases"):
        path = tmp / f"broken-{len(out)}.db"
        copy_ledger(tmp, path)
        con = sqlite3.connect(path)
        con.execute(sql)
        con.commit()
        con.close()
        copy = str(tmp / f"copy-{len(out)}.db")
        out.append(Case(f"ledger backup after {sql!r}", ("ledger", "backup", str(path), copy)))
        out.append(
            Case(
                f"ledger backup --force after {sql!r}",
                ("ledger", "backup", str(path), copy, "--force"),
                invalid=False,
            )
        )
    out.append(Case("ledger backup read-only (EROFS)", call=lambda: _read_only_backup(tmp)))
    game = ["models", "audit", "--data", data, "--label", "income",
            "--protect", "sex==Female", "--n-models", "2", "--n-train", "100"]  # fmt: skip
    for cmd in ("audit", "defend"):
        g = [*game[:1], cmd, *game[2:]]
        for ratios in (
            ",".join(f"{k / 20:g}" for k in range(12)),
            ",".join(f"{k / 1000:g}" for k in range(999)),
            "0.3,0.30000000001",
            "0.3,0.301",
            "0.1,0.2,0.2",
        ):
            out.append(Case(f"models {cmd} --ratios {ratios[:24]}", (*g, "--ratios", ratios)))
    for spec in ("sklearn:os:system", "sklearn::", "sklearn:", "sklearn:os:", "sklearn:a b:c",
                 "sklearn:os:path", "sklearn:json:JSONDecoder", "sklearn:sklearn.svm:SVC",
                 "sklearn:no_such_module_31:X", "sklearn:a:b:c", "torch:", "torch::make",
                 "torch:net.txt:make", f"torch:{tmp / 'net.py'}:boom",
                 f"torch:{tmp / 'net.py'}:three", f"torch:{tmp / 'net.py'}:missing", "nosuch",
                 ""):  # fmt: skip
        out.append(Case(f"models audit --estimator {spec!r}", (*game, "--estimator", spec)))
    # Each its own new directory name: a file one case wrongly wrote must not refuse the next.
    cal, defend = ("calibrate", *base, "--mechanism", "DauM-G"), (game[0], "defend", *game[2:])
    for k, (what, args) in enumerate(
        (
            ("calibrate --report", (*cal, "--report")),
            ("calibrate --save", (*cal, "--save")),
            ("release --report", ("release", *base, "--target", target, "--report")),
            ("ledger init", ("ledger", "init")),  # (the other options after the path)
            ("ledger backup", ("ledger", "backup", ledger)),
            ("ledger show --report", ("ledger", "show", ledger, "--report")),
            ("local city --out", ("local", "city", "--out")),
            ("models audit --report", (*game, "--report")),
            ("models defend --save", (*defend, "--save")),
        )
    ):
        for tail in ("/", "/."):
            new = f"{tmp / f'newdir-{k}'}{tail}"
            extra = (*init(tmp, new)[3:], "--budget-mu", "1") if what == "ledger init" else ()
            out.append(Case(f"{what} {new[-10:]!r}", (*args, new, *extra)))
    for target_opt in (("--target-mu", "1"), ("--max-attack-accuracy", "0.6")):
        for mechs in (["ExpM-L"], ["ExpM-L", "GroupDP-L"], ["Wasserstein"]):
            m = [a for x in mechs for a in ("--mechanism", x)]
            out.append(Case(f"calibrate {mechs} {target_opt[0]}", ("calibrate", *base, *m,
                                                                 *target_opt)))  # fmt: skip
    out.append(Case("calibrate ε=5e-324 ExpM-L", ("calibrate", *base, "--mechanism", "ExpM-L",
                                                  "--epsilon", "5e-324")))  # fmt: skip
    # Issue 30: with a ledger of secrets the --plan --data refit is gone (the ledger refits on
    # the secret's population); a plan of other statistics is released by name.
    rel2 = ledger_release(ledger, "p2")
    out.append(Case("release --ledger (other statistics)", rel2, invalid=False))
    out.append(Case("release --ledger --data (another table)", (*rel2, "--data", target)))
    out.append(
        Case(
            "release --plan --data (no ledger)",
            ("release", "--plan", str(tmp / "p2.json"), "--target", target, "--data", data),
        )
    )
    out.append(Case("release --ledger --report onto the registered file",
                    (*rel2, "--report", target), inputs=(target,)))  # fmt: skip
    return out


def _read_only_backup(tmp: Path) -> None:
    """``Ledger.backup`` onto a read-only file system, simulated: every open of the backup and
    every clean-up unlink fail with EROFS (the library must answer with its one-line error)."""
    import errno

    from distprivacy.ledger import Ledger

    dest = tmp / "ro" / "copy.db"
    dest.parent.mkdir(exist_ok=True)
    real_open, real_unlink = os.open, Path.unlink

    def ro_open(p, flags, *a, **k):
        if str(p).startswith(str(dest)) and not str(p).endswith(".db"):
            raise OSError(errno.EROFS, "Read-only file system", str(p))
        return real_open(p, flags, *a, **k)

    def ro_unlink(self, *a, **k):
        if str(self).startswith(str(dest.parent)):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_unlink(self, *a, **k)

    os.open, Path.unlink = ro_open, ro_unlink  # type: ignore[assignment]
    try:
        with Ledger(tmp / "ledger.db") as led:
            led.backup(dest)
    finally:
        os.open, Path.unlink = real_open, real_unlink  # type: ignore[assignment]


def _ledger_call(tmp: Path, method: str, *args: object) -> object:
    """``Ledger(world's ledger).method(*args)`` (the steward's key first for the steward's
    calls)."""
    from distprivacy.ledger import Ledger, StewardKey

    with Ledger(tmp / "ledger.db") as led:
        if method in ("register", "approve"):
            args = (StewardKey.load(tmp / "steward.key"), *args)
        return getattr(led, method)(*args)


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
    secret = dict(steward=tmp / "steward.key", secret="s", protect="income==>50K",
                  population=tmp / "data.csv")  # fmt: skip
    calls: list[tuple[str, Callable[[], object]]] = [
        ("dp.release(ledger=)", lambda: dp.release(plan=dp.Plan.load(tmp / "plan.json"),
                                                   values=[40.0, 25.0], ledger=object())),
        ("Ledger.seal", lambda: _ledger_call(tmp, "seal", dp.Plan.load(tmp / "plan.json"))),
    ]  # fmt: skip
    cov = [[[1.0]], [[1.0]]]
    cal = dp.DauM(EpsDelta(1.0, 1e-3)).calibrate(
        dp.GaussianModel(["a", "b"], [[1.0], [2.0]], [[[0.1]], [[0.1]]], [("a", "b")])
    )
    for i, v in enumerate(bad_or_none):
        calls += [
            (f"ProtectionSpec({i})", lambda v=v: dp.ProtectionSpec(v, n=50, values=[0.4, 0.5])),
            (f"Spec n={i}", lambda v=v: dp.ProtectionSpec("sex==Female", n=v, values=[0.4, 0.5])),
            (f"Spec values={i}", lambda v=v: dp.ProtectionSpec("sex==Female", n=50, values=v)),
            (f"fit_model spec={i}", lambda v=v: dp.fit_model(data, v, query)),
            (f"fit_model query={i}", lambda v=v: dp.fit_model(data, spec, v)),
            (f"make_mechanism({i})", lambda v=v: dp.make_mechanism(v, EpsDelta(1.0, 1e-3))),
            (f"DauM delta={i}", lambda v=v: dp.DauM(EpsDelta(1.0, v))),
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
            (f"Ledger.init({i})", lambda v=v: dp.Ledger.init(v, budget=dp.GDP(1.0), **secret)),
            (
                f"Ledger.init steward={i}",
                lambda v=v, i=i: dp.Ledger.init(
                    tmp / f"s{i}.db", **{**secret, "steward": v}, budget=dp.GDP(1.0)
                ),
            ),
            (f"Ledger.release plan={i}", lambda v=v: _ledger_call(tmp, "release", v, "target")),
            (f"Ledger.release dataset={i}", lambda v=v: _ledger_call(tmp, "release", "plan", v)),
            (f"Ledger.register path={i}", lambda v=v: _ledger_call(tmp, "register", "x", v)),
            (f"Ledger.approve plan={i}", lambda v=v: _ledger_call(tmp, "approve", v, "x")),
            (f"dataset_identity({i})", lambda v=v: dataset_identity(v, ["age"])),
            (f"dataset_identity cols={i}", lambda v=v: dataset_identity(data, v)),
            (f"canonical_property({i})", lambda v=v: canonical_property(v)),
        ]
        if v is not None:  # None is "auto"
            calls.append((f"resolve_engine({i})", lambda v=v: resolve_engine(v, data)))
    for i, v in enumerate(bad_values):
        calls += [
            (f"load_adult({i})", lambda v=v: dp.load_adult(v)),
            (f"DauM eps={i}", lambda v=v: dp.DauM(EpsDelta(v, 1e-3))),
            (
                f"Ledger.init budget={i}",
                lambda v=v, i=i: dp.Ledger.init(tmp / f"b{i}.db", budget=dp.GDP(v), **secret),
            ),
            (
                f"Ledger.init budget={i} (not a target)",
                lambda v=v, i=i: dp.Ledger.init(tmp / f"n{i}.db", budget=v, **secret),
            ),
            (f"check_random_state({i})", lambda v=v: dp.check_random_state(v, secure=False)),
            (f"Query.parse({i})", lambda v=v: dp.Query.parse(v)),
            (f"Calibration.release({i})", lambda v=v: cal.release(v, random_state=0)),
            (f"dataset_sketch key={i}", lambda v=v: dataset_sketch(data, ["age"], key=v)),
            (f"Plan.from_dict({i})", lambda v=v: dp.Plan.from_dict(v)),
            (
                f"make_mechanism delta={i}",
                lambda v=v: dp.make_mechanism("DauM-G", EpsDelta(1.0, v)),
            ),
            (
                f"Ledger.init epsilon={i}",
                lambda v=v, i=i: dp.Ledger.init(
                    tmp / f"e{i}.db", budget=dp.EpsDelta(v, 1e-3), **secret
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
