"""Render simulated changes as Avro records, the way Debezium's Avro converter and the S3 sink's AvroFormat do.

Debezium builds a Kafka Connect schema for every event; an Avro converter turns it into
an Avro schema with Confluent's ``AvroData`` rules, which ``connect_to_avro`` follows:

* Connect ``int8``/``int16`` -> Avro ``int`` with ``"connect.type": "int8"``/``"int16"``;
  ``int32`` -> ``int``, ``int64`` -> ``long``, ``float32`` -> ``float``, ``float64`` ->
  ``double``; ``boolean``, ``string``, ``bytes`` as they are;
* a named schema keeps its name, version and parameters as ``connect.name``,
  ``connect.version``, ``connect.parameters``: Debezium's own semantic types
  (``io.debezium.time.Timestamp``, ``MicroTimestamp``, ``Date``, ...) are plain ``long``/``int``
  with that name and no Avro logical type; Connect's ``Decimal`` is ``bytes`` with
  ``"logicalType": "decimal"``, ``precision`` and ``scale``; Connect's ``Date``,
  ``Time`` and ``Timestamp`` get the Avro logical types ``date``, ``time-millis`` and
  ``timestamp-millis``;
* a struct is a record named by its Connect name (``tickit.ecomm.sale.Value``: namespace
  ``tickit.ecomm.sale``, name ``Value``) with ``connect.name``; a record name used again
  (``after`` after ``before``) is a reference to the first definition;
* an optional schema is a union with ``null``: ``["null", T]`` with default null, or
  ``[T, "null"]`` when the Connect schema has a default (the source's ``snapshot``).

The value shapes match ``simulator.encode`` (same rows, same source blocks):

* ``envelope``: before/after/source/transaction/op/ts_ms, ``decimal.handling.mode=double``;
* ``wrapped`` (the JSON shape with schemas, which carries ``precise`` decimals): the same
  envelope with decimals as Connect ``Decimal`` (Avro ``decimal`` bytes);
* ``flattened``: ExtractNewRecordState with ``delete.handling.mode=rewrite`` and the
  ``add.fields`` of ``simulator.encode``: the row (``before`` for a delete) plus optional
  ``__deleted``, ``__op``, ``__name``, ``__db``, ``__schema``, ``__table``,
  ``__source_ts_ms`` and the position fields. The transform passes a truncate (which has no
  row) through unchanged, so a truncate is an envelope record in every shape.

Records hold the raw values (epoch days, epoch ms/us, unscaled decimal bytes): what a
reader gets with logical types off. The sink writes each chunk as an object container
file with the records' writer schema; a record with another schema starts a new file
(``schema.compatibility=NONE``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import fastavro

from ingestion.cdc.contracts import TableContract
from ingestion.cdc.position import POSITION_SOURCE_FIELDS
from ingestion.cdc.values import CONNECT_DECIMAL
from simulator.encode import ENVELOPE, FLATTENED, POSITION_TYPES, SERVER_PREFIX, SOURCE_EXTRA, WRAPPED, RowEncoder

_AVRO_PRIMITIVES = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float", "float64": "double",
    "float": "float", "double": "double", "boolean": "boolean", "string": "string", "bytes": "bytes",
}  # fmt: skip
_CONNECT_LOGICAL = {
    CONNECT_DECIMAL: "decimal",
    "org.apache.kafka.connect.data.Date": "date",
    "org.apache.kafka.connect.data.Time": "time-millis",
    "org.apache.kafka.connect.data.Timestamp": "timestamp-millis",
}
_SNAPSHOT_VALUES = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"


def connect_to_avro(schema: dict[str, Any]) -> Any:
    """The Avro schema an Avro converter derives from a Connect schema (module docstring)."""
    return _AvroBuilder().build(schema)


class _AvroBuilder:
    def __init__(self) -> None:
        self.defined: set[str] = set()

    def build(self, schema: dict[str, Any]) -> Any:
        avro = self._type(schema)
        if schema.get("optional"):
            default = schema.get("default")
            return [avro, "null"] if default is not None else ["null", avro]
        return avro

    def _props(self, schema: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = {}
        if "version" in schema:
            props["connect.version"] = schema["version"]
        if schema.get("parameters"):
            props["connect.parameters"] = dict(schema["parameters"])
        if schema.get("default") is not None:
            props["connect.default"] = schema["default"]
        if "name" in schema:
            props["connect.name"] = schema["name"]
        return props

    def _type(self, schema: dict[str, Any]) -> Any:
        kind = schema["type"]
        if kind == "struct":
            full = schema.get("name") or "io.confluent.connect.avro.ConnectDefault"
            if full in self.defined:
                return full
            self.defined.add(full)
            namespace, _, name = full.rpartition(".")
            fields = []
            for field in schema["fields"]:
                spec: dict[str, Any] = {"name": field["field"], "type": self.build(field)}
                if field.get("optional"):
                    spec["default"] = field.get("default")
                fields.append(spec)
            record: dict[str, Any] = {"type": "record", "name": name}
            if namespace:
                record["namespace"] = namespace
            record["fields"] = fields
            record.update(self._props(schema))
            return record
        primitive = _AVRO_PRIMITIVES[kind]
        props = self._props(schema)
        if kind in ("int8", "int16"):
            props = {"connect.type": kind, **props}
        logical = _CONNECT_LOGICAL.get(schema.get("name", ""))
        if logical == "decimal":
            parameters = schema.get("parameters") or {}
            props = {"scale": int(parameters.get("scale", 0)),
                     "precision": int(parameters.get("connect.decimal.precision", 64)), **props}
        if logical:
            props["logicalType"] = logical
        return {"type": primitive, **props} if props else primitive


@dataclass(frozen=True)
class WriterSchema:
    """One Avro writer schema: the JSON, fastavro's parsed form, a key that equal schemas share."""

    avro: Any
    parsed: Any
    key: str

    @classmethod
    def of(cls, avro: Any) -> WriterSchema:
        text = json.dumps(avro, sort_keys=True, separators=(",", ":"))
        return cls(avro, fastavro.parse_schema(avro), hashlib.sha256(text.encode()).hexdigest()[:16])


@dataclass(frozen=True)
class AvroItem:
    """One Avro record for the sink: its writer schema, its raw values and the shape it was rendered in."""

    schema: WriterSchema
    record: dict[str, Any]
    tag: str


def sync_marker(path: str) -> bytes:
    """A deterministic 16-byte sync marker per landing file (the simulator's output is byte-identical per seed)."""
    return hashlib.sha256(f"tickit-sim:{path}".encode()).digest()[:16]


def container_bytes(schema: WriterSchema, records: list[dict[str, Any]], marker: bytes) -> bytes:
    """An Avro object container file (codec null, the S3 sink's default ``avro.codec``)."""
    handle = io.BytesIO()
    fastavro.writer(handle, schema.parsed, records, codec="null", sync_marker=marker)
    return handle.getvalue()


def truncated_container(item: AvroItem, marker: bytes) -> tuple[bytes, bytes]:
    """(file, raw): a container of ``item`` cut in the middle of its block (an interrupted upload),
    and the bytes a reader cannot decode: the block, from its start to the end of the file."""
    header = container_bytes(item.schema, [], marker)
    whole = container_bytes(item.schema, [item.record], marker)
    if not whole.startswith(header):
        raise ValueError("fastavro wrote a header that differs between an empty and a non-empty file")
    cut = len(header) + (len(whole) - len(header)) // 2
    return whole[:cut], whole[len(header):cut]


class AvroRowEncoder:
    """Avro records of one table, as ``simulator.encode.RowEncoder`` renders its JSON lines."""

    def __init__(self, contract: TableContract, tinyint_booleans: bool = True):
        self.contract = contract
        self.connector = contract.connector
        self.tinyint_booleans = tinyint_booleans
        self.columns = contract.column_names
        self._types = {c.name: c.type for c in contract.columns}
        self._prefix = f"{SERVER_PREFIX}.{contract.system}.{contract.name}"
        self._json = RowEncoder(contract, tinyint_booleans)

    # -- Connect schemas ----------------------------------------------------------------------
    def _field(self, name: str, precise: bool, optional: bool) -> dict[str, Any]:
        kind = self._types[name]
        spec: dict[str, Any]
        if kind in ("int", "bigint", "string", "double"):
            spec = {"type": {"int": "int32", "bigint": "int64", "string": "string", "double": "float64"}[kind]}
        elif kind == "boolean":
            spec = {"type": "int16" if self.connector == "mysql" and self.tinyint_booleans else "boolean"}
        elif kind == "date":
            spec = {"type": "int32", "name": "io.debezium.time.Date", "version": 1}
        elif kind == "timestamp":
            logical = "MicroTimestamp" if self.connector == "postgres" else "Timestamp"
            spec = {"type": "int64", "name": f"io.debezium.time.{logical}", "version": 1}
        elif precise:
            precision, scale = self._json.precision_scale(name)
            spec = {"type": "bytes", "name": CONNECT_DECIMAL, "version": 1,
                    "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)}}
        else:
            spec = {"type": "float64"}  # decimal.handling.mode=double
        return {**spec, "optional": optional, "field": name}

    def _row(self, precise: bool, loose: bool = False) -> dict[str, Any]:
        fields = [self._field(name, precise, loose or name not in self.contract.primary_key) for name in self.columns]
        return {"type": "struct", "name": f"{self._prefix}.Value", "optional": True, "fields": fields}

    def _source(self) -> dict[str, Any]:
        fields: list[dict[str, Any]] = [
            {"type": "string", "optional": False, "field": "version"},
            {"type": "string", "optional": False, "field": "connector"},
            {"type": "string", "optional": False, "field": "name"},
            {"type": "int64", "optional": False, "field": "ts_ms"},
            {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
             "parameters": {"allowed": _SNAPSHOT_VALUES}, "default": "false", "field": "snapshot"},
            {"type": "string", "optional": False, "field": "db"},
            {"type": "string", "optional": True, "field": "schema"},
            {"type": "string", "optional": False, "field": "table"},
        ]
        fields += [{"type": POSITION_TYPES[f], "optional": True, "field": f} for f in SOURCE_EXTRA[self.connector]]
        label = {"postgres": "postgresql"}.get(self.connector, self.connector)
        return {"type": "struct", "name": f"io.debezium.connector.{label}.Source", "optional": False,
                "fields": fields}

    def _envelope(self, precise: bool, loose: bool = False) -> dict[str, Any]:
        row = self._row(precise, loose)
        transaction = {"type": "struct", "name": "event.block", "version": 1, "optional": True, "fields": [
            {"type": "string", "optional": False, "field": "id"},
            {"type": "int64", "optional": False, "field": "total_order"},
            {"type": "int64", "optional": False, "field": "data_collection_order"},
        ]}  # fmt: skip
        return {"type": "struct", "name": f"{self._prefix}.Envelope", "version": 2, "optional": False, "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {**self._source(), "field": "source"},
            {**transaction, "field": "transaction"},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ]}  # fmt: skip

    def _meta_fields(self) -> list[tuple[str, str]]:
        names = [("__deleted", "string"), ("__op", "string"), ("__name", "string"), ("__db", "string")]
        if self.contract.schema:
            names.append(("__schema", "string"))
        names += [("__table", "string"), ("__source_ts_ms", "int64")]
        names += [("__" + f, POSITION_TYPES[f]) for f in POSITION_SOURCE_FIELDS[self.connector]]
        if self.connector == "mysql":
            names.append(("__gtid", "string"))
        return names

    def _flattened(self) -> dict[str, Any]:
        row = self._row(precise=False)
        meta = [{"type": kind, "optional": True, "field": name} for name, kind in self._meta_fields()]
        return {**row, "optional": False, "fields": row["fields"] + meta}

    def _message(self) -> dict[str, Any]:
        message = {"type": "struct", "name": "io.debezium.connector.postgresql.Message", "optional": True,
                   "fields": [{"type": "string", "optional": False, "field": "prefix"},
                              {"type": "bytes", "optional": True, "field": "content"}]}
        return {"type": "struct", "name": "io.debezium.connector.postgresql.MessageValue", "optional": False,
                "fields": [{"type": "string", "optional": False, "field": "op"},
                           {"type": "int64", "optional": True, "field": "ts_ms"},
                           {**self._source(), "field": "source"},
                           {**message, "field": "message"}]}

    @functools.cached_property
    def _schemas(self) -> dict[str, WriterSchema]:
        return {
            ENVELOPE: WriterSchema.of(connect_to_avro(self._envelope(precise=False))),
            WRAPPED: WriterSchema.of(connect_to_avro(self._envelope(precise=True))),
            FLATTENED: WriterSchema.of(connect_to_avro(self._flattened())),
            "loose": WriterSchema.of(connect_to_avro(self._envelope(precise=False, loose=True))),
            "message": WriterSchema.of(connect_to_avro(self._message())),
        }

    def writer_schema(self, kind: str) -> WriterSchema:
        return self._schemas[kind]

    # -- values -----------------------------------------------------------------------------
    def value(self, name: str, value: Any, precise: bool = False) -> Any:
        """The value as Debezium's JSON encoding has it (``RowEncoder.value``), in Avro's types:
        a precise decimal as its unscaled bytes (not base64 text), a boolean as a boolean."""
        encoded = self._json.value(name, value, precise)
        if encoded is None:
            return None
        if precise and isinstance(value, Decimal):
            return base64.b64decode(encoded)
        if self._types[name] == "boolean" and not (self.connector == "mysql" and self.tinyint_booleans):
            return bool(encoded)
        return encoded

    def row(self, row: dict[str, Any] | None, precise: bool = False) -> dict[str, Any] | None:
        if row is None:
            return None
        return {name: self.value(name, row[name], precise) for name in self.columns}

    def source_record(self, source: dict[str, Any]) -> dict[str, Any]:
        fields = ("version", "connector", "name", "ts_ms", "snapshot", "db", "schema", "table",
                  *SOURCE_EXTRA[self.connector])
        return {name: source.get(name) for name in fields}

    def envelope(self, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
                 source: dict[str, Any], ts_ms: int, precise: bool = False) -> dict[str, Any]:
        return {"before": self.row(before, precise), "after": self.row(after, precise),
                "source": self.source_record(source), "transaction": None, "op": op, "ts_ms": ts_ms}

    def item(self, shape: str, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
             source: dict[str, Any], ts_ms: int) -> AvroItem:
        """The record of one change in ``shape`` (a truncate is an envelope in every shape)."""
        if shape == FLATTENED and op != "t":
            image = self.row(before if op == "d" else after)
            if image is None:
                raise ValueError(f"a flattened {op!r} event needs its row")
            meta: dict[str, Any] = {"__deleted": "true" if op == "d" else "false", "__op": op,
                                    "__name": source["name"], "__db": source["db"]}
            if self.contract.schema:
                meta["__schema"] = source.get("schema")
            meta["__table"] = source["table"]
            meta["__source_ts_ms"] = source["ts_ms"]
            for name in POSITION_SOURCE_FIELDS[self.connector]:
                meta["__" + name] = source.get(name)
            if self.connector == "mysql":
                meta["__gtid"] = source.get("gtid")
            return AvroItem(self._schemas[FLATTENED], {**image, **meta}, FLATTENED)
        precise = shape == WRAPPED
        kind = WRAPPED if precise else ENVELOPE
        return AvroItem(self._schemas[kind], self.envelope(op, before, after, source, ts_ms, precise),
                        shape if op != "t" else kind)
