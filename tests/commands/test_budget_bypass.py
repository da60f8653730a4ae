"""Issue 20: the budget cannot be walked around. Each bypass measured by the issue, tried
through the command line on Adult: re-encoded targets, a property spelled differently, edited
and re-sealed plans, an edited ledger, seeds and config files as side doors, readable secrets."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pandas as pd
import pytest

from distprivacy.cli import main
from distprivacy.fingerprint import dataset_identity
from distprivacy.mechanisms.plans import Plan, _digest

N = 100


def run(capsys, *args: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def refused(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])


def _calibrate(adult_dir: Path, out: Path, *extra: str) -> Path:
    rc = main(
        ["calibrate", "--data", str(adult_dir), "--subset-size", str(N), "--mechanism",
         "DauM-G", "--epsilon", "0.5", "--save", str(out), "--json", *extra]
    )  # fmt: skip
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory, adult_dir):
    """A sealed plan, a 100-record target and a ledger whose budget (1.6 μ) two releases of
    the target nearly spend."""
    from distprivacy.datasets import load_adult

    root = tmp_path_factory.mktemp("bypass")
    plan_path = _calibrate(adult_dir, root / "plan.json")
    records = load_adult(adult_dir).sample(n=N, random_state=1)
    target = root / "records.csv"
    records.to_csv(target, index=False)
    mu = Plan.load(plan_path).guarantee.mu
    ledger = root / "ledger.db"
    assert main(["ledger", "init", str(ledger), "--budget-mu", repr(1.6 * mu)]) == 0
    assert main(["ledger", "seal", str(ledger), str(plan_path)]) == 0
    for _ in range(2):
        assert main(["release", "--plan", str(plan_path), "--target", str(target),
                     "--ledger", str(ledger), "--json"]) == 0  # fmt: skip
    return {"root": root, "plan": plan_path, "target": target, "records": records,
            "ledger": ledger, "mu": mu}  # fmt: skip


def _used(world) -> list[str]:
    return list(dict.fromkeys([*Plan.load(world["plan"]).columns, "income"]))


def _variants(records: pd.DataFrame, used: list[str]) -> dict[str, pd.DataFrame]:
    return {
        "shuffled rows": records.sample(frac=1.0, random_state=7),
        "renamed unused column": records.rename(columns={"workclass": "employer"}),
        "dropped unused column": records.drop(columns=["workclass"]),
        "added column": records.assign(extra=1),
        "only the used columns": records[used],
        "integers as decimals": records.assign(age=records["age"].astype(float)),
        "reordered columns": records[list(reversed(records.columns))],
        # The columns read changed, every other column kept (linked by the records):
        "ages given to other records": records.assign(
            age=records["age"].sample(frac=1.0, random_state=2).to_numpy()
        ),
        "ages jittered": records.assign(age=records["age"] + 0.001 * (records.index % 7 - 3)),
    }


@pytest.mark.slow
def test_reencoded_targets_are_the_same_dataset(world, capsys, tmp_path):
    """Re-encoded, the records are the same dataset (refused: the budget); with columns of the
    first release's table dropped or renamed they are refused too, naming the missing column
    (the ledger identifies a dataset by all the columns of its first target)."""
    before = world["ledger"].read_bytes()
    lacking = {"renamed unused column", "dropped unused column", "only the used columns"}
    for name, frame in _variants(world["records"], _used(world)).items():
        path = tmp_path / f"{name.replace(' ', '_')}.csv"
        frame.to_csv(path, index=False)
        rc, out, err = run(capsys, "release", "--plan", world["plan"], "--target", path,
                           "--ledger", world["ledger"])  # fmt: skip
        refused(rc, err, "identifies a dataset" if name in lacking else "budget")
        assert out == "", name
    assert world["ledger"].read_bytes() == before
    shown = json.loads(run(capsys, "ledger", "show", world["ledger"], "--json")[1])
    assert [c["releases"] for c in shown["cumulative"]] == [2]


def test_other_statistics_of_the_same_records_share_their_budget(world, capsys, adult_dir):
    """The hole left open before: statistics read from columns no earlier release read
    (capital_loss, fnlwgt) of the same records were another dataset to the ledger, with a
    budget of its own. The identity is now over the ledger's columns, not the release's: the
    release is composed with the two before it, which, from a plan alone (no data to refit
    the joint model of all the statistics), is refused; with the data it is the budget that
    refuses (tests/test_workflow.py)."""
    other = _calibrate(adult_dir, world["root"] / "other-stats.json",
                       "--statistics", "mean:capital_loss,mean:fnlwgt")  # fmt: skip
    assert main(["ledger", "seal", str(world["ledger"]), str(other)]) == 0
    capsys.readouterr()
    before = world["ledger"].read_bytes()
    rc, out, err = run(capsys, "release", "--plan", other, "--target", world["target"],
                       "--ledger", world["ledger"])  # fmt: skip
    refused(rc, err, "releases recorded for this dataset use different statistics")
    assert out == "" and world["ledger"].read_bytes() == before


def test_the_property_spelled_differently_is_the_same_property(world, capsys, adult_dir):
    other = _calibrate(adult_dir, world["root"] / "other.json", "--protect", "income!=<=50K")
    assert main(["ledger", "seal", str(world["ledger"]), str(other)]) == 0
    capsys.readouterr()
    before = world["ledger"].read_bytes()
    rc, out, err = run(capsys, "release", "--plan", other, "--target", world["target"],
                       "--ledger", world["ledger"])  # fmt: skip
    assert rc == 2 and out == "", err
    assert world["ledger"].read_bytes() == before


def _redigest(raw: dict) -> dict:
    body = {k: v for k, v in raw.items() if k not in ("digest", "seal")}
    return {**raw, "digest": _digest(body)}


def test_a_plan_with_less_noise_is_refused_by_its_own_check(world, capsys, tmp_path):
    raw = json.loads(world["plan"].read_text())
    cal = raw["calibration"]
    cal["noise"]["scales"] = [s / 10 for s in cal["noise"]["scales"]]
    cal["noise"]["factor"] = [[x / 10 for x in row] for row in cal["noise"]["factor"]]
    cal["noise_scales"] = [s / 10 for s in cal["noise_scales"]]
    cal["noise_covariance"] = [[x / 100 for x in row] for row in cal["noise_covariance"]]
    bad = tmp_path / "less-noise.json"
    bad.write_text(json.dumps(_redigest(raw)))
    rc, out, err = run(capsys, "release", "--plan", bad, "--target", world["target"])
    refused(rc, err, "not the guarantee it states")
    assert out == ""


@pytest.mark.parametrize("edit", ["noise into the model", "equal means"])
def test_an_edited_sealed_plan_fails_its_seal(world, capsys, tmp_path, edit):
    raw = json.loads(world["plan"].read_text())
    assert raw.get("seal", "").startswith("hmac-sha256:")
    thetas = raw["model"]["thetas"]
    for t in thetas:
        if edit == "noise into the model":
            t["covariance"] = [[x * 10 for x in row] for row in t["covariance"]]
        else:
            t["mean"] = list(thetas[0]["mean"])
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(_redigest(raw)))
    before = world["ledger"].read_bytes()
    rc, out, err = run(capsys, "release", "--plan", bad, "--target", world["target"],
                       "--ledger", world["ledger"])  # fmt: skip
    # Caught by the seal — or earlier, when the edit also makes the plan's own model give a
    # worse guarantee than it states (the self-check).
    assert rc == 2 and ("seal" in err or "not the guarantee it states" in err), err
    assert out == "" and world["ledger"].read_bytes() == before


def _copy(world, tmp_path: Path) -> Path:
    dst = tmp_path / "copy.db"
    shutil.copy(world["ledger"], dst)
    for suffix in (".key", ".anchor"):
        shutil.copy(str(world["ledger"]) + suffix, str(dst) + suffix)
    return dst


TAMPERS = {
    "delete a row": "DELETE FROM releases WHERE id = 1",
    "delete the last row": "DELETE FROM releases WHERE id = 2",
    "raise the budget": "UPDATE budget SET mu = mu * 100",
    "edit a fingerprint": "UPDATE releases SET fingerprint = 'sha256:00' WHERE id = 1",
    "inflate stored noise": "UPDATE releases SET noise_covariance = '[[1e9]]' WHERE id = 2",
    "edit the running total": (
        "UPDATE releases SET cumulative = json_set(cumulative, '$.mu', 0.01) WHERE id = 2"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_ledger_tampering_is_caught(world, capsys, tmp_path, tamper):
    led = _copy(world, tmp_path)
    assert run(capsys, "ledger", "verify", led)[0] == 0
    con = sqlite3.connect(led)
    con.execute(TAMPERS[tamper])
    con.commit()
    con.close()
    rc, out, err = run(capsys, "ledger", "verify", led)
    assert rc == 1 and "FAILED" in err, (tamper, out, err)
    rc, out, err = run(capsys, "release", "--plan", world["plan"], "--target", world["target"],
                       "--ledger", led)  # fmt: skip
    assert rc == 2 and out == "", (tamper, err)


def test_side_doors_are_shut(world, capsys, tmp_path):
    args = ("release", "--plan", world["plan"], "--target", world["target"],
            "--ledger", world["ledger"])  # fmt: skip
    refused(*run(capsys, *args, "--seed", "7")[::2], "seed")
    refused(*run(capsys, "release", "--plan", world["plan"], "--value", "0,0,0,0,0",
                 "--seed", "7", "--ledger", world["ledger"])[::2], "seed")  # fmt: skip
    for value in ("true", '"yes"'):
        cfg = tmp_path / f"c{len(value)}.toml"
        cfg.write_text(f"[release]\nallow-exact = {value}\n")
        rc, out, err = run(capsys, *args, "--config", cfg)
        refused(rc, err)
        assert out == ""
    cfg = tmp_path / "deep.toml"
    cfg.write_text("x = " + "[" * 100 + "]" * 100 + "\n")
    refused(*run(capsys, *args, "--config", cfg)[::2], "deeper")


def test_files_are_private_and_reveal_nothing(world):
    for path in (world["ledger"], Path(str(world["ledger"]) + ".key"), world["plan"]):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    blob = world["ledger"].read_bytes()
    con = sqlite3.connect(world["ledger"])
    rows = con.execute("SELECT fingerprint, property, plan FROM releases").fetchall()
    con.close()
    records = world["records"]
    used = _used(world)
    # A plain hash of the target (or of it with one record's income flipped) is not stored.
    guesses = {dataset_identity(records, used)}
    for flip in ("<=50K", ">50K"):
        r = records.copy()
        r.iloc[0, r.columns.get_loc("income")] = flip
        guesses.add(dataset_identity(r, used))
        guesses.add("sha256:" + hashlib.sha256(r.to_csv(index=False).encode()).hexdigest())
    for fp, prop, plan in rows:
        assert fp.startswith("hmac-sha256:") and fp not in guesses
        assert "income" in prop and ">50K" not in prop and "<=50K" not in prop
        assert plan.startswith("enc1:")
    # The plan's fitted means (exact population statistics) are nowhere in the file.
    means = json.loads(world["plan"].read_text())["model"]["thetas"][0]["mean"]
    for m in means:
        assert repr(float(m)).encode() not in blob


def test_a_declared_identity_is_the_commands_too(world, capsys, tmp_path):
    """`ledger init --identify-by`: shown by init and show, required of every target (exit 2,
    one line naming the column), bad lists refused at init."""
    led = tmp_path / "id.db"
    rc, out, _ = run(capsys, "ledger", "init", led, "--budget-mu", "100",
                     "--identify-by", "workclass, age,income")  # fmt: skip
    assert rc == 0 and "identified by: age, income, workclass" in out
    assert main(["ledger", "seal", str(led), str(world["plan"])]) == 0
    capsys.readouterr()
    slim = tmp_path / "slim.csv"
    world["records"].drop(columns=["workclass"]).to_csv(slim, index=False)
    rc, out, err = run(capsys, "release", "--plan", world["plan"], "--target", slim,
                       "--ledger", led)  # fmt: skip
    refused(rc, err, "lacks column 'workclass', one of the 3 columns")
    rc, out, _ = run(capsys, "ledger", "show", led)
    assert rc == 0 and "Datasets identified by: age, income, workclass" in out
    for bad, why in (("age,,sex", "--identify-by holds column names"), ("age,age", "twice")):
        rc, _, err = run(capsys, "ledger", "init", tmp_path / "bad.db", "--budget-mu", "1",
                         "--identify-by", bad)  # fmt: skip
        refused(rc, err, why)
        assert not (tmp_path / "bad.db").exists()


def test_an_exact_release_is_never_recorded(world, capsys, tmp_path, adult_dir):
    """Issue 30 (E1): with the budget spent (two releases recorded, a third refused), a NoNoise
    plan released with --allow-exact was recorded (μ = ∞) and printed the true statistics. An
    exact release exceeds every budget: a ledger records none — refused in one line, nothing
    recorded or printed, on the spent ledger and on a fresh one alike. Without a ledger,
    --allow-exact still publishes (outside any budget, as the message says)."""
    plan = tmp_path / "plan.json"  # (a copy: another test seals the world's with its ledger)
    shutil.copy(world["plan"], plan)
    assert main(["ledger", "seal", str(world["ledger"]), str(plan)]) == 0
    args = ("release", "--plan", plan, "--target", world["target"], "--ledger", world["ledger"])
    refused(*run(capsys, *args)[::2], "budget")  # the budget is spent
    exact = tmp_path / "exact.json"
    assert main(["calibrate", "--data", str(adult_dir), "--subset-size", str(N),
                 "--statistics", "mean:fnlwgt", "--epsilon", "2", "--mechanism", "NoNoise",
                 "--save", str(exact), "--json"]) == 0  # fmt: skip
    assert json.loads(exact.read_text())["calibration"]["noise"]["scales"] == []  # no noise
    fresh = tmp_path / "fresh.db"
    assert main(["ledger", "init", str(fresh), "--budget-mu", "1e6"]) == 0
    for led in (world["ledger"], fresh):
        assert main(["ledger", "seal", str(led), str(exact)]) == 0
        capsys.readouterr()
        before = led.read_bytes()
        rc, out, err = run(capsys, "release", "--plan", exact, "--target", world["target"],
                           "--ledger", led, "--allow-exact")  # fmt: skip
        refused(rc, err, "--allow-exact", "exceeds every budget", "a ledger does not record one")
        assert out == "" and led.read_bytes() == before
    counts = [json.loads(run(capsys, "ledger", "show", led, "--json")[1])["releases"]
              for led in (world["ledger"], fresh)]  # fmt: skip
    assert [len(c) for c in counts] == [2, 0]
    rc, out, err = run(capsys, "release", "--plan", exact, "--target", world["target"],
                       "--allow-exact", "--json")  # fmt: skip
    assert rc == 0, err
    (value,) = json.loads(out)["raw_statistics"].values()
    assert value == pytest.approx(world["records"]["fnlwgt"].mean(), rel=1e-12)


def _clobber_world(world, tmp: Path) -> dict[str, str]:
    """Copies of the world's files (a case that wrote over one spoils only its copy), and the
    other inputs the commands take: a config file, a model file, a folder of data, a symbolic
    link and a hard link to inputs."""
    paths = {"plan": tmp / "plan.json", "target": tmp / "records.csv", "ledger": tmp / "l.db"}
    shutil.copy(world["plan"], paths["plan"])
    shutil.copy(world["target"], paths["target"])
    shutil.copy(world["ledger"], paths["ledger"])
    shutil.copy(str(world["ledger"]) + ".key", str(paths["ledger"]) + ".key")
    paths["key"] = Path(str(paths["ledger"]) + ".key")
    paths["config"] = tmp / "release.toml"
    paths["config"].write_text("delta = 0.001\n")  # an option of calibrate and release
    paths["model"] = tmp / "model.json"
    paths["model"].write_text('{"statistics": ["x"]}\n')  # never read: refused before
    (tmp / "parts").mkdir()
    shutil.copy(world["target"], tmp / "parts" / "part-0.csv")
    paths["parts"] = tmp / "parts"
    paths["link"] = tmp / "link.html"
    paths["link"].symlink_to(paths["ledger"])
    paths["hard"] = tmp / "hard.html"
    os.link(paths["target"], paths["hard"])
    return {k: str(v) for k, v in paths.items()}


def _adult_copy(adult_dir: Path, tmp: Path) -> str:
    d = tmp / "adult"
    d.mkdir()
    for name in ("adult.data", "adult.test"):
        shutil.copy(adult_dir / name, d / name)
    return str(d)


_GAME = ("--label", "income", "--protect", "sex==Female")
#: (command line, the output refused): every command that writes a file, each output flag
#: onto each kind of input — the ledger and its key and -wal file, --target, --plan, --data
#: (a file, a folder, the Adult folder), --model, --config — or onto another output.
CLOBBERS = {
    "ledger show --report LEDGER": (("ledger", "show", "{ledger}", "--report", "{ledger}"),
                                    "--report"),
    "ledger show --report KEY": (("ledger", "show", "{ledger}", "--report", "{key}"), "--report"),
    "ledger show --report LEDGER-wal": (("ledger", "show", "{ledger}", "--report",
                                         "{ledger}-wal"), "--report"),
    "ledger show --report SYMLINK-to-LEDGER": (("ledger", "show", "{ledger}", "--report",
                                                "{link}"), "--report"),
    "ledger show --report ./LEDGER": (("ledger", "show", "{ledger}", "--report",
                                       "{tmp}/./parts/../l.db"), "--report"),
    "ledger seal LEDGER KEY": (("ledger", "seal", "{ledger}", "{key}"), "the plan"),
    "ledger backup LEDGER KEY": (("ledger", "backup", "{ledger}", "{key}"), "the backup"),
    "release --report LEDGER": (("release", "--plan", "{plan}", "--target", "{target}",
                                 "--ledger", "{ledger}", "--report", "{ledger}"), "--report"),
    "release --report KEY": (("release", "--plan", "{plan}", "--target", "{target}",
                              "--ledger", "{ledger}", "--report", "{key}"), "--report"),
    "release --report TARGET": (("release", "--plan", "{plan}", "--target", "{target}",
                                 "--report", "{target}"), "--report"),
    "release --report HARDLINK-to-TARGET": (("release", "--plan", "{plan}", "--target",
                                             "{target}", "--report", "{hard}"), "--report"),
    "release --report PLAN": (("release", "--plan", "{plan}", "--target", "{target}",
                               "--report", "{plan}"), "--report"),
    "release --report CONFIG": (("release", "--config", "{config}", "--plan", "{plan}",
                                 "--target", "{target}", "--report", "{config}"), "--report"),
    "release --report DATA": (("release", "--data", "{target}", "--protect", "income==>50K",
                               "--statistics", "mean:age", "--report", "{target}"), "--report"),
    "calibrate --save DATA": (("calibrate", "--data", "{target}", "--mechanism", "DauM-G",
                               "--save", "{target}"), "--save"),
    "calibrate --report DATA": (("calibrate", "--data", "{target}", "--report", "{target}"),
                                "--report"),
    "calibrate --report inside DATA-FOLDER": (("calibrate", "--data", "{parts}", "--report",
                                               "{parts}/report.html"), "--report"),
    "calibrate --report MODEL": (("calibrate", "--model", "{model}", "--report", "{model}"),
                                 "--report"),
    "calibrate --save CONFIG": (("calibrate", "--config", "{config}", "--mechanism", "DauM-G",
                                 "--save", "{config}"), "--save"),
    "calibrate --save P --report P": (("calibrate", "--data", "{target}", "--mechanism",
                                       "DauM-G", "--save", "{plan}", "--report", "{plan}"),
                                      "--report"),
    "audit --report DATA": (("audit", "--data", "{target}", "--report", "{target}"), "--report"),
    "models audit --report DATA": (("models", "audit", "--data", "{target}", *_GAME,
                                    "--report", "{target}"), "--report"),
    "models defend --save DATA": (("models", "defend", "--data", "{target}", *_GAME,
                                   "--save", "{target}"), "--save"),
    "reproduce --report ADULT": (("reproduce", "table2", "--out", "{tmp}/out", "--data",
                                  "{adult}", "--report", "{adult}/adult.data"), "--report"),
    "reproduce --out ADULT-FILE": (("reproduce", "table2", "--out", "{adult}/adult.test",
                                    "--data", "{adult}"), "--out"),
    "models reproduce --out ADULT-FILE": (("models", "reproduce", "--quick", "--out",
                                           "{adult}/adult.data", "--data", "{adult}"), "--out"),
}  # fmt: skip


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}  # fmt: skip


@pytest.mark.parametrize("case", list(CLOBBERS))
def test_outputs_never_write_over_inputs(world, capsys, tmp_path, adult_dir, case):
    """Issue 30 (C1): `ledger show L.db --report L.db` replaced the ledger (its spent budget)
    with HTML, and likewise for every output onto an input. Each is refused before any work:
    exit 2, one line naming the output, and every file byte for byte as it was (no new one)."""
    argv, flag = CLOBBERS[case]
    files = {**_clobber_world(world, tmp_path), "tmp": str(tmp_path)}
    if any("{adult}" in a for a in argv):
        files["adult"] = _adult_copy(adult_dir, tmp_path)
    before = _snapshot(tmp_path)
    rc, out, err = run(capsys, *(a.format(**files) for a in argv))
    refused(rc, err, flag)
    assert any(w in err for w in ("which this command reads", "lies inside", "the same file"))
    assert out == "" and _snapshot(tmp_path) == before


#: Every path option of the command line, as (command, option): what it writes (checked above
#: against every input of its command), or what it only reads. A new path option must be
#: added to one of the two (the test below walks the CLI), and an output to a case above.
WRITES = {
    "calibrate --save", "calibrate --report", "release --report", "audit --report",
    "ledger show --report", "ledger seal plan_path", "ledger backup out", "reproduce --out",
    "reproduce --report", "models audit --report", "models defend --save",
    "models reproduce --out",
    # No input to write over: a new ledger, a generated city, a population (its name ends
    # in .npz, never one of the Adult files read) and a folder rendered again in place.
    "ledger init path", "local city --out", "models train --out", "models render out_dir",
}  # fmt: skip
READS = {
    "calibrate --config", "calibrate --data", "calibrate --model", "release --config",
    "release --data", "release --model", "release --target", "release --plan", "release --ledger",
    "audit --data", "audit --model", "ledger backup path", "ledger seal path", "ledger show path",
    "ledger verify path", "reproduce --data", "attribute gaussian --problem",
    "attribute quilt --data", "local distp --pair", "models attack --adversary",
    "models attack --victim", "models attack --data", "models audit --data",
    "models defend --data", "models info path", "models reproduce --data", "models train --data",
}  # fmt: skip
_NO_INPUT = {"ledger init path", "local city --out", "models train --out", "models render out_dir"}


def _covers(argv: tuple[str, ...], flag: str) -> str:
    """The (command, option) a case of CLOBBERS writes through."""
    words = [
        a
        for a in argv[:3]
        if a
        in {
            "ledger",
            "models",
            "show",
            "seal",
            "backup",
            "audit",
            "defend",
            "reproduce",
            "release",
            "calibrate",
        }
    ]
    return " ".join([*words, {"the plan": "plan_path", "the backup": "out"}.get(flag, flag)])


def test_every_path_option_is_classified_and_every_output_checked():
    """Walk the command line: each path option reads or writes (no third kind), and each
    output of a command that reads files has a case in CLOBBERS."""
    import click

    from distprivacy.cli import cli

    found = set()

    def walk(cmd: click.Command, prefix: str) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{prefix} {name}".strip())
        for p in cmd.params:
            if isinstance(p.type, click.Path):
                found.add(f"{prefix} {p.opts[0] if p.opts[0].startswith('--') else p.name}")

    walk(cli, "")
    assert found == WRITES | READS and not WRITES & READS, sorted(found ^ (WRITES | READS))
    covered = {_covers(argv, flag) for argv, flag in CLOBBERS.values()}
    assert covered == WRITES - _NO_INPUT, sorted(covered ^ (WRITES - _NO_INPUT))
