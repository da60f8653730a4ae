"""Snapshot every calibration's numbers, or compare a rerun with a snapshot.

Run: ``python bench/check_calibrations.py [--data DIR] [--out FILE] [--compare FILE]``.

Calibrates every mechanism of the registry (Gaussian, Laplace, group-DP, Wasserstein) on Adult
and on every public table of ``tests/public_data.py`` (their small fixed-seed versions), for a
few targets — (ε, δ) under both rules, a μ, a maximum attack accuracy — and both covariance
modes (``fitted``, ``pooled``) and both utilities where they apply, and records each
calibration's plain data (:meth:`Calibration.to_dict`: noise scales and covariance, μ, μ*, the
μ actually used, ε, δ, δ achieved, the verified profile of the unequal fits, details, warnings
and their codes, the guarantee), the Python warnings it issued, or the one-line refusal.

``--out FILE`` writes the snapshot (JSON); ``--compare FILE`` reruns and prints ``same`` or
``DIFFERENT`` per entry (numbers compared at relative 1e-12, everything else exactly) and exits
1 on any difference. Refactorings of the calibration path must leave every entry ``same``.
A few minutes on one core.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import public_data  # noqa: E402

RTOL = 1e-12

#: (label, rule, target keywords of make_mechanism, covariances, utility)
TARGETS: tuple[tuple[str, str, dict[str, float], str, str], ...] = (
    ("eps1-d1e-3", "exact", {"epsilon": 1.0, "delta": 1e-3}, "fitted", "scaled"),
    ("eps1-d1e-3", "exact", {"epsilon": 1.0, "delta": 1e-3}, "pooled", "scaled"),
    ("eps1-d1e-3", "exact", {"epsilon": 1.0, "delta": 1e-3}, "fitted", "l2"),
    ("eps0.5-d1e-5", "exact", {"epsilon": 0.5, "delta": 1e-5}, "fitted", "scaled"),
    ("eps0.5-d1e-3", "classic", {"epsilon": 0.5, "delta": 1e-3}, "fitted", "scaled"),
    ("mu0.5", "exact", {"mu": 0.5, "delta": 1e-3}, "fitted", "scaled"),
    ("mu0.5", "exact", {"mu": 0.5, "delta": 1e-3}, "pooled", "scaled"),
    ("acc0.6", "exact", {"max_accuracy": 0.6, "delta": 1e-3}, "fitted", "scaled"),
    # Large targets: NoNoise applies somewhere (then its fitted check may refuse it).
    ("eps4-d1e-3", "exact", {"epsilon": 4.0, "delta": 1e-3}, "fitted", "scaled"),
    ("mu3", "exact", {"mu": 3.0, "delta": 1e-3}, "fitted", "scaled"),
    ("mu3", "exact", {"mu": 3.0, "delta": 1e-3}, "pooled", "scaled"),
)


def _models(data_dir: str | None) -> dict[str, Any]:
    """The fitted models: Adult (two specs, exact moments; one with samples) and each public
    table's small version (the tests' spec and statistics, with samples)."""
    from distprivacy.datasets import load_data
    from distprivacy.models import fit_model
    from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
    from distprivacy.spec import ProtectionSpec

    adult = load_data(data_dir or str(public_data.adult_dir_or_exit()))
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    out = {
        "adult-2values": fit_model(
            adult, ProtectionSpec("income==>50K", 100, [0.45, 0.55]), q, method="exact"
        ),
        "adult-3values": fit_model(
            adult, ProtectionSpec("income==>50K", 300, [0.3, 0.4, 0.5]), q, method="exact"
        ),
        "adult-samples": fit_model(
            adult,
            ProtectionSpec("income==>50K", 100, [0.45, 0.55]),
            Query.parse("mean:age,mean:hours_per_week"),
            method="auto",
            n_samples=200,
            random_state=0,
        ),
    }
    for name, ds in public_data.DATASETS.items():
        df = public_data.small(name)
        spec = ProtectionSpec(ds.protect, 200, ds.values)
        for label, stats in (("test", ds.test_statistics_text), ("all", ds.statistics_text)):
            out[f"{name}-{label}"] = fit_model(
                df, spec, Query.parse(stats), method="auto", n_samples=200, random_state=0
            )
    return out


def _entry(name: str, model: Any, rule: str, kw: dict, cov: str, utility: str) -> dict:
    from distprivacy.mechanisms import CALIBRATION_FAILURES, make_mechanism

    kw = dict(kw)
    epsilon = kw.pop("epsilon", None)
    delta = kw.pop("delta")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            from distprivacy.request import GaussianOptions
            from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy

            if epsilon is not None:
                target, report = EpsDelta(epsilon, delta), None
            elif "mu" in kw:
                target, report = GDP(kw["mu"]), delta
            else:
                target, report = MaxAttackAccuracy(kw["max_accuracy"]), delta
            mech = make_mechanism(
                name, target, GaussianOptions(rule, cov, utility, report_delta=report)
            )
            cal = mech.calibrate(model)
        except CALIBRATION_FAILURES as exc:
            return {"refused": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
    out = cal.to_dict()
    out["python_warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return out


def snapshot(data_dir: str | None) -> dict[str, Any]:
    """Every entry's plain data, keyed ``table|target|rule|covariances|utility|mechanism``."""
    from distprivacy.mechanisms import MECHANISMS

    models = _models(data_dir)
    out: dict[str, Any] = {}
    for table, model in models.items():
        for label, rule, kw, cov, utility in TARGETS:
            for name, cls in MECHANISMS.items():
                gaussian = cls.targets_gdp
                if not gaussian and ("epsilon" not in kw or (cov, utility) != ("fitted", "scaled")):
                    continue  # pure-ε mechanisms: one entry per (ε, δ)
                if getattr(cls, "needs_samples", False) and model.samples_ is None:
                    continue
                key = f"{table}|{label}|{rule}|{cov}|{utility}|{name}"
                t = time.perf_counter()
                out[key] = _entry(name, model, rule, kw, cov, utility)
                dt = time.perf_counter() - t
                if dt > 5:
                    print(f"  slow: {key} {dt:.1f} s", file=sys.stderr)
    return out


def _diff(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``a`` and ``b`` differ (numbers at relative RTOL), or None."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return None if a == b else f"{path}: {a!r} != {b!r}"
    if isinstance(a, int | float) and isinstance(b, int | float):
        if a == b or (
            isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
        ):
            return None
        if abs(a - b) <= RTOL * max(abs(a), abs(b)):
            return None
        return f"{path}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            d = _diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _diff(x, y, f"{path}[{k}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="Adult directory (default: public_data's)")
    ap.add_argument("--out", default=None, help="write the snapshot (JSON) here")
    ap.add_argument(
        "--compare", default=None, help="compare with this snapshot; exit 1 if any differs"
    )
    args = ap.parse_args()
    t = time.perf_counter()
    snap = json.loads(json.dumps(snapshot(args.data), allow_nan=True))
    print(f"{len(snap)} calibrations in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(snap, indent=1, sort_keys=True), encoding="utf-8")
    if not args.compare:
        return
    ref = json.loads(Path(args.compare).read_text(encoding="utf-8"))
    different = 0
    for key in sorted(set(ref) | set(snap)):
        if key not in ref or key not in snap:
            print(f"DIFFERENT  {key} ({'new' if key not in ref else 'missing'})")
            different += 1
            continue
        d = _diff(ref[key], snap[key])
        if d:
            different += 1
            print(f"DIFFERENT  {key} ({d[:300]})")
        else:
            print(f"same       {key}")
    print(f"{different} of {len(set(ref) | set(snap))} calibration(s) differ")
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
