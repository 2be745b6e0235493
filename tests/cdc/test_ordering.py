"""_cdc_position sorts as a string in each connector's own order, including the tricky cases."""

from __future__ import annotations

import datetime as dt
import json

from hypothesis import given
from hypothesis import strategies as st

from ingestion.cdc.parser import BronzeEvent, parse_line
from ingestion.cdc.position import (
    binlog_index,
    is_degraded,
    position_width,
    render_position,
)
from tests.cdc.conftest import INGESTED_AT, PRODUCTS, fixture_contract


def _position(connector: str, source: dict, ts_ms: int = 1_600_000_000_000, offset: int = 0) -> str:
    event = {
        "before": None,
        "after": {"id": 1, "name": "n", "description": None, "weight": 1.0},
        "source": {"ts_ms": ts_ms, "db": "d", "table": "products", **source},
        "op": "u",
        "ts_ms": ts_ms + 5,
    }
    result = parse_line(
        json.dumps(event).encode(),
        topic="t",
        partition=0,
        offset=offset,
        landing_file="f",
        ingested_at=INGESTED_AT,
        contracts={"t": fixture_contract(connector, PRODUCTS)},
    )
    assert isinstance(result, BronzeEvent), result
    return result.row["_cdc_position"]


def test_postgres_same_ms_orders_by_lsn_not_by_arrival():
    """Three changes of one transaction share ts_ms; only the LSN orders them."""
    positions = [_position("postgres", {"lsn": lsn, "txId": 900}) for lsn in (34133800, 34131104, 99_000_000)]
    assert sorted(positions) == [positions[1], positions[0], positions[2]]


def test_postgres_lsn_then_txid_and_lsn_digit_growth():
    same_lsn = [_position("postgres", {"lsn": 500, "txId": tx}) for tx in (10, 9)]
    assert sorted(same_lsn) == [same_lsn[1], same_lsn[0]]
    # 9,999,999 < 10,000,000 although "9999999" > "10000000" as plain text.
    assert _position("postgres", {"lsn": 9_999_999}) < _position("postgres", {"lsn": 10_000_000})


def test_mysql_binlog_rollover_sorts_after_the_previous_file():
    before = _position("mysql", {"file": "mysql-bin.000009", "pos": 987_654_321, "row": 7})
    after = _position("mysql", {"file": "mysql-bin.000010", "pos": 4, "row": 0})
    assert before < after
    # the index outgrows its 6-digit suffix: mysql-bin.999999 -> mysql-bin.1000000
    assert _position("mysql", {"file": "mysql-bin.999999", "pos": 5}) < _position(
        "mysql", {"file": "mysql-bin.1000000", "pos": 4}
    )


def test_mysql_rows_of_one_binlog_event_keep_their_order():
    rows = [_position("mysql", {"file": "mysql-bin.000003", "pos": 1068, "row": r}) for r in (2, 0, 10, 1)]
    assert [rows.index(p) for p in sorted(rows)] == [1, 3, 0, 2]


def test_sqlserver_commit_lsn_then_change_lsn_then_serial():
    a = _position(
        "sqlserver",
        {"commit_lsn": "00000027:00000ac0:0007", "change_lsn": "00000027:00000ac0:0002", "event_serial_no": 2},
    )
    b = _position(
        "sqlserver",
        {"commit_lsn": "00000027:00000ac0:0007", "change_lsn": "00000027:00000ac0:0002", "event_serial_no": "1"},
    )
    c = _position(
        "sqlserver",
        {"commit_lsn": "00000027:00000ac0:0007", "change_lsn": "00000027:00000AC0:0003", "event_serial_no": 1},
    )
    d = _position(
        "sqlserver",
        {"commit_lsn": "00000028:00000001:0001", "change_lsn": "00000027:00000ff0:0001", "event_serial_no": 1},
    )
    assert sorted([d, c, a, b]) == [b, a, c, d]
    # serial numbers beyond one digit: 10 after 9
    nine = _position("sqlserver", {"commit_lsn": "00000001:00000001:0001", "event_serial_no": 9})
    ten = _position("sqlserver", {"commit_lsn": "00000001:00000001:0001", "event_serial_no": 10})
    assert nine < ten


def test_snapshot_rows_with_missing_parts_sort_first():
    snapshot = _position("sqlserver", {"commit_lsn": "00000027:00000758:0005", "change_lsn": None})
    change = _position(
        "sqlserver",
        {"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003", "event_serial_no": 1},
    )
    assert snapshot < change
    assert _position("mysql", {"file": "mysql-bin.000003", "pos": 154}) < _position(
        "mysql", {"file": "mysql-bin.000003", "pos": 154, "row": 1}
    )


def test_fixed_width_per_connector():
    assert len(render_position("postgres", {})) == position_width("postgres") == 41
    assert len(render_position("mysql", {"file": "b.1"})) == position_width("mysql") == 62
    assert len(render_position("sqlserver", {})) == position_width("sqlserver") == 62
    assert binlog_index("mysql-bin.000003") == 3


def test_degraded_mode_orders_by_source_ts_then_partition_then_offset():
    flat = {"id": 1, "name": "n", "description": None, "weight": 1.0, "__op": "u", "__deleted": "false"}
    contracts = {"t": fixture_contract("postgres", PRODUCTS)}

    def position(ts_ms: int, partition: int, offset: int) -> BronzeEvent:
        line = json.dumps({**flat, "__source_ts_ms": ts_ms}).encode()
        return parse_line(
            line,
            topic="t",
            partition=partition,
            offset=offset,
            landing_file="f",
            ingested_at=dt.datetime(2026, 1, 1),
            contracts=contracts,
        )

    events = [position(2000, 0, 1), position(1000, 1, 9), position(1000, 0, 10), position(1000, 0, 2)]
    assert all(e.degraded and is_degraded(e.row["_cdc_position"]) for e in events)
    ordered = sorted(events, key=lambda e: e.row["_cdc_position"])
    assert ordered == [events[3], events[2], events[1], events[0]]
    assert events[0].row["_cdc_position"] == f"t-{2000:020d}-{0:020d}-{1:020d}"


_part = st.integers(min_value=0, max_value=2**63 - 1)


@given(st.lists(st.tuples(_part, _part, st.integers(0, 10**6)), min_size=2, max_size=20))
def test_mysql_string_order_equals_tuple_order(triples):
    rendered = {
        t: render_position("mysql", {"file": f"mysql-bin.{t[2]:06d}", "pos": t[0], "row": t[1]}) for t in triples
    }
    by_string = sorted(rendered, key=rendered.__getitem__)
    by_tuple = sorted(rendered, key=lambda t: (t[2], t[0], t[1]))
    assert by_string == by_tuple


@given(
    st.lists(
        st.tuples(st.integers(0, 2**80 - 1), st.integers(0, 2**80 - 1), st.integers(0, 10**12)), min_size=2, max_size=20
    )
)
def test_sqlserver_string_order_equals_numeric_order(triples):
    def lsn(value: int) -> str:
        text = f"{value:020x}"
        return f"{text[:8]}:{text[8:16]}:{text[16:]}".upper()

    rendered = {
        t: render_position("sqlserver", {"commit_lsn": lsn(t[0]), "change_lsn": lsn(t[1]), "event_serial_no": t[2]})
        for t in triples
    }
    assert sorted(rendered, key=rendered.__getitem__) == sorted(rendered)
