"""In-process execution for pyarrow input: the same planning and file-group writes, no Spark."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingestion.hoodie.engine_common import TAGGED_FILE_ID, ExecutionPlan, average_record_size
from ingestion.hoodie.keys import PARTITION_PATH, RECORD_KEY, with_keys
from ingestion.hoodie.merge import BUCKET, WriteContext, write_bucket
from ingestion.hoodie.planner import SizingOptions, plan_write
from ingestion.hoodie.schema import IS_DELETED


def dedupe(table: pa.Table, precombine: str | None) -> pa.Table:
    """One row per (partition path, record key): the greatest ordering value wins (the last on ties)."""
    if table.num_rows == 0:
        return table
    table = table.append_column("_hoodie_row", pa.array(range(table.num_rows), pa.int64()))
    order = [(PARTITION_PATH, "ascending"), (RECORD_KEY, "ascending")]
    if precombine and precombine in table.column_names:
        order.append((precombine, "descending"))
    order.append(("_hoodie_row", "descending"))
    ranked = table.sort_by(order)
    keys = pc.binary_join_element_wise(ranked.column(PARTITION_PATH), ranked.column(RECORD_KEY), "\x00")
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    first = pc.not_equal(keys, pa.concat_arrays([pa.array([None], keys.type), keys.slice(0, len(keys) - 1)]))
    first = pc.fill_null(first, True)
    return ranked.filter(first).drop_columns(["_hoodie_row"])


class ArrowEngine:
    def __init__(self, table, sizing: SizingOptions) -> None:
        self.table = table
        self.sizing = sizing

    def schema_of(self, data: pa.Table) -> pa.Schema:
        return data.schema

    def plan(self, data: pa.Table, ctx: WriteContext, drop_duplicates: bool) -> ExecutionPlan | None:
        from ingestion.hoodie.writer import workload_profile

        config = self.table.config
        keyed = with_keys(data, config)
        if ctx.operation in ("upsert", "delete") or drop_duplicates:
            keyed = dedupe(keyed, ctx.precombine_field if ctx.operation == "upsert" else None)
        partitions = sorted(set(keyed.column(PARTITION_PATH).to_pylist()))
        latest_list = self.table.latest_base_files(partitions=partitions) if partitions else []
        latest: dict[str, list] = {}
        for base_file in latest_list:
            latest.setdefault(base_file.partition_path, []).append(base_file)
        tagged_ids: list[str | None] = [None] * keyed.num_rows
        need_index = ctx.operation in ("upsert", "delete") or drop_duplicates
        if need_index and latest_list:
            index = pa.concat_tables(
                [
                    pq.read_table(bf.path, columns=[RECORD_KEY, PARTITION_PATH]).append_column(
                        TAGGED_FILE_ID, pa.array([bf.file_id] * pq.read_metadata(bf.path).num_rows, pa.string())
                    )
                    for bf in latest_list
                ]
            )
            keyed = keyed.append_column("_hoodie_row", pa.array(range(keyed.num_rows), pa.int64()))
            joined = keyed.select([RECORD_KEY, PARTITION_PATH, "_hoodie_row"]).join(
                index, keys=[RECORD_KEY, PARTITION_PATH], join_type="left outer"
            )
            mapping = dict(zip(joined.column("_hoodie_row").to_pylist(), joined.column(TAGGED_FILE_ID).to_pylist(),
                               strict=True))
            tagged_ids = [mapping.get(i) for i in range(keyed.num_rows)]
            keyed = keyed.drop_columns(["_hoodie_row"])
        keyed = keyed.append_column(TAGGED_FILE_ID, pa.array(tagged_ids, pa.string()))
        if drop_duplicates and ctx.operation in ("insert", "bulk_insert"):
            keyed = keyed.filter(pc.is_null(keyed.column(TAGGED_FILE_ID)))
        if ctx.operation == "delete":
            keyed = keyed.filter(pc.is_valid(keyed.column(TAGGED_FILE_ID)))
        elif IS_DELETED in keyed.column_names:
            # Flagged deletes of keys not stored anywhere are no-ops.
            flagged = pc.fill_null(keyed.column(IS_DELETED), False)
            keyed = keyed.filter(pc.or_(pc.invert(flagged), pc.is_valid(keyed.column(TAGGED_FILE_ID))))
        if keyed.num_rows == 0:
            return None
        is_insert = pc.is_null(keyed.column(TAGGED_FILE_ID))
        partitions_col = keyed.column(PARTITION_PATH).to_pylist()
        insert_counts: dict[str, int] = {}
        update_counts: dict[str, int] = {}
        updated: dict[str, set[str]] = {}
        for partition, file_id, insert in zip(partitions_col, tagged_ids_of(keyed), is_insert.to_pylist(),
                                              strict=True):
            if insert:
                insert_counts[partition] = insert_counts.get(partition, 0) + 1
            else:
                update_counts[partition] = update_counts.get(partition, 0) + 1
                updated.setdefault(partition, set()).add(file_id)
        sizing = self.sizing
        if ctx.operation == "bulk_insert":
            sizing = SizingOptions(sizing.max_file_bytes, 0, sizing.record_size_estimate)
        record_size = average_record_size(latest, sizing.record_size_estimate)
        write_plan = plan_write(insert_counts, updated, latest, record_size, sizing)
        buckets: list[str] = []
        position: dict[str, int] = {}
        ranges_by_partition: dict[str, list] = {}
        for entry in write_plan.insert_ranges:
            ranges_by_partition.setdefault(entry.partition_path, []).append(entry)
        for partition, file_id, insert in zip(partitions_col, tagged_ids_of(keyed), is_insert.to_pylist(),
                                              strict=True):
            if not insert:
                buckets.append(file_id)
                continue
            seen = position.get(partition, 0)
            position[partition] = seen + 1
            fraction = seen / insert_counts[partition]
            for entry in ranges_by_partition[partition]:
                if entry.low <= fraction < entry.high:
                    buckets.append(entry.file_id)
                    break
        keyed = keyed.append_column(BUCKET, pa.array(buckets, pa.string()))
        return ExecutionPlan(
            partitions=sorted(set(partitions_col)),
            workload=workload_profile(insert_counts, update_counts),
            buckets=write_plan.buckets,
            payload=keyed,
        )

    def execute(self, plan: ExecutionPlan, ctx: WriteContext) -> list[dict]:
        keyed: pa.Table = plan.payload
        stats = []
        bucket_column = keyed.column(BUCKET)
        for task_id, (file_id, bucket) in enumerate(sorted(plan.buckets.items())):
            rows = keyed.filter(pc.equal(bucket_column, file_id))
            rows = rows.drop_columns([BUCKET, TAGGED_FILE_ID])
            stats.append(write_bucket(rows, bucket, ctx, task_id, f"{task_id}-0-{task_id}"))
        return stats


def tagged_ids_of(keyed: pa.Table) -> list[str | None]:
    return keyed.column(TAGGED_FILE_ID).to_pylist()

