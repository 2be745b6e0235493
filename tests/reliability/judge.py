"""Bronze (read by hudi-rs, not by our code) against the simulator's oracle: lost, duplicated, mismatched.

An event's identity is its table, primary key and ``_cdc_position`` (the bronze record
key). ``lost`` counts oracle events whose identity bronze lacks; ``duplicated`` counts
bronze rows beyond the oracle's (a second copy, or an identity the oracle never had);
``mismatched`` counts events present under their identity but with different values.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
from hudi import HudiReadOptions, HudiTableBuilder

from ingestion.cdc.contracts import load_contracts
from simulator.oracle import event_columns, load_oracle


def _normalize(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, Decimal):
        return value.normalize()
    return value


def hudi_rows(table_path: Path) -> list[dict[str, Any]]:
    """The latest snapshot of a Hudi table as read by hudi-rs ([] when the table does not exist yet)."""
    if not (table_path / ".hoodie" / "hoodie.properties").exists():
        return []
    table = HudiTableBuilder.from_base_uri(str(table_path)).build()
    batches = table.read(HudiReadOptions())
    return pa.Table.from_batches(batches).to_pylist() if batches else []


@dataclass
class TableComparison:
    table: str
    expected: int = 0
    actual: int = 0
    lost: int = 0
    duplicated: int = 0
    mismatched: int = 0
    examples: list[str] = field(default_factory=list)


def _identity_columns(table: str) -> list[str]:
    return [*load_contracts()[table].primary_key, "_cdc_position"]


def compare_table(table: str, expected_rows: list[dict], actual_rows: list[dict]) -> TableComparison:
    columns = [name for name, _ in event_columns(table)]
    identity = _identity_columns(table)

    def keyed(rows: list[dict]) -> tuple[Counter, Counter]:
        keys = Counter(tuple(_normalize(r.get(c)) for c in identity) for r in rows)
        full = Counter(tuple(_normalize(r.get(c)) for c in columns) for r in rows)
        return keys, full

    expected_keys, expected_full = keyed(expected_rows)
    actual_keys, actual_full = keyed(actual_rows)
    result = TableComparison(table, len(expected_rows), len(actual_rows))
    result.lost = sum((expected_keys - actual_keys).values())
    result.duplicated = sum((actual_keys - expected_keys).values())
    result.mismatched = sum((expected_full - actual_full).values()) - result.lost
    for missing in list(expected_keys - actual_keys)[:3]:
        result.examples.append(f"{table}: lost {dict(zip(identity, missing, strict=True))}")
    for extra in list(actual_keys - expected_keys)[:3]:
        result.examples.append(f"{table}: extra {dict(zip(identity, extra, strict=True))}")
    if result.mismatched:
        wrong = list(expected_full - actual_full)[:1]
        result.examples.append(f"{table}: a mismatched event {dict(zip(columns, wrong[0], strict=True))}")
    return result


def compare_lake(lake: Path, landing: Path) -> list[TableComparison]:
    """Every oracle table plus the dead-letter table (identity: topic, partition, offset, reason)."""
    oracle = load_oracle(str(landing))
    results = [
        compare_table(t, oracle.events(t), hudi_rows(Path(lake) / "bronze" / t)) for t in sorted(oracle.tables)
    ]
    expected = Counter((d["topic"], d["partition"], d["offset"], d["reason"]) for d in oracle.dead_letters())
    actual = Counter(
        (r["topic"], r["kafka_partition"], r["kafka_offset"], r["reason"])
        for r in hudi_rows(Path(lake) / "bronze" / "dead_letter")
    )
    dead = TableComparison("dead_letter", sum(expected.values()), sum(actual.values()))
    dead.lost = sum((expected - actual).values())
    dead.duplicated = sum((actual - expected).values())
    dead.examples = [f"dead_letter: lost {k}" for k in list(expected - actual)[:3]]
    dead.examples += [f"dead_letter: extra {k}" for k in list(actual - expected)[:3]]
    results.append(dead)
    return results


def duplicate_identities(lake: Path) -> dict[str, int]:
    """Per bronze table: rows beyond one per identity (must be 0 at every moment, crash or not)."""
    found = {}
    for table in sorted(load_contracts()):
        rows = hudi_rows(Path(lake) / "bronze" / table)
        identity = _identity_columns(table)
        keys = Counter(tuple(_normalize(r.get(c)) for c in identity) for r in rows)
        found[table] = sum(n - 1 for n in keys.values())
    return found
