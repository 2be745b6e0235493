"""Default suite: real Debezium events from real PostgreSQL and MariaDB land in bronze as the databases hold them.

The encodings of real connectors (decimals as Connect ``Decimal`` bytes, ``MicroTimestamp``
and ``io.debezium.time.Date``, MariaDB's ``TINYINT(1)``, PostgreSQL's ``before: null`` on
updates) go through the contracts: per table, the latest bronze event of each key, read by
hudi-rs and replayed here in plain Python (the largest Kafka offset wins, a delete
removes the key), must equal ``SELECT`` of the source table; and bronze holds each distinct
change in Kafka exactly once. The slow test next to this one adds dbt, silver and crashes.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import pytest

from lakehouse import real_sources
from lakehouse.config import load_settings
from lakehouse.services import databases, kafka, registry
from simulator import live
from tests.kafka.helpers import fresh_topics, ingest_kafka
from tests.real_sources.helpers import bronze_differences, distinct_changes
from tests.security.listening_sockets import assert_loopback_only, process_tree


@pytest.fixture(scope="module")
def sources(kafka_broker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """The real sources, started once for this module's tests (fresh topics, temporary home)."""
    fresh_topics(kafka_broker.bootstrap)
    home = tmp_path_factory.mktemp("real-sources") / "home"
    settings = dataclasses.replace(load_settings(), home=home, lake=str(home / "lake"), landing=str(home / "landing"))
    try:
        yield settings, real_sources.start(settings, kafka_broker.bootstrap, listings=150, sales=150)
    finally:
        for line in real_sources.stop(settings):
            print(line)
        databases.discard(settings)


def test_real_sources_listen_on_loopback_only(sources, kafka_broker) -> None:
    """PostgreSQL, MariaDB, Kafka Connect (its REST port) and the broker: 127.0.0.1 only."""
    settings, _ = sources
    for name in ("postgres", "mariadb", "connect"):
        record = registry.read(settings, name)
        assert record is not None and record.alive, name
        assert_loopback_only(process_tree(record.pid), name)
    broker = kafka.status(kafka_broker)
    assert broker.pid is not None
    assert_loopback_only(process_tree(broker.pid), "kafka broker")


def test_contracts_generated_from_the_real_topics_equal_the_checked_in_ones(sources, kafka_broker,
                                                                           tmp_path) -> None:
    """`lakehouse contracts generate` on the connectors' topics writes the contracts written by hand:
    the same columns in the same order with the same types, keys, topics, connector and database."""
    from ingestion.cdc.contracts import load_contracts
    from lakehouse.cli import main

    for system in live.DIALECTS:
        wanted = {n: c for n, c in real_sources.real_contracts().items() if c.system == system}
        out = tmp_path / system
        out.mkdir()
        topics = ",".join(c.topics[0] for c in wanted.values())
        assert main(["contracts", "generate", "--system", system, "--kafka-bootstrap", kafka_broker.bootstrap,
                     "--topics", topics, "--output", str(out / f"{system}.yml")]) == 0
        generated = load_contracts(out)
        assert sorted(generated) == sorted(wanted)
        for name, contract in wanted.items():
            made = generated[name]
            assert [(c.name, c.type) for c in made.columns] == [(c.name, c.type) for c in contract.columns], name
            assert (made.primary_key, made.topics, made.connector, made.database, made.schema) == (
                contract.primary_key, contract.topics, contract.connector, contract.database, contract.schema), name


def test_real_connector_events_land_in_bronze_as_the_databases_hold_them(sources, spark, kafka_broker,
                                                                         tmp_path) -> None:
    settings, running = sources
    contracts = real_sources.real_contracts()
    with real_sources.connections(running) as conns:
        workload = live.Workload(conns, contracts, random.Random(5), running.users)
        for _ in range(60):
            workload.step()
        real_sources.wait_settled(settings)
        topics = (*sorted(t for c in contracts.values() for t in c.topics), real_sources.CRM_USER_TOPIC)
        summary, log = ingest_kafka(spark, tmp_path, kafka_broker.bootstrap, topics=topics)
        assert summary.bad_events == 0, log

        distinct = distinct_changes(kafka_broker.bootstrap, [c.topics[0] for c in contracts.values()])
        assert bronze_differences(tmp_path / "lake", conns, contracts, distinct) == {}
