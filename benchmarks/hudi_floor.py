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
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ingestion.cdc.contracts import BRONZE_ORDERING_COLUMN, BRONZE_PARTITION_COLUMN
from ingestion.stream.batch import WRITE_THREADS
from ingestion.stream.bronze import bronze_contracts, bronze_options


@dataclass(frozen=True)
class FloorTable:
    name: str
    rows: DataFrame
    options: dict[str, str]
    landed_bytes: int


def floor_tables(spark: SparkSession, landing: Path) -> list[FloorTable]:
    """One frame per landed topic (``<landing>/topics/<server>.<db>.<table>``), schemas inferred now."""
    contracts = bronze_contracts()
    tables = []
    for topic in sorted(p for p in (landing / "topics").iterdir() if p.is_dir()):
        name = topic.name.rsplit(".", 1)[-1]
        contract = contracts[name]
        schema = spark.read.option("recursiveFileLookup", "true").json(str(topic)).schema
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
