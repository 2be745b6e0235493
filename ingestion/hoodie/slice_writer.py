"""Streaming writer of one new base file: rows arrive in batches, the Hudi footer goes on at close.

Buffers up to ``buffer_rows`` rows per row group so Spark's small Arrow batches do not become tiny
row groups; keeps only the record keys (for the bloom filter and min/max) beyond that.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingestion.hoodie.avro import META_FIELDS, avro_schema_json
from ingestion.hoodie.basefile import open_parquet_writer
from ingestion.hoodie.bloom import BLOOM_TYPE_CODE, DynamicBloomFilter
from ingestion.hoodie.keys import RECORD_KEY
from ingestion.hoodie.merge import WriteContext
from ingestion.hoodie.schema import conform


def constant(value: str, count: int) -> pa.Array:
    """``count`` copies of one string, built without a Python list."""
    return pa.repeat(pa.scalar(value, pa.string()), count)


class SliceWriter:
    def __init__(
        self, path: Path, partition_path: str, file_id: str, ctx: WriteContext, task_id: int,
        buffer_rows: int = 262_144,
    ) -> None:
        self.path, self.partition_path, self.file_id = path, partition_path, file_id
        self.ctx, self.task_id, self.buffer_rows = ctx, task_id, buffer_rows
        self.schema = pa.schema([pa.field(m, pa.string()) for m in META_FIELDS] + list(ctx.schema))
        self._writer: pq.ParquetWriter | None = None
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._buffer_bytes = 0
        self._keys: list[pa.ChunkedArray] = []
        self.num_rows = 0
        self._closed = False

    def write(self, keyed: pa.Table) -> None:
        """Append rows carrying ``_hoodie_record_key`` and ``_hoodie_partition_path`` columns."""
        count = keyed.num_rows
        if count == 0:
            return
        data = conform(keyed.drop_columns([c for c in keyed.column_names if c in META_FIELDS]),
                       self.ctx.schema, f"data for partition {self.partition_path or '(none)'}")
        seq = pc.binary_join_element_wise(
            pa.scalar(f"{self.ctx.instant}_{self.task_id}_"),
            pc.cast(pa.array(np.arange(self.num_rows, self.num_rows + count, dtype=np.int64)), pa.string()),
            "",
        )
        keys = keyed.column(RECORD_KEY)
        meta = [
            constant(self.ctx.instant, count),
            seq,
            keys,
            constant(self.partition_path, count),
            constant(self.path.name, count),
        ]
        chunk = pa.Table.from_arrays(meta + list(data.columns), schema=self.schema)
        self._buffer.append(chunk)
        self._buffer_bytes += chunk.nbytes
        self._keys.append(keys)
        self._buffered += count
        self.num_rows += count
        if self._buffered >= self.buffer_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        if self._writer is None:
            self._writer = open_parquet_writer(self.path, self.schema, self.ctx.file_options)
        self._writer.write_table(pa.concat_tables(self._buffer), row_group_size=max(self._buffered, 1))
        self._buffer, self._buffered, self._buffer_bytes = [], 0, 0

    @property
    def bytes_written(self) -> int:
        flushed = os.path.getsize(self.path) if self._writer is not None and self.path.exists() else 0
        return flushed + self._buffer_bytes // 3  # buffered bytes, roughly compressed

    def close(self) -> dict:
        self._flush()
        options = self.ctx.file_options
        keys = pa.chunked_array([c for k in self._keys for c in k.chunks], pa.string())
        bloom = DynamicBloomFilter(options.bloom_num_entries, options.bloom_fpp, options.bloom_max_entries)
        bloom.add_all(keys)
        min_max = pc.min_max(keys)
        assert self._writer is not None
        self._writer.add_key_value_metadata(
            {
                "parquet.avro.schema": avro_schema_json(self.schema, options.table_name, with_meta_fields=True),
                "writer.model.name": "avro",
                "org.apache.hudi.bloomfilter": bloom.serialize_to_string(),
                "hoodie_bloom_filter_type_code": BLOOM_TYPE_CODE,
                "hoodie_min_record_key": min_max["min"].as_py(),
                "hoodie_max_record_key": min_max["max"].as_py(),
            }
        )
        self._writer.close()
        self._closed = True
        size = self.path.stat().st_size
        rel = f"{self.partition_path}/{self.path.name}" if self.partition_path else self.path.name
        return {
            "partition_path": self.partition_path, "file_id": self.file_id, "path": rel, "prev_commit": "null",
            "num_writes": self.num_rows, "num_inserts": self.num_rows, "num_update_writes": 0, "num_deletes": 0,
            "size": size,
        }

    def discard_if_empty(self) -> None:
        if not self._closed and self._writer is not None:
            self._writer.close()
            self.path.unlink(missing_ok=True)
