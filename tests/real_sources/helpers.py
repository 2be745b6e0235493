"""Judges of the real-sources tests: what Kafka holds, read independently of the ingestion."""

from __future__ import annotations

import json

from confluent_kafka import Consumer, TopicPartition


def distinct_changes(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """Per topic, the distinct changes Kafka holds: (key, op, source position), re-deliveries once."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "real-sources-judge", "log_level": 0,
                         "enable.auto.commit": False})
    counts: dict[str, int] = {}
    try:
        for topic in topics:
            seen = set()
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            consumer.assign([TopicPartition(topic, 0, low)])
            read = low
            while read < high:
                for message in consumer.consume(min(500, high - read), timeout=5):
                    if message.error():
                        continue
                    read = message.offset() + 1
                    if message.value() is None or message.key() is None:
                        continue  # tombstones; a truncate has no key and no row
                    payload = json.loads(message.value())["payload"]
                    source = payload["source"]
                    position = (source.get("lsn"), source.get("txId"), source.get("file"), source.get("pos"),
                                source.get("row"), source.get("snapshot") not in (None, "false"))
                    seen.add((message.key(), payload["op"], position))
            counts[topic] = len(seen)
    finally:
        consumer.close()
    return counts
