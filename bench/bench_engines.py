"""Benchmark of the engines at scale: exact moments + DauM-G from Parquet files of 5M and 50M rows.

Run: ``python bench/bench_engines.py --data DIR [--rows 5000000 50000000] [--out DIR]``.

1. Generates (once; not committed) ``adult_<rows>.parquet`` in ``--out`` (default
   ``$TMPDIR/distprivacy-bench``): the Adult records resampled with replacement, with jitter on
   the numeric columns (age ±2 years, hours ±3, fnlwgt and capital gains/losses × a log-normal
   factor), written in row groups of 1M rows so the generator's memory stays flat.
2. Runs each case in a fresh subprocess and reads its peak resident memory (``ru_maxrss``):
   what ``distprivacy calibrate --data FILE --modeling exact --mechanism DauM-G`` does through
   DuckDB (the default for files): fit the exact model from the file without loading it, then
   calibrate DauM-G (ε = 1, δ = 0.001, exact rule, fitted covariances).

Optional cases: ``--auto`` adds ``--modeling auto`` (exact moments + 1,000 Monte-Carlo subsets
per θ, the subsets drawn by DuckDB), ``--pandas-rows N`` the in-memory path (load_table + pandas)
at N rows for comparison, ``--spark`` the Spark engine (local[*]).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CHUNK = 1_000_000

CHILD = r"""
import json, resource, sys, time, warnings
t0 = time.perf_counter()
from distprivacy.mechanisms import make_mechanism
from distprivacy.targets import EpsDelta
from distprivacy.models import fit_model
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.spec import ProtectionSpec
args = json.loads(sys.argv[1])
spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
query = Query.parse(ADULT_DEFAULT_STATISTICS)
data = args["path"]
t1 = time.perf_counter()
if args["engine"] == "pandas":
    from distprivacy.datasets import load_table
    data = load_table(data)
model = fit_model(data, spec, query, method=args["modeling"], n_samples=1000, random_state=0,
                  engine=args["engine"])
t2 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    cal = make_mechanism("DauM-G", EpsDelta(1.0, 1e-3)).calibrate(model)
t3 = time.perf_counter()
def children(pid):
    import glob
    out = []
    for f in glob.glob(f"/proc/{pid}/task/*/children"):
        for c in open(f).read().split():
            out += [int(c)] + children(int(c))
    return out
def hwm(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
import os
print(json.dumps({
    "children_peak_mib": sum(hwm(c) for c in children(os.getpid())),
    "fit": t2 - t1, "calibrate": t3 - t2, "total": t3 - t0,
    "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "l2": cal.expected_l2_error, "noise_covariance": [list(r) for r in cal.noise_covariance],
}))
"""


def generate(adult: pd.DataFrame, rows: int, path: Path, seed: int = 0) -> None:
    """Write ``rows`` jittered resamples of Adult to ``path`` (Parquet, 1M-row groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".part")
    writer = None
    try:
        for start in range(0, rows, CHUNK):
            size = min(CHUNK, rows - start)
            df = adult.iloc[rng.integers(0, len(adult), size)].reset_index(drop=True)
            df["age"] = np.clip(df["age"] + rng.integers(-2, 3, size), 17, 90)
            df["hours_per_week"] = np.clip(df["hours_per_week"] + rng.integers(-3, 4, size), 1, 99)
            for col in ("fnlwgt", "capital_gain", "capital_loss"):
                factor = np.exp(rng.normal(0.0, 0.1, size))
                df[col] = np.round(df[col] * factor).astype(np.int64)
            table = pa.Table.from_pandas(df, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema, compression="snappy")
            writer.write_table(table, row_group_size=CHUNK)
    finally:
        if writer is not None:
            writer.close()
    tmp.rename(path)


PRECISION_STATS = "mean:age,count:sex==Female,sum:capital_gain,sum:capital_loss,mean:fnlwgt"


def reference_moments(path: Path, spec, query) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Per-stratum count, mean and scatter in NumPy, one row group at a time (pairwise sums
    per group, exactly rounded sums across groups with math.fsum; two passes)."""
    import math

    import pyarrow.parquet as pq

    from distprivacy.datasets import _strip_strings

    f = pq.ParquetFile(path)
    cols = sorted({c for s in query.statistics for c in s.columns()} | {spec.predicate.column})

    def groups():
        for i in range(f.num_row_groups):
            df = f.read_row_group(i, columns=cols).to_pandas()
            for c in df.columns:
                if df[c].dtype == object or str(df[c].dtype).startswith(("str", "string")):
                    df[c] = _strip_strings(df[c])
            mask = spec.predicate.evaluate(df)
            G = query.record_matrix(df)
            yield G[mask], G[~mask]

    m = query.dim
    sums = [[[] for _ in range(m)] for _ in range(2)]
    counts = [0, 0]
    for parts in groups():
        for k, g in enumerate(parts):
            counts[k] += len(g)
            for j in range(m):
                sums[k][j].append(float(g[:, j].sum()))
    means = [np.array([math.fsum(sums[k][j]) / counts[k] for j in range(m)]) for k in range(2)]
    acc = [[[] for _ in range(m * m)] for _ in range(2)]
    for parts in groups():
        for k, g in enumerate(parts):
            c = g - means[k]
            S = c.T @ c
            for j in range(m * m):
                acc[k][j].append(float(S.flat[j]))
    return [
        (counts[k], means[k], np.array([math.fsum(a) for a in acc[k]]).reshape(m, m))
        for k in range(2)
    ]


def precision(path: Path, engine: str) -> float:
    """Largest relative difference between an engine's exact strata moments and NumPy's."""
    from distprivacy.engines import resolve_engine
    from distprivacy.query import Query
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    query = Query.parse(PRECISION_STATS)
    ref = reference_moments(path, spec, query)
    got = resolve_engine(engine, str(path)).strata_moments(spec, query)
    worst = 0.0
    for (n, mu, S), x in zip(ref, got, strict=True):
        assert n == x.count
        worst = max(worst, float(np.max(np.abs(x.mean - mu) / np.abs(mu))))
        scale = np.sqrt(np.outer(np.diag(S), np.diag(S)))
        worst = max(worst, float(np.max(np.abs(x.scatter - S) / scale)))
    return worst


def run_case(path: Path, engine: str, modeling: str) -> dict:
    """One calibration in a fresh interpreter; its timings and peak RSS."""
    t = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            json.dumps({"path": str(path), "engine": engine, "modeling": modeling}),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"case {engine}/{modeling} on {path} failed:\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall"] = time.perf_counter() - t
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="Adult directory (default: cache/download)")
    ap.add_argument("--rows", type=int, nargs="+", default=[5_000_000])
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "distprivacy-bench"))
    ap.add_argument("--auto", action="store_true", help="also --modeling auto (Monte-Carlo)")
    ap.add_argument("--spark", action="store_true", help="also the Spark engine (local[*])")
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs per case (median time, largest peak)"
    )
    ap.add_argument("--pandas-rows", type=int, default=0, help="in-memory path at this size")
    ap.add_argument(
        "--precision",
        action="store_true",
        help="also compare the engines' exact moments with NumPy's (money columns)",
    )
    args = ap.parse_args()

    from distprivacy.datasets import load_data

    adult = load_data(args.data)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    sizes = sorted(set(args.rows) | ({args.pandas_rows} if args.pandas_rows else set()))
    for rows in sizes:
        path = out / f"adult_{rows}.parquet"
        if not path.exists():
            t = time.perf_counter()
            generate(adult, rows, path)
            print(
                f"# generated {path} ({path.stat().st_size / 2**20:.0f} MiB) in "
                f"{time.perf_counter() - t:.0f} s",
                flush=True,
            )
        todo = []
        if rows in args.rows:
            todo.append(("duckdb", "exact"))
            if args.auto:
                todo.append(("duckdb", "auto"))
            if args.spark:
                todo.append(("spark", "exact"))
        if rows == args.pandas_rows:
            todo.append(("pandas", "exact"))
        for engine, modeling in todo:
            runs = [run_case(path, engine, modeling) for _ in range(args.repeat)]
            r = dict(runs[0])
            for key in ("fit", "calibrate", "wall"):  # medians of the times
                r[key] = float(np.median([x[key] for x in runs]))
            for key in ("peak_mib", "children_peak_mib"):  # the largest peak
                r[key] = max(x[key] for x in runs)
            if args.repeat > 1:
                peaks = ", ".join(f"{x['peak_mib']:.0f}" for x in runs)
                print(f"# {rows:,d} {engine} {modeling}: {args.repeat} runs, peaks {peaks} MiB")
            cases.append((rows, engine, modeling, r))
            jvm = f" (+ JVM {r['children_peak_mib']:.0f} MiB)" if r["children_peak_mib"] else ""
            print(
                f"{rows:>11,d}  {engine:<7} {modeling:<6} fit {r['fit']:7.2f} s  calibrate "
                f"{r['calibrate']:5.2f} s  process {r['wall']:7.2f} s  peak "
                f"{r['peak_mib']:7.0f} MiB{jvm}  E‖Z‖₂ {r['l2']:.6g}",
                flush=True,
            )
        if args.precision and rows in args.rows:
            engines = ["duckdb"] + (["spark"] if args.spark else [])
            for engine in engines:
                t = time.perf_counter()
                err = precision(path, engine)
                print(
                    f"# {rows:,d} rows, {engine}: exact moments of {PRECISION_STATS} vs NumPy "
                    f"(two-pass, fsum): max relative difference {err:.1e} "
                    f"({time.perf_counter() - t:.0f} s)",
                    flush=True,
                )
    exact = [c for c in cases if c[1] == "duckdb" and c[2] == "exact"]
    if len(exact) >= 2:
        (r0, _, _, a), (r1, _, _, b) = exact[0], exact[-1]
        print(
            f"# {r0:,d} -> {r1:,d} rows (x{r1 / r0:g}): fit time x{b['fit'] / a['fit']:.1f}, "
            f"peak memory x{b['peak_mib'] / a['peak_mib']:.2f}"
        )
        Za, Zb = np.array(a["noise_covariance"]), np.array(b["noise_covariance"])
        print(
            f"# DauM-G noise covariance, relative change: "
            f"{np.abs(Za - Zb).max() / np.abs(Za).max():.2e}"
        )


if __name__ == "__main__":
    main()
