"""The tests' judge, hudi-rs, reads tables that Java Hudi wrote as their SQL says.

Every ingestion test trusts hudi-rs (``tests/stream/judge.py``, ``tests/reliability/judge.py``)
to say what a bronze table holds. These fixtures were written by Java Hudi (v6 by Hudi 0.14,
v8 by Hudi 1.0) from the Spark SQL next to each zip: commit 1 inserts 1 Alice (active),
2 Bob (inactive), 3 Carol (active); commit 2 upserts 1 Alice (inactive) and inserts 4 Diana
(active); ``..._overwritetable`` then overwrites the table with 4 Diana (inactive). The
expected rows below restate that SQL, not hudi-rs output.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hudi import HudiReadOptions, HudiTableBuilder

from tests.stream.judge import hudi_commits, hudi_rows

TABLES = ("v6_nonpartitioned", "v6_simplekeygen_nonhivestyle", "v6_complexkeygen_hivestyle", "v8_nonpartitioned")
AFTER_COMMIT_1 = {(1, "Alice", True), (2, "Bob", False), (3, "Carol", True)}
AFTER_COMMIT_2 = {(1, "Alice", False), (2, "Bob", False), (3, "Carol", True), (4, "Diana", True)}
#: Columns of the SQL's Bob row that do not depend on the writer's time zone (the same in every table).
BOB = {"intField": 25000, "longField": 9876543210, "decimalField": Decimal("67890.12345"),
       "dateField": dt.date(2023, 4, 2), "binaryField": b"more binary data", "shortField": 100}


def _people(rows: list[dict]) -> set[tuple]:
    return {(r["id"], r["name"], r["isActive"]) for r in rows}


@pytest.mark.parametrize("name", TABLES)
def test_latest_snapshot_and_first_commit(java_table, name: str) -> None:
    base = java_table(name)
    rows = hudi_rows(base)
    assert len(rows) == 4 and _people(rows) == AFTER_COMMIT_2  # the upsert replaced Alice, no duplicate
    bob = next(r for r in rows if r["id"] == 2)
    assert {k: bob[k] for k in BOB} == BOB
    assert isinstance(bob["timestampField"], dt.datetime) and bob["timestampField"].tzinfo is None  # normalized
    commits = hudi_commits(base)
    assert len(commits) == 2
    table = HudiTableBuilder.from_base_uri(str(base)).build()
    first = table.read(HudiReadOptions().with_as_of_timestamp(commits[0]))
    assert _people([r for batch in first for r in batch.to_pylist()]) == AFTER_COMMIT_1


def test_insert_overwrite_leaves_only_the_new_rows(java_table) -> None:
    rows = hudi_rows(java_table("v6_simplekeygen_nonhivestyle_overwritetable"))
    assert _people(rows) == {(4, "Diana", False)}
