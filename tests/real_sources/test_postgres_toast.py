"""An unchanged TOASTed value: PostgreSQL does not send it, Debezium sends its placeholder, silver keeps the value.

A ``text`` column holding a value too large to stay in the row is stored out of line
(TOAST). An UPDATE that does not touch it writes no new copy, and with the default
REPLICA IDENTITY the WAL record has no value for it: Debezium's PostgreSQL connector then
puts ``__debezium_unavailable_value`` in the event. Reproduced with the real connector;
the test checks that the events really carry the placeholder (so it cannot pass for the
wrong reason), then requires ``silver.categories`` to equal ``SELECT`` of the table after
a first dbt run (the value comes from the snapshot row in the same run) and after a
second, incremental one (the value comes from the stored state row).
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from lakehouse import real_sources
from lakehouse.services import connect
from simulator import live, tickit
from tests.dbt_project.silver_oracle import differences, oracle_rows, silver_rows

pytestmark = pytest.mark.slow
LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")
PLACEHOLDER = "__debezium_unavailable_value"
TOPIC = "tickit.ems.category"


def _placeholder_updates(bootstrap: str) -> int:
    """Update events of the category topic whose ``catdesc`` is Debezium's placeholder."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "toast", "log_level": 0})
    found = 0
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        while batch := consumer.consume(500, timeout=3):
            for message in batch:
                value = message.value()
                if message.error() or not value:
                    continue
                payload = json.loads(value)["payload"]
                if payload["op"] == "u" and payload["after"]["catdesc"] == PLACEHOLDER:
                    found += 1
    finally:
        consumer.close()
    return found


def _run(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_an_unchanged_toasted_value_keeps_its_value_in_silver(postgres_home, thrift_server, kafka_broker,
                                                              tmp_path) -> None:
    settings, postgres = postgres_home
    contracts = {n: c for n, c in real_sources.real_contracts().items() if c.system == "ems"}
    contract = contracts["category"]
    conn = real_sources.open_connection(postgres)
    rng = random.Random(7)
    try:
        live.create_tables({"ems": conn}, contracts)
        cur = conn.cursor()
        cur.execute("ALTER TABLE ems.category ALTER COLUMN catdesc TYPE text")
        for row in tickit.load_real_dimensions()["category"]:
            # random letters: too large for the row even after compression, so stored out of line
            long_text = "".join(rng.choice(string.ascii_letters) for _ in range(8000))
            live.insert_row(cur, contract, "postgres", dict(row, catdesc=long_text))
        conn.commit()
        connect.start(settings, kafka_broker.bootstrap, [connect.postgres_connector(postgres)])
        real_sources.wait_for_snapshots(settings, kafka_broker.bootstrap, systems=("ems",))
        cur.execute("UPDATE ems.category SET catname = catname || ' (renamed)' WHERE catid <= 3")
        conn.commit()
        real_sources.wait_settled(settings, kafka_broker.bootstrap)
        if _placeholder_updates(kafka_broker.bootstrap) != 3:  # the precondition, not the thing tested
            pytest.fail("Debezium did not send the unchanged TOASTed catdesc as its placeholder")

        env = {**os.environ, **thrift_server.env, "LAKEHOUSE_HOME": str(settings.home),
               "LAKEHOUSE_LAKE": settings.lake, "DBT_TARGET_PATH": str(tmp_path / "target"),
               "DBT_LOG_PATH": str(tmp_path / "logs")}
        ingest = ("ingest", "--kafka-bootstrap", kafka_broker.bootstrap, "--topics", TOPIC, "--once", "--quiet")
        steps = (("the snapshot row and the update in one run", None),
                 ("an update alone (incremental: the value comes from the stored row)",
                  "UPDATE ems.category SET catgroup = catgroup || '!' WHERE catid = 1"))
        for step, change in steps:
            if change is not None:
                cur.execute(change)
                conn.commit()
                real_sources.wait_settled(settings, kafka_broker.bootstrap)
            _run(env, *ingest)
            _run(env, "dbt", "run", "--select", "+categories")
            expected = oracle_rows({(r["catid"],): r for r in live.source_rows(conn, contract, "postgres")},
                                   "category")
            actual = silver_rows(settings.thrift_host, settings.thrift_port, "category")
            assert differences(actual, expected) == [], step
        assert _placeholder_updates(kafka_broker.bootstrap) == 4  # the second update carried it too
    finally:
        conn.close()  # type: ignore[attr-defined]
