"""Bad landing lines for ``--inject-bad``: one kind per dead-letter reason, built from real rows."""

from __future__ import annotations

import json
import random
from typing import Any

from ingestion.cdc.contracts import TableContract
from simulator.encode import RowEncoder

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
