"""Lines -> bronze rows, tombstones and dead letters, in Arrow batches on the executors.

Each landed line is classified by the project's Debezium parser
(``ingestion.cdc.parser.parse_line``), the single implementation of the bronze contract,
inside a ``mapInArrow`` over batches of lines: parsing runs in parallel Python workers
and the results travel as Arrow columns, never as Python rows through the JVM.

The output is one wide schema shared by every kind of line, so a batch is parsed in a
single pass and routed afterwards with column selections:

* ``_kind``: ``event`` | ``dead`` | ``tombstone``; ``_table``: the bronze table;
* the bronze metadata columns (``_cdc_*``), shared by every table;
* ``<table>__<column>``: the typed contract columns of each table (null for other tables);
* ``_extra_json``: schema drift, the columns the contract does not know (a JSON object);
* ``dl__<column>``: the dead-letter row (``dead_letter_id`` + ``DEAD_LETTER_COLUMNS``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator

import pyarrow as pa

from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS, TableContract, topic_map
from ingestion.cdc.landing import LandingPathError, parse_landing_path
from ingestion.cdc.parser import UNKNOWN_TOPIC, BronzeEvent, DeadLetter, Tombstone, parse_line
from ingestion.stream.bronze import DEAD_LETTER_KEY, DEAD_LETTER_TABLE_COLUMNS, arrow_type, bronze_contracts

KIND, TABLE, EXTRA = "_kind", "_table", "_extra_json"
EVENT, DEAD, TOMBSTONE = "event", "dead", "tombstone"
DEAD_PREFIX = "dl__"


def table_column(table: str, column: str) -> str:
    return f"{table}__{column}"


def dead_column(column: str) -> str:
    return DEAD_PREFIX + column


def parsed_schema(contracts: dict[str, TableContract] | None = None) -> pa.Schema:
    """The wide Arrow schema of parsed lines (see the module docstring)."""
    contracts = contracts or bronze_contracts()
    fields = [pa.field(KIND, pa.string()), pa.field(TABLE, pa.string())]
    fields += [pa.field(name, arrow_type(kind)) for name, kind in BRONZE_METADATA_COLUMNS]
    for contract in contracts.values():
        fields += [pa.field(table_column(contract.name, c.name), arrow_type(c.type)) for c in contract.columns]
    fields.append(pa.field(EXTRA, pa.string()))
    fields += [pa.field(dead_column(name), arrow_type(kind)) for name, kind in DEAD_LETTER_TABLE_COLUMNS]
    return pa.schema(fields)


def spark_ddl(schema: pa.Schema) -> str:
    """The Spark DDL string of an Arrow schema made of contract types."""
    names = {
        pa.int32(): "int", pa.int64(): "bigint", pa.string(): "string", pa.float64(): "double",
        pa.bool_(): "boolean", pa.date32(): "date", pa.timestamp("us"): "timestamp",
    }
    parts = []
    for field in schema:
        if pa.types.is_decimal(field.type):
            kind = f"decimal({field.type.precision},{field.type.scale})"
        else:
            kind = names[field.type]
        parts.append(f"`{field.name}` {kind}")
    return ", ".join(parts)


def dead_letter_id(topic: str | None, raw_line: str) -> str:
    """Key of a dead letter: the same bad line re-delivered on a topic is stored once."""
    return hashlib.sha256(f"{topic or ''}\n{raw_line}".encode()).hexdigest()[:32]


class LineParser:
    """Parses batches of (landing_file, line_index, raw) lines into the wide schema."""

    def __init__(self, ingested_at: dt.datetime):
        self.ingested_at = ingested_at
        self.contracts = bronze_contracts()
        self.topics = topic_map()
        self.schema = parsed_schema(self.contracts)
        self._meta_names = [name for name, _ in BRONZE_METADATA_COLUMNS]

    def parse_batch(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        events: dict[str, list[BronzeEvent]] = {}
        dead: list[DeadLetter] = []
        tombstones = 0
        files = batch.column("landing_file").to_pylist()
        indexes = batch.column("line_index").to_pylist()
        raws = batch.column("raw").to_pylist()
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
        for table, table_events in events.items():
            yield self._event_batch(table, table_events)
        if dead:
            yield self._dead_batch(dead)
        if tombstones:
            yield self._filled_batch(tombstones, {KIND: pa.array([TOMBSTONE] * tombstones, pa.string())})

    def _bad_path(self, raw: bytes, landing_file: str, index: int, message: str) -> DeadLetter:
        try:
            text, is_b64 = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            import base64

            text, is_b64 = base64.b64encode(raw).decode("ascii"), True
        return DeadLetter(UNKNOWN_TOPIC, message, text, is_b64, None, None, index, landing_file,
                          self.ingested_at, None)

    def _filled_batch(self, length: int, columns: dict[str, pa.Array]) -> pa.RecordBatch:
        arrays = [columns.get(f.name) if f.name in columns else pa.nulls(length, f.type) for f in self.schema]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _event_batch(self, table: str, events: list[BronzeEvent]) -> pa.RecordBatch:
        count = len(events)
        rows = [e.row for e in events]
        columns: dict[str, pa.Array] = {
            KIND: pa.array([EVENT] * count, pa.string()),
            TABLE: pa.array([table] * count, pa.string()),
        }
        for name in self._meta_names:
            columns[name] = pa.array([r[name] for r in rows], self.schema.field(name).type)
        for column in self.contracts[table].columns:
            out = table_column(table, column.name)
            columns[out] = pa.array([r[column.name] for r in rows], self.schema.field(out).type)
        if any(e.extra_columns for e in events):
            columns[EXTRA] = pa.array(
                [json.dumps(e.extra_columns, sort_keys=True) if e.extra_columns else None for e in events],
                pa.string(),
            )
        return self._filled_batch(count, columns)

    def _dead_batch(self, dead: list[DeadLetter]) -> pa.RecordBatch:
        count = len(dead)
        rows = [d.as_row() for d in dead]
        columns: dict[str, pa.Array] = {KIND: pa.array([DEAD] * count, pa.string())}
        columns[dead_column(DEAD_LETTER_KEY)] = pa.array(
            [dead_letter_id(d.topic, d.raw_line) for d in dead], pa.string()
        )
        for name, _ in DEAD_LETTER_TABLE_COLUMNS[1:]:
            out = dead_column(name)
            columns[out] = pa.array([r[name] for r in rows], self.schema.field(out).type)
        return self._filled_batch(count, columns)


def parse_partition(batches: Iterator[pa.RecordBatch], ingested_at: dt.datetime) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body."""
    parser = LineParser(ingested_at)
    for batch in batches:
        yield from parser.parse_batch(batch)
