"""In-process execution for pyarrow input: the same planning and file-group writes, no Spark."""

from __future__ import annotations

import numpy as np
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
        partitions = sorted(pc.unique(keyed.column(PARTITION_PATH)).to_pylist())
        latest_list = self.table.latest_base_files(partitions=partitions) if partitions else []
        latest: dict[str, list] = {}
        for base_file in latest_list:
            latest.setdefault(base_file.partition_path, []).append(base_file)
        tagged_ids: pa.Array = pa.nulls(keyed.num_rows, pa.string())
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
            tagged_ids = _tag(keyed, index)
        keyed = keyed.append_column(TAGGED_FILE_ID, tagged_ids)
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
        partitions_col = keyed.column(PARTITION_PATH).combine_chunks()
        tagged = keyed.column(TAGGED_FILE_ID).combine_chunks()
        is_insert = pc.is_null(tagged)
        insert_counts = _value_counts(pc.filter(partitions_col, is_insert))
        update_counts = _value_counts(pc.filter(partitions_col, pc.invert(is_insert)))
        updated: dict[str, set[str]] = {}
        updates = pa.table({"p": pc.filter(partitions_col, pc.invert(is_insert)), "f": pc.filter(tagged,
                                                                                                  pc.invert(is_insert))})
        for pair in updates.group_by(["p", "f"], use_threads=False).aggregate([]).to_pylist():
            updated.setdefault(pair["p"], set()).add(pair["f"])
        sizing = self.sizing
        if ctx.operation == "bulk_insert":
            sizing = SizingOptions(sizing.max_file_bytes, 0, sizing.record_size_estimate)
        record_size = average_record_size(latest, sizing.record_size_estimate)
        write_plan = plan_write(insert_counts, updated, latest, record_size, sizing)
        buckets = pc.if_else(is_insert, _insert_buckets(partitions_col, is_insert, write_plan.insert_ranges), tagged)
        keyed = keyed.append_column(BUCKET, buckets)
        return ExecutionPlan(
            partitions=sorted(pc.unique(partitions_col).to_pylist()),
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


def _value_counts(values: pa.Array) -> dict[str, int]:
    """Count of every value, in order of first occurrence (as a Python loop over the rows would build it)."""
    counts = pc.value_counts(values)
    return dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True))


def _tag(keyed: pa.Table, index: pa.Table) -> pa.Array:
    """The file id holding each row's (record key, partition path) in ``index``, else null; in row order."""
    rows = keyed.select([RECORD_KEY, PARTITION_PATH]).append_column(
        "_hoodie_row", pa.array(np.arange(keyed.num_rows, dtype=np.int64)))
    joined = rows.join(index, keys=[RECORD_KEY, PARTITION_PATH], join_type="left outer", use_threads=False)
    if joined.num_rows == keyed.num_rows:
        return joined.column(TAGGED_FILE_ID).take(pc.sort_indices(joined.column("_hoodie_row"))).combine_chunks()
    # A key stored twice (a broken table): the last match wins, as in a dict built over the join.
    mapping = dict(zip(joined.column("_hoodie_row").to_pylist(), joined.column(TAGGED_FILE_ID).to_pylist(),
                       strict=True))
    return pa.array([mapping.get(i) for i in range(keyed.num_rows)], pa.string())


def _insert_buckets(partitions: pa.Array, is_insert: pa.Array, insert_ranges: list) -> pa.Array:
    """The file group of every insert: the ``n``-th insert of a partition with ``c`` inserts goes to the
    first range of that partition holding ``n / c`` in [low, high). Other rows get null."""
    count = len(partitions)
    insert_rows = np.flatnonzero(is_insert.to_numpy(zero_copy_only=False))
    encoded = pc.dictionary_encode(partitions.take(pa.array(insert_rows, pa.int64())))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = encoded.dictionary.to_pylist()
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=len(names))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    ranges_by_partition: dict[str, list] = {}
    for entry in insert_ranges:
        ranges_by_partition.setdefault(entry.partition_path, []).append(entry)
    file_ids: list[str] = []
    assigned = np.full(len(codes), -1, dtype=np.int64)
    for code, partition in enumerate(names):
        low, size = starts[code], sizes[code]
        fraction = np.arange(size, dtype=np.int64) / size  # the same IEEE division as seen / count
        segment = np.full(size, -1, dtype=np.int64)
        for entry in reversed(ranges_by_partition.get(partition, [])):  # the first matching range wins
            file_ids.append(entry.file_id)
            segment[(entry.low <= fraction) & (fraction < entry.high)] = len(file_ids) - 1
        assigned[order[low:low + size]] = segment
    if (assigned < 0).any():
        raise ValueError("insert ranges do not cover every insert of the write plan")
    buckets = np.full(count, -1, dtype=np.int64)
    buckets[insert_rows] = assigned
    ids = pa.array(file_ids, pa.string())
    return ids.take(pa.array(buckets, pa.int64(), mask=buckets < 0))
