"""Lines -> bronze rows, tombstones and dead letters, as Arrow tables built in Python workers.

Each landed line is classified by the project's Debezium parser
(``ingestion.cdc.parser.parse_line``), the single implementation of the bronze contract,
inside a ``mapInArrow`` over the landed files (``parse_file_batches``: split into lines
and parsed in one pass), so parsing runs in parallel Python workers. Their output is
compact: one row per (table, worker chunk) holding the rows as an Arrow IPC stream
(``payload``), already in the bronze table's schema, plus one ``files`` row with the
bytes read per landing file. The driver collects these few blobs and hands per-table
Arrow tables to the Hudi writer; no wide union schema and no per-value conversion
through the JVM.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from collections.abc import Iterator

import pyarrow as pa

from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS, TableContract, topic_map
from ingestion.cdc.landing import LandingPathError, parse_landing_path
from ingestion.cdc.parser import UNKNOWN_TOPIC, BronzeEvent, DeadLetter, Tombstone, parse_line
from ingestion.stream.bronze import (
    DEAD_LETTER_KEY,
    DEAD_LETTER_TABLE,
    DEAD_LETTER_TABLE_COLUMNS,
    arrow_schema,
    bronze_contracts,
)

EVENT, DEAD, TOMBSTONE, FILES = "event", "dead", "tombstone", "files"

#: Schema of the mapInArrow output: one row per (kind, table) chunk of a worker batch.
CHUNKS_SCHEMA = pa.schema([
    pa.field("kind", pa.string()),
    pa.field("table_name", pa.string()),
    pa.field("rows", pa.int64()),
    pa.field("oldest_source_ts", pa.timestamp("us")),
    pa.field("payload", pa.binary()),
])
CHUNKS_DDL = "kind string, table_name string, rows bigint, oldest_source_ts timestamp, payload binary"


def dead_letter_id(topic: str | None, raw_line: str) -> str:
    """Key of a dead letter: the same bad line re-delivered on a topic is stored once."""
    return hashlib.sha256(f"{topic or ''}\n{raw_line}".encode()).hexdigest()[:32]


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(payload: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(payload)).read_all()


def _drift_text(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class LineParser:
    """Parses batches of (landing_file, line_index, raw) lines into per-table Arrow tables."""

    def __init__(self, ingested_at: dt.datetime):
        self.ingested_at = ingested_at
        self.contracts: dict[str, TableContract] = bronze_contracts()
        self.topics = topic_map()
        self.schemas = {name: arrow_schema(c.bronze_columns) for name, c in self.contracts.items()}
        self.dead_schema = arrow_schema(DEAD_LETTER_TABLE_COLUMNS)

    def parse(self, files: list[str], indexes: list[int], raws: list[bytes]
              ) -> tuple[dict[str, list[BronzeEvent]], list[DeadLetter], int]:
        events: dict[str, list[BronzeEvent]] = {}
        dead: list[DeadLetter] = []
        tombstones = 0
        landing_cache: dict[str, object] = {}
        for landing_file, index, raw in zip(files, indexes, raws, strict=True):
            where = landing_cache.get(landing_file)
            if where is None:
                try:
                    where = parse_landing_path(landing_file)
                except LandingPathError as exc:
                    where = exc
                landing_cache[landing_file] = where
            if isinstance(where, LandingPathError):
                dead.append(self._bad_path(raw, landing_file, index, str(where)))
                continue
            result = parse_line(
                raw, topic=where.topic, partition=where.partition, offset=where.start_offset + index,
                landing_file=landing_file, ingested_at=self.ingested_at, contracts=self.topics,
            )
            if isinstance(result, BronzeEvent):
                events.setdefault(result.table, []).append(result)
            elif isinstance(result, DeadLetter):
                dead.append(result)
            elif isinstance(result, Tombstone):
                tombstones += 1
        return events, dead, tombstones

    def _bad_path(self, raw: bytes, landing_file: str, index: int, message: str) -> DeadLetter:
        try:
            text, is_b64 = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            text, is_b64 = base64.b64encode(raw).decode("ascii"), True
        return DeadLetter(UNKNOWN_TOPIC, message, text, is_b64, None, None, index, landing_file,
                          self.ingested_at, None)

    def event_table(self, table: str, events: list[BronzeEvent]) -> pa.Table:
        """The bronze rows of ``table`` (contract columns, drift columns as text, metadata)."""
        schema = self.schemas[table]
        rows = [e.row for e in events]
        arrays = [pa.array([r[f.name] for r in rows], f.type) for f in schema]
        fields = list(schema)
        drift_names = sorted({k for e in events for k in e.extra_columns if _safe_name(k)})
        if drift_names:
            contract_count = len(self.contracts[table].columns)
            for offset, name in enumerate(drift_names):
                values = [_drift_text(e.extra_columns.get(name)) for e in events]
                arrays.insert(contract_count + offset, pa.array(values, pa.string()))
                fields.insert(contract_count + offset, pa.field(name, pa.string()))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def dead_table(self, dead: list[DeadLetter]) -> pa.Table:
        rows = [d.as_row() for d in dead]
        for d, row in zip(dead, rows, strict=True):
            row[DEAD_LETTER_KEY] = dead_letter_id(d.topic, d.raw_line)
        return pa.Table.from_arrays([pa.array([r[f.name] for r in rows], f.type) for f in self.dead_schema],
                                    schema=self.dead_schema)

    def chunks(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Parse one batch of lines into the compact chunk rows (see the module docstring)."""
        files, raws = batch.column("landing_file").to_pylist(), batch.column("raw").to_pylist()
        events, dead, tombstones = self.parse(files, batch.column("line_index").to_pylist(), raws)
        file_bytes: dict[str, int] = {}
        for landing_file, raw in zip(files, raws, strict=True):
            file_bytes[landing_file] = file_bytes.get(landing_file, 0) + len(raw) + 1
        kinds, tables, counts, oldest, payloads = [FILES], [None], [0], [None], [json.dumps(file_bytes).encode()]
        for table, table_events in events.items():
            kinds.append(EVENT)
            tables.append(table)
            counts.append(len(table_events))
            oldest.append(min(e.row["_cdc_source_ts"] for e in table_events))
            payloads.append(to_ipc(self.event_table(table, table_events)))
        if dead:
            kinds.append(DEAD)
            tables.append(DEAD_LETTER_TABLE)
            counts.append(len(dead))
            oldest.append(None)
            payloads.append(to_ipc(self.dead_table(dead)))
        if tombstones:
            kinds.append(TOMBSTONE)
            tables.append(None)
            counts.append(tombstones)
            oldest.append(None)
            payloads.append(None)
        return pa.RecordBatch.from_arrays(
            [pa.array(kinds, pa.string()), pa.array(tables, pa.string()), pa.array(counts, pa.int64()),
             pa.array(oldest, pa.timestamp("us")), pa.array(payloads, pa.binary())],
            schema=CHUNKS_SCHEMA,
        )


def _safe_name(name: str) -> bool:
    """Drift columns become bronze columns: only plain identifiers are carried."""
    metadata = {n for n, _ in BRONZE_METADATA_COLUMNS}
    return name.isidentifier() and name.isascii() and not name.startswith("_hoodie") and name not in metadata


#: Lines parsed before a worker emits its chunks (bounds worker memory on big files).
CHUNK_LINES = 50_000


def parse_file_batches(batches: Iterator[pa.RecordBatch], landing: str,
                       ingested_at: dt.datetime) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body over landed files (``path``, ``content``): split and parse in one pass.

    Splitting here keeps the bytes in the worker (no round trip of every line through the
    JVM); lines keep their raw bytes (see ``ingestion.stream.landing``).
    """
    from ingestion.stream.landing import relative_landing_path

    parser = LineParser(ingested_at)
    files: list[str] = []
    indexes: list[int] = []
    raws: list[bytes] = []
    for batch in batches:
        for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist(),
                                 strict=True):
            pieces = content.split(b"\n")
            if pieces and pieces[-1] == b"":
                pieces.pop()
            files.extend([relative_landing_path(path, landing)] * len(pieces))
            indexes.extend(range(len(pieces)))
            raws.extend(pieces)
            if len(raws) >= CHUNK_LINES:
                yield parser.chunks(_lines_batch(files, indexes, raws))
                files, indexes, raws = [], [], []
    if raws:
        yield parser.chunks(_lines_batch(files, indexes, raws))


def _lines_batch(files: list[str], indexes: list[int], raws: list[bytes]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(files, pa.string()), pa.array(indexes, pa.int32()), pa.array(raws, pa.binary())],
        names=["landing_file", "line_index", "raw"],
    )
