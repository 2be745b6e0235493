"""Independent judges of the ingestion: hudi-rs reads of bronze vs the simulator's oracle."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
from hudi import HudiReadOptions, HudiTableBuilder

from simulator.oracle import event_columns, load_oracle


def normalize(value: Any) -> Any:
    """hudi-rs returns aware UTC timestamps; the oracle uses naive UTC."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def hudi_rows(table_path: str | Path) -> list[dict[str, Any]]:
    """Every row of a Hudi table's latest snapshot, read by hudi-rs (not by our code)."""
    table = HudiTableBuilder.from_base_uri(str(table_path)).build()
    batches = table.read(HudiReadOptions())
    if not batches:
        return []
    return [{k: normalize(v) for k, v in row.items()} for row in pa.Table.from_batches(batches).to_pylist()]


def project(rows: list[dict[str, Any]], columns: list[str]) -> Counter:
    return Counter(tuple(normalize(row.get(c)) for c in columns) for row in rows)


def compare_events(lake: str | Path, landing: str | Path) -> dict[str, tuple[int, int, int]]:
    """Per table: (oracle events, bronze rows, mismatches). Bronze must equal the oracle as a multiset."""
    oracle = load_oracle(str(landing))
    report = {}
    for table in oracle.tables:
        columns = [name for name, _ in event_columns(table)]
        expected = project(oracle.events(table), columns)
        path = Path(lake) / "bronze" / table
        # a table whose creation has not written hoodie.properties yet holds no commit
        created = (path / ".hoodie" / "hoodie.properties").exists()
        actual = project(hudi_rows(path), columns) if created else Counter()
        mismatches = sum(((expected - actual) + (actual - expected)).values())
        report[table] = (sum(expected.values()), sum(actual.values()), mismatches)
    return report


def dead_letter_tuples_oracle(landing: str | Path) -> Counter:
    return Counter(
        (d["raw_line"], d["raw_is_base64"], d["reason"], d["topic"], d["partition"], d["offset"], d["file"])
        for d in load_oracle(str(landing)).dead_letters()
    )


def dead_letter_tuples_bronze(lake: str | Path) -> Counter:
    path = Path(lake) / "bronze" / "dead_letter"
    if not (path / ".hoodie").exists():
        return Counter()
    return Counter(
        (r["raw_line"], r["raw_is_base64"], r["reason"], r["topic"], r["kafka_partition"], r["kafka_offset"],
         r["landing_file"])
        for r in hudi_rows(path)
    )


def hudi_commits(table_path: str | Path) -> list[str]:
    table = HudiTableBuilder.from_base_uri(str(table_path)).build()
    return [c.timestamp for c in table.get_timeline().get_completed_commits()]
