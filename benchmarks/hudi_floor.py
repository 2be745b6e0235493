"""A second baseline of ``bench_ingest``: the landing's events through Spark's own JSON reader into Hudi.

What any pipeline landing these events in the bronze tables' Hudi layout costs on this machine
before it parses anything the way CDC needs: per topic, Spark's JSON reader (schemas inferred
before the timed runs), each event's row image (``after``, or ``before`` for a delete) with
its op, a unique position and the partition date from ``source.ts_ms``, written by Hudi's
Spark datasource as a ``bulk_insert`` with the bronze tables' options (record key = primary
key + position, partition, zstd, bloom filters, table version 6), ``WRITE_THREADS`` tables at
a time as the ingestion writes them. No validation, dead letters, schema drift, in-batch
deduplication, exactly-once markers or offsets: the floor under the ingestion, and a stand-in
for HoodieStreamer's ``JsonDFSSource`` + SQL transformer, whose bundle is not installable here
(docs/performance.md).
"""

from __future__ import annotations

import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ingestion.cdc.contracts import BRONZE_ORDERING_COLUMN, BRONZE_PARTITION_COLUMN
from ingestion.stream.batch import WRITE_THREADS
from ingestion.stream.bronze import bronze_contracts, bronze_options


@dataclass(frozen=True)
class FloorTable:
    name: str
    rows: DataFrame
    options: dict[str, str]
    landed_bytes: int


def topic_schemas(spark: SparkSession, landing: Path) -> dict[str, StructType]:
    """The schema Spark infers for each landed topic, by topic folder name."""
    return {topic.name: spark.read.option("recursiveFileLookup", "true").json(str(topic)).schema
            for topic in sorted(p for p in (landing / "topics").iterdir() if p.is_dir())}


def floor_tables(spark: SparkSession, landing: Path,
                 schemas: dict[str, StructType] | None = None) -> list[FloorTable]:
    """One frame per landed topic (``<landing>/topics/<server>.<db>.<table>``).

    ``schemas``: each topic's schema (``topic_schemas``); inferred now when not given.
    """
    contracts = bronze_contracts()
    schemas = schemas if schemas is not None else topic_schemas(spark, landing)
    tables = []
    for topic in sorted(p for p in (landing / "topics").iterdir() if p.is_dir()):
        name = topic.name.rsplit(".", 1)[-1]
        contract = contracts[name]
        schema = schemas[topic.name]
        events = spark.read.schema(schema).option("recursiveFileLookup", "true").json(str(topic))
        # a topic without deletes has no ``before`` image: JSON inference types that column as text
        same = schema["before"].dataType == schema["after"].dataType
        image = F.coalesce(F.col("after"), F.col("before")) if same else F.col("after")
        columns = [field.name for field in schema["after"].dataType.fields]
        rows = events.where(image.isNotNull()).select(
            *[image[column].alias(column) for column in columns],
            F.col("op").alias("_cdc_op"),
            F.concat_ws(":", F.input_file_name(), F.monotonically_increasing_id()).alias(BRONZE_ORDERING_COLUMN),
            F.to_date(F.timestamp_millis(F.col("source.ts_ms"))).alias(BRONZE_PARTITION_COLUMN))
        options = {**bronze_options(contract), "hoodie.datasource.write.operation": "bulk_insert"}
        size = sum(f.stat().st_size for f in topic.rglob("*") if f.is_file())
        tables.append(FloorTable(name, rows, options, size))
    return sorted(tables, key=lambda t: -t.landed_bytes)  # the biggest first, as the ingestion writes


def spark_json_to_hudi(tables: list[FloorTable], work: Path) -> float:
    """Seconds to write every table into a fresh directory under ``work`` (removed afterwards)."""
    if work.exists():
        shutil.rmtree(work)

    def write(table: FloorTable) -> None:
        table.rows.write.format("hudi").options(**table.options).mode("overwrite").save(str(work / table.name))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=WRITE_THREADS) as pool:
        list(pool.map(write, tables))
    elapsed = time.perf_counter() - started
    shutil.rmtree(work, ignore_errors=True)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    """The floor as a process of its own (``bench_processes.py --hudi-floor``), JVM start included."""
    from baseline_process import run_baseline

    from ingestion.spark import local_spark_session

    def timed(spark: SparkSession, landing: Path, out: Path, schemas: dict) -> float:
        given = {topic: StructType.fromJson(doc) for topic, doc in schemas.items()}
        return spark_json_to_hudi(floor_tables(spark, landing, given), out)

    return run_baseline(
        argv, __doc__.splitlines()[0], "floor", lambda: local_spark_session("hudi-floor"),
        infer=lambda spark, landing: {topic: schema.jsonValue()
                                      for topic, schema in topic_schemas(spark, landing).items()},
        timed=timed)


if __name__ == "__main__":
    sys.exit(main())
