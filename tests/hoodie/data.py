"""Deterministic test data covering the bronze column types, with nulls."""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("amount", pa.decimal128(8, 2)),
        ("score", pa.float64()),
        ("active", pa.bool_()),
        ("big", pa.int64()),
        ("ts", pa.timestamp("us")),
        ("seq", pa.int64()),
        ("region", pa.string()),
        ("day", pa.date32()),
    ]
)
DATA_COLUMNS = SCHEMA.names
REGIONS = ("eu", "us", "ap/south")  # a slash inside a value: hive paths must still work
DAYS = (dt.date(2024, 1, 1), dt.date(2024, 1, 2))


def make_row(rng: random.Random, key: int, seq: int, name: str | None = None) -> dict:
    maybe = lambda value: None if rng.random() < 0.15 else value  # noqa: E731
    return {
        "id": key,
        "name": name if name is not None else f"n{key % 7}",
        "amount": maybe(decimal.Decimal(rng.randint(-99999, 99999)) / 100),
        "score": maybe(rng.uniform(-1e6, 1e6)),
        "active": maybe(rng.random() < 0.5),
        "big": maybe(rng.randint(-(2**62), 2**62)),
        "ts": maybe(dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**12))),
        "seq": seq,
        "region": REGIONS[key % len(REGIONS)],
        "day": DAYS[key % len(DAYS)],
    }


def to_table(rows: list[dict], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)
