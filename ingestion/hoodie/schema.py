"""Data schemas: normalizing incoming Arrow data and evolving a table's schema safely."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ingestion.hoodie.avro import META_FIELDS, _avro_type
from ingestion.hoodie.errors import HoodieError

IS_DELETED = "_hoodie_is_deleted"


def storage_type(dtype: pa.DataType) -> pa.DataType:
    """The type a column is stored with: timestamps as UTC micros, large types as plain ones."""
    if pa.types.is_timestamp(dtype):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_large_string(dtype):
        return pa.string()
    if pa.types.is_large_binary(dtype):
        return pa.binary()
    if pa.types.is_struct(dtype):
        return pa.struct([pa.field(f.name, storage_type(f.type)) for f in dtype])
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return pa.list_(pa.field(dtype.value_field.name, storage_type(dtype.value_type)))
    if pa.types.is_map(dtype):
        return pa.map_(storage_type(dtype.key_type), storage_type(dtype.item_type))
    return dtype


def data_schema(schema: pa.Schema) -> pa.Schema:
    """Drop Hudi meta columns and metadata; normalize types; keep column order."""
    fields = [
        pa.field(f.name, storage_type(f.type))
        for f in schema
        if f.name not in META_FIELDS
    ]
    for field in fields:
        _avro_type(field.type, field.name, "check")  # raises for unsupported types, naming the column
    return pa.schema(fields)


def evolve(existing: pa.Schema | None, incoming: pa.Schema) -> pa.Schema:
    """The table schema after a write: existing columns keep their type and order, new ones append."""
    incoming = data_schema(incoming)
    if existing is None:
        return incoming
    fields = list(existing)
    names = set(existing.names)
    for field in incoming:
        if field.name not in names:
            fields.append(field)
    return pa.schema(fields)


def conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """Cast ``table`` to ``schema`` (missing columns as nulls, extra columns refused)."""
    columns = []
    extra = [n for n in table.column_names if n not in schema.names and n not in META_FIELDS and n != IS_DELETED]
    if extra:
        raise HoodieError(f"{what}: columns {extra} are not in the table schema")
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if column.type != field.type:
            try:
                if pa.types.is_timestamp(column.type) and column.type.tz is None:
                    column = pc.assume_timezone(column, "UTC")
                column = column.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise HoodieError(
                    f"{what}: column {field.name!r} has type {column.type}, the table stores {field.type}: {exc}"
                ) from exc
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)
