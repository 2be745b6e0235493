"""The oracle equals an independent replay of what actually landed, and the data keeps TICKIT's rules."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal

import pytest

from ingestion.cdc.contracts import load_contracts
from ingestion.cdc.landing import parse_landing_path
from ingestion.object_store import LocalStorage
from simulator.oracle import load_oracle
from simulator.simulation import run_simulation
from tests.simulate.conftest import small_options
from tests.simulate.replay import replay_landing

#: Venues the real TICKIT event table references but its venue table lacks (simulator/data README).
MISSING_REAL_VENUES = {12, 51, 64}


def _keyed(table: str, rows: list[dict]) -> dict[tuple, dict]:
    pk = load_contracts()[table].primary_key
    return {tuple(r[k] for k in pk): r for r in rows}


@pytest.fixture(scope="module")
def replayed(mixed_landing):
    return replay_landing(LocalStorage(mixed_landing))


@pytest.fixture(scope="module")
def oracle(mixed_landing):
    return load_oracle(mixed_landing)


def test_events_match_the_replay(oracle, replayed):
    assert set(oracle.tables) == set(load_contracts())
    for table in oracle.tables:
        pk = load_contracts()[table].primary_key
        events = oracle.events(table)
        keyed = {tuple(e[k] for k in pk) + (e["_cdc_position"],): e for e in events}
        assert len(keyed) == len(events), f"{table}: the oracle lists an event twice"
        assert keyed == dict(replayed.events[table]), table


def test_live_rows_match_the_replay(oracle, replayed):
    for table in oracle.tables:
        live = _keyed(table, oracle.live_rows(table))
        assert live == replayed.live_rows(table), table
        assert live, f"{table} has no live rows"


def _crossed_venue_changes(replayed) -> list[tuple[int, dict, dict]]:
    """(key, snapshot row, update) of every venue whose first update lands after its snapshot row (a
    larger Kafka offset) with a smaller position."""
    by_key: dict[int, list[tuple[int, dict]]] = defaultdict(list)
    for identity, event in replayed.events["venue"].items():
        if event["_cdc_op"] != "t":
            by_key[event["venueid"]].append((replayed.offsets["venue"][identity], event))
    crossed = []
    for key, events in by_key.items():
        events.sort(key=lambda pair: pair[0])
        snapshot = [e for _, e in events if e["_cdc_op"] == "r"]
        later = [e for _, e in events if e["_cdc_op"] == "u"]
        if snapshot and later and later[0]["_cdc_position"] < snapshot[0]["_cdc_position"]:
            crossed.append((key, snapshot[0], later[0]))
    return crossed


def test_a_change_open_across_the_snapshot_is_newer_by_offset_older_by_position(oracle, replayed):
    """The simulator's PostgreSQL in-flight transaction: one venue's update lands after its snapshot row (a larger
    Kafka offset) with a smaller position."""
    assert len(_crossed_venue_changes(replayed)) == 1
    assert oracle.manifest["runs"][0]["in_flight_changes"] == 1


def test_the_database_holds_the_in_flight_update_not_its_snapshot_row(tmp_path):
    """A snapshot-only run (no later change of the venue, no incremental re-read): the oracle's live rows,
    the simulated database's final state, hold the in-flight update, the event with the larger offset."""
    landing = tmp_path / "landing"
    run_simulation(small_options(landing, changes=0, inject_bad=0))
    [(key, snapshot_row, update)] = _crossed_venue_changes(replay_landing(LocalStorage(landing)))
    columns = load_contracts()["venue"].column_names
    assert any(snapshot_row[c] != update[c] for c in columns)
    assert _keyed("venue", load_oracle(landing).live_rows("venue"))[(key,)] == {c: update[c] for c in columns}


def test_dead_letters_tombstones_and_duplicates(oracle, replayed):
    assert oracle.dead_letters() == sorted(
        replayed.dead_letters, key=lambda d: (d["topic"], d["partition"], d["offset"])
    )
    reasons = Counter(d["reason"] for d in oracle.dead_letters())
    assert set(reasons) == {
        "malformed_json", "bad_encoding", "missing_pk", "unknown_op", "type_mismatch",
        "incompatible_schema", "unknown_topic", "unsupported_op",
    }  # fmt: skip
    assert oracle.tombstones == replayed.tombstones > 0
    deletes = sum(1 for t in oracle.tables for e in oracle.events(t) if e["_cdc_op"] == "d")
    assert oracle.tombstones == deletes  # tombstones.on.delete: one per delete
    assert oracle.duplicates == replayed.duplicates > 0


def test_layout_rotation_and_offsets(mixed_landing, replayed):
    by_partition: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for path in replayed.files:
        landing = parse_landing_path(path)
        lines = (mixed_landing / path).read_bytes().count(b"\n")
        assert 1 <= lines <= 400, f"{path}: {lines} lines, flush size is 400"
        assert path.startswith(f"topics/{landing.topic}/partition={landing.partition}/")
        by_partition[(landing.topic, landing.partition)].append((landing.start_offset, lines))
    assert len({topic for topic, _ in by_partition}) == 8  # 7 tables + the unknown topic of the bad lines
    assert len({p for t, p in by_partition if t == "tickit.ecomm.sale"}) == 3
    for key, chunks in by_partition.items():
        expected = 0
        for start, lines in sorted(chunks):
            assert start == expected, f"{key}: offsets not contiguous at {start}"
            expected = start + lines
    assert any(len(chunks) > 1 for chunks in by_partition.values())  # rotation happened
    assert not [p for p in (mixed_landing / "topics").rglob("*") if p.name.startswith(".")]  # no temp files


def test_scenarios_are_present(oracle):
    events = {t: oracle.events(t) for t in oracle.tables}
    changes = [(t, e) for t, rows in events.items() for e in rows if e["_cdc_op"] != "r"]
    assert {e["_cdc_op"] for _, e in changes} == {"c", "u", "d", "t"}
    # several changes of one key in one transaction, same source timestamp
    per_tx = Counter((t, e["_cdc_tx_id"], str([e[k] for k in load_contracts()[t].primary_key])) for t, e in changes)
    multi = [k for k, n in per_tx.items() if n >= 2 and k[1] is not None]
    assert multi
    # a delete followed by a re-insert of the same key
    reinserted = False
    for table, rows in events.items():
        pk = load_contracts()[table].primary_key[0]
        history = defaultdict(list)
        for e in sorted(rows, key=lambda e: e["_cdc_position"]):
            history[e[pk]].append(e["_cdc_op"])
        reinserted |= any("d" in ops and "c" in ops[ops.index("d") :] for ops in history.values())
    assert reinserted
    # MySQL binlog rollover: change events in at least two binlog files
    files = {e["_cdc_position"][:20] for t, e in changes if t in ("sale", "listing", "date")}
    assert len(files) >= 2
    # a PostgreSQL incremental snapshot read every venue again mid-run: read events positioned by
    # `sequence` alone (no txId), after the snapshot's and some changes' positions, before others'
    reread = [e for e in events["venue"] if e["_cdc_op"] == "r" and e["_cdc_tx_id"] is None]
    assert reread and len({e["venueid"] for e in reread}) == len(reread)
    assert {e["_cdc_position"][-20:] for e in reread} == {"0" * 20}
    venue_changes = [e["_cdc_position"] for e in events["venue"] if e["_cdc_op"] != "r"]
    assert min(venue_changes) < reread[0]["_cdc_position"] < max(venue_changes)
    # one venue changed without an event before it (a table joining the capture late): its read
    # event is the only place the new values appear, so it must win over the key's earlier events
    columns = [c.name for c in load_contracts()["venue"].columns]
    previous: dict[int, dict] = {}
    differing = 0
    for event in events["venue"]:  # in emission (offset) order
        if event in reread and event["venueid"] in previous:
            differing += any(event[c] != previous[event["venueid"]][c] for c in columns)
        previous[event["venueid"]] = event
    assert differing == 1
    # by position, the snapshot sorts before every change of its table but one: the PostgreSQL change whose
    # transaction was open across the snapshot (test_a_change_open_across_the_snapshot_...)
    below_snapshot = 0
    for rows in events.values():
        snapshot = [e["_cdc_position"] for e in rows if e["_cdc_op"] == "r" and e not in reread]
        later = [e["_cdc_position"] for e in rows if e["_cdc_op"] != "r"]
        if snapshot and later:
            below_snapshot += sum(position < max(snapshot) for position in later)
    assert below_snapshot == 1


def _money(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def test_live_rows_keep_tickit_rules(oracle):
    live = {t: _keyed(t, oracle.live_rows(t)) for t in oracle.tables}
    users, events, dates = live["user"], live["event"], live["date"]
    for (eventid,), event in events.items():
        assert (event["catid"],) in live["category"] and (event["dateid"],) in dates
        assert (event["venueid"],) in live["venue"] or event["venueid"] in MISSING_REAL_VENUES, eventid
    sold = Counter()
    for listing in live["listing"].values():
        assert (listing["sellerid"],) in users and (listing["eventid"],) in events
        assert dates[(listing["dateid"],)]["caldate"] == listing["listtime"].date()
        assert listing["listtime"] < events[(listing["eventid"],)]["starttime"]
        assert listing["totalprice"] == _money(listing["priceperticket"] * listing["numtickets"])
    for (salesid,), sale in live["sale"].items():
        listing = live["listing"][(sale["listid"],)]
        assert (sale["buyerid"],) in users and sale["buyerid"] != sale["sellerid"]
        assert sale["sellerid"] == listing["sellerid"] and sale["eventid"] == listing["eventid"]
        assert 1 <= sale["qtysold"] <= 8
        assert sale["commission"] == _money(sale["pricepaid"] * Decimal("0.15")), salesid
        assert listing["listtime"] < sale["saletime"] < events[(sale["eventid"],)]["starttime"]
        assert dates[(sale["dateid"],)]["caldate"] == sale["saletime"].date()
        sold[sale["listid"]] += sale["qtysold"]
    for listid, tickets in sold.items():
        assert tickets <= live["listing"][(listid,)]["numtickets"]


def test_values_are_typed(oracle):
    sale = oracle.live_rows("sale")[0]
    assert isinstance(sale["pricepaid"], Decimal) and isinstance(sale["saletime"], dt.datetime)
    event = oracle.events("event")[0]
    assert isinstance(event["_cdc_source_ts"], dt.datetime) and isinstance(event["_cdc_source_date"], dt.date)
    assert isinstance(event["_cdc_is_deleted"], bool)
    assert set(event) == {c.name for c in load_contracts()["event"].columns} | {
        "_cdc_op", "_cdc_is_deleted", "_cdc_source_ts", "_cdc_position", "_cdc_tx_id", "_cdc_source_db",
        "_cdc_source_table", "_cdc_topic", "_cdc_source_date",
    }  # fmt: skip
    assert 0 < len(oracle.live_rows("date")) <= 365  # the calendar only loses days, never gains
