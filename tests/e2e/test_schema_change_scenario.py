"""Source tables change under the pipeline; silver follows without a full refresh (slow).

The scenario of the schema-change policy (``evolve``, the default), in a copy of the
project, in both landing formats (JSON with ``schemas.enable=true`` and Avro):

* phase 1, the original schemas: the simulator's TICKIT snapshot and changes (every table,
  so that the whole build has data), then ``user`` (SQL Server, JSON), ``venue``
  (PostgreSQL, Avro) and ``event`` (PostgreSQL, JSON) get inserts, updates and a delete of
  keys of their own;
* phase 2, after DDL at the sources: ``user`` gains a nullable boolean ``vip`` (Avro),
  ``venue`` widens ``venueseats`` from int to bigint (JSON, one value beyond int),
  ``listing`` (MariaDB) widens its prices from ``decimal(8,2)`` to ``decimal(10,2)`` (JSON,
  a price beyond 8 digits),
  ``event`` drops its nullable ``starttime`` (Avro), a table nobody declared
  (``promotion``) appears (JSON), and one ``venue`` event carries ``venuecity`` turned
  into an int (an incompatible change).

Each phase is ingested (``lakehouse ingest --once``) and followed by the whole
``dbt build`` (incremental, never ``--full-refresh``). In phase 2 the new table is onboarded
with ``lakehouse tables add`` from one of its landed events, its held events replayed from
the dead letters. The events are written with the simulator's encoders from contracts
altered as the DDL alters the tables. The oracle is the simulator's own model of the
source rows plus the scenario's events replayed in plain Python under the documented
policy (an added column holds the events' values, null before; a dropped column is null in
rows changed after the drop; the last event of a key wins, a delete removes the key),
compared with every published silver relation through the Thrift server. Bronze must
hold every event but the incompatible one, which is the only dead letter left, and the
schema history must name each change.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import random
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from ingestion.cdc.contracts import Column, TableContract, load_contracts
from simulator.avro import AvroRowEncoder, container_bytes
from simulator.connectors import MySqlLog, PostgresLog, SourceLog, SqlServerLog
from simulator.encode import WRAPPED, RowEncoder
from simulator.oracle import load_oracle
from tests.dbt_project.silver_oracle import SILVER_COLUMNS, normalize
from tests.onboarding.test_tables_add import ROOT, copy_project
from tests.stream.judge import hudi_rows

pytestmark = pytest.mark.slow

DBT = Path(sys.executable).with_name("dbt")
LAYER_SCHEMAS = ("bronze", "staging", "silver", "gold", "seeds", "snapshots")
BIG = 5_000_000_000
BASE = 900_000  # the scenario's keys: beyond the simulator's
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _user(userid: int, **changes) -> dict:
    likes = {f"like{x}": (userid + i) % 3 == 0 for i, x in enumerate(
        ("sports", "theatre", "concerts", "jazz", "classical", "opera", "rock", "vegas", "broadway", "musicals"))}
    userid += BASE
    return {"userid": userid, "username": f"USR{userid:05d}", "firstname": f"First{userid}",
            "lastname": f"Last{userid}", "city": "Albany", "state": "NY", "email": f"u{userid}@example.com",
            "phone": "(555) 555-0100", **likes, **changes}


def _venue(venueid: int, **changes) -> dict:
    return {"venueid": BASE + venueid, "venuename": f"Hall {venueid}", "venuecity": "Boston", "venuestate": "MA",
            "venueseats": 1000 * venueid, **changes}


def _event(eventid: int, **changes) -> dict:
    return {"eventid": BASE + eventid, "venueid": BASE + 1 + eventid % 3, "catid": 1, "dateid": 1827,
            "eventname": f"Show {eventid}",
            "starttime": dt.datetime(2026, 2, 1, 20, 0) + dt.timedelta(days=eventid), **changes}


def _listing(listid: int, **changes) -> dict:
    return {"listid": BASE + listid, "sellerid": 1, "eventid": 1, "dateid": 1827, "numtickets": 1,
            "priceperticket": Decimal("25.00"), "totalprice": Decimal("25.00"),
            "listtime": dt.datetime(2026, 1, 1, 1, 0) + dt.timedelta(minutes=listid), **changes}


def _without(row: dict, column: str) -> dict:
    return {name: value for name, value in row.items() if name != column}


@dataclasses.dataclass
class Change:
    table: str
    op: str
    row: dict  # the row after the change (before it, for a delete)


class Sources:
    """The source systems' logs and the landed topic files; every event is also kept for the oracle."""

    def __init__(self, landing: Path):
        self.landing = landing
        # positions beyond the simulator's (its logs start at these too)
        self.logs: dict[str, SourceLog] = {"postgres": PostgresLog({"lsn": 1 << 40, "tx_id": 1 << 20}),
                                           "sqlserver": SqlServerLog({"lsn": 1 << 60}),
                                           "mysql": MySqlLog({"file_index": 900, "pos": 4, "gtid_seq": 1 << 20})}
        self.offsets: dict[str, int] = {}
        self.events: list[tuple[TableContract, Change, int]] = []  # (contract, change, offset)
        self.rng = random.Random(7)
        self.clock = START_MS

    def land(self, contract: TableContract, changes: list[Change], file_format: str) -> Path:
        """One landing file of ``contract``'s topic holding ``changes`` (each its own transaction), in the
        shape Debezium writes with ``contract`` as the table's schema (``wrapped``: the schema in the event)."""
        topic = contract.topics[0]
        start = self.offsets.get(topic, _next_offset(self.landing, topic))
        log = self.logs[contract.connector]
        json_encoder, avro_encoder = RowEncoder(contract), AvroRowEncoder(contract)
        lines, records = [], []
        for index, change in enumerate(changes):
            self.clock += 1000
            _, (position,) = log.transaction(self.rng, [1])
            source = {**log.base_source(contract, self.clock, "false"), **position}
            before, after = (change.row, None) if change.op == "d" else (None, change.row)
            if file_format == "json":
                lines.append(json_encoder.render(WRAPPED, change.op, before, after, source, self.clock + 5))
            else:
                records.append(avro_encoder.item(WRAPPED, change.op, before, after, source, self.clock + 5))
            self.events.append((contract, change, start + index))
        folder = self.landing / "topics" / topic / "partition=0"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{topic}+0+{start:010d}.{file_format}"
        if file_format == "json":
            path.write_bytes(b"".join(line + b"\n" for line in lines))
        else:
            path.write_bytes(container_bytes(records[0].schema, [r.record for r in records], b"scenario-marker!"))
        self.offsets[topic] = start + len(changes)
        return path

    def replay(self, table: str, columns: list[str], rejected: set[tuple[str, int]]) -> dict[int, tuple]:
        """The live rows of ``table`` (key -> values of ``columns``): the simulator's, then every event of
        the scenario in source order under the policy ``evolve`` (a column an event lacks is null in the
        row it writes)."""
        rows: dict[int, tuple] = {}
        if table in load_contracts():
            key_column = load_contracts()[table].primary_key[0]
            for row in load_oracle(str(self.landing)).live_rows(table):
                rows[row[key_column]] = tuple(normalize(row.get(c)) for c in columns)
        for contract, change, offset in self.events:
            if contract.name != table or (contract.topics[0], offset) in rejected:
                continue
            key = change.row[contract.primary_key[0]]
            if change.op == "d":
                rows.pop(key, None)
            else:
                rows[key] = tuple(normalize(change.row.get(c)) for c in columns)
        return rows


def _next_offset(landing: Path, topic: str) -> int:
    """The offset after the last record the simulator landed on partition 0 of ``topic`` (JSON lines)."""
    end = 0
    for path in (landing / "topics" / topic).rglob(f"{topic}+0+*.json"):
        start = int(path.name.rsplit("+", 1)[1].split(".")[0])
        end = max(end, start + len(path.read_bytes().splitlines()))
    return end


def _altered(contract: TableContract, *, add: tuple[Column, ...] = (), retype: dict[str, str] | None = None,
             drop: tuple[str, ...] = ()) -> TableContract:
    """``contract`` as the source table is after DDL: columns added at the end, retyped, dropped."""
    columns = tuple(dataclasses.replace(c, type=(retype or {}).get(c.name, c.type)) for c in contract.columns
                    if c.name not in drop)
    return dataclasses.replace(contract, columns=columns + add)


PROMOTION = TableContract(
    name="promotion", system="ems", connector="postgres", database="tickit", schema="ems",
    topics=("tickit.ems.promotion",), primary_key=("promoid",),
    columns=(Column("promoid", "int"), Column("eventid", "int"), Column("code", "string"),
             Column("discount_pct", "int")))


def _run(project: Path, env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    """The copy's own `lakehouse` (its contracts, its models), run from its root."""
    done = subprocess.run([sys.executable, "-c", "import sys; from lakehouse.cli import main; sys.exit(main())", *args],
                          cwd=project, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"lakehouse {' '.join(args)}:\n{(done.stdout + done.stderr)[-4000:]}"
    return done.stdout


def _dbt_build(project: Path, env: dict[str, str], work: Path) -> None:
    done = subprocess.run(
        [str(DBT), "build", "--project-dir", str(project), "--profiles-dir", str(project / "profiles"),
         "--target-path", str(work / "target"), "--log-path", str(work / "logs")],
        cwd=project, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    results = json.loads((work / "target" / "run_results.json").read_text())["results"]
    failed = [r["unique_id"] for r in results if r["status"] in ("error", "fail")]
    assert not failed, failed


def _silver(server, relation: str, columns: list[str]) -> dict[int, tuple]:
    listed = ", ".join(f"`{c}`" for c in columns)
    rows = server.sql(f"select {listed} from silver.{relation}")
    out = {row[0]: tuple(normalize(v) for v in row) for row in rows}
    assert len(out) == len(rows), f"silver.{relation}: duplicate keys"
    return out


def _silver_equals_replay(server, sources: Sources, tables: dict[str, tuple[str, dict[str, str]]],
                          rejected: set[tuple[str, int]]) -> dict[str, list]:
    """Per table whose silver relation differs from the replay: a few differing keys."""
    problems = {}
    for table, (relation, names) in tables.items():
        got = _silver(server, relation, list(names.values()))
        want = sources.replay(table, list(names), rejected)
        if got != want:
            keys = sorted(set(got) ^ set(want)) + sorted(k for k in set(got) & set(want) if got[k] != want[k])
            problems[table] = [(k, got.get(k), want.get(k)) for k in keys[:5]]
    return problems


def test_added_widened_and_dropped_columns_and_a_new_table_reach_silver_without_a_full_refresh(
        tmp_path, thrift_server) -> None:
    for schema in LAYER_SCHEMAS:
        thrift_server.sql(f"drop schema if exists {schema} cascade")
    project = copy_project(tmp_path / "project")
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    env = {**os.environ, **thrift_server.env, "LAKEHOUSE_HOME": str(tmp_path / "home"),
           "LAKEHOUSE_JVM_LIB": str(ROOT / "jvm" / "lib"), "LAKEHOUSE_LANDING": str(landing),
           "LAKEHOUSE_LAKE": str(lake), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    env.pop("LAKEHOUSE_DBT_TARGET", None)
    contracts = load_contracts()
    user, venue, event, listing = contracts["user"], contracts["venue"], contracts["event"], contracts["listing"]
    sources = Sources(landing)
    tables = {name: SILVER_COLUMNS[name] for name in ("user", "venue", "event", "listing")}

    # -- phase 1: the original schemas ---------------------------------------------------------
    _run(project, env, "simulate", "--scale", "0.01", "--changes", "300", "--seed", "3", "--partitions", "1",
         "--format", "json", "--start-time", "2026-01-01T00:00:00", "--quiet")
    sources.land(user, [Change("user", "c", _user(i)) for i in (1, 2, 3, 4)]
                 + [Change("user", "u", _user(2, city="Troy"))], "json")
    sources.land(venue, [Change("venue", "c", _venue(i)) for i in (1, 2, 3)]
                 + [Change("venue", "u", _venue(3, venuename="Arena 3"))], "avro")
    sources.land(event, [Change("event", "c", _event(i)) for i in (1, 2, 3, 4)]
                 + [Change("event", "d", _event(4))], "json")
    sources.land(listing, [Change("listing", "c", _listing(i)) for i in (1, 2)], "avro")
    _run(project, env, "ingest", "--once", "--quiet")
    _dbt_build(project, env, tmp_path / "dbt1")
    assert _silver_equals_replay(thrift_server, sources, tables, set()) == {}

    # -- phase 2: DDL at the sources, then more changes ----------------------------------------
    user2 = _altered(user, add=(Column("vip", "boolean"),))
    venue2 = _altered(venue, retype={"venueseats": "bigint"})
    event2 = _altered(event, drop=("starttime",))
    sources.land(user2, [Change("user", "u", _user(1, vip=True)), Change("user", "u", _user(2, city="Troy", vip=None)),
                         Change("user", "c", _user(5, vip=False)), Change("user", "d", _user(4, vip=None))], "avro")
    sources.land(venue2, [Change("venue", "u", _venue(1, venueseats=BIG)), Change("venue", "c", _venue(4))], "json")
    incompatible = sources.land(_altered(venue, retype={"venuecity": "int"}),
                                [Change("venue", "u", _venue(2, venuecity=617))], "json")
    sources.land(venue2, [Change("venue", "u", _venue(3, venueseats=3500))], "json")
    wide = Decimal("12345678.90")
    sources.land(_altered(listing, retype={"priceperticket": "decimal(10,2)", "totalprice": "decimal(10,2)"}),
                 [Change("listing", "u", _listing(1, priceperticket=wide, totalprice=wide))], "json")
    sources.land(event2, [Change("event", "u", _without(_event(1, eventname="Encore"), "starttime")),
                          Change("event", "c", _without(_event(5), "starttime"))], "avro")
    promotions = sources.land(PROMOTION, [Change("promotion", "c", {"promoid": 1, "eventid": 1, "code": "EARLY",
                                                                    "discount_pct": 10}),
                                          Change("promotion", "c", {"promoid": 2, "eventid": 2, "code": "LATE",
                                                                    "discount_pct": 5}),
                                          Change("promotion", "u", {"promoid": 1, "eventid": 1, "code": "EARLY",
                                                                    "discount_pct": 15})], "json")
    _run(project, env, "ingest", "--once", "--quiet")
    # the new table: its events are held as unknown_topic; onboard it from one of them, replay them
    first_event = tmp_path / "promotion_event.json"
    first_event.write_text(promotions.read_text().splitlines()[0])
    _run(project, env, "tables", "add", "--system", "ems", "--from-event", str(first_event), "--primary-key",
         "promoid", "--project-dir", str(project))
    _run(project, env, "ingest", "--once", "--quiet")
    _run(project, env, "dead-letter", "replay", "--reason", "unknown_topic")
    _run(project, env, "sync")
    _dbt_build(project, env, tmp_path / "dbt2")

    rejected = {(venue.topics[0], int(incompatible.name.split("+")[-1].split(".")[0]))}
    tables["user"] = ("users", {**tables["user"][1], "vip": "vip"})
    tables["promotion"] = ("promotions", {c.name: c.name for c in PROMOTION.columns})
    assert _silver_equals_replay(thrift_server, sources, tables, rejected) == {}
    # the types the DDL gave reach silver; a value beyond int is intact
    users = {row[0]: row[1] for row in thrift_server.sql("describe silver.users")}
    venues = {row[0]: row[1] for row in thrift_server.sql("describe silver.venues")}
    listings = {row[0]: row[1] for row in thrift_server.sql("describe silver.listings")}
    assert (users["vip"], venues["venue_seats"]) == ("boolean", "bigint")
    assert (listings["price_per_ticket"], listings["total_price"]) == ("decimal(10,2)", "decimal(10,2)")
    assert thrift_server.sql(f"select venue_seats from silver.venues where venue_id = {BASE + 1}") == [(BIG,)]

    # nothing lost: bronze holds every event of the scenario but the incompatible one, the only dead letter
    for table, key in (("user", "userid"), ("venue", "venueid"), ("event", "eventid"), ("listing", "listid"),
                       ("promotion", "promoid")):
        landed = sum(1 for c, change, offset in sources.events
                     if c.name == table and (c.topics[0], offset) not in rejected)
        stored = [r for r in hudi_rows(lake / "bronze" / table) if table == "promotion" or r[key] > BASE]
        assert len(stored) == landed, table
    dead = [(d["reason"], d["topic"], d["kafka_offset"]) for d in hudi_rows(lake / "bronze" / "dead_letter")]
    assert dead == [("incompatible_schema", venue.topics[0], *[o for _, o in rejected])]

    # the schema history names each change, with the first event that carried it
    history = _run(project, env, "contracts", "history").splitlines()
    assert [line.split(";")[0] for line in history] == [
        "listing v2: widened priceperticket decimal(8,2) -> decimal(10,2)",
        "listing v2: widened totalprice decimal(8,2) -> decimal(10,2)",
        "user v2: added vip boolean", "venue v2: widened venueseats int -> bigint"], history
