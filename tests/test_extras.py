"""The core works without the extras (issue 22, item 6): in a process where matplotlib, cvxpy
and scikit-learn cannot be imported (a ``sys.meta_path`` finder placed by a ``sitecustomize``
on PYTHONPATH), `calibrate` runs every other mechanism and names the extra OptM-G needs; asking
for OptM-G, a figure, a classifier attack or a models audit is refused in one line naming the
extra (exit 2). bench/check_core_install.py checks the same on a real core install (a fresh
venv)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from distprivacy.exceptions import EXTRAS, MissingExtraError, has_extra, require_extra

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parents[1] / "src"
BLOCKED = ("matplotlib", "cvxpy", "sklearn")

_SITECUSTOMIZE = f"""
import sys

BLOCKED = {BLOCKED!r}


class _NotInstalled:
    \"\"\"Finds the blocked packages nowhere, as if they were not installed.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


@pytest.fixture(scope="module")
def core_env(tmp_path_factory, adult_dir) -> dict[str, str]:
    """The environment of a process without the extras, reading the tests' Adult files."""
    site = tmp_path_factory.mktemp("noextras")
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    path = [str(site), str(SRC), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "DISTPRIVACY_DATA": str(adult_dir)}


def _run(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def _cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return _run(env, "-m", "distprivacy", *args, cwd=cwd)


def test_the_extras_are_really_blocked(core_env):
    for module in BLOCKED:
        res = _run(core_env, "-c", f"import {module}")
        assert res.returncode == 1 and "ModuleNotFoundError" in res.stderr, module
    res = _run(core_env, "-c", "import numpy, scipy, pandas, duckdb, click, rich, opendp")
    assert res.returncode == 0, res.stderr


def test_calibrate_runs_on_the_core(core_env):
    res = _cli(core_env, "calibrate", "--epsilon", "1", "--delta", "0.001", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    done = [c["name"] for c in out["mechanisms"]]
    assert "OptM-G" not in done and {"ExpM-G", "DauM-G", "EigM-G", "Wasserstein"} <= set(done)
    assert out["not_applicable"]["OptM-G"] == (
        "OptM-G needs cvxpy: pip install 'distprivacy[optimal]'"
    )


def test_the_table_names_the_extra(core_env):
    # rich would read "[optimal]" as markup and print "pip install 'distprivacy'".
    res = _cli(core_env, "calibrate", "--samples", "200")
    assert res.returncode == 0, res.stderr
    assert "OptM-G needs cvxpy: pip install 'distprivacy[optimal]'" in res.stdout


def _one_line_error(res: subprocess.CompletedProcess, message: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.strip() == f"error: {message}", res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["calibrate", "--mechanism", "OptM-G"],
            "OptM-G needs cvxpy: pip install 'distprivacy[optimal]'",
        ),
        (
            ["release", "--mechanism", "OptM-G", "--seed", "1"],
            "OptM-G needs cvxpy: pip install 'distprivacy[optimal]'",
        ),
        (
            ["audit", "--mechanism", "DauM-G", "--audit-samples", "200", "--attack", "logistic"],
            "the logistic attack needs scikit-learn: pip install 'distprivacy[models]'",
        ),
        (
            ["models", "audit", "--data", "t.csv", "--label", "y", "--protect", "a==b"],
            "the logistic estimator needs scikit-learn: pip install 'distprivacy[models]'",
        ),
    ],
    ids=["calibrate-OptM-G", "release-OptM-G", "audit-logistic", "models-audit"],
)
def test_a_feature_of_an_extra_is_refused_in_one_line(core_env, args, message):
    _one_line_error(_cli(core_env, *args), message)


def test_reproduce_is_refused_before_any_work(core_env, tmp_path):
    out = tmp_path / "out"
    res = _cli(core_env, "reproduce", "table2", "--quick", "--out", str(out))
    _one_line_error(res, "reproduce needs matplotlib: pip install 'distprivacy[figures]'")
    assert not out.exists()


def test_the_default_audit_runs_the_attack_it_can(core_env):
    res = _cli(
        core_env, "audit", "--mechanism", "DauM-G", "--audit-samples", "200", "--seed", "1",
        "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    attacks = [a["attack"] for a in json.loads(res.stdout)["audits"][0]["attacks"]]
    assert attacks == ["likelihood-ratio"]
    assert res.stderr.strip() == (
        "warning: the audit runs the likelihood-ratio attack only: the logistic and boosting "
        "attacks need scikit-learn: pip install 'distprivacy[models]'"
    )


def test_the_library_raises_missing_extra_error(core_env):
    code = """
import distprivacy as dp
from distprivacy.exceptions import MissingExtraError
data = dp.load_adult()
spec = dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
model = dp.fit_model(data, spec, dp.Query.parse("mean:age,mean:hours_per_week"), method="exact")
try:
    dp.OptimalGaussian(dp.EpsDelta(1, 1e-3)).calibrate(model)
except MissingExtraError as e:
    print(type(e).__mro__[1].__name__, e.extra, e)
print(dp.DauM(dp.EpsDelta(1, 1e-3)).calibrate(model).mechanism)
"""
    res = _run(core_env, "-c", code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "DistPrivacyError optimal OptM-G needs cvxpy: pip install 'distprivacy[optimal]'",
        "DauM-G",
    ]


def test_every_module_imports_without_the_extras(core_env):
    # Optional dependencies are imported where they are used, never at a module's import
    # (the figures package, imported only to draw, is the one boundary: it says so in one line).
    code = """
import importlib, pkgutil
import distprivacy
from distprivacy.exceptions import MissingExtraError
bad = []
for m in pkgutil.walk_packages(distprivacy.__path__, "distprivacy.", onerror=lambda n: None):
    if m.name == "distprivacy.__main__":  # runs the CLI
        continue
    try:
        importlib.import_module(m.name)
    except MissingExtraError as e:
        if not m.name.startswith("distprivacy.experiments.figures"):
            bad.append(f"{m.name}: {e}")
    except ImportError as e:
        bad.append(f"{m.name}: {type(e).__name__}: {e}")
print("\\n".join(bad) or "ok")
"""
    res = _run(core_env, "-c", code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_missing_extra_error_names_the_extra():
    e = MissingExtraError("OptM-G", "cvxpy")
    assert str(e) == "OptM-G needs cvxpy: pip install 'distprivacy[optimal]'"
    assert (e.module, e.package, e.extra) == ("cvxpy", "cvxpy", "optimal")
    assert str(MissingExtraError("x", "sklearn.base")).endswith("'distprivacy[models]'")
    assert {extra for _, extra in EXTRAS.values()} >= {"figures", "optimal", "models", "spark"}


def test_require_extra_and_has_extra(monkeypatch, tmp_path):
    assert require_extra("json", "x") is sys.modules["json"]
    assert has_extra("json") and not has_extra("distprivacy_no_such_module")
    monkeypatch.setitem(EXTRAS, "distprivacy_no_such_module", ("no-such", "nothing"))
    with pytest.raises(MissingExtraError, match=r"pip install 'distprivacy\[nothing\]'"):
        require_extra("distprivacy_no_such_module", "the feature")
    # An installed extra that itself misses a module: the original error, not renamed.
    (tmp_path / "distprivacy_broken_extra.py").write_text("import distprivacy_missing_dep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(EXTRAS, "distprivacy_broken_extra", ("broken", "nothing"))
    with pytest.raises(ModuleNotFoundError, match="distprivacy_missing_dep"):
        require_extra("distprivacy_broken_extra", "the feature")
