"""The Spark engine on a standalone cluster against DuckDB, on the same Parquet files.

Run: ``python bench/bench_spark_cluster.py --data DIR [--rows 1000000 20000000]
[--audit-rows 5000000] [--cores 2] [--memory 2g] [--out DIR]``.

Starts a Spark standalone master and one worker (``--cores``, ``--memory``; the executor takes
all of it) from the pyspark package's own ``bin/spark-class``, on 127.0.0.1 only, with logs,
work and spill directories in a temporary directory, and stops them at the end, failed or not
(tests/engines/spark_cluster.py, shared with tests/engines/test_engines_spark_cluster.py).
Each case is a fresh ``python3 -m distprivacy … --json`` process, timed whole (imports, the
driver's JVM and the executor's start, the scans, the calibrations, the output):

* ``calibrate``: ``--modeling exact`` (every mechanism, ε = 1, δ = 0.001) on bench_engines.py's
  generated Adult resample ``adult_<rows>.parquet`` (in ``--out``, made if missing; 1M-row
  groups), with ``--engine spark --spark-master spark://127.0.0.1:PORT`` and with ``--engine
  duckdb``; the largest relative difference over the fitted means and covariances and each
  mechanism's noise covariance, expected error, noise and statistic scales
  (spark_cluster.calibration_differences);
* ``audit`` (``--audit-rows``): ``audit --modeling exact --mechanism DauM-G --attack
  likelihood-ratio --audit-samples 2000 --seed 1`` on a table of that many rows sorted by the
  statistics' values (spark_cluster.write_sorted_table: both engines then number the records
  alike and draw the same datasets from one seed), the largest relative difference over every
  number of the two JSON outputs.

Each line also gives the Spark application's executor CPU time and the time from its start to
its executor's registration (from its event log), and the load average when the case ended:
the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "engines"))

import pyarrow.parquet as pq  # noqa: E402
from spark_cluster import (  # noqa: E402
    StandaloneCluster,
    calibration_differences,
    json_difference,
    missing,
    run_cli,
    write_sorted_table,
    write_spark_defaults,
)

PROTECT = "income==>50K"
STATISTICS = (
    "mean:age,mean:education_num,count:marital_status==Never-married,count:sex==Female,"
    "mean:hours_per_week"
)  # the Adult defaults (ADULT_DEFAULT_STATISTICS), which --data FILE does not assume
AUDIT = ["--mechanism", "DauM-G", "--attack", "likelihood-ratio", "--audit-samples", "2000"]


def app_summary(path: Path) -> tuple[float, float]:
    """An application's executor CPU time and the seconds from its start to its first
    executor's registration, from its (plain) event log."""
    cpu, start, added = 0.0, None, None
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerApplicationStart":
            start = e["Timestamp"]
        elif e["Event"] == "SparkListenerExecutorAdded" and added is None:
            added = e["Timestamp"]
        elif e["Event"] == "SparkListenerTaskEnd":
            cpu += (e.get("Task Metrics") or {}).get("Executor CPU Time", 0) / 1e9
    return cpu, (added - start) / 1000 if start and added else float("nan")


def compare(
    cluster: StandaloneCluster,
    env: dict[str, str],
    command: str,
    path: Path,
    extra: list[str],
) -> None:
    """One case: the command through the cluster, then through DuckDB; one line."""
    args = ["--data", str(path), "--protect", PROTECT, "--statistics", STATISTICS, "--seed", "1"]
    args += ["--modeling", "exact", *extra]
    events = cluster.root / "events"
    before = set(events.iterdir())
    spark, t_spark = run_cli(
        command, [*args, "--engine", "spark", "--spark-master", cluster.url], env
    )
    (log,) = set(events.iterdir()) - before
    cpu, executor_start = app_summary(log)
    duck, t_duck = run_cli(command, [*args, "--engine", "duckdb"], env)
    if command == "calibrate":
        diffs = calibration_differences(spark, duck)
        worst = max(diffs, key=diffs.__getitem__)
        moments = max(diffs["means"], diffs["covariances"])
        detail = f" ({worst}; moments {moments:.1e})"
        diff = diffs[worst]
    else:
        diff, detail = json_difference(spark, duck), ""
    rows = pq.ParquetFile(path).metadata.num_rows
    print(
        f"{command:<9} {rows:>11,d} rows  spark cluster {t_spark:7.1f} s (executor CPU "
        f"{cpu:5.1f} s, executor up after {executor_start:4.1f} s)  duckdb {t_duck:6.1f} s  "
        f"ratio {t_spark / t_duck:5.1f}  max rel diff {diff:.1e}{detail}  "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="Adult directory (default: cache/download)")
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 20_000_000])
    ap.add_argument("--audit-rows", type=int, nargs="*", default=[5_000_000])
    ap.add_argument("--cores", type=int, default=2, help="the worker's cores")
    ap.add_argument("--memory", default="2g", help="the worker's (and executor's) memory")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "distprivacy-bench"))
    args = ap.parse_args()
    why = missing()
    if why:
        raise SystemExit(f"cannot start a Spark cluster: {why}")

    from bench_engines import generate

    from distprivacy.datasets import load_data

    adult = load_data(args.data)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for rows in args.rows:
        path = out / f"adult_{rows}.parquet"
        if not path.exists():
            generate(adult, rows, path)
        files.append(path)
    sorted_files = []
    for rows in args.audit_rows:
        path = out / f"adult_sorted_{rows}.parquet"
        if not path.exists():
            write_sorted_table(adult, rows, path, STATISTICS, PROTECT)
        sorted_files.append(path)
    print(
        f"# cluster: one master, one worker ({args.cores} cores, {args.memory}), on "
        f"127.0.0.1; {os.cpu_count()} CPUs here, load {os.getloadavg()[0]:.1f} at the start",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="distprivacy-spark-") as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        with StandaloneCluster(root, cores=args.cores, memory=args.memory) as cluster:
            print(f"# master and worker up in {time.perf_counter() - t:.1f} s", flush=True)
            (root / "events").mkdir()
            conf = write_spark_defaults(
                root / "conf",
                {
                    "spark.executor.memory": args.memory,
                    "spark.eventLog.enabled": "true",
                    "spark.eventLog.dir": (root / "events").as_uri(),
                    "spark.eventLog.compress": "false",
                    "spark.eventLog.rolling.enabled": "false",
                },
            )
            env = dict(cluster.env, SPARK_CONF_DIR=str(conf.parent))
            for path in files:
                compare(cluster, env, "calibrate", path, [])
            for path in sorted_files:
                compare(cluster, env, "audit", path, AUDIT)


if __name__ == "__main__":
    main()
