"""The reports, made once per session through the command line on Adult: ``calibrate``
(four mechanisms), ``release`` of an approved DauM-G plan recorded in a ledger of secrets (its
public page, ``public``, and its internal review page, ``release``),
``audit`` (two mechanisms, few samples), ``ledger show`` (one secret, two registered datasets,
three releases) and ``models audit`` (two ratios, and three: every pair and the regression of
the share; 20 logistic models per ratio and half, about a second each); and a ``calibrate``
report on a table whose column names and values are HTML. Every test that reads the reports
is ``slow`` (a dozen command lines, several seconds, the first time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ledger_world import cli_ledger

from distprivacy.cli import main

#: A column name and a property value that would run as script if not escaped.
EVIL_COLUMN = "<script>alert(1)</script>"
EVIL_FLAG = "flag\"'&<b>"

MECHS = ["--mechanism", "DirM-L", "--mechanism", "ExpM-G", "--mechanism", "DauM-G",
         "--mechanism", "GroupDP-G"]  # fmt: skip

#: The game of the ``models audit`` reports (on a 3,000-row sample of Adult, MODELS_TABLE in
#: the reports' directory), without --ratios.
MODELS_GAME = ["--label", "sex", "--features", "age,hours_per_week,education_num,income",
               "--protect", "income==>50K", "--n-models", "20", "--n-train", "100",
               "--seed", "1"]  # fmt: skip
MODELS_TABLE = "adult3000.csv"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that reads the session's reports."""
    for item in items:
        if "reports" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


def _ok(*args: object) -> None:
    rc = main([str(a) for a in args])
    assert rc == 0, args


@pytest.fixture(scope="session")
def reports(tmp_path_factory, adult_dir) -> dict[str, Path]:
    from distprivacy.datasets import load_adult

    root = tmp_path_factory.mktemp("reports")
    kinds = ("calibrate", "release", "public", "audit", "ledger", "models", "models-pairs")
    out = {k: root / f"{k}.html" for k in kinds}
    data = ["--data", adult_dir, "--subset-size", 100]
    _ok("calibrate", *data, *MECHS, "--report", out["calibrate"], "--json")
    plan = root / "plan.json"
    _ok("calibrate", *data, "--mechanism", "DauM-G", "--epsilon", 0.5, "--save", plan, "--json")
    adult = load_adult(adult_dir)
    targets = []
    for seed in (1, 2):
        t = root / f"records{seed}.csv"
        adult.sample(n=100, random_state=seed).to_csv(t, index=False)
        targets.append(t)
    # Three releases of two independent samples under the secret (an (ε, δ) budget: Adult's
    # fitted Gaussians are not μ-GDP, so a μ budget would refuse them).
    budget = ["--budget-epsilon", "5", "--budget-delta", "0.001"]
    datasets = {f"wave{k}": t for k, t in enumerate(targets, 1)}
    ledger, _ = cli_ledger(root, adult_dir, budget, datasets, {"means": plan}, name="ledger.db")
    for name in datasets:
        _ok("release", "--ledger", ledger, "--dataset", name, "--plan", "means", "--json")
    _ok("release", "--ledger", ledger, "--dataset", "wave1", "--plan", "means",
        "--report", out["public"], "--review-report", out["release"])  # fmt: skip
    _ok("ledger", "show", ledger, "--report", out["ledger"])
    _ok("audit", *data, "--mechanism", "DauM-G", "--mechanism", "ExpM-L",
        "--audit-samples", 400, "--report", out["audit"], "--json")  # fmt: skip
    table = root / MODELS_TABLE
    adult.sample(n=3000, random_state=0).to_csv(table, index=False)
    game = ["models", "audit", "--data", table, *MODELS_GAME, "--json"]
    _ok(*game, "--ratios", "0.2,0.6", "--report", out["models"])
    _ok(*game, "--ratios", "0.2,0.4,0.6", "--report", out["models-pairs"])
    return out


@pytest.fixture(scope="session")
def evil_report(tmp_path_factory) -> Path:
    """``calibrate --report`` on a table with a script for a column name and quotes, an
    ampersand and a tag in the protected property."""
    root = tmp_path_factory.mktemp("evil")
    rng = np.random.default_rng(0)
    n = 2000
    frame = pd.DataFrame(
        {
            EVIL_COLUMN: rng.normal(50, 10, n),
            "group": rng.choice([EVIL_FLAG, "no"], n, p=[0.3, 0.7]),
            "x": rng.normal(size=n),
        }
    )
    frame.to_csv(root / "evil.csv", index=False)
    report = root / "evil.html"
    _ok("calibrate", "--data", root / "evil.csv", "--protect", f"group=={EVIL_FLAG}",
        "--values", "0.2,0.4", "--subset-size", 100, "--statistics",
        f"mean:{EVIL_COLUMN},mean:x", "--mechanism", "DauM-G", "--mechanism", "ExpM-L",
        "--report", report, "--json")  # fmt: skip
    return report
