"""Every real/documented Debezium fixture event parses; values are checked field by field.

The expected values are read straight from the fixture JSON (the independent oracle):
the row image the op selects, source timestamps, the connector's position fields.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from ingestion.cdc.parser import ENVELOPE, FLATTENED, BronzeEvent, DeadLetter, Tombstone, parse_line
from tests.cdc.conftest import CUSTOMERS, FIXTURES, INGESTED_AT, PRODUCTS, fixture_contract, load_fixture, one_line

ENVELOPE_FIXTURES = {
    "postgres/pg_real_snapshot_read.json": ("postgres", PRODUCTS),
    "postgres/pg_real_create.json": ("postgres", PRODUCTS),
    "postgres/pg_real_update.json": ("postgres", PRODUCTS),
    "postgres/pg_real_delete.json": ("postgres", PRODUCTS),
    "postgres/pg_docs_create_with_schema.json": ("postgres", CUSTOMERS),
    "postgres/pg_docs_update.json": ("postgres", CUSTOMERS),
    "postgres/pg_docs_delete.json": ("postgres", CUSTOMERS),
    "postgres/pg_docs_truncate.json": ("postgres", CUSTOMERS),
    "mysql/mysql_real_snapshot_with_schema.json": ("mysql", PRODUCTS),
    "mysql/mysql_real_update_with_schema.json": ("mysql", PRODUCTS),
    "mysql/mysql_real_delete_with_schema.json": ("mysql", PRODUCTS),
    "mysql/mysql_v3_real_snapshot_read.json": ("mysql", CUSTOMERS),
    "mysql/mysql_v3_real_update.json": ("mysql", CUSTOMERS),
    "mysql/mysql_docs_create_with_schema.json": ("mysql", CUSTOMERS),
    "mysql/mysql_docs_update.json": ("mysql", CUSTOMERS),
    "mysql/mysql_docs_delete.json": ("mysql", CUSTOMERS),
    "sqlserver/sqlserver_docs_create_with_schema.json": ("sqlserver", CUSTOMERS),
    "sqlserver/sqlserver_docs_update.json": ("sqlserver", CUSTOMERS),
    "sqlserver/sqlserver_docs_delete.json": ("sqlserver", CUSTOMERS),
}


def _utc_from_ms(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms // 1000, dt.UTC).replace(tzinfo=None) + dt.timedelta(milliseconds=ms % 1000)


def _expected_position(connector: str, source: dict) -> str:
    """The position spelled out from the fixture's source block (format of docs/architecture.md, "Bronze contract")."""
    if connector == "postgres":
        return f"{source['lsn']:020d}-{source.get('txId') or 0:020d}"
    if connector == "mysql":
        index = int(source["file"].rsplit(".", 1)[1])
        return f"{index:020d}-{source['pos']:020d}-{source['row']:020d}"
    lsn = [source[k].replace(":", "").lower() for k in ("commit_lsn", "change_lsn")]
    return f"{lsn[0]}-{lsn[1]}-{int(source['event_serial_no']):020d}"


def _parse(raw: bytes, connector: str, columns, offset: int = 7):
    return parse_line(
        raw,
        topic="fixture.topic",
        partition=3,
        offset=offset,
        landing_file="topics/fixture.topic/partition=3/fixture.topic+3+0000000000.json",
        ingested_at=INGESTED_AT,
        contracts={"fixture.topic": fixture_contract(connector, columns)},
    )


@pytest.mark.parametrize("relative", sorted(ENVELOPE_FIXTURES))
def test_envelope_fixture_parses_field_by_field(relative):
    connector, columns = ENVELOPE_FIXTURES[relative]
    document = load_fixture(relative)
    payload = document.get("payload", document)
    result = _parse(one_line(document), connector, columns)

    assert isinstance(result, BronzeEvent), getattr(result, "message", result)
    assert result.shape == ENVELOPE and not result.degraded
    row, op, source = result.row, payload["op"], payload["source"]
    image = None if op == "t" else payload["before"] if op == "d" else payload["after"]
    for column in columns:
        expected = None if image is None else image.get(column.name)
        assert row[column.name] == expected, column.name
        assert type(row[column.name]) is type(expected), column.name
    source_ms = source["ts_ms"] or payload["ts_ms"]  # MySQL 1.x snapshots carry source.ts_ms 0
    assert row["_cdc_op"] == op
    assert row["_cdc_is_deleted"] is (op in ("d", "t"))
    assert row["_cdc_source_ts"] == _utc_from_ms(source_ms)
    assert row["_cdc_source_date"] == _utc_from_ms(source_ms).date()
    assert row["_cdc_position"] == _expected_position(connector, source)
    native_tx = {"postgres": "txId", "mysql": "gtid", "sqlserver": "commit_lsn"}[connector]
    assert row["_cdc_tx_id"] == (None if source.get(native_tx) is None else str(source[native_tx]))
    assert row["_cdc_source_db"] == source["db"]
    assert row["_cdc_source_table"] == source["table"]
    assert row["_cdc_topic"] == "fixture.topic"
    assert row["_cdc_kafka_partition"] == 3
    assert row["_cdc_kafka_offset"] == 7
    assert row["_cdc_landing_file"].endswith("fixture.topic+3+0000000000.json")
    assert row["_cdc_ingested_at"] == INGESTED_AT
    assert result.extra_columns == {k: v for k, v in (image or {}).items() if k not in row}


def test_literal_values_of_real_events():
    """A few values written out by hand from the fixture text, as a second independent check."""
    update = _parse(one_line(load_fixture("postgres/pg_real_update.json")), "postgres", PRODUCTS).row
    assert update["description"] == "18oz carpenter hammer"
    assert update["_cdc_position"] == "00000000000034131104-00000000000000000602"
    assert update["_cdc_source_ts"] == dt.datetime(2020, 7, 29, 8, 21, 29, 629000)
    mysql_delete = _parse(one_line(load_fixture("mysql/mysql_real_delete_with_schema.json")), "mysql", PRODUCTS)
    assert mysql_delete.row["weight"] == 5.170000076293945
    assert mysql_delete.row["_cdc_position"] == "00000000000000000003-00000000000000002443-00000000000000000000"
    sqlserver = _parse(one_line(load_fixture("sqlserver/sqlserver_docs_update.json")), "sqlserver", CUSTOMERS)
    assert sqlserver.row["email"] == "noreply@example.org"
    assert sqlserver.row["_cdc_position"] == "0000002700000ac00007-0000002700000ac00002-00000000000000000002"


def test_docs_update_with_key_only_before_image_and_truncate():
    update = _parse(one_line(load_fixture("postgres/pg_docs_update.json")), "postgres", CUSTOMERS).row
    assert (update["id"], update["first_name"], update["last_name"], update["email"]) == (
        1, "Anne Marie", "Kretchmar", "annek@noanswer.org")  # the after image, not the key-only before
    assert update["_cdc_op"] == "u" and update["_cdc_is_deleted"] is False
    assert update["_cdc_position"] == f"{24023128:020d}-{556:020d}"
    delete = _parse(one_line(load_fixture("postgres/pg_docs_delete.json")), "postgres", CUSTOMERS).row
    assert delete["id"] == 1 and delete["first_name"] is None and delete["_cdc_is_deleted"] is True
    truncate = _parse(one_line(load_fixture("postgres/pg_docs_truncate.json")), "postgres", CUSTOMERS).row
    assert truncate["_cdc_op"] == "t" and truncate["id"] is None and truncate["_cdc_is_deleted"] is True


@pytest.mark.parametrize(
    ("relative", "connector"),
    [
        ("_verbatim_sources/flink__debezium-postgres-data-schema-exclude.txt", "postgres"),
        ("_verbatim_sources/flink__debezium-data-schema-include.txt", "mysql"),
    ],
)
def test_every_line_of_the_verbatim_captures_parses(relative, connector):
    lines = (FIXTURES / relative).read_bytes().splitlines()
    assert len(lines) == 16
    for index, line in enumerate(lines):
        document = json.loads(line)
        payload = document.get("payload", document)
        result = _parse(line, connector, PRODUCTS, offset=index)
        assert isinstance(result, BronzeEvent), getattr(result, "message", result)
        image = payload["before"] if payload["op"] == "d" else payload["after"]
        assert {c.name: result.row[c.name] for c in PRODUCTS} == image
        assert result.row["_cdc_position"] == _expected_position(connector, payload["source"])


def test_flattened_lines_match_their_envelope_originals():
    """The flattened fixture is derived from the PG capture: same values, same op, same LSN."""
    flattened = (FIXTURES / "flattened/pg_unwrap_rewrite_all16.jsonl").read_bytes().splitlines()
    originals = (FIXTURES / "_verbatim_sources/flink__debezium-postgres-data-schema-exclude.txt").read_bytes()
    originals = originals.splitlines()
    assert len(flattened) == len(originals) == 16
    for index, (flat_line, original_line) in enumerate(zip(flattened, originals, strict=True)):
        flat = _parse(flat_line, "postgres", PRODUCTS, offset=index)
        original = json.loads(original_line)
        assert isinstance(flat, BronzeEvent) and flat.shape == FLATTENED and not flat.degraded
        image = original["before"] if original["op"] == "d" else original["after"]
        assert {c.name: flat.row[c.name] for c in PRODUCTS} == image
        assert flat.row["_cdc_op"] == original["op"]
        assert flat.row["_cdc_is_deleted"] is (original["op"] == "d")
        assert flat.row["_cdc_source_ts"] == _utc_from_ms(original["source"]["ts_ms"])
        # add.fields had lsn but not txId: the txId part is zeros.
        assert flat.row["_cdc_position"] == f"{original['source']['lsn']:020d}-{0:020d}"
        assert flat.row["_cdc_tx_id"] is None
        assert flat.row["_cdc_source_table"] == "products"
        assert flat.row["_cdc_source_db"] == "inventory"  # no __db: the contract's database


@pytest.mark.parametrize(
    "relative",
    [
        "flattened/pg_unwrap_read.json",
        "flattened/pg_unwrap_create.json",
        "flattened/pg_unwrap_update.json",
        "flattened/pg_unwrap_delete_rewrite.json",
    ],
)
def test_single_flattened_fixtures(relative):
    document = load_fixture(relative)
    result = _parse(one_line(document), "postgres", PRODUCTS)
    assert isinstance(result, BronzeEvent)
    assert {c.name: result.row[c.name] for c in PRODUCTS} == {c.name: document[c.name] for c in PRODUCTS}
    assert result.row["_cdc_op"] == document["__op"]
    assert result.row["_cdc_is_deleted"] is (document["__deleted"] == "true")
    assert result.row["_cdc_position"] == f"{document['__lsn']:020d}-{0:020d}"


def test_default_flattened_without_metadata_is_dead_lettered_as_unknown_op():
    result = _parse(one_line(load_fixture("flattened/pg_unwrap_default_update.json")), "postgres", PRODUCTS)
    assert isinstance(result, DeadLetter)
    assert result.reason == "unknown_op"
    assert "__op" in result.message


def test_tombstone_fixture_value_is_a_tombstone():
    record = load_fixture("tombstone/pg_tombstone_after_delete.json")
    result = _parse(one_line(record["value"]), "postgres", PRODUCTS, offset=12)
    assert result == Tombstone("fixture.topic", 3, 12, result.landing_file)
