"""The Kafka streaming source: Spark's own Kafka source (``spark-sql-kafka-0-10``), and consumer lag.

Spark tracks the offsets in the query's checkpoint (``offsets/<batch>``: the planned end
of each batch; ``commits/<batch>``: the batches done), never in a consumer group, so the
lag of a topic is the broker's end offsets minus the offsets of the checkpoint's latest
committed batch (``checkpoint_offsets``, ``topic_lag``). The broker's offsets are asked with
the ``confluent-kafka`` client (a metadata request and one watermark request per partition).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from ingestion import files
from ingestion.errors import IngestionError

#: Columns of Spark's Kafka source the parse needs (the key is not needed: the primary key is in the value).
KAFKA_COLUMNS = ("topic", "partition", "offset", "value")


@dataclass(frozen=True)
class KafkaSourceOptions:
    bootstrap: str
    topics: tuple[str, ...]
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    #: how long one request to the broker may take before Spark's consumer gives up (ms)
    timeout_ms: int = 60_000
    #: Spark's retries of an offset request that failed (then the query fails)
    offset_retries: int = 3


def kafka_stream(spark: SparkSession, options: KafkaSourceOptions) -> DataFrame:
    """A streaming DataFrame of Kafka records: ``topic``, ``partition``, ``offset``, ``value``."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", options.bootstrap)
        .option("subscribePattern", topics_pattern(options.topics))
        .option("startingOffsets", options.starting_offsets)
        .option("failOnDataLoss", "true" if options.fail_on_data_loss else "false")
        .option("kafka.request.timeout.ms", str(options.timeout_ms))
        .option("kafka.default.api.timeout.ms", str(options.timeout_ms))
        .option("kafkaConsumer.pollTimeoutMs", str(options.timeout_ms))
        .option("fetchOffset.numRetries", str(options.offset_retries))
        .option("fetchOffset.retryIntervalMs", "1000")
    )
    if options.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(options.max_offsets_per_trigger))
    return reader.load().select(*KAFKA_COLUMNS)


def topics_pattern(topics: tuple[str, ...]) -> str:
    """A pattern matching exactly ``topics``: unlike ``subscribe``, a topic that does not exist yet is
    no error (Spark's offset reader fails on one), and it is read from its first record once created."""
    return "^(" + "|".join(re.escape(topic) for topic in topics) + ")$"


def checkpoint_offsets(query_checkpoint: str) -> dict[str, dict[int, int]] | None:
    """Per topic and partition, the next offset after the latest committed batch (None: no batch committed)."""
    commits = _batch_ids(files.join(query_checkpoint, "commits"))
    if not commits:
        return None
    text = files.read_text(files.join(query_checkpoint, "offsets", str(max(commits))))
    if text is None:
        return None
    lines = text.splitlines()
    offsets: dict[str, dict[int, int]] = {}
    for line in lines[2:]:  # "v1", the batch metadata, then one line per source
        try:
            source = json.loads(line)
        except ValueError:
            continue
        if isinstance(source, dict):
            for topic, partitions in source.items():
                if isinstance(partitions, dict):
                    offsets.setdefault(topic, {}).update({int(p): int(o) for p, o in partitions.items()})
    return offsets


def _batch_ids(directory: str) -> list[int]:
    return [int(name) for name in files.child_names(directory) if name.isdigit()]


@dataclass
class TopicLag:
    topic: str
    end_offsets: int  # records the broker holds up to (sum of the partitions' end offsets)
    consumed: int  # sum of the checkpoint's offsets (or the start offsets when nothing was committed)
    lag: int | None  # None: the broker did not answer


class KafkaUnavailable(IngestionError, RuntimeError):
    """The broker did not answer (names the bootstrap address and the problem)."""


def watermarks(bootstrap: str, topics: list[str], timeout: float = 5.0) -> dict[str, dict[int, tuple[int, int]]]:
    """Per topic and partition: (earliest, end) offsets on the broker; topics it does not know are left out."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lakehouse-status",
                         "enable.auto.commit": False, "log_level": 0, "socket.timeout.ms": int(timeout * 1000)})
    try:
        result: dict[str, dict[int, tuple[int, int]]] = {}
        for topic in topics:
            try:
                metadata = consumer.list_topics(topic, timeout=timeout)
            except KafkaException as exc:
                raise KafkaUnavailable(f"the Kafka broker at {bootstrap} did not answer ({exc})") from None
            described = metadata.topics.get(topic)
            if described is None or described.error is not None:
                continue
            result[topic] = {}
            for partition in sorted(described.partitions):
                try:
                    low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
                except KafkaException as exc:
                    raise KafkaUnavailable(f"the Kafka broker at {bootstrap} did not answer ({exc})") from None
                result[topic][partition] = (int(low), int(high))
        return result
    finally:
        consumer.close()


def topic_lag(bootstrap: str, topics: list[str], query_checkpoint: str, timeout: float = 5.0) -> list[TopicLag]:
    """Records per topic the broker holds beyond what the ingestion committed (its checkpoint)."""
    consumed = checkpoint_offsets(query_checkpoint) or {}
    try:
        marks = watermarks(bootstrap, topics, timeout)
    except KafkaUnavailable:
        return [TopicLag(t, 0, sum(consumed.get(t, {}).values()), None) for t in topics]
    lags = []
    for topic in topics:
        partitions = marks.get(topic, {})
        done = consumed.get(topic, {})
        # a partition the checkpoint has not reached yet starts at its earliest offset
        behind = sum(max(0, end - max(low, done.get(p, low))) for p, (low, end) in partitions.items())
        lags.append(TopicLag(topic, sum(end for _, end in partitions.values()),
                             sum(done.get(p, low) for p, (low, _) in partitions.items()), behind))
    return lags


def _keyed_records(consumer, topic: str, partition: int, start: int, high: int,
                   timeout: float) -> Iterator[tuple[int, bytes, bytes]]:
    """(timestamp, key, value) of the records of one partition from ``start`` to ``high`` that have
    both a key and a value (tombstones and truncates skipped), in offset order."""
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(topic, partition, start)])
    read = start
    while read < high:
        # no more than the partition still holds: ``consume`` waits its whole timeout for a count never reached
        batch = consumer.consume(min(500, high - read), timeout=timeout)
        if not batch:
            return
        for message in batch:
            offset = message.offset()
            read = offset + 1 if offset is not None else high
            key, value = message.key(), message.value()
            if not message.error() and key and value:
                yield message.timestamp()[1], key, value


def _keyed_record(bootstrap: str, topic: str, timeout: float, newest: bool,
                  window: int = 200) -> tuple[bytes, bytes] | None:
    """The (key, value) of the earliest (``newest``: latest by timestamp over the partitions) record of
    ``topic`` that has both. For the newest, each partition is read from its last ``window`` records,
    the window doubling until one is found or the partition's start is reached."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lakehouse-contracts", "log_level": 0,
                         "enable.auto.commit": False})
    best: tuple[int, bytes, bytes] | None = None
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return None
        for partition in sorted(metadata.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            if not newest:
                for _, key, value in _keyed_records(consumer, topic, partition, low, high, timeout):
                    return key, value
                continue
            size, found = window, None
            while found is None:
                start = max(low, high - size)
                records = list(_keyed_records(consumer, topic, partition, start, high, timeout))
                found = records[-1] if records else None
                if start == low:
                    break
                size *= 2
            if found is not None and (best is None or found[0] >= best[0]):
                best = found
    finally:
        consumer.close()
    return None if best is None else (best[1], best[2])


def last_keyed_record(bootstrap: str, topic: str, timeout: float = 10.0) -> tuple[bytes, bytes] | None:
    """The (key, value) of the newest record of ``topic`` (by timestamp) that has both."""
    return _keyed_record(bootstrap, topic, timeout, newest=True)


def first_keyed_record(bootstrap: str, topic: str, timeout: float = 10.0) -> tuple[bytes, bytes] | None:
    """The (key, value) of the earliest record of ``topic`` that has both (tombstones and truncates skipped)."""
    return _keyed_record(bootstrap, topic, timeout, newest=False)
