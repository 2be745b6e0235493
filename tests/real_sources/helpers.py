"""Judges of the real-sources tests: what Kafka holds, read independently of the ingestion."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fastavro
from confluent_kafka import Consumer, Producer, TopicPartition

from ingestion.cdc.contracts import TableContract
from simulator import live
from tests.dbt_project.silver_oracle import differences, normalize
from tests.stream.judge import hudi_rows


def record_value(value: bytes, schemas: Mapping[int, str] | None = None) -> dict[str, Any]:
    """A Debezium record value as a dict: JSON with its schema (the payload), or Avro in Confluent's
    wire format (magic byte 0, 4-byte schema id) decoded by fastavro with the schema text the
    test's registry holds for that id."""
    if value[:1] == b"\x00" and schemas is not None:
        schema = fastavro.parse_schema(json.loads(schemas[int.from_bytes(value[1:5], "big")]))
        return fastavro.schemaless_reader(io.BytesIO(value[5:]), schema, None)  # type: ignore[return-value]
    return json.loads(value)["payload"]


def keyed_records(bootstrap: str, topic: str, last: int | None = None) -> list[tuple[bytes, bytes]]:
    """(key, value) of the records of ``topic``'s partition 0 that have both (of its ``last``
    offsets, when given), in offset order; tombstones and keyless truncates left out."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "real-sources-judge", "log_level": 0,
                         "enable.auto.commit": False})
    records: list[tuple[bytes, bytes]] = []
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        read = low if last is None else max(low, high - last)
        consumer.assign([TopicPartition(topic, 0, read)])
        while read < high:
            for message in consumer.consume(min(500, high - read), timeout=5):
                if message.error():
                    continue
                read = message.offset() + 1
                if message.value() is not None and message.key() is not None:
                    records.append((message.key(), message.value()))
    finally:
        consumer.close()
    return records


def resend_last(bootstrap: str, topic: str, count: int) -> int:
    """Produce the last ``count`` keyed records of ``topic`` (partition 0) again, key and value
    byte for byte: the re-delivery a Connect worker makes of changes whose offsets it had not
    flushed when it died. Returns how many were resent."""
    records = keyed_records(bootstrap, topic, last=4 * count)[-count:]
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0
    return len(records)


def distinct_changes(bootstrap: str, topics: list[str], schemas: Mapping[int, str] | None = None,
                     delivered: dict[str, int] | None = None) -> dict[str, int]:
    """Per topic, the distinct changes Kafka holds: (key, op, source position), re-deliveries once.
    ``schemas``: the registry's schema texts by id, for Avro values; ``delivered``, when given, gets
    each topic's keyed records counted with their re-deliveries."""
    counts: dict[str, int] = {}
    for topic in topics:
        records = keyed_records(bootstrap, topic)
        seen = set()
        for key, value in records:
            payload = record_value(value, schemas)
            source = payload["source"]
            position = (source.get("lsn"), source.get("txId"), source.get("file"), source.get("pos"),
                        source.get("row"), source.get("snapshot") not in (None, "false"))
            seen.add((key, payload["op"], position))
        counts[topic] = len(seen)
        if delivered is not None:
            delivered[topic] = len(records)
    return counts


def latest_by_key(rows: list[dict], key: tuple[str, ...]) -> dict[tuple, dict]:
    """Replay bronze events: per key the largest Kafka offset wins; a deleted key is gone."""
    latest: dict[tuple, dict] = {}
    for row in sorted(rows, key=lambda r: r["_cdc_kafka_offset"]):
        latest[tuple(row[k] for k in key)] = row
    return {k: r for k, r in latest.items() if not r["_cdc_is_deleted"]}


def bronze_differences(lake: Path, conns: Mapping[str, Any], contracts: Mapping[str, TableContract],
                       distinct: Mapping[str, int]) -> dict[str, Any]:
    """Per table: bronze (read by hudi-rs) must hold each distinct change Kafka holds once, and its
    events replayed per key must equal ``SELECT`` of the source table. The differences found."""
    problems: dict[str, Any] = {}
    for name, contract in contracts.items():
        stored = hudi_rows(lake / "bronze" / name)
        if len(stored) != distinct[contract.topics[0]]:
            problems[name] = f"{len(stored)} bronze rows for {distinct[contract.topics[0]]} distinct changes"
            continue
        source = live.source_rows(conns[contract.system], contract, live.DIALECTS[contract.system])
        expected = {tuple(normalize(r[k]) for k in contract.primary_key):
                    {c: normalize(r[c]) for c in contract.column_names} for r in source}
        if not expected:
            problems[name] = "the source table is empty, nothing would be compared"
            continue
        actual = {tuple(normalize(v) for v in k): {c: normalize(r[c]) for c in contract.column_names}
                  for k, r in latest_by_key(stored, contract.primary_key).items()}
        diff = differences(actual, expected)
        if diff:
            problems[name] = diff
    return problems


def load_ems_tables(conn: Any, contracts: Mapping[str, TableContract]) -> dict[str, list[dict]]:
    """Create the ``ems`` tables in PostgreSQL and load TICKIT's real categories, venues and 50 events;
    the real dimensions loaded (by table)."""
    from simulator import tickit

    live.create_tables({"ems": conn}, contracts)
    cur = conn.cursor()
    real = tickit.load_real_dimensions()
    for table, rows in (("category", real["category"]), ("venue", real["venue"]), ("event", real["event"][:50])):
        for row in rows:
            live.insert_row(cur, contracts[table], "postgres", row)
    conn.commit()
    return real
