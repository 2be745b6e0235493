"""Spark execution: executors key, merge and write base files with pyarrow; the driver only plans.

- keys: ``mapInArrow`` computes ``_hoodie_record_key`` / ``_hoodie_partition_path`` with the same
  Arrow code as in-process writes (one implementation of Hudi's key generators).
- bulk_insert, and insert into a table without base files: one ``mapInArrow`` pass; each task
  streams its rows into one file per partition path (rolled at the maximum file size).
- everything else: dedupe (window), tag against the keys of the latest slices of the touched
  partitions (a join: Hudi's SIMPLE index), plan on the driver from counts only, then
  ``groupBy(file group).applyInArrow`` merges and writes each file group on an executor.
Memory on the driver is bounded by the number of partitions and file groups, not rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ingestion.hoodie.basefile import (
    base_file_name,
    ensure_partition_metadata,
    partition_dir,
)
from ingestion.hoodie.config import TableConfig
from ingestion.hoodie.engine_common import TAGGED_FILE_ID, ExecutionPlan, average_record_size
from ingestion.hoodie.keys import PARTITION_PATH, RECORD_KEY, with_keys
from ingestion.hoodie.merge import BUCKET, STAT_SCHEMA, BucketPlan, WriteContext, write_bucket
from ingestion.hoodie.planner import SizingOptions, plan_write
from ingestion.hoodie.schema import IS_DELETED
from ingestion.hoodie.slice_writer import SliceWriter

STAT_DDL = (
    "partition_path string, file_id string, path string, prev_commit string, num_writes bigint, "
    "num_inserts bigint, num_update_writes bigint, num_deletes bigint, size bigint"
)
_FRACTION_MODULUS = 1_000_003


def _task_identity() -> tuple[int, str]:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return 0, "0-0-0"
    return context.partitionId(), f"{context.partitionId()}-{context.stageId()}-{context.taskAttemptId()}"


def _add_keys(config: TableConfig):
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from with_keys(pa.Table.from_batches([batch]), config).to_batches()

    return run


def _write_new_files(config: TableConfig, ctx: WriteContext, max_file_bytes: int):
    """mapInArrow function: stream a task's rows into new file groups, one per partition path."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_id, token = _task_identity()
        writers: dict[str, SliceWriter] = {}
        stats: list[dict] = []
        for chunk in _rechunk(batches, 131_072):
            keyed = with_keys(chunk, config)
            partitions = keyed.column(PARTITION_PATH)
            for partition in pc.unique(partitions).to_pylist():
                rows = keyed.filter(pc.equal(partitions, partition))
                writer = writers.get(partition)
                if writer is None:
                    ensure_partition_metadata(ctx.base_path, partition, ctx.instant)
                    writer = writers[partition] = _new_slice(ctx, partition, task_id, token)
                writer.write(rows)
                if writer.bytes_written >= max_file_bytes:
                    stats.append(writer.close())
                    writers[partition] = _new_slice(ctx, partition, task_id, token)
        stats.extend(w.close() for w in writers.values() if w.num_rows)
        for writer in writers.values():
            writer.discard_if_empty()
        yield pa.RecordBatch.from_pylist(stats, schema=STAT_SCHEMA)

    return run


def _rechunk(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Regroup Spark's small Arrow batches into tables of about ``rows`` rows."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(pending)
            pending, count = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def _new_slice(ctx: WriteContext, partition: str, task_id: int, token: str) -> SliceWriter:
    file_id = f"{uuid.uuid4()}-0"
    name = base_file_name(file_id, token, ctx.instant)
    path = Path(partition_dir(ctx.base_path, partition)) / name
    return SliceWriter(path, partition, file_id, ctx, task_id)


def _write_groups(buckets: dict[str, BucketPlan], ctx: WriteContext):
    """applyInArrow function: merge and write one file group."""

    def run(rows: pa.Table) -> pa.Table:
        task_id, token = _task_identity()
        file_id = rows.column(BUCKET)[0].as_py()
        helpers = (BUCKET, TAGGED_FILE_ID, "_hoodie_range_file_id", "_hoodie_fraction")
        drop = [c for c in helpers if c in rows.column_names]
        stat = write_bucket(rows.drop_columns(drop), buckets[file_id], ctx, task_id, token)
        return pa.Table.from_pylist([stat], schema=STAT_SCHEMA)

    return run


class SparkEngine:
    def __init__(self, table, sizing: SizingOptions) -> None:
        self.table = table
        self.sizing = sizing

    def schema_of(self, df) -> pa.Schema:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(df.schema, timezone="UTC")

    def _keyed(self, df):
        from pyspark.sql.types import StringType, StructField, StructType

        fields = [f for f in df.schema.fields if f.name not in (RECORD_KEY, PARTITION_PATH)]
        schema = StructType([*fields, StructField(RECORD_KEY, StringType()), StructField(PARTITION_PATH, StringType())])
        return df.mapInArrow(_add_keys(self.table.config), schema)

    @staticmethod
    def _dedupe(keyed, ctx: WriteContext):
        """One row per (partition path, record key): greatest ordering value for upserts, else the last."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        order = [F.monotonically_increasing_id().desc()]
        if ctx.operation == "upsert" and ctx.precombine_field:
            order.insert(0, F.col(ctx.precombine_field).desc_nulls_last())
        window = Window.partitionBy(PARTITION_PATH, RECORD_KEY).orderBy(*order)
        return keyed.withColumn("_hoodie_rank", F.row_number().over(window)).filter("_hoodie_rank = 1").drop(
            "_hoodie_rank"
        )

    def plan(self, df, ctx: WriteContext, drop_duplicates: bool) -> ExecutionPlan | None:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        from ingestion.hoodie.writer import workload_profile

        empty_table = ctx.operation in ("insert", "bulk_insert") and not self.table.latest_base_files()
        if (ctx.operation == "bulk_insert" and not drop_duplicates) or empty_table:
            # No stored keys to look up and no small files to fill: one pass writes new file groups.
            source = df
            if drop_duplicates:
                source = self._dedupe(self._keyed(df), ctx).drop(RECORD_KEY, PARTITION_PATH)
            return ExecutionPlan(partitions=[], workload=workload_profile({}, {}), payload=("fast", source))
        keyed = self._keyed(df)
        if ctx.operation in ("upsert", "delete") or drop_duplicates:
            keyed = self._dedupe(keyed, ctx)
        keyed = keyed.persist(StorageLevel.MEMORY_AND_DISK)
        partitions = sorted(r[0] for r in keyed.select(PARTITION_PATH).distinct().collect())
        latest_list = self.table.latest_base_files(partitions=partitions) if partitions else []
        latest: dict[str, list] = {}
        for base_file in latest_list:
            latest.setdefault(base_file.partition_path, []).append(base_file)
        spark = df.sparkSession
        need_index = ctx.operation in ("upsert", "delete") or drop_duplicates
        if need_index and latest_list:
            index = (
                spark.read.schema(f"{RECORD_KEY} string, {PARTITION_PATH} string, _hoodie_file_name string")
                .option("mergeSchema", "false")
                .parquet(*[bf.path for bf in latest_list])
                .select(
                    F.col(RECORD_KEY),
                    F.col(PARTITION_PATH),
                    F.regexp_extract("_hoodie_file_name", r"^(.+)_\d+-\d+-\d+_\d{17}\.parquet$", 1).alias(
                        TAGGED_FILE_ID
                    ),
                )
            )
            tagged = keyed.join(index, [RECORD_KEY, PARTITION_PATH], "left")
        else:
            tagged = keyed.withColumn(TAGGED_FILE_ID, F.lit(None).cast("string"))
        if drop_duplicates and ctx.operation in ("insert", "bulk_insert"):
            tagged = tagged.filter(F.col(TAGGED_FILE_ID).isNull())
        if ctx.operation == "delete":
            tagged = tagged.filter(F.col(TAGGED_FILE_ID).isNotNull())
        elif IS_DELETED in tagged.columns:
            tagged = tagged.filter(~F.coalesce(F.col(IS_DELETED), F.lit(False)) | F.col(TAGGED_FILE_ID).isNotNull())
        tagged = tagged.persist(StorageLevel.MEMORY_AND_DISK)
        counts = tagged.groupBy(PARTITION_PATH, TAGGED_FILE_ID).count().collect()
        keyed.unpersist()
        insert_counts: dict[str, int] = {}
        update_counts: dict[str, int] = {}
        updated: dict[str, set[str]] = {}
        for row in counts:
            partition, file_id, count = row[0], row[1], row[2]
            if file_id is None:
                insert_counts[partition] = insert_counts.get(partition, 0) + count
            else:
                update_counts[partition] = update_counts.get(partition, 0) + count
                updated.setdefault(partition, set()).add(file_id)
        if not counts:
            tagged.unpersist()
            return None
        record_size = average_record_size(latest, self.sizing.record_size_estimate)
        sizing = self.sizing
        if ctx.operation == "bulk_insert":  # bulk_insert never rewrites small files
            sizing = SizingOptions(sizing.max_file_bytes, 0, sizing.record_size_estimate)
        write_plan = plan_write(insert_counts, updated, latest, record_size, sizing)
        if write_plan.insert_ranges:
            ranges = spark.createDataFrame(
                [(r.partition_path, r.low, r.high, r.file_id) for r in write_plan.insert_ranges],
                f"{PARTITION_PATH}_r string, low double, high double, _hoodie_range_file_id string",
            )
            fraction = F.pmod(F.xxhash64(RECORD_KEY), F.lit(_FRACTION_MODULUS)) / F.lit(float(_FRACTION_MODULUS))
            tagged = tagged.withColumn("_hoodie_fraction", fraction)
            condition = (
                (F.col(PARTITION_PATH) == F.col(f"{PARTITION_PATH}_r"))
                & (F.col("_hoodie_fraction") >= F.col("low"))
                & (F.col("_hoodie_fraction") < F.col("high"))
                & F.col(TAGGED_FILE_ID).isNull()
            )
            tagged = tagged.join(F.broadcast(ranges), condition, "left").drop(f"{PARTITION_PATH}_r", "low", "high")
            bucket = F.coalesce(F.col(TAGGED_FILE_ID), F.col("_hoodie_range_file_id"))
        else:
            bucket = F.col(TAGGED_FILE_ID)
        bucketed = tagged.withColumn(BUCKET, bucket)
        return ExecutionPlan(
            partitions=partitions,
            workload=workload_profile(insert_counts, update_counts),
            buckets=write_plan.buckets,
            payload=("merge", bucketed, tagged),
        )

    def execute(self, plan: ExecutionPlan, ctx: WriteContext) -> list[dict]:
        kind = plan.payload[0]
        if kind == "fast":
            df = plan.payload[1]
            rows = df.mapInArrow(
                _write_new_files(self.table.config, ctx, self.sizing.max_file_bytes), STAT_DDL
            ).collect()
        else:
            bucketed, tagged = plan.payload[1], plan.payload[2]
            try:
                rows = bucketed.groupBy(BUCKET).applyInArrow(_write_groups(plan.buckets, ctx), STAT_DDL).collect()
            finally:
                tagged.unpersist()
        return [row.asDict() for row in rows]



