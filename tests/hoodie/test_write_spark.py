"""Spark-driven writes (executors write the files), judged by hudi-rs against the Python oracle."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from ingestion.hoodie import HoodieTable, TableConfig
from tests.hoodie.data import DATA_COLUMNS, SCHEMA, make_row, to_table
from tests.hoodie.judge import EPOCH, Oracle, hudi_commits, hudi_incremental, hudi_snapshot, project
from tests.hoodie.test_write_arrow import _scenario


def _df(spark, rows: list[dict]):
    schema = SCHEMA
    if any("_hoodie_is_deleted" in r for r in rows):
        rows = [{**r, "_hoodie_is_deleted": bool(r.get("_hoodie_is_deleted"))} for r in rows]
        schema = SCHEMA.append(pa.field("_hoodie_is_deleted", pa.bool_()))
    # Several input partitions, so several tasks write and merge at once.
    return spark.createDataFrame(to_table(rows, schema)).repartition(3)


@pytest.mark.parametrize(
    "partition_fields",
    [pytest.param(("region", "day"), id="hive_multi_level", marks=pytest.mark.slow),
     pytest.param((), id="non_partitioned", marks=pytest.mark.slow)],
)
def test_spark_writes_match_the_oracle(spark, tmp_path, partition_fields):
    rng = random.Random(f"spark-{partition_fields}")
    cfg = TableConfig(name="things", record_key_fields=("id", "name"), precombine_field="seq",
                      partition_fields=partition_fields)
    table = HoodieTable.create_or_open(tmp_path / "things", cfg)
    oracle = Oracle(("id", "name"), partition_fields, "seq")
    instants = []
    with table.writer(small_file_bytes=2 * 1024 * 1024) as writer:
        for operation, rows, drop in _scenario(rng):
            instant = writer.write(_df(spark, rows), operation=operation, drop_duplicates=drop)
            assert instant is not None
            oracle.apply(instant, rows, operation, drop)
            instants.append(instant)
    assert hudi_commits(table.base_path) == instants
    assert project(hudi_snapshot(table.base_path), DATA_COLUMNS) == project(oracle.snapshot(), DATA_COLUMNS)
    for instant in instants:
        got = project(hudi_snapshot(table.base_path, as_of=instant), DATA_COLUMNS)
        assert got == project(oracle.snapshot(instant), DATA_COLUMNS), f"time travel as of {instant}"
    for start, end in zip([EPOCH, *instants], instants, strict=False):
        got = project(hudi_incremental(table.base_path, start, end), DATA_COLUMNS)
        assert got == project(oracle.incremental(start, end), DATA_COLUMNS), f"incremental ({start}, {end}]"


def test_spark_bulk_insert_splits_files_and_commits_every_task(spark, tmp_path):
    rng = random.Random(3)
    cfg = TableConfig(name="bulk", record_key_fields=("id",), partition_fields=("day",))
    table = HoodieTable.create_or_open(tmp_path / "bulk", cfg)
    rows = [make_row(rng, k, k) for k in range(600)]
    with table.writer() as writer:
        instant = writer.write(_df(spark, rows), operation="bulk_insert")
    stats = [s for v in table.commit_metadata(instant)["partitionToWriteStats"].values() for s in v]
    assert len(stats) == 6  # 3 tasks x 2 days
    assert sum(s["numWrites"] for s in stats) == 600
    assert project(hudi_snapshot(table.base_path), DATA_COLUMNS) == project(rows, DATA_COLUMNS)
    tokens = {bf.write_token for bf in table.latest_base_files()}
    assert len(tokens) == 3 and all(t.count("-") == 2 for t in tokens)


def test_spark_and_arrow_inputs_agree_on_keys(spark, tmp_path):
    """The same rows through both engines give the same record keys and partition paths."""
    rng = random.Random(4)
    rows = [make_row(rng, k, k) for k in range(30)]
    cfg = TableConfig(name="k", record_key_fields=("id", "ts", "amount"), partition_fields=("day", "active"))
    got = []
    for name, data in (("arrow", to_table(rows)), ("spark", _df(spark, rows))):
        table = HoodieTable.create_or_open(tmp_path / name, cfg)
        with table.writer() as writer:
            writer.write(data, operation="insert")
        snapshot = hudi_snapshot(table.base_path)
        got.append(sorted((r["_hoodie_record_key"], r["_hoodie_partition_path"]) for r in snapshot))
    assert got[0] == got[1]
    assert any("active=__HIVE_DEFAULT_PARTITION__" in p for _, p in got[0])


def test_spark_upsert_into_a_java_table_with_nested_types(spark, java_table):
    from tests.hoodie.test_fixtures import _eve, _full

    base = java_table("v6_complexkeygen_hivestyle")
    before = hudi_snapshot(base)
    table = HoodieTable.open(base)
    bob = next(r for r in before if r["id"] == 2)
    changed = {**{k: v for k, v in bob.items() if not k.startswith("_hoodie")}, "isActive": not bob["isActive"],
               "longField": bob["longField"] + 1}
    stale = {**changed, "isActive": bob["isActive"], "longField": bob["longField"] - 1}  # older: loses
    rows = pa.Table.from_pylist([_eve(1, True), changed, stale], schema=table.schema())
    with table.writer() as writer:
        writer.write(spark.createDataFrame(rows), operation="upsert")
    expected = _full(before)
    expected[2] = _full([changed])[2]
    expected[5] = _full([_eve(1, True)])[5]
    assert _full(hudi_snapshot(base)) == expected


def test_spark_insert_drops_redelivered_records(spark, tmp_path):
    rng = random.Random(9)
    cfg = TableConfig(name="redeliver", record_key_fields=("id",), partition_fields=("day",))
    table = HoodieTable.create_or_open(tmp_path / "r", cfg)
    first = [make_row(rng, k, 1) for k in range(20)]
    again = first[5:15] + [make_row(rng, k, 1) for k in range(20, 25)] + first[20:21]
    with table.writer() as writer:
        one = writer.write(_df(spark, first), operation="insert", drop_duplicates=True)
        two = writer.write(_df(spark, again + again[-3:]), operation="insert", drop_duplicates=True)
        assert writer.write(_df(spark, first[:4]), operation="insert", drop_duplicates=True) is None
    oracle = Oracle(("id",), ("day",), None)
    oracle.apply(one, first, "insert", True)
    oracle.apply(two, again + again[-3:], "insert", True)
    assert project(hudi_snapshot(table.base_path), DATA_COLUMNS) == project(oracle.snapshot(), DATA_COLUMNS)
    assert hudi_commits(table.base_path) == [one, two]


def test_spark_insert_into_an_empty_table_drops_in_batch_duplicates(spark, tmp_path):
    rng = random.Random(10)
    cfg = TableConfig(name="first", record_key_fields=("id",), partition_fields=("day",))
    table = HoodieTable.create_or_open(tmp_path / "f", cfg)
    rows = [make_row(rng, k, 1) for k in range(12)]
    batch = rows + rows[:5]
    with table.writer() as writer:
        assert writer.write(_df(spark, batch).limit(0), operation="insert") is None
        instant = writer.write(_df(spark, batch), operation="insert", drop_duplicates=True)
    oracle = Oracle(("id",), ("day",), None)
    oracle.apply(instant, batch, "insert", True)
    assert project(hudi_snapshot(table.base_path), DATA_COLUMNS) == project(oracle.snapshot(), DATA_COLUMNS)
    assert table.completed_instants() == [instant] and table.pending_instants() == []
