"""Hypothesis strategies for Debezium landing lines of the TICKIT contracts, with their expected rows.

The expected values are computed here from the generated Python values by the encodings
Debezium documents (epoch days, epoch ms/us by connector, decimal text), not by the
parser under test, so a test comparing the two is an independent check.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from ingestion.cdc.contracts import TableContract, load_contracts

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
#: Unit of integer timestamps without a schema, per connector (Debezium defaults:
#: MySQL DATETIME and SQL Server datetime in ms, PostgreSQL timestamp in us).
TIMESTAMP_UNIT_US = {"mysql": 1000, "sqlserver": 1000, "postgres": 1}

CONTRACTS: dict[str, TableContract] = load_contracts()
TOPICS: dict[str, TableContract] = {topic: c for c in CONTRACTS.values() for topic in c.topics}


@dataclass(frozen=True)
class GeneratedEvent:
    """One landing line and what the parser must make of it."""

    contract: TableContract
    topic: str
    op: str
    event: dict[str, Any]
    expected_row: dict[str, Any]
    source_ts_ms: int
    flattened: bool

    @property
    def line(self) -> bytes:
        return json.dumps(self.event, separators=(",", ":")).encode("utf-8")


def _decimal_values(column_type: str) -> st.SearchStrategy[tuple[Any, Any]]:
    precision, scale = (int(x) for x in column_type[len("decimal(") : -1].split(","))
    limit = Decimal(10) ** (precision - scale) - Decimal(1).scaleb(-scale)
    numbers = st.decimals(min_value=-limit, max_value=limit, places=scale, allow_nan=False, allow_infinity=False)
    return numbers.map(lambda d: (f"{d:f}", d))


def encoded_value(column_type: str, connector: str) -> st.SearchStrategy[tuple[Any, Any]]:
    """(JSON value as Debezium writes it, expected Python value) for one contract type."""
    if column_type == "int":
        return st.integers(-(2**31), 2**31 - 1).map(lambda v: (v, v))
    if column_type == "bigint":
        return st.integers(-(2**63), 2**63 - 1).map(lambda v: (v, v))
    if column_type == "string":
        return st.text(max_size=30).map(lambda v: (v, v))
    if column_type == "double":
        return st.floats(allow_nan=False, allow_infinity=False).map(lambda v: (v, v))
    if column_type == "boolean":
        return st.booleans().map(lambda v: (v, v))
    if column_type == "date":
        return st.dates(dt.date(1900, 1, 1), dt.date(2100, 12, 31)).map(lambda d: ((d - EPOCH_DATE).days, d))
    if column_type == "timestamp":
        unit_us = TIMESTAMP_UNIT_US[connector]
        return st.integers(0, 4_102_444_800_000_000 // unit_us).map(
            lambda v: (v, EPOCH + dt.timedelta(microseconds=v * unit_us))
        )
    if column_type.startswith("decimal("):
        return _decimal_values(column_type)
    raise ValueError(f"no strategy for contract type {column_type!r}")


def _position_fields(connector: str) -> st.SearchStrategy[dict[str, Any]]:
    lsn = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1)).map(
        lambda t: f"{t[0]:08x}:{t[1]:08x}:{t[2]:04x}"
    )
    if connector == "mysql":
        return st.fixed_dictionaries(
            {
                "file": st.integers(1, 999_999).map(lambda i: f"mysql-bin.{i:06d}"),
                "pos": st.integers(0, 2**40),
                "row": st.integers(0, 50),
            }
        )
    if connector == "postgres":
        return st.fixed_dictionaries({"lsn": st.integers(0, 2**63), "txId": st.integers(0, 2**40)})
    return st.fixed_dictionaries({"commit_lsn": lsn, "change_lsn": lsn, "event_serial_no": st.integers(0, 10)})


@st.composite
def valid_events(draw: st.DrawFn, contract: TableContract | None = None) -> GeneratedEvent:
    """A valid change event (envelope or flattened) of a TICKIT table."""
    contract = contract or draw(st.sampled_from(sorted(CONTRACTS.values(), key=lambda c: c.name)))
    topic = draw(st.sampled_from(contract.topics))
    op = draw(st.sampled_from("cudr"))
    image: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    for column in contract.columns:
        strategy = encoded_value(column.type, contract.connector)
        if column.name not in contract.primary_key:
            strategy = st.one_of(st.just((None, None)), strategy)
        encoded, value = draw(strategy)
        image[column.name] = encoded
        expected[column.name] = value
    ts_ms = draw(st.integers(1, 4_102_444_800_000))
    positions = draw(_position_fields(contract.connector))
    flattened = draw(st.booleans())
    if flattened:
        event = dict(image)
        event.update({"__op": op, "__source_ts_ms": ts_ms, "__deleted": "true" if op == "d" else "false"})
        event.update({f"__{name}": value for name, value in positions.items()})
    else:
        source = {"db": contract.database, "table": contract.name, "ts_ms": ts_ms, **positions}
        event = {
            "before": image if op == "d" else None,
            "after": None if op == "d" else image,
            "source": source,
            "op": op,
            "ts_ms": ts_ms + 5,
        }
    return GeneratedEvent(contract, topic, op, event, expected, ts_ms, flattened)


#: Keys a drifted column must not take (they change the shape of the event).
RESERVED_KEYS = {"op", "before", "after", "source", "payload", "schema", "transaction", "ts_ms"}

drift_column_names = st.from_regex(r"\A[a-z][a-z0-9_]{0,20}\Z", fullmatch=True).filter(
    lambda n: n not in RESERVED_KEYS
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=20))
