"""An incremental snapshot of the real PostgreSQL connector, then more changes: silver equals the table.

Debezium 2.x+ re-reads a table on a signal (an ``execute-snapshot`` row in its signaling
table) and sends every row again as an ``r`` event with ``source.snapshot = "incremental"``
and **no** ``lsn``/``txId`` (DBZ-4329): only ``source.sequence`` says where in the stream the
chunk was sent. Ordering by position fields alone would either lose those rows or, with a
fallback position that sorts after every real one, let them mask every later update of
their keys. The test checks the events really have that shape (an incremental row without
an LSN, then a later update of the same key), then requires ``silver.venues`` to equal the
database after ``ingest`` and ``dbt run``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
TOPIC = "tickit.ems.venue"


def _venue_events(bootstrap: str) -> list[tuple[int, dict]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "incremental-snapshot", "log_level": 0})
    events = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        while batch := consumer.consume(500, timeout=3):
            for message in batch:
                value = message.value()
                if not message.error() and value:
                    events.append((message.offset(), json.loads(value)["payload"]))
    finally:
        consumer.close()
    return events


def _incremental(events: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    return [(offset, p) for offset, p in events if p["source"].get("snapshot") == "incremental"]


def test_incremental_snapshot_rows_do_not_mask_later_updates(postgres_home, thrift_server, kafka_broker,
                                                             tmp_path) -> None:
    settings, postgres = postgres_home
    contracts = {n: c for n, c in real_sources.real_contracts().items() if c.system == "ems"}
    conn = real_sources.open_connection(postgres)
    try:
        real = load_ems_tables(conn, contracts)
        cur = conn.cursor()
        cur.execute("CREATE TABLE ems.debezium_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, "
                    "data varchar(2048))")
        conn.commit()
        connect.start(settings, kafka_broker.bootstrap,
                      [connect.postgres_connector(postgres, signal_table="ems.debezium_signal")])
        real_sources.wait_for_snapshots(settings, kafka_broker.bootstrap, systems=("ems",))
        venues = len(real["venue"])

        cur.execute("UPDATE ems.venue SET venuename = 'before the incremental snapshot' WHERE venueid = 1")
        conn.commit()
        cur.execute("INSERT INTO ems.debezium_signal VALUES ('incremental-1', 'execute-snapshot', "
                    "'{\"data-collections\": [\"ems.venue\"], \"type\": \"incremental\"}')")
        conn.commit()
        deadline = time.monotonic() + 180
        while len(_incremental(_venue_events(kafka_broker.bootstrap))) < venues:
            if time.monotonic() > deadline:
                pytest.fail("the incremental snapshot did not send every venue within 180 s")
            connect.check_not_failed(settings)
            time.sleep(2)
        for venueid in (1, 2):  # after the incremental rows of their keys
            cur.execute("UPDATE ems.venue SET venuename = %s WHERE venueid = %s",
                        (f"after the incremental snapshot {venueid}", venueid))
            conn.commit()
        cur.execute("DELETE FROM ems.event WHERE venueid = 3")
        cur.execute("DELETE FROM ems.venue WHERE venueid = 3")
        conn.commit()
        real_sources.wait_settled(settings, kafka_broker.bootstrap)

        # the preconditions: incremental rows without an LSN, each followed by a later update
        events = _venue_events(kafka_broker.bootstrap)
        incremental = {p["after"]["venueid"]: (offset, p) for offset, p in _incremental(events)}
        for venueid in (1, 2):
            offset, row = incremental[venueid]
            if row["source"].get("lsn") is not None or not row["source"].get("sequence"):
                pytest.fail(f"expected an incremental row without an lsn and with a sequence: {row['source']}")
            later = [o for o, p in events if o > offset and p["op"] == "u" and p["after"]["venueid"] == venueid]
            if not later:
                pytest.fail(f"no update of venue {venueid} after its incremental row")

        env = {**os.environ, **thrift_server.env, "LAKEHOUSE_HOME": str(settings.home),
               "LAKEHOUSE_LAKE": settings.lake, "DBT_TARGET_PATH": str(tmp_path / "target"),
               "DBT_LOG_PATH": str(tmp_path / "logs")}
        for args in (["ingest", "--kafka-bootstrap", kafka_broker.bootstrap, "--topics", TOPIC,
                      "--once", "--quiet"], ["dbt", "run", "--select", "+venues"]):
            done = subprocess.run([LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

        rows = live.source_rows(conn, contracts["venue"], "postgres")
        expected = oracle_rows({(r["venueid"],): r for r in rows}, "venue")
        assert len(expected) == venues - 1
        assert differences(silver_rows(settings.thrift_host, settings.thrift_port, "venue"), expected) == []
    finally:
        conn.close()  # type: ignore[attr-defined]
