"""Fixtures of the dbt project tests: a bronze loader and a dbt runner on the shared Thrift server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ingestion.cdc.contracts import load_contracts
from lakehouse.config import PROJECT_DIR
from lakehouse.jobs.changes import BuiltRecord, bronze_sources, narrow
from lakehouse.services import thrift
from tests.dbt_project.bronze_loader import BronzeLoader
from tests.dbt_project.cdc_fixture import TickitFixture
from tests.dbt_project.dbt_runner import DbtRunner
from tests.dbt_project.silver_oracle import differences, oracle_rows, silver_rows

LAYER_SCHEMAS = ("staging", "silver", "gold", "seeds", "snapshots")


@dataclass
class DbtLakehouse:
    """A Thrift server with fixture bronze, a dbt runner and the fixture's database rows as oracle."""

    server: object
    loader: BronzeLoader
    dbt: DbtRunner
    fixture: TickitFixture

    def commit(self, events: dict[str, list[dict]]) -> dict[str, str]:
        """One bronze Hudi commit per table with events; their instants."""
        return self.loader.commit(events)

    def scheduled_run(self, *terms: str) -> list[str]:
        """``dbt run --select TERMS`` narrowed as the ``hourly`` job narrows its build
        (``lakehouse/jobs/changes.py``: the changed tables' lineage, unchanged views left out); the
        views it (re-)created. Runs as written the first time, like the job."""
        record = BuiltRecord(self.dbt.work_dir / "job", 1, str(self.loader.lake))
        narrowing = narrow(["run", "--select", *terms], str(self.loader.lake), bronze_sources(PROJECT_DIR),
                           record.load(), record.state())
        if narrowing is None:
            return []
        self.dbt.run(*narrowing.args)
        target = self.dbt.work_dir / "target"
        record.save(narrowing.built, target / "manifest.json")
        manifest = json.loads((target / "manifest.json").read_text())["nodes"]
        results = json.loads((target / "run_results.json").read_text())["results"]
        return sorted(manifest[r["unique_id"]]["name"] for r in results
                      if manifest[r["unique_id"]]["config"].get("materialized") == "view")

    def sql(self, statement: str) -> list[tuple]:
        return thrift.run_sql(self.server.host, self.server.port, statement)

    def silver_differences(self, tables: tuple[str, ...] | None = None) -> dict[str, list[str]]:
        """Per table (default: all), how silver differs from the source rows the committed events came from."""
        out = {}
        for table in load_contracts():
            if tables is not None and table not in tables:
                continue
            expected = oracle_rows({(key,): row for key, row in self.fixture.rows[table].items()}, table)
            actual = silver_rows(self.server.host, self.server.port, table)
            problems = differences(actual, expected)
            if problems:
                out[table] = problems
        return out

    def relation_rows(self, relation: str) -> list[tuple]:
        """Every row of a relation (its model's columns, not Hudi's `_hoodie_*` meta columns), sorted."""
        columns = [row[0] for row in self.sql(f"describe {relation}")
                   if row[0] and not row[0].startswith(("#", "_hoodie_"))]
        columns = list(dict.fromkeys(columns))  # describe repeats partition columns
        return sorted(self.sql(f"select {', '.join(f'`{c}`' for c in columns)} from {relation}"), key=repr)


def reset_lakehouse(server, spark, tmp_path) -> DbtLakehouse:
    """Drop every dbt schema and reload bronze (a fresh lake) with the fixture's initial events."""
    for schema in LAYER_SCHEMAS:
        thrift.run_sql(server.host, server.port, f"drop schema if exists {schema} cascade")
    loader = BronzeLoader(spark, tmp_path / "lake", server.host, server.port)
    loader.create_all()
    fixture = TickitFixture()
    lakehouse = DbtLakehouse(server, loader, DbtRunner(server.env, tmp_path), fixture)
    lakehouse.commit(fixture.initial_events())
    return lakehouse


@pytest.fixture
def lakehouse(thrift_server, spark, tmp_path) -> Iterator[DbtLakehouse]:
    yield reset_lakehouse(thrift_server, spark, tmp_path)
