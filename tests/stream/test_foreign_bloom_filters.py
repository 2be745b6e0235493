"""A lake whose bronze bloom filters another writer built is refused, never written into.

The project's own Hudi writer, before it moved onto Apache Hudi, hashed keys into its bloom
filters differently from Java Hudi, so the ``BLOOM`` index the ingestion drops re-delivered
events with misses most keys stored in its files. Its lakes are rebuilt, not upgraded: the
test gives a lake's ``sale`` files bloom filters built from other keys (what a different hash
amounts to), then lands stored sales again at higher offsets, as a connector re-delivers after
a crash: the drop policy looks those keys up in the bloom filters, so without the check they
would be stored twice. The ingestion must stop before writing, and hudi-rs must find bronze
exactly as the oracle says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ingestion.stream import IngestError
from ingestion.stream.bronze import all_table_names
from ingestion.stream.dead_letters import list_dead_letters
from ingestion.stream.hudi_tables import bloom_filter_miss
from lakehouse.cli import main as cli_main
from tests.stream.conftest import ingest, land_copy, simulate
from tests.stream.judge import compare_events, hudi_commits, hudi_rows

BLOOM_KEY = b"org.apache.hudi.bloomfilter"
BLOOM_TYPE_KEY = b"hoodie_bloom_filter_type_code"


def rebuild_bloom_filters(spark, table: Path) -> int:
    """Replace each base file's bloom filter by one built with Hudi's own factory from other keys
    (each record key reversed); the rows and every other footer entry stay. Returns the files."""
    factory = spark.sparkContext._jvm.org.apache.hudi.common.bloom.BloomFilterFactory
    files = sorted(path for path in table.rglob("*.parquet") if ".hoodie" not in path.parts)
    for path in files:
        data = pq.read_table(path)
        metadata = dict(data.schema.metadata)
        keys = data.column("_hoodie_record_key").to_pylist()
        bloom = factory.createBloomFilter(max(len(keys), 1), 1e-9, max(len(keys), 1) * 2,
                                          metadata[BLOOM_TYPE_KEY].decode())
        for key in keys:
            bloom.add(key[::-1])
        metadata[BLOOM_KEY] = bloom.serializeToString().encode()
        pq.write_table(data.replace_schema_metadata(metadata), path)
        (path.parent / f".{path.name}.crc").unlink(missing_ok=True)  # Hadoop's local checksum of the old bytes
    return len(files)


def test_a_lake_with_foreign_bloom_filters_is_refused_before_any_write(tmp_path, spark) -> None:
    landing = tmp_path / "landing"
    simulate(landing, fmt="flattened", scale=0.003, changes=300, inject_bad=0, restarts=0)
    run = ingest(spark, tmp_path, "unused")
    lake = tmp_path / "lake" / "bronze"
    assert {t: m for t, (_, _, m) in compare_events(run.lake, landing).items() if m} == {}
    assert bloom_filter_miss(spark, str(lake / "sale")) is None  # Java Hudi's own filters hold their keys

    assert rebuild_bloom_filters(spark, lake / "sale") > 0
    miss = bloom_filter_miss(spark, str(lake / "sale"))
    assert miss is not None and miss.file.endswith(".parquet")
    commits = {table: hudi_commits(lake / table) for table in all_table_names()}

    stored_sales = sorted((landing / "topics" / "tickit.ecomm.sale" / "partition=1").glob("*.json"))[0]
    land_copy(stored_sales, landing, partition=1, offset=900_000)

    with pytest.raises(IngestError) as refused:
        ingest(spark, tmp_path, "unused")

    assert f"{lake / 'sale'}: the bloom filter of {miss.file}" in str(refused.value)
    assert "rebuild bronze from the landing zone" in (refused.value.hint or "")
    assert {table: hudi_commits(lake / table) for table in all_table_names()} == commits
    report = compare_events(run.lake, landing)
    assert report["sale"][1] == report["sale"][0] > 0
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report


def test_a_dead_letter_replay_into_such_a_lake_is_refused_too(tmp_path, spark, capsys) -> None:
    """The replay deletes replayed lines from the dead-letter table by key (the index again)."""
    simulate(tmp_path / "landing", fmt="envelope", scale=0.002, changes=60, inject_bad=12)
    ingest(spark, tmp_path, "unused")
    lake = tmp_path / "lake"
    dead_letters = lake / "bronze" / "dead_letter"
    assert len(hudi_rows(dead_letters)) > 0
    assert rebuild_bloom_filters(spark, dead_letters) > 0
    commits = {table: hudi_commits(lake / "bronze" / table) for table in all_table_names()}

    bad = next(d for d in list_dead_letters(str(lake), reason="unknown_op"))
    document = json.loads(bad["raw_line"])
    document.get("payload", document)["op"] = "c"  # an operator's fix: the line parses now
    fixes = tmp_path / "fixes.jsonl"
    fixes.write_text(json.dumps({"dead_letter_id": bad["dead_letter_id"], "raw_line": json.dumps(document)}) + "\n")

    assert cli_main(["dead-letter", "replay", "--lake", str(lake), "--fixes", str(fixes)]) == 1

    err = capsys.readouterr().err
    assert f"bronze table {dead_letters}: the bloom filter of" in err and "rebuild bronze" in err
    assert {table: hudi_commits(lake / "bronze" / table) for table in all_table_names()} == commits
