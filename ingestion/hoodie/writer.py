"""The writer: lock, recovery, and one commit per ``write`` call.

Commit protocol (what Java Hudi does for a COW write): ``<t>.commit.requested`` (empty) ->
``<t>.inflight`` (planned workload) -> base files -> removal of failed task attempts' files ->
``<t>.commit`` (HoodieCommitMetadata JSON), written atomically. Until that last rename nothing of
the write is visible; a crash anywhere before leaves a pending instant that recovery rolls back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ingestion.hoodie.basefile import FileWriteOptions, ensure_partition_metadata
from ingestion.hoodie.errors import HoodieError
from ingestion.hoodie.lock import WriterLock
from ingestion.hoodie.merge import WriteContext
from ingestion.hoodie.planner import SizingOptions
from ingestion.hoodie.schema import data_schema, evolve
from ingestion.hoodie.services import remove_uncommitted_files, rollback_pending
from ingestion.hoodie.timeline import COMPLETED, INFLIGHT, REQUESTED, Instant, to_json_bytes

if TYPE_CHECKING:
    from ingestion.hoodie.table import HoodieTable

OPERATIONS = ("insert", "bulk_insert", "upsert", "delete")
_OPERATION_TYPES = {"insert": "INSERT", "bulk_insert": "BULK_INSERT", "upsert": "UPSERT", "delete": "DELETE"}


class HoodieWriter:
    """Use as ``with table.writer() as w: w.write(...)``. One per table at a time (process-wide lock)."""

    def __init__(
        self,
        table: HoodieTable,
        compression: str = "snappy",
        compression_level: int | None = None,
        max_file_bytes: int = 120 * 1024 * 1024,
        small_file_bytes: int = 100 * 1024 * 1024,
        record_size_estimate: int = 1024,
        bloom_num_entries: int = 60_000,
    ) -> None:
        self.table = table
        self.file_options = FileWriteOptions(
            table_name=table.config.name,
            compression=compression,
            compression_level=compression_level,
            bloom_num_entries=bloom_num_entries,
        )
        self.sizing = SizingOptions(max_file_bytes, small_file_bytes, record_size_estimate)
        self._lock = WriterLock(table.meta_dir, table.label)
        self.recovered: list[str] = []

    def __enter__(self) -> HoodieWriter:
        self._lock.acquire()
        try:
            self.recovered = rollback_pending(self.table)
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    # ------------------------------------------------------------------ write
    def write(
        self,
        data: Any,
        operation: str = "insert",
        drop_duplicates: bool = False,
        extra_metadata: dict[str, str] | None = None,
    ) -> str | None:
        """Write ``data`` (a pyspark DataFrame or a pyarrow Table) as one commit; return its instant.

        ``operation``: insert | bulk_insert | upsert | delete (see docs/hoodie.md). ``extra_metadata``
        lands in the commit's ``extraMetadata`` (read back with ``latest_extra_metadata``), atomically
        with the data. Returns None when nothing would be written (e.g. every key already stored).
        """
        if not self._lock.held:
            raise HoodieError(f"table {self.table.label}: write() outside 'with table.writer() as w:'")
        if operation not in OPERATIONS:
            raise HoodieError(f"operation {operation!r} is not one of {', '.join(OPERATIONS)}")
        for key, value in (extra_metadata or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise HoodieError(f"extra_metadata must map strings to strings; got {key!r}: {type(value).__name__}")
            if key == "schema":
                raise HoodieError("extra_metadata key 'schema' is reserved for the writer schema")
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if isinstance(data, pa.Table):
            from ingestion.hoodie.arrow_engine import ArrowEngine

            engine: Any = ArrowEngine(self.table, self.sizing)
        elif type(data).__name__ == "DataFrame" and hasattr(data, "sparkSession"):
            from ingestion.hoodie.spark_engine import SparkEngine

            engine = SparkEngine(self.table, self.sizing)
        else:
            raise HoodieError(f"data must be a pyspark DataFrame or a pyarrow Table, got {type(data).__name__}")
        cfg = self.table.config
        incoming_schema = engine.schema_of(data)
        missing = [f for f in (*cfg.record_key_fields, *cfg.partition_fields) if f not in incoming_schema.names]
        if operation == "upsert" and cfg.precombine_field and cfg.precombine_field not in incoming_schema.names:
            missing.append(cfg.precombine_field)
        if missing:
            raise HoodieError(
                f"table {self.table.label}: data lacks key/partition/ordering columns {missing} "
                f"(data columns: {incoming_schema.names})"
            )
        existing = self.table.schema()
        target = data_schema(incoming_schema) if existing is None else evolve(existing, incoming_schema)
        if operation == "delete" and existing is not None:
            target = existing
        instant = self.table.timeline.new_instant_time()
        ctx = WriteContext(
            base_path=str(self.table.base_path),
            instant=instant,
            operation=operation,
            schema=target,
            precombine_field=cfg.precombine_field,
            file_options=self.file_options,
            merge_existing=operation in ("upsert", "delete"),
        )
        requested = Instant(instant, "commit", REQUESTED)
        self.table.timeline.write(requested, b"")
        try:
            plan = engine.plan(data, ctx, drop_duplicates)
            if plan is None:
                self._abandon(instant)
                return None
            plan.workload["operationType"] = _OPERATION_TYPES[operation]
            self.table.timeline.write(Instant(instant, "commit", INFLIGHT), to_json_bytes(plan.workload))
            for partition in plan.partitions:
                ensure_partition_metadata(self.table.base_path, partition, instant)
            stats = engine.execute(plan, ctx)
            if not stats:  # e.g. an empty DataFrame on the single-pass insert path
                self._abandon(instant)
                return None
        except BaseException:
            # Roll back now; if this process dies instead, the next writer's recovery does it.
            rollback_pending(self.table)
            raise
        keep = {s["path"] for s in stats}
        remove_uncommitted_files(self.table, instant, keep, sorted({s["partition_path"] for s in stats}))
        metadata = commit_metadata(stats, operation, target, cfg.name, extra_metadata or {})
        self.table.timeline.write(Instant(instant, "commit", COMPLETED), to_json_bytes(metadata))
        return instant

    def _abandon(self, instant: str) -> None:
        rollback_pending(self.table)


def commit_metadata(
    stats: list[dict], operation: str, schema: pa.Schema, table_name: str, extra: dict[str, str]
) -> dict[str, Any]:
    """HoodieCommitMetadata as Java Hudi serializes it to JSON."""
    from ingestion.hoodie.avro import avro_schema_json

    by_partition: dict[str, list[dict]] = {}
    for stat in sorted(stats, key=lambda s: (s["partition_path"], s["file_id"])):
        by_partition.setdefault(stat["partition_path"], []).append(
            {
                "fileId": stat["file_id"],
                "path": stat["path"],
                "cdcStats": None,
                "prevCommit": stat["prev_commit"],
                "numWrites": stat["num_writes"],
                "numDeletes": stat["num_deletes"],
                "numUpdateWrites": stat["num_update_writes"],
                "numInserts": stat["num_inserts"],
                "totalWriteBytes": stat["size"],
                "totalWriteErrors": 0,
                "tempPath": None,
                "partitionPath": stat["partition_path"],
                "totalLogRecords": 0,
                "totalLogFilesCompacted": 0,
                "totalLogSizeCompacted": 0,
                "totalUpdatedRecordsCompacted": 0,
                "totalLogBlocks": 0,
                "totalCorruptLogBlock": 0,
                "totalRollbackBlocks": 0,
                "fileSizeInBytes": stat["size"],
                "minEventTime": None,
                "maxEventTime": None,
                "runtimeStats": {"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 0},
            }
        )
    return {
        "partitionToWriteStats": by_partition,
        "compacted": False,
        "extraMetadata": {"schema": avro_schema_json(schema, table_name), **extra},
        "operationType": _OPERATION_TYPES[operation],
    }


def workload_profile(insert_counts: dict[str, int], update_counts: dict[str, int]) -> dict[str, Any]:
    """The ``.inflight`` content: per-partition planned inserts/updates (fileId "" as Java writes it)."""
    partitions = sorted(set(insert_counts) | set(update_counts))
    return {
        "partitionToWriteStats": {
            p: [
                {
                    "fileId": "",
                    "path": None,
                    "prevCommit": "null",
                    "numWrites": 0,
                    "numDeletes": 0,
                    "numUpdateWrites": update_counts.get(p, 0),
                    "numInserts": insert_counts.get(p, 0),
                    "partitionPath": None,
                }
            ]
            for p in partitions
        },
        "compacted": False,
        "extraMetadata": {},
        "operationType": None,
    }

