"""The benchmarks' baseline: plain Spark ``readStream.json -> writeStream.parquet`` of a landing zone.

Used in a running session by ``bench_ingest.py`` (warm runs in the ingestion's JVM) and as a
process of its own by ``bench_processes.py`` (``python benchmarks/plain_spark.py --landing DIR
--out DIR --schemas FILE``: JVM start included, beside a whole ``lakehouse ingest --once``). The
process starts a plain SparkSession: the project's generic settings (loopback, 2 cores, the
driver memory, shuffle partitions), none of the Hudi jars or extensions.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path


def plain_spark(spark, landing: Path, work: Path, schema) -> float:
    """Seconds to copy the landed JSON lines of ``landing`` into parquet under ``work`` (removed after)."""
    if work.exists():
        shutil.rmtree(work)
    started = time.perf_counter()
    query = (spark.readStream.schema(schema).option("recursiveFileLookup", "true").json(str(landing / "topics"))
             .writeStream.format("parquet").option("path", str(work / "out"))
             .option("checkpointLocation", str(work / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    shutil.rmtree(work, ignore_errors=True)
    return elapsed


def landing_schema(spark, landing: Path):
    """The schema Spark infers for every landed JSON line (read once, before any timed run)."""
    return spark.read.option("recursiveFileLookup", "true").json(str(landing / "topics")).schema


def plain_session():
    """A SparkSession with the project's generic settings only (no Hudi, no extra jars)."""
    from pyspark.sql import SparkSession

    from ingestion.spark import DEFAULT_CONFS, prepare_environment, spark_master

    prepare_environment()
    builder = SparkSession.builder.appName("plain-json-to-parquet").master(spark_master(2))
    for key, value in DEFAULT_CONFS.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(argv: list[str] | None = None) -> int:
    from baseline_process import run_baseline
    from pyspark.sql.types import StructType

    return run_baseline(
        argv, __doc__.splitlines()[0], "plain", plain_session,
        infer=lambda spark, landing: landing_schema(spark, landing).jsonValue(),
        timed=lambda spark, landing, out, schema: plain_spark(spark, landing, out, StructType.fromJson(schema)))


if __name__ == "__main__":
    sys.exit(main())
