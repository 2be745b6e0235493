"""The pure-Python per-line Debezium parser: one landing line -> bronze row, tombstone or dead letter.

It is the reference implementation of the bronze contract (docs/architecture.md, "Bronze contract")
and the test oracle of the vectorized ingestion, so the rules are spelled out here.

Shapes, detected per line:

* **envelope**: ``before``/``after``/``source``/``op``/``ts_ms`` (``transaction``
  optional), bare or inside the JsonConverter wrapper ``{"schema": ..., "payload": ...}``;
  with the wrapper, the ``after``/``before`` field schemas select the value encodings
  and are checked against the contract (``incompatible_schema``);
* **flattened** (ExtractNewRecordState, delete rewrite mode): the row's columns plus
  ``__``-prefixed metadata: ``__op``, ``__source_ts_ms``, ``__deleted`` ("true"/"false"),
  ``__db``, ``__table``, ``__name``, ... and the position fields ``__lsn``, ``__txId``,
  ``__sequence`` (PostgreSQL), ``__file``, ``__pos``, ``__row`` (MySQL), ``__change_lsn``,
  ``__commit_lsn``, ``__event_serial_no`` (SQL Server). Without any of them the event
  gets a degraded position (see ``ingestion.cdc.position``). Inside the JsonConverter
  wrapper, the schema's top-level fields select the value encodings as for an envelope.

Records of a format that carries its own schema (Avro landing files,
``ingestion.cdc.avro_records``) arrive already decoded, in the JsonConverter shape:
``parse_record(payload, schema=...)`` gives exactly what ``parse_line`` gives for the line
``json_converter_line(schema, payload)``, which is also the raw line of its dead letters
(so ``lakehouse dead-letter replay`` re-parses them like any JSON line).

Checks, in order (the first failing one gives the reason): invalid UTF-8 ->
``bad_encoding``; a line that is exactly ``null`` (or a wrapper whose payload is null)
-> ``Tombstone``; topic not in the contracts -> ``unknown_topic``; not JSON ->
``malformed_json``; not a JSON object -> ``incompatible_schema``; no op or an op
outside ``c u d r t m`` -> ``unknown_op``; ``m`` (logical message) -> ``unsupported_op``;
no row image for the op, no source timestamp, a ``__deleted`` that contradicts the op ->
``incompatible_schema``; per contract column in order: an event schema type that cannot
feed the column -> ``incompatible_schema``, a value that does not fit the column type ->
``type_mismatch``; a null or absent primary-key column (not for ``t``) -> ``missing_pk``;
a position field (a PostgreSQL ``sequence`` read for want of ``lsn`` included) or source
timestamp that cannot be rendered -> ``type_mismatch``.
``parse_line`` never raises for a bad line: anything else unexpected is dead-lettered
as ``incompatible_schema`` with the exception in the message. "Not JSON" includes nesting
arrays/objects deeper than ``MAX_JSON_DEPTH`` (64), found on the text before anything
recurses; an added column bronze cannot hold (not an ASCII identifier, a ``_cdc_`` or
``_hoodie`` prefix in any case, a name equal but for case to another column) is
``incompatible_schema``.

Row values: ``c``/``u``/``r`` from ``after``, ``d`` from ``before`` (envelope) or the
flattened row; contract columns absent from the image are None (PostgreSQL REPLICA
IDENTITY DEFAULT deletes carry only the key); columns the contract does not know are
returned in ``extra_columns`` (schema drift) with their raw JSON values. A truncate
(``t``) is a table-level row: every source column None, ``_cdc_is_deleted`` true.
``_cdc_source_ts`` is ``source.ts_ms`` (``__source_ts_ms``); an envelope whose
``source.ts_ms`` is 0 or absent (MySQL 1.x snapshots) uses the envelope ``ts_ms``.
``_cdc_tx_id`` is the connector's own transaction id: PostgreSQL ``txId``, MySQL
``gtid``, SQL Server ``commit_lsn`` (as text), else the envelope ``transaction.id``.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingestion.cdc.contract_generator import schema_type
from ingestion.cdc.contracts import TableContract, topic_map
from ingestion.cdc.landing import LandingFile
from ingestion.cdc.position import (
    POSITION_SOURCE_FIELDS,
    PositionError,
    has_position_fields,
    render_degraded_position,
    render_position,
)
from ingestion.cdc.rules import DELETED_OPS, SUPPORTED_OPS, TRUNCATE_OP, TX_ID_FIELD, UNSUPPORTED_OPS
from ingestion.cdc.schema_policy import EVOLVE, STRICT, TEXT, widens
from ingestion.cdc.values import (
    FieldSchema,
    SchemaMismatch,
    ValueMismatch,
    check_schema_compatible,
    decode_value,
    epoch_to_datetime,
)

#: Dead-letter reason codes (docs/architecture.md, "Bronze contract").
MALFORMED_JSON = "malformed_json"
BAD_ENCODING = "bad_encoding"
MISSING_PK = "missing_pk"
UNKNOWN_OP = "unknown_op"
UNKNOWN_TOPIC = "unknown_topic"
TYPE_MISMATCH = "type_mismatch"
INCOMPATIBLE_SCHEMA = "incompatible_schema"
UNSUPPORTED_OP = "unsupported_op"
#: Kafka values in the Confluent wire format: the registry has no such schema id / did not answer.
UNKNOWN_SCHEMA_ID = "unknown_schema_id"
REGISTRY_UNAVAILABLE = "registry_unavailable"
#: A landing file of a sink format the ingestion does not read (dead-lettered whole).
UNSUPPORTED_FORMAT = "unsupported_format"
#: A landing file deleted after the stream listed it, before it was read (its path is the raw line).
FILE_VANISHED = "file_vanished"
#: A landing file larger than a worker reads (``ingestion.stream.parse.MAX_LANDING_FILE_BYTES``; its path
#: is the raw line).
FILE_TOO_LARGE = "file_too_large"
REASON_CODES = (
    MALFORMED_JSON,
    BAD_ENCODING,
    MISSING_PK,
    UNKNOWN_OP,
    UNKNOWN_TOPIC,
    TYPE_MISMATCH,
    INCOMPATIBLE_SCHEMA,
    UNSUPPORTED_OP,
    UNKNOWN_SCHEMA_ID,
    REGISTRY_UNAVAILABLE,
    UNSUPPORTED_FORMAT,
    FILE_VANISHED,
    FILE_TOO_LARGE,
)

#: Name prefixes (any case) an added column may not take: bronze's metadata and Hudi's meta columns.
_RESERVED_PREFIXES = ("_cdc_", "_hoodie")
#: An added column bronze can hold: an ASCII identifier (Avro field names; the metastore lowercases).
_ADDED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z")

#: The deepest nesting of arrays and objects a line may have (envelope 1, row image 2, a value in
#: it 3 and more). Deeper lines are ``malformed_json`` dead letters, decided on the text before
#: anything recurses (the decoder, ``as_text``'s encoder, ``repr`` in messages). The fast path
#: (``ingestion.stream.fast_parse``) leaves every line that might nest deeper to this parser.
MAX_JSON_DEPTH = 64
#: A JSON string (skipped: brackets inside do not count; an unterminated one runs to the end) or a bracket.
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[][{}]', re.DOTALL)


def nesting_exceeds(line: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a JSON text nests arrays/objects deeper than ``limit``, measured with a counter (no
    recursion). Almost free for almost every line: one with at most ``limit`` ``{``/``[`` cannot."""
    data = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    if data.count(b"{") + data.count(b"[") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKEN.finditer(data):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"}", b"]"):
            depth -= 1
    return False


ENVELOPE = "envelope"
FLATTENED = "flattened"


@dataclass(frozen=True)
class BronzeEvent:
    """One valid change event: ``row`` holds the contract columns then the bronze metadata columns."""

    table: str
    row: dict[str, Any]
    #: the columns the contract does not know, with their raw JSON values (schema drift)
    extra_columns: dict[str, Any] = field(default_factory=dict)
    shape: str = ENVELOPE
    degraded: bool = False
    #: what bronze stores of ``extra_columns`` under the policy ``evolve``: decoded values...
    added_values: dict[str, Any] = field(default_factory=dict)
    #: ...and the bronze type of every column not of its contract type: added columns, widened ones
    column_types: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Tombstone:
    """A Kafka tombstone (line exactly ``null``): skipped and counted."""

    topic: str
    partition: int
    offset: int
    landing_file: str


@dataclass(frozen=True)
class DeadLetter:
    """A line that cannot become a bronze row, with the reason code and a one-line message.

    ``topic`` and ``partition`` are None for a line of a file whose path is not a landing
    file name (``ingestion.stream.parse``): then neither is known, and ``offset`` is the line index.
    """

    reason: str
    message: str
    raw_line: str
    raw_is_base64: bool
    topic: str | None
    partition: int | None
    offset: int
    landing_file: str
    ingested_at: dt.datetime
    table: str | None = None

    def as_row(self) -> dict[str, Any]:
        """The dead-letter table row (column names of ``DEAD_LETTER_COLUMNS``)."""
        return {
            "raw_line": self.raw_line,
            "raw_is_base64": self.raw_is_base64,
            "reason": self.reason,
            "message": self.message,
            "topic": self.topic,
            "table_name": self.table,
            "kafka_partition": self.partition,
            "kafka_offset": self.offset,
            "landing_file": self.landing_file,
            "ingested_at": self.ingested_at,
        }


#: Columns of the dead-letter rows (``DeadLetter.as_row``) with Spark SQL types.
DEAD_LETTER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("raw_line", "string"),
    ("raw_is_base64", "boolean"),
    ("reason", "string"),
    ("message", "string"),
    ("topic", "string"),
    ("table_name", "string"),
    ("kafka_partition", "int"),
    ("kafka_offset", "bigint"),
    ("landing_file", "string"),
    ("ingested_at", "timestamp"),
)

ParseResult = BronzeEvent | Tombstone | DeadLetter


class _Reject(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class _Delivery:
    topic: str
    partition: int
    offset: int
    landing_file: str
    ingested_at: dt.datetime


def parse_line(
    raw: bytes,
    *,
    topic: str,
    partition: int,
    offset: int,
    landing_file: str,
    ingested_at: dt.datetime,
    contracts: Mapping[str, TableContract] | None = None,
) -> ParseResult:
    """Parse one landing line (trailing newline optional) delivered at ``topic``/``partition``/``offset``.

    ``contracts`` maps topics to table contracts (default: ``topic_map()``).
    """
    delivery = _Delivery(topic, partition, offset, landing_file, ingested_at)
    line = raw.rstrip(b"\r\n") if isinstance(raw, bytes) else raw
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as exc:
        encoded = base64.b64encode(line).decode("ascii")
        return _dead(
            delivery,
            BAD_ENCODING,
            f"line is not valid UTF-8 ({exc.reason} at byte {exc.start})",
            encoded,
            True,
            None,
        )
    if text.strip() == "null":
        return Tombstone(topic, partition, offset, landing_file)
    contract = (_default_topics() if contracts is None else contracts).get(topic)
    if contract is None:
        return _dead(delivery, UNKNOWN_TOPIC, f"topic {topic!r} is not in any table contract", text, False, None)
    try:
        if nesting_exceeds(line):
            raise _Reject(MALFORMED_JSON, f"line nests arrays/objects deeper than {MAX_JSON_DEPTH} levels")
        event = _loads(text)
        if _is_wrapper(event) and event["payload"] is None:
            return Tombstone(topic, partition, offset, landing_file)
        return _parse_event(event, contract, delivery)
    except _Reject as rejected:
        return _dead(delivery, rejected.reason, rejected.message, text, False, contract.name)
    except (ValueError, TypeError, ArithmeticError, KeyError, AttributeError, RecursionError) as exc:
        # Safety net: a line must never stop the stream. Any case landing here is a parser gap.
        message = f"event not understood ({type(exc).__name__}: {exc})"
        return _dead(delivery, INCOMPATIBLE_SCHEMA, message, text, False, contract.name)


def parse_record(
    payload: Any,
    *,
    schema: Any,
    topic: str,
    partition: int,
    offset: int,
    landing_file: str,
    ingested_at: dt.datetime,
    contracts: Mapping[str, TableContract] | None = None,
    row_schemas: Mapping[str, FieldSchema] | None = None,
) -> ParseResult:
    """Parse one decoded record: a JsonConverter ``payload`` with its JsonConverter ``schema``.

    The result is the one ``parse_line`` gives for ``json_converter_line(schema, payload)``
    (a None payload is a tombstone); that line is the raw line of a dead letter.
    ``row_schemas`` (``row_field_schemas(schema)``) may be passed when many records share
    one schema.
    """
    delivery = _Delivery(topic, partition, offset, landing_file, ingested_at)
    if payload is None:
        return Tombstone(topic, partition, offset, landing_file)
    contract = (_default_topics() if contracts is None else contracts).get(topic)
    if contract is None:
        message = f"topic {topic!r} is not in any table contract"
        return _dead(delivery, UNKNOWN_TOPIC, message, json_converter_line(schema, payload), False, None)
    try:
        if not isinstance(payload, dict):
            raise _Reject(INCOMPATIBLE_SCHEMA, "the payload of a schema/payload event must be a JSON object")
        schemas = row_field_schemas(schema) if row_schemas is None else row_schemas
        return _parse_payload(payload, schemas, contract, delivery)
    except _Reject as rejected:
        text = json_converter_line(schema, payload)
        return _dead(delivery, rejected.reason, rejected.message, text, False, contract.name)
    except (ValueError, TypeError, ArithmeticError, KeyError, AttributeError, RecursionError) as exc:
        message = f"event not understood ({type(exc).__name__}: {exc})"
        return _dead(delivery, INCOMPATIBLE_SCHEMA, message, json_converter_line(schema, payload), False,
                     contract.name)


_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def json_converter_line(schema: Any, payload: Any) -> str:
    """The JsonConverter line (``schemas.enable=true``) of a payload and its schema."""
    return _LINE_ENCODER.encode({"schema": schema, "payload": payload})


def parse_lines(
    data: bytes,
    landing: LandingFile,
    landing_file: str,
    ingested_at: dt.datetime,
    contracts: Mapping[str, TableContract] | None = None,
) -> Iterator[ParseResult]:
    """Parse every line of one landing file; line ``i`` has offset ``landing.start_offset + i``."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for index, line in enumerate(lines):
        yield parse_line(
            line,
            topic=landing.topic,
            partition=landing.partition,
            offset=landing.start_offset + index,
            landing_file=landing_file,
            ingested_at=ingested_at,
            contracts=contracts,
        )


def _dead(delivery: _Delivery, reason: str, message: str, raw: str, is_b64: bool, table: str | None) -> DeadLetter:
    return DeadLetter(
        reason=reason,
        message=message,
        raw_line=raw,
        raw_is_base64=is_b64,
        topic=delivery.topic,
        partition=delivery.partition,
        offset=delivery.offset,
        landing_file=delivery.landing_file,
        ingested_at=delivery.ingested_at,
        table=table,
    )


@functools.cache
def _default_topics() -> Mapping[str, TableContract]:
    """The project's topic -> contract map, built once (contracts are loaded once per process)."""
    return topic_map()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _loads(text: str) -> Any:
    try:
        return _DECODER.decode(text)
    except (ValueError, RecursionError) as exc:
        raise _Reject(MALFORMED_JSON, f"line is not valid JSON: {exc}") from None


def _is_wrapper(event: Any) -> bool:
    return isinstance(event, dict) and "payload" in event and set(event) <= {"schema", "payload"}


def _parse_event(event: Any, contract: TableContract, delivery: _Delivery) -> BronzeEvent:
    if not isinstance(event, dict):
        raise _Reject(INCOMPATIBLE_SCHEMA, f"a Debezium event must be a JSON object, got {type(event).__name__}")
    schemas: dict[str, FieldSchema] = {}
    if _is_wrapper(event):
        schemas = row_field_schemas(event.get("schema"))
        event = event["payload"]
        if not isinstance(event, dict):
            raise _Reject(INCOMPATIBLE_SCHEMA, "the payload of a schema/payload event must be a JSON object")
    return _parse_payload(event, schemas, contract, delivery)


def _parse_payload(
    event: dict[str, Any], schemas: Mapping[str, FieldSchema], contract: TableContract, delivery: _Delivery
) -> BronzeEvent:
    if "op" in event or {"before", "after", "source"} & set(event):
        return _parse_envelope(event, schemas, contract, delivery)
    if any(key.startswith("__") for key in event):
        return _parse_flattened(event, schemas, contract, delivery)
    raise _Reject(
        UNKNOWN_OP,
        "event has no op: neither a Debezium envelope (op) nor a flattened event (__op); "
        "ExtractNewRecordState needs add.fields=op,source.ts_ms",
    )


def row_field_schemas(schema: Any) -> dict[str, FieldSchema]:
    """Field schemas of the row columns of a JsonConverter schema.

    An envelope's row struct is its ``after`` (else ``before``) field; a flattened event's
    schema (no ``before``/``after``/``op`` field) holds the row columns at the top level.
    """
    if not isinstance(schema, dict):
        return {}
    fields = {f.get("field"): f for f in schema.get("fields") or [] if isinstance(f, dict)}
    row = fields.get("after") or fields.get("before")
    if row is None and fields and not {"before", "after", "op"} & set(fields):
        row = schema
    if not isinstance(row, dict):
        return {}
    return {
        f["field"]: FieldSchema.from_json(f)
        for f in row.get("fields") or []
        if isinstance(f, dict) and isinstance(f.get("field"), str)
    }


def _check_op(op: Any, where: str) -> str:
    if op in UNSUPPORTED_OPS:
        raise _Reject(UNSUPPORTED_OP, f"op {op!r} (logical decoding message) is not supported")
    if op not in SUPPORTED_OPS:
        raise _Reject(
            UNKNOWN_OP,
            f"{where} {op!r} is not one of c, u, d, r, t" if op is not None else f"event has no {where}",
        )
    return op


def _int_ts(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _parse_envelope(
    event: dict[str, Any], schemas: Mapping[str, FieldSchema], contract: TableContract, delivery: _Delivery
) -> BronzeEvent:
    op = _check_op(event.get("op"), "op")
    source = event.get("source") or {}
    if not isinstance(source, dict):
        raise _Reject(INCOMPATIBLE_SCHEMA, "envelope field 'source' must be an object")
    image = _row_image(event, op)
    ts_ms = _int_ts(source.get("ts_ms")) or _int_ts(event.get("ts_ms"))
    if ts_ms is None:
        raise _Reject(INCOMPATIBLE_SCHEMA, "envelope has neither source.ts_ms nor ts_ms")
    positions = {name: source.get(name) for name in POSITION_SOURCE_FIELDS[contract.connector]}
    tx_id = source.get(TX_ID_FIELD[contract.connector])
    if tx_id is None and isinstance(event.get("transaction"), dict):
        tx_id = event["transaction"].get("id")
    meta = _Meta(
        op=op,
        source_ts_ms=ts_ms,
        positions=positions,
        tx_id=tx_id,
        db=source.get("db"),
        table=source.get("table"),
    )
    return _build(image, schemas, meta, contract, delivery, ENVELOPE)


def _row_image(event: dict[str, Any], op: str) -> dict[str, Any] | None:
    if op == TRUNCATE_OP:
        return None
    side = "before" if op == "d" else "after"
    image = event.get(side)
    if not isinstance(image, dict):
        raise _Reject(INCOMPATIBLE_SCHEMA, f"op {op!r} event has no '{side}' row object")
    return image


def _parse_flattened(
    event: dict[str, Any], schemas: Mapping[str, FieldSchema], contract: TableContract, delivery: _Delivery
) -> BronzeEvent:
    op = _check_op(event.get("__op"), "__op")
    deleted = event.get("__deleted")
    if deleted is not None:
        flags = {"true": True, "false": False}
        flag = deleted if isinstance(deleted, bool) else flags.get(deleted) if isinstance(deleted, str) else None
        if flag is None:
            raise _Reject(INCOMPATIBLE_SCHEMA, f'__deleted must be "true" or "false", got {deleted!r}')
        if flag != (op == "d") and op != TRUNCATE_OP:
            raise _Reject(INCOMPATIBLE_SCHEMA, f"__deleted {deleted!r} contradicts __op {op!r}")
    ts_ms = event.get("__source_ts_ms")
    if ts_ms is None:
        raise _Reject(INCOMPATIBLE_SCHEMA, "flattened event has no __source_ts_ms (add.fields=source.ts_ms)")
    if isinstance(ts_ms, bool) or not isinstance(ts_ms, int) or ts_ms < 0:
        raise _Reject(TYPE_MISMATCH, f"__source_ts_ms must be epoch milliseconds, got {ts_ms!r}")
    image = None if op == TRUNCATE_OP else {k: v for k, v in event.items() if not k.startswith("__")}
    connector = contract.connector
    meta = _Meta(
        op=op,
        source_ts_ms=ts_ms,
        positions={name: event.get("__" + name) for name in POSITION_SOURCE_FIELDS[connector]},
        tx_id=event.get("__" + TX_ID_FIELD[connector]),
        db=event.get("__db"),
        table=event.get("__table"),
    )
    return _build(image, schemas, meta, contract, delivery, FLATTENED)


@dataclass(frozen=True)
class _Meta:
    op: str
    source_ts_ms: int
    positions: dict[str, Any]
    tx_id: Any
    db: Any
    table: Any


def _build(
    image: dict[str, Any] | None,
    schemas: Mapping[str, FieldSchema],
    meta: _Meta,
    contract: TableContract,
    delivery: _Delivery,
    shape: str,
) -> BronzeEvent:
    row: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    added: dict[str, Any] = {}
    types: dict[str, str] = {}
    if image is None:
        row = {name: None for name in contract.column_names}
    else:
        for column in contract.columns:
            row[column.name], kind = _typed(column.name, column.type, image, schemas, contract)
            if kind != column.type:
                types[column.name] = kind
        for key in contract.primary_key:
            if row[key] is None:
                raise _Reject(MISSING_PK, f"primary key column {key!r} is null or absent")
        extra = {k: v for k, v in image.items() if k not in row}
        if extra and contract.schema_changes == STRICT:
            raise _Reject(INCOMPATIBLE_SCHEMA, f"column(s) {', '.join(sorted(extra))} not in the contract "
                                               "(schema_changes: strict)")
        if extra:
            _check_added_names(extra, contract)
        for name in extra:
            added[name], types[name] = _added(name, image, schemas, contract)
    degraded = not has_position_fields(contract.connector, meta.positions)
    try:
        if degraded:
            position = render_degraded_position(meta.source_ts_ms, delivery.partition, delivery.offset)
        else:
            position = render_position(contract.connector, meta.positions)
    except PositionError as exc:
        raise _Reject(TYPE_MISMATCH, str(exc)) from None
    try:
        source_ts = epoch_to_datetime(meta.source_ts_ms, "ms")
    except ValueMismatch as exc:
        raise _Reject(TYPE_MISMATCH, f"source timestamp: {exc}") from None
    row.update(
        {
            "_cdc_op": meta.op,
            "_cdc_is_deleted": meta.op in DELETED_OPS,
            "_cdc_source_ts": source_ts,
            "_cdc_position": position,
            "_cdc_tx_id": None if meta.tx_id is None else str(meta.tx_id),
            "_cdc_source_db": str(meta.db) if meta.db is not None else contract.database,
            "_cdc_source_table": str(meta.table) if meta.table is not None else contract.name,
            "_cdc_topic": delivery.topic,
            "_cdc_kafka_partition": delivery.partition,
            "_cdc_kafka_offset": delivery.offset,
            "_cdc_landing_file": delivery.landing_file,
            "_cdc_ingested_at": delivery.ingested_at,
            "_cdc_source_date": source_ts.date(),
        }
    )
    return BronzeEvent(table=contract.name, row=row, extra_columns=extra, shape=shape, degraded=degraded,
                       added_values=added, column_types=types)


def _typed(
    name: str, column_type: str, image: dict[str, Any], schemas: Mapping[str, FieldSchema], contract: TableContract
) -> tuple[Any, str]:
    """The value of a column of known type and the type bronze stores it as: ``column_type``, or
    the wider type the event's schema gives when the policy evolves it (``schema_policy.widens``)."""
    if name not in image:
        return None, column_type
    schema = schemas.get(name)
    kind = column_type
    try:
        if schema is not None:
            evolve = contract.schema_changes == EVOLVE
            try:
                check_schema_compatible(column_type, schema)
                # a decimal of a wider precision passes the check: it widens too (only decimals are
                # looked at here, as this runs for every column of every event carrying a schema)
                wider = schema_type(schema) if evolve and column_type.startswith("decimal(") else None
            except SchemaMismatch:
                wider = schema_type(schema) if evolve else None
                if wider is None or not widens(column_type, wider):
                    raise
            if wider is not None and widens(column_type, wider):
                kind = wider
        return decode_value(image[name], kind, contract.connector, schema), kind
    except SchemaMismatch as exc:
        raise _Reject(INCOMPATIBLE_SCHEMA, f"column {name!r}: {exc}") from None
    except ValueMismatch as exc:
        raise _Reject(TYPE_MISMATCH, f"column {name!r} ({kind}): {exc}") from None


def _added(name: str, image: dict[str, Any], schemas: Mapping[str, FieldSchema],
           contract: TableContract) -> tuple[Any, str]:
    """The bronze value and type of a column the contract lacks (policy ``evolve``): the type the
    table already gave it, else the event schema's type, else text (the value's JSON)."""
    known = contract.evolved_type(name)
    if known == TEXT:
        return as_text(image[name]), TEXT
    if known is not None:
        return _typed(name, known, image, schemas, contract)
    schema = schemas.get(name)
    kind = schema_type(schema) if schema is not None else None
    if kind is None:
        return as_text(image[name]), TEXT
    return _typed(name, kind, image, schemas, contract)


def as_text(value: Any) -> str | None:
    """A value stored in a text column: strings as they are, anything else as its JSON."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _check_added_names(extra: Mapping[str, Any], contract: TableContract) -> None:
    """Reject (``incompatible_schema``) an event whose added columns bronze cannot hold as columns of
    their own: a name that is not an ASCII identifier, one with a reserved prefix (``_cdc_`` as the
    metadata columns, ``_hoodie``; any case), or one equal but for case to a contract or evolved
    column or to another added column (Spark and the metastore resolve names case-insensitively)."""
    taken = {name.lower(): name for name in (*contract.column_names, *(c.name for c in contract.evolved))}
    for name in sorted(extra):
        if not _ADDED_NAME.match(name):
            raise _Reject(INCOMPATIBLE_SCHEMA, f"added column {name!r} is not a plain identifier "
                                               "([A-Za-z_][A-Za-z0-9_]*, at most 128 characters)")
        folded = name.lower()
        if folded.startswith(_RESERVED_PREFIXES):
            raise _Reject(INCOMPATIBLE_SCHEMA, f"added column {name!r} takes a reserved prefix (_cdc_, _hoodie)")
        other = taken.get(folded)
        if other is not None and other != name:
            raise _Reject(INCOMPATIBLE_SCHEMA, f"added column {name!r} differs only in case from column {other!r}")
        taken[folded] = name
