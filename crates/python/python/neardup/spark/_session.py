"""The Spark session `python -m neardup.spark` runs in, and the settings it adds to a
master's: one place for them, so that the command line and scripts/bench_spark.sh run the
job the same way."""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional

#: The JVM options a local master starts with (see `local_settings`). Without tiered
#: compilation's larger default, the code cache is 48 MB, which Spark's generated code
#: fills within a minute of jobs; then the JVM stops compiling and runs interpreted.
CLIENT_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"


def local_settings(master: str, given: Any, shuffle_partitions: Optional[int] = None) -> Dict[str, str]:
    """What `session` sets beside the settings already `given` (a SparkConf, or anything
    with `contains`): only the keys `given` lacks, so that spark-submit's `--conf` and
    spark-defaults.conf win.

    - `spark.sql.shuffle.partitions`: `shuffle_partitions` when named, else on a local
      master a few per core, not Spark's 200 (each is a task).
    - `spark.driver.memory` on a local master, which runs the executors in the driver's
      JVM: Spark's 1 GiB default runs out on a few hundred MB of text. Half the machine, at
      most 32 GiB.
    - `spark.driver.extraJavaOptions` on a local master: the JVM compiles with its client
      compiler only (`-XX:TieredStopAtLevel=1`, with tiered compilation's code cache). The
      job's JVM code is short-lived and new in every query (Spark generates it per plan);
      on 2 cores the optimising compiler's threads took a third of the run's CPU (10 of
      33 s on 60k records) and the client compiler's code ran the job 8% faster, as fast
      at 180k records. Only where this process starts the JVM: under spark-submit the
      driver is running already.
    - `spark.sql.execution.arrow.maxRecordsPerBatch`: records of up to a few hundred KB
      make Arrow batches of 10,000 (the default) hundreds of MB on both sides of the JVM.
    """
    out: Dict[str, str] = {"spark.ui.showConsoleProgress": "false"}
    local = master.startswith("local")
    if shuffle_partitions:
        out["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    elif local:
        out["spark.sql.shuffle.partitions"] = str(4 * local_cores(master))
    if local:
        out["spark.driver.memory"] = f"{_half_memory_mib()}m"
        out["spark.driver.extraJavaOptions"] = CLIENT_JIT
    out["spark.sql.execution.arrow.maxRecordsPerBatch"] = "2048"
    named = {"spark.sql.shuffle.partitions"} if shuffle_partitions else set()
    return {k: v for k, v in out.items() if k in named or not given.contains(k)}


def session(master: Optional[str] = None, shuffle_partitions: Optional[int] = None, app_name: str = "neardup dedup") -> Any:
    """A SparkSession for the job: `master` (default: spark-submit's, else local[*]) with
    `local_settings`. Local executors run this interpreter (the one with neardup
    installed) unless PYSPARK_PYTHON names another."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = SparkConf()
    master = master or conf.get("spark.master", "local[*]")
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in local_settings(master, conf, shuffle_partitions).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _half_memory_mib() -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2048
    return max(1024, min(total // 2, 32 << 30) >> 20)


def local_cores(master: str) -> int:
    """The cores of a local master: local, local[N], local[*], local[N,F]."""
    inside = master[len("local["):-1].split(",")[0] if master.startswith("local[") else "1"
    return os.cpu_count() or 2 if inside == "*" else max(1, int(inside) if inside.isdigit() else 1)
