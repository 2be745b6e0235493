"""Avro landing files (the S3 sink's AvroFormat) -> Debezium events in the JsonConverter shape.

A Kafka Connect S3 sink with ``format.class=...AvroFormat`` writes each chunk as an Avro
object container file: a header (magic ``Obj\\x01``, metadata with the writer schema
``avro.schema`` and the codec ``avro.codec``, a 16-byte sync marker), then blocks of
records (record count, byte size, the records, the sync marker). The writer schema is
the one Debezium's Avro converter built from the Connect schema of the events, so the
Connect details survive as Avro schema properties: ``connect.name`` (the logical name:
``io.debezium.time.MicroTimestamp``, ``org.apache.kafka.connect.data.Decimal``, ...),
``connect.version``, ``connect.parameters`` (a decimal's ``scale``), ``connect.type``
(``int8``/``int16``, which Avro stores as ``int``); optional fields are unions with ``null``.

Each record is decoded with fastavro against its file's writer schema with the Avro
logical types switched off, i.e. into the raw values Debezium put there (epoch days,
epoch ms/us/ns, a decimal's unscaled big-endian bytes, ...). ``bytes`` then become base64
text, which gives exactly the payload Kafka's JsonConverter writes for the same event, and
the writer schema is turned into the JsonConverter schema of that payload
(``AvroSchema.connect``). The event parser (``ingestion.cdc.parser.parse_record``) reads
the pair as it reads a ``{"schema": ..., "payload": ...}`` JSON line: one implementation
of the bronze contract for both formats. Logical types without a ``connect.name`` (an
Avro file not written through Kafka Connect) map to the Connect/Debezium name of the same
encoding: ``decimal`` -> Connect ``Decimal`` (its ``scale`` kept), ``date`` -> Connect
``Date``, ``timestamp-millis``/``-micros``/``-nanos`` -> Connect ``Timestamp`` /
Debezium ``MicroTimestamp`` / ``NanoTimestamp``, ``time-millis``/``-micros`` -> Connect
``Time`` / Debezium ``MicroTime``.

Damage is isolated as finely as the container format allows, and reported, never
skipped (``AvroFailure``, a ``bad_encoding`` dead letter naming the file):

* an unreadable header (not an Avro file, an unknown codec, a writer schema fastavro
  rejects): the whole file;
* a block whose framing is broken (the file ends inside it: a truncated upload; a sync
  marker that does not match): that block and the rest of the file, as one failure;
* a record that cannot be decoded (e.g. a string that is not UTF-8): that record and the
  rest of its block (record boundaries are lost with it); the next block is read again.

The raw bytes of a failure are the undecodable bytes (at most ``MAX_RAW_BYTES``): from
the start of the broken block, or of the failing record within its decompressed block,
to the end of the block or file.
"""

from __future__ import annotations

import base64
import bz2
import datetime as dt
import functools
import io
import json
import lzma
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro
from fastavro.read import HEADER_SCHEMA

from ingestion.cdc.contracts import TableContract, topic_map
from ingestion.cdc.landing import LandingFile
from ingestion.cdc.parser import (
    BAD_ENCODING,
    UNKNOWN_TOPIC,
    DeadLetter,
    ParseResult,
    json_converter_line,
    parse_record,
    row_field_schemas,
)
from ingestion.cdc.values import CONNECT_DECIMAL, FieldSchema
from ingestion.errors import IngestionError

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
#: At most this many undecodable bytes are kept in a dead letter (base64 in ``raw_line``).
MAX_RAW_BYTES = 1 << 20

#: Avro primitive types -> JsonConverter schema types.
_PRIMITIVES = {
    "null": "null",
    "boolean": "boolean",
    "int": "int32",
    "long": "int64",
    "float": "float",
    "double": "double",
    "bytes": "bytes",
    "string": "string",
}
#: Kafka Connect's ``connect.type`` property (Avro has no 8- or 16-bit integers).
_CONNECT_TYPES = {"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes"}
_CONNECT_TYPE_NAMES = {"float32": "float", "float64": "double"}
#: Avro logical types -> the Connect/Debezium logical name of the same value encoding.
LOGICAL_NAMES = {
    "decimal": CONNECT_DECIMAL,
    "date": "org.apache.kafka.connect.data.Date",
    "time-millis": "org.apache.kafka.connect.data.Time",
    "time-micros": "io.debezium.time.MicroTime",
    "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "timestamp-micros": "io.debezium.time.MicroTimestamp",
    "timestamp-nanos": "io.debezium.time.NanoTimestamp",
    "local-timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "local-timestamp-micros": "io.debezium.time.MicroTimestamp",
    "local-timestamp-nanos": "io.debezium.time.NanoTimestamp",
}

Converter = Callable[[Any], Any]


class AvroSchemaError(IngestionError, ValueError):
    """A writer schema the reader cannot use (names the problem)."""


@dataclass(frozen=True)
class AvroSchema:
    """What one writer schema gives the parser: the JsonConverter schema and the value conversion."""

    avro: Any  # the writer schema (parsed JSON, as in the file header)
    connect: dict[str, Any]  # the JsonConverter schema of the decoded payloads
    reader: Any  # the writer schema parsed by fastavro, logical types off
    convert: Converter  # a decoded datum -> its JsonConverter payload (bytes -> base64)
    row_schemas: Mapping[str, FieldSchema]  # the row columns' field schemas (parser.row_field_schemas)

    def payload(self, datum: Any) -> Any:
        return self.convert(datum)

    def line(self, datum: Any) -> str:
        """The JsonConverter line of a decoded datum (the raw line of its dead letters)."""
        return json_converter_line(self.connect, self.convert(datum))


@dataclass(frozen=True)
class AvroRecord:
    """One decoded record: its index in the file and its JsonConverter payload."""

    index: int
    payload: Any


@dataclass(frozen=True)
class AvroFailure:
    """Undecodable bytes: from record ``index`` of the file on, ``records`` records (None: unknown)."""

    index: int
    raw: bytes
    message: str
    records: int | None = None


# -- schemas ---------------------------------------------------------------------------------
def decode_schema(avro_schema: Any) -> AvroSchema:
    """The ``AvroSchema`` of a writer schema (parsed JSON); AvroSchemaError when unusable."""
    return _cached_schema(json.dumps(avro_schema, sort_keys=True, separators=(",", ":")))


@functools.lru_cache(maxsize=256)
def _cached_schema(text: str) -> AvroSchema:
    avro_schema = json.loads(text)
    walker = _SchemaWalker()
    try:
        connect, convert = walker.convert(avro_schema, "")
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise AvroSchemaError(f"writer schema not understood: {type(exc).__name__}: {exc}") from None
    try:
        reader = fastavro.parse_schema(_without_logical_types(avro_schema))
    except Exception as exc:  # noqa: BLE001 - fastavro raises several types for a bad schema
        raise AvroSchemaError(f"writer schema rejected by fastavro: {type(exc).__name__}: {exc}") from None
    connect.pop("optional", None)
    connect["optional"] = False
    return AvroSchema(avro_schema, connect, reader, convert or _identity, row_field_schemas(connect))


def connect_schema(avro_schema: Any) -> dict[str, Any]:
    """The JsonConverter schema Kafka Connect's JsonConverter writes for payloads of ``avro_schema``."""
    return decode_schema(avro_schema).connect


def _identity(value: Any) -> Any:
    return value


def _without_logical_types(schema: Any) -> Any:
    """The schema with every ``logicalType`` removed: fastavro then returns the raw values."""
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(item) for item in schema]
    return schema


def _b64(value: Any) -> Any:
    return base64.b64encode(value).decode("ascii") if isinstance(value, bytes | bytearray) else value


def _jsonable(value: Any) -> Any:
    """Any decoded value with its bytes as base64 (for unions, whose branch is known only per value)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


class _SchemaWalker:
    """Avro schema -> (JsonConverter schema, converter or None when values need no conversion)."""

    def __init__(self) -> None:
        self.named: dict[str, tuple[dict[str, Any], Converter | None]] = {}

    def convert(self, schema: Any, namespace: str) -> tuple[dict[str, Any], Converter | None]:
        spec, convert = self._convert(schema, namespace)
        spec.setdefault("optional", False)  # JsonConverter states it for every schema
        return spec, convert

    def _convert(self, schema: Any, namespace: str) -> tuple[dict[str, Any], Converter | None]:
        if isinstance(schema, list):
            return self._union(schema, namespace)
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return self._primitive(schema, {})
            return self._reference(schema, namespace)
        if not isinstance(schema, dict):
            raise TypeError(f"not an Avro schema: {schema!r}")
        kind = schema.get("type")
        if isinstance(kind, dict | list):
            return self.convert(kind, namespace)
        if kind == "record" or kind == "error":
            return self._record(schema, namespace)
        if kind == "enum" or kind == "fixed":
            full, _ = self._name(schema, namespace)
            named = (self._annotated({"type": "string"}, schema), None) if kind == "enum" \
                else self._primitive("bytes", schema)
            self.named[full] = named
            return dict(named[0]), named[1]
        if kind == "array":
            items, convert = self.convert(schema["items"], namespace)
            spec = self._annotated({"type": "array", "items": items}, schema)
            return spec, (None if convert is None else lambda v: None if v is None else [convert(i) for i in v])
        if kind == "map":
            values, convert = self.convert(schema["values"], namespace)
            spec = self._annotated({"type": "map", "keys": {"type": "string", "optional": False},
                                    "values": values}, schema)
            if convert is None:
                return spec, None
            return spec, lambda v: None if v is None else {k: convert(i) for k, i in v.items()}
        if kind in _PRIMITIVES:
            return self._primitive(kind, schema)
        if isinstance(kind, str):
            return self._reference(kind, namespace)
        raise TypeError(f"not an Avro schema: {schema!r}")

    def _name(self, schema: dict[str, Any], namespace: str) -> tuple[str, str]:
        """(full name, namespace for the type's children)."""
        name = str(schema["name"])
        if "." in name:
            return name, name.rpartition(".")[0]
        space = schema.get("namespace", namespace) or ""
        return (f"{space}.{name}" if space else name), space

    def _reference(self, name: str, namespace: str) -> tuple[dict[str, Any], Converter | None]:
        candidates = [name] if "." in name else ([f"{namespace}.{name}"] if namespace else []) + [name]
        for candidate in candidates:
            if candidate in self.named:
                spec, convert = self.named[candidate]
                return dict(spec), convert
        raise KeyError(f"unknown Avro type {name!r}")

    def _annotated(self, spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
        """``spec`` with the Connect schema name, version, parameters and doc kept in ``schema``."""
        logical = schema.get("logicalType")
        name = schema.get("connect.name")
        if name is None and isinstance(logical, str) and logical in LOGICAL_NAMES:
            name = LOGICAL_NAMES[logical]
        if isinstance(name, str):
            spec["name"] = name
        version = schema.get("connect.version")
        if isinstance(version, int) and not isinstance(version, bool):
            spec["version"] = version
        parameters = schema.get("connect.parameters")
        if isinstance(parameters, dict):
            spec["parameters"] = {str(k): str(v) for k, v in parameters.items()}
        elif logical == "decimal" and "scale" in schema or name == CONNECT_DECIMAL and "scale" in schema:
            spec["parameters"] = {"scale": str(schema.get("scale", 0))}
            if "precision" in schema:
                spec["parameters"]["connect.decimal.precision"] = str(schema["precision"])
        doc = schema.get("connect.doc")
        if isinstance(doc, str):
            spec["doc"] = doc
        return spec

    def _primitive(self, kind: str, schema: dict[str, Any]) -> tuple[dict[str, Any], Converter | None]:
        connect_type = _PRIMITIVES[kind]
        declared = schema.get("connect.type")
        if isinstance(declared, str) and declared in _CONNECT_TYPES:
            connect_type = _CONNECT_TYPE_NAMES.get(declared, declared)
        spec = self._annotated({"type": connect_type}, schema)
        return spec, (_b64 if kind == "bytes" else None)

    def _record(self, schema: dict[str, Any], namespace: str) -> tuple[dict[str, Any], Converter | None]:
        full, space = self._name(schema, namespace)
        spec: dict[str, Any] = {"type": "struct", "fields": []}
        # registered before its fields: a recursive reference sees the (still filling) struct
        self.named[full] = (spec, _jsonable)
        converters: list[tuple[str, Converter]] = []
        for field in schema["fields"]:
            name = str(field["name"])
            field_spec, convert = self.convert(field["type"], space)
            spec["fields"].append({**field_spec, "field": name})
            if convert is not None:
                converters.append((name, convert))
        spec.setdefault("optional", False)
        self._annotated(spec, schema)
        spec.setdefault("name", full)
        convert_record = _record_converter(converters) if converters else None
        self.named[full] = (spec, convert_record)
        return dict(spec), convert_record

    def _union(self, branches: list[Any], namespace: str) -> tuple[dict[str, Any], Converter | None]:
        converted = [self.convert(branch, namespace) for branch in branches]
        others = [(spec, convert) for spec, convert in converted if spec.get("type") != "null"]
        optional = len(others) < len(converted)
        if len(others) == 1:
            spec, convert = others[0]
            spec = dict(spec)
            spec["optional"] = optional
            return spec, (None if convert is None else lambda v: None if v is None else convert(v))
        # a general union: Connect's AvroData makes it a struct of branches; its values are
        # returned bare here, so no contract column can take it (incompatible_schema)
        needs = any(convert is not None for _, convert in others)
        return {"type": "union", "optional": optional}, (_jsonable if needs else None)


def _record_converter(converters: list[tuple[str, Converter]]) -> Converter:
    """Converts the fields of a record value that need it (the others are kept as they are)."""
    def convert_record(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        copy = dict(value)
        for name, convert in converters:
            if name in copy:
                copy[name] = convert(copy[name])
        return copy

    return convert_record


# -- container files -------------------------------------------------------------------------
class _Truncated(Exception):
    pass


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, next position); _Truncated at the end of ``data``."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise _Truncated
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _snappy(data: bytes) -> bytes:
    import cramjam  # optional, as in fastavro

    return bytes(cramjam.snappy.decompress_raw(data[:-4]))  # the last 4 bytes are a CRC-32


def _zstandard(data: bytes) -> bytes:
    import zstandard  # optional

    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


_CODECS: dict[str, Callable[[bytes], bytes]] = {
    "null": lambda data: data,
    "deflate": lambda data: zlib.decompressobj(-15).decompress(data),
    "bzip2": bz2.decompress,
    "xz": lzma.decompress,
    "snappy": _snappy,
    "zstandard": _zstandard,
}


@dataclass
class AvroContainer:
    """One Avro object container file: its writer schema (None when the header is unreadable) and records."""

    data: bytes
    name: str
    schema: AvroSchema | None = None
    codec: str = "null"
    sync: bytes = b""
    header_end: int = 0
    header_error: str | None = None

    @classmethod
    def open(cls, data: bytes, name: str) -> AvroContainer:
        container = cls(data, name)
        try:
            container._read_header()
        except (_Truncated, EOFError):
            container.header_error = "the file ends inside the Avro header (truncated)"
        except (AvroSchemaError, ValueError) as exc:
            container.header_error = str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure here means "not a readable Avro header"
            container.header_error = f"unreadable Avro header ({type(exc).__name__}: {exc})"
        if container.header_error is not None:
            container.schema = None
        return container

    def _read_header(self) -> None:
        if not self.data:
            raise ValueError("the file is empty")
        if not self.data.startswith(MAGIC):
            if len(self.data) < len(MAGIC) and MAGIC.startswith(self.data):
                raise _Truncated
            raise ValueError("not an Avro object container file (no 'Obj\\x01' magic)")
        handle = io.BytesIO(self.data)
        header = fastavro.schemaless_reader(handle, HEADER_SCHEMA)
        if not isinstance(header, dict):
            raise ValueError("not an Avro object container file")
        self.header_end = handle.tell()
        if self.header_end > len(self.data):
            raise _Truncated
        meta = header["meta"]
        self.sync = header["sync"]
        if len(self.sync) != SYNC_SIZE:
            raise _Truncated
        codec = meta.get("avro.codec", b"null").decode("utf-8") or "null"
        if codec not in _CODECS:
            raise ValueError(f"unknown Avro codec {codec!r}")
        self.codec = codec
        if "avro.schema" not in meta:
            raise ValueError("the header has no avro.schema")
        self.schema = decode_schema(json.loads(meta["avro.schema"].decode("utf-8")))

    def _where(self) -> str:
        return f"Avro file {self.name}"

    def _raw(self, start: int, end: int | None = None) -> bytes:
        stop = len(self.data) if end is None else end
        return self.data[start:min(stop, start + MAX_RAW_BYTES)]

    def items(self, raw: bool = False) -> Iterator[AvroRecord | AvroFailure]:
        """Every record in file order, and a failure for every part that cannot be decoded. ``raw``:
        the records as fastavro decodes them (logical types off), not converted to JsonConverter
        payloads (``AvroSchema.convert``)."""
        if self.schema is None:
            yield AvroFailure(0, self._raw(0), f"{self._where()}: {self.header_error}")
            return
        reader = self.schema.reader
        convert = (lambda datum: datum) if raw else self.schema.convert
        data, pos, index, block = self.data, self.header_end, 0, 0
        while pos < len(data):
            start = pos
            try:
                count, pos = _read_long(data, pos)
                size, pos = _read_long(data, pos)
            except _Truncated:
                yield AvroFailure(index, self._raw(start),
                                  f"{self._where()}: truncated: the file ends inside the header of block {block} "
                                  f"(byte {start}); records from index {index} on are lost")
                return
            except ValueError as exc:
                yield AvroFailure(index, self._raw(start),
                                  f"{self._where()}: corrupt block {block} at byte {start} ({exc}); "
                                  f"records from index {index} on are lost")
                return
            body, end = pos, pos + size
            if count < 0 or size < 0:
                yield AvroFailure(index, self._raw(start),
                                  f"{self._where()}: corrupt block {block} at byte {start} (count {count}, "
                                  f"size {size}); records from index {index} on are lost")
                return
            if end + SYNC_SIZE > len(data):
                yield AvroFailure(index, self._raw(start),
                                  f"{self._where()}: truncated: block {block} at byte {start} needs "
                                  f"{end + SYNC_SIZE - start} bytes, the file has {len(data) - start}; "
                                  f"records from index {index} on are lost", count)
                return
            if data[end:end + SYNC_SIZE] != self.sync:
                yield AvroFailure(index, self._raw(start),
                                  f"{self._where()}: corrupt: block {block} at byte {start} is not followed by "
                                  f"the file's sync marker; records from index {index} on are lost")
                return
            pos = end + SYNC_SIZE
            try:
                payload = _CODECS[self.codec](data[body:end])
            except ImportError as exc:
                yield AvroFailure(index, self._raw(start, end),
                                  f"{self._where()}: codec {self.codec} needs a missing module ({exc.name}); "
                                  f"block {block} ({count} records) not read", count)
                index += count
                block += 1
                continue
            except Exception as exc:  # noqa: BLE001 - every codec raises its own error type
                yield AvroFailure(index, self._raw(start, end),
                                  f"{self._where()}: block {block} at byte {start} does not decompress with "
                                  f"{self.codec} ({type(exc).__name__}: {exc}); its {count} records are lost",
                                  count)
                index += count
                block += 1
                continue
            handle = io.BytesIO(payload)
            for number in range(count):
                at = handle.tell()
                try:
                    datum = fastavro.schemaless_reader(handle, reader)
                    value = convert(datum)
                except Exception as exc:  # noqa: BLE001 - a record must never stop the stream
                    lost = count - number
                    yield AvroFailure(index + number, payload[at:at + MAX_RAW_BYTES],
                                      f"{self._where()}: record {number} of block {block} cannot be decoded "
                                      f"({type(exc).__name__}: {exc}); the {lost} records from index "
                                      f"{index + number} to the end of the block are lost", lost)
                    break
                yield AvroRecord(index + number, value)
            index += count
            block += 1


def parse_avro_file(
    data: bytes,
    landing: LandingFile | None,
    landing_file: str,
    ingested_at: dt.datetime,
    contracts: Mapping[str, TableContract] | None = None,
    path_problem: str | None = None,
) -> Iterator[ParseResult]:
    """Parse every record of one Avro landing file (record ``i`` has offset ``start_offset + i``).

    Records go through ``parse_record`` (bronze rows, tombstones, dead letters as for
    JSON lines); undecodable parts become ``bad_encoding`` dead letters holding the raw
    bytes (base64). ``landing`` is None for a file whose path is not a landing file name
    (``path_problem`` says why): its records are dead-lettered as ``unknown_topic`` with no
    topic, offset = record index, as the lines of such a JSON file are.
    """
    container = AvroContainer.open(data, landing_file)
    schema = container.schema
    contract = None
    if landing is not None:
        contract = (topic_map() if contracts is None else contracts).get(landing.topic)
    for item in container.items():
        topic = landing.topic if landing is not None else None
        partition = landing.partition if landing is not None else None
        offset = item.index + (landing.start_offset if landing is not None else 0)
        if isinstance(item, AvroFailure):
            yield DeadLetter(BAD_ENCODING, item.message, base64.b64encode(item.raw).decode("ascii"), True,
                             topic, partition, offset, landing_file, ingested_at,
                             contract.name if contract is not None else None)
            continue
        if schema is None:  # unreachable: records come only from a readable header
            raise ValueError(f"{landing_file}: record without a writer schema")
        if landing is None:
            yield DeadLetter(UNKNOWN_TOPIC, path_problem or f"{landing_file}: not a landing file name",
                             json_converter_line(schema.connect, item.payload), False, None, None, offset,
                             landing_file, ingested_at, None)
            continue
        yield parse_record(item.payload, schema=schema.connect, topic=landing.topic, partition=landing.partition,
                           offset=offset, landing_file=landing_file, ingested_at=ingested_at,
                           contracts=contracts, row_schemas=schema.row_schemas)
