"""PostgreSQL events without ``lsn``: the LSN part of ``_cdc_position`` comes from ``source.sequence``.

Debezium's PostgreSQL incremental-snapshot rows (``source.snapshot = "incremental"``) carry
no ``lsn``, ``txId`` or ``xmin`` (DBZ-4329) but carry ``sequence``, the JSON text
``["<lastCommitLsn>", "<lsn>"]`` Debezium's ``SourceInfo.sequence()`` writes with Jackson
(either element null). Such a row takes ``sequence[1]`` (else ``sequence[0]``) as its LSN
part and a txId part of zeros, instead of the degraded ``t-<ts>-<partition>-<offset>``
that sorted above every real position. The events are built in the shape of the
project's real Debezium PostgreSQL fixtures (``tests/fixtures/debezium/postgres/pg_real_*``,
``flattened/pg_unwrap_*``, ``postgres/pg_docs_truncate.json``) with a Debezium 2.x
``source``; every expected position is written out by hand from the sequence.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from ingestion.cdc.avro_records import decode_schema, parse_avro_file
from ingestion.cdc.kafka_values import parse_kafka_value
from ingestion.cdc.landing import parse_landing_path
from ingestion.cdc.parser import BronzeEvent, DeadLetter, parse_line
from ingestion.cdc.position import (
    PositionError,
    has_position_fields,
    is_degraded,
    render_position,
    sequence_lsn_part,
)
from tests.cdc.conftest import INGESTED_AT, PRODUCTS, fixture_contract, load_fixture

TOPIC = "fixture.topic"
CONTRACTS = {TOPIC: fixture_contract("postgres", PRODUCTS)}
ZEROS = "00000000000000000000"


# -- events in Debezium's PostgreSQL shapes ------------------------------------------------
def _source(**fields: Any) -> dict[str, Any]:
    """A Debezium 2.x ``io.debezium.connector.postgresql.Source`` in its field order (values of pg_real_*).

    JsonConverter writes every schema field, so the optional position fields an incremental
    snapshot row leaves out (``txId``, ``lsn``, ``xmin``) are JSON nulls.
    """
    source = {
        "version": "2.7.3.Final",
        "connector": "postgresql",
        "name": "fullfillment",
        "ts_ms": 1596001099434,
        "snapshot": "false",
        "db": "postgres",
        "sequence": None,
        "ts_us": 1596001099434000,
        "ts_ns": 1596001099434000000,
        "schema": "inventory",
        "table": "products",
        "txId": None,
        "lsn": None,
        "xmin": None,
    }
    unknown = set(fields) - set(source)
    assert not unknown, unknown
    source.update(fields)
    return source


def incremental_row(sequence: Any, key: int = 101) -> dict[str, Any]:
    """An incremental-snapshot read of pg_real_snapshot_read.json's row: no lsn/txId/xmin, a sequence."""
    event = load_fixture("postgres/pg_real_snapshot_read.json")
    event["after"]["id"] = key
    event["source"] = _source(snapshot="incremental", sequence=sequence)
    return event


def streamed_update(lsn: int, tx_id: int, sequence: str, key: int = 101) -> dict[str, Any]:
    """pg_real_update.json's update of ``key`` streamed at ``lsn``."""
    event = load_fixture("postgres/pg_real_update.json")
    event["before"]["id"] = event["after"]["id"] = key
    event["source"] = _source(ts_ms=1596010889629, sequence=sequence, txId=tx_id, lsn=lsn)
    return event


def truncate(lsn: int, tx_id: int, sequence: str) -> dict[str, Any]:
    """pg_docs_truncate.json's truncate (no before/after) at ``lsn``."""
    event = load_fixture("postgres/pg_docs_truncate.json")["payload"]
    event["source"] = _source(ts_ms=1559033904863, table="products", sequence=sequence, txId=tx_id, lsn=lsn)
    return event


def flattened_incremental_row(sequence: Any, key: int = 101) -> dict[str, Any]:
    """pg_unwrap_read.json's row from ExtractNewRecordState with add.fields=op,table,lsn,source.ts_ms,sequence.

    The incremental row has no lsn, so ``__lsn`` is null; ``__sequence`` holds the source's sequence.
    """
    event = load_fixture("flattened/pg_unwrap_read.json")
    event["id"] = key
    event["__lsn"] = None
    event["__sequence"] = sequence
    return event


def parse(event: dict[str, Any], offset: int = 7, partition: int = 0) -> Any:
    return parse_line(
        json.dumps(event).encode(),
        topic=TOPIC,
        partition=partition,
        offset=offset,
        landing_file=f"topics/{TOPIC}/partition={partition}/{TOPIC}+{partition}+0000000000.json",
        ingested_at=INGESTED_AT,
        contracts=CONTRACTS,
    )


def position(event: dict[str, Any], offset: int = 7) -> str:
    result = parse(event, offset=offset)
    assert isinstance(result, BronzeEvent), result
    assert not result.degraded and not is_degraded(result.row["_cdc_position"])
    return result.row["_cdc_position"]


# -- the position from the sequence -----------------------------------------------------------
SEQUENCE_POSITIONS = [
    ('["100","250"]', "00000000000000000250-00000000000000000000"),
    ('[null,"26441400"]', "00000000000026441400-00000000000000000000"),  # fresh snapshot context
    ('["26441168","26441400"]', "00000000000026441400-00000000000000000000"),
    ('["24023119",null]', "00000000000024023119-00000000000000000000"),  # no current lsn: the last commit
    ('["0","0"]', "00000000000000000000-00000000000000000000"),
    ('["1","99999999999999999999"]', "99999999999999999999-00000000000000000000"),  # 20 digits: the widest
]


@pytest.mark.parametrize(("sequence", "expected"), SEQUENCE_POSITIONS)
def test_incremental_snapshot_row_takes_its_lsn_part_from_the_sequence(sequence: str, expected: str) -> None:
    assert position(incremental_row(sequence)) == expected
    assert position(flattened_incremental_row(sequence)) == expected
    result = parse(incremental_row(sequence))
    assert isinstance(result, BronzeEvent)
    assert result.row["_cdc_op"] == "r" and result.row["_cdc_tx_id"] is None and result.shape == "envelope"


def test_render_position_reads_a_whole_source_object() -> None:
    """As the simulator's oracle calls it: the sequence stands in for lsn only; txId stays when present."""
    assert render_position("postgres", _source(sequence='["100","250"]')) == f"00000000000000000250-{ZEROS}"
    assert render_position("postgres", {"sequence": '["100","250"]', "txId": 9}) == (
        "00000000000000000250-00000000000000000009"
    )
    assert sequence_lsn_part('[null,"26441400"]') == "00000000000026441400"
    assert has_position_fields("postgres", {"sequence": '[null,"1"]'})
    assert not has_position_fields("postgres", {"lsn": None, "txId": None, "sequence": None})


def test_lsn_wins_over_the_sequence_when_present() -> None:
    """A streamed event: lsn and txId as before; its sequence is not read (not even checked)."""
    update = streamed_update(34131104, 602, '["34130000","34131104"]')
    assert position(update) == "00000000000034131104-00000000000000000602"
    update["source"]["sequence"] = "not a sequence"
    assert position(update) == "00000000000034131104-00000000000000000602"
    flat = load_fixture("flattened/pg_unwrap_update.json")
    assert position({**flat, "__sequence": '["1","2"]'}) == f"00000000000034131104-{ZEROS}"


def test_without_lsn_txid_or_sequence_the_event_stays_degraded() -> None:
    for event in (incremental_row(None), flattened_incremental_row(None)):
        result = parse(event, offset=12, partition=3)
        assert isinstance(result, BronzeEvent) and result.degraded
        assert result.row["_cdc_position"] == f"t-{1596001099434:020d}-{3:020d}-{12:020d}"


def test_sequence_row_sorts_between_a_lower_truncate_and_a_later_higher_change() -> None:
    """truncate (lsn 26441168) < incremental row (window closed at 26441400) < update (lsn 26441500).

    The degraded position the row used to get sorted above every real position: above the
    later update (so the update lost) and above every truncate.
    """
    cut = position(truncate(26441168, 770, '["26441000","26441168"]'))
    row = position(incremental_row('["26441300","26441400"]'), offset=40)
    later = position(streamed_update(26441500, 772, '["26441400","26441500"]'), offset=41)
    assert cut == "00000000000026441168-00000000000000000770"
    assert row == "00000000000026441400-00000000000000000000"
    assert later == "00000000000026441500-00000000000000000772"
    assert cut < row < later
    assert f"t-{1596001099434:020d}-{0:020d}-{40:020d}" > later  # the old rendering of the row
    flat_row = position(flattened_incremental_row('["26441300","26441400"]'), offset=40)
    assert cut < flat_row == row < later


def test_identity_is_the_sequence_not_the_delivery() -> None:
    """A re-delivered copy (same sequence, higher offset) has the same position; a later chunk of
    the same key (window closed later) another one."""
    first = position(incremental_row('[null,"26441400"]'), offset=40)
    again = position(incremental_row('[null,"26441400"]'), offset=9000)
    later_snapshot = position(incremental_row('["26998000","26999000"]'), offset=9100)
    assert first == again
    assert first < later_snapshot


# -- malformed sequences: dead letters naming the field ---------------------------------------
MALFORMED = [
    "[null,null]",
    '["26441400"]',
    '["1","2","3"]',
    "[]",
    "[26441168,26441400]",  # numbers, not strings
    '["0x1A","2"]',
    '["-5","2"]',
    '["1.5","2"]',
    '["1","100000000000000000000"]',  # 21 digits: beyond the 20-digit part
    '{"lsn":"1"}',
    '"26441400"',
    "26441400",
    "not json",
    "",
    26441400,  # a JSON number where Debezium writes a string
    ["1", "2"],  # a JSON array, not its text
]


@pytest.mark.parametrize("sequence", MALFORMED, ids=repr)
def test_a_malformed_sequence_is_a_dead_letter_naming_sequence(sequence: Any) -> None:
    for event in (incremental_row(sequence), flattened_incremental_row(sequence)):
        result = parse(event, offset=55)
        assert isinstance(result, DeadLetter), result
        assert result.reason == "type_mismatch" and result.table == "products" and result.offset == 55
        assert "'sequence'" in result.message and repr(sequence) in result.message, result.message
    with pytest.raises(PositionError, match="'sequence'"):
        render_position("postgres", {"sequence": sequence})


# -- the Avro paths: landing files and Kafka values --------------------------------------------
_ROW_FIELDS = [
    {"name": "id", "type": "int"},
    {"name": "name", "type": "string"},
    {"name": "description", "type": ["null", "string"], "default": None},
    {"name": "weight", "type": ["null", "double"], "default": None},
]
#: The Source record Debezium's Avro converter writes for PostgreSQL 2.x (the Connect schema of
#: PostgresSourceInfoStructMaker: ``sequence`` an optional string, txId/lsn/xmin optional int64).
_SOURCE_AVRO = {
    "type": "record",
    "name": "Source",
    "namespace": "io.debezium.connector.postgresql",
    "fields": [
        {"name": "version", "type": "string"},
        {"name": "connector", "type": "string"},
        {"name": "name", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {
            "name": "snapshot",
            "type": [
                {
                    "type": "string",
                    "connect.version": 1,
                    "connect.parameters": {
                        "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
                    },
                    "connect.default": "false",
                    "connect.name": "io.debezium.data.Enum",
                },
                "null",
            ],
            "default": "false",
        },
        {"name": "db", "type": "string"},
        {"name": "sequence", "type": ["null", "string"], "default": None},
        {"name": "ts_us", "type": ["null", "long"], "default": None},
        {"name": "ts_ns", "type": ["null", "long"], "default": None},
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "txId", "type": ["null", "long"], "default": None},
        {"name": "lsn", "type": ["null", "long"], "default": None},
        {"name": "xmin", "type": ["null", "long"], "default": None},
    ],
    "connect.name": "io.debezium.connector.postgresql.Source",
}
ENVELOPE_AVRO = {
    "type": "record",
    "name": "Envelope",
    "namespace": "fullfillment.inventory.products",
    "fields": [
        {
            "name": "before",
            "type": [
                "null",
                {"type": "record", "name": "Value", "fields": _ROW_FIELDS,
                 "connect.name": "fullfillment.inventory.products.Value"},
            ],
            "default": None,
        },
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": _SOURCE_AVRO},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
    "connect.name": "fullfillment.inventory.products.Envelope",
}  # fmt: skip
FLATTENED_AVRO = {
    "type": "record",
    "name": "Value",
    "namespace": "fullfillment.inventory.products",
    "fields": _ROW_FIELDS + [
        {"name": name, "type": ["null", kind], "default": None}
        for name, kind in (("__deleted", "string"), ("__op", "string"), ("__table", "string"), ("__lsn", "long"),
                           ("__source_ts_ms", "long"), ("__sequence", "string"))
    ],
    "connect.name": "fullfillment.inventory.products.Value",
}  # fmt: skip
AVRO_FILE = f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000100.avro"


def _container(schema: dict[str, Any], records: list[dict[str, Any]]) -> bytes:
    handle = io.BytesIO()
    fastavro.writer(handle, fastavro.parse_schema(schema), records)
    return handle.getvalue()


def _avro_results(schema: dict[str, Any], records: list[dict[str, Any]]) -> list[Any]:
    data = _container(schema, records)
    return list(parse_avro_file(data, parse_landing_path(AVRO_FILE), AVRO_FILE, INGESTED_AT, CONTRACTS))


def test_avro_envelope_and_flattened_records_take_the_sequence() -> None:
    sequences = ['["26441300","26441400"]', '[null,"26441400"]', '["24023119",null]']
    envelopes = _avro_results(ENVELOPE_AVRO, [incremental_row(s) for s in sequences])
    flattened = _avro_results(FLATTENED_AVRO, [flattened_incremental_row(s) for s in sequences])
    expected = [f"00000000000026441400-{ZEROS}", f"00000000000026441400-{ZEROS}", f"00000000000024023119-{ZEROS}"]
    for results, shape in ((envelopes, "envelope"), (flattened, "flattened")):
        assert all(isinstance(r, BronzeEvent) and not r.degraded and r.shape == shape for r in results), results
        assert [r.row["_cdc_position"] for r in results] == expected
        assert [r.row["_cdc_kafka_offset"] for r in results] == [100, 101, 102]
    for sequence, avro in zip(sequences, envelopes, strict=True):  # the JSON line of the same event agrees
        assert avro.row["_cdc_position"] == position(incremental_row(sequence))


def test_avro_malformed_sequence_is_a_dead_letter_naming_sequence() -> None:
    records = [incremental_row('[null,"26441400"]'), incremental_row("[null,null]"), incremental_row('["x","1"]')]
    good, *bad = _avro_results(ENVELOPE_AVRO, records)
    assert isinstance(good, BronzeEvent) and good.row["_cdc_position"] == f"00000000000026441400-{ZEROS}"
    (flat_bad,) = _avro_results(FLATTENED_AVRO, [flattened_incremental_row("[null,null]")])
    for dead in (*bad, flat_bad):
        assert isinstance(dead, DeadLetter) and dead.reason == "type_mismatch", dead
        assert "'sequence'" in dead.message and not dead.raw_is_base64
    assert [d.offset for d in bad] == [101, 102]


class _OneSchema:
    """A schema source (``kafka_values.SchemaSource``) that knows one writer schema."""

    def __init__(self, avro: dict[str, Any]):
        self.avro = avro

    def schema(self, schema_id: int):
        return decode_schema(self.avro)


@pytest.mark.parametrize(
    ("avro", "event"), [(ENVELOPE_AVRO, incremental_row), (FLATTENED_AVRO, flattened_incremental_row)]
)
def test_kafka_avro_value_takes_the_sequence(avro: dict[str, Any], event: Any) -> None:
    def value(sequence: str) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(avro), event(sequence))
        return b"\x00" + (7).to_bytes(4, "big") + out.getvalue()

    def kafka(sequence: str) -> Any:
        return parse_kafka_value(value(sequence), topic=TOPIC, partition=1, offset=77, ingested_at=INGESTED_AT,
                                 contracts=CONTRACTS, schemas=_OneSchema(avro))  # fmt: skip

    result = kafka('["100","250"]')
    assert isinstance(result, BronzeEvent) and not result.degraded
    assert result.row["_cdc_position"] == "00000000000000000250-00000000000000000000"
    dead = kafka('["100"]')
    assert isinstance(dead, DeadLetter) and dead.reason == "type_mismatch" and "'sequence'" in dead.message
