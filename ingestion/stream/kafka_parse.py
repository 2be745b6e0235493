"""Kafka records -> the compact chunk rows of ``ingestion.stream.parse``, in the Python workers.

The ``mapInArrow`` body over the records of a micro-batch (``topic``, ``partition``,
``offset``, ``value``): each value goes through ``ingestion.cdc.kafka_values`` (Debezium
JSON through ``parse_line``, Confluent wire-format Avro through the registry and
``parse_record``: the one event parser), and the results become the same chunk rows a
landing file gives (``LineParser.chunk_batch``), so the rest of the batch (decode, first
delivery per key, exactly-once Hudi commits, dead letters) is the landing path's own.
The ``files`` detail counts the value bytes per ``<topic>+<partition>``. Kafka offsets are
real here: ``_cdc_kafka_offset`` is the record's offset, ``_cdc_landing_file`` names the
topic partition (``kafka:<topic>/<partition>``).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from ingestion.cdc.kafka_values import parse_kafka_value
from ingestion.cdc.parser import BronzeEvent, DeadLetter
from ingestion.sources.schema_registry import SchemaRegistryClient
from ingestion.stream.parse import CHUNK_LINES, CHUNKS_DDL, LineParser


def parse_kafka_batches(batches: Iterator[pa.RecordBatch], ingested_at: dt.datetime,
                        registry_url: str | None = None) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: Kafka records -> chunk rows (``parse.CHUNKS_SCHEMA``)."""
    parser = LineParser(ingested_at)
    registry = SchemaRegistryClient(registry_url) if registry_url else None
    events: dict[str, list[BronzeEvent]] = {}
    dead: list[DeadLetter] = []
    tombstones = records = 0
    sizes: dict[str, int] = {}
    for batch in batches:
        columns = [batch.column(name).to_pylist() for name in ("topic", "partition", "offset", "value")]
        for topic, partition, offset, value in zip(*columns, strict=True):
            key = f"{topic}+{partition}"
            sizes[key] = sizes.get(key, 0) + (len(value) if value is not None else 0)
            result = parse_kafka_value(value, topic=topic, partition=partition, offset=offset,
                                       ingested_at=ingested_at, contracts=parser.topics, schemas=registry)
            if isinstance(result, BronzeEvent):
                events.setdefault(result.table, []).append(result)
            elif isinstance(result, DeadLetter):
                dead.append(result)
            else:
                tombstones += 1
            records += 1
            if records >= CHUNK_LINES:
                yield _chunk(parser, sizes, events, dead, tombstones)
                events, dead, tombstones, records, sizes = {}, [], 0, 0, {}
    if records:
        yield _chunk(parser, sizes, events, dead, tombstones)


def _chunk(parser: LineParser, sizes: dict[str, int], events: dict[str, list[BronzeEvent]],
           dead: list[DeadLetter], tombstones: int) -> pa.RecordBatch:
    tables = {table: parser.event_table(table, table_events) for table, table_events in events.items()}
    return parser.chunk_batch(sizes, tables, dead, tombstones)


def kafka_chunker(registry_url: str | None) -> Callable[[DataFrame, dt.datetime], DataFrame]:
    """The parse stage of a Kafka micro-batch for ``BatchProcessor`` (records -> chunk rows)."""

    def chunk(records: DataFrame, ingested_at: dt.datetime) -> DataFrame:
        parse = functools.partial(parse_kafka_batches, ingested_at=ingested_at, registry_url=registry_url)
        return records.mapInArrow(parse, CHUNKS_DDL)

    return chunk
