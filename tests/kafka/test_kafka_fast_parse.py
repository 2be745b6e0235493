"""Kafka records through the fast path give exactly the chunks the Python path gives.

The records are a simulated landing zone's lines as Kafka holds them (tombstones as null
values, offsets from the file names), with what a topic partition adds: offset gaps
(compacted or dropped records), a value holding a raw newline, wire-format Avro with no
registry, and records of several partitions in one chunk. The oracle is
``LAKEHOUSE_INGEST_PARSER=python``, which parses every value with ``parse_kafka_value``.
"""

from __future__ import annotations

import contextlib
import json
import random

import pyarrow as pa

from ingestion.stream import kafka_parse
from tests.stream.test_fast_parse import (
    INGESTED_AT,
    assert_same_chunk_batches,
    landing_files,
    simulated_landing,
)


def _records(fmt: str) -> list[tuple[str, int, int, bytes | None]]:
    records = []
    for path in landing_files(simulated_landing(fmt)):
        topic, partition, start = path.stem.rsplit("+", 2)
        for index, line in enumerate(path.read_bytes().split(b"\n")[:-1]):
            records.append((topic, int(partition), int(start) + index, None if line == b"null" else line))
    return records


def _batches(records: list[tuple[str, int, int, bytes | None]], size: int = 700) -> list[pa.RecordBatch]:
    return [pa.RecordBatch.from_pylist(
        [dict(zip(("topic", "partition", "offset", "value"), record, strict=True)) for record in records[i:i + size]],
        schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                          ("value", pa.binary())]))
        for i in range(0, len(records), size)]


def _chunks(records, mode: str) -> list[pa.RecordBatch]:
    return list(kafka_parse.parse_kafka_batches(iter(_batches(records)), INGESTED_AT, None, mode=mode))


def _planted(records):
    """Gaps, a pretty-printed value, an Avro value without a registry, and two partitions interleaved."""
    rng = random.Random(3)
    kept = [r for r in records if rng.random() > 0.02]  # ~2% of the offsets missing
    for index in range(5, len(kept), 997):
        topic, partition, offset, value = kept[index]
        if value is not None and value.startswith(b"{"):
            with contextlib.suppress(ValueError):  # a planted malformed line stays as it is
                kept[index] = (topic, partition, offset, json.dumps(json.loads(value), indent=1).encode())
    topic, partition, offset, _ = kept[10]
    kept.insert(11, (topic, partition, offset + 100_000, b"\x00\x00\x00\x00\x07avro-body"))
    head = kept[:400]
    mixed = [r for pair in zip(head[:200], head[200:], strict=True) for r in pair]
    return mixed + kept[400:]


def test_kafka_records_fast_and_python_give_the_same_chunks():
    for fmt in ("envelope", "mixed"):
        records = _records(fmt)
        fast = _chunks(records, "fast")
        assert_same_chunk_batches(fast, _chunks(records, "python"))
        events = sum(rows for batch in fast for kind, rows in zip(batch.column("kind").to_pylist(),
                                                                    batch.column("rows").to_pylist(), strict=True)
                     if kind == "event")
        assert events > 1000, fmt


def test_gaps_newlines_avro_and_interleaved_partitions_are_the_same_on_both_paths():
    records = _planted(_records("mixed"))
    fast, python = _chunks(records, "fast"), _chunks(records, "python")
    assert_same_chunk_batches(fast, python)
    dead = [row for batch in python for kind, row in zip(batch.column("kind").to_pylist(),
                                                         batch.column("detail").to_pylist(), strict=True)
            if kind == "dead"]
    assert any("registry_unavailable" in detail for detail in dead)


def test_the_fast_path_really_takes_the_runs(monkeypatch):
    """Most values of a clean partition go through the vectorized parser, not parse_kafka_value."""
    records = _records("envelope")
    calls = []
    original = kafka_parse.parse_kafka_value

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(kafka_parse, "parse_kafka_value", counting)
    _chunks(records, "fast")
    assert len(calls) < len(records) / 10, (len(calls), len(records))
