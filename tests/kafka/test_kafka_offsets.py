"""Kafka offsets: the lag in ``lakehouse status``, offsets lost to retention, --max-offsets-per-trigger.

Values here are malformed JSON on purpose: each one is a dead letter keyed by its text,
so the dead-letter table tells exactly which offsets were read, without a simulator run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from ingestion.stream import IngestError
from tests.kafka.helpers import dead_letters_bronze, fresh_topics, ingest_kafka

TOPIC = "tickit.ems.category"


def _produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for number in range(first, first + count):
        producer.produce(TOPIC, value=f"not json {number}".encode(), partition=0)
    assert producer.flush(30) == 0


def _read_offsets(lake: Path) -> list[int]:
    return sorted(offset for (*_, offset) in dead_letters_bronze(lake).elements())


def _status(base: Path) -> dict:
    env = {**os.environ, "LAKEHOUSE_HOME": str(base), "LAKEHOUSE_LAKE": str(base / "lake"),
           "LAKEHOUSE_LANDING": str(base / "landing")}
    done = subprocess.run([str(Path(sys.executable).with_name("lakehouse")), "status", "--json", "--no-catalog"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def topic(kafka_broker) -> str:
    fresh_topics(kafka_broker.bootstrap)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap, "log_level": 0})
    from confluent_kafka.admin import NewTopic

    for future in admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)]).values():
        future.result(30)
    return kafka_broker.bootstrap


def test_lag_in_status_then_offsets_lost_to_retention_fail_clearly(tmp_path, spark, topic) -> None:
    bootstrap = topic
    _produce(bootstrap, 0, 12)
    summary, _ = ingest_kafka(spark, tmp_path, bootstrap, topics=(TOPIC,), max_offsets_per_trigger=6,
                              checkpoints_root=tmp_path / "checkpoints")
    assert [r.bad_events for r in summary.reports] == [6, 6]  # --max-offsets-per-trigger 6
    assert _read_offsets(tmp_path / "lake") == list(range(12))

    _produce(bootstrap, 12, 8)  # 8 more records: the lag of the topic in lakehouse status
    lags = {item["topic"]: item for item in _status(tmp_path)["kafka"]}
    assert lags[TOPIC]["lag"] == 8 and lags[TOPIC]["committed"] == 12 and lags[TOPIC]["end_offsets"] == 20

    # retention removes offsets 12..15 before the ingestion read them (deleteRecords: what retention.ms does)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for future in admin.delete_records([TopicPartition(TOPIC, 0, 16)]).values():
        future.result(30)
    with pytest.raises(IngestError) as failure:
        ingest_kafka(spark, tmp_path, bootstrap, topics=(TOPIC,))
    message = str(failure.value)
    assert "lost to retention" in message and "\n" not in message, message
    assert "--reset" in (failure.value.hint or "")
    assert _read_offsets(tmp_path / "lake") == list(range(12))  # nothing written by the failed run

    # accepting the gap: the stream goes on from the earliest offset still there
    ingest_kafka(spark, tmp_path, bootstrap, topics=(TOPIC,), fail_on_data_loss=False)
    assert _read_offsets(tmp_path / "lake") == [*range(12), *range(16, 20)]
    lags = {item["topic"]: item for item in _status(tmp_path)["kafka"]}
    assert lags[TOPIC]["lag"] == 0
