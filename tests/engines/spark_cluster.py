"""A throw-away Spark standalone cluster on 127.0.0.1, started from the pyspark package's own
``bin/spark-class`` (a master and workers, each a JVM in its own process group), for
tests/engines/test_engines_spark_cluster.py and bench/bench_spark_cluster.py.

Everything binds to 127.0.0.1 only (``SPARK_LOCAL_IP`` and ``--host``) on free ports; logs, work
and spill directories go under one temporary directory; readiness is read from the master's
``/json/`` page, bounded in time; :meth:`StandaloneCluster.stop` (also called on any failure
to start, and by the context manager) ends each process group it started: SIGTERM, then SIGKILL
after a grace period.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.engines._spark import find_java  # the java Spark's launcher starts

HOST = "127.0.0.1"


def spark_home() -> Path | None:
    """The pyspark package's directory (it holds ``bin/spark-class`` and the jars), or None."""
    try:
        import pyspark
    except ImportError:
        return None
    home = Path(pyspark.__file__).resolve().parent
    return home if (home / "bin" / "spark-class").is_file() else None


def missing() -> str | None:
    """Why a standalone cluster cannot start here (no pyspark, no Java), or None."""
    if spark_home() is None:
        return "pyspark is not installed (pip install pyspark): no bin/spark-class to start"
    if find_java() is None:
        return "no Java runtime (17 or 21) on PATH or in JAVA_HOME"
    return None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def cluster_env(root: Path) -> dict[str, str]:
    """The environment of every process of the cluster and of its drivers: loopback only, and
    logs, work and spill files under ``root``."""
    env = dict(os.environ)
    env.update(
        SPARK_LOCAL_IP=HOST,
        SPARK_LOG_DIR=str(root / "logs"),
        SPARK_WORKER_DIR=str(root / "work"),
        SPARK_LOCAL_DIRS=str(root / "local"),
        SPARK_HOME=str(spark_home()),
        # no REST submission server (it would listen on the fixed port 6066)
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
    )
    env.pop("SPARK_CONF_DIR", None)  # a user's spark-defaults.conf must not leak in
    for d in ("logs", "work", "local"):
        (root / d).mkdir(parents=True, exist_ok=True)
    return env


class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each.

    Parameters
    ----------
    root : Path
        A temporary directory for the logs, work and spill directories.
    workers, cores : int
        Number of workers, and cores each offers.
    memory : str
        Memory each worker offers to executors (Spark's syntax, e.g. ``"512m"``).
    timeout : float
        Seconds to wait for the master and the workers to be alive.

    Attributes
    ----------
    url : str
        The master's URL, ``spark://127.0.0.1:PORT``.
    env : dict
        The environment a driver of this cluster should run with.
    """

    def __init__(
        self,
        root: Path,
        *,
        workers: int = 1,
        cores: int = 1,
        memory: str = "512m",
        timeout: float = 120.0,
    ) -> None:
        self.root = Path(root)
        self.n_workers, self.cores, self.memory, self.timeout = workers, cores, memory, timeout
        self.env = cluster_env(self.root)
        self.port, self.webui = free_port(), free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.root / "logs" / f"{name}.out", "wb")  # the child keeps its copy
        try:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: the executors it starts too
            )
        finally:
            log.close()
        self.procs.append((name, proc))

    def status(self) -> dict:
        """The master's ``/json/`` page (its state and its workers')."""
        with urllib.request.urlopen(f"http://{HOST}:{self.webui}/json/", timeout=5) as r:
            return json.load(r)

    def log_tail(self, chars: int = 3000) -> str:
        """The end of each process's log, for a failure's message."""
        parts = []
        for name, _ in self.procs:
            text = (self.root / "logs" / f"{name}.out").read_text(errors="replace")
            parts.append(f"--- {name} ---\n{text[-chars:]}")
        return "\n".join(parts)

    def _wait(self, ready, what: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"Spark {name} exited ({proc.returncode}) before {what}:\n"
                        + self.log_tail()
                    )
            try:
                st = self.status()
                if ready(st):
                    return st
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {what} after {self.timeout:.0f} s:\n" + self.log_tail())
            time.sleep(0.25)

    def start(self) -> StandaloneCluster:
        """Start the master, wait for it, start the workers, wait until all are alive."""
        try:
            self._spawn(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--host",
                HOST,
                "--port",
                str(self.port),
                "--webui-port",
                str(self.webui),
            )
            st = self._wait(lambda st: st.get("status") == "ALIVE", "alive master")
            # Spark moves to the next port if another process took this one in the meantime
            self.url = st.get("url") or self.url
            self.port = int(self.url.rsplit(":", 1)[1])
            for k in range(self.n_workers):
                self._spawn(
                    f"worker{k}",
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    HOST,
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--work-dir",
                    str(self.root / "work"),
                    self.url,
                )
            self._wait(
                lambda st: (
                    sum(w.get("state") == "ALIVE" for w in st.get("workers", [])) >= self.n_workers
                ),
                f"{self.n_workers} alive worker(s)",
            )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, grace: float = 15.0) -> None:
        """End every process group this cluster started (workers first): SIGTERM, then
        SIGKILL what is left after ``grace`` seconds."""
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            # the group may outlive its leader (an executor the worker started): kill it all
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def listening_addresses(pids: list[int]) -> set[tuple[str, int]]:
    """The (address, port) pairs on which these processes listen for TCP connections (Linux:
    their socket inodes in /proc/PID/fd matched with /proc/net/tcp and tcp6)."""
    inodes = set()
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir() if fd_dir.exists() else ():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:  # 0A: LISTEN
                continue
            addr, port = f[1].split(":")
            raw = bytes.fromhex(addr)
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # host order
            ip = ipaddress.ip_address(raw)
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
                ip = ip.ipv4_mapped
            out.add((str(ip), int(port, 16)))
    return out


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def write_spark_defaults(conf_dir: Path, settings: dict[str, str]) -> Path:
    """Write ``spark-defaults.conf`` in ``conf_dir`` (for ``SPARK_CONF_DIR``): one
    ``key value`` a line, as Spark reads it."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "spark-defaults.conf"
    path.write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
    return path


def write_sorted_table(
    adult: pd.DataFrame, rows: int, path: Path, statistics: str, protect: str, seed: int = 0
) -> tuple[int, int]:
    """Write ``rows`` jittered resamples of the Adult records (only the columns ``statistics``
    and ``protect`` read) to a Parquet file of 8 row groups, sorted by the statistics'
    per-record values.

    Sorted so that the two SQL engines number each stratum's records the same way: DuckDB
    numbers them in file order, Spark by their values (distprivacy.engines._sql), and in a
    file sorted by the values the two orders agree (ties are equal values). One seed then draws
    the same Monte-Carlo subsets on both, and ``audit`` can be compared between them. (A file
    sorted by its values also takes the exact moments' second, centred scan.)

    Returns
    -------
    tuple of (int, int)
        The file's size in bytes and its number of row groups.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from distprivacy.query import Query
    from distprivacy.spec import Predicate

    query = Query.parse(statistics)
    cols = sorted(
        {c for s in query.statistics for c in s.columns()} | {Predicate.parse(protect).column}
    )
    rng = np.random.default_rng(seed)
    df = adult[cols].astype(
        {c: "category" for c in cols if not pd.api.types.is_numeric_dtype(adult[c])}
    )  # categories: a cheap resample and sort of the text columns
    df = df.iloc[rng.integers(0, len(adult), rows)].reset_index(drop=True)
    if "age" in df:
        df["age"] = np.clip(df["age"] + rng.integers(-2, 3, rows), 17, 90)
    for c in ("capital_gain", "capital_loss", "fnlwgt"):
        if c in df:
            df[c] = np.round(df[c] * np.exp(rng.normal(0.0, 0.1, rows))).astype(np.int64)
    order = np.lexsort(query.record_matrix(df).T[::-1])  # the first statistic's value first
    df = df.iloc[order].reset_index(drop=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.cast(
        pa.schema(
            [
                pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f
                for f in table.schema
            ]
        )
    )
    pq.write_table(table, path, row_group_size=-(-rows // 8), compression="snappy")
    return path.stat().st_size, pq.ParquetFile(path).num_row_groups


# -- Running the command line and comparing its --json outputs ----------------------------------


def run_cli(
    command: str, args: list[str], env: dict[str, str], timeout: float = 900.0
) -> tuple[dict, float]:
    """``python3 -m distprivacy COMMAND ARGS --json`` in a fresh process (``calibrate`` with
    ``--include-model``: the fitted moments are what the engines are compared on): its JSON
    output and its wall time in seconds (an AssertionError with the end of its stderr if it
    fails)."""
    t = time.perf_counter()
    extra = ["--include-model"] if command == "calibrate" else []
    proc = subprocess.run(
        [sys.executable, "-m", "distprivacy", command, *args, "--json", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise AssertionError(
            f"distprivacy {command} {' '.join(args)} exited {proc.returncode}:\n"
            f"{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout), wall


def _rel(a: Any, b: Any, scale: str = "max") -> float:
    """Largest |a − b| relative to max |b| (``scale="max"``, for a vector or a matrix whose
    small entries carry the large ones' rounding) or entrywise (``"entry"``)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise AssertionError(f"shapes differ: {x.shape} and {y.shape}")
    if x.size == 0:
        return 0.0
    d = np.abs(x - y)
    if scale == "entry":
        return float(np.max(np.where(d == 0, 0.0, d / np.maximum(np.abs(y), 1e-300))))
    top = float(np.max(np.abs(y)))
    return float(np.max(d)) / top if top > 0 else float(np.max(d))


def calibration_differences(got: dict, ref: dict) -> dict[str, float]:
    """The largest relative differences between two ``calibrate --json`` outputs on the same
    data and options (another engine): the fitted means (entrywise), covariances (each entry
    relative to √(S_ii S_jj)), each mechanism's noise covariance (relative to its largest
    entry), expected L2 error, noise variances (the squared noise scales, relative to the
    largest) and statistic scales (the sampling SDs s_k).

    The mechanisms, the best one and the inapplicable ones must be the same (AssertionError
    otherwise). Noise directions and factors are not compared: where eigenvalues nearly tie,
    their eigenvectors turn by much more than the rounding that moved them, while the noise
    covariance they make stays put. Nor the scales themselves: OptM-G's smallest noise
    variances are 10⁻¹² to 10⁻¹⁴ of its largest, and their square roots magnify the SDP
    solver's differences (on 200,000 Adult-like rows the variances differed by 8e-12 of the
    largest, the scales by 3e-9 of the largest)."""
    out = {"means": _rel(got["model"]["means"], ref["model"]["means"], "entry")}
    worst = 0.0
    for Sa, Sb in zip(got["model"]["covariances"], ref["model"]["covariances"], strict=True):
        Sa, Sb = np.asarray(Sa), np.asarray(Sb)
        d = np.sqrt(np.outer(np.diag(Sb), np.diag(Sb)))
        worst = max(worst, float(np.max(np.abs(Sa - Sb) / d)))
    out["covariances"] = worst
    mg = {m["name"]: m for m in got["mechanisms"]}
    mr = {m["name"]: m for m in ref["mechanisms"]}
    if list(mg) != list(mr):
        raise AssertionError(f"mechanisms differ: {list(mg)} and {list(mr)}")
    if got["best"]["mechanism"] != ref["best"]["mechanism"]:
        raise AssertionError(f"best: {got['best']['mechanism']} and {ref['best']['mechanism']}")
    if sorted(got["not_applicable"]) != sorted(ref["not_applicable"]):
        raise AssertionError("the inapplicable mechanisms differ")
    for key in ("noise_covariance", "expected_l2_error", "statistic_scales"):
        out[key] = max(_rel(mg[name][key], mr[name][key]) for name in mr)
    out["noise_variances"] = max(
        _rel(np.square(mg[name]["noise_scales"]), np.square(mr[name]["noise_scales"]))
        for name in mr
    )
    return out


def json_difference(got: Any, ref: Any, skip: tuple[str, ...] = ("engine",)) -> float:
    """The largest relative difference between the numbers of two JSON documents of the same
    shape, keys and texts (AssertionError otherwise; the keys in ``skip`` are not compared)."""
    if isinstance(ref, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(ref):
            raise AssertionError(f"keys differ: {sorted(ref)}")
        return max(
            (json_difference(got[k], ref[k], skip) for k in ref if k not in skip), default=0.0
        )
    if isinstance(ref, list):
        if not isinstance(got, list) or len(got) != len(ref):
            raise AssertionError(f"lists differ: {got!r:.80} and {ref!r:.80}")
        return max(
            (json_difference(a, b, skip) for a, b in zip(got, ref, strict=True)), default=0.0
        )
    if isinstance(ref, bool) or not isinstance(ref, int | float):
        if got != ref:
            raise AssertionError(f"values differ: {got!r:.80} and {ref!r:.80}")
        return 0.0
    if isinstance(got, bool) or not isinstance(got, int | float):
        raise AssertionError(f"values differ: {got!r:.80} and {ref!r:.80}")
    return abs(got - ref) / abs(ref) if ref != 0 else abs(got)


# -- What an application did, from its Spark event log ---------------------------------------


def event_log(path: Path) -> dict[str, Any]:
    """What one application's (uncompressed, unrolled) event log says: its master, the hosts
    of its executors, the largest memory an executor's block manager had for execution and
    storage (bytes), the number of tasks of each stage, and the bytes its tasks spilled (memory
    and disk)."""
    info: dict[str, Any] = {"master": None, "executor_hosts": [], "stage_tasks": []}
    info["executor_memory"] = info["memory_spilled"] = info["disk_spilled"] = 0
    for line in path.read_text().splitlines():
        e = json.loads(line)
        kind = e["Event"]
        if kind == "SparkListenerEnvironmentUpdate":
            info["master"] = dict(e["Spark Properties"]).get("spark.master")
        elif kind == "SparkListenerExecutorAdded":
            info["executor_hosts"].append(e["Executor Info"]["Host"])
        elif kind == "SparkListenerBlockManagerAdded":
            if e["Block Manager ID"]["Executor ID"] != "driver":
                info["executor_memory"] = max(info["executor_memory"], e["Maximum Memory"])
        elif kind == "SparkListenerStageCompleted":
            info["stage_tasks"].append(e["Stage Info"]["Number of Tasks"])
        elif kind == "SparkListenerTaskEnd":
            metrics = e.get("Task Metrics") or {}
            info["memory_spilled"] += metrics.get("Memory Bytes Spilled", 0)
            info["disk_spilled"] += metrics.get("Disk Bytes Spilled", 0)
    return info
