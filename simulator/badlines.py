"""Bad landing lines for ``--inject-bad``: one kind per dead-letter reason, built from real rows."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from ingestion.cdc.avro_records import decode_schema
from ingestion.cdc.contracts import Column, TableContract
from simulator.avro import AvroItem, AvroRowEncoder
from simulator.encode import ENVELOPE, RowEncoder

#: A topic no contract lists (its lines must be dead-lettered as unknown_topic).
UNKNOWN_TOPIC = "tickit.ecomm.audit_log"

#: Injected kinds, in rotation order, each with the reason code the parser must give.
BAD_KINDS = (
    "malformed_json",
    "bad_encoding",
    "missing_pk",
    "unknown_op",
    "type_mismatch",
    "incompatible_schema",
    "unknown_topic",
    "unsupported_op",
)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def bad_line(
    kind: str,
    rng: random.Random,
    contract: TableContract,
    encoder: RowEncoder,
    row: dict[str, Any],
    source: dict[str, Any],
    ts_ms: int,
) -> bytes:
    """A line of ``kind`` for ``contract``'s topic (``unsupported_op`` needs a PostgreSQL table)."""
    encoded = encoder.encode_row(row)
    envelope = {"before": None, "after": encoded, "source": source, "op": "c", "ts_ms": ts_ms}
    if kind == "malformed_json":
        text = _dumps(envelope)
        return text[: rng.randint(10, len(text) - 2)]
    if kind == "bad_encoding":
        return b'{"before":null,"after":{"note":"caf\xe9 \xff"},"op":"c","ts_ms":' + str(ts_ms).encode() + b"}"
    if kind == "missing_pk":
        return _dumps({**envelope, "after": {**encoded, contract.primary_key[0]: None}})
    if kind == "unknown_op":
        return _dumps({**envelope, "op": rng.choice(("x", "upsert", "C"))})
    if kind == "type_mismatch":
        column = next(c for c in contract.columns if c.name not in contract.primary_key)
        wrong = 12345 if column.type == "string" else "not-a-value"
        return _dumps({**envelope, "after": {**encoded, column.name: wrong}})
    if kind == "incompatible_schema":
        return _dumps({**envelope, "after": None})
    if kind == "unknown_topic":
        return _dumps(envelope)
    if kind == "unsupported_op":
        message = {"prefix": "audit", "content": "dGlja2l0IGF1ZGl0"}
        return _dumps({"op": "m", "ts_ms": ts_ms, "source": source, "message": message})
    raise ValueError(f"unknown bad-line kind {kind!r}")


# -- Avro ---------------------------------------------------------------------------------------
#: What each injected kind becomes in an Avro landing, and the reason the ingestion must give:
#: ``malformed_json`` -> a container file cut inside its block (an interrupted upload) and
#: ``bad_encoding`` -> a file that is not Avro at all (``bad_encoding``: undecodable bytes);
#: ``type_mismatch`` -> a value out of its column's range (an Avro schema admits no text in a
#: number; a table with no such column gets ``missing_pk`` instead); the other kinds are
#: records that decode and then fail the contract as their JSON lines do (``missing_pk``
#: with the key columns made optional in the writer schema, ``unsupported_op`` with
#: PostgreSQL's logical-message schema).
AVRO_KINDS = {
    "malformed_json": "bad_encoding",
    "bad_encoding": "bad_encoding",
    "missing_pk": "missing_pk",
    "unknown_op": "unknown_op",
    "type_mismatch": "type_mismatch",
    "incompatible_schema": "incompatible_schema",
    "unknown_topic": "unknown_topic",
    "unsupported_op": "unsupported_op",
}
#: Out-of-range raw values per contract type (epoch ms/us beyond year 9999, epoch days, a
#: decimal(8,2) overflow, a tinyint(1) that is neither 0 nor 1).
_OUT_OF_RANGE = {"timestamp": 2**62, "date": 2**30, "decimal": 1e12, "boolean": 7}


@dataclass(frozen=True)
class AvroBadRecord:
    """A record that decodes and fails the contract; ``raw_line`` is the line its dead letter keeps."""

    item: AvroItem
    reason: str
    raw_line: str


@dataclass(frozen=True)
class AvroBadFile:
    """A damaged file: ``item`` cut off inside its block, or (item None) ``content`` that is not Avro."""

    reason: str
    item: AvroItem | None = None
    content: bytes = b""


def bad_avro(
    kind: str,
    contract: TableContract,
    encoder: AvroRowEncoder,
    json_line: bytes,
    row: dict[str, Any],
    source: dict[str, Any],
    ts_ms: int,
) -> AvroBadRecord | AvroBadFile:
    """The Avro counterpart of ``bad_line(kind, ...)`` (which made ``json_line``), see ``AVRO_KINDS``."""
    reason = AVRO_KINDS[kind]
    envelope = encoder.writer_schema(ENVELOPE)
    record = encoder.envelope("c", None, row, source, ts_ms)
    if kind == "malformed_json":
        return AvroBadFile(reason, AvroItem(envelope, record, ENVELOPE))
    if kind == "bad_encoding":
        return AvroBadFile(reason, None, json_line)
    if kind == "type_mismatch":
        column = _mismatch_column(contract, encoder)
        if column is None:
            kind, reason = "missing_pk", AVRO_KINDS["missing_pk"]
        else:
            kind_of = column.type.split("(")[0]
            record = {**record, "after": {**record["after"], column.name: _OUT_OF_RANGE[kind_of]}}
    schema = envelope
    if kind == "missing_pk":
        schema = encoder.writer_schema("loose")
        record = {**record, "after": {**record["after"], contract.primary_key[0]: None}}
    elif kind == "unknown_op":
        record = {**record, "op": json.loads(json_line)["op"]}
    elif kind == "incompatible_schema":
        record = {**record, "after": None}
    elif kind == "unsupported_op":
        schema = encoder.writer_schema("message")
        record = {"op": "m", "ts_ms": ts_ms, "source": record["source"],
                  "message": {"prefix": "audit", "content": b"tickit audit"}}
    return AvroBadRecord(AvroItem(schema, record, "bad"), reason, decode_schema(schema.avro).line(record))


def _mismatch_column(contract: TableContract, encoder: AvroRowEncoder) -> Column | None:
    """The first non-key column whose Avro value can be out of range for its contract type."""
    for column in contract.columns:
        if column.name in contract.primary_key:
            continue
        base = column.type.split("(")[0]
        if base in ("timestamp", "date", "decimal"):
            return column
        if base == "boolean" and contract.connector == "mysql" and encoder.tinyint_booleans:
            return column
    return None
