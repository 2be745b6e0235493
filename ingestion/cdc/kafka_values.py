"""Kafka record values -> parse results: Debezium JSON, or Avro in the Confluent wire format.

A value is one of:

* ``None`` (a tombstone, the delete marker Debezium sends after a delete): a ``Tombstone``;
* Avro in the Confluent wire format: magic byte ``0``, the writer schema's id in the
  registry (4 bytes, big-endian), then the Avro binary body without any header. JSON never
  starts with byte 0, so the two are told apart per record. The writer schema comes from
  a ``SchemaSource`` (the registry client, ``ingestion.sources.schema_registry``), is turned
  into the JsonConverter shape by ``avro_records.decode_schema`` and the record is parsed by
  ``parser.parse_record``: the same event parser, and the same rows, as an Avro landing file;
* anything else: a JsonConverter line (schemas on or off, envelope or flattened), parsed by
  ``parser.parse_line`` exactly as a landed line.

Records that cannot be decoded are dead letters holding the whole value (base64) with a
reason: ``unknown_schema_id`` (the registry answers that it has no such id),
``registry_unavailable`` (no registry configured, or it did not answer) and
``bad_encoding`` (the body does not decode with its writer schema).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
from collections.abc import Mapping
from typing import Protocol

import fastavro

from ingestion.cdc.avro_records import AvroSchema
from ingestion.cdc.contracts import TableContract
from ingestion.cdc.parser import (
    BAD_ENCODING,
    REGISTRY_UNAVAILABLE,
    DeadLetter,
    ParseResult,
    Tombstone,
    parse_line,
    parse_record,
)
from ingestion.errors import IngestionError

WIRE_MAGIC = 0
WIRE_HEADER = 5


class SchemaLookupError(IngestionError):
    """A writer schema could not be had: ``reason`` is the dead-letter reason code."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


class SchemaSource(Protocol):
    def schema(self, schema_id: int) -> AvroSchema:
        """The writer schema of ``schema_id``; raises SchemaLookupError."""
        ...


def wire_schema_id(value: bytes) -> int | None:
    """The schema id of a Confluent wire-format value, None when the value is not in that format."""
    if len(value) >= WIRE_HEADER and value[0] == WIRE_MAGIC:
        return int.from_bytes(value[1:WIRE_HEADER], "big")
    return None


def kafka_source_name(topic: str, partition: int) -> str:
    """What bronze's ``_cdc_landing_file`` holds for a record read from Kafka."""
    return f"kafka:{topic}/{partition}"


def parse_kafka_value(
    value: bytes | None,
    *,
    topic: str,
    partition: int,
    offset: int,
    ingested_at: dt.datetime,
    contracts: Mapping[str, TableContract],
    schemas: SchemaSource | None,
) -> ParseResult:
    """Parse one Kafka record's value delivered at ``topic``/``partition``/``offset``."""
    source = kafka_source_name(topic, partition)
    if value is None:
        return Tombstone(topic, partition, offset, source)
    schema_id = wire_schema_id(value)
    if schema_id is None:
        return parse_line(value, topic=topic, partition=partition, offset=offset, landing_file=source,
                          ingested_at=ingested_at, contracts=contracts)
    table = contracts[topic].name if topic in contracts else None

    def dead(reason: str, message: str) -> DeadLetter:
        return DeadLetter(reason, message, base64.b64encode(value).decode("ascii"), True, topic, partition,
                          offset, source, ingested_at, table)

    if schemas is None:
        return dead(REGISTRY_UNAVAILABLE, f"Avro value with schema id {schema_id} and no schema registry configured "
                    "(--schema-registry-url)")
    try:
        schema = schemas.schema(schema_id)
    except SchemaLookupError as exc:
        return dead(exc.reason, exc.message)
    try:
        datum = fastavro.schemaless_reader(io.BytesIO(value[WIRE_HEADER:]), schema.reader, None)
        payload = schema.payload(datum)
    except Exception as exc:  # noqa: BLE001 - a record must never stop the stream
        return dead(BAD_ENCODING, f"Avro value does not decode with writer schema {schema_id} "
                    f"({type(exc).__name__}: {exc})")
    return parse_record(payload, schema=schema.connect, topic=topic, partition=partition, offset=offset,
                        landing_file=source, ingested_at=ingested_at, contracts=contracts,
                        row_schemas=schema.row_schemas)
