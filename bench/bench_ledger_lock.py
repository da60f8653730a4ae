"""How long a release holds the ledger's write lock, and how the ledger behaves under concurrent
releasers (issue 20).

    python3 bench/bench_ledger_lock.py [--quick] [--out bench/results_ledger_lock.txt]

1. Lock-hold time of one release after 0, 10 and 100 earlier releases of the same dataset (the
   same approved DauM-G plan on 100 registered Adult records, a ledger of secrets): the
   composition runs outside the lock on a snapshot; under the lock only the chain check, the
   "nothing changed" check and the insert.
2. 8 and 32 processes releasing concurrently into one ledger whose budget allows a fixed number
   of releases: releases/s, p50/p99 latency, refusals, tracebacks (must be 0), and whether the
   ledger ever went over budget (must not) — checked by `ledger verify` afterwards.

Needs the Adult data: tests/public_data.py's adult_dir (../shared/data/adult, DISTPRIVACY_DATA,
the library's cache, else its fetch).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

from distprivacy.targets import EpsDelta

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from public_data import adult_dir_or_exit  # noqa: E402


def _setup(tmp: Path, budget_mu: float | None = None):
    """A ledger of secrets (issue 30) in ``tmp``: the secret income over Adult with budget
    ``budget_mu`` (default 10⁶), 100 records registered as ``target``, the DauM-G plan
    approved as ``plan``; returns (ledger path, the plan's μ)."""
    import distprivacy as dp
    from distprivacy.ledger import StewardKey

    data = dp.load_adult(adult_dir_or_exit())
    spec = dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    query = dp.Query.parse("mean:age,mean:education_num,count:sex==Female")
    model = dp.fit_model(data, spec, query, method="exact")
    cal = dp.DauM(EpsDelta(0.5, 1e-3), dp.GaussianOptions(covariances="pooled")).calibrate(
        model
    )  # μ-GDP: a μ budget holds it
    plan = dp.Plan.from_calibration(cal, model, data=data)
    data.sample(n=100, random_state=1).to_csv(tmp / "target.csv", index=False)
    path = tmp / "ledger.db"
    mu = budget_mu if budget_mu is not None else 1e6
    steward = StewardKey.generate(tmp / "steward.key")
    with dp.Ledger.init(path, steward=steward, secret="income", protect="income==>50K",
                        budget=dp.GDP(mu), population=adult_dir_or_exit()) as led:  # fmt: skip
        led.register(steward, "target", tmp / "target.csv")
        led.approve(steward, plan, "plan")
    return path, cal.mu


@contextlib.contextmanager
def _timed_lock(held: list[float]):
    """Time every write transaction of the ledger (BEGIN IMMEDIATE … COMMIT)."""
    from distprivacy.ledger import Ledger

    original = Ledger._immediate

    @contextlib.contextmanager
    def timed(self):
        t0 = time.perf_counter()
        with original(self) as con:
            yield con
        held.append(time.perf_counter() - t0)

    Ledger._immediate = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        Ledger._immediate = original  # type: ignore[method-assign]


def lock_hold(quick: bool) -> list[str]:
    from distprivacy.ledger import Ledger

    lines = ["lock-hold time of one release (same approved plan, same registered 100 records)"]
    marks = (0, 10) if quick else (0, 10, 100)
    with tempfile.TemporaryDirectory() as d:
        path, _ = _setup(Path(d))
        done = 0
        with Ledger(path) as led:
            for mark in marks:
                while done < mark:
                    led.release("plan", "target")
                    done += 1
                held: list[float] = []
                t0 = time.perf_counter()
                with _timed_lock(held):
                    led.release("plan", "target")
                total = time.perf_counter() - t0
                done += 1
                lines.append(
                    f"  after {mark:>3} earlier releases: lock held {held[-1] * 1e3:7.1f} ms, "
                    f"whole release {total:6.2f} s"
                )
            assert led.verify().ok
    return lines


def _worker(args) -> list[tuple[str, float, str]]:
    path, k = args
    from distprivacy.exceptions import DistPrivacyError
    from distprivacy.ledger import BudgetExceededError, Ledger

    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        try:
            with Ledger(path) as led:
                led.release("plan", "target")
            out.append(("recorded", time.perf_counter() - t0, ""))
        except BudgetExceededError:
            out.append(("refused", time.perf_counter() - t0, ""))
        except DistPrivacyError as e:
            out.append(("error", time.perf_counter() - t0, str(e)))
        except Exception:
            out.append(("traceback", time.perf_counter() - t0, traceback.format_exc()))
    return out


def concurrency(quick: bool) -> list[str]:
    from distprivacy.ledger import Ledger
    from distprivacy.profiles import gdp_accuracy

    lines = ["concurrent releasers (one ledger, budget allowing about 6 releases)"]
    for procs in (8,) if quick else (8, 32):
        with tempfile.TemporaryDirectory() as d:
            # μ of k releases of one plan grows like √k·μ₁ at most: budget ≈ 2.5 μ₁.
            probe = Path(d) / "probe"
            probe.mkdir()
            mu1 = _setup(probe)[1]
            path, _ = _setup(Path(d), budget_mu=2.5 * mu1)
            per = 2
            t0 = time.perf_counter()
            with mp.get_context("spawn").Pool(procs) as pool:
                results = pool.map(_worker, [(path, per)] * procs)
            wall = time.perf_counter() - t0
            flat = [r for rs in results for r in rs]
            kinds = {
                k: sum(1 for r in flat if r[0] == k)
                for k in ("recorded", "refused", "error", "traceback")
            }
            lat = sorted(r[1] for r in flat)
            p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
            with Ledger(path) as led:
                report = led.verify()
                (g,) = led.show()["cumulative"]  # recomputed from every release
                over = g["releases"] > 0 and (
                    g["mu"] > 2.5 * mu1 * (1 + 1e-12)
                    or g["max_attack_accuracy"] > gdp_accuracy(2.5 * mu1) * (1 + 1e-9)
                )
            lines.append(
                f"  {procs:>2} processes × {per}: {kinds['recorded']} recorded, {kinds['refused']} "
                f"refused (budget), {kinds['error']} one-line errors, {kinds['traceback']} "
                f"tracebacks; {kinds['recorded'] / wall:.2f} releases/s; latency p50 "
                f"{statistics.median(lat):.2f} s, p99 {p99:.2f} s; "
                f"verify {'ok' if report.ok else 'FAILED'}; over budget: {'YES' if over else 'no'}"
            )
            for r in flat:
                if r[0] in ("error", "traceback"):
                    lines.append("    " + r[2].strip().splitlines()[-1])
                    break
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lines = [f"# bench_ledger_lock ({'quick' if a.quick else 'full'}), {os.cpu_count()} cores"]
    lines += lock_hold(a.quick)
    lines += concurrency(a.quick)
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
