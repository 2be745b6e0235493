"""Slow: real Debezium connectors writing Avro through a schema registry land in bronze as the
databases hold them.

Kafka Connect's key and value converter is Apicurio Registry's ``AvroConverter`` set to
Confluent's wire format (the reference pipeline's converter; Confluent's is on no reachable
registry), registering its schemas in the test's small registry (``tests/kafka/registry.py``:
Apicurio's runnable registry is not on Maven Central, so it answers the converter's one v2
call and the ingestion's Confluent-compatible ``GET /apis/ccompat/v7/schemas/ids/{id}``). The
ingestion reads the topics with ``--schema-registry-url``, as ``lakehouse sources start
--apicurio-url`` tells a user to. Judges: fastavro decoding of the topics with
the registry's schemas (every record Avro, the distinct changes counted), hudi-rs reads of
bronze, and ``SELECT`` of the source tables.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from confluent_kafka import Consumer, TopicPartition

from lakehouse import real_sources
from lakehouse.config import load_settings
from lakehouse.services import connect, databases
from simulator import live
from tests.kafka.helpers import fresh_topics, ingest_kafka
from tests.kafka.registry import SmallRegistry
from tests.real_sources.helpers import bronze_differences, distinct_changes

pytestmark = pytest.mark.slow


def _values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "avro-judge", "log_level": 0,
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, low)])
        values: list[bytes] = []
        read = low
        while read < high:
            for message in consumer.consume(min(500, high - read), timeout=5):
                if not message.error():
                    read = message.offset() + 1
                    if message.value() is not None:
                        values.append(message.value())
        return values
    finally:
        consumer.close()


def test_real_connectors_in_avro_through_a_registry_land_in_bronze(kafka_broker, spark, tmp_path) -> None:
    fresh_topics(kafka_broker.bootstrap)
    registry = SmallRegistry()
    home = tmp_path / "home"
    settings = dataclasses.replace(load_settings(), home=home, lake=str(home / "lake"), landing=str(home / "landing"))
    try:
        running = real_sources.start(settings, kafka_broker.bootstrap, listings=150, sales=150,
                                     apicurio_url=registry.url)
        contracts = real_sources.real_contracts()
        with real_sources.connections(running) as conns:
            workload = live.Workload(conns, contracts, random.Random(11), running.users)
            for _ in range(60):
                workload.step()
            real_sources.wait_settled(settings)
            connector_topics = sorted(t for c in contracts.values() for t in c.topics)
            for topic in connector_topics:  # every record of the connectors is Avro in the wire format
                values = _values(kafka_broker.bootstrap, topic)
                assert values, topic
                assert all(v[:1] == b"\x00" and int.from_bytes(v[1:5], "big") in registry.schemas
                           for v in values), topic
            assert any(r.startswith("POST /apis/registry/v2/groups/") for r in registry.requests)
            registry.requests.clear()

            summary, log = ingest_kafka(spark, tmp_path, kafka_broker.bootstrap,
                                        topics=(*connector_topics, real_sources.CRM_USER_TOPIC),
                                        schema_registry_url=connect.ccompat_url(registry.url))
            assert summary.bad_events == 0, log
            assert registry.requests and all(r.startswith("GET /apis/ccompat/v7/schemas/ids/")
                                             for r in registry.requests), registry.requests
            distinct = distinct_changes(kafka_broker.bootstrap, [c.topics[0] for c in contracts.values()],
                                        registry.schemas)
            assert bronze_differences(tmp_path / "lake", conns, contracts, distinct) == {}
    finally:
        for line in real_sources.stop(settings):
            print(line)
        databases.discard(settings)
        registry.stop()
