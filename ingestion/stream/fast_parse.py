"""Vectorized fast path of the line parser: one landing file -> bronze rows with pyarrow.

``ingestion.cdc.parser.parse_line`` (pure Python, one line at a time) is the reference of
the bronze contract. This module produces the same bronze rows for the lines it can
prove valid, and hands every other line to ``parse_line``, so dead letters, tombstones
and edge cases stay exactly those of the Python parser.

Per landing file (one topic = one table contract):

0. **a clean file is read whole** (``_read_clean``): when every line is a shallow ``{...}``
   object or a ``null`` tombstone, the bytes are valid UTF-8 and there is no schema
   wrapper, the file is read in one go with the first line's shape and the *table* is
   checked for what step 1 would search the bytes for (non-finite floats, top-level keys
   of the other shape or of a wrapper); any doubt falls through to step 1;
1. **screen** the lines with cheap byte checks: ``null`` is a tombstone; a candidate
   starts with ``{`` and ends with ``}``, is valid UTF-8, holds no ``NaN``/``Infinity``
   token (Python's decoder rejects them, Arrow's accepts them) and cannot nest deeper than
   the parser's bound (``MAX_JSON_DEPTH`` opening brackets at most); JsonConverter ``{"schema", "payload"}``
   lines are left to Python. Candidates are routed by shape: lines holding ``"__op"``
   to the flattened reader, the others to the envelope reader;
2. **read** each group with ``pyarrow.json.read_json`` and an explicit schema derived
   from the contract (the JSON kind of every needed field is fixed, so a string where a
   number belongs is a read error, never a silent conversion); unknown fields are
   inferred so that schema drift and shape conflicts are seen. A read error (or a row
   count that does not match the line count: two objects on one line) splits the group
   in halves until the bad lines are isolated, within a work budget; isolated lines go
   to Python;
3. **validate and compute** the bronze columns with ``pyarrow.compute``; a row that fails
   any rule of the Python parser (op, row image, primary key, ranges, position fields,
   timestamps) goes to Python.

Only the value encodings the common connectors produce without a schema are handled
here: numbers for int/bigint/double/date (epoch days)/timestamp (connector default
unit)/decimal (``decimal.handling.mode=double`` or ``string``, precision <= 15), JSON
booleans or tinyint(1) 0/1 for booleans. Anything else (ISO text timestamps and dates,
base64 decimals, wrapper lines, drift columns) goes to Python, which stays correct and is
only slower.

``LAKEHOUSE_INGEST_PARSER=python`` turns the fast path off (``parser_mode``).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS, TableContract
from ingestion.cdc.parser import MAX_JSON_DEPTH
from ingestion.cdc.position import (
    BINLOG_INDEX,
    DEGRADED_PREFIX,
    LSN_OR_SEQUENCE,
    PART_WIDTH,
    POSITION_PARTS,
    POSITION_SOURCE_FIELDS,
    SEPARATOR,
    SEQUENCE_FIELD,
    SQLSERVER_LSN,
    SQLSERVER_LSN_PATTERN,
    ZERO_PART,
)
from ingestion.cdc.rules import (
    DATE_EPOCH_DAYS,
    DELETED_OPS,
    INT_RANGES,
    SUPPORTED_OPS,
    TIMESTAMP_EPOCH_MICROS,
    TRUNCATE_OP,
    TX_ID_FIELD,
)
from ingestion.cdc.values import DEFAULT_TIMESTAMP_UNIT, decimal_precision_scale
from ingestion.stream.bronze import arrow_schema

PARSER_ENV = "LAKEHOUSE_INGEST_PARSER"
PARSER_MODES = ("fast", "python")

#: Column of the fast tables holding the line index in the landing file (dropped before writing).
SEQ = "__seq"

_SUPPORTED_OPS = pa.array(SUPPORTED_OPS)
_INT32 = INT_RANGES["int"]
_DAYS = DATE_EPOCH_DAYS
_MICROS = TIMESTAMP_EPOCH_MICROS
_UNIT_FACTOR = {"ms": 1000, "us": 1}
#: A line shorter than this cannot hold more ``{``/``[`` than the parser's nesting bound.
_SHALLOW_LINE = MAX_JSON_DEPTH + 1
#: Lines looked at to pick the JSON kind of boolean columns.
_SNIFF_LINES = 5
#: Arrow JSON block size (a line longer than this is left to Python).
_BLOCK_SIZE = 1 << 20
#: The envelope keys that make Python treat a line as an envelope (never valid in a flattened line).
_ENVELOPE_KEYS = ("op", "before", "after", "source", "payload", "schema")
#: Top-level keys that betray a line of the other shape (or a schema wrapper) in a file read as one shape.
_OTHER_SHAPE_KEYS = {"envelope": frozenset({"__op", "schema", "payload"}), "flattened": frozenset(_ENVELOPE_KEYS)}
_SQLSERVER_LSN = f"^{SQLSERVER_LSN_PATTERN}$"
_BINLOG_INDEX = r"\.(?P<index>[0-9]{1,18})$"
#: A PostgreSQL ``sequence`` exactly as Debezium (Jackson) writes it, elements short enough for int64;
#: any other spelling (spaces, escapes, longer numbers) or a malformed one is left to Python.
_PG_SEQUENCE = r'^\[(?P<commit>null|"[0-9]{1,18}"),(?P<current>null|"[0-9]{1,18}")\]$'


def parser_mode() -> str:
    """``fast`` (default) or ``python``, from ``LAKEHOUSE_INGEST_PARSER``."""
    mode = os.environ.get(PARSER_ENV, "fast").strip().lower() or "fast"
    if mode not in PARSER_MODES:
        raise ValueError(f"{PARSER_ENV} must be one of {', '.join(PARSER_MODES)}, got {mode!r}")
    return mode


@dataclass
class FileOutcome:
    """What the fast path made of one landing file."""

    table: str | None = None  # the contract table of the file (None: no fast path for it)
    tables: list[pa.Table] = field(default_factory=list)  # bronze rows + SEQ, all of ``table``
    fallback: list[int] = field(default_factory=list)  # line indexes left to the Python parser
    tombstones: int = 0


@dataclass(frozen=True)
class _Delivery:
    topic: str
    partition: int
    start_offset: int
    landing_file: str


class FastFileParser:
    """Fast path for the landing files of one contract (see the module docstring)."""

    def __init__(self, contract: TableContract, ingested_at):
        self.contract = contract
        self.ingested_at = ingested_at
        self.connector = contract.connector
        # the contract's and the metadata columns: a line carrying a column bronze added is drift
        # to this path (an unknown field), so it goes to the Python parser
        self.schema = arrow_schema(tuple((c.name, c.type) for c in contract.columns) + BRONZE_METADATA_COLUMNS)
        self.enabled = _supported(contract)
        self.flattened_enabled = self.enabled and not (
            set(contract.column_names) & set(_ENVELOPE_KEYS) or any(n.startswith("__") for n in contract.column_names)
        )

    # -- screening -------------------------------------------------------------------
    def parse(self, lines: list[bytes], content: bytes, delivery: _Delivery) -> FileOutcome:
        outcome = FileOutcome(table=self.contract.name)
        if not self.enabled:
            outcome.fallback = list(range(len(lines)))
            return outcome
        clean = self._read_clean(lines, content)
        if clean is not None:
            shape, table, indexes, outcome.tombstones = clean
            self.convert(shape, table, indexes, delivery, outcome)
            return outcome
        envelope, flattened = self._screen(lines, content, outcome)
        if not self.flattened_enabled:
            outcome.fallback.extend(flattened)
            flattened = []
        all_candidates = len(envelope) + len(flattened) == len(lines)
        for shape, group in (("envelope", envelope), ("flattened", flattened)):
            if group:
                whole = content if all_candidates and len(group) == len(lines) else None
                self._read_group(shape, lines, group, whole, delivery, outcome)
        outcome.fallback.sort()
        return outcome

    def _read_clean(self, lines: list[bytes], content: bytes) -> tuple[str, pa.Table, list[int], int] | None:
        """(shape, table, line indexes, tombstones) of a file read whole when it provably needs no
        screening; else None.

        The common file: every line a shallow ``{...}`` object of the first line's shape or a
        ``null`` tombstone, valid UTF-8, no schema wrapper. Rather than searching the bytes for what the
        screening looks for (``NaN``/``Infinity`` tokens, ``"__op"``, wrappers: ~0.4 s of
        CPU per 200 MB), the file is read and the table is checked instead: Arrow reads
        ``NaN``/``Infinity`` only into floating-point fields (a read error anywhere else),
        and a line of another shape or a wrapper adds its top-level keys as columns. Any
        doubt sends the file to the line-by-line screening, which reads it again.
        """
        if not lines or lines[0].startswith(b'{"schema"') or not (content.isascii() or _is_utf8(content)):
            return None
        tombstones = lines.count(b"null")
        ends = [line[:1] + line[-1:] for line in lines]
        if ends.count(b"{}") + tombstones != len(lines):
            return None
        if max(map(len, lines)) >= _SHALLOW_LINE and any(_maybe_deep(line) for line in lines):
            return None
        indexes = [i for i, end in enumerate(ends) if end == b"{}"] if tombstones else list(range(len(lines)))
        if not indexes:
            return None
        shape = "flattened" if b'"__op"' in lines[indexes[0]] else "envelope"
        if shape == "flattened" and not self.flattened_enabled:
            return None
        objects = [lines[i] for i in indexes[:_SNIFF_LINES]]
        data = b"\n".join([lines[i] for i in indexes]) if tombstones else content
        table = _read(data, self.read_schema(shape, _sniff(objects, shape)), len(indexes))
        if table is None or set(table.column_names) & _OTHER_SHAPE_KEYS[shape] or _has_non_finite(table):
            return None
        return shape, table, indexes, tombstones

    def _screen(self, lines: list[bytes], content: bytes, outcome: FileOutcome) -> tuple[list[int], list[int]]:
        """(envelope candidates, flattened candidates); tombstones counted, the rest to Python.

        Whole-content checks first, so that a clean file costs a few passes at C speed.
        """
        outcome.tombstones = lines.count(b"null")
        ends = [line[:1] + line[-1:] for line in lines]
        candidates = [i for i, e in enumerate(ends) if e == b"{}"]
        rejected: set[int] = set()
        if len(candidates) + outcome.tombstones < len(lines):
            rejected.update(i for i, e in enumerate(ends) if e != b"{}" and lines[i] != b"null")
        if not content.isascii():
            try:
                content.decode("utf-8")
            except UnicodeDecodeError:
                rejected.update(i for i in candidates if not _is_utf8(lines[i]))
        wrapped = [i for i in candidates if lines[i][1:3] == b'"s' and lines[i].startswith(b'{"schema"')]
        rejected.update(wrapped)
        if b"NaN" in content or b"Infinity" in content:
            rejected.update(i for i in candidates if b"NaN" in lines[i] or b"Infinity" in lines[i])
        if max(map(len, lines), default=0) >= _SHALLOW_LINE:
            rejected.update(i for i in candidates if _maybe_deep(lines[i]))
        outcome.fallback.extend(sorted(rejected))
        if rejected:
            candidates = [i for i in candidates if i not in rejected]
        if b'"__op"' not in content:
            return candidates, []
        flat = [b'"__op"' in lines[i] for i in candidates]
        return ([i for i, f in zip(candidates, flat, strict=True) if not f],
                [i for i, f in zip(candidates, flat, strict=True) if f])

    # -- reading ----------------------------------------------------------------------
    def _read_group(self, shape: str, lines: list[bytes], group: list[int], whole: bytes | None,
                    delivery: _Delivery, outcome: FileOutcome) -> None:
        schema = self.read_schema(shape, _sniff([lines[i] for i in group[:_SNIFF_LINES]], shape))
        budget = 2 * len(group)
        pending: list[tuple[list[int], bytes | None]] = [(group, whole)]
        while pending:
            indexes, data = pending.pop()
            table = _read(data if data is not None else b"\n".join([lines[i] for i in indexes]), schema,
                          len(indexes))
            if table is not None:
                self.convert(shape, table, indexes, delivery, outcome)
            elif len(indexes) == 1 or budget <= 0:
                outcome.fallback.extend(indexes)
            else:
                budget -= len(indexes)
                middle = len(indexes) // 2
                pending.append((indexes[middle:], None))
                pending.append((indexes[:middle], None))

    def read_schema(self, shape: str, sniffed: dict[str, str]) -> pa.Schema:
        """The Arrow schema a group of ``shape`` lines (or Avro records) is read with: the fields the
        contract needs, each of a fixed JSON kind (``sniffed``: the kind seen for boolean columns)."""
        row = [pa.field(c.name, _read_type(c.type, sniffed.get(c.name))) for c in self.contract.columns]
        positions = [pa.field(name, _position_type(self.connector, name))
                     for name in dict.fromkeys((*POSITION_SOURCE_FIELDS[self.connector],
                                                TX_ID_FIELD[self.connector]))]
        if shape == "envelope":
            source = pa.struct([pa.field("ts_ms", pa.int64()), pa.field("db", pa.string()),
                                pa.field("table", pa.string()), *positions])
            return pa.schema([pa.field("before", pa.struct(row)), pa.field("after", pa.struct(row)),
                              pa.field("source", source), pa.field("op", pa.string()),
                              pa.field("ts_ms", pa.int64()),
                              pa.field("transaction", pa.struct([pa.field("id", pa.string())]))])
        deleted = pa.bool_() if sniffed.get("__deleted") == "bool" else pa.string()
        meta = [pa.field("__op", pa.string()), pa.field("__deleted", deleted), pa.field("__source_ts_ms", pa.int64()),
                pa.field("__db", pa.string()), pa.field("__table", pa.string())]
        meta += [pa.field("__" + f.name, f.type) for f in positions]
        return pa.schema(row + meta)

    # -- validation and bronze columns ---------------------------------------------------
    def convert(self, shape: str, table: pa.Table, indexes: list[int], delivery: _Delivery,
                outcome: FileOutcome) -> None:
        """Bronze rows of a table read with ``read_schema`` (``indexes``: each row's record index in the
        file) into ``outcome``: the rows that pass every rule, the others to its fallback."""
        parts = self._envelope_parts(table) if shape == "envelope" else self._flattened_parts(table)
        if parts is None:  # drift or a shape conflict somewhere in the group: Python decides
            outcome.fallback.extend(indexes)
            return
        op, image, ok, ts_ms, positions, tx_id, db, source_table = parts
        seq = pa.array(indexes, pa.int64())
        columns, ok = self._row_columns(op, image, ok)
        ok = pc.and_kleene(ok, pc.and_kleene(pc.is_valid(ts_ms), pc.less_equal(ts_ms, _MICROS[1] // 1000)))
        position, ok = self._position(positions, ts_ms, seq, delivery, ok)
        ok = pc.fill_null(ok, False)
        if not pc.all(ok).as_py():
            bad = pc.invert(ok)
            outcome.fallback.extend(pc.filter(seq, bad).to_pylist())
            columns = [pc.filter(c, ok) for c in columns]
            op, ts_ms, position, tx_id, db, source_table, seq = (
                pc.filter(a, ok) for a in (op, ts_ms, position, tx_id, db, source_table, seq))
        if len(seq) == 0:
            return
        outcome.tables.append(self._bronze(columns, op, ts_ms, position, tx_id, db, source_table, seq, delivery))

    def _envelope_parts(self, table: pa.Table):
        after, before = table.column("after"), table.column("before")
        if not (_same_fields(after.type, self.contract.column_names)
                and _same_fields(before.type, self.contract.column_names)):
            return None
        op = table.column("op")
        is_delete = pc.equal(op, "d")
        image_valid = pc.if_else(is_delete, pc.is_valid(before), pc.is_valid(after))
        ok = pc.and_kleene(pc.is_in(op, _SUPPORTED_OPS), pc.or_kleene(pc.equal(op, TRUNCATE_OP), image_valid))
        image = {name: pc.if_else(is_delete, pc.struct_field(before, name), pc.struct_field(after, name))
                 for name in self.contract.column_names}
        source = table.column("source")
        source_ts = pc.struct_field(source, "ts_ms")
        event_ts = table.column("ts_ms")
        # Python: source.ts_ms when a positive integer, else the envelope ts_ms when one, else rejected
        fallback_ts = pc.if_else(_positive(event_ts), event_ts, pa.scalar(None, pa.int64()))
        ts_ms = pc.if_else(_positive(source_ts), source_ts, fallback_ts)
        positions = {name: pc.struct_field(source, name) for name in POSITION_SOURCE_FIELDS[self.connector]}
        tx_id = pc.struct_field(source, TX_ID_FIELD[self.connector])
        tx_id = pc.coalesce(_as_text(tx_id), pc.struct_field(table.column("transaction"), "id"))
        return (op, image, ok, ts_ms, positions, tx_id, pc.struct_field(source, "db"),
                pc.struct_field(source, "table"))

    def _flattened_parts(self, table: pa.Table):
        known = set(self.contract.column_names)
        if any(not name.startswith("__") and name not in known for name in table.column_names):
            return None
        op = table.column("__op")
        ok = pc.is_in(op, _SUPPORTED_OPS)
        deleted = table.column("__deleted")
        if pa.types.is_boolean(deleted.type):
            flag = deleted
        else:
            ok = pc.and_kleene(ok, pc.or_kleene(pc.is_null(deleted), pc.is_in(deleted, pa.array(["true", "false"]))))
            flag = pc.equal(deleted, "true")
        consistent = pc.or_kleene(pc.equal(flag, pc.equal(op, "d")), pc.equal(op, TRUNCATE_OP))
        ok = pc.and_kleene(ok, pc.or_kleene(pc.is_null(deleted), consistent))
        ts_ms = table.column("__source_ts_ms")
        ok = pc.and_kleene(ok, pc.greater_equal(ts_ms, 0))
        image = {name: table.column(name) for name in self.contract.column_names}
        positions = {name: table.column("__" + name) for name in POSITION_SOURCE_FIELDS[self.connector]}
        tx_id = _as_text(table.column("__" + TX_ID_FIELD[self.connector]))
        return op, image, ok, ts_ms, positions, tx_id, table.column("__db"), table.column("__table")

    def _row_columns(self, op, image: dict, ok):
        truncate = pc.equal(op, TRUNCATE_OP)
        columns = []
        for column in self.contract.columns:
            values, valid = _typed(image[column.name], column.type, self.connector)
            if valid is not None:
                ok = pc.and_kleene(ok, pc.or_kleene(truncate, valid))
            if column.name in self.contract.primary_key:
                ok = pc.and_kleene(ok, pc.or_kleene(truncate, pc.is_valid(values)))
            columns.append(pc.if_else(truncate, pa.scalar(None, values.type), values))
        return columns, ok

    def _position(self, positions: dict, ts_ms, seq, delivery: _Delivery, ok):
        parts = []
        for name, kind in POSITION_PARTS[self.connector]:
            part, valid = _position_part(positions, name, kind)
            parts.append(part)
            ok = pc.and_kleene(ok, valid)
        position = pc.binary_join_element_wise(*parts, SEPARATOR)
        has_position = functools.reduce(pc.or_kleene, [pc.is_valid(v) for v in positions.values()])
        if not pc.all(pc.fill_null(has_position, False)).as_py():
            degraded = pc.binary_join_element_wise(
                _number_part(ts_ms)[0], f"{delivery.partition:0{PART_WIDTH}d}",
                _number_part(pc.add(seq, delivery.start_offset))[0], SEPARATOR)
            position = pc.if_else(has_position, position, pc.binary_join_element_wise(DEGRADED_PREFIX, degraded, ""))
            ok = pc.and_kleene(ok, pc.or_kleene(has_position, pc.is_valid(ts_ms)))
        return position, ok

    def _bronze(self, columns, op, ts_ms, position, tx_id, db, source_table, seq, delivery: _Delivery) -> pa.Table:
        rows = len(seq)
        source_ts = pc.cast(pc.multiply(ts_ms, 1000), pa.timestamp("us"))
        meta = {
            "_cdc_op": op,
            "_cdc_is_deleted": pc.is_in(op, pa.array(DELETED_OPS)),
            "_cdc_source_ts": source_ts,
            "_cdc_position": position,
            "_cdc_tx_id": tx_id,
            "_cdc_source_db": pc.fill_null(db, self.contract.database),
            "_cdc_source_table": pc.fill_null(source_table, self.contract.name),
            "_cdc_topic": pa.repeat(delivery.topic, rows),
            "_cdc_kafka_partition": pa.repeat(pa.scalar(delivery.partition, pa.int32()), rows),
            "_cdc_kafka_offset": pc.add(seq, delivery.start_offset),
            "_cdc_landing_file": pa.repeat(delivery.landing_file, rows),
            "_cdc_ingested_at": pa.repeat(pa.scalar(self.ingested_at, pa.timestamp("us")), rows),
            "_cdc_source_date": pc.cast(source_ts, pa.date32()),
        }
        arrays = [*columns, *(meta[name] for name, _ in BRONZE_METADATA_COLUMNS), seq]
        arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
        schema = self.schema.append(pa.field(SEQ, pa.int64()))
        return pa.Table.from_arrays([_cast(a, f.type) for a, f in zip(arrays, schema, strict=True)], schema=schema)


# -- helpers ------------------------------------------------------------------------------
def _position_part(positions: dict, name: str, kind: str):
    """(text, validity) of one position part, as ``ingestion.cdc.position`` renders it (``POSITION_PARTS``)."""
    values = positions[name]
    if kind == BINLOG_INDEX:
        index = pc.struct_field(pc.extract_regex(values, _BINLOG_INDEX), "index")
        text, _ = _number_part(pc.cast(index, pa.int64()))
        return text, pc.or_kleene(pc.is_null(values), pc.is_valid(index))
    if kind == SQLSERVER_LSN:
        valid = pc.or_kleene(pc.is_null(values), pc.match_substring_regex(values, _SQLSERVER_LSN))
        return pc.fill_null(pc.utf8_lower(pc.replace_substring(values, ":", "")), ZERO_PART), valid
    text, valid = _number_part(values)
    if kind == LSN_OR_SEQUENCE:
        # no lsn (incremental snapshot rows): the LSN part comes from the sequence
        sequence = positions[SEQUENCE_FIELD]
        from_sequence, sequence_valid = _sequence_lsn_part(sequence)
        use_sequence = pc.and_(pc.is_null(values), pc.is_valid(sequence))
        valid = pc.and_kleene(valid, pc.or_(pc.invert(use_sequence), sequence_valid))
        text = pc.if_else(use_sequence, from_sequence, text)
    return text, valid


def _supported(contract: TableContract) -> bool:
    """Decimal columns of precision > 15 would need Python's float-repr rounding: left to Python."""
    for column in contract.columns:
        precision_scale = decimal_precision_scale(column.type)
        if precision_scale and precision_scale[0] > 15:
            return False
    return True


def _maybe_deep(line: bytes) -> bool:
    """Whether a line might nest deeper than the parser's bound (``MAX_JSON_DEPTH``): then Python
    decides (a dead letter when it does; a slower bronze row when the brackets were in strings)."""
    return len(line) >= _SHALLOW_LINE and line.count(b"{") + line.count(b"[") > MAX_JSON_DEPTH


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _sniff(lines: list[bytes], shape: str) -> dict[str, str]:
    """JSON kinds (``bool`` or ``number``) of the fields of the first of ``lines`` that is an event.

    Booleans arrive as JSON booleans or as MySQL tinyint(1) 0/1 (and ``__deleted`` as a
    string or a boolean); one connector writes one kind, so the group is read with it.
    A line of the other kind is a read error and goes to Python.
    """
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        image: object = event
        if shape == "envelope":
            image = event.get("after") if isinstance(event.get("after"), dict) else event.get("before")
        if not isinstance(image, dict):
            continue
        return {k: "bool" if isinstance(v, bool) else "number" for k, v in image.items() if isinstance(v, bool | int)}
    return {}


def _read_type(column_type: str, kind: str | None) -> pa.DataType:
    if column_type in ("int", "bigint", "date", "timestamp"):
        return pa.int64()
    if column_type == "boolean":
        return pa.int64() if kind == "number" else pa.bool_()
    if column_type == "double":
        return pa.float64()
    if column_type == "string":
        return pa.string()
    precision_scale = decimal_precision_scale(column_type)
    if precision_scale is None:
        raise ValueError(f"unsupported contract type {column_type!r}")
    return pa.decimal128(*precision_scale)


def _position_type(connector: str, name: str) -> pa.DataType:
    text_fields = {"mysql": ("file", "gtid"), "sqlserver": ("commit_lsn", "change_lsn"),
                   "postgres": (SEQUENCE_FIELD,)}
    return pa.string() if name in text_fields[connector] else pa.int64()


def _read(data: bytes, schema: pa.Schema, lines: int) -> pa.Table | None:
    """The lines as a table, or None when Arrow cannot read them as one object per line."""
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=_BLOCK_SIZE),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"),
        )
    except (pa.ArrowException, ValueError):
        return None
    return table if table.num_rows == lines else None


def _has_non_finite(data: pa.Table | pa.ChunkedArray | pa.Array) -> bool:
    """Whether any floating-point value, at any nesting depth, is NaN or infinite."""
    if isinstance(data, pa.Table):
        return any(_has_non_finite(column) for column in data.columns)
    kind = data.type
    if pa.types.is_floating(kind):
        return not pc.all(pc.fill_null(pc.is_finite(data), True)).as_py()
    if pa.types.is_struct(kind):
        chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
        return any(_has_non_finite(chunk.field(i)) for chunk in chunks for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
        return any(_has_non_finite(chunk.flatten()) for chunk in chunks)
    return False


def _same_fields(struct_type: pa.DataType, names: tuple[str, ...]) -> bool:
    return [struct_type.field(i).name for i in range(struct_type.num_fields)] == list(names)


def _as_text(values):
    return values if pa.types.is_string(values.type) else pc.cast(values, pa.string())


def _number_part(values):
    """``ingestion.cdc.position.number_part`` of an int64 column: text and validity (None -> zeros)."""
    valid = pc.or_kleene(pc.is_null(values), pc.greater_equal(values, 0))
    text = pc.utf8_lpad(pc.cast(values, pa.string()), PART_WIDTH, "0")
    return pc.fill_null(text, ZERO_PART), valid


def _sequence_lsn_part(values):
    """``ingestion.cdc.position.sequence_lsn_part`` of a string column: text and validity (never null).

    Valid only for a sequence in Debezium's own spelling with a non-null element (see
    ``_PG_SEQUENCE``); every other value is invalid here and goes to Python, which decides.
    """
    groups = pc.extract_regex(values, _PG_SEQUENCE)
    commit, current = pc.struct_field(groups, "commit"), pc.struct_field(groups, "current")
    chosen = pc.if_else(pc.equal(current, "null"), commit, current)
    valid = pc.fill_null(pc.not_equal(chosen, "null"), False)
    digits = pc.if_else(valid, pc.utf8_trim(chosen, '"'), pa.scalar(None, pa.string()))
    text, _ = _number_part(pc.cast(digits, pa.int64()))
    return text, valid


def _typed(values, column_type: str, connector: str):
    """(bronze values, validity or None) of one contract column read as ``_read_type``."""
    if column_type == "int":
        return pc.cast(_in_range(values, *_INT32), pa.int32()), _range_ok(values, *_INT32)
    if column_type == "boolean" and pa.types.is_integer(values.type):
        valid = pc.or_kleene(pc.is_null(values), pc.is_in(values, pa.array([0, 1], pa.int64())))
        return pc.cast(pc.if_else(valid, values, pa.scalar(None, pa.int64())), pa.bool_()), valid
    if column_type == "date":
        ok = _range_ok(values, *_DAYS)
        return pc.cast(pc.cast(_in_range(values, *_DAYS), pa.int32()), pa.date32()), ok
    if column_type == "timestamp":
        factor = _UNIT_FACTOR[DEFAULT_TIMESTAMP_UNIT[connector]]
        low, high = -(-_MICROS[0] // factor), _MICROS[1] // factor
        ok = _range_ok(values, low, high)
        micros = pc.multiply(_in_range(values, low, high), factor)
        return pc.cast(micros, pa.timestamp("us")), ok
    if pa.types.is_decimal(values.type):
        # Arrow's JSON reader does not check a decimal's precision (1000000 reads into
        # decimal(8,2)); the contract parser rejects what does not fit
        kind = values.type
        limit = Decimal(10) ** (kind.precision - kind.scale) - Decimal(1).scaleb(-kind.scale)
        return values, _range_ok(values, pa.scalar(-limit, kind), pa.scalar(limit, kind))
    return values, None


def _positive(values):
    return pc.fill_null(pc.greater(values, 0), False)


def _range_ok(values, low, high):
    return pc.or_kleene(pc.is_null(values), pc.and_kleene(pc.greater_equal(values, low), pc.less_equal(values, high)))


def _in_range(values, low: int, high: int):
    """Values outside [low, high] nulled (their rows are rejected; this keeps casts from failing)."""
    return pc.if_else(_range_ok(values, low, high), values, pa.scalar(None, values.type))


def _cast(values, arrow_type: pa.DataType):
    return values if values.type == arrow_type else pc.cast(values, arrow_type)


def delivery_for(topic: str, partition: int, start_offset: int, landing_file: str) -> _Delivery:
    return _Delivery(topic, partition, start_offset, landing_file)


def fast_parsers(contracts: Mapping[str, TableContract], ingested_at) -> dict[str, FastFileParser]:
    """One fast parser per topic of ``contracts`` (a topic -> contract map)."""
    by_table: dict[str, FastFileParser] = {}
    parsers = {}
    for topic, contract in contracts.items():
        if contract.name not in by_table:
            by_table[contract.name] = FastFileParser(contract, ingested_at)
        parsers[topic] = by_table[contract.name]
    return parsers


