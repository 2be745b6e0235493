"""A PostgreSQL transaction open across the connector's snapshot: its change is newer, its LSN lower.

Reproduced with the real connector: the replication slot exists before the connector
starts (a DBA created it, or an earlier connector did), a transaction updates a venue and
stays open while Debezium snapshots the table (the snapshot does not see the uncommitted
change), then commits. Debezium streams that update after the snapshot row, at a higher
Kafka offset, but its ``lsn`` is the position where the change was written, before the
snapshot's. Ordering by ``(lsn, txId)`` would let the older snapshot row win and silver
keep a value the database no longer has; silver orders a key's changes by Kafka offset
(``cdc_order``), so the update wins.

The test checks that the events really have this shape (so it cannot pass for the wrong
reason), then requires ``silver.venues`` to equal the database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from lakehouse import real_sources
from lakehouse.services import connect
from simulator import live
from tests.dbt_project.silver_oracle import differences, oracle_rows, silver_rows
from tests.real_sources.helpers import load_ems_tables

pytestmark = pytest.mark.slow
LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")


def _venue_events(bootstrap: str, venueid: int) -> list[tuple[int, dict]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "snapshot-order", "log_level": 0})
    events = []
    try:
        consumer.assign([TopicPartition("tickit.ems.venue", 0, 0)])
        while batch := consumer.consume(500, timeout=3):
            for message in batch:
                value = message.value()
                if message.error() or not value:
                    continue
                payload = json.loads(value)["payload"]
                if (payload["after"] or payload["before"] or {}).get("venueid") == venueid:
                    events.append((message.offset(), payload))
    finally:
        consumer.close()
    return events


def test_a_transaction_open_across_the_snapshot_wins_in_silver(postgres_home, thrift_server, kafka_broker,
                                                               tmp_path) -> None:
    settings, postgres = postgres_home
    contracts = {n: c for n, c in real_sources.real_contracts().items() if c.system == "ems"}
    conn = real_sources.open_connection(postgres)
    in_flight = real_sources.open_connection(postgres)
    try:
        load_ems_tables(conn, contracts)
        cur = conn.cursor()
        cur.execute("CREATE PUBLICATION lakehouse_ems FOR TABLES IN SCHEMA ems")
        conn.commit()
        cur.execute("SELECT pg_create_logical_replication_slot('lakehouse_ems', 'pgoutput')")
        conn.commit()

        in_flight.cursor().execute("UPDATE ems.venue SET venuename = 'changed while the snapshot ran' "
                                   "WHERE venueid = 1")
        # other sessions keep committing, as on any busy database: their commits write (flush) the WAL
        # that holds the open transaction's change, so the snapshot's LSN is past that change
        cur.execute("UPDATE ems.category SET catdesc = catdesc || '.' WHERE catid = 1")
        conn.commit()
        connect.start(settings, kafka_broker.bootstrap, [connect.postgres_connector(postgres)])
        real_sources.wait_for_snapshots(settings, kafka_broker.bootstrap, systems=("ems",))
        in_flight.commit()
        real_sources.wait_settled(settings, kafka_broker.bootstrap)

        # the preconditions: the events have the shape of the anomaly
        events = _venue_events(kafka_broker.bootstrap, 1)
        if [payload["op"] for _, payload in events] != ["r", "u"]:
            pytest.fail(f"expected a snapshot row then an update of venue 1, got {events}")
        (snap_offset, snapshot), (change_offset, change) = events
        if not (change_offset > snap_offset and change["source"]["lsn"] < snapshot["source"]["lsn"]):
            pytest.fail(f"the anomaly did not happen: {events}")

        env = {**os.environ, **thrift_server.env, "LAKEHOUSE_HOME": str(settings.home),
               "LAKEHOUSE_LAKE": settings.lake, "DBT_TARGET_PATH": str(tmp_path / "target"),
               "DBT_LOG_PATH": str(tmp_path / "logs")}
        for args in (["ingest", "--kafka-bootstrap", kafka_broker.bootstrap, "--topics", "tickit.ems.venue",
                      "--once", "--quiet"], ["dbt", "run", "--select", "+venues"]):
            done = subprocess.run([LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

        contract = contracts["venue"]
        rows = live.source_rows(conn, contract, "postgres")
        expected = oracle_rows({(r["venueid"],): r for r in rows}, "venue")
        assert differences(silver_rows(settings.thrift_host, settings.thrift_port, "venue"), expected) == []
    finally:
        in_flight.close()  # type: ignore[attr-defined]
        conn.close()  # type: ignore[attr-defined]
