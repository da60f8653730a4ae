"""How long a release holds the ledger's write lock, and how the ledger behaves under concurrent
releasers (issue 20).

    python3 bench/bench_ledger_lock.py [--quick] [--out bench/results_ledger_lock.txt]

1. Lock-hold time of one release after 0, 10 and 100 earlier releases of the same dataset (the
   same approved DauM-G plan on 100 registered Adult records, a ledger of secrets): the
   composition runs outside the lock on a snapshot; under the lock only the chain check, the
   "nothing changed" check and the insert.
2. 8 and 32 processes releasing concurrently into one ledger whose (ε, δ) budget (δ = 10⁻³: the
   plan's fitted covariances make it not μ-GDP, so a μ budget would refuse it) fits exactly
   K = 6 releases — its ε half-way between the cumulative ε of 6 and 7 releases as the ledger
   composes them (`ledger show` on a probe ledger): releases/s, p50/p99 latency, refusals,
   spurious refusals and tracebacks (must be 0), exactly K recorded, and whether the ledger
   ever went over budget (must not: its cumulative ε at δ = 10⁻³ at most the budget's) —
   checked by `ledger verify` afterwards.

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
#: The δ of every budget here (a fitted-covariance plan is not μ-GDP: a μ budget refuses it).
DELTA = 1e-3
#: The number of releases the concurrency budget fits.
K = 6
sys.path.insert(0, str(ROOT / "tests"))

from public_data import adult_dir_or_exit  # noqa: E402


def _setup(tmp: Path, budget_eps: float = 1e6) -> Path:
    """A ledger of secrets (issue 30) in ``tmp``: the secret income over Adult with the budget
    (ε, δ) = (``budget_eps``, :data:`DELTA`) (default: one that never binds), 100 records
    registered as ``target``, the DauM-G plan approved as ``plan``; returns its path."""
    import distprivacy as dp
    from distprivacy.ledger import StewardKey

    data = dp.load_adult(adult_dir_or_exit())
    spec = dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    query = dp.Query.parse("mean:age,mean:education_num,count:sex==Female")
    model = dp.fit_model(data, spec, query, method="exact")
    cal = dp.DauM(EpsDelta(0.5, DELTA)).calibrate(model)  # fitted covariances: not μ-GDP
    plan = dp.Plan.from_calibration(cal, model, data=data)
    data.sample(n=100, random_state=1).to_csv(tmp / "target.csv", index=False)
    path = tmp / "ledger.db"
    steward = StewardKey.generate(tmp / "steward.key")
    with dp.Ledger.init(path, steward=steward, secret="income", protect="income==>50K",
                        budget=EpsDelta(budget_eps, DELTA),
                        population=adult_dir_or_exit()) as led:  # fmt: skip
        led.register(steward, "target", tmp / "target.csv")
        led.approve(steward, plan, "plan")
    return path


def _cumulative(led) -> dict:
    """The ledger's cumulative guarantee as ``ledger show`` states it (recomputed from every
    release), at δ = :data:`DELTA`."""
    (g,) = led.show()["cumulative"]
    assert g["at_delta"] == DELTA, g
    return g


def _budget_for(tmp: Path, k: int) -> float:
    """The ε (at δ = :data:`DELTA`) half-way between the cumulative ε of ``k`` and ``k + 1``
    releases, as the ledger composes them (a probe ledger whose budget never binds)."""
    from distprivacy.ledger import Ledger

    with Ledger(_setup(tmp)) as led:
        for _ in range(k):
            led.release("plan", "target")
        eps_k = _cumulative(led)["epsilon"]
        led.release("plan", "target")
        eps_next = _cumulative(led)["epsilon"]
    assert eps_k < eps_next, (eps_k, eps_next)
    return 0.5 * (eps_k + eps_next)


@contextlib.contextmanager
def _timed_lock(held: list[float]):
    """Time every write transaction of a release (BEGIN IMMEDIATE … COMMIT: the write lock,
    :func:`distprivacy.ledger._store.immediate` as the release path calls it)."""
    from distprivacy.ledger import _record

    original = _record.immediate

    @contextlib.contextmanager
    def timed(ledger):
        t0 = time.perf_counter()
        with original(ledger) as con:
            yield con
        held.append(time.perf_counter() - t0)

    _record.immediate = timed
    try:
        yield
    finally:
        _record.immediate = original


def lock_hold(quick: bool) -> list[str]:
    from distprivacy.ledger import Ledger

    lines = ["lock-hold time of one release (same approved plan, same registered 100 records)"]
    marks = (0, 10) if quick else (0, 10, 100)
    with tempfile.TemporaryDirectory() as d:
        path = _setup(Path(d))
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
        except BudgetExceededError as e:
            out.append(("refused", time.perf_counter() - t0, str(e)))
        except DistPrivacyError as e:
            out.append(("error", time.perf_counter() - t0, str(e)))
        except Exception:
            out.append(("traceback", time.perf_counter() - t0, traceback.format_exc()))
    return out


def concurrency(quick: bool) -> list[str]:
    from distprivacy.ledger import Ledger

    lines = [f"concurrent releasers (one ledger, an (ε, δ) budget fitting exactly K = {K})"]
    for procs in (8,) if quick else (8, 32):
        with tempfile.TemporaryDirectory() as d:
            probe = Path(d) / "probe"
            probe.mkdir()
            eps = _budget_for(probe, K)
            path = _setup(Path(d), budget_eps=eps)
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
            spurious = sum(
                1
                for r in flat
                if r[0] in ("error", "traceback")
                or (r[0] == "refused" and f"({K} earlier releases" not in r[2])
            )
            lat = sorted(r[1] for r in flat)
            p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
            with Ledger(path) as led:
                report = led.verify()
                recorded = len(led.releases())
                g = _cumulative(led)  # recomputed from every release
                over = g["releases"] > 0 and (
                    g["epsilon"] > eps * (1 + 1e-12)
                    or g["delta_at_budget_epsilon"] > DELTA * (1 + 1e-9)
                )
            lines.append(
                f"  {procs:>2} processes × {per}, budget (ε, δ) = ({eps:.4g}, {DELTA:g}): "
                f"{recorded} recorded ({'exactly K' if recorded == K else 'NOT K'}; cumulative "
                f"ε = {g['epsilon']:.4g} at δ = {DELTA:g}), {kinds['refused']} refused "
                f"(budget), {spurious} spurious refusals, {kinds['error']} one-line errors, "
                f"{kinds['traceback']} tracebacks; {kinds['recorded'] / wall:.2f} releases/s; "
                f"latency p50 {statistics.median(lat):.2f} s, p99 {p99:.2f} s; "
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
