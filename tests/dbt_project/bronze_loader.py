"""Test loader: writes change events into real Hudi bronze tables and registers them.

For the dbt project tests, which need bronze tables with chosen events rather than a
simulated landing zone. Each ``commit`` is one Hudi commit per table, written with the
ingestion's own write options (``ingestion.stream.bronze.write_options``) through a local
SparkSession, and the tables are registered through the Thrift server the way the
ingestion registers them (``ingestion.catalog.sync``), so dbt reads exactly what it
reads in production: ``bronze.<table> USING hudi`` with real ``_hoodie_commit_time``s.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from ingestion.catalog import CatalogSync, ThriftCatalog
from ingestion.stream.bronze import DEAD_LETTER_TABLE, arrow_schema, table_columns, table_path, write_options
from ingestion.stream.hudi_tables import create_empty, latest_commit
from ingestion.stream.parse import utc_timestamps
from lakehouse.services import thrift


class BronzeLoader:
    """Creates the bronze Hudi tables of a lake and appends commits of events to them."""

    def __init__(self, spark: SparkSession, lake: Path, host: str, port: int, schema: str = "bronze"):
        self.spark, self.lake, self.host, self.port, self.schema = spark, Path(lake), host, port, schema

    def _schema(self, table: str):
        return utc_timestamps(arrow_schema(table_columns()[table]))

    def create_all(self) -> None:
        """(Re)create every bronze table empty (a fresh lake) and register it."""
        thrift.run_sql(self.host, self.port, f"drop schema if exists {self.schema} cascade")
        shutil.rmtree(self.lake, ignore_errors=True)
        for table in table_columns():
            create_empty(self.spark, table_path(str(self.lake), table), self._schema(table), write_options(table))
        with ThriftCatalog(self.host, self.port) as catalog:
            results = CatalogSync(self.lake, catalog, database=self.schema).sync_tables(list(table_columns()))
        failed = [r for r in results if r.status not in ("registered", "unchanged")]
        assert not failed, failed

    def commit(self, events: dict[str, list[dict]]) -> dict[str, str]:
        """One Hudi commit per table that has events; the commit instant of each."""
        instants = {}
        ingested_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        for table, rows in events.items():
            if not rows:
                continue
            schema = self._schema(table)
            records = []
            for row in rows:
                full = dict(row)
                if table != DEAD_LETTER_TABLE and full.get("_cdc_ingested_at") is None:
                    full["_cdc_ingested_at"] = ingested_at
                records.append(tuple(full.get(name) for name in schema.names))
            frame = self.spark.createDataFrame(records, from_arrow_schema(schema))
            path = table_path(str(self.lake), table)
            frame.write.format("hudi").options(**write_options(table)).mode("append").save(path)
            instants[table] = latest_commit(self.spark, path)
        return instants
