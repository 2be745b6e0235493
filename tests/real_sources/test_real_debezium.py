"""Real Debezium from real databases into silver, judged by the databases' own final state.

PostgreSQL (``ems``) and MariaDB (``ecomm``) from Debian's packages, Debezium's connectors in
Kafka Connect (standalone, the pinned ``connect`` JVM role), the run's Kafka broker, the
ingestion reading Kafka continuously (``lakehouse ingest --kafka-bootstrap``), the shared
Thrift server, ``lakehouse dbt build``. A random workload runs on the databases meanwhile:
inserts, updates, several updates of one row in one transaction, deletes, a delete then a
re-insert of one key in one transaction, multi-row transactions, a TRUNCATE, a column added
mid-stream. Kafka Connect and the ingestion are each SIGKILLed once in the middle and
restarted. Then ``silver.<entity>`` must equal ``SELECT *`` of the source table (the
contract's columns), and bronze must hold each distinct change once although Kafka holds
re-deliveries (Connect resends what it had not yet flushed as offsets when killed, which
timing decides; the test also resends the last changes of two topics byte for byte, so every
run has re-deliveries to store once).

The crm system (SQL Server) has no server here: its users are produced by the simulator.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakehouse import real_sources
from lakehouse.services import connect, databases, registry
from lakehouse.status import kafka_lags
from simulator import live
from tests.conftest import settings_for
from tests.dbt_project.silver_oracle import differences, oracle_rows, silver_rows
from tests.real_sources.helpers import distinct_changes, resend_last
from tests.stream.judge import hudi_rows

pytestmark = pytest.mark.slow

LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")
SCHEMAS = ("bronze", "staging", "silver", "gold", "seeds", "snapshots")


@pytest.fixture
def real_home(thrift_server, kafka_broker, tmp_path: Path) -> Iterator[tuple]:
    """A fresh home on the shared Thrift server and broker, with the real sources started (then stopped)."""
    from tests.kafka.helpers import fresh_topics

    for schema in SCHEMAS:
        thrift_server.sql(f"drop schema if exists {schema} cascade")
    fresh_topics(kafka_broker.bootstrap)
    home = tmp_path / "home"
    settings = settings_for(home, thrift_server.port)
    env = {**os.environ, **thrift_server.env, "LAKEHOUSE_HOME": str(home), "LAKEHOUSE_LAKE": settings.lake,
           "LAKEHOUSE_LANDING": settings.landing, "DBT_TARGET_PATH": str(tmp_path / "target"),
           "DBT_LOG_PATH": str(tmp_path / "logs")}
    try:
        sources = real_sources.start(settings, kafka_broker.bootstrap)
        yield settings, env, sources, kafka_broker.bootstrap
    finally:
        for line in real_sources.stop(settings):
            print(line)
        databases.discard(settings)


def _start_ingestion(env: dict[str, str], bootstrap: str, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(  # noqa: S603
            [LAKEHOUSE, "ingest", "--kafka-bootstrap", bootstrap, "--trigger", "1", "--quiet"],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _kill(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)  # the process group: the ingestion and its Spark JVM


def _wait_caught_up(settings, topics: set[str], proc: subprocess.Popen, log: Path, timeout: float = 600) -> None:
    """Until the ingestion's checkpoint has every record the broker holds on ``topics``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the ingestion exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
        checkpoints = settings.checkpoints_for(settings.lake)
        lags = [lag for lag in kafka_lags(checkpoints, settings.lake) if lag.topic in topics]
        if lags and all(lag.lag == 0 for lag in lags) and {lag.topic for lag in lags} == topics:
            return
        time.sleep(2)
    raise AssertionError(f"the ingestion did not catch up within {timeout:.0f}s:\n{log.read_text()[-3000:]}")


def test_real_debezium_changes_reach_silver_equal_to_the_source_tables(real_home, tmp_path) -> None:
    settings, env, sources, bootstrap = real_home
    contracts = real_sources.real_contracts()
    topics = {t for c in contracts.values() for t in c.topics} | {real_sources.CRM_USER_TOPIC}
    log = tmp_path / "ingest.log"
    ingestion = _start_ingestion(env, bootstrap, log)
    try:
        with real_sources.connections(sources) as conns:
            workload = live.Workload(conns, contracts, random.Random(2026), sources.users)
            for _ in range(60):
                workload.step()
            # Kafka Connect dies (SIGKILL: no offset flush) and comes back: it resends what it had not flushed
            record = registry.read(settings, connect.SERVICE)
            assert record is not None
            os.kill(record.pid, signal.SIGKILL)
            for _ in range(20):
                workload.step()  # the databases keep changing while Connect is down
            real_sources.start(settings, bootstrap)
            for _ in range(40):
                workload.step()
            # the ingestion dies mid-stream and comes back: its checkpoint and the Hudi commits agree
            assert ingestion.poll() is None, f"the ingestion exited before its kill:\n{log.read_text()[-3000:]}"
            _kill(ingestion.pid)
            ingestion.wait()
            ingestion = _start_ingestion(env, bootstrap, log)
            workload.truncate_sales()
            for _ in range(40):
                workload.step()
            workload.add_column()
            for _ in range(40):
                workload.step()
            print("workload:", workload.counts)
        # Connect resends what it had not flushed when killed, when there was any (timing decides):
        # resend the last changes of two topics as it would, so re-deliveries are there every run
        resent = {topic: resend_last(bootstrap, topic, 5) for topic in ("tickit.ecomm.sale", "tickit.ems.venue")}
        assert all(resent.values()), resent
        time.sleep(5)  # the connectors' last changes reach Kafka
        _wait_caught_up(settings, topics, ingestion, log)
    finally:
        ingestion.send_signal(signal.SIGTERM)
        try:
            ingestion.wait(60)
        except subprocess.TimeoutExpired:
            _kill(ingestion.pid)

    # nothing duplicated in bronze, although Kafka holds re-deliveries
    delivered: dict[str, int] = {}
    distinct = distinct_changes(bootstrap, sorted(t for c in contracts.values() for t in c.topics),
                                delivered=delivered)
    assert all(delivered[t] >= distinct[t] + resent[t] for t in resent), (delivered, distinct, resent)
    for name, contract in contracts.items():
        stored = [r for r in hudi_rows(Path(settings.lake) / "bronze" / name) if r["_cdc_op"] != "t"]
        assert len(stored) == distinct[contract.topics[0]], name

    # the column added at the source is what `contracts diff` reports, and nothing else
    topics = ",".join(sorted(t for c in contracts.values() for t in c.topics))
    done = subprocess.run([LAKEHOUSE, "contracts", "diff", "--kafka-bootstrap", bootstrap, "--topics", topics],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    reported = [line for line in done.stdout.splitlines() if not line.endswith("as the contract says")]
    assert reported == ["venue (tickit.ems.venue): 1 difference(s)",
                        "  + venuephone string  (in the events, not in the contract)"], done.stdout

    done = subprocess.run([LAKEHOUSE, "dbt", "build"], env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]

    problems = {}
    with real_sources.connections(sources) as conns:
        for name, contract in contracts.items():
            dialect = live.DIALECTS[contract.system]
            rows = live.source_rows(conns[contract.system], contract, dialect)
            expected = oracle_rows({tuple(r[k] for k in contract.primary_key): r for r in rows}, name)
            diff = differences(silver_rows(settings.thrift_host, settings.thrift_port, name), expected)
            if diff:
                problems[name] = diff
    assert problems == {}
