"""The whole pipeline as a user runs it, through the CLI: simulate -> ingest -> dbt build, twice.

After each round every silver relation must equal the simulator's oracle of live rows,
compared row by row through the Thrift server. The oracle is written by the simulator from
its own model of the source databases, independently of the ingestion and of dbt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from lakehouse.services import thrift
from simulator.oracle import load_oracle
from tests.dbt_project.silver_oracle import hudi_rs_rows, normalize, silver_differences, table_location

LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")
SCHEMAS = ("bronze", "staging", "silver", "gold", "seeds", "snapshots")


def _run(args: list[str], env: dict[str, str], timeout: float = 1200) -> subprocess.CompletedProcess:
    result = subprocess.run([LAKEHOUSE, *args], capture_output=True, text=True, env=env, timeout=timeout)
    output = f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert result.returncode == 0, f"lakehouse {' '.join(args)} failed:\n{output}"
    return result


def _silver_matches_oracle(server, landing: Path) -> dict[str, list[str]]:
    return silver_differences(server.host, server.port, str(landing))


def _gold_read_alike_by_hudi_rs(server) -> dict[str, list[str]]:
    """Each gold table's Hudi files, read by hudi-rs, hold exactly the rows Spark returns for it (the facts;
    the dimensions and reports are views)."""
    problems = {}
    views = {row[1] for row in thrift.run_sql(server.host, server.port, "show views in gold")}
    tables = [row[1] for row in thrift.run_sql(server.host, server.port, "show tables in gold") if row[1] not in views]
    assert sorted(tables) == ["fct_listings", "fct_sales"], tables
    for name in tables:
        columns = [row[0] for row in thrift.run_sql(server.host, server.port, f"describe gold.{name}")
                   if row[0] and not row[0].startswith(("#", "_hoodie_"))]
        listed = ", ".join(f"`{c}`" for c in columns)
        through_spark = Counter(tuple(normalize(v) for v in row) for row in
                                thrift.run_sql(server.host, server.port, f"select {listed} from gold.{name}"))
        in_files = Counter(tuple(normalize(row[c]) for c in columns) for row in
                           hudi_rs_rows(table_location(server.host, server.port, f"gold.{name}")))
        if through_spark != in_files:
            problems[name] = [f"Spark only: {r}" for r in list(through_spark - in_files)[:3]] + \
                             [f"hudi-rs only: {r}" for r in list(in_files - through_spark)[:3]]
    return problems


@pytest.fixture
def clean_server(thrift_server, tmp_path):
    """The shared server with no bronze or dbt schemas left by other tests, and a fresh home."""
    for schema in SCHEMAS:
        thrift_server.sql(f"drop schema if exists {schema} cascade")
    home = tmp_path / "home"
    env = {
        **os.environ,
        **thrift_server.env,
        "LAKEHOUSE_HOME": str(home),
        "LAKEHOUSE_LANDING": str(home / "landing"),
        "LAKEHOUSE_LAKE": str(home / "lake"),
        "DBT_TARGET_PATH": str(tmp_path / "target"),
        "DBT_LOG_PATH": str(tmp_path / "logs"),
    }
    return thrift_server, env, home


def _two_rounds(server, env, home, dbt_args: list[str]) -> None:
    landing = home / "landing"
    _run(["simulate", "--scale", "0.01", "--changes", "1500", "--seed", "11", "--format", "mixed",
          "--inject-bad", "6", "--start-time", "2026-01-01T00:00:00", "--quiet"], env)  # fmt: skip
    _run(["ingest", "--once", "--quiet"], env)
    _run(["dbt", *dbt_args], env)
    assert _silver_matches_oracle(server, landing) == {}
    dead = thrift.run_sql(server.host, server.port, "select count(*) from bronze.dead_letter")[0][0]
    assert dead == len(load_oracle(str(landing)).dead_letters())

    # A second round of changes on the same landing (the simulator resumes), then incremental dbt.
    _run(["simulate", "--changes", "800", "--format", "mixed", "--quiet"], env)
    _run(["ingest", "--once", "--quiet"], env)
    _run(["dbt", *dbt_args], env)
    assert _silver_matches_oracle(server, landing) == {}


def _catalog_rows_are_true(server, env, home) -> None:
    """`lakehouse docs build` computes statistics: the site's row counts equal count(*) of each table."""
    _run(["docs", "build"], env)
    catalog = json.loads((home / "docs" / "site" / "catalog.json").read_text())
    checked = 0
    for node in catalog["nodes"].values():
        schema, name = node["metadata"]["schema"], node["metadata"]["name"]
        if node["metadata"]["type"] == "view":
            assert "rows" not in node["stats"], f"{schema}.{name}"
            continue
        count = thrift.run_sql(server.host, server.port, f"select count(*) from {schema}.{name}")[0][0]
        assert node["stats"]["rows"]["value"] == count, f"{schema}.{name}"
        checked += 1
    assert checked >= 4  # the four silver state tables at least (the small entities' state are views)


def test_simulate_ingest_silver_twice_matches_oracle(clean_server):
    """Default suite: the silver models (and what they read) after each of two rounds; the docs site's row counts."""
    _two_rounds(*clean_server, ["run", "--select", "+path:models/silver"])
    _catalog_rows_are_true(*clean_server)


@pytest.mark.slow
def test_simulate_ingest_full_build_twice_matches_oracle(clean_server):
    """Slow suite: the whole `dbt build` (models, snapshots, seeds, every test) twice."""
    _two_rounds(*clean_server, ["build"])
    assert _gold_read_alike_by_hudi_rs(clean_server[0]) == {}
