"""Base files: names, partition metadata, and writing one parquet file slice with Hudi's footer."""

from __future__ import annotations

import datetime as dt
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingestion.hoodie import properties
from ingestion.hoodie.avro import avro_schema_json
from ingestion.hoodie.bloom import BLOOM_TYPE_CODE, DynamicBloomFilter
from ingestion.hoodie.timeline import write_atomically

PARTITION_METAFILE = ".hoodie_partition_metadata"
_BASE_FILE = re.compile(r"^(?P<file_id>.+)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d{17})\.parquet\Z")


@dataclass(frozen=True)
class BaseFile:
    """One committed base file (file slice) of a copy-on-write table."""

    partition_path: str
    file_id: str
    instant: str
    path: str  # absolute
    write_token: str = ""
    size: int = 0

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)

    @property
    def relative_path(self) -> str:
        """Path relative to the table base path, as commit metadata records it."""
        return f"{self.partition_path}/{self.file_name}" if self.partition_path else self.file_name


def parse_base_file_name(name: str) -> tuple[str, str, str] | None:
    """``(file_id, write_token, instant)`` of ``<fileId>_<writeToken>_<instant>.parquet``, else None."""
    match = _BASE_FILE.match(name)
    return (match["file_id"], match["token"], match["instant"]) if match else None


def new_file_id() -> str:
    """``FSUtils.createNewFileId``: a random UUID plus ``-0``."""
    return f"{uuid.uuid4()}-0"


def base_file_name(file_id: str, write_token: str, instant: str) -> str:
    return f"{file_id}_{write_token}_{instant}.parquet"


def partition_dir(base_path: str | Path, partition_path: str) -> Path:
    return Path(base_path) / partition_path if partition_path else Path(base_path)


def ensure_partition_metadata(base_path: str | Path, partition_path: str, instant: str) -> None:
    """Create the partition directory and its ``.hoodie_partition_metadata`` if missing."""
    directory = partition_dir(base_path, partition_path)
    directory.mkdir(parents=True, exist_ok=True)
    metafile = directory / PARTITION_METAFILE
    if metafile.exists():
        return
    depth = 0 if not partition_path else len(partition_path.split("/"))
    text = properties.render(
        {"commitTime": instant, "partitionDepth": str(depth)}, "partition metadata", dt.datetime.now(dt.UTC)
    )
    write_atomically(metafile, text.encode())


@dataclass(frozen=True)
class FileWriteOptions:
    table_name: str
    compression: str = "snappy"
    compression_level: int | None = None
    bloom_num_entries: int = 60_000
    bloom_fpp: float = 0.000000001
    bloom_max_entries: int = 100_000
    row_group_rows: int = 1_000_000


#: Meta columns unique per row: dictionary encoding only wastes time on them (and seqno stats are unused).
_UNIQUE_META = ("_hoodie_commit_seqno", "_hoodie_record_key")


def open_parquet_writer(path: Path, schema: pa.Schema, options: FileWriteOptions) -> pq.ParquetWriter:
    """A ParquetWriter with the settings every base file uses (no ARROW:schema: footer keys are Hudi's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return pq.ParquetWriter(
        path,
        schema,
        compression=options.compression,
        compression_level=options.compression_level,
        use_dictionary=[n for n in schema.names if n not in _UNIQUE_META],
        write_statistics=[n for n in schema.names if n != "_hoodie_commit_seqno"],
        coerce_timestamps="us",
        allow_truncated_timestamps=False,
        store_schema=False,
    )


def tiered_row_groups(carried: list[int], newest: int, limit: int) -> list[int]:
    """Row-group sizes of a rewritten file slice, oldest rows first.

    The carried rows keep their row groups (in commit order) and the commit's new rows get
    one of their own at the end. A group merges into the one before it while that one is not
    more than twice its size, so every group is over twice the next one: at most
    log2(rows) + 1 groups, the newest commits in the small ones, and no merge above ``limit``
    rows. A reader of the last commits (``_hoodie_commit_time`` above the watermark of an
    incremental dbt run, or Hudi's incremental query) skips the older groups by their
    min/max statistics instead of decoding the whole file.
    """
    merged: list[int] = []
    for size in [*carried, newest]:
        if size <= 0:
            continue
        merged.append(size)
        while len(merged) >= 2 and merged[-2] <= 2 * merged[-1] and merged[-2] + merged[-1] <= limit:
            last = merged.pop()
            merged[-1] += last
    return merged


def write_parquet_slice(rows: pa.Table, path: Path, options: FileWriteOptions,
                        row_groups: list[int] | None = None) -> int:
    """Write ``rows`` (meta columns first, record keys filled) with Hudi's footer; return the byte size.

    ``row_groups``: consecutive row-group sizes summing to the row count (default: groups of
    ``options.row_group_rows``).

    Footer: ``hoodie_min_record_key``, ``hoodie_max_record_key``, the bloom filter of every record key
    (``org.apache.hudi.bloomfilter`` + ``hoodie_bloom_filter_type_code``), and ``parquet.avro.schema``.
    """
    keys = rows.column("_hoodie_record_key")
    bloom = DynamicBloomFilter(options.bloom_num_entries, options.bloom_fpp, options.bloom_max_entries)
    bloom.add_all(keys)
    min_max = pc.min_max(keys)
    metadata = {
        b"parquet.avro.schema": avro_schema_json(rows.schema, options.table_name, with_meta_fields=True).encode(),
        b"writer.model.name": b"avro",
        b"org.apache.hudi.bloomfilter": bloom.serialize_to_string().encode(),
        b"hoodie_bloom_filter_type_code": BLOOM_TYPE_CODE.encode(),
    }
    if rows.num_rows:
        metadata[b"hoodie_min_record_key"] = min_max["min"].as_py().encode()
        metadata[b"hoodie_max_record_key"] = min_max["max"].as_py().encode()
    rows = rows.replace_schema_metadata(None)
    if row_groups is not None and sum(row_groups) != rows.num_rows:
        raise ValueError(f"row groups {row_groups} do not add up to the {rows.num_rows} rows of {path.name}")
    with open_parquet_writer(path, rows.schema, options) as writer:
        if row_groups and rows.num_rows:
            offset = 0
            for size in row_groups:
                writer.write_table(rows.slice(offset, size), row_group_size=size)
                offset += size
        else:
            writer.write_table(rows, row_group_size=options.row_group_rows)
        writer.add_key_value_metadata({k.decode(): v.decode() for k, v in metadata.items()})
    return path.stat().st_size
