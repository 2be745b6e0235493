"""Fill Kafka with the simulator's events: the landing zone's records, produced to their topics.

``lakehouse simulate --kafka-bootstrap HOST:PORT`` writes the landing zone and its oracle
as always, then produces every landed record to its topic and partition, in offset order,
so Kafka holds exactly the events the oracle describes (the demo and the tests need no
database). A JSON landing gives JSON values (a ``null`` line becomes a real tombstone, a
record with a null value); an Avro landing gives Avro values in the Confluent wire format
(magic byte 0, the 4-byte schema id, the Avro body), each file's writer schema registered
under ``<topic>-value`` in a Confluent-compatible registry (``POST
/subjects/<subject>/versions``). For a JSON landing into fresh topics, Kafka's offsets are
the landing offsets; an Avro landing has no tombstones (the sink dropped them), so its
offsets are denser.

Producing resumes: a partition that already holds N records gets the landed records from
the (N+1)-th on, so running the simulator again (it resumes its landing) adds only the new ones.
"""

from __future__ import annotations

import gzip
import io
import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import fastavro

from ingestion.cdc.landing import is_avro_path, is_gzip_path, is_landing_file_name, parse_landing_path


class ProduceError(RuntimeError):
    """Producing failed (names the broker or registry and the problem)."""


@dataclass
class ProduceSummary:
    records: int = 0
    tombstones: int = 0
    skipped: int = 0  # already in the topic (a resumed run)
    schema_ids: dict[str, list[int]] = field(default_factory=dict)  # topic -> writer schema ids used


def register_schema(registry_url: str, subject: str, schema: object) -> int:
    """Register ``schema`` under ``subject`` (Confluent REST); the registry's id for it."""
    body = json.dumps({"schema": json.dumps(schema, separators=(",", ":"))}).encode()
    request = urllib.request.Request(f"{registry_url.rstrip('/')}/subjects/{subject}/versions", data=body,
                                     method="POST",
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - configured URL
            return int(json.loads(response.read())["id"])
    except (OSError, ValueError, KeyError) as exc:
        raise ProduceError(f"registering a schema for {subject} at {registry_url} failed: {exc}") from None


def wire_value(schema_id: int, parsed_schema, record) -> bytes:
    """A record in the Confluent wire format: 0, the schema id (4 bytes big-endian), the Avro body."""
    out = io.BytesIO()
    out.write(b"\x00" + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(out, parsed_schema, record)
    return out.getvalue()


def landed_files(landing: str) -> dict[tuple[str, int], list[Path]]:
    """The landing files per (topic, partition), in start-offset order."""
    root = Path(landing) / "topics"
    if "://" in landing or not root.is_dir():
        raise ProduceError(f"{landing}: no local landing zone with a topics/ directory to produce from")
    files: dict[tuple[str, int], list[tuple[int, Path]]] = {}
    for path in root.rglob("*"):
        if is_landing_file_name(path.name):
            where = parse_landing_path(str(path.relative_to(landing)))
            files.setdefault((where.topic, where.partition), []).append((where.start_offset, path))
    return {key: [p for _, p in sorted(items)] for key, items in sorted(files.items())}


def _records(path: Path, registry_url: str | None, topic: str, summary: ProduceSummary,
             ids: dict[str, int]) -> Iterator[bytes | None]:
    content = path.read_bytes()
    if is_gzip_path(path.name):
        content = gzip.decompress(content)
    if not is_avro_path(path.name):
        for line in content.split(b"\n")[:-1] if content.endswith(b"\n") else content.split(b"\n"):
            yield None if line.strip() == b"null" else line
        return
    if registry_url is None:
        raise ProduceError(f"{path.name}: an Avro landing needs a schema registry (--schema-registry-url)")
    reader = fastavro.reader(io.BytesIO(content))
    schema = reader.writer_schema
    text = json.dumps(schema, sort_keys=True)
    if text not in ids:
        ids[text] = register_schema(registry_url, f"{topic}-value", schema)
    used = summary.schema_ids.setdefault(topic, [])
    if ids[text] not in used:
        used.append(ids[text])
    parsed = fastavro.parse_schema(schema)
    for record in reader:
        yield wire_value(ids[text], parsed, record)


def produce_landing(landing: str, bootstrap: str, *, registry_url: str | None = None,
                    timeout: float = 30.0) -> ProduceSummary:
    """Produce every landed record not yet in its topic partition (see the module docstring)."""
    from confluent_kafka import KafkaException, Producer

    files = landed_files(landing)
    partitions: dict[str, int] = {}
    for topic, partition in files:
        partitions[topic] = max(partitions.get(topic, 0), partition + 1)
    present = _ensure_topics(bootstrap, partitions, timeout)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20,
                         "log_level": 0})
    errors: list[str] = []

    def delivered(error, _message) -> None:
        if error is not None:
            errors.append(str(error))

    summary = ProduceSummary()
    ids: dict[str, int] = {}
    try:
        for (topic, partition), paths in files.items():
            skip = present.get((topic, partition), 0)
            for path in paths:
                for value in _records(path, registry_url, topic, summary, ids):
                    if skip:
                        skip -= 1
                        summary.skipped += 1
                        continue
                    while True:
                        try:
                            producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
                            break
                        except BufferError:
                            producer.poll(0.5)
                    summary.records += 1
                    summary.tombstones += value is None
                producer.poll(0)
        left = producer.flush(timeout)
    except KafkaException as exc:
        raise ProduceError(f"producing to {bootstrap} failed: {exc}") from None
    if left or errors:
        raise ProduceError(f"producing to {bootstrap} failed: {left} records undelivered; "
                           f"{errors[0] if errors else 'flush timed out'}")
    return summary


def _ensure_topics(bootstrap: str, partitions: dict[str, int], timeout: float) -> dict[tuple[str, int], int]:
    """Create the missing topics (their partition count, 1 replica); records already in each partition."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        existing = admin.list_topics(timeout=timeout).topics
    except KafkaException as exc:
        raise ProduceError(f"the Kafka broker at {bootstrap} did not answer: {exc}") from None
    missing = [NewTopic(t, num_partitions=n, replication_factor=1) for t, n in partitions.items() if t not in existing]
    for topic, future in (admin.create_topics(missing) if missing else {}).items():
        try:
            future.result(timeout)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise ProduceError(f"creating topic {topic} on {bootstrap} failed: {exc}") from None
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lakehouse-simulator", "log_level": 0})
    try:
        return {(t, p): _end_offset(consumer, TopicPartition(t, p), timeout)
                for t, n in partitions.items() for p in range(n)}
    finally:
        consumer.close()


def _end_offset(consumer, partition, timeout: float) -> int:
    """The partition's end offset; a topic created a moment ago may have no leader yet: ask again."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        try:
            return int(consumer.get_watermark_offsets(partition, timeout=timeout)[1])
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise ProduceError(f"{partition.topic}[{partition.partition}]: no end offset ({exc})") from None
            time.sleep(0.2)
