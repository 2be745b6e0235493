"""Debezium value encodings on the TICKIT contracts, and the dead-letter reason of each bad line."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal

import pytest

from ingestion.cdc.contracts import topic_map
from ingestion.cdc.parser import REASON_CODES, BronzeEvent, DeadLetter, Tombstone, parse_line
from tests.cdc.conftest import INGESTED_AT

SALE = {
    "salesid": 1,
    "listid": 1,
    "sellerid": 36861,
    "buyerid": 21191,
    "eventid": 7872,
    "dateid": 1875,
    "qtysold": 4,
    "pricepaid": 728.0,
    "commission": 109.2,
    "saletime": "2/18/2020 02:36:48",
}


def _parse(line: bytes | str, topic: str = "tickit.ecomm.sale", offset: int = 0):
    raw = line.encode("utf-8") if isinstance(line, str) else line
    return parse_line(raw, topic=topic, partition=1, offset=offset, landing_file="f.json", ingested_at=INGESTED_AT)


def _flat(table_row: dict, **meta) -> str:
    base = {"__op": "c", "__deleted": "false", "__source_ts_ms": 1677379962000, "__db": "ecomm"}
    return json.dumps({**table_row, **base, **meta})


def test_reference_writeup_flattened_sale_record():
    """The flattened sale of the reference write-up (REFERENCE_PIPELINES.md), without position fields."""
    line = _flat(SALE, __op="r", __table="sale", __name="tickit")
    result = _parse(line, offset=41)
    assert isinstance(result, BronzeEvent) and result.degraded
    row = result.row
    assert row["pricepaid"] == Decimal("728.00") and str(row["commission"]) == "109.20"
    assert row["saletime"] == dt.datetime(2020, 2, 18, 2, 36, 48)
    assert row["_cdc_source_ts"] == dt.datetime(2023, 2, 26, 2, 52, 42)
    assert row["_cdc_source_date"] == dt.date(2023, 2, 26)
    assert row["_cdc_position"] == f"t-{1677379962000:020d}-{1:020d}-{41:020d}"
    assert row["_cdc_source_db"] == "ecomm" and row["_cdc_source_table"] == "sale"


@pytest.mark.parametrize(
    ("encoded", "expected"),
    [
        (728.0, Decimal("728.00")),
        (0.1 + 0.2, Decimal("0.30")),  # double-mode noise rounds to the scale
        (109.19999999999999, Decimal("109.20")),
        ("728.00", Decimal("728.00")),  # decimal.handling.mode=string
        ("12.345", Decimal("12.35")),  # half-up
        (base64.b64encode((72800).to_bytes(3, "big", signed=True)).decode(), Decimal("728.00")),  # precise
        (base64.b64encode((-150).to_bytes(2, "big", signed=True)).decode(), Decimal("-1.50")),
    ],
)
def test_decimal_encodings(encoded, expected):
    row = _parse(_flat({**SALE, "pricepaid": encoded}, __pos=4, __file="mysql-bin.000001")).row
    assert row["pricepaid"] == expected and row["pricepaid"].as_tuple().exponent == -2


def test_precise_decimal_scale_from_the_schema():
    """Schema-wrapped precise bytes: the scale parameter of the schema, not the contract, decodes them."""
    unscaled = base64.b64encode((72800).to_bytes(3, "big", signed=True)).decode()
    fields = [
        {"field": "salesid", "type": "int32"},
        {
            "field": "pricepaid",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "3", "connect.decimal.precision": "8"},
        },
        {"field": "saletime", "type": "int64", "name": "io.debezium.time.MicroTimestamp"},
    ]
    schema = {"type": "struct", "fields": [{"type": "struct", "field": "after", "fields": fields}]}
    payload = {
        "before": None,
        "after": {**SALE, "pricepaid": unscaled, "saletime": 1_203_301_008_123_456},
        "source": {"ts_ms": 1_700_000_000_000, "file": "mysql-bin.000002", "pos": 10, "row": 0, "db": "ecomm"},
        "op": "c",
        "ts_ms": 1_700_000_000_100,
    }
    row = _parse(json.dumps({"schema": schema, "payload": payload})).row
    assert row["pricepaid"] == Decimal("72.80")
    assert row["saletime"] == dt.datetime(2008, 2, 18, 2, 16, 48, 123456)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("io.debezium.time.Timestamp", 1203301008000, dt.datetime(2008, 2, 18, 2, 16, 48)),
        ("io.debezium.time.MicroTimestamp", 1203301008000001, dt.datetime(2008, 2, 18, 2, 16, 48, 1)),
        ("io.debezium.time.NanoTimestamp", 1203301008000001999, dt.datetime(2008, 2, 18, 2, 16, 48, 1)),
        ("io.debezium.time.ZonedTimestamp", "2008-02-18T03:16:48+01:00", dt.datetime(2008, 2, 18, 2, 16, 48)),
        ("io.debezium.time.ZonedTimestamp", "2008-02-18T02:16:48.5Z", dt.datetime(2008, 2, 18, 2, 16, 48, 500000)),
    ],
)
def test_timestamp_encodings(name, value, expected):
    fields = [{"field": "saletime", "type": "string" if isinstance(value, str) else "int64", "name": name}]
    schema = {"type": "struct", "fields": [{"type": "struct", "field": "after", "fields": fields}]}
    payload = {
        "after": {**SALE, "saletime": value},
        "source": {"ts_ms": 1, "file": "mysql-bin.000002", "pos": 10},
        "op": "u",
    }
    assert _parse(json.dumps({"schema": schema, "payload": payload})).row["saletime"] == expected


def test_schemaless_integers_use_the_connector_default_unit():
    sale = _parse(_flat({**SALE, "saletime": 1203301008000}, __pos=1)).row  # MySQL DATETIME: ms
    assert sale["saletime"] == dt.datetime(2008, 2, 18, 2, 16, 48)
    event = {
        "eventid": 1,
        "venueid": 2,
        "catid": 3,
        "dateid": 1827,
        "eventname": "x",
        "starttime": 1199196000000000,
    }  # PostgreSQL timestamp: us
    row = _parse(_flat(event, __lsn=5), topic="tickit.ems.event").row
    assert row["starttime"] == dt.datetime(2008, 1, 1, 14, 0)


def test_epoch_day_dates_and_tinyint_booleans():
    date_row = {
        "dateid": 1827,
        "caldate": 13879,
        "day": "WE",
        "week": 1,
        "month": "JAN",
        "qtr": "1",
        "year": 2008,
        "holiday": 1,
    }
    row = _parse(_flat(date_row, __pos=3), topic="tickit.ecomm.date").row
    assert row["caldate"] == dt.date(2008, 1, 1) and row["holiday"] is True
    row = _parse(_flat({**date_row, "holiday": False, "caldate": "2008-01-01"}, __pos=3), topic="tickit.ecomm.date").row
    assert row["holiday"] is False and row["caldate"] == dt.date(2008, 1, 1)


def test_schema_drift_column_goes_to_extra_columns():
    result = _parse(_flat({**SALE, "loyalty_points": 12}, __pos=9))
    assert isinstance(result, BronzeEvent) and result.extra_columns == {"loyalty_points": 12}
    assert "loyalty_points" not in result.row


@pytest.mark.parametrize(
    ("line", "topic", "reason"),
    [
        (b"{not json", "tickit.ecomm.sale", "malformed_json"),
        (b"", "tickit.ecomm.sale", "malformed_json"),
        (b'{"salesid": NaN}', "tickit.ecomm.sale", "malformed_json"),
        (b'\xff\xfe{"op": "c"}', "tickit.ecomm.sale", "bad_encoding"),
        (_flat({**SALE, "salesid": None}, __pos=1).encode(), "tickit.ecomm.sale", "missing_pk"),
        (_flat({k: v for k, v in SALE.items() if k != "salesid"}, __pos=1).encode(), "tickit.ecomm.sale", "missing_pk"),
        (_flat(SALE, __op="x", __pos=1).encode(), "tickit.ecomm.sale", "unknown_op"),
        (_flat(SALE, __op="m", __pos=1).encode(), "tickit.ecomm.sale", "unsupported_op"),
        (_flat(SALE, __pos=1).encode(), "tickit.ecomm.nope", "unknown_topic"),
        (_flat({**SALE, "qtysold": "four"}, __pos=1).encode(), "tickit.ecomm.sale", "type_mismatch"),
        (_flat({**SALE, "pricepaid": 123456789.0}, __pos=1).encode(), "tickit.ecomm.sale", "type_mismatch"),
        (_flat({**SALE, "saletime": "yesterday"}, __pos=1).encode(), "tickit.ecomm.sale", "type_mismatch"),
        (_flat(SALE, __file="mysql-bin", __pos=1).encode(), "tickit.ecomm.sale", "type_mismatch"),
        (_flat(SALE, __deleted="true").encode(), "tickit.ecomm.sale", "incompatible_schema"),
        (b"[1, 2]", "tickit.ecomm.sale", "incompatible_schema"),
        (
            json.dumps({"op": "c", "after": None, "source": {"ts_ms": 5}}).encode(),
            "tickit.ecomm.sale",
            "incompatible_schema",
        ),
        (
            json.dumps(
                {
                    "schema": {
                        "type": "struct",
                        "fields": [
                            {"field": "after", "type": "struct", "fields": [{"field": "qtysold", "type": "string"}]}
                        ],
                    },
                    "payload": {"op": "c", "after": SALE, "source": {"ts_ms": 5, "file": "b.1", "pos": 1}},
                }
            ).encode(),
            "tickit.ecomm.sale",
            "incompatible_schema",
        ),
    ],
)
def test_bad_lines_get_their_reason(line, topic, reason):
    result = _parse(line, topic=topic, offset=77)
    assert isinstance(result, DeadLetter), result
    assert result.reason == reason and result.reason in REASON_CODES
    assert result.message and result.offset == 77 and result.topic == topic and result.landing_file == "f.json"
    if reason == "bad_encoding":
        assert result.raw_is_base64 and base64.b64decode(result.raw_line) == line
    else:
        assert not result.raw_is_base64 and result.raw_line == line.decode()
    assert set(result.as_row()) >= {"raw_line", "reason", "message", "topic", "kafka_partition", "kafka_offset"}


def test_tombstones_and_null_payloads():
    assert isinstance(_parse(b"null\n"), Tombstone)
    assert isinstance(_parse(b'{"schema": null, "payload": null}'), Tombstone)


def test_every_contract_topic_is_known():
    topics = topic_map()
    assert {c.name for c in topics.values()} == {"category", "date", "event", "listing", "sale", "user", "venue"}
    assert topics["tickit.tickit.crm.user"].name == "user"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"catid":1,"__op":"c","__source_ts_ms":100000000000000000}', "type_mismatch"),
        (b'{"after":{"catid":1},"op":"c","source":{"ts_ms":253402300800000,"lsn":1}}', "type_mismatch"),
        (b'{"catid":1,"__op":"c","__source_ts_ms":1,"__deleted":[]}', "incompatible_schema"),
    ],
)
def test_out_of_range_and_odd_values_are_dead_lettered_not_raised(line, reason):
    """Regressions found by the reliability suite's property tests (they used to raise)."""
    result = _parse(line, topic="tickit.ems.category")
    assert isinstance(result, DeadLetter) and result.reason == reason


def test_odd_schemas_are_dead_lettered_not_raised():
    fields = [{"field": "pricepaid", "type": "bytes", "name": ["not", "a", "name"], "parameters": {"scale": "x"}}]
    schema = {"type": "struct", "fields": [{"type": "struct", "field": "after", "fields": fields}]}
    payload = {"after": {**SALE, "pricepaid": "AQ=="}, "source": {"ts_ms": 1, "file": "b.1", "pos": 1}, "op": "c"}
    result = _parse(json.dumps({"schema": schema, "payload": payload}))
    assert isinstance(result, DeadLetter) and result.reason == "incompatible_schema"
    fields[0] = {"field": "pricepaid", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                 "parameters": {"scale": "x"}}  # fmt: skip
    result = _parse(json.dumps({"schema": schema, "payload": payload}))
    assert isinstance(result, DeadLetter) and result.reason == "type_mismatch"
    variable = {**SALE, "pricepaid": {"scale": 2, "value": 7}}
    result = _parse(_flat(variable, __pos=1))
    assert isinstance(result, DeadLetter) and result.reason == "type_mismatch"
