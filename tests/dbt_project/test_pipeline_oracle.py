"""The real path: simulate -> ingest -> dbt silver, compared with the simulator's oracle.

Slow (two ingestion runs and two dbt runs). Landing and lake live in the test's own
temporary directory; bronze views are synced into the shared Thrift server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingestion.cdc.contracts import load_contracts
from lakehouse.services import thrift
from simulator.oracle import load_oracle
from tests.dbt_project.dbt_runner import PROJECT_DIR, DbtRunner
from tests.dbt_project.silver_oracle import differences, oracle_rows, silver_rows

LAKEHOUSE = Path(sys.executable).with_name("lakehouse")


def _lakehouse(env: dict[str, str], *args: str) -> None:
    result = subprocess.run([str(LAKEHOUSE), *args], cwd=PROJECT_DIR, env=env, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, f"lakehouse {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"


def _silver_vs_oracle(server, landing: Path) -> dict[str, list[str]]:
    oracle = load_oracle(landing)
    out = {}
    for table, contract in load_contracts().items():
        expected = oracle_rows({tuple(row[k] for k in contract.primary_key): row
                                for row in oracle.live_rows(table)}, table)
        problems = differences(silver_rows(server.host, server.port, table), expected)
        if problems:
            out[table] = problems
    return out


@pytest.mark.slow
def test_simulate_ingest_dbt_silver_equals_the_simulator_oracle(thrift_server, tmp_path) -> None:
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    instance_env = {**thrift_server.env, "LAKEHOUSE_LANDING": str(landing), "LAKEHOUSE_LAKE": str(lake)}
    env = {**os.environ, **instance_env}
    for schema in ("bronze", "staging", "silver", "gold", "seeds", "snapshots"):
        thrift.run_sql(thrift_server.host, thrift_server.port, f"drop schema if exists {schema} cascade")
    dbt = DbtRunner(instance_env, tmp_path)

    _lakehouse(env, "simulate", "--scale", "0.005", "--changes", "500", "--truncate", "--quiet")
    _lakehouse(env, "ingest", "--once", "--quiet")
    dbt.run("build", "-s", "+tag:silver", "--indirect-selection", "cautious")
    assert _silver_vs_oracle(thrift_server, landing) == {}

    _lakehouse(env, "simulate", "--changes", "500", "--quiet")
    _lakehouse(env, "ingest", "--once", "--quiet")
    dbt.run("build", "-s", "+tag:silver", "--indirect-selection", "cautious")
    assert _silver_vs_oracle(thrift_server, landing) == {}
