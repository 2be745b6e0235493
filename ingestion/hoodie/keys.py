"""Record keys and partition paths, computed as Hudi's key generators do, vectorized over Arrow.

- Simple / non-partitioned key generator with one key field: the value as a string.
- Complex key (several key fields): ``f1:v1,f2:v2`` with ``__null__`` / ``__empty__`` for null / "".
- Partition path: values joined by ``/``; hive style gives ``f=v``; a null or empty value is
  ``__HIVE_DEFAULT_PARTITION__``; with url-encoding, Hive path escaping.
Value rendering follows Java: dates ``yyyy-MM-dd``, booleans ``true``, decimals as BigDecimal
``toString`` (plain), doubles as ``Double.toString``, timestamps as epoch microseconds (Hudi's default
without ``keygenerator.consistent.logical.timestamp``).
"""

from __future__ import annotations

import decimal
import math

import pyarrow as pa
import pyarrow.compute as pc

from ingestion.hoodie.config import TableConfig
from ingestion.hoodie.errors import HoodieError

NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
_HIVE_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(0x20)}


def _java_double(value: float) -> str:
    """Java ``Double.toString``: shortest digits, plain in [1e-3, 1e7), else ``d.dddE<exp>``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(float(value))
        return text if "." in text else text + ".0"
    sign, digits, exponent = decimal.Decimal(repr(float(value))).normalize().as_tuple()
    text = "".join(map(str, digits))
    power = len(text) - 1 + int(exponent)
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def value_strings(column: pa.ChunkedArray | pa.Array, name: str) -> pa.ChunkedArray | pa.Array:
    """Render a column's values as Hudi's key generators do (nulls stay null)."""
    dtype = column.type
    if pa.types.is_string(dtype):
        return column
    if pa.types.is_large_string(dtype):
        return pc.cast(column, pa.string())
    if pa.types.is_timestamp(dtype):
        micros = pc.cast(column, pa.timestamp("us", tz=dtype.tz))
        return pc.cast(pc.cast(micros, pa.int64()), pa.string())
    if pa.types.is_floating(dtype):
        return pa.array([None if v is None else _java_double(v) for v in column.to_pylist()], pa.string())
    if (
        pa.types.is_integer(dtype)
        or pa.types.is_boolean(dtype)
        or pa.types.is_date(dtype)
        or pa.types.is_decimal(dtype)
    ):
        return pc.cast(column, pa.string())
    raise HoodieError(f"field {name!r} of type {dtype} cannot be part of a record key or partition path")


def _column(table: pa.Table, name: str, what: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise HoodieError(f"{what} field {name!r} is not a column of the data (columns: {table.column_names})")
    return table.column(name)


def record_keys(table: pa.Table, config: TableConfig) -> pa.ChunkedArray | pa.Array:
    if not config.complex_keys:
        field = config.record_key_fields[0]
        values = value_strings(_column(table, field, "record key"), field)
        bad = pc.sum(pc.cast(pc.or_kleene(pc.is_null(values), pc.equal(values, "")), pa.int64())).as_py() or 0
        if bad:
            raise HoodieError(f"record key field {field!r} is null or empty in {bad} row(s)")
        return values
    parts = []
    for field in config.record_key_fields:
        values = value_strings(_column(table, field, "record key"), field)
        values = pc.if_else(pc.equal(values, ""), EMPTY_KEY, values)
        values = pc.fill_null(values, NULL_KEY)
        parts.append(pc.binary_join_element_wise(pa.scalar(f"{field}:"), values, ""))
    keys = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, ",")
    all_null = None
    for field in config.record_key_fields:
        null = pc.is_null(table.column(field))
        all_null = null if all_null is None else pc.and_(all_null, null)
    if all_null is not None and pc.any(all_null).as_py():
        raise HoodieError(f"record key fields {list(config.record_key_fields)} are all null in some row(s)")
    return keys


def _hive_escape(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPE else c for c in text)


def partition_paths(table: pa.Table, config: TableConfig) -> pa.ChunkedArray | pa.Array:
    if not config.partition_fields:
        return pa.array([""] * table.num_rows, pa.string())
    parts = []
    for field in config.partition_fields:
        values = value_strings(_column(table, field, "partition"), field)
        values = pc.fill_null(pc.if_else(pc.equal(values, ""), DEFAULT_PARTITION, values), DEFAULT_PARTITION)
        if config.url_encode:
            values = pa.array([_hive_escape(v) for v in values.to_pylist()], pa.string())
        if config.hive_style:
            values = pc.binary_join_element_wise(pa.scalar(f"{field}="), values, "")
        parts.append(values)
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "/")


def with_keys(table: pa.Table, config: TableConfig) -> pa.Table:
    """The table with ``_hoodie_record_key`` and ``_hoodie_partition_path`` (re)computed."""
    keys, paths = record_keys(table, config), partition_paths(table, config)
    for name, values in ((RECORD_KEY, keys), (PARTITION_PATH, paths)):
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), name, values)
        else:
            table = table.append_column(name, values)
    return table
