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


#: A budget with room for every test's releases, as ``ledger init`` flags: (ε, δ) = (50, 0.5).
#: (A μ budget refuses Adult's plans: their fitted Gaussians are not μ-GDP.)
ROOMY = ["--budget-epsilon", "50", "--budget-delta", "0.5"]


def room_for(plan: Any, releases: int, delta: float = 1e-3) -> list[str]:
    """``ledger init`` flags of an (ε, δ) budget that ``releases`` releases of ``plan`` (a
    Plan) on one dataset meet and one more do not: ε halfway between their cumulative ε's at
    ``delta`` (the library's exact joint accounting)."""
    from distprivacy.composition import compose_gaussian
    from distprivacy.ledger._compose import merge_repeats

    every = list(range(plan.model.dim))
    noise = plan.calibration.noise_covariance

    def eps(k: int) -> float:
        joint = compose_gaussian(plan.model, merge_repeats([(every, noise)] * k), delta=delta)
        return joint.epsilon_at(delta)

    return ["--budget-epsilon", repr((eps(releases) + eps(releases + 1)) / 2),
            "--budget-delta", repr(delta)]  # fmt: skip
