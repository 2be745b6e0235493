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

**Fast path** (``LAKEHOUSE_INGEST_PARSER=fast``, the default): a run of JSON values of one
topic partition at consecutive offsets is what a landing file is (line ``i`` at offset
``start + i``), so it goes through the landing files' vectorized parser
(``ingestion.stream.fast_parse``; a tombstone is its ``null`` line); the values that
parser cannot prove valid, and every other record (wire-format Avro, a value holding a raw
newline, a topic without a contract), go through ``parse_kafka_value`` one by one. The rows of both are merged back
into record order, so the output is the one of the Python path.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from ingestion.cdc.contracts import TableContract
from ingestion.cdc.kafka_values import kafka_source_name, parse_kafka_value, wire_schema_id
from ingestion.cdc.parser import BronzeEvent, DeadLetter
from ingestion.sources.schema_registry import SchemaRegistryClient
from ingestion.stream.fast_parse import SEQ, delivery_for, parser_mode
from ingestion.stream.parse import CHUNK_LINES, CHUNKS_DDL, LineParser, merge_in_line_order
from ingestion.stream.worker_gc import freeze_worker_objects

#: One Kafka record in a worker: (topic, partition, offset, value; None for a tombstone).
Record = tuple[str, int, int, bytes | None]
#: The parse stage of a source other than landed files, for ``BatchProcessor``: its micro-batch, the
#: ingestion time and the tables as bronze holds them -> chunk rows (``parse.CHUNKS_SCHEMA``).
Chunker = Callable[[DataFrame, dt.datetime, dict[str, TableContract]], DataFrame]


@dataclass
class _Parsed:
    """What one chunk of records became, each row or dead letter tagged with its record's index."""

    fast: dict[str, list[pa.Table]] = field(default_factory=dict)  # fast-path rows (with SEQ) per table
    events: dict[str, list[tuple[int, BronzeEvent]]] = field(default_factory=dict)
    dead: list[tuple[int, DeadLetter]] = field(default_factory=list)
    tombstones: int = 0


def parse_kafka_batches(batches: Iterator[pa.RecordBatch], ingested_at: dt.datetime,
                        registry_url: str | None = None, mode: str | None = None,
                        contracts: dict[str, TableContract] | None = None,
                        registry_wait: float = 0.0) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: Kafka records -> chunk rows (``parse.CHUNKS_SCHEMA``).

    ``mode``: ``fast`` or ``python`` (see the module docstring); None reads ``LAKEHOUSE_INGEST_PARSER``.
    ``contracts``: the tables as bronze holds them (see ``LineParser``). ``registry_wait``: how long a
    schema lookup waits for a registry that does not answer before its record is a dead letter.
    """
    freeze_worker_objects()
    parser = LineParser(ingested_at, contracts)
    registry = SchemaRegistryClient(registry_url, wait_seconds=registry_wait) if registry_url else None
    fast = (mode or parser_mode()) == "fast"
    records: list[Record] = []
    for batch in batches:
        columns = [batch.column(name).to_pylist() for name in ("topic", "partition", "offset", "value")]
        records.extend(zip(*columns, strict=True))
        while len(records) >= CHUNK_LINES:
            yield _chunk(parser, registry, records[:CHUNK_LINES], fast)
            del records[:CHUNK_LINES]
    if records:
        yield _chunk(parser, registry, records, fast)


def _chunk(parser: LineParser, registry: SchemaRegistryClient | None, records: list[Record],
           fast: bool) -> pa.RecordBatch:
    sizes: dict[str, int] = {}
    for topic, partition, _, value in records:
        key = f"{topic}+{partition}"
        sizes[key] = sizes.get(key, 0) + (len(value) if value is not None else 0)
    parsed = _Parsed()
    one_by_one: list[int] = []  # the records the Python parser takes
    in_run = [False] * len(records)
    for start, end in (_json_runs(records, parser) if fast else []):
        in_run[start:end] = [True] * (end - start)
        one_by_one.extend(_parse_run(parser, records, start, end, parsed))
    one_by_one.extend(index for index, covered in enumerate(in_run) if not covered)
    for index in one_by_one:
        topic, partition, offset, value = records[index]
        result = parse_kafka_value(value, topic=topic, partition=partition, offset=offset,
                                   ingested_at=parser.ingested_at, contracts=parser.topics, schemas=registry)
        if isinstance(result, BronzeEvent):
            result = parser.admit(result, value or b"", topic, partition, offset, kafka_source_name(topic, partition))
        if isinstance(result, BronzeEvent):
            parsed.events.setdefault(result.table, []).append((index, result))
        elif isinstance(result, DeadLetter):
            parsed.dead.append((index, result))
        else:
            parsed.tombstones += 1
    merged = []
    for table in dict.fromkeys([*parsed.fast, *parsed.events]):
        events = sorted(parsed.events.get(table, []), key=lambda pair: pair[0])
        python = parser.seq_table(table, [e for _, e in events], [i for i, _ in events]) if events else None
        rows = merge_in_line_order(parsed.fast.get(table, []), python)
        merged.append((rows.column(SEQ)[0].as_py(), table, rows.drop_columns([SEQ])))
    tables = {table: rows for _, table, rows in sorted(merged, key=lambda m: m[0])}
    dead = [d for _, d in sorted(parsed.dead, key=lambda pair: pair[0])]
    return parser.chunk_batch(sizes, tables, dead, parsed.tombstones)


def _fast_candidate(record: Record, parser: LineParser) -> bool:
    """A record of a contract's topic that can stand for a landed line: a JSON value without a raw
    newline, or a tombstone (the landing zone's ``null`` line)."""
    topic, _, _, value = record
    return topic in parser.fast and (value is None or (wire_schema_id(value) is None and b"\n" not in value))


def _json_runs(records: list[Record], parser: LineParser) -> Iterator[tuple[int, int]]:
    """[start, end) index ranges of fast candidates of one topic partition at consecutive offsets."""
    start = None
    for index, record in enumerate(records):
        if start is not None:
            first = records[start]
            previous = records[index - 1]
            if not (_fast_candidate(record, parser) and record[0] == first[0] and record[1] == first[1]
                    and record[2] == previous[2] + 1):
                yield start, index
                start = None
        if start is None and _fast_candidate(record, parser):
            start = index
    if start is not None:
        yield start, len(records)


def _parse_run(parser: LineParser, records: list[Record], start: int, end: int, parsed: _Parsed) -> list[int]:
    """Parse records ``start..end-1`` (one partition, consecutive offsets) as one landed file through the
    fast path; the record indexes it leaves to the Python parser."""
    topic, partition, offset, _ = records[start]
    lines = [b"null" if value is None else value for _, _, _, value in records[start:end]]
    outcome = parser.fast[topic].parse(lines, b"\n".join(lines) + b"\n",
                                       delivery_for(topic, partition, offset, kafka_source_name(topic, partition)))
    parsed.tombstones += outcome.tombstones
    if outcome.tables:
        if outcome.table is None:  # rows come only from a contract's fast parser, which names its table
            raise ValueError(f"kafka:{topic}/{partition}: the fast path returned rows without their table")
        pieces = parsed.fast.setdefault(outcome.table, [])
        for piece in outcome.tables:
            seq = pc.add(piece.column(SEQ), start)
            pieces.append(piece.set_column(piece.num_columns - 1, SEQ, seq))
    return [start + index for index in outcome.fallback]


def kafka_chunker(registry_url: str | None, registry_wait: float = 0.0) -> Chunker:
    """The parse stage of a Kafka micro-batch for ``BatchProcessor`` (records -> chunk rows).

    The parser mode is read here, in the driver, as for landed files.
    """

    def chunk(records: DataFrame, ingested_at: dt.datetime, contracts: dict[str, TableContract]) -> DataFrame:
        parse = functools.partial(parse_kafka_batches, ingested_at=ingested_at, registry_url=registry_url,
                                  mode=parser_mode(), contracts=contracts, registry_wait=registry_wait)
        return records.mapInArrow(parse, CHUNKS_DDL)

    return chunk
