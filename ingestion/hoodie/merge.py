"""Writing one file group: merge incoming records into the current slice, write the next slice.

This runs where the data is (a Spark executor, or in-process for Arrow input); it needs nothing but
the plan entry for its file group and the shared :class:`WriteContext`, both picklable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingestion.hoodie.avro import META_FIELDS
from ingestion.hoodie.basefile import (
    FileWriteOptions,
    base_file_name,
    partition_dir,
    tiered_row_groups,
    write_parquet_slice,
)
from ingestion.hoodie.keys import RECORD_KEY
from ingestion.hoodie.schema import IS_DELETED, conform

#: Column added to incoming rows: the planned file group of the row.
BUCKET = "_hoodie_bucket"
STAT_SCHEMA = pa.schema(
    [
        ("partition_path", pa.string()),
        ("file_id", pa.string()),
        ("path", pa.string()),
        ("prev_commit", pa.string()),
        ("num_writes", pa.int64()),
        ("num_inserts", pa.int64()),
        ("num_update_writes", pa.int64()),
        ("num_deletes", pa.int64()),
        ("size", pa.int64()),
    ]
)


@dataclass(frozen=True)
class WriteContext:
    base_path: str
    instant: str
    operation: str  # insert | bulk_insert | upsert | delete
    schema: pa.Schema  # data schema of the new slices (no meta columns)
    precombine_field: str | None
    file_options: FileWriteOptions
    merge_existing: bool = True  # False for plain insert: append to a small file without key matching


@dataclass(frozen=True)
class BucketPlan:
    """One file group to write: a new one, or the next slice of an existing one."""

    partition_path: str
    file_id: str
    base_file: str | None = None  # absolute path of the current slice; None for a new file group
    prev_commit: str | None = None


def _deleted_mask(incoming: pa.Table, operation: str) -> pa.Array:
    if operation == "delete":
        return pa.array([True] * incoming.num_rows, pa.bool_())
    if IS_DELETED in incoming.column_names:
        return pc.fill_null(incoming.column(IS_DELETED), False).combine_chunks()
    return pa.array([False] * incoming.num_rows, pa.bool_())


def _ordering_greater(left: pa.Array, right: pa.Array) -> pa.Array:
    """left > right, a null ordering value being the smallest."""
    greater = pc.greater(left, right)
    return pc.fill_null(pc.if_else(pc.is_null(right), pc.is_valid(left), greater), False)


def write_bucket(incoming: pa.Table, plan: BucketPlan, ctx: WriteContext, task_id: int, write_token: str) -> dict:
    """Merge ``incoming`` (already deduplicated by key) into ``plan``'s file group; return its write stat."""
    deleted = _deleted_mask(incoming, ctx.operation)
    incoming_keys = incoming.column(RECORD_KEY).combine_chunks()
    old_file = pq.ParquetFile(plan.base_file) if plan.base_file else None
    old = old_file.read() if old_file is not None else None
    keep_old = None
    beaten = pa.array([False] * incoming.num_rows, pa.bool_())
    updated = pa.array([False] * incoming.num_rows, pa.bool_())
    if old is not None and ctx.merge_existing and incoming.num_rows:
        old_keys = old.column(RECORD_KEY).combine_chunks()
        index = pc.index_in(old_keys, value_set=incoming_keys)
        matched = pc.is_valid(index)
        old_wins = pa.array([False] * old.num_rows, pa.bool_())
        if ctx.precombine_field and ctx.operation != "delete" and ctx.precombine_field in old.column_names:
            incoming_order = incoming.column(ctx.precombine_field).combine_chunks().take(index)
            old_order = old.column(ctx.precombine_field).combine_chunks()
            if old_order.type != incoming_order.type:
                incoming_order = incoming_order.cast(old_order.type)
            old_wins = pc.and_(matched, _ordering_greater(old_order, incoming_order))
        keep_old = pc.or_(pc.invert(matched), old_wins)
        beaten = pc.is_in(incoming_keys, value_set=pc.filter(old_keys, old_wins))
        updated = pc.is_in(incoming_keys, value_set=old_keys)
    write_new = pc.and_(pc.invert(beaten), pc.invert(deleted))
    num_update_writes = pc.sum(pc.cast(pc.and_(write_new, updated), pa.int64())).as_py() or 0
    num_inserts = pc.sum(pc.cast(pc.and_(write_new, pc.invert(updated)), pa.int64())).as_py() or 0
    num_deletes = pc.sum(pc.cast(pc.and_(pc.and_(deleted, updated), pc.invert(beaten)), pa.int64())).as_py() or 0

    name = base_file_name(plan.file_id, write_token, ctx.instant)
    new_rows = incoming.filter(write_new)
    new_data = conform(new_rows.drop_columns([c for c in new_rows.column_names if c in META_FIELDS]),
                       ctx.schema, f"incoming data for {plan.partition_path or 'the table'}")
    count = new_rows.num_rows
    seqno = pc.binary_join_element_wise(
        pa.scalar(f"{ctx.instant}_{task_id}_"), pc.cast(pa.array(range(count), pa.int64()), pa.string()), ""
    )
    new_meta = {
        "_hoodie_commit_time": pa.repeat(pa.scalar(ctx.instant, pa.string()), count),
        "_hoodie_commit_seqno": seqno,
        "_hoodie_record_key": new_rows.column(RECORD_KEY),
        "_hoodie_partition_path": pa.repeat(pa.scalar(plan.partition_path, pa.string()), count),
        "_hoodie_file_name": pa.repeat(pa.scalar(name, pa.string()), count),
    }
    parts = [_with_meta(new_meta, new_data)]
    if old is not None:
        carried = old if keep_old is None else old.filter(keep_old)
        carried_data = conform(carried.drop_columns([c for c in carried.column_names if c in META_FIELDS]),
                               ctx.schema, f"base file {plan.base_file}")
        carried_meta = {m: carried.column(m) for m in META_FIELDS[:4]}
        carried_meta["_hoodie_file_name"] = pa.repeat(pa.scalar(name, pa.string()), carried.num_rows)
        parts.insert(0, _with_meta(carried_meta, carried_data))
    rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    path = partition_dir(ctx.base_path, plan.partition_path) / name
    groups = None
    if old_file is not None:
        groups = tiered_row_groups(_carried_row_groups(old_file.metadata, keep_old), count,
                                   ctx.file_options.row_group_rows)
    # A file group whose records were all deleted gets an empty slice, as Java Hudi writes it.
    size = write_parquet_slice(rows, Path(path), ctx.file_options, groups)
    return {
        "partition_path": plan.partition_path,
        "file_id": plan.file_id,
        "path": f"{plan.partition_path}/{name}" if plan.partition_path else name,
        "prev_commit": plan.prev_commit or "null",
        "num_writes": rows.num_rows,
        "num_inserts": num_inserts,
        "num_update_writes": num_update_writes,
        "num_deletes": num_deletes,
        "size": size,
    }


def _carried_row_groups(metadata: pq.FileMetaData, keep_old: pa.Array | None) -> list[int]:
    """Rows each row group of the old base file carries into the new slice (all, or those ``keep_old`` keeps)."""
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    if keep_old is None:
        return sizes
    kept, offset = [], 0
    for size in sizes:
        kept.append(pc.sum(pc.cast(keep_old.slice(offset, size), pa.int64())).as_py() or 0)
        offset += size
    return kept


def _with_meta(meta: dict[str, pa.Array], data: pa.Table) -> pa.Table:
    arrays = [meta[m] for m in META_FIELDS] + list(data.columns)
    fields = [pa.field(m, pa.string()) for m in META_FIELDS] + list(data.schema)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
