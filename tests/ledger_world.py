"""A ledger of secrets built for a test (issue 30's flow), through the command line or the
library: a steward key, one secret over a population, registered dataset files and approved
plans (importable from any test directory: tests/ is on sys.path through its conftest.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from distprivacy.cli import main

SECRET = "income"
PROTECT = "income==>50K"


def cli_ledger(
    root: Path,
    population: Path | str,
    budget: list[str],
    datasets: Mapping[str, Path] | None = None,
    plans: Mapping[str, Path] | None = None,
    *,
    secret: str = SECRET,
    protect: str = PROTECT,
    name: str = "l.db",
) -> tuple[Path, Path]:
    """``ledger keygen``, ``ledger init`` (``budget``: e.g. ``["--budget-mu", "1.5"]``),
    ``ledger register`` each of ``datasets`` and ``ledger approve`` each of ``plans``, in
    ``root``; returns the ledger's and the steward key's paths (every command must exit 0)."""
    key, led = root / f"{name}.steward.key", root / name
    steps: list[list[Any]] = [
        ["ledger", "keygen", key],
        ["ledger", "init", led, "--steward-key", key, "--secret", secret, "--protect", protect,
         "--population", population, *budget],
    ]  # fmt: skip
    steps += [
        ["ledger", "register", led, n, "--steward-key", key, "--data", p]
        for n, p in (datasets or {}).items()
    ]
    steps += [
        ["ledger", "approve", led, p, "--name", n, "--steward-key", key]
        for n, p in (plans or {}).items()
    ]
    for step in steps:
        rc = main([str(a) for a in step])
        assert rc == 0, step
    return led, key


def lib_ledger(
    root: Path,
    population: Any,
    budget: Any,
    datasets: Mapping[str, Path] | None = None,
    plans: Mapping[str, Any] | None = None,
    *,
    secret: str = SECRET,
    protect: str = PROTECT,
    name: str = "l.db",
) -> tuple[Any, Any]:
    """The same with the library: ``(Ledger, StewardKey)``; ``budget`` a target (``GDP(μ)``,
    ``EpsDelta(ε, δ)``, ``MaxAttackAccuracy(a)``), ``plans`` Plan objects by name."""
    from distprivacy.ledger import Ledger, StewardKey

    steward = StewardKey.generate(root / f"{name}.steward.key")
    led = Ledger.init(root / name, steward=steward, secret=secret, protect=protect,
                      budget=budget, population=population)  # fmt: skip
    for n, p in (datasets or {}).items():
        led.register(steward, n, p)
    for n, plan in (plans or {}).items():
        led.approve(steward, plan, n)
    return led, steward
