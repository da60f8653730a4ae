"""distprivacy.outputs: atomic files, run folders (INCOMPLETE marker, manifest.json) and the
checks of output paths made before any computation."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from distprivacy import outputs
from distprivacy.exceptions import DistPrivacyError
from distprivacy.outputs import (
    MANIFEST,
    MARKER,
    TMP_PREFIX,
    OutputError,
    RunFolder,
    atomic_write,
    check_output_dir,
    check_output_file,
    run_status,
    write_csv,
    write_text,
)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(TMP_PREFIX))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _temporary_of(pid: int, name: str) -> str:
    return f"{TMP_PREFIX}{outputs._host()}-{pid}-abcd1234-{name}"


# --------------------------------------------------------------------------------------------
# atomic_write
# --------------------------------------------------------------------------------------------


def test_atomic_write_bytes_text_and_callback(tmp_path):
    seen: list[Path] = []

    def writer(p: Path) -> None:
        seen.append(p)
        p.write_bytes(b"from a callback")

    assert atomic_write(tmp_path / "sub" / "a.bin", b"\x00\x01") == tmp_path / "sub" / "a.bin"
    assert (tmp_path / "sub" / "a.bin").read_bytes() == b"\x00\x01"
    write_text(tmp_path / "b.txt", "θ\n")
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "θ\n"
    atomic_write(tmp_path / "c.csv.gz", writer)
    assert (tmp_path / "c.csv.gz").read_bytes() == b"from a callback"
    # The temporary file sits beside the target and ends with its name (format inference).
    assert seen[0].parent == tmp_path and seen[0].name.endswith("-c.csv.gz")
    assert seen[0].name.startswith(TMP_PREFIX)
    assert _leftovers(tmp_path) == []


def test_atomic_write_gives_new_files_the_umask_mode_and_keeps_an_old_mode(tmp_path):
    mask = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.txt", "x")
        assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644
        (tmp_path / "old.txt").write_text("old")
        os.chmod(tmp_path / "old.txt", 0o600)
        atomic_write(tmp_path / "old.txt", "new")
        assert stat.S_IMODE((tmp_path / "old.txt").stat().st_mode) == 0o600
    finally:
        os.umask(mask)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("old report")

    def disk_full(p: Path) -> None:
        p.write_bytes(b"half a rep")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputError) as info:
        atomic_write(target, disk_full)
    message = str(info.value)
    assert "\n" not in message and str(target) in message and "space" in message
    assert isinstance(info.value, DistPrivacyError)
    assert target.read_text() == "old report"
    assert _leftovers(tmp_path) == []


def test_an_interrupted_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "table.csv"
    target.write_text("old")

    def interrupted(p: Path) -> None:
        p.write_text("new but cut")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, interrupted)
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_only_temporaries_of_dead_processes_are_removed(tmp_path):
    dead = tmp_path / _temporary_of(_dead_pid(), "pop.npz")
    alive = tmp_path / _temporary_of(os.getppid(), "pop.npz")  # a write under way elsewhere
    other = tmp_path / _temporary_of(_dead_pid(), "other.npz")
    foreign = tmp_path / f"{TMP_PREFIX}zzzzzz-1-abcd1234-pop.npz"  # another host's
    for p in (dead, alive, other, foreign):
        p.write_bytes(b"cut")
    atomic_write(tmp_path / "pop.npz", b"whole")  # removes its own stale temporaries only
    assert not dead.exists() and alive.exists() and other.exists() and foreign.exists()
    assert outputs.remove_stale_temporaries(tmp_path) == [other]
    assert alive.exists() and foreign.exists()


def test_write_csv_and_save_figure(tmp_path):
    import pandas as pd
    from matplotlib.figure import Figure

    write_csv(pd.DataFrame({"a": [1, 2]}), tmp_path / "f.csv", index=False)
    assert (tmp_path / "f.csv").read_text().splitlines() == ["a", "1", "2"]
    fig = Figure()
    fig.subplots().plot([0, 1], [1, 0])
    outputs.save_figure(fig, tmp_path / "f.png", dpi=50)
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _leftovers(tmp_path) == []


# --------------------------------------------------------------------------------------------
# Checks before computing
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "  ", None])
def test_empty_output_paths(bad):
    with pytest.raises(OutputError, match="--out is empty"):
        check_output_dir(bad)
    with pytest.raises(OutputError, match="--report is empty"):
        check_output_file(bad, option="--report")


def test_output_dir_that_is_a_file_or_under_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(OutputError, match="exists and is not a directory"):
        check_output_dir(f)
    with pytest.raises(OutputError, match="is not a directory"):
        check_output_dir(f / "sub")


def test_output_dir_that_does_not_exist_is_accepted_and_not_created(tmp_path):
    target = tmp_path / "a" / "b"
    assert check_output_dir(target) == target
    assert not (tmp_path / "a").exists()
    assert _leftovers(tmp_path) == []  # the probe is removed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_output_dir_that_cannot_be_written():
    # Not even root may create files in /proc/self.
    with pytest.raises(OutputError, match=r"cannot write into /proc/self \(--out"):
        check_output_dir("/proc/self/out")


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores permissions"
)
def test_read_only_output_dir(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="cannot write into"):
            check_output_dir(ro / "out")
    finally:
        ro.chmod(0o755)


def test_full_disk_is_refused_before_computing(tmp_path, monkeypatch):
    class Usage:
        total, used, free = 10**9, 10**9, 10

    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda _: Usage())
    with pytest.raises(OutputError, match="10 bytes free") as info:
        check_output_dir(tmp_path)
    assert "\n" not in str(info.value)


def test_output_file_checks(tmp_path):
    with pytest.raises(OutputError, match=r"is a directory; give a file path, e.g. --report"):
        check_output_file(tmp_path, option="--report")
    with pytest.raises(OutputError, match="does not exist; create it first"):
        check_output_file(tmp_path / "no" / "p.npz", create_parents=False)
    assert check_output_file(tmp_path / "no" / "r.md") == tmp_path / "no" / "r.md"
    (tmp_path / "r.md").write_text("old")
    assert check_output_file(tmp_path / "r.md") == tmp_path / "r.md"  # replaced later
    with pytest.raises(OutputError, match="is not a directory"):
        check_output_file(tmp_path / "r.md" / "x.md")


# --------------------------------------------------------------------------------------------
# Run folders
# --------------------------------------------------------------------------------------------


def test_a_finished_run_has_a_manifest_and_no_marker(tmp_path):
    out = tmp_path / "run"
    report = tmp_path / "elsewhere" / "report.md"
    with RunFolder(out, "distprivacy reproduce x --out run") as folder:
        assert (out / MARKER).is_file()
        assert "distprivacy reproduce x --out run" in (out / MARKER).read_text()
        write_text(out / "a.csv", "a\n1\n")
        write_text(out / "sub" / "b.txt", "b")
        write_text(report, "# report")
        (out / "not-listed.txt").write_text("written without outputs")
        folder.add(out / "missing-file")  # ignored: not a file
    assert not (out / MARKER).exists()
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["command"] == "distprivacy reproduce x --out run"
    assert set(manifest["files"]) == {"a.csv", "sub/b.txt", "../elsewhere/report.md"}
    assert manifest["files"]["a.csv"]["sha256"] == _sha(out / "a.csv")
    assert manifest["files"]["a.csv"]["bytes"] == 4
    status = run_status(out)
    assert status.complete and status.state == "complete"
    # Changing a listed file is detected.
    (out / "a.csv").write_text("a\n2\n")
    status = run_status(out)
    assert status.state == "corrupt" and "a.csv" in status.reason
    (out / "a.csv").unlink()
    assert "missing" in run_status(out).reason


def test_an_interrupted_run_stays_marked_and_the_next_run_completes(tmp_path):
    out = tmp_path / "run"
    with RunFolder(out, "first"):
        write_text(out / "report.md", "old report")
        write_text(out / "a.csv", "old")
    assert run_status(out).complete
    with pytest.raises(KeyboardInterrupt), RunFolder(out, "second"):
        # The previous run's report and manifest are gone as soon as the marker is written.
        assert not (out / "report.md").exists() and not (out / MANIFEST).exists()
        write_text(out / "a.csv", "new")
        raise KeyboardInterrupt
    status = run_status(out)
    assert status.state == "incomplete" and "second" in status.reason
    marker = (out / MARKER).read_text()
    assert "interrupted" in marker and "KeyboardInterrupt" in marker
    assert not (out / MANIFEST).exists()
    # A killed writer's temporary file is removed by the next run, which completes.
    (out / _temporary_of(_dead_pid(), "a.csv")).write_text("cut")
    with RunFolder(out, "third"):
        write_text(out / "a.csv", "third")
        write_text(out / "report.md", "third report")
    assert run_status(out).complete
    assert _leftovers(out) == []


def test_cache_dirs_are_not_listed_and_keep_carries_files_over(tmp_path):
    out = tmp_path / "run"
    (out / "populations").mkdir(parents=True)
    (out / "populations" / _temporary_of(_dead_pid(), "p.npz")).write_bytes(b"cut")
    with RunFolder(out, "run", cache_dirs=("populations",)):
        write_text(out / "populations" / "p.npz", "cache")
        write_text(out / "a.csv", "a")
        write_text(out / "report.md", "r")
    assert set(json.loads((out / MANIFEST).read_text())["files"]) == {"a.csv", "report.md"}
    assert _leftovers(out / "populations") == []
    with RunFolder(out, "render", keep=True):
        assert (out / "report.md").exists()  # keep=True deletes nothing
        write_text(out / "report.md", "rendered")
    manifest = json.loads((out / MANIFEST).read_text())
    assert set(manifest["files"]) == {"a.csv", "report.md"}
    assert manifest["command"] == "render"
    assert run_status(out).complete


def test_run_status_of_a_folder_without_a_run(tmp_path):
    status = run_status(tmp_path)
    assert status.state == "empty" and not status.complete
    (tmp_path / MANIFEST).write_text("{not json")
    assert run_status(tmp_path).state == "corrupt"


# --------------------------------------------------------------------------------------------
# The command line checks its output paths before computing
# --------------------------------------------------------------------------------------------


def _no_computation(monkeypatch) -> None:
    def forbidden(*args, **kwargs):
        raise AssertionError("the output paths must be checked before loading any data")

    import distprivacy.datasets

    monkeypatch.setattr(distprivacy.datasets, "load_adult", forbidden)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "{file}"], "--out {file} exists and is not a directory"),
        (["--out", ""], "--out is empty"),
        (["--out", "{tmp}/new", "--report", "{tmp}"], "--report {tmp} is a directory"),
        (["--out", "{tmp}/new", "--report", ""], "--report is empty"),
        (["--out", "{file}/sub"], "is not a directory"),
    ],
)
def test_reproduce_refuses_bad_outputs_before_computing(
    args, message, tmp_path, monkeypatch, capsys
):
    from distprivacy.cli import main

    _no_computation(monkeypatch)
    file = tmp_path / "a-file"
    file.write_text("x")
    fill = {"file": str(file), "tmp": str(tmp_path)}
    argv = ["reproduce", "table3", "--quick", *(a.format(**fill) for a in args)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert message.format(**fill) in err
    assert not (tmp_path / "new").exists()


def test_reproduce_extra_target_folder_that_is_a_file(tmp_path, monkeypatch, capsys):
    from distprivacy.cli import main

    _no_computation(monkeypatch)
    (tmp_path / "local-distp").write_text("x")
    assert main(["reproduce", "table3", "local-distp", "--quick", "--out", str(tmp_path)]) == 2
    assert "local-distp exists and is not a directory" in capsys.readouterr().err


def test_models_train_refuses_bad_outputs_before_training(tmp_path, monkeypatch, capsys):
    from distprivacy.cli import main

    _no_computation(monkeypatch)
    base = ["models", "train", "--property", "sex", "--ratio", "0.5", "--out"]
    for out, message in [
        (str(tmp_path), "is a directory"),
        ("", "--out is empty"),
        (str(tmp_path / "missing" / "p.npz"), "does not exist; create it first"),
    ]:
        assert main([*base, out]) == 2
        assert message in capsys.readouterr().err


def test_models_reproduce_refuses_an_empty_out_before_training(monkeypatch, capsys):
    from distprivacy.cli import main

    _no_computation(monkeypatch)
    assert main(["models", "reproduce", "--quick", "--out", ""]) == 2
    assert "--out is empty" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# A path ending in a separator names a directory (issue 31): never written as a file
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tail", ["/", "/.", "/.."])
def test_a_file_path_naming_a_directory_is_refused(tmp_path, tail):
    assert outputs.names_a_directory(str(tmp_path / "newdir") + tail)
    assert not outputs.names_a_directory(tmp_path / "newdir" / "r.html")
    with pytest.raises(OutputError, match=r"--report .* names a directory, not a file") as e:
        check_output_file(str(tmp_path / "newdir") + tail, option="--report")
    assert "\n" not in str(e.value)
    with pytest.raises(OutputError, match="names a directory"):
        atomic_write(str(tmp_path / "newdir") + tail, "text")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["calibrate", "--mechanism", "DauM-G", "--report", "{new}/"],
        ["calibrate", "--mechanism", "DauM-G", "--save", "{new}/"],
        ["release", "--report", "{new}/"],
        ["audit", "--report", "{new}/"],
        [
            "ledger",
            "init",
            "{new}/",
            "--steward-key",
            "{key}",
            "--secret",
            "s",
            "--protect",
            "income==>50K",
            "--budget-mu",
            "1",
        ],
        ["ledger", "keygen", "{new}/"],
        ["ledger", "backup", "{ledger}", "{new}/"],
        ["ledger", "show", "{ledger}", "--report", "{new}/"],
        ["local", "city", "--out", "{new}/"],
        [
            "models",
            "audit",
            "--data",
            "t.csv",
            "--label",
            "y",
            "--protect",
            "a==b",
            "--report",
            "{new}/",
        ],
        [
            "models",
            "defend",
            "--data",
            "t.csv",
            "--label",
            "y",
            "--protect",
            "a==b",
            "--save",
            "{new}/",
        ],
        ["models", "train", "--property", "sex", "--ratio", "0.5", "--out", "{new}/"],
        ["reproduce", "table3", "--quick", "--out", "{tmp}/run", "--report", "{new}/"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_every_output_path_ending_in_a_slash_is_refused(
    args, tmp_path, monkeypatch, capsys, adult_dir
):
    """No command writes a regular file ``newdir`` when told ``newdir/`` (before computing)."""
    from distprivacy.cli import main
    from distprivacy.ledger import Ledger, StewardKey
    from distprivacy.targets import GDP

    ledger, key = tmp_path / "l.db", tmp_path / "steward.key"
    Ledger.init(ledger, steward=StewardKey.generate(key), secret="s", protect="income==>50K",
                budget=GDP(1.0), population=adult_dir).close()  # fmt: skip
    _no_computation(monkeypatch)
    monkeypatch.chdir(tmp_path)
    fill = {"new": str(tmp_path / "newdir"), "ledger": str(ledger), "tmp": str(tmp_path),
            "key": str(key)}  # fmt: skip
    assert main([a.format(**fill) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert "names a directory" in err
    assert not (tmp_path / "newdir").exists() and not (tmp_path / "newdir.key").exists()
