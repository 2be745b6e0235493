"""The worker bodies keep PySpark's per-task ``gc.collect()`` off the worker's long-lived objects.

Judge: Python's own collector, asked inside a real Spark task: before a body runs nothing is
frozen (the test unfreezes), after it the objects alive at its start are in the permanent
generation (``gc.get_freeze_count``) and a full collection walks only what was made since.
In the driver (or a test calling a body directly) nothing is frozen.
"""

from __future__ import annotations

import datetime as dt
import gc
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType

from ingestion.stream.kafka_parse import parse_kafka_batches
from ingestion.stream.parse import decode_chunks, parse_file_batches
from ingestion.stream.worker_gc import freeze_worker_objects

INGESTED_AT = dt.datetime(2026, 1, 1)

#: Each worker body, started on no input (what it does first is all that matters here).
BODIES: dict[str, Callable[[], Iterator[pa.RecordBatch]]] = {
    "parse_file_batches": lambda: parse_file_batches(iter([]), "/landing", INGESTED_AT, "fast"),
    "parse_kafka_batches": lambda: parse_kafka_batches(iter([]), INGESTED_AT, mode="fast"),
    "decode_chunks": lambda: decode_chunks(iter([]), "sale", pa.schema([pa.field("salesid", pa.int64())])),
}

RESULT = StructType([StructField("tracked_before", LongType()), StructField("frozen_after", LongType()),
                     StructField("tracked_after", LongType())])


def _in_task(body: Callable[[], Iterator[pa.RecordBatch]]):
    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        gc.unfreeze()  # a reused worker may hold an earlier task's freeze
        tracked_before = len(gc.get_objects())
        for _ in body():
            pass
        frozen = gc.get_freeze_count()
        yield pa.record_batch([pa.array([tracked_before]), pa.array([frozen]), pa.array([len(gc.get_objects())])],
                              names=RESULT.names)
    return task


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_worker_body_freezes_what_is_alive_at_its_start(spark, name: str) -> None:
    [row] = spark.range(1, numPartitions=1).mapInArrow(_in_task(BODIES[name]), RESULT).collect()
    assert row.tracked_before > 10_000  # pyarrow and the ingestion's modules are loaded
    assert row.frozen_after >= row.tracked_before
    # what a collection after the task walks: the objects made since the freeze, a small part
    assert row.tracked_after < row.tracked_before / 10


def test_nothing_is_frozen_outside_a_spark_task() -> None:
    frozen = gc.get_freeze_count()
    assert freeze_worker_objects() is False
    for body in BODIES.values():
        for _ in body():
            pass
    assert gc.get_freeze_count() == frozen
