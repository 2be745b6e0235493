"""A local landing zone is read by the parse workers, not by Spark: the output must not change.

Oracles: the chunks of the same files handed over with their content (what Spark's
``binaryFile`` reader gives), and a whole ``ingest --once`` through Spark's reader
(``reads_in_workers`` forced off) read back with hudi-rs; both runs are also checked
against the simulator's oracle.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from ingestion.sources import landing as landing_module
from ingestion.sources.landing import local_file_path, reads_in_workers
from ingestion.stream import batch as batch_module
from ingestion.stream import parse as parse_module
from tests.stream.conftest import ingest, simulate
from tests.stream.judge import compare_events, dead_letter_tuples_bronze, dead_letter_tuples_oracle, hudi_rows

INGESTED_AT = dt.datetime(2026, 11, 22, 12, 0, 0)
#: Columns that differ between two ingest runs of the same files by design.
RUN_COLUMNS = {"_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name", "_cdc_ingested_at",
               "ingested_at"}
ODD_NAMES = ("we ird%41+é.json", "tickit.ecomm.sale+0+0000099999 copy.json")


def _landing(base: Path) -> Path:
    landing = base / "landing"
    simulate(landing, fmt="mixed", scale=0.003, changes=300, inject_bad=16, truncate=True)
    sale = sorted((landing / "topics" / "tickit.ecomm.sale").rglob("*.json"))[0]
    lines = sale.read_bytes().split(b"\n")[:3]
    for index, name in enumerate(ODD_NAMES):  # not landing names: their lines are dead-lettered with the file
        marker = f'{{"odd": {index}}}'.encode()  # dead letters are keyed by line: one line of its own per file
        (sale.parent / name).write_bytes(b"\n".join([*lines, marker]) + b"\nnull\n\xff\xfe\n")
    return landing


def _spark_path(path: Path) -> str:
    """A path as Spark's binaryFile source reports it (Hadoop ``Path.toString``: ``file:`` + the raw path)."""
    return f"file:{path}"


def test_local_file_path_and_reads_in_workers():
    assert local_file_path("file:/tmp/a b/c%41+é.json") == "/tmp/a b/c%41+é.json"
    assert local_file_path("file:///tmp/x.json") == "/tmp/x.json"
    assert local_file_path("/tmp/x.json") == "/tmp/x.json"
    assert reads_in_workers("/tmp/landing") and reads_in_workers("file:///tmp/landing")
    assert not reads_in_workers("s3a://bucket/landing") and not reads_in_workers("hdfs://nn/landing")


def test_worker_reads_give_the_chunks_of_content_batches(tmp_path):
    landing = _landing(tmp_path)
    files = sorted((landing / "topics").rglob("*.json"))
    assert any(f.name in ODD_NAMES for f in files)
    paths = pa.array([_spark_path(f) for f in files])
    with_content = pa.RecordBatch.from_arrays([paths, pa.array([f.read_bytes() for f in files], pa.binary())],
                                              names=["path", "content"])
    path_only = pa.RecordBatch.from_arrays([paths], names=["path"])
    for mode in ("fast", "python"):
        want = list(parse_module.parse_file_batches(iter([with_content]), str(landing), INGESTED_AT, mode))
        got = list(parse_module.parse_file_batches(iter([path_only]), str(landing), INGESTED_AT, mode))
        assert len(got) == len(want) >= 1
        for a, b in zip(got, want, strict=True):
            assert a.equals(b), mode


def _rows(path: Path) -> list[tuple]:
    rows = [tuple(sorted((k, v) for k, v in row.items() if k not in RUN_COLUMNS)) for row in hudi_rows(path)]
    return sorted(rows, key=repr)


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory, spark):
    base = tmp_path_factory.mktemp("worker-reads")
    landing = _landing(base)
    workers = base / "workers"
    workers.mkdir()
    shutil.copytree(landing, workers / "landing")
    through_spark = base / "spark"
    through_spark.mkdir()
    shutil.copytree(landing, through_spark / "landing")
    runs = {"workers": ingest(spark, workers, "bronze_worker_reads", max_files_per_trigger=40)}
    patch = pytest.MonkeyPatch()
    patch.setattr(landing_module, "reads_in_workers", lambda landing: False)
    try:
        runs["spark"] = ingest(spark, through_spark, "bronze_spark_reads", max_files_per_trigger=40)
    finally:
        patch.undo()
    return runs


def test_ingest_reading_in_workers_equals_spark_reading(both_runs):
    workers, through_spark = both_runs["workers"], both_runs["spark"]
    for run in (workers, through_spark):
        report = compare_events(run.lake, run.landing)
        assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert dead_letter_tuples_bronze(workers.lake) == dead_letter_tuples_bronze(through_spark.lake)
    assert dead_letter_tuples_oracle(workers.landing) <= dead_letter_tuples_bronze(workers.lake)
    tables = sorted(p.name for p in (workers.lake / "bronze").iterdir())
    assert tables == sorted(p.name for p in (through_spark.lake / "bronze").iterdir())
    assert "dead_letter" in tables and len(tables) >= 5
    for table in tables:
        assert _rows(workers.lake / "bronze" / table) == _rows(through_spark.lake / "bronze" / table), table
    # the odd file names were read (their lines are dead letters naming the file)
    dead_files = {row["landing_file"] for row in hudi_rows(workers.lake / "bronze" / "dead_letter")}
    assert any("copy.json" in name for name in dead_files) and any("ird" in name for name in dead_files)
    for odd in ODD_NAMES:  # the provenance names the file exactly ("%41" is not decoded)
        assert any(name.endswith("/" + odd) for name in dead_files), (odd, dead_files)
    assert [r.lines for r in workers.summary.reports] == [r.lines for r in through_spark.summary.reports]
    assert [r.bytes for r in workers.summary.reports] == [r.bytes for r in through_spark.summary.reports]


def test_scan_settings_are_restored(spark):
    key = "spark.sql.files.minPartitionNum"
    before = spark.conf.get(key, None)
    with batch_module.session_confs(spark, batch_module.worker_read_confs(spark)):
        assert spark.conf.get(key) == str(2 * spark.sparkContext.defaultParallelism)
    assert spark.conf.get(key, None) == before
