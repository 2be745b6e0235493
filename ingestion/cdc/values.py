"""Debezium JSON value encodings -> Python values typed by the contract.

Python types per contract type: ``int``/``bigint`` -> int, ``string`` -> str,
``double`` -> float, ``boolean`` -> bool, ``date`` -> ``datetime.date``,
``timestamp`` -> naive ``datetime.datetime`` meaning UTC, ``decimal(p,s)`` ->
``decimal.Decimal`` quantized to scale ``s``.

Encodings understood:

* dates: epoch days (``io.debezium.time.Date``, Kafka Connect ``Date``) or ISO text;
* timestamps: ``Timestamp`` (epoch ms), ``MicroTimestamp`` (us), ``NanoTimestamp`` (ns),
  ``ZonedTimestamp`` (ISO-8601 text with offset, converted to UTC) and plain text
  ``YYYY-MM-DD[ T]HH:MM:SS[.f]`` or TICKIT's ``M/D/YYYY HH:MM:SS`` (read as UTC).
  An integer without a schema uses the connector's default unit
  (``DEFAULT_TIMESTAMP_UNIT``: MySQL DATETIME -> ms, PostgreSQL timestamp -> us,
  SQL Server datetime -> ms);
* decimals per ``decimal.handling.mode``: ``double`` (JSON number, rounded half-up to
  the scale), ``string`` (decimal text), ``precise`` (base64 big-endian two's-complement
  unscaled bytes; the scale comes from the schema's ``scale`` parameter, else the
  contract's scale) and PostgreSQL's ``VariableScaleDecimal`` struct ``{scale, value}``.
  Without a schema, a JSON string is decimal text when it parses as one, else base64;
* booleans: JSON booleans or MySQL ``tinyint(1)`` 0/1.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from ingestion.cdc.rules import EPOCH, EPOCH_DATE, INT_RANGES
from ingestion.errors import IngestionError

#: Unit of an integer timestamp that arrives without a schema, per connector.
DEFAULT_TIMESTAMP_UNIT = {"mysql": "ms", "postgres": "us", "sqlserver": "ms"}

# Logical schema names (``schema.name``) of the Debezium / Kafka Connect encodings.
DATE_NAMES = {"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"}
TIMESTAMP_UNITS = {
    "io.debezium.time.Timestamp": "ms",
    "org.apache.kafka.connect.data.Timestamp": "ms",
    "io.debezium.time.MicroTimestamp": "us",
    "io.debezium.time.NanoTimestamp": "ns",
}
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"

_DECIMAL_TYPE = re.compile(r"^decimal\((\d+),(\d+)\)\Z")
_UNIT_DIVISOR = {"ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_TICKIT_TIME = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d{2}):(\d{2})\Z")
_DECIMAL_TEXT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")

# Kafka Connect schema types each contract type accepts (schema-wrapped events only).
_COMPATIBLE_SCHEMA_TYPES = {
    "int": {"int8", "int16", "int32"},
    "bigint": {"int8", "int16", "int32", "int64"},
    "string": {"string"},
    "double": {"float", "double", "float32", "float64", "int8", "int16", "int32", "int64"},
    "boolean": {"boolean", "int8", "int16"},
    "date": {"int32", "string"},
    "timestamp": {"int64", "string"},
    "decimal": {"bytes", "string", "double", "float", "float64", "float32", "struct", "int64", "int32"},
}


class ValueMismatch(IngestionError, ValueError):
    """A value does not fit its contract type (message names the problem, not the column)."""


class SchemaMismatch(IngestionError, ValueError):
    """The event's own schema declares a type the contract column cannot take."""


@dataclass(frozen=True)
class FieldSchema:
    """What a JsonConverter schema says about one field: type, logical name, parameters."""

    type: str
    name: str | None = None
    parameters: dict[str, str] | None = None

    @classmethod
    def from_json(cls, spec: dict[str, Any]) -> FieldSchema:
        name = spec.get("name")
        parameters = spec.get("parameters")
        return cls(
            type=str(spec.get("type")),
            name=name if isinstance(name, str) else None,
            parameters=parameters if isinstance(parameters, dict) else None,
        )


def decimal_precision_scale(column_type: str) -> tuple[int, int] | None:
    match = _DECIMAL_TYPE.match(column_type)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_schema_compatible(column_type: str, schema: FieldSchema) -> None:
    """Raise SchemaMismatch when the event schema's type cannot feed ``column_type``."""
    problem = _schema_problem(column_type, schema.type, schema.name)
    if problem is not None:
        raise SchemaMismatch(problem)


@functools.lru_cache(maxsize=4096)
def _schema_problem(column_type: str, schema_type: str, schema_name: str | None) -> str | None:
    """Why a field schema (type, logical name) cannot feed ``column_type``; None when it can.

    Cached: the rule depends on these three strings only, and an Avro file (or a topic's
    JSON lines with schemas) repeats the same few pairs for every event.
    """
    schema = FieldSchema(schema_type, schema_name)
    base = "decimal" if column_type.startswith("decimal") else column_type
    allowed = _COMPATIBLE_SCHEMA_TYPES[base]
    bad = schema.type not in allowed
    if base in ("int", "bigint") and (schema.name in DATE_NAMES or schema.name in TIMESTAMP_UNITS):
        bad = True
    if base == "date" and schema.type == "int32" and schema.name not in DATE_NAMES:
        bad = True
    if base == "timestamp" and schema.type == "int64" and schema.name not in TIMESTAMP_UNITS:
        bad = True
    if base == "decimal" and schema.type == "bytes" and schema.name != CONNECT_DECIMAL:
        bad = True
    if base == "decimal" and schema.type == "struct" and schema.name != VARIABLE_SCALE_DECIMAL:
        bad = True
    if bad:
        label = schema.type + (f" ({schema.name})" if schema.name else "")
        return f"event schema type {label} does not fit contract type {column_type}"
    return None


def decode_value(value: Any, column_type: str, connector: str, schema: FieldSchema | None = None) -> Any:
    """Decode one JSON value into the Python value of ``column_type`` (None stays None)."""
    if value is None:
        return None
    if column_type in INT_RANGES:
        return _to_int(value, column_type)
    if column_type == "string":
        if not isinstance(value, str):
            raise ValueMismatch(f"expected a string, got {_describe(value)}")
        return value
    if column_type == "double":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueMismatch(f"expected a number, got {_describe(value)}")
        return float(value)
    if column_type == "boolean":
        return _to_bool(value)
    if column_type == "date":
        return _to_date(value)
    if column_type == "timestamp":
        return _to_timestamp(value, connector, schema)
    precision_scale = decimal_precision_scale(column_type)
    if precision_scale:
        return _to_decimal(value, *precision_scale, schema)
    raise ValueError(f"unsupported contract type {column_type!r}")


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _to_int(value: Any, column_type: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueMismatch(f"expected an integer, got {_describe(value)}")
    low, high = INT_RANGES[column_type]
    if not low <= value <= high:
        raise ValueMismatch(f"integer {value} is out of range for {column_type}")
    return value


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):  # MySQL tinyint(1)
        return bool(value)
    raise ValueMismatch(f"expected a boolean or tinyint(1) 0/1, got {_describe(value)}")


def _to_date(value: Any) -> dt.date:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return EPOCH_DATE + dt.timedelta(days=value)
        except OverflowError as exc:
            raise ValueMismatch(f"epoch day {value} is out of range") from exc
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value) if len(value) == 10 else _iso_date(value)
        except ValueError as exc:
            raise ValueMismatch(f"expected an ISO date, got {_describe(value)}") from exc
    raise ValueMismatch(f"expected epoch days or an ISO date, got {_describe(value)}")


def _iso_date(text: str) -> dt.date:
    parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.time() != dt.time(0) or (parsed.tzinfo and parsed.utcoffset()):
        raise ValueError(text)
    return parsed.date()


def _to_timestamp(value: Any, connector: str, schema: FieldSchema | None) -> dt.datetime:
    if isinstance(value, int) and not isinstance(value, bool):
        unit = TIMESTAMP_UNITS.get(schema.name) if schema and schema.name else None
        unit = unit or DEFAULT_TIMESTAMP_UNIT[connector]
        return epoch_to_datetime(value, unit)
    if isinstance(value, str):
        return parse_timestamp_text(value)
    raise ValueMismatch(f"expected an epoch timestamp or ISO text, got {_describe(value)}")


def epoch_to_datetime(value: int, unit: str) -> dt.datetime:
    """Epoch ``value`` in ``unit`` (ms/us/ns) as a naive UTC datetime (ns truncated to us)."""
    micros = value * 1000 if unit == "ms" else value if unit == "us" else value // 1000
    try:
        return EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError as exc:
        raise ValueMismatch(f"epoch {unit} {value} is out of range") from exc


def parse_timestamp_text(text: str) -> dt.datetime:
    """ISO-8601 text (offset converted to UTC, naive result) or TICKIT ``M/D/YYYY HH:MM:SS``."""
    match = _TICKIT_TIME.match(text)
    try:
        if match:
            month, day, year, hour, minute, second = (int(g) for g in match.groups())
            return dt.datetime(year, month, day, hour, minute, second)
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        raise ValueMismatch(f"expected an ISO-8601 timestamp, got {_describe(text)}") from exc
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def _to_decimal(value: Any, precision: int, scale: int, schema: FieldSchema | None) -> Decimal:
    if isinstance(value, bool):
        raise ValueMismatch(f"expected a decimal, got {_describe(value)}")
    if isinstance(value, float):
        number = Decimal(repr(value))  # shortest round-trip text: 109.2, not 109.2000000000000028...
    elif isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, dict):
        number = _variable_scale_decimal(value)
    elif isinstance(value, str):
        use_bytes = schema is not None and schema.type == "bytes"
        if not use_bytes and _DECIMAL_TEXT.match(value):
            number = Decimal(value)
        else:
            byte_scale = scale
            if schema is not None and schema.parameters and "scale" in schema.parameters:
                byte_scale = _schema_scale(schema.parameters["scale"])
            number = _unscaled_bytes_decimal(value, byte_scale)
    else:
        raise ValueMismatch(f"expected a decimal, got {_describe(value)}")
    if not number.is_finite():
        raise ValueMismatch(f"decimal {value!r} is not finite")
    try:
        quantized = number.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except (InvalidOperation, ArithmeticError) as exc:
        raise ValueMismatch(f"decimal {value!r} does not fit decimal({precision},{scale})") from exc
    if len(quantized.as_tuple().digits) > precision:
        raise ValueMismatch(f"decimal {value!r} does not fit decimal({precision},{scale})")
    return quantized


def _schema_scale(value: Any) -> int:
    text = str(value)
    if not text.isascii() or not text.isdigit() or int(text) > 1000:
        raise ValueMismatch(f"decimal schema scale {value!r} is not a small non-negative integer")
    return int(text)


def _unscaled_bytes_decimal(text: Any, scale: int) -> Decimal:
    if not isinstance(text, str):
        raise ValueMismatch(f"expected base64 decimal bytes, got {_describe(text)}")
    if abs(scale) > 1000:
        raise ValueMismatch(f"decimal scale {scale} is out of range")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueMismatch(f"expected decimal text or base64 bytes, got {_describe(text)}") from exc
    if not raw:
        raise ValueMismatch("empty base64 decimal")
    return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)


def _variable_scale_decimal(value: dict[str, Any]) -> Decimal:
    if set(value) != {"scale", "value"} or not isinstance(value["scale"], int):
        raise ValueMismatch(f"expected a VariableScaleDecimal {{scale, value}}, got {_describe(value)}")
    return _unscaled_bytes_decimal(value["value"], value["scale"])


def encode_unscaled_bytes(number: Decimal, scale: int) -> str:
    """``precise`` mode encoding of a decimal: base64 of the big-endian two's-complement unscaled value."""
    unscaled = int(number.scaleb(scale).to_integral_value())
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode("ascii")
