"""The benchmarks' baseline: plain Spark ``readStream.json -> writeStream.parquet`` of a landing zone.

Used in a running session by ``bench_ingest.py`` (warm runs in the ingestion's JVM) and as a
process of its own by ``bench_processes.py`` (``python benchmarks/plain_spark.py --landing DIR
--out DIR --schema FILE``: JVM start included, beside a whole ``lakehouse ingest --once``). The
process starts a plain SparkSession: the project's generic settings (loopback, 2 cores, the
driver memory, shuffle partitions), none of the Hudi jars or extensions.
"""

from __future__ import annotations

import argparse
import json
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--landing", required=True, help="landing zone (its topics/ folder holds the .json files)")
    parser.add_argument("--out", required=True, help="scratch directory for the parquet copy (removed after)")
    parser.add_argument("--schema", required=True,
                        help="file with the landing's Spark schema as JSON: read if present, else inferred and written "
                             "(an untimed preparation run)")
    args = parser.parse_args(argv)
    from pyspark.sql.types import StructType

    spark = plain_session()
    schema_file = Path(args.schema)
    if schema_file.exists():
        seconds = plain_spark(spark, Path(args.landing), Path(args.out),
                              StructType.fromJson(json.loads(schema_file.read_text())))
        print(json.dumps({"plain_seconds": round(seconds, 2)}), flush=True)
    else:
        schema_file.write_text(json.dumps(landing_schema(spark, Path(args.landing)).jsonValue()))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
