"""Arrow schema -> the Avro schema Hudi records (commit ``extraMetadata.schema``, ``parquet.avro.schema``).

Every field is nullable (``["null", type]`` with ``default: null``) as Spark-written Hudi tables are;
records are named ``<table>_record`` in namespace ``hoodie.<table>``; nested records take the field
name and the parent's full name as namespace; decimals are Avro ``fixed`` of the minimum byte size
for their precision, as Spark's Avro converter writes them.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ingestion.hoodie.errors import HoodieError

META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def decimal_fixed_size(precision: int) -> int:
    """Spark's ``minBytesForPrecision``: the fewest bytes holding any ``precision``-digit unscaled value."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def _avro_type(dtype: pa.DataType, name: str, namespace: str) -> Any:
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_boolean(dtype):
        return "boolean"
    if pa.types.is_int8(dtype) or pa.types.is_int16(dtype) or pa.types.is_int32(dtype):
        return "int"
    if pa.types.is_int64(dtype):
        return "long"
    if pa.types.is_float32(dtype):
        return "float"
    if pa.types.is_float64(dtype):
        return "double"
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return "bytes"
    if pa.types.is_date32(dtype):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(dtype):
        logical = "timestamp-millis" if dtype.unit == "ms" else "timestamp-micros"
        if dtype.tz is None:
            logical = "local-" + logical
        return {"type": "long", "logicalType": logical}
    if pa.types.is_decimal(dtype):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": decimal_fixed_size(dtype.precision),
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    if pa.types.is_struct(dtype):
        return _record(name, namespace, [dtype.field(i) for i in range(dtype.num_fields)])
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return {"type": "array", "items": ["null", _avro_type(dtype.value_type, name, namespace)]}
    if pa.types.is_map(dtype):
        if not pa.types.is_string(dtype.key_type):
            raise HoodieError(f"column {name!r}: Avro maps need string keys, got {dtype.key_type}")
        return {"type": "map", "values": ["null", _avro_type(dtype.item_type, name, namespace)]}
    raise HoodieError(f"column {name!r}: type {dtype} has no Hudi/Avro mapping")


def _record(name: str, namespace: str, fields: list[pa.Field], with_doc: set[str] | None = None) -> dict:
    child_namespace = f"{namespace}.{name}"
    out = []
    for f in fields:
        entry: dict[str, Any] = {"name": f.name, "type": ["null", _avro_type(f.type, f.name, child_namespace)]}
        if with_doc and f.name in with_doc:
            entry["doc"] = ""
        entry["default"] = None
        out.append(entry)
    return {"type": "record", "name": name, "namespace": namespace, "fields": out}


def avro_schema(schema: pa.Schema, table_name: str, with_meta_fields: bool = False) -> dict:
    fields = [schema.field(i) for i in range(len(schema)) if schema.field(i).name not in META_FIELDS]
    if with_meta_fields:
        fields = [pa.field(m, pa.string()) for m in META_FIELDS] + fields
    return _record(f"{table_name}_record", f"hoodie.{table_name}", fields, set(META_FIELDS))


def avro_schema_json(schema: pa.Schema, table_name: str, with_meta_fields: bool = False) -> str:
    return json.dumps(avro_schema(schema, table_name, with_meta_fields), separators=(",", ":"))
