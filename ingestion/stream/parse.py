"""Lines -> bronze rows, tombstones and dead letters, as Arrow tables built in Python workers.

Each landed line is classified by the project's Debezium parser
(``ingestion.cdc.parser.parse_line``), the single implementation of the bronze contract, inside
a ``mapInArrow`` over the landed files (``parse_file_batches``: split into lines and parsed in
one pass), so parsing runs in parallel Python workers. By default the vectorized fast path
(``ingestion.stream.fast_parse``: pyarrow's JSON reader and compute kernels, one landing file
at a time) turns the lines it can prove valid into the same bronze rows, and every other line
goes through ``parse_line``; the rows of both are merged back into line order by the one file
loop (``LineParser.file_chunks``), so the output is exactly the one of the pure-Python path
(``LAKEHOUSE_INGEST_PARSER=python``: the same loop with every line given to the event parser).
Their output is compact: one row per (table, worker chunk) holding the rows as an Arrow IPC
stream (``payload``), already in the bronze table's schema, plus one ``files`` row with the
bytes read per landing file. Each row's ``detail`` (JSON) says what the driver needs to plan
the writes without reading a payload: the bytes per landing file (``files``), the drift columns
and the Kafka offset range per (topic, partition) (``event``: ``{"drift": [...], "offsets":
[[topic, partition, min, max], ...]}``), the dead letters per reason (``dead``); ``key_hashes``
holds the hash of each row's record key, from which the driver knows whether a table's rows
repeat a key (``ingestion.stream.repeated_keys``). The payloads stay in Spark: each table's
rows are decoded from them by ``decode_chunks`` on the executors and written by Hudi; no wide
union schema and no per-value conversion through the JVM.

Avro landing files (``.avro``, the S3 sink's AvroFormat) are decoded record by record
(``ingestion.cdc.avro_records.parse_avro_file``) into the JsonConverter shape and parsed by
the same event parser (``parse_record``), or through ``ingestion.stream.fast_avro``. Their rows
join the batch's other rows, in record order (record ``i`` of a file is its line ``i``).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ingestion.cdc.avro_records import parse_avro_file
from ingestion.cdc.contracts import BRONZE_ORDERING_COLUMN, TableContract
from ingestion.cdc.landing import (
    LandingFile,
    LandingPathError,
    UnsupportedLandingFormat,
    is_avro_path,
    is_gzip_path,
    parse_landing_path,
)
from ingestion.cdc.parser import (
    FILE_TOO_LARGE,
    FILE_VANISHED,
    INCOMPATIBLE_SCHEMA,
    UNKNOWN_TOPIC,
    UNSUPPORTED_FORMAT,
    BronzeEvent,
    DeadLetter,
    ParseResult,
    Tombstone,
    as_text,
    parse_line,
)
from ingestion.cdc.schema_policy import TEXT, common_type
from ingestion.stream.bronze import (
    DEAD_LETTER_KEY,
    DEAD_LETTER_TABLE,
    DEAD_LETTER_TABLE_COLUMNS,
    arrow_schema,
    arrow_type,
    bronze_contracts,
    spark_type,
)
from ingestion.stream.fast_avro import AvroOutcome, parse_avro_fast
from ingestion.stream.fast_parse import SEQ, FileOutcome, delivery_for, fast_parsers, parser_mode
from ingestion.stream.repeated_keys import RowSelection, key_hashes, key_types
from ingestion.stream.worker_gc import freeze_worker_objects

EVENT, DEAD, TOMBSTONE, FILES = "event", "dead", "tombstone", "files"

#: Schema of the mapInArrow output: one row per (kind, table) chunk of a worker batch.
CHUNKS_SCHEMA = pa.schema([
    pa.field("kind", pa.string()),
    pa.field("table_name", pa.string()),
    pa.field("rows", pa.int64()),
    pa.field("oldest_source_ts", pa.timestamp("us", tz="UTC")),
    pa.field("detail", pa.string()),
    pa.field("payload", pa.binary()),
    pa.field("key_types", pa.string()),
    pa.field("key_hashes", pa.binary()),
])
CHUNKS_DDL = ("kind string, table_name string, rows bigint, oldest_source_ts timestamp, detail string, "
              "payload binary, key_types string, key_hashes binary")


def dead_letter_id(topic: str | None, raw_line: str) -> str:
    """Key of a dead letter: the same bad line re-delivered on a topic is stored once."""
    return hashlib.sha256(f"{topic or ''}\n{raw_line}".encode()).hexdigest()[:32]


#: Chunk payloads are zstd-compressed Arrow IPC: ~6x fewer bytes through the JVM to the driver
#: for a few milliseconds per 50K rows in the workers (``from_ipc`` reads either form).
IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def raw_text(raw: bytes) -> tuple[str, bool]:
    """A dead letter's ``raw_line`` and ``raw_is_base64`` for ``raw`` (base64 when it is not UTF-8)."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), True


def from_ipc(payload: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(payload)).read_all()


class LineParser:
    """Parses batches of (landing_file, line_index, raw) lines into per-table Arrow tables.

    ``contracts``: the tables as bronze holds them (``TableContract.with_bronze_schema``);
    default the contracts as written.
    """

    def __init__(self, ingested_at: dt.datetime, contracts: dict[str, TableContract] | None = None):
        self.ingested_at = ingested_at
        self.contracts: dict[str, TableContract] = bronze_contracts() if contracts is None else contracts
        self.topics = {topic: contract for contract in self.contracts.values() for topic in contract.topics}
        self.schemas = {name: arrow_schema(c.bronze_columns) for name, c in self.contracts.items()}
        self.dead_schema = arrow_schema(DEAD_LETTER_TABLE_COLUMNS)
        self.fast = fast_parsers(self.topics, ingested_at)
        #: per table, the spelling of each column name (lowercased) the events of this task added
        self._added_spellings: dict[str, dict[str, str]] = {}

    def admit(self, event: BronzeEvent, raw: bytes, topic: str | None, partition: int | None, offset: int,
              landing_file: str) -> BronzeEvent | DeadLetter:
        """``event``, or an ``incompatible_schema`` dead letter when it adds a column an earlier event of
        this task added under another case (``Foo`` after ``foo``): Spark and the metastore see one
        column, bronze would hold two. ``parse_line`` checks the names within one event and against the
        table's columns; this checks them across the events of a task."""
        seen = self._added_spellings.setdefault(event.table, {})
        for name in event.added_values:
            other = seen.get(name.lower(), name)
            if other != name:
                text, is_base64 = raw_text(raw)
                return DeadLetter(INCOMPATIBLE_SCHEMA, f"added column {name!r} differs only in case from column "
                                  f"{other!r} that another event added", text, is_base64, topic, partition, offset,
                                  landing_file, self.ingested_at, event.table)
        for name in event.added_values:
            seen.setdefault(name.lower(), name)
        return event

    def parse(self, files: list[str], indexes: list[int], raws: list[bytes]
              ) -> tuple[dict[str, list[BronzeEvent]], list[DeadLetter], int]:
        events: dict[str, list[BronzeEvent]] = {}
        dead: list[DeadLetter] = []
        tombstones = 0
        landing_cache: dict[str, LandingFile | LandingPathError] = {}
        for landing_file, index, raw in zip(files, indexes, raws, strict=True):
            where = landing_cache.get(landing_file)
            if where is None:
                try:
                    where = parse_landing_path(landing_file)
                except LandingPathError as exc:
                    where = exc
                landing_cache[landing_file] = where
            if isinstance(where, LandingPathError):
                reason = UNSUPPORTED_FORMAT if isinstance(where, UnsupportedLandingFormat) else UNKNOWN_TOPIC
                dead.append(self._bad_path(raw, landing_file, index, str(where), reason))
                continue
            result = parse_line(
                raw, topic=where.topic, partition=where.partition, offset=where.start_offset + index,
                landing_file=landing_file, ingested_at=self.ingested_at, contracts=self.topics,
            )
            if isinstance(result, BronzeEvent):
                result = self.admit(result, raw, where.topic, where.partition, where.start_offset + index,
                                    landing_file)
            if isinstance(result, BronzeEvent):
                events.setdefault(result.table, []).append(result)
            elif isinstance(result, DeadLetter):
                dead.append(result)
            elif isinstance(result, Tombstone):
                tombstones += 1
        return events, dead, tombstones

    def parse_avro(self, landing_file: str, content: bytes) -> AvroOutcome:
        """One Avro landing file through the event parser: its results, no fast rows.

        ``records`` counts the file's record indexes (decoded or lost), the "lines" of the file.
        """
        try:
            where: LandingFile | None = parse_landing_path(landing_file)
            problem = None
        except LandingPathError as exc:
            where, problem = None, str(exc)
        results: list[ParseResult] = list(parse_avro_file(content, where, landing_file, self.ingested_at,
                                                          self.topics, problem))
        start = where.start_offset if where is not None else 0
        records = 0
        for result in results:
            offset = result.row["_cdc_kafka_offset"] if isinstance(result, BronzeEvent) else result.offset
            records = max(records, offset - start + 1)
        return AvroOutcome(FileOutcome(), python=results, records=records)

    def _bad_path(self, raw: bytes, landing_file: str, index: int, message: str,
                  reason: str = UNKNOWN_TOPIC) -> DeadLetter:
        try:
            text, is_b64 = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            text, is_b64 = base64.b64encode(raw).decode("ascii"), True
        return DeadLetter(reason, message, text, is_b64, None, None, index, landing_file,
                          self.ingested_at, None)

    def event_table(self, table: str, events: list[BronzeEvent]) -> pa.Table:
        """The bronze rows of ``table``: its bronze columns (contract, metadata, evolved), then the
        columns these events add, each in the type the events need (``BronzeEvent.column_types``)."""
        types = event_column_types(events)
        schema = self.schemas[table]
        added = sorted(name for name in types if name not in schema.names)
        fields, arrays = [], []
        # added columns after every other: Hudi appends new columns at the end
        for name, kind in [*((f.name, f.type) for f in schema), *((n, None) for n in added)]:
            values = [e.row[name] if name in e.row else e.added_values.get(name) for e in events]
            if name in types:
                kind = arrow_type(types[name])
                if types[name] == TEXT:  # typed in some events, text in others: all text
                    values = [as_text(v) for v in values]
            fields.append(pa.field(name, kind))
            arrays.append(pa.array(values, kind))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def dead_table(self, dead: list[DeadLetter]) -> pa.Table:
        rows = [d.as_row() for d in dead]
        for d, row in zip(dead, rows, strict=True):
            row[DEAD_LETTER_KEY] = dead_letter_id(d.topic, d.raw_line)
        return pa.Table.from_arrays([pa.array([r[f.name] for r in rows], f.type) for f in self.dead_schema],
                                    schema=self.dead_schema)

    def file_chunks(self, files: list[LandedFile], fast: bool = True) -> pa.RecordBatch:
        """Parse whole landing files (``landing_file``, content, lines or None for Avro) into the
        compact chunk rows (see the module docstring).

        With ``fast``, each file goes through the vectorized path first (``fast_parse``,
        ``fast_avro``); what it cannot prove valid, and every line without ``fast``, goes
        through the event parser (``parse``, ``parse_avro``). The rows of both are merged back
        into line order, so the output does not depend on which path read a line.
        """
        file_bytes: dict[str, int] = {}
        fast_tables: dict[str, list[pa.Table]] = {}
        fallback: tuple[list[str], list[int], list[bytes]] = ([], [], [])
        tombstones = 0
        seq_base: dict[str, int] = {}
        base = 0
        avro_events: dict[str, list[BronzeEvent]] = {}
        avro_dead: list[DeadLetter] = []
        for landing_file, content, lines in files:
            seq_base[landing_file] = base
            if lines is None:
                file_bytes[landing_file] = file_bytes.get(landing_file, 0) + len(content)
                avro = self._fast_avro(landing_file, content) if fast else None
                if avro is None:
                    avro = self.parse_avro(landing_file, content)
                tombstones += avro.fast.tombstones
                self._add_fast_tables(fast_tables, avro.fast, base)
                for result in avro.python:
                    if isinstance(result, BronzeEvent):
                        avro_events.setdefault(result.table, []).append(result)
                    elif isinstance(result, DeadLetter):
                        avro_dead.append(result)
                    else:
                        tombstones += 1
                base += avro.records
                continue
            file_bytes[landing_file] = file_bytes.get(landing_file, 0) + sum(map(len, lines)) + len(lines)
            outcome = self._fast_file(landing_file, content, lines) if fast else FileOutcome(
                fallback=list(range(len(lines))))
            tombstones += outcome.tombstones
            self._add_fast_tables(fast_tables, outcome, base)
            fallback[0].extend([landing_file] * len(outcome.fallback))
            fallback[1].extend(outcome.fallback)
            fallback[2].extend([lines[i] for i in outcome.fallback])
            base += len(lines)
        events, dead, fallback_tombstones = self.parse(*fallback)
        for table, table_events in avro_events.items():
            events.setdefault(table, []).extend(table_events)
        dead.extend(avro_dead)
        merged = [self._merged_table(table, fast_tables.get(table, []), events.get(table, []), seq_base)
                  for table in dict.fromkeys([*fast_tables, *events])]
        # tables in the order of their first row, as ``parse`` orders them
        tables = {table: data.drop_columns([SEQ]) for first, table, data in sorted(merged, key=lambda m: m[0])}
        return self.chunk_batch(file_bytes, tables, dead, tombstones + fallback_tombstones)

    @staticmethod
    def _add_fast_tables(fast_tables: dict[str, list[pa.Table]], outcome: FileOutcome, base: int) -> None:
        """A file's fast rows, their ``SEQ`` moved by the lines of the files before it in the chunk."""
        if not outcome.tables:
            return
        if outcome.table is None:  # rows come only from a contract's fast parser, which names its table
            raise ValueError("the fast path returned rows without their table")
        pieces = fast_tables.setdefault(outcome.table, [])
        for piece in outcome.tables:
            seq = pc.add(piece.column(SEQ), base)
            pieces.append(piece.set_column(piece.num_columns - 1, SEQ, seq))

    def _fast_avro(self, landing_file: str, content: bytes) -> AvroOutcome | None:
        """An Avro landing file through the vectorized path (``fast_avro``); None: the event parser reads it."""
        try:
            where = parse_landing_path(landing_file)
        except LandingPathError:
            return None
        fast = self.fast.get(where.topic)
        if fast is None:
            return None
        return parse_avro_fast(fast, content, landing_file, where.topic, where.partition, where.start_offset,
                               self.topics, self.ingested_at)

    def _fast_file(self, landing_file: str, content: bytes, lines: list[bytes]) -> FileOutcome:
        try:
            where = parse_landing_path(landing_file)
        except LandingPathError:
            return FileOutcome(fallback=list(range(len(lines))))
        fast = self.fast.get(where.topic)
        if fast is None:
            return FileOutcome(fallback=list(range(len(lines))))
        return fast.parse(lines, content, delivery_for(where.topic, where.partition, where.start_offset, landing_file))

    def _merged_table(self, table: str, fast: list[pa.Table], events: list[BronzeEvent],
                      seq_base: dict[str, int]) -> tuple[int, str, pa.Table]:
        """(first line, table, rows): fast and Python rows of ``table`` in line order (with ``SEQ``, the
        line's position in the chunk), in the schema ``event_table`` gives."""
        python = None
        if events:
            # a Python row's line: its Kafka offset minus its file's start offset, plus the file's base
            base = {name: seq_base[name] - parse_landing_path(name).start_offset
                    for name in {e.row["_cdc_landing_file"] for e in events}}
            python = self.seq_table(table, events, [base[e.row["_cdc_landing_file"]] + e.row["_cdc_kafka_offset"]
                                                    for e in events])
        merged = merge_in_line_order(fast, python)
        return merged.column(SEQ)[0].as_py(), table, merged

    def seq_table(self, table: str, events: list[BronzeEvent], seq: list[int]) -> pa.Table:
        """``event_table`` of Python-parsed rows plus ``SEQ``: each row's line in the chunk."""
        return self.event_table(table, events).append_column(SEQ, pa.array(seq, pa.int64()))

    def changed_columns(self, table: str, data: pa.Table) -> list[list]:
        """[name, Spark type, first seen] of each column of a chunk of ``table`` that bronze lacks or
        holds in another type; first seen: the position of the chunk's first row with a value in it."""
        known = self.schemas[table]
        return [[f.name, spark_type(f.type), first_seen(data, f.name)] for f in data.schema
                if f.name != SEQ and (f.name not in known.names or known.field(f.name).type != f.type)]

    def chunk_batch(self, file_bytes: dict[str, int], tables: dict[str, pa.Table], dead: list[DeadLetter],
                    tombstones: int) -> pa.RecordBatch:
        """The compact chunk rows of parsed lines (see the module docstring)."""
        kinds: list[str] = [FILES]
        names: list[str | None] = [None]
        counts: list[int] = [0]
        oldest: list[dt.datetime | None] = [None]
        details: list[str | None] = [json.dumps(file_bytes)]
        payloads: list[bytes | None] = [None]
        types: list[str | None] = [None]
        hashes: list[bytes | None] = [None]
        for table, data in tables.items():
            kinds.append(EVENT)
            names.append(table)
            counts.append(data.num_rows)
            oldest.append(pc.min(data.column("_cdc_source_ts")).as_py())
            details.append(json.dumps({"drift": self.changed_columns(table, data), "offsets": offset_ranges(data)}))
            payloads.append(to_ipc(data))
            keys = [*self.contracts[table].primary_key, BRONZE_ORDERING_COLUMN]
            types.append(key_types(data.schema, keys))
            hashes.append(key_hashes(data, keys))
        if dead:
            kinds.append(DEAD)
            names.append(DEAD_LETTER_TABLE)
            counts.append(len(dead))
            oldest.append(None)
            details.append(json.dumps(Counter(d.reason for d in dead)))
            dead_rows = self.dead_table(dead)
            payloads.append(to_ipc(dead_rows))
            types.append(key_types(dead_rows.schema, [DEAD_LETTER_KEY]))
            hashes.append(key_hashes(dead_rows, [DEAD_LETTER_KEY]))
        if tombstones:
            kinds.append(TOMBSTONE)
            names.append(None)
            counts.append(tombstones)
            oldest.append(None)
            details.append(None)
            payloads.append(None)
            types.append(None)
            hashes.append(None)
        return pa.RecordBatch.from_arrays(
            [pa.array(kinds, pa.string()), pa.array(names, pa.string()), pa.array(counts, pa.int64()),
             pa.array(oldest, pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")),
             pa.array(details, pa.string()), pa.array(payloads, pa.binary()), pa.array(types, pa.string()),
             pa.array(hashes, pa.binary())],
            schema=CHUNKS_SCHEMA,
        )


def offset_ranges(data: pa.Table) -> list[list]:
    """[topic, partition, lowest offset, highest offset] of a chunk's rows per Kafka partition
    (what ``ingestion.stream.late_copies`` compares with the offsets bronze committed)."""
    ranges = data.select(["_cdc_topic", "_cdc_kafka_partition", "_cdc_kafka_offset"]) \
        .group_by(["_cdc_topic", "_cdc_kafka_partition"], use_threads=False) \
        .aggregate([("_cdc_kafka_offset", "min"), ("_cdc_kafka_offset", "max")])
    return [[row["_cdc_topic"], row["_cdc_kafka_partition"], row["_cdc_kafka_offset_min"],
             row["_cdc_kafka_offset_max"]] for row in ranges.to_pylist()
            if None not in (row["_cdc_topic"], row["_cdc_kafka_partition"], row["_cdc_kafka_offset_min"])]


def merge_in_line_order(fast: list[pa.Table], python: pa.Table | None) -> pa.Table:
    """The rows of one table from the fast path (``fast``) and the Python parser (``python``),
    each with ``SEQ``, in ``SEQ`` order; the Python rows' schema (with their drift columns) wins."""
    pieces = list(fast)
    if python is not None:
        pieces = [_with_columns(piece, python.schema) for piece in pieces] + [python]
    merged = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
    if len(pieces) > 1 and not _ascending(merged.column(SEQ)):
        merged = merged.take(pc.sort_indices(merged.column(SEQ)))
    return merged


def _with_columns(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` in ``schema``: columns it lacks (added by other rows) are nulls; the others are
    cast to the schema's type (a widened column, an added column other rows made text)."""
    return pa.Table.from_arrays(
        [_column_as(table.column(f.name), f.type) if f.name in table.column_names
         else pa.nulls(table.num_rows, f.type) for f in schema],
        schema=schema,
    )


def _column_as(column: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    if column.type == kind:
        return column
    if pa.types.is_string(kind):  # text: as the parser renders a value in a text column
        return pa.chunked_array([pa.array([as_text(v) for v in column.to_pylist()], kind)])
    return column.cast(kind)


def first_seen(data: pa.Table, column: str) -> dict:
    """The position (topic, Kafka partition and offset, landing file, source time) of the first row of
    ``data`` holding a value in ``column`` (its first row when none does): where a change was seen."""
    valid = pc.is_valid(data.column(column))
    index = pc.index(valid, True).as_py()
    row = data.slice(index if index >= 0 else 0, 1).select(
        ["_cdc_topic", "_cdc_kafka_partition", "_cdc_kafka_offset", "_cdc_landing_file", "_cdc_source_ts"]
    ).to_pylist()[0]
    source_ts = row["_cdc_source_ts"]
    return {"topic": row["_cdc_topic"], "partition": row["_cdc_kafka_partition"], "offset": row["_cdc_kafka_offset"],
            "landing_file": row["_cdc_landing_file"],
            "source_ts": source_ts.isoformat() if source_ts is not None else None}


def event_column_types(events: list[BronzeEvent]) -> dict[str, str]:
    """Per column, the type that holds every event's value (``schema_policy.common_type``)."""
    types: dict[str, str] = {}
    for event in events:
        for name, kind in event.column_types.items():
            types[name] = common_type(types[name], kind) if name in types else kind
    return types


def _ascending(values: pa.ChunkedArray) -> bool:
    """Whether the line numbers are strictly ascending (pieces of files read whole arrive in line order)."""
    flat = values.combine_chunks()
    return len(flat) < 2 or pc.all(pc.greater(flat[1:], flat[:-1])).as_py()


#: Lines parsed before a worker emits its chunks (bounds worker memory on big files).
CHUNK_LINES = 50_000
#: An Avro file counts as one line per this many bytes towards ``CHUNK_LINES`` (its records
#: are counted only when decoded; a Debezium record takes some 100 bytes or more).
AVRO_BYTES_PER_LINE = 64

#: A landed file in a worker: (landing path, content, lines; None for an Avro file).
LandedFile = tuple[str, bytes, list[bytes] | None]


def parse_file_batches(batches: Iterator[pa.RecordBatch], landing: str, ingested_at: dt.datetime,
                       mode: str | None = None, contracts: dict[str, TableContract] | None = None
                       ) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body over landed files (``path``, optionally ``content``): read, split and parse in one pass.

    Without a ``content`` column (a local landing zone, ``landing.reads_in_workers``) the
    worker reads each file itself: the bytes then never go through the JVM (Spark's
    binaryFile source would read them, copy them into Arrow batches and send them over
    the worker socket, ~2 s per 200 MB); with one (other file systems) Spark read them.
    Splitting here keeps the bytes in the worker (no round trip of every line through the
    JVM); lines keep their raw bytes (see ``ingestion.sources.landing``). ``mode`` is
    ``fast`` (``ingestion.stream.fast_parse``, falling back to the Python parser line by
    line) or ``python``; None reads ``LAKEHOUSE_INGEST_PARSER`` (default fast). ``contracts``:
    the tables as bronze holds them (see ``LineParser``).
    """
    from ingestion.sources.landing import local_file_path, relative_landing_path

    freeze_worker_objects()
    parser = LineParser(ingested_at, contracts)
    fast = (mode or parser_mode()) == "fast"
    files: list[LandedFile] = []
    lines = 0
    for batch in batches:
        paths = batch.column("path").to_pylist()
        if "content" in batch.schema.names:
            contents: Iterator[bytes | OversizedFile | None] = iter(batch.column("content").to_pylist())
        else:
            contents = (_read_file(local_file_path(path)) for path in paths)
        for path, content in zip(paths, contents, strict=True):
            if content is None:  # deleted after Spark listed it: the driver dead-letters it (file_vanished)
                continue
            relative = relative_landing_path(path, landing)
            if isinstance(content, OversizedFile):
                dead = oversized_file(relative, content.size, ingested_at, parser.topics)
                yield parser.chunk_batch({relative: content.size}, {}, [dead], 0)
                continue
            if is_avro_path(relative):
                files.append((relative, content, None))
                lines += 1 + len(content) // AVRO_BYTES_PER_LINE
            else:
                plain = _gunzip(content) if is_gzip_path(relative) else content
                if plain is None or _unsupported_format(relative):
                    # one dead letter holding the whole file, named in it (unsupported_format; a
                    # damaged gzip archive: bad_encoding): never skipped, nothing dropped
                    files.append((relative, content, [content]))
                    lines += 1
                else:
                    pieces = plain.split(b"\n")
                    if pieces and pieces[-1] == b"":
                        pieces.pop()
                    files.append((relative, plain, pieces))
                    lines += len(pieces)
            if lines >= CHUNK_LINES:
                yield parser.file_chunks(files, fast)
                files, lines = [], 0
    if files:  # empty files too: the driver tells a file read empty from one never read (file_vanished)
        yield parser.file_chunks(files, fast)


def _unsupported_format(landing_file: str) -> bool:
    """A landing file of a sink format the ingestion does not read (dead-lettered whole, never skipped)."""
    try:
        parse_landing_path(landing_file)
    except UnsupportedLandingFormat:
        return True
    except LandingPathError:
        return False
    return False


#: The most bytes a gzip landing file may decompress to (an S3-sink file holds flush.size records,
#: a few MB to some tens): a larger one is dead-lettered whole like a damaged archive, before the
#: worker holds it (a decompression bomb: 1 MB of gzip inflates to ~1 GB).
MAX_GUNZIPPED_BYTES = 256 << 20


def _gunzip(content: bytes, limit: int = MAX_GUNZIPPED_BYTES) -> bytes | None:
    """The decompressed bytes of a gzip landing file (``.json.gz``, ``.bin.gz``, members concatenated
    as ``gzip.decompress`` does); None when damaged or larger than ``limit``."""
    out = bytearray()
    data = content
    try:
        while data:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip header and CRC/size trailer checked
            out += inflater.decompress(data, limit + 1 - len(out))
            if len(out) > limit or inflater.unconsumed_tail or not inflater.eof:
                return None  # over the limit, or truncated
            data = inflater.unused_data.lstrip(b"\x00")  # next member; trailing zero padding ignored
    except zlib.error:
        return None
    return bytes(out)


#: The most bytes a landing file read by the workers may hold (an S3-sink file holds flush.size
#: records: a few MB to some tens). A larger one is not read: one ``file_too_large`` dead letter
#: names it, instead of a worker running out of memory on every run.
MAX_LANDING_FILE_BYTES = 1 << 30


@dataclass(frozen=True)
class OversizedFile:
    """A landing file larger than ``MAX_LANDING_FILE_BYTES``: left unread."""

    size: int


def _read_file(path: str, limit: int = MAX_LANDING_FILE_BYTES) -> bytes | OversizedFile | None:
    """The file's bytes; None when it is gone (deleted after Spark listed it); ``OversizedFile`` beyond ``limit``."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                return OversizedFile(size)
            return handle.read()
    except FileNotFoundError:
        return None


def whole_file_dead_letter(landing_file: str, reason: str, message: str, ingested_at: dt.datetime,
                           topics: dict[str, TableContract]) -> DeadLetter:
    """The dead letter of a landing file none of whose lines could be read.

    ``raw_line`` holds the file's path (so two such files are two dead letters); topic, partition and
    offset come from its name when it is a landing name.
    """
    try:
        where = parse_landing_path(landing_file)
        topic, partition, offset = where.topic, where.partition, where.start_offset
    except LandingPathError:
        topic, partition, offset = None, None, 0
    table = topics[topic].name if topic in topics else None
    return DeadLetter(reason, message, landing_file, False, topic, partition, offset, landing_file, ingested_at, table)


def vanished_file(landing_file: str, ingested_at: dt.datetime, topics: dict[str, TableContract]) -> DeadLetter:
    """The dead letter of a landing file the batch planned but could not read (deleted in between)."""
    return whole_file_dead_letter(
        landing_file, FILE_VANISHED, "the landing file was deleted after the stream listed it and before it was "
        "read: its records are in no table; land it again under a new path to ingest them", ingested_at, topics)


def oversized_file(landing_file: str, size: int, ingested_at: dt.datetime,
                   topics: dict[str, TableContract]) -> DeadLetter:
    """The dead letter of a landing file too large to read (``MAX_LANDING_FILE_BYTES``)."""
    return whole_file_dead_letter(
        landing_file, FILE_TOO_LARGE, f"the landing file holds {size} bytes, more than the "
        f"{MAX_LANDING_FILE_BYTES} a landing file may: not read; split it (the sink's flush.size) and land the "
        "parts under new names", ingested_at, topics)


def decode_chunks(batches: Iterator[pa.RecordBatch], table: str, schema: pa.Schema,
                  selection: RowSelection | None = None) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the rows of ``table`` in ``schema`` from the chunk rows (``table_name``, ``payload``).

    ``schema`` is the table's bronze columns plus the batch's added ones, in the types the
    write needs; a chunk without some column gets nulls there, a narrower type is cast.
    ``selection``: only the rows it selects (default all).
    """
    freeze_worker_objects()
    for batch in batches:
        for name, payload in zip(batch.column("table_name").to_pylist(), batch.column("payload").to_pylist(),
                                 strict=True):
            if name != table or payload is None:
                continue
            rows = from_ipc(payload)
            if selection is not None:
                rows = selection.rows(rows)
            yield from _with_columns(rows, schema).cast(utc_timestamps(schema)).to_batches()


def utc_timestamps(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its naive timestamps (UTC by convention) marked UTC: Spark's ``timestamp``."""
    return pa.schema([pa.field(f.name, pa.timestamp(f.type.unit, tz="UTC"))
                      if pa.types.is_timestamp(f.type) and f.type.tz is None else f for f in schema])
