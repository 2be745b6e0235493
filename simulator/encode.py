"""Render simulated changes as Debezium JSON lines: envelope, schema-wrapped envelope, flattened.

Value encodings follow each connector's defaults with ``decimal.handling.mode=double``
(the reference pipeline): MySQL DATETIME -> epoch ms (``io.debezium.time.Timestamp``),
PostgreSQL timestamp -> epoch us (``MicroTimestamp``), dates -> epoch days, MySQL
``tinyint(1)`` booleans -> 0/1, other booleans -> true/false, decimals -> JSON numbers.
Schema-wrapped lines (JsonConverter ``schemas.enable=true``) carry decimals as
``precise`` base64 bytes with a ``Decimal`` schema instead.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any, overload

from ingestion.cdc.contracts import TableContract
from ingestion.cdc.position import POSITION_SOURCE_FIELDS
from ingestion.cdc.values import decimal_precision_scale, encode_unscaled_bytes

ENVELOPE = "envelope"
WRAPPED = "wrapped"
FLATTENED = "flattened"
SHAPES = (ENVELOPE, WRAPPED, FLATTENED)

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1)
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def epoch_ms(value: dt.datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def epoch_us(value: dt.datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds



#: Connect types of the connectors' own ``source`` fields, and which fields each connector sends.
POSITION_TYPES = {
    "lsn": "int64", "txId": "int64", "xmin": "int64", "file": "string", "pos": "int64", "row": "int32",
    "server_id": "int64", "gtid": "string", "thread": "int64", "change_lsn": "string", "commit_lsn": "string",
    "event_serial_no": "int64", "sequence": "string",
}  # fmt: skip
SOURCE_EXTRA = {"postgres": ("txId", "lsn", "xmin", "sequence"),
                "mysql": ("server_id", "gtid", "file", "pos", "row", "thread"),
                "sqlserver": ("change_lsn", "commit_lsn", "event_serial_no")}  # fmt: skip

class RowEncoder:
    """Encodes rows of one table the way its connector's Debezium connector does."""

    def __init__(self, contract: TableContract, tinyint_booleans: bool = True):
        """``tinyint_booleans=False`` writes MySQL ``tinyint(1)`` as JSON booleans (as with a boolean converter)."""
        self.tinyint_booleans = tinyint_booleans
        self.contract = contract
        self.connector = contract.connector
        self.columns = contract.column_names
        self._types = {c.name: c.type for c in contract.columns}
        self._schema_json: str | None = None
        self._key = contract.primary_key[0]
        self._converters = [(name, self._converter(self._types[name])) for name in self.columns]
        #: primary key -> (row, its JSON text): rows are never mutated, so identity means "same version"
        self._text_cache: dict[Any, tuple[dict[str, Any], str]] = {}

    def _converter(self, kind: str):
        if kind == "timestamp":
            return epoch_us if self.connector == "postgres" else epoch_ms
        if kind == "date":
            return lambda value: (value - _EPOCH_DAY).days
        if kind == "boolean" and self.connector == "mysql" and self.tinyint_booleans:
            return int
        if kind.startswith("decimal"):
            return float
        return None

    def row_text(self, row: dict[str, Any] | None) -> str:
        """The row as the JSON object Debezium writes (double decimal mode), cached per row version."""
        if row is None:
            return "null"
        key = row[self._key]
        cached = self._text_cache.get(key)
        if cached is not None and cached[0] is row:
            return cached[1]
        values = {}
        for name, convert in self._converters:
            value = row[name]
            values[name] = value if value is None or convert is None else convert(value)
        text = _DUMPS(values)
        self._text_cache[key] = (row, text)
        return text

    def value(self, name: str, value: Any, precise: bool = False) -> Any:
        if value is None:
            return None
        kind = self._types[name]
        if kind == "timestamp":
            return epoch_us(value) if self.connector == "postgres" else epoch_ms(value)
        if kind == "date":
            return (value - _EPOCH_DAY).days
        if kind == "boolean":
            return int(value) if self.connector == "mysql" and self.tinyint_booleans else value
        if isinstance(value, Decimal):
            if precise:
                return encode_unscaled_bytes(value, self.precision_scale(name)[1])
            return float(value)
        return value

    def precision_scale(self, name: str) -> tuple[int, int]:
        kind = self._types[name]
        precision_scale = decimal_precision_scale(kind)
        if precision_scale is None:
            raise ValueError(f"column {name!r} of {self.contract.name} has type {kind!r}, not decimal(p,s)")
        return precision_scale

    @overload
    def encode_row(self, row: dict[str, Any], precise: bool = False) -> dict[str, Any]: ...
    @overload
    def encode_row(self, row: None, precise: bool = False) -> None: ...
    def encode_row(self, row: dict[str, Any] | None, precise: bool = False) -> dict[str, Any] | None:
        if row is None:
            return None
        return {name: self.value(name, row[name], precise) for name in self.columns}

    def schema_json(self) -> str:
        """The JsonConverter schema of this table's envelope, serialized once."""
        if self._schema_json is None:
            self._schema_json = _DUMPS(self._schema())
        return self._schema_json

    def _field_schema(self, name: str) -> dict[str, Any]:
        kind = self._types[name]
        optional = name not in self.contract.primary_key
        spec: dict[str, Any] = {"optional": optional, "field": name}
        if kind == "int":
            spec["type"] = "int32"
        elif kind == "bigint":
            spec["type"] = "int64"
        elif kind == "string":
            spec["type"] = "string"
        elif kind == "double":
            spec["type"] = "double"
        elif kind == "boolean":
            spec["type"] = "int16" if self.connector == "mysql" else "boolean"
        elif kind == "date":
            spec.update(type="int32", name="io.debezium.time.Date", version=1)
        elif kind == "timestamp":
            logical = (
                "io.debezium.time.MicroTimestamp" if self.connector == "postgres" else "io.debezium.time.Timestamp"
            )
            spec.update(type="int64", name=logical, version=1)
        else:
            precision, scale = self.precision_scale(name)
            spec.update(
                type="bytes",
                name="org.apache.kafka.connect.data.Decimal",
                version=1,
                parameters={"scale": str(scale), "connect.decimal.precision": str(precision)},
            )
        return spec

    def _schema(self) -> dict[str, Any]:
        value_name = f"{SERVER_PREFIX}.{self.contract.system}.{self.contract.name}.Value"
        row_fields = [self._field_schema(name) for name in self.columns]
        source_fields = [
            {"type": "string", "optional": False, "field": "version"},
            {"type": "string", "optional": False, "field": "connector"},
            {"type": "string", "optional": False, "field": "name"},
            {"type": "int64", "optional": False, "field": "ts_ms"},
            {
                "type": "string",
                "optional": True,
                "name": "io.debezium.data.Enum",
                "version": 1,
                "parameters": {
                    "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
                },
                "default": "false",
                "field": "snapshot",
            },
            {"type": "string", "optional": False, "field": "db"},
            {"type": "string", "optional": True, "field": "schema"},
            {"type": "string", "optional": False, "field": "table"},
        ]
        source_fields += [{"type": POSITION_TYPES[f], "optional": True, "field": f}
                          for f in SOURCE_EXTRA[self.connector]]
        return {
            "type": "struct",
            "fields": [
                {"type": "struct", "fields": row_fields, "optional": True, "name": value_name, "field": "before"},
                {"type": "struct", "fields": row_fields, "optional": True, "name": value_name, "field": "after"},
                {
                    "type": "struct",
                    "fields": source_fields,
                    "optional": False,
                    "name": "io.debezium.connector.source",
                    "field": "source",
                },
                {"type": "string", "optional": False, "field": "op"},
                {"type": "int64", "optional": True, "field": "ts_ms"},
            ],
            "optional": False,
            "name": f"{SERVER_PREFIX}.{self.contract.system}.{self.contract.name}.Envelope",
        }

    def render(
        self,
        shape: str,
        op: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        source: dict[str, Any],
        ts_ms: int,
    ) -> bytes:
        """One landing line (no newline) for a change in the given shape."""
        if shape == FLATTENED:
            return self._flattened(op, before, after, source).encode("utf-8")
        if shape == WRAPPED:
            payload = {
                "before": self.encode_row(before, True),
                "after": self.encode_row(after, True),
                "source": source,
                "op": op,
                "ts_ms": ts_ms,
                "transaction": None,
            }
            if op == "t":
                del payload["before"], payload["after"]
            return ('{"schema":' + self.schema_json() + ',"payload":' + _DUMPS(payload) + "}").encode("utf-8")
        rows = "" if op == "t" else f'"before":{self.row_text(before)},"after":{self.row_text(after)},'
        text = f'{{{rows}"source":{_DUMPS(source)},"op":"{op}","ts_ms":{ts_ms},"transaction":null}}'
        return text.encode("utf-8")

    def _flattened(self, op: str, before, after, source: dict[str, Any]) -> str:
        meta: dict[str, Any] = {}
        if op != "t":
            meta["__deleted"] = "true" if op == "d" else "false"
        meta["__op"] = op
        meta["__name"] = source["name"]
        meta["__db"] = source["db"]
        if "schema" in source:
            meta["__schema"] = source["schema"]
        meta["__table"] = source["table"]
        meta["__source_ts_ms"] = source["ts_ms"]
        for name in POSITION_SOURCE_FIELDS[self.connector]:  # add.fields=...,sequence for PostgreSQL
            meta["__" + name] = source.get(name)
        if self.connector == "mysql":
            meta["__gtid"] = source.get("gtid")
        if op == "t":
            return _DUMPS(meta)
        return self.row_text(before if op == "d" else after)[:-1] + "," + _DUMPS(meta)[1:]


SERVER_PREFIX = "tickit"
