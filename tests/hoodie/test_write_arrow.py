"""Writes from pyarrow input, judged by hudi-rs reads against the plain-Python oracle."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from ingestion.hoodie import HoodieError, HoodieTable, TableConfig
from tests.hoodie.data import DATA_COLUMNS, make_row, to_table
from tests.hoodie.judge import EPOCH, Oracle, hudi_commits, hudi_incremental, hudi_snapshot, project

LAYOUTS = {
    "hive_multi_level": dict(partition_fields=("region", "day"), hive_style=True),
    "non_hive_single": dict(partition_fields=("day",), hive_style=False),
    "non_partitioned": dict(partition_fields=()),
}


def _scenario(rng: random.Random) -> list[tuple[str, list[dict], bool]]:
    """Inserts, re-delivered duplicates, upserts with late events, flagged and keyed deletes."""
    steps: list[tuple[str, list[dict], bool]] = []
    seq = 1000
    first = [make_row(rng, k, seq + k) for k in range(40)]
    steps.append(("insert", first, True))
    redelivered = first[:10] + [make_row(rng, k, seq + k) for k in range(40, 55)] + first[5:8]
    steps.append(("insert", redelivered, True))
    updates = []
    for k in rng.sample(range(55), 20):
        late = rng.random() < 0.3
        updates.append(make_row(rng, k, seq + k + (-500 if late else 500)))
    updates += [make_row(rng, k, seq + 600 + k) for k in range(55, 60)]
    updates.append(make_row(rng, 3, seq + 700))
    updates.append(make_row(rng, 3, seq + 650))  # an older version of key 3 in the same batch
    steps.append(("upsert", updates, False))
    flagged = [dict(make_row(rng, k, seq + 2000), _hoodie_is_deleted=True) for k in (1, 2)]
    flagged.append(dict(make_row(rng, 4, seq - 9999), _hoodie_is_deleted=True))  # too old: ignored
    flagged.append(dict(make_row(rng, 70, seq), _hoodie_is_deleted=False))
    steps.append(("upsert", flagged, False))
    steps.append(("delete", [make_row(rng, k, 0) for k in (10, 11, 12, 999)], False))
    return steps


def _write_table(rows: list[dict]) -> pa.Table:
    if any("_hoodie_is_deleted" in r for r in rows):
        for r in rows:
            r.setdefault("_hoodie_is_deleted", False)
        schema = to_table([]).schema.append(pa.field("_hoodie_is_deleted", pa.bool_()))
        return to_table(rows, schema)
    return to_table(rows)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_snapshot_time_travel_incremental_match_the_oracle(tmp_path, layout):
    rng = random.Random(f"hoodie-{layout}")
    cfg = TableConfig(name="things", record_key_fields=("id", "name"), precombine_field="seq", **LAYOUTS[layout])
    table = HoodieTable.create_or_open(tmp_path / "things", cfg)
    oracle = Oracle(("id", "name"), cfg.partition_fields, "seq")
    instants = []
    with table.writer(small_file_bytes=2 * 1024 * 1024) as writer:
        for operation, rows, drop in _scenario(rng):
            instant = writer.write(_write_table([dict(r) for r in rows]), operation=operation, drop_duplicates=drop)
            assert instant is not None
            oracle.apply(instant, rows, operation, drop)
            instants.append(instant)
    assert hudi_commits(table.base_path) == instants == table.completed_instants()
    assert project(hudi_snapshot(table.base_path), DATA_COLUMNS) == project(oracle.snapshot(), DATA_COLUMNS)
    for instant in instants:
        got = project(hudi_snapshot(table.base_path, as_of=instant), DATA_COLUMNS)
        assert got == project(oracle.snapshot(instant), DATA_COLUMNS), f"time travel as of {instant}"
    for start, end in zip([EPOCH, *instants], instants, strict=False):
        got = project(hudi_incremental(table.base_path, start, end), DATA_COLUMNS)
        assert got == project(oracle.incremental(start, end), DATA_COLUMNS), f"incremental ({start}, {end}]"


def test_meta_columns_keys_and_paths_follow_hudi(tmp_path):
    rng = random.Random(7)
    cfg = TableConfig(name="things", record_key_fields=("id", "name"), precombine_field="seq",
                      partition_fields=("region", "day"))
    table = HoodieTable.create_or_open(tmp_path / "t", cfg)
    rows = [make_row(rng, k, k) for k in range(6)]
    rows[0]["name"] = ""
    with table.writer() as writer:
        instant = writer.write(to_table(rows), operation="insert")
    got = hudi_snapshot(table.base_path)
    assert len(got) == 6
    for row in got:
        name = "__empty__" if row["name"] == "" else row["name"]
        assert row["_hoodie_record_key"] == f"id:{row['id']},name:{name}"
        assert row["_hoodie_partition_path"] == f"region={row['region']}/day={row['day'].isoformat()}"
        assert row["_hoodie_commit_time"] == instant
        assert row["_hoodie_commit_seqno"].startswith(f"{instant}_")
        assert row["_hoodie_file_name"].endswith(f"_{instant}.parquet")
    for base_file in table.latest_base_files():
        assert (table.base_path / base_file.partition_path / ".hoodie_partition_metadata").exists()
        assert base_file.path.endswith(f"{base_file.file_id}_{base_file.write_token}_{instant}.parquet")


def test_simple_key_single_field(tmp_path):
    cfg = TableConfig(name="s", record_key_fields=("id",), partition_fields=("day",))
    table = HoodieTable.create_or_open(tmp_path / "s", cfg)
    rng = random.Random(1)
    with table.writer() as writer:
        writer.write(to_table([make_row(rng, k, k) for k in range(3)]))
    assert sorted(r["_hoodie_record_key"] for r in hudi_snapshot(table.base_path)) == ["0", "1", "2"]
    assert table.properties()["hoodie.table.keygenerator.class"].endswith("SimpleKeyGenerator")


def test_insert_of_only_known_keys_writes_nothing(tmp_path):
    cfg = TableConfig(name="t", record_key_fields=("id",), partition_fields=("day",))
    table = HoodieTable.create_or_open(tmp_path / "t", cfg)
    rows = to_table([make_row(random.Random(2), k, k) for k in range(5)])
    with table.writer() as writer:
        first = writer.write(rows, drop_duplicates=True, extra_metadata={"lakehouse.checkpoint": "1"})
        assert writer.write(rows, drop_duplicates=True, extra_metadata={"lakehouse.checkpoint": "2"}) is None
    assert table.completed_instants() == [first]
    assert table.latest_extra_metadata("lakehouse.checkpoint") == "1"
    assert table.pending_instants() == []


def test_bad_input_is_named(tmp_path):
    cfg = TableConfig(name="t", record_key_fields=("id",), partition_fields=("day",))
    table = HoodieTable.create_or_open(tmp_path / "t", cfg)
    with table.writer() as writer:
        with pytest.raises(HoodieError, match="day"):
            writer.write(pa.table({"id": [1]}))
        with pytest.raises(HoodieError, match="operation 'merge'"):
            writer.write(pa.table({"id": [1], "day": ["x"]}), operation="merge")
        with pytest.raises(HoodieError, match="record key field 'id' is null"):
            writer.write(pa.table({"id": pa.array([None], pa.int32()), "day": ["x"]}))
        with pytest.raises(HoodieError, match="pyspark DataFrame or a pyarrow Table"):
            writer.write([{"id": 1}])
    with pytest.raises(HoodieError, match="outside"):
        table.writer().write(pa.table({"id": [1], "day": ["x"]}))
    with pytest.raises(HoodieError, match="different layout"):
        HoodieTable.create_or_open(tmp_path / "t", TableConfig(name="t", record_key_fields=("other",)))


def test_schema_evolution_adds_columns(tmp_path):
    cfg = TableConfig(name="t", record_key_fields=("id",), precombine_field="seq")
    table = HoodieTable.create_or_open(tmp_path / "t", cfg)
    with table.writer() as writer:
        writer.write(pa.table({"id": pa.array([1, 2], pa.int32()), "seq": [1, 1]}), operation="upsert")
        writer.write(pa.table({"id": pa.array([2, 3], pa.int32()), "seq": [2, 2], "extra": ["b", "c"]}),
                     operation="upsert")
    assert table.schema().names == ["id", "seq", "extra"]
    got = sorted((r["id"], r["seq"], r["extra"]) for r in hudi_snapshot(table.base_path))
    assert got == [(1, 1, None), (2, 2, "b"), (3, 2, "c")]


def test_deleting_every_record_of_a_file_group(tmp_path):
    cfg = TableConfig(name="t", record_key_fields=("id",), precombine_field="seq", partition_fields=("day",))
    table = HoodieTable.create_or_open(tmp_path / "t", cfg)
    rng = random.Random(12)
    rows = [make_row(rng, k, 1) for k in range(10)]
    with table.writer() as writer:
        writer.write(to_table(rows), operation="insert")
        doomed = [r for r in rows if r["day"] == rows[0]["day"]]
        instant = writer.write(to_table(doomed), operation="delete")
    survivors = [r for r in rows if r["day"] != rows[0]["day"]]
    assert project(hudi_snapshot(table.base_path), DATA_COLUMNS) == project(survivors, DATA_COLUMNS)
    stats = [s for v in table.commit_metadata(instant)["partitionToWriteStats"].values() for s in v]
    assert [(s["numWrites"], s["numDeletes"]) for s in stats] == [(0, len(doomed))]
