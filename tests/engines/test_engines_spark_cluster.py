"""The Spark engine on a cluster (issue 31): a standalone master and one worker, started from the
pyspark package's own scripts on 127.0.0.1 (tests/engines/spark_cluster.py), run what
``calibrate`` and ``audit --engine spark --spark-master spark://…`` compute on a million-row
Parquet file, and DuckDB computes the same on the same file (1e-9 relative).

The worker offers one core and 512 MiB; the executor takes it all and keeps a tenth of what
Spark does not reserve for execution and storage (``spark.memory.fraction 0.1``: 21.2 MiB,
against 40 MiB of statistic values in the larger stratum), so the scans run partition by
partition and the audit's sort of that stratum spills — all read from the applications' event
logs. The settings reach Spark as a user's
would: a ``spark-defaults.conf`` in ``SPARK_CONF_DIR``. The executors are given no Python
(``PYSPARK_PYTHON`` names a missing file): the engine sends them SQL only.

Skipped without pyspark or a Java runtime; marked ``spark_cluster`` and ``slow``: 103 s of CPU,
of which the executors' tasks took 15 s (the rest: the JVMs of the master, the worker, two
drivers and two executors, the table, DuckDB), and 6 minutes of wall time on a shared 2-core
machine at load average 6-10.
``python3 -m pytest -m spark_cluster`` runs these alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from spark_cluster import (
    StandaloneCluster,
    calibration_differences,
    event_log,
    json_difference,
    listening_addresses,
    missing,
    run_cli,
    write_sorted_table,
    write_spark_defaults,
)

REASON = missing()
pytestmark = [
    pytest.mark.spark_cluster,
    pytest.mark.slow,
    pytest.mark.skipif(REASON is not None, reason=f"no Spark standalone cluster: {REASON}"),
]

STATISTICS = (
    "mean:age,mean:education_num,count:marital_status==Never-married,count:sex==Female,"
    "mean:hours_per_week,sum:capital_gain,proportion:race==White"
)
PROTECT = "income==>50K"
ROWS = 1_000_000
RTOL = 1e-9
COMMON = ["--protect", PROTECT, "--statistics", STATISTICS, "--seed", "1", "--modeling", "exact"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The master and its worker, stopped (process groups ended) after the module, failed or
    not."""
    with StandaloneCluster(tmp_path_factory.mktemp("spark"), workers=1, cores=1) as c:
        yield c


@pytest.fixture(scope="module")
def table(adult, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("table") / "adult_sorted.parquet"
    write_sorted_table(adult, ROWS, path, STATISTICS, PROTECT)
    return path


@pytest.fixture(scope="module")
def driver_env(cluster) -> dict[str, str]:
    """A driver's environment: the cluster's (loopback only), its Spark settings in
    SPARK_CONF_DIR, and no Python for the executors."""
    events = cluster.root / "events"
    events.mkdir()
    conf = write_spark_defaults(
        cluster.root / "conf",
        {
            "spark.executor.memory": "512m",  # all the worker offers (1 GiB by default)
            "spark.memory.fraction": "0.1",  # 21.2 MiB for execution and storage
            "spark.sql.files.maxPartitionBytes": "128k",  # the 1 MB file in one task per group
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
        },
    )
    env = dict(cluster.env)
    env["SPARK_CONF_DIR"] = str(conf.parent)
    env["PYSPARK_PYTHON"] = "/nonexistent/python3"  # what executors would start for Python code
    return env


def on_cluster(
    cluster, env: dict[str, str], command: str, data: str, args: list[str]
) -> tuple[dict, dict]:
    """Run ``command --data DATA ARGS --engine spark`` on the cluster: its JSON and its
    application's event log (checked to be this cluster's, its executors on 127.0.0.1)."""
    events = cluster.root / "events"
    before = set(events.iterdir())
    args = ["--data", data, *args, "--engine", "spark", "--spark-master", cluster.url]
    out, _ = run_cli(command, args, env)
    (log,) = set(events.iterdir()) - before
    info = event_log(log)
    assert info["master"] == cluster.url
    assert info["executor_hosts"] and set(info["executor_hosts"]) == {"127.0.0.1"}
    return out, info


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
def test_the_cluster_listens_on_loopback_only(cluster):
    """One alive worker of 1 core and 512 MiB, registered from 127.0.0.1; the master and the
    worker listen on 127.0.0.1 only (no web UI or REST server on another interface)."""
    status = cluster.status()
    assert status["status"] == "ALIVE" and cluster.url.startswith("spark://127.0.0.1:")
    assert [(w["host"], w["cores"], w["memory"]) for w in status["workers"]] == [
        ("127.0.0.1", 1, 512)
    ]
    listening = listening_addresses([p.pid for _, p in cluster.procs])
    assert ("127.0.0.1", cluster.port) in listening and ("127.0.0.1", cluster.webui) in listening
    assert {ip for ip, _ in listening} == {"127.0.0.1"}, listening


def test_calibrate_on_a_standalone_cluster_equals_duckdb(cluster, table, driver_env):
    """The exact model's moments, every mechanism's noise covariance, expected error, noise
    variances and statistic scales: the same to 1e-9 relative, the file (named by a file://
    URL, as a shared file system's would be) scanned in several tasks (one per row group)."""
    spark, info = on_cluster(cluster, driver_env, "calibrate", table.as_uri(), COMMON)
    duck, _ = run_cli(
        "calibrate", ["--data", str(table), *COMMON, "--engine", "duckdb"], driver_env
    )
    assert spark["engine"] == "spark" and duck["engine"] == "duckdb"
    diffs = calibration_differences(spark, duck)
    assert diffs and all(d <= RTOL for d in diffs.values()), diffs
    assert max(info["stage_tasks"]) >= 8, info["stage_tasks"]


def test_audit_on_a_standalone_cluster_equals_duckdb(cluster, table, driver_env):
    """The audit's attacks on datasets drawn through the cluster: the same draws as DuckDB's
    (the file is sorted, so both number each stratum alike), hence the same thresholds, rates,
    intervals and ε bounds to 1e-9; drawing them sorted each stratum beyond the executor's
    memory, which spilled."""
    args = [
        *COMMON,
        "--mechanism",
        "DauM-G",
        "--attack",
        "likelihood-ratio",
        "--audit-samples",
        "2000",
    ]
    spark, info = on_cluster(cluster, driver_env, "audit", str(table), args)
    duck, _ = run_cli("audit", ["--data", str(table), *args, "--engine", "duckdb"], driver_env)
    assert [a["mechanism"] for a in spark["audits"]] == ["DauM-G"]
    assert spark["audits"][0]["attacks"][0]["n_test"] > 0
    assert json_difference(spark, duck) <= RTOL
    # the executor's memory was smaller than the values of the larger stratum it sorted (at
    # least half the rows, 8 bytes per statistic)
    assert 0 < info["executor_memory"] < ROWS / 2 * 8 * len(spark["statistics"]), info
    assert info["memory_spilled"] + info["disk_spilled"] > 0, info
