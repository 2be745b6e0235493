"""Avro landing records: Debezium's Avro encodings decode to the values of their JSON counterparts.

Each case is written twice by hand: the Avro field as Debezium's Avro converter declares it
(``connect.name``, ``connect.parameters``, ``connect.type``, logical types) with its raw
value, and the JsonConverter field (``schemas.enable=true``) with its JSON value. The Avro
record goes into a real object container file (fastavro) read by
``parse_avro_file``; the JSON line goes through ``parse_line``. Both must give the expected
Python value and the same bronze row. Then the container damage cases: each part that
cannot be decoded is one ``bad_encoding`` dead letter naming the file, the rest lands.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import re
from decimal import Decimal
from typing import Any

import fastavro
import pytest

from ingestion.cdc.avro_records import AvroContainer, connect_schema, parse_avro_file
from ingestion.cdc.contracts import Column, TableContract
from ingestion.cdc.landing import LandingFile, parse_landing_path
from ingestion.cdc.parser import BronzeEvent, DeadLetter, Tombstone, parse_line, parse_record
from tests.cdc.conftest import INGESTED_AT

TOPIC = "fixture.avro"
FILE = f"topics/{TOPIC}/partition=1/{TOPIC}+1+0000000100.avro"
JSON_FILE = f"topics/{TOPIC}/partition=1/{TOPIC}+1+0000000100.json"
LANDING = parse_landing_path(FILE)

# (column, contract type, Avro type, Avro value, JsonConverter field schema, JSON value, expected value)
CASES: list[tuple[str, str, Any, Any, dict[str, Any], Any, Any]] = [
    ("d_date", "date",
     {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}, 19675,
     {"type": "int32", "name": "io.debezium.time.Date", "version": 1}, 19675,
     dt.date(2023, 11, 14)),
    ("ts_milli", "timestamp",
     {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.Timestamp"}, 1_700_000_000_123,
     {"type": "int64", "name": "io.debezium.time.Timestamp", "version": 1}, 1_700_000_000_123,
     dt.datetime(2023, 11, 14, 22, 13, 20, 123000)),
    ("ts_micro", "timestamp",
     {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTimestamp"},
     1_700_000_000_123_456,
     {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "version": 1}, 1_700_000_000_123_456,
     dt.datetime(2023, 11, 14, 22, 13, 20, 123456)),
    ("ts_nano", "timestamp",
     {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.NanoTimestamp"},
     1_700_000_000_123_456_789,
     {"type": "int64", "name": "io.debezium.time.NanoTimestamp", "version": 1}, 1_700_000_000_123_456_789,
     dt.datetime(2023, 11, 14, 22, 13, 20, 123456)),
    ("ts_zoned", "timestamp",
     {"type": "string", "connect.version": 1, "connect.name": "io.debezium.time.ZonedTimestamp"},
     "2023-11-15T00:13:20.5+02:00",
     {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "version": 1}, "2023-11-15T00:13:20.5+02:00",
     dt.datetime(2023, 11, 14, 22, 13, 20, 500000)),
    ("t_micro", "bigint",  # MicroTime: microseconds since midnight (no time type in the contracts)
     {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTime"}, 45_296_789_012,
     {"type": "int64", "name": "io.debezium.time.MicroTime", "version": 1}, 45_296_789_012,
     45_296_789_012),
    ("amount_precise", "decimal(10,3)",  # decimal.handling.mode=precise: unscaled big-endian bytes
     {"type": "bytes", "scale": 3, "precision": 10, "connect.version": 1,
      "connect.parameters": {"scale": "3", "connect.decimal.precision": "10"},
      "connect.name": "org.apache.kafka.connect.data.Decimal", "logicalType": "decimal"},
     (-1234567).to_bytes(3, "big", signed=True),
     {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
      "parameters": {"scale": "3", "connect.decimal.precision": "10"}},
     base64.b64encode((-1234567).to_bytes(3, "big", signed=True)).decode(),
     Decimal("-1234.567")),
    ("amount_double", "decimal(8,2)",  # decimal.handling.mode=double
     "double", 109.2, {"type": "double"}, 109.2, Decimal("109.20")),
    ("amount_variable", "decimal(12,4)",  # PostgreSQL numeric without scale
     {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
      "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
      "connect.version": 1, "connect.name": "io.debezium.data.VariableScaleDecimal"},
     {"scale": 2, "value": (72800).to_bytes(3, "big", signed=True)},
     {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
      "fields": [{"type": "int32", "optional": False, "field": "scale"},
                 {"type": "bytes", "optional": False, "field": "value"}]},
     {"scale": 2, "value": base64.b64encode((72800).to_bytes(3, "big", signed=True)).decode()},
     Decimal("728.0000")),
    ("flag", "boolean",  # MySQL tinyint(1): Connect int16, Avro int
     {"type": "int", "connect.type": "int16"}, 1, {"type": "int16"}, 1, True),
    ("ts_connect", "timestamp",  # time.precision.mode=connect: Connect Timestamp, epoch ms
     {"type": "long", "connect.version": 1, "connect.name": "org.apache.kafka.connect.data.Timestamp",
      "logicalType": "timestamp-millis"}, 1_700_000_000_123,
     {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}, 1_700_000_000_123,
     dt.datetime(2023, 11, 14, 22, 13, 20, 123000)),
    ("d_connect", "date",
     {"type": "int", "connect.version": 1, "connect.name": "org.apache.kafka.connect.data.Date",
      "logicalType": "date"}, 19675,
     {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1}, 19675,
     dt.date(2023, 11, 14)),
    ("amount_plain", "decimal(6,2)",  # an Avro decimal written without Kafka Connect (no connect.name)
     {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}, (1999).to_bytes(2, "big", signed=True),
     {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
     base64.b64encode((1999).to_bytes(2, "big", signed=True)).decode(), Decimal("19.99")),
    ("ts_plain", "timestamp",  # Avro timestamp-micros without connect.name
     {"type": "long", "logicalType": "timestamp-micros"}, 1_700_000_000_123_456,
     {"type": "int64", "name": "io.debezium.time.MicroTimestamp"}, 1_700_000_000_123_456,
     dt.datetime(2023, 11, 14, 22, 13, 20, 123456)),
    ("note", "string", "string", "café ✓", {"type": "string"}, "café ✓", "café ✓"),
]

CONTRACT = TableContract(
    name="avro_fixture", system="fixture", connector="postgres", database="inventory", schema="public",
    topics=(TOPIC,), primary_key=("id",),
    columns=(Column("id", "int"), *(Column(name, kind) for name, kind, *_ in CASES)),
)
CONTRACTS = {TOPIC: CONTRACT}

SOURCE_AVRO = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
    {"name": "version", "type": "string"}, {"name": "connector", "type": "string"},
    {"name": "ts_ms", "type": "long"}, {"name": "db", "type": "string"},
    {"name": "table", "type": "string"}, {"name": "txId", "type": ["null", "long"], "default": None},
    {"name": "lsn", "type": ["null", "long"], "default": None}],
    "connect.name": "io.debezium.connector.postgresql.Source"}  # fmt: skip
SOURCE_JSON = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source",
               "field": "source", "fields": [
    {"type": "string", "optional": False, "field": "version"},
    {"type": "string", "optional": False, "field": "connector"},
    {"type": "int64", "optional": False, "field": "ts_ms"},
    {"type": "string", "optional": False, "field": "db"},
    {"type": "string", "optional": False, "field": "table"},
    {"type": "int64", "optional": True, "field": "txId"},
    {"type": "int64", "optional": True, "field": "lsn"}]}  # fmt: skip
SOURCE = {"version": "2.7.3.Final", "connector": "postgresql", "ts_ms": 1_700_000_000_000, "db": "inventory",
          "table": "avro_fixture", "txId": 777, "lsn": 33_554_999}


def _row_avro(optional: bool) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = [{"name": "id", "type": "int"}]
    for name, _, avro_type, *_ in CASES:
        fields.append({"name": name, "type": ["null", avro_type], "default": None} if optional
                      else {"name": name, "type": avro_type})
    return fields


def _row_json() -> list[dict[str, Any]]:
    return [{"type": "int32", "optional": False, "field": "id"},
            *({**spec, "optional": True, "field": name} for name, _, _, _, spec, _, _ in CASES)]


def _envelope_schema() -> dict[str, Any]:
    value = {"type": "record", "name": "Value", "fields": _row_avro(optional=True),
             "connect.name": "fixture.avro.Value"}
    return {"type": "record", "name": "Envelope", "namespace": "fixture.avro", "fields": [
        {"name": "before", "type": ["null", value], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": SOURCE_AVRO},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None}],
        "connect.name": "fixture.avro.Envelope"}  # fmt: skip


def _flattened_schema() -> dict[str, Any]:
    meta = [{"name": name, "type": ["null", kind], "default": None} for name, kind in
            (("__deleted", "string"), ("__op", "string"), ("__table", "string"), ("__source_ts_ms", "long"),
             ("__lsn", "long"), ("__txId", "long"))]
    return {"type": "record", "name": "Value", "namespace": "fixture.avro",
            "fields": _row_avro(optional=True) + meta, "connect.name": "fixture.avro.Value"}


def _container(schema: Any, records: list[Any], **options: Any) -> bytes:
    handle = io.BytesIO()
    fastavro.writer(handle, fastavro.parse_schema(schema), records, **options)
    return handle.getvalue()


def _avro_row(key: int) -> dict[str, Any]:
    return {"id": key, **{name: value for name, _, _, value, *_ in CASES}}


def _json_row(key: int) -> dict[str, Any]:
    return {"id": key, **{name: value for name, _, _, _, _, value, _ in CASES}}


def _parse_avro(data: bytes, landing: LandingFile | None = LANDING, name: str = FILE) -> list:
    return list(parse_avro_file(data, landing, name, INGESTED_AT, CONTRACTS))


def _parse_json(event: dict[str, Any], offset: int = 100) -> Any:
    return parse_line(json.dumps(event).encode(), topic=TOPIC, partition=1, offset=offset, landing_file=JSON_FILE,
                      ingested_at=INGESTED_AT, contracts=CONTRACTS)


def _without_file(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "_cdc_landing_file"}


def test_envelope_record_decodes_every_encoding_as_its_json_counterpart() -> None:
    record = {"before": None, "after": _avro_row(1), "source": SOURCE, "op": "c", "ts_ms": 1_700_000_000_500}
    (avro,) = _parse_avro(_container(_envelope_schema(), [record]))
    row_json = {"type": "struct", "optional": True, "name": "fixture.avro.Value", "fields": _row_json()}
    line = {"schema": {"type": "struct", "optional": False, "name": "fixture.avro.Envelope", "fields": [
        {**row_json, "field": "before"}, {**row_json, "field": "after"}, SOURCE_JSON,
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"}]},
        "payload": {"before": None, "after": _json_row(1), "source": SOURCE, "op": "c", "ts_ms": 1_700_000_000_500}}
    from_json = _parse_json(line)
    assert isinstance(avro, BronzeEvent) and isinstance(from_json, BronzeEvent), (avro, from_json)
    for name, _, _, _, _, _, expected in CASES:
        assert avro.row[name] == expected, name
        assert from_json.row[name] == expected, name
    assert _without_file(avro.row) == _without_file(from_json.row)
    assert avro.row["_cdc_landing_file"] == FILE and avro.row["_cdc_kafka_offset"] == 100
    assert avro.row["_cdc_position"] == "00000000000033554999-00000000000000000777"
    assert avro.row["_cdc_tx_id"] == "777" and avro.shape == "envelope"


@pytest.mark.parametrize("op", ["r", "u", "d"])
def test_flattened_record_decodes_as_its_json_counterpart(op: str) -> None:
    meta = {"__deleted": "true" if op == "d" else "false", "__op": op, "__table": "avro_fixture",
            "__source_ts_ms": 1_700_000_000_000, "__lsn": 33_554_999, "__txId": 777}
    (avro,) = _parse_avro(_container(_flattened_schema(), [{**_avro_row(7), **meta}]))
    metas = [{"type": kind, "optional": True, "field": name} for name, kind in
             (("__deleted", "string"), ("__op", "string"), ("__table", "string"), ("__source_ts_ms", "int64"),
              ("__lsn", "int64"), ("__txId", "int64"))]
    line = {"schema": {"type": "struct", "optional": False, "name": "fixture.avro.Value",
                       "fields": _row_json() + metas}, "payload": {**_json_row(7), **meta}}
    from_json = _parse_json(line)
    assert isinstance(avro, BronzeEvent) and isinstance(from_json, BronzeEvent), (avro, from_json)
    assert avro.shape == "flattened" and avro.row["_cdc_is_deleted"] == (op == "d")
    for name, _, _, _, _, _, expected in CASES:
        assert avro.row[name] == expected, name
    assert _without_file(avro.row) == _without_file(from_json.row)


def test_optional_fields_are_unions_and_null_stays_null() -> None:
    row = {"id": 3, **{name: None for name, *_ in CASES}}
    record = {"before": None, "after": row, "source": SOURCE, "op": "c", "ts_ms": None}
    (event,) = _parse_avro(_container(_envelope_schema(), [record]))
    assert isinstance(event, BronzeEvent)
    assert all(event.row[name] is None for name, *_ in CASES)
    schema = connect_schema(_envelope_schema())
    after = next(f for f in schema["fields"] if f["field"] == "after")
    assert after["optional"] is True and after["name"] == "fixture.avro.Value"
    fields = {f["field"]: f for f in after["fields"]}
    assert fields["id"] == {"type": "int32", "optional": False, "field": "id"}
    assert fields["flag"]["type"] == "int16" and fields["flag"]["optional"] is True
    assert fields["amount_precise"]["parameters"] == {"scale": "3", "connect.decimal.precision": "10"}


def test_a_flattened_json_line_with_a_schema_is_decoded_by_it() -> None:
    """time.precision.mode=connect: epoch ms, which a PostgreSQL line without a schema would read as us."""
    payload = {"id": 1, "ts_connect": 1_700_000_000_123, "__op": "c", "__source_ts_ms": 1_700_000_000_000,
               "__lsn": 5}
    bare = _parse_json(payload)
    schema = {"type": "struct", "optional": False, "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "field": "ts_connect"},
        {"type": "string", "optional": True, "field": "__op"},
        {"type": "int64", "optional": True, "field": "__source_ts_ms"},
        {"type": "int64", "optional": True, "field": "__lsn"}]}  # fmt: skip
    wrapped = _parse_json({"schema": schema, "payload": payload})
    assert isinstance(bare, BronzeEvent) and isinstance(wrapped, BronzeEvent)
    assert bare.row["ts_connect"] == dt.datetime(1970, 1, 20, 16, 13, 20, 123)  # us: the old 1970 reading
    assert wrapped.row["ts_connect"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000)


def test_record_ids_give_offsets_and_every_record_keeps_its_own_position() -> None:
    records = [{"before": None, "after": _avro_row(k), "source": {**SOURCE, "lsn": 40 + k}, "op": "c", "ts_ms": 1}
               for k in range(5)]
    results = _parse_avro(_container(_envelope_schema(), records, sync_interval=1))  # a block per record
    assert [r.row["_cdc_kafka_offset"] for r in results] == [100, 101, 102, 103, 104]
    # each record's own source: lsn 40 + k, txId 777 (SOURCE), rendered as zero-padded parts
    assert [r.row["_cdc_position"] for r in results] == [f"{40 + k:020d}-{777:020d}" for k in range(5)]


def test_contract_failures_are_dead_letters_whose_raw_line_replays_as_json() -> None:
    records = [
        {"before": None, "after": _avro_row(1), "source": SOURCE, "op": "x", "ts_ms": 1},  # unknown_op
        {"before": None, "after": None, "source": SOURCE, "op": "c", "ts_ms": 1},  # incompatible_schema
        {"before": None, "after": {**_avro_row(2), "d_date": 10**9}, "source": SOURCE, "op": "c",
         "ts_ms": 1},  # type_mismatch: epoch day out of range
    ]
    results = _parse_avro(_container(_envelope_schema(), records))
    assert [r.reason for r in results] == ["unknown_op", "incompatible_schema", "type_mismatch"]
    for index, dead in enumerate(results):
        assert isinstance(dead, DeadLetter) and not dead.raw_is_base64
        assert (dead.topic, dead.partition, dead.offset, dead.landing_file) == (TOPIC, 1, 100 + index, FILE)
        line = json.loads(dead.raw_line)
        assert set(line) == {"schema", "payload"} and line["schema"]["name"] == "fixture.avro.Envelope"
        again = parse_line(dead.raw_line.encode(), topic=TOPIC, partition=1, offset=dead.offset, landing_file=FILE,
                           ingested_at=INGESTED_AT, contracts=CONTRACTS)
        assert again == dead  # what `lakehouse dead-letter replay` re-parses gives the same verdict
    assert base64.b64encode((-1234567).to_bytes(3, "big", signed=True)).decode() in results[0].raw_line


def test_parse_record_equals_parse_line_of_its_json_converter_line() -> None:
    schema = connect_schema(_envelope_schema())
    payload = {"before": None, "after": _json_row(9), "source": SOURCE, "op": "u", "ts_ms": 5}
    direct = parse_record(payload, schema=schema, topic=TOPIC, partition=1, offset=3, landing_file=FILE,
                          ingested_at=INGESTED_AT, contracts=CONTRACTS)
    from_line = parse_line(json.dumps({"schema": schema, "payload": payload}).encode(), topic=TOPIC, partition=1,
                           offset=3, landing_file=FILE, ingested_at=INGESTED_AT, contracts=CONTRACTS)
    assert direct == from_line and isinstance(direct, BronzeEvent)
    assert parse_record(None, schema=schema, topic=TOPIC, partition=1, offset=3, landing_file=FILE,
                        ingested_at=INGESTED_AT, contracts=CONTRACTS) == Tombstone(TOPIC, 1, 3, FILE)
    unknown = parse_record(payload, schema=schema, topic="other.topic", partition=1, offset=3, landing_file=FILE,
                           ingested_at=INGESTED_AT, contracts=CONTRACTS)
    assert isinstance(unknown, DeadLetter) and unknown.reason == "unknown_topic"


def _records(count: int) -> list[dict[str, Any]]:
    return [{"before": None, "after": _avro_row(k), "source": {**SOURCE, "lsn": 40 + k}, "op": "c", "ts_ms": 1}
            for k in range(count)]


def _only(results: list, kind: type) -> list:
    return [r for r in results if isinstance(r, kind)]


def test_a_truncated_file_lands_its_whole_blocks_and_dead_letters_the_rest() -> None:
    data = _container(_envelope_schema(), _records(4), sync_interval=1)
    results = _parse_avro(data[:-25])
    assert [r.row["id"] for r in _only(results, BronzeEvent)] == [0, 1, 2]
    (dead,) = _only(results, DeadLetter)
    assert (dead.reason, dead.raw_is_base64, dead.offset, dead.table) == ("bad_encoding", True, 103, "avro_fixture")
    assert FILE in dead.message and "truncated" in dead.message
    assert data[:-25].endswith(base64.b64decode(dead.raw_line))


def test_a_file_that_is_not_avro_is_one_dead_letter() -> None:
    for content in (b'{"op":"c"}\n', b"", b"Obj"):
        (dead,) = _parse_avro(content)
        assert isinstance(dead, DeadLetter) and dead.reason == "bad_encoding" and dead.offset == 100
        assert base64.b64decode(dead.raw_line) == content and FILE in dead.message


def test_a_broken_sync_marker_keeps_the_blocks_before_it() -> None:
    data = bytearray(_container(_envelope_schema(), _records(3), sync_interval=1, sync_marker=b"S" * 16))
    markers = [m.start() for m in re.finditer(b"S" * 16, data)]  # the header's, then one after each block
    assert len(markers) == 4
    data[markers[2]:markers[2] + 16] = b"X" * 16  # the sync marker after block 1
    results = _parse_avro(bytes(data))
    assert [r.row["id"] for r in _only(results, BronzeEvent)] == [0]
    (dead,) = _only(results, DeadLetter)
    assert dead.offset == 101 and "sync marker" in dead.message


def test_an_undecodable_record_loses_the_rest_of_its_block_only() -> None:
    records = _records(4)
    records[1]["after"]["note"] = "@@BROKEN@@"
    data = _container(_envelope_schema(), records[:3], sync_marker=b"M" * 16)  # one block of 3 records
    tail = _container(_envelope_schema(), records[3:], sync_marker=b"M" * 16)
    header = _container(_envelope_schema(), [], sync_marker=b"M" * 16)
    data = (data + tail[len(header):]).replace(b"@@BROKEN@@", b"caf\xe9\xff\xfe\xfd\xfc\xfb\xfa")  # not UTF-8
    results = _parse_avro(data)
    assert [r.row["id"] for r in _only(results, BronzeEvent)] == [0, 3]
    assert [r.row["_cdc_kafka_offset"] for r in _only(results, BronzeEvent)] == [100, 103]
    (dead,) = _only(results, DeadLetter)
    assert dead.offset == 101 and dead.reason == "bad_encoding"
    assert "record 1 of block 0" in dead.message and "2 records" in dead.message


def test_deflate_and_bzip2_codecs() -> None:
    for codec in ("deflate", "bzip2"):
        results = _parse_avro(_container(_envelope_schema(), _records(3), codec=codec))
        assert [r.row["id"] for r in _only(results, BronzeEvent)] == [0, 1, 2], codec


def test_an_avro_file_outside_the_landing_layout_is_dead_lettered_record_by_record() -> None:
    results = _parse_avro(_container(_envelope_schema(), _records(2)), landing=None, name="topics/x/stray.avro")
    assert [(r.reason, r.topic, r.offset) for r in results] == [("unknown_topic", None, 0), ("unknown_topic", None, 1)]
    assert all(json.loads(r.raw_line)["payload"]["after"]["id"] == i for i, r in enumerate(results))


def test_container_exposes_the_writer_schema_as_json_converter_schema() -> None:
    container = AvroContainer.open(_container(_flattened_schema(), _records(0)), FILE)
    assert container.schema is not None and container.header_error is None
    names = [f["field"] for f in container.schema.connect["fields"]]
    assert names[:2] == ["id", "d_date"] and "__deleted" in names
    assert set(container.schema.row_schemas) == set(names)
