"""Vectorized fast path for Avro landing files: decoded records -> the JSON fast path's checks.

An Avro landing file (the S3 sink's AvroFormat with Debezium's Avro converter) has one
writer schema. When that schema gives every contract column in an encoding the JSON fast
path reads (``ingestion.stream.fast_parse``: integers, strings, doubles, booleans or
tinyint(1), ``io.debezium.time.Date`` days, epoch timestamps in the connector's default
unit, decimals as doubles or Connect ``Decimal`` bytes of the contract's scale) and the
file holds Debezium envelopes, its records, decoded by fastavro, become one Arrow table of the shape the JSON
fast path reads from envelope lines, and go through the same vectorized validation and
bronze columns (``FastFileParser.convert``). Records that fail a check, and every file
whose schema is not plain (flattened events, drift columns, other encodings, a damaged
file), go through the project's event parser (``parse_record``), so the rows are exactly
those of the Python path (``tests/stream/test_fast_parse.py`` compares both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pyarrow as pa

from ingestion.cdc.avro_records import AvroContainer, AvroFailure, AvroSchema
from ingestion.cdc.contracts import TableContract
from ingestion.cdc.parser import ParseResult, parse_record, row_field_schemas
from ingestion.cdc.values import (
    CONNECT_DECIMAL,
    DATE_NAMES,
    DEFAULT_TIMESTAMP_UNIT,
    TIMESTAMP_UNITS,
    FieldSchema,
    decimal_precision_scale,
)
from ingestion.stream.fast_parse import FastFileParser, FileOutcome, delivery_for

_ENVELOPE_FIELDS = frozenset({"before", "after", "source", "op"})
_INTEGERS = {"int": ("int8", "int16", "int32"), "bigint": ("int8", "int16", "int32", "int64")}
_FLOATS = ("float", "double", "float32", "float64")


@dataclass
class AvroOutcome:
    """One Avro file through the fast path: the fast rows, and what the event parser made of the rest."""

    fast: FileOutcome
    python: list[ParseResult] = field(default_factory=list)
    records: int = 0  # the file's record indexes (its "lines")


@dataclass(frozen=True)
class _Plan:
    sniffed: dict[str, str]  # boolean columns read as JSON numbers (tinyint(1)) or booleans
    decimals: dict[str, tuple[str, int]]  # decimal columns -> (bytes or double, scale): Decimals before
    # the table is built, as the event parser makes them
    doubles: tuple[str, ...]  # double columns (a non-finite value sends the file to Python)


def _plan(contract: TableContract, schema: AvroSchema) -> _Plan | None:
    """How to read the file's rows into the JSON fast path's table, or None when it cannot."""
    top = {f.get("field") for f in schema.connect.get("fields") or [] if isinstance(f, dict)}
    if not _ENVELOPE_FIELDS.issubset(top):
        return None
    fields = row_field_schemas(schema.connect)
    if set(fields) != set(contract.column_names):
        return None
    sniffed: dict[str, str] = {}
    decimals: dict[str, tuple[str, int]] = {}
    doubles: list[str] = []
    for column in contract.columns:
        spec = fields[column.name]
        kind = _read_kind(column.type, spec, contract.connector)
        if kind is None:
            return None
        precision_scale = decimal_precision_scale(column.type)
        if precision_scale is not None:
            decimals[column.name] = (kind, precision_scale[1])
        elif kind in ("bool", "number"):
            sniffed[column.name] = kind
        elif kind == "double":
            doubles.append(column.name)
    return _Plan(sniffed, decimals, tuple(doubles))


def _read_kind(column_type: str, spec: FieldSchema, connector: str) -> str | None:
    """What the fast path reads a column of ``column_type`` from an Avro field of ``spec`` as; None
    for an encoding it does not read exactly as the event parser does."""
    if column_type in _INTEGERS:
        return "int" if spec.type in _INTEGERS[column_type] and spec.name is None else None
    if column_type == "string":
        return "string" if spec.type == "string" and spec.name is None else None
    if column_type == "double":
        return "double" if spec.type in _FLOATS and spec.name is None else None
    if column_type == "boolean":
        if spec.name is not None:
            return None
        return "bool" if spec.type == "boolean" else "number" if spec.type in ("int8", "int16") else None
    if column_type == "date":
        return "date" if spec.type == "int32" and spec.name in DATE_NAMES else None
    if column_type == "timestamp":
        unit = TIMESTAMP_UNITS.get(spec.name or "")
        return "timestamp" if spec.type == "int64" and unit == DEFAULT_TIMESTAMP_UNIT[connector] else None
    precision_scale = decimal_precision_scale(column_type)
    if precision_scale is None:
        return None
    if spec.type in ("double", "float64") and spec.name is None:  # decimal.handling.mode=double
        return "double"
    if spec.type != "bytes" or spec.name != CONNECT_DECIMAL:  # precise: Connect Decimal bytes
        return None
    parameters = spec.parameters or {}
    precision = parameters.get("connect.decimal.precision")
    if parameters.get("scale", "0") != str(precision_scale[1]) or precision not in (None, str(precision_scale[0])):
        return None
    return "bytes"


def _decimal(value: Any, encoding: str, scale: int) -> Decimal | None:
    """The event parser's Decimal of a value (``values._to_decimal``): unscaled big-endian bytes of
    the contract's scale, or a double's shortest text rounded half-up to the scale. Raises
    ValueError where the parser would reject the value (the file then goes to the parser)."""
    if value is None:
        return None
    if encoding == "bytes":
        if not isinstance(value, bytes) or not value:
            raise ValueError("empty or non-bytes decimal")
        return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)
    if not isinstance(value, float) or not math.isfinite(value):
        raise ValueError("non-finite or non-float decimal")
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def parse_avro_fast(parser: FastFileParser, content: bytes, landing_file: str, topic: str, partition: int,
                    start_offset: int, contracts: dict[str, TableContract], ingested_at) -> AvroOutcome | None:
    """The file through the fast path, or None when the event parser must read it whole."""
    if not parser.enabled:
        return None
    container = AvroContainer.open(content, landing_file)
    schema = container.schema
    if schema is None:
        return None
    plan = _plan(parser.contract, schema)
    if plan is None:
        return None
    datums: list[Any] = []
    for item in container.items(raw=True):
        if isinstance(item, AvroFailure):
            return None  # a damaged file: the event parser makes its dead letters
        datums.append(item.payload)
    outcome = AvroOutcome(FileOutcome(table=parser.contract.name), records=len(datums))
    indexes = [i for i, datum in enumerate(datums) if datum is not None]
    outcome.fast.tombstones = len(datums) - len(indexes)
    rows = [datums[i] for i in indexes]
    if not all(isinstance(row, dict) for row in rows):
        return None
    if plan.decimals or plan.doubles:
        rows = [_readable(row, plan) for row in rows]
        if any(row is None for row in rows):
            return None
    try:
        table = pa.Table.from_pylist(rows, schema=parser.read_schema("envelope", plan.sniffed))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    if indexes:
        parser.convert("envelope", table, indexes, delivery_for(topic, partition, start_offset, landing_file),
                        outcome.fast)
    for index in outcome.fast.fallback:
        outcome.python.append(parse_record(
            schema.convert(datums[index]), schema=schema.connect, topic=topic, partition=partition,
            offset=start_offset + index, landing_file=landing_file, ingested_at=ingested_at, contracts=contracts,
            row_schemas=schema.row_schemas))
    outcome.fast.fallback = []
    return outcome


def _readable(row: dict[str, Any], plan: _Plan) -> dict[str, Any] | None:
    """A copy of an envelope with its decimals as Decimals (the datum itself stays as decoded,
    for the event parser); None when a double is not finite (Arrow would take it, the parser not)."""
    copy = dict(row)
    for side in ("before", "after"):
        image = row.get(side)
        if not isinstance(image, dict):
            continue
        image = dict(image)
        for name, (encoding, scale) in plan.decimals.items():
            try:
                image[name] = _decimal(image.get(name), encoding, scale)
            except (ValueError, ArithmeticError):
                return None
        for name in plan.doubles:
            value = image.get(name)
            if isinstance(value, float) and not math.isfinite(value):
                return None
        copy[side] = image
    return copy
