"""A topic whose partition set changes under a bronze table, reported when it happens.

Silver orders a key's changes by Kafka offset, which compares only within one partition of
one topic. Debezium keys its records, so a key stays in one partition until the topic's
partition count changes, the topic is recreated, or the table moves to another topic
(``crm.user`` lists two); from then on a key's old and new changes sit in different
partitions and their offsets order nothing.

The offset marks (``ingestion.stream.late_copies``) say which (topic, partition) pairs a
table has committed. When a batch brings one the table has never committed, beside others
it has, the batch's keys in it are looked up among the stored rows of the other partitions
(one scan of the table, only in that batch). Keys found there have *moved*: the batch is
written as usual (bronze keeps every event), the ``micro_batch`` line counts them
(``moved_keys``) and a warning names the table, the partitions and the runbook section. The
dbt test ``assert_one_kafka_partition_per_key`` stays the complete check: keys that move in
later batches are found there.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ingestion.stream.late_copies import PARTITION, TOPIC, HighWater, Partition

OP = "_cdc_op"
TRUNCATE = "t"  # a truncate has no key: it belongs to no partition's key order


def new_partitions(mark: HighWater, offsets: dict[Partition, tuple[int, int]]) -> list[Partition]:
    """The batch's partitions the table never committed, when it has committed others."""
    if not mark.marks:
        return []
    return sorted(partition for partition in offsets if partition not in mark.marks)


def moved_keys(rows: DataFrame, path: str, primary_key: Sequence[str], new: list[Partition]) -> dict[Partition, int]:
    """Per new partition, how many of its keys in ``rows`` have stored changes in another
    (topic, partition) of the table at ``path``."""
    if not new:
        return {}
    primary_key = list(primary_key)
    in_new = reduce(lambda a, b: a | b, [(F.col(TOPIC) == topic) & (F.col(PARTITION) == partition)
                                         for topic, partition in new])
    arriving = rows.where(in_new & (F.col(OP) != TRUNCATE)).select(*primary_key, TOPIC, PARTITION).distinct()
    stored = rows.sparkSession.read.format("hudi").load(path).where(F.col(OP) != TRUNCATE) \
        .select(*primary_key, F.col(TOPIC).alias("__topic"), F.col(PARTITION).alias("__partition")).distinct()
    found = arriving.join(stored, on=primary_key) \
        .where(~(F.col(TOPIC).eqNullSafe(F.col("__topic")) & F.col(PARTITION).eqNullSafe(F.col("__partition")))) \
        .select(*primary_key, TOPIC, PARTITION).distinct() \
        .groupBy(TOPIC, PARTITION).agg(F.count(F.lit(1)).alias("keys")).collect()
    return {(str(r[TOPIC]), int(r[PARTITION])): int(r["keys"]) for r in found}


def describe(table: str, mark: HighWater, moved: dict[Partition, int]) -> str:
    """The warning for keys that moved partitions."""
    before = ", ".join(f"{topic}[{partition}]" for topic, partition in sorted(mark.marks))
    now = ", ".join(f"{topic}[{partition}] ({count} keys)" for (topic, partition), count in sorted(moved.items()))
    return (f"bronze.{table}: keys with changes committed from {before} now arrive in {now}: the topic's "
            "partition count changed, or the topic was recreated or renamed. Kafka offsets do not order a "
            "key's changes across partitions, so dbt's assert_one_kafka_partition_per_key will fail; rebuild "
            "the table from the new topic (docs/runbook.md, 'assert_one_kafka_partition_per_key fails')")
