"""Catalog registration through a real Thrift server: each bronze Hudi table registered once, always fresh.

Tables are written by Apache Hudi's Spark datasource (the stream's ``write_once``); hudi-rs
is the judge of what a table holds, the Thrift server shows what dbt would see.
"""

from __future__ import annotations

import datetime as dt
import socket
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import from_arrow_schema

from ingestion.catalog import CatalogSync, ThriftCatalog, ThriftUnavailable, sync_lake
from ingestion.catalog.sync import registered_tables
from ingestion.stream.bronze import all_table_names, arrow_schema, bronze_contracts, table_path, write_options
from ingestion.stream.commit import StreamMarker, write_once
from ingestion.stream.job import create_missing_tables
from ingestion.stream.parse import utc_timestamps
from ingestion.stream.sync_state import CatalogSyncer
from tests.stream.judge import hudi_commits, hudi_rows

DATABASE = "bronze_catalog_test"


def sale_rows(first_id: int, count: int, days: int) -> pa.Table:
    contract = bronze_contracts()["sale"]
    rows = []
    for i in range(count):
        when = dt.datetime(2020, 1, 1) + dt.timedelta(days=i % days, seconds=i)
        rows.append({
            "salesid": first_id + i, "listid": i, "sellerid": 1, "buyerid": 2, "eventid": 3, "dateid": 4,
            "qtysold": 1 + i % 8, "pricepaid": Decimal("10.00") + i, "commission": Decimal("1.50"),
            "saletime": when, "_cdc_op": "c", "_cdc_is_deleted": False, "_cdc_source_ts": when,
            "_cdc_position": f"{first_id + i:020d}", "_cdc_tx_id": None, "_cdc_source_db": "ecomm",
            "_cdc_source_table": "sale", "_cdc_topic": "tickit.ecomm.sale", "_cdc_kafka_partition": 0,
            "_cdc_kafka_offset": i, "_cdc_landing_file": "topics/x.json", "_cdc_ingested_at": when,
            "_cdc_source_date": when.date(),
        })
    return pa.Table.from_pylist(rows, schema=arrow_schema(contract.bronze_columns))


_batches = iter(range(10**6))


def write_sale(spark, lake: Path, data: pa.Table) -> str:
    """One Hudi commit of ``data`` into ``<lake>/bronze/sale`` (the stream's writer); its instant."""
    schema = utc_timestamps(data.schema)
    frame = spark.createDataFrame(data.cast(schema).to_pandas(), from_arrow_schema(schema))
    outcome = write_once(frame, table_path(lake, "sale"), write_options("sale"),
                         StreamMarker("catalog-test", next(_batches), "test"), "sale")
    assert outcome.instant is not None
    return outcome.instant


def view_summary(run_sql, table: str = "sale", database: str = DATABASE) -> tuple[int, Decimal]:
    rows = run_sql(f"SELECT count(*), sum(pricepaid) FROM {database}.{table}")
    return int(rows[0][0]), Decimal(str(rows[0][1] or 0))


def hudi_summary(lake: Path) -> tuple[int, Decimal]:
    rows = hudi_rows(table_path(lake, "sale"))
    return len(rows), sum((r["pricepaid"] for r in rows), Decimal(0))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RecordingCatalog:
    """A real ``ThriftCatalog`` that also records the statements sent."""

    def __init__(self, catalog: ThriftCatalog):
        self.catalog = catalog
        self.statements: list[str] = []

    def execute(self, statement: str):
        self.statements.append(statement)
        return self.catalog.execute(statement)


def show_create(thrift_server, table: str, database: str = DATABASE) -> str:
    return " ".join(str(row[0]) for row in thrift_server.sql(f"SHOW CREATE TABLE {database}.{table}"))


def test_registered_once_then_every_commit_is_visible_without_a_refresh(tmp_path, spark, thrift_server) -> None:
    lake = tmp_path / "lake"
    write_sale(spark, lake, sale_rows(1, 50, days=5))
    first = sync_lake(lake, thrift_server.host, thrift_server.port, database=DATABASE)
    assert [(r.table, r.status) for r in first] == [("sale", "registered")]
    ddl = show_create(thrift_server, "sale")
    assert "USING hudi" in ddl and f"LOCATION 'file:{lake / 'bronze' / 'sale'}'" in ddl, ddl
    assert view_summary(thrift_server.sql) == hudi_summary(lake) == (50, hudi_summary(lake)[1])

    # a second registration (a new process: a new CatalogSync) changes nothing in the metastore
    with ThriftCatalog(thrift_server.host, thrift_server.port) as catalog:
        recording = RecordingCatalog(catalog)
        again = CatalogSync(lake, recording, database=DATABASE)
        assert [r.status for r in again.sync_tables(["sale"])] == ["registered"]
        assert not [s for s in recording.statements if s.startswith(("DROP", "CREATE TABLE", "REFRESH"))]
        assert [r.status for r in again.sync_tables(["sale"])] == ["unchanged"]  # known to this process
        assert len(recording.statements) == 2  # CREATE DATABASE IF NOT EXISTS, DESCRIBE: nothing more
    assert show_create(thrift_server, "sale") == ddl

    # freshness: a long-lived session that already read the table, and a new one, see the next
    # commit at once, with no REFRESH TABLE and no catalog call in between
    with ThriftCatalog(thrift_server.host, thrift_server.port) as session:
        assert view_summary(session.execute) == (50, hudi_summary(lake)[1])
        second = write_sale(spark, lake, sale_rows(1000, 30, days=3))
        assert hudi_commits(table_path(lake, "sale"))[-1] == second
        assert hudi_summary(lake)[0] == 80
        assert view_summary(session.execute) == hudi_summary(lake)
        assert view_summary(thrift_server.sql) == hudi_summary(lake)
        # ... and a third one, through the partition filter too (new partitions are found)
        write_sale(spark, lake, sale_rows(5000, 4, days=1))
        assert view_summary(session.execute) == hudi_summary(lake) == (84, hudi_summary(lake)[1])
        pruned = session.execute(f"SELECT count(*) FROM {DATABASE}.sale WHERE _cdc_source_date = DATE'2020-01-01'")
        assert int(pruned[0][0]) == sum(1 for r in hudi_rows(table_path(lake, "sale"))
                                        if r["_cdc_source_date"] == dt.date(2020, 1, 1))


def test_a_view_left_by_an_older_checkout_is_replaced(tmp_path, spark, thrift_server) -> None:
    database = "bronze_catalog_views"
    lake = tmp_path / "lake"
    write_sale(spark, lake, sale_rows(1, 12, days=2))
    thrift_server.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    thrift_server.sql(f"CREATE OR REPLACE VIEW {database}.sale AS SELECT 1 AS salesid")
    other = tmp_path / "elsewhere"
    write_sale(spark, other, sale_rows(1, 3, days=1))
    thrift_server.sql(f"DROP TABLE IF EXISTS {database}.listing")  # a table registered at another location
    thrift_server.sql(f"CREATE TABLE {database}.listing USING hudi LOCATION '{other / 'bronze' / 'sale'}'")
    create_missing_tables(spark, str(lake))
    results = {r.table: r.status for r in sync_lake(lake, thrift_server.host, thrift_server.port,
                                                     database=database)}
    assert results["sale"] == "registered" and results["listing"] == "registered"
    assert "USING hudi" in show_create(thrift_server, "sale", database)
    assert view_summary(thrift_server.sql, database=database) == hudi_summary(lake)
    assert str(lake / "bronze" / "listing") in show_create(thrift_server, "listing", database)
    assert int(thrift_server.sql(f"SELECT count(*) FROM {database}.listing")[0][0]) == 0
    assert hudi_rows(other / "bronze" / "sale")  # dropping a registration never touches the data


def test_empty_tables_are_registered_typed(tmp_path, spark, thrift_server) -> None:
    database = "bronze_catalog_empty"
    lake = tmp_path / "lake"
    assert sorted(create_missing_tables(spark, str(lake))) == sorted(all_table_names())
    results = sync_lake(lake, thrift_server.host, thrift_server.port, database=database)
    assert {r.table: r.status for r in results} == dict.fromkeys(all_table_names(), "registered")
    with ThriftCatalog(thrift_server.host, thrift_server.port) as catalog:
        assert registered_tables(catalog, database) == set(all_table_names())
    described = {row[0]: row[1] for row in thrift_server.sql(f"DESCRIBE {database}.dead_letter")}
    assert described["reason"] == "string" and described["kafka_offset"] == "bigint"
    assert int(thrift_server.sql(f"SELECT count(*) FROM {database}.sale")[0][0]) == 0
    write_sale(spark, lake, sale_rows(1, 7, days=2))  # the first commit with rows: visible at once
    assert int(thrift_server.sql(f"SELECT count(*) FROM {database}.sale")[0][0]) == 7


def test_stream_syncer_catches_up_after_the_server_was_unreachable(tmp_path, spark, thrift_server) -> None:
    database = "bronze_catalog_catchup"
    lake = tmp_path / "lake"
    create_missing_tables(spark, str(lake))
    write_sale(spark, lake, sale_rows(1, 20, days=2))
    syncer = CatalogSyncer(str(lake), thrift_server.host, closed_port(), database=database, retry_seconds=0)
    try:
        syncer.run(force=True)
        assert set(syncer.pending) == set(all_table_names())
        assert "not reachable" in (syncer.last_error or "")
        syncer.catalog.port = thrift_server.port  # the server is back
        syncer.run(force=True)
        assert syncer.pending == {}
        assert syncer.last_error is None
    finally:
        syncer.close()
    assert view_summary(thrift_server.sql, database=database) == hudi_summary(lake)


def test_unreachable_server_is_a_clear_error(tmp_path, spark) -> None:
    lake = tmp_path / "lake"
    write_sale(spark, lake, sale_rows(1, 5, days=1))
    with pytest.raises(ThriftUnavailable, match="not reachable"):
        sync_lake(lake, "127.0.0.1", closed_port(), database=DATABASE)
