"""Kafka values without Spark: wire-format detection, tombstones, JSON, registry failures (pure Python)."""

from __future__ import annotations

import datetime as dt
import io
import json

import fastavro
import pytest

from ingestion.cdc.avro_records import decode_schema
from ingestion.cdc.contracts import topic_map
from ingestion.cdc.kafka_values import SchemaLookupError, parse_kafka_value, wire_schema_id
from ingestion.cdc.parser import BronzeEvent, DeadLetter, Tombstone
from ingestion.sources.schema_registry import SchemaRegistryClient
from tests.kafka.registry import SmallRegistry

NOW = dt.datetime(2026, 1, 1)
TOPIC = "tickit.ems.category"
SCHEMA = {"type": "record", "name": "Value", "namespace": "tickit.ems.category", "fields": [
    {"name": "catid", "type": "int"}, {"name": "catgroup", "type": ["null", "string"], "default": None},
    {"name": "catname", "type": ["null", "string"], "default": None},
    {"name": "catdesc", "type": ["null", "string"], "default": None},
    {"name": "__op", "type": ["null", "string"], "default": None},
    {"name": "__lsn", "type": ["null", "long"], "default": None},
    {"name": "__source_ts_ms", "type": ["null", "long"], "default": None},
    {"name": "__deleted", "type": ["null", "string"], "default": None},
]}
RECORD = {"catid": 7, "catgroup": "Shows", "catname": "Opera", "catdesc": "All opera", "__op": "c",
          "__lsn": 1234, "__source_ts_ms": 1767225600000, "__deleted": "false"}


def _wire(schema_id: int, record: dict = RECORD) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(SCHEMA), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def _parse(value, schemas):
    return parse_kafka_value(value, topic=TOPIC, partition=2, offset=41, ingested_at=NOW, contracts=topic_map(),
                             schemas=schemas)


def test_wire_format_is_told_from_json() -> None:
    assert wire_schema_id(_wire(258)) == 258
    assert wire_schema_id(b'{"payload": null}') is None and wire_schema_id(b"\x00\x01") is None


def test_tombstone_and_json_value() -> None:
    assert isinstance(_parse(None, None), Tombstone)
    line = json.dumps(RECORD).encode()
    event = _parse(line, None)
    assert isinstance(event, BronzeEvent) and event.row["catid"] == 7
    assert event.row["_cdc_kafka_offset"] == 41 and event.row["_cdc_kafka_partition"] == 2


def test_avro_value_gives_the_row_its_json_twin_gives() -> None:
    registry = SmallRegistry()
    try:
        schema_id = registry.register(json.dumps(SCHEMA))
        client = SchemaRegistryClient(registry.url)
        avro = _parse(_wire(schema_id), client)
        again = _parse(_wire(schema_id), client)
    finally:
        registry.stop()
    twin = _parse(json.dumps(RECORD).encode(), None)
    assert isinstance(avro, BronzeEvent) and isinstance(twin, BronzeEvent) and isinstance(again, BronzeEvent)
    assert avro.row == twin.row
    assert registry.requests == [f"GET /schemas/ids/{schema_id}"]  # cached by id


def test_unknown_id_and_registry_down_are_dead_letters_with_reasons() -> None:
    registry = SmallRegistry()
    client = SchemaRegistryClient(registry.url, attempts=2, backoff=0.05)
    unknown = _parse(_wire(99), client)
    registry.stop()
    down = _parse(_wire(1), SchemaRegistryClient(registry.url, attempts=2, backoff=0.05, timeout=1))
    none = _parse(_wire(1), None)
    assert isinstance(unknown, DeadLetter) and unknown.reason == "unknown_schema_id" and unknown.raw_is_base64
    assert isinstance(down, DeadLetter) and down.reason == "registry_unavailable" and "did not answer" in down.message
    assert isinstance(none, DeadLetter) and none.reason == "registry_unavailable"
    assert unknown.table == "category" and unknown.offset == 41 and unknown.landing_file == f"kafka:{TOPIC}/2"


def test_a_schema_that_is_not_avro_is_a_lookup_error() -> None:
    registry = SmallRegistry()
    try:
        registry.schemas[5] = '{"type": "nonsense"}'
        with pytest.raises(SchemaLookupError):
            SchemaRegistryClient(registry.url).schema(5)
    finally:
        registry.stop()
    assert decode_schema(SCHEMA).connect["type"] == "struct"


def test_a_short_registry_outage_is_waited_out_and_a_long_one_expires() -> None:
    registry = SmallRegistry()
    url = registry.url
    registry.stop()
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    client = SchemaRegistryClient(url, timeout=0.5, wait_seconds=20, retry_after=5, clock=lambda: now[0], sleep=sleep)
    with pytest.raises(SchemaLookupError, match="did not answer"):
        client.schema(1)
    assert now[0] == pytest.approx(20)  # retried with backoff for wait_seconds, no longer
    with pytest.raises(SchemaLookupError):
        client.schema(1)
    assert now[0] == pytest.approx(20)  # down: answered at once ...
    now[0] += 6
    with pytest.raises(SchemaLookupError):
        client.schema(1)
    assert now[0] > 26  # ... for retry_after seconds only: then the registry is asked again
