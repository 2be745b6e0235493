"""A new lake: ``ingest --once`` leaves every bronze table in the lake and in the catalog, typed.

The first batch creates only the tables it has no rows for (beside its writes); the tables it
has rows for are created by their first write, and an empty landing zone still leaves every
table behind. hudi-rs judges what each table holds; the Thrift server shows what dbt sees.
"""

from __future__ import annotations

import shutil

from ingestion.catalog import ThriftCatalog
from ingestion.catalog.sync import registered_tables
from ingestion.stream.bronze import all_table_names
from tests.stream.conftest import cut_first_commit_short, ingest, simulate
from tests.stream.judge import compare_events, hudi_commits, hudi_rows

SALE_TOPIC = "tickit.ecomm.sale"


def test_a_landing_of_one_topic_creates_the_others_empty_and_registers_all(tmp_path, spark, thrift_server) -> None:
    database = "bronze_new_lake"
    landing = tmp_path / "landing"
    simulate(landing, fmt="envelope", scale=0.002, changes=40, inject_bad=0)
    for topic in (landing / "topics").iterdir():
        if topic.name != SALE_TOPIC:
            shutil.rmtree(topic)
    sales = sum(1 for path in (landing / "topics" / SALE_TOPIC).rglob("*.json")
                for line in path.read_text().splitlines() if line.strip())
    assert sales > 0

    run = ingest(spark, tmp_path, database, thrift_server)

    lake = tmp_path / "lake" / "bronze"
    assert sorted(p.name for p in lake.iterdir() if (p / ".hoodie" / "hoodie.properties").is_file()) == sorted(
        all_table_names())
    assert len(hudi_rows(lake / "sale")) == sales
    batches = run.log_lines()
    created = sorted(table for batch in batches if batch["event"] == "micro_batch" for table in batch["created"])
    assert created == sorted(set(all_table_names()) - {"sale"})  # sale was created by its write
    for table in created:
        assert hudi_rows(lake / table) == [] and len(hudi_commits(lake / table)) == 1  # one empty commit
    with ThriftCatalog(thrift_server.host, thrift_server.port) as catalog:
        assert registered_tables(catalog, database) == set(all_table_names())
    described = {row[0]: row[1] for row in thrift_server.sql(f"DESCRIBE {database}.dead_letter")}
    assert described["reason"] == "string" and described["kafka_offset"] == "bigint"
    assert int(thrift_server.sql(f"SELECT count(*) FROM {database}.sale")[0][0]) == sales
    assert int(thrift_server.sql(f"SELECT count(*) FROM {database}.listing")[0][0]) == 0


def test_an_empty_landing_still_creates_every_table(tmp_path, spark, thrift_server) -> None:
    database = "bronze_new_lake_empty"
    (tmp_path / "landing" / "topics").mkdir(parents=True)

    ingest(spark, tmp_path, database, thrift_server)

    lake = tmp_path / "lake" / "bronze"
    for table in all_table_names():
        assert hudi_rows(lake / table) == [] and len(hudi_commits(lake / table)) == 1
    with ThriftCatalog(thrift_server.host, thrift_server.port) as catalog:
        assert registered_tables(catalog, database) == set(all_table_names())


def test_a_table_creation_cut_short_is_made_again(tmp_path, spark) -> None:
    """A process killed inside Hudi's table creation leaves ``.hoodie`` with its ``.schema`` and
    ``.temp`` folders and no ``hoodie.properties`` (what a SIGKILLed ingestion left of
    ``schema_change`` in the real-Debezium test); the next run creates those tables again and
    stores every event."""
    landing = tmp_path / "landing"
    simulate(landing, fmt="envelope", scale=0.002, changes=40, inject_bad=0)
    lake = tmp_path / "lake" / "bronze"
    for table in ("venue", "schema_change"):
        for folder in (".schema", ".temp"):
            (lake / table / ".hoodie" / folder).mkdir(parents=True)

    run = ingest(spark, tmp_path, "unused")

    report = compare_events(run.lake, run.landing)
    assert report["venue"][0] > 0 and {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert hudi_rows(lake / "schema_change") == [] and len(hudi_commits(lake / "schema_change")) == 1


def test_a_table_whose_first_commit_was_cut_short_is_made_again(tmp_path, spark, thrift_server) -> None:
    """A kill after ``hoodie.properties`` but before the table's first commit completed leaves the
    commit's ``.requested`` file alone (what a SIGKILLed ingestion left of ``dead_letter`` in the
    real-Debezium test on 2026-11-28): Hudi's ``CREATE TABLE ... LOCATION`` then finds no schema
    ("does not contains schema fields") and the table stayed out of the catalog. The next run
    commits such a table again, empty or with its rows, and registers it."""
    database = "bronze_torn_first_commit"
    simulate(tmp_path / "landing", fmt="envelope", scale=0.002, changes=40, inject_bad=0)
    lake = tmp_path / "lake" / "bronze"
    for table in ("venue", "dead_letter"):  # rows in the landing / none
        cut_first_commit_short(spark, tmp_path / "lake", table)

    run = ingest(spark, tmp_path, database, thrift_server)

    report = compare_events(run.lake, run.landing)
    assert report["venue"][0] > 0 and {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert hudi_rows(lake / "dead_letter") == [] and len(hudi_commits(lake / "dead_letter")) == 1
    with ThriftCatalog(thrift_server.host, thrift_server.port) as catalog:
        assert registered_tables(catalog, database) == set(all_table_names())
    described = {row[0]: row[1] for row in thrift_server.sql(f"DESCRIBE {database}.dead_letter")}
    assert described["reason"] == "string"
