"""Late copies: rows at or below what a Kafka partition already committed to a bronze table.

Bronze keeps one row per event (record key = primary key + ``_cdc_position``), and the copy
it keeps must be the **first** occurrence, the lowest Kafka offset: after a Connect crash
the same event comes again at a higher offset, and silver orders a key's changes by offset
(``cdc_order``). Inserting with ``hoodie.datasource.insert.dup.policy=drop`` keeps the
first *committed* copy, which is the lowest offset only while each (topic, partition) is
committed in offset order. The Kafka source commits offset ranges in order; landed files
do not: Spark's file source takes new files by modification time, so a file re-uploaded
or backfilled after files with higher offsets arrives late.

Each bronze commit records the highest offset committed per (topic, partition) in its
metadata (``lakehouse.offsets``, the *high-water mark*). A batch holding rows at or below
it is written as an ``upsert`` of only the rows that are new or that replace a stored copy
of the same event at a higher offset of the same partition; the other rows are dropped as
``insert`` would drop them. The same (topic, partition, offset) stored for another event
means the offsets were reused (a recreated topic, a cluster switch): offset order is then
meaningless, and the batch stops with ``ReusedOffsetsError`` (docs/runbook.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ingestion.cdc.contracts import BRONZE_PARTITION_COLUMN
from ingestion.errors import IngestionError

TOPIC, PARTITION, OFFSET = "_cdc_topic", "_cdc_kafka_partition", "_cdc_kafka_offset"
#: Stored rows shown in a ``ReusedOffsetsError``.
EXAMPLES = 3
#: Options of a commit holding late rows (``resolve_late`` chose which replace stored copies). The
#: drop policy must go: Hudi turns an upsert with it back into an insert that drops stored keys.
LATE_ROWS_OPTIONS = {"hoodie.datasource.write.operation": "upsert", "hoodie.datasource.insert.dup.policy": "none"}
#: The mark of a write that may hold any offset (a dead-letter replay): every row counts as late.
ANY_OFFSET = (1 << 63) - 1

Partition = tuple[str, int]


class ReusedOffsetsError(IngestionError, RuntimeError):
    """A landed event sits at a (topic, partition, offset) bronze already holds for another event."""


@dataclass(frozen=True)
class HighWater:
    """The highest Kafka offset committed to one table, per (topic, partition)."""

    marks: dict[Partition, int] = field(default_factory=dict)

    def to_json(self) -> str:
        doc: dict[str, dict[str, int]] = {}
        for (topic, partition), offset in sorted(self.marks.items()):
            doc.setdefault(topic, {})[str(partition)] = offset
        return json.dumps(doc, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> HighWater | None:
        if not text:
            return None
        try:
            doc = json.loads(text)
            return cls({(str(topic), int(partition)): int(offset)
                        for topic, partitions in doc.items() for partition, offset in partitions.items()})
        except (ValueError, TypeError, AttributeError):
            return None

    def merged(self, ranges: dict[Partition, tuple[int, int]]) -> HighWater:
        """This mark raised by a batch's (min, max) offset per partition."""
        marks = dict(self.marks)
        for key, (_, high) in ranges.items():
            marks[key] = max(high, marks.get(key, high))
        return HighWater(marks)

    def late(self, ranges: dict[Partition, tuple[int, int]]) -> dict[Partition, tuple[int, int]]:
        """The partitions of a batch with rows at or below the mark: (lowest batch offset, mark)."""
        return {key: (low, self.marks[key]) for key, (low, _) in ranges.items()
                if key in self.marks and low <= self.marks[key]}


def batch_offsets(rows: DataFrame) -> dict[Partition, tuple[int, int]]:
    """(lowest, highest) offset per (topic, partition) of ``rows`` (one aggregation; rows without an
    offset are left out). The stream takes these from the parse instead (``parse.offset_ranges``)."""
    found = rows.groupBy(TOPIC, PARTITION).agg(F.min(OFFSET).alias("low"), F.max(OFFSET).alias("high")).collect()
    return {(str(r[TOPIC]), int(r[PARTITION])): (int(r["low"]), int(r["high"]))
            for r in found if r[TOPIC] is not None and r[PARTITION] is not None and r["low"] is not None}


def stored_high_water(spark: SparkSession, path: str) -> HighWater:
    """The mark recomputed from the table's rows (a table written before marks were recorded)."""
    found = spark.read.format("hudi").load(path).groupBy(TOPIC, PARTITION).agg(F.max(OFFSET).alias("high")) \
        .collect()
    return HighWater({(str(r[TOPIC]), int(r[PARTITION])): int(r["high"]) for r in found
                      if r[TOPIC] is not None and r[PARTITION] is not None and r["high"] is not None})


def _in_ranges(frame: DataFrame, late: dict[Partition, tuple[int, int]]) -> Column:
    """Rows of ``frame`` in a late partition between its lowest batch offset and its mark."""
    conditions = [(frame[TOPIC] == topic) & (frame[PARTITION] == partition) & frame[OFFSET].between(low, mark)
                  for (topic, partition), (low, mark) in sorted(late.items())]
    return reduce(lambda a, b: a | b, conditions)


@dataclass
class LateResolution:
    """What a batch with late rows writes (an upsert of ``rows``), and the counts it reports."""

    rows: DataFrame
    late_rows: int  # rows at or below the mark
    replaced: int  # stored copies replaced by a lower-offset copy of the same event
    cache: DataFrame  # what ``rows`` is read from: unpersist after the write

    def release(self) -> None:
        self.cache.unpersist()


def resolve_late(rows: DataFrame, path: str, keys: list[str], late: dict[Partition, tuple[int, int]],
                 table: str) -> LateResolution:
    """The rows of a batch with late rows to ``upsert``: the new ones, and those replacing a stored
    copy at a higher offset of the same partition. Raises ``ReusedOffsetsError`` when a late row's
    (topic, partition, offset) holds another event in bronze. ``rows`` is one row per record key."""
    spark = rows.sparkSession
    stored = spark.read.format("hudi").load(path)
    late_rows = rows.where(_in_ranges(rows, late))
    at_offsets = stored.where(_in_ranges(stored, late)).select(*keys, TOPIC, PARTITION, OFFSET)
    clash = late_rows.alias("new").join(at_offsets.alias("old"), on=[TOPIC, PARTITION, OFFSET]) \
        .where(~reduce(lambda a, b: a & b, [F.col(f"new.{k}").eqNullSafe(F.col(f"old.{k}")) for k in keys])) \
        .select(TOPIC, PARTITION, OFFSET, *(F.col(f"new.{k}").alias(f"new_{k}") for k in keys),
                *(F.col(f"old.{k}").alias(f"stored_{k}") for k in keys)).limit(EXAMPLES).collect()
    if clash:
        first = clash[0]
        raise ReusedOffsetsError(
            f"bronze.{table}: offset {first[OFFSET]} of {first[TOPIC]} partition {first[PARTITION]} already "
            f"holds another event (stored {[first[f'stored_{k}'] for k in keys]}, landed "
            f"{[first[f'new_{k}'] for k in keys]}); {len(clash)}+ such offsets: the topic was recreated or "
            "its offsets reused, so Kafka offsets no longer order its events. Rebuild the table from the new "
            "topic (docs/runbook.md, 'Reused Kafka offsets')")
    # the stored copies of the batch's events: same record key, in the batch's date partitions
    dates = [r[0] for r in rows.select(BRONZE_PARTITION_COLUMN).distinct().collect()]
    held = stored.where(F.col(BRONZE_PARTITION_COLUMN).isin(dates)) \
        .select(*keys, F.col(TOPIC).alias("__topic"), F.col(PARTITION).alias("__partition"),
                F.col(OFFSET).alias("__offset"), F.lit(True).alias("__stored"))
    joined = rows.join(held, on=keys, how="left")
    replaces = joined["__stored"].isNotNull() & joined[TOPIC].eqNullSafe(joined["__topic"]) & \
        joined[PARTITION].eqNullSafe(joined["__partition"]) & (joined["__offset"] > joined[OFFSET])
    kept = joined.where(joined["__stored"].isNull() | replaces).withColumn("__replaces", replaces) \
        .persist(StorageLevel.MEMORY_AND_DISK)
    counts = {bool(r["__replaces"]): int(r["n"]) for r in
              kept.groupBy("__replaces").agg(F.count(F.lit(1)).alias("n")).collect()}
    return LateResolution(kept.select(*rows.columns), late_rows.count(), counts.get(True, 0), kept)
