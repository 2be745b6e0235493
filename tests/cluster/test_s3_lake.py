"""The lake on S3 through Hadoop's S3A: ``lakehouse ingest --lake s3a://...`` against moto's server.

moto stands in for S3 (no AWS here): the ingestion runs as users run it (the CLI, its own
Spark, S3A settings from ``AWS_ENDPOINT_URL`` and the fake keys in the environment), from an
``s3://`` landing zone, with its checkpoint in the lake's bucket (the default); hudi-rs
then reads every bronze table back from the bucket (its object-store options), and the
simulator's oracle judges what it finds. ``lakehouse status`` reads the same bucket.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter

import boto3
import pytest

from ingestion.stream.reading import read_latest
from lakehouse.services import thrift
from lakehouse.services.ports import free_port
from simulator.oracle import event_columns, load_oracle
from simulator.simulation import SimulationOptions, run_simulation
from tests.conftest import ThriftServer, settings_for
from tests.dbt_project.silver_oracle import silver_differences, table_location
from tests.stream.judge import normalize

pytestmark = pytest.mark.cluster
LAKEHOUSE = os.path.join(os.path.dirname(sys.executable), "lakehouse")


def test_ingest_into_a_lake_on_s3_equals_the_oracle(moto_endpoint, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    boto3.client("s3").create_bucket(Bucket="lake-bucket")
    boto3.client("s3").create_bucket(Bucket="landing-bucket")
    landing = "s3://landing-bucket/kafka-connect"  # what a Kafka Connect S3 sink writes, read through S3A
    run_simulation(SimulationOptions(landing=landing, scale=0.003, changes=500, format="mixed", inject_bad=5,
                                     seed=3))
    lake = "s3a://lake-bucket/tickit/lake"
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path / "home"), "LAKEHOUSE_LANDING": landing,
           "LAKEHOUSE_LAKE": lake}
    result = subprocess.run([LAKEHOUSE, "ingest", "--once", "--no-sync", "--quiet"], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"(checkpoint {lake}/_checkpoints/" in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "s3a:").exists() and not os.path.exists("s3a:")  # nothing written locally
    assert not (tmp_path / "home" / "checkpoints").exists()

    keys = [o["Key"] for page in boto3.client("s3").get_paginator("list_objects_v2").paginate(Bucket="lake-bucket")
            for o in page.get("Contents", [])]
    assert any(k.startswith("tickit/lake/_checkpoints/") and "/query/commits/" in k for k in keys)
    oracle = load_oracle(landing)
    for table in oracle.tables:
        assert any(k.startswith(f"tickit/lake/bronze/{table}/.hoodie/") for k in keys), table
        columns = [name for name, _ in event_columns(table)]
        expected = Counter(tuple(normalize(e.get(c)) for c in columns) for e in oracle.events(table))
        rows = read_latest(f"{lake}/bronze/{table}")  # hudi-rs, from the bucket
        actual = Counter(tuple(normalize(r.get(c)) for c in columns) for r in (rows.to_pylist() if rows else []))
        assert actual == expected, (table, sum(expected.values()), sum(actual.values()))
    dead = read_latest(f"{lake}/bronze/dead_letter")
    assert dead is not None and dead.num_rows == len(oracle.dead_letters())

    status = subprocess.run([LAKEHOUSE, "status", "--json", "--no-catalog"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert status.returncode == 0, status.stderr[-2000:]
    report = json.loads(status.stdout)
    assert report["landed_files"] == report["processed_files"] > 0 and report["backlog_files"] == 0, report
    rows = {t["table"]: t["rows"] for t in report["tables"]}
    assert rows == {**{table: len(oracle.events(table)) for table in oracle.tables},
                    "dead_letter": len(oracle.dead_letters()), "schema_change": 0}


def test_a_lake_on_a_missing_bucket_is_one_clear_error(moto_endpoint, tmp_path) -> None:
    landing = tmp_path / "landing"
    run_simulation(SimulationOptions(landing=str(landing), scale=0.002, changes=50, seed=4))
    lake = "s3a://no-such-bucket/lake"
    env = {**os.environ, "AWS_ENDPOINT_URL": moto_endpoint, "LAKEHOUSE_HOME": str(tmp_path / "home"),
           "LAKEHOUSE_LANDING": str(landing), "LAKEHOUSE_LAKE": lake}

    def error_lines(extra: dict[str, str]) -> list[str]:
        result = subprocess.run([LAKEHOUSE, "ingest", "--once", "--no-sync", "--quiet"], env={**env, **extra},
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 1, result.stderr[-2000:]
        return [line for line in result.stderr.splitlines() if line.startswith(("error:", "hint:"))]

    # the lake's writer lock (ingestion/lake_lock.py) is the first thing written, in the lake's bucket
    for extra in ({}, {"LAKEHOUSE_CHECKPOINTS": str(tmp_path / "checkpoints")}):
        lines = error_lines(extra)
        assert lines[0].startswith(f"error: lake {lake}: cannot take the writer lock "), lines
        assert "bucket does not exist" in lines[0], lines
        assert lines[1].startswith("hint: check the lake path"), lines
    # a lake whose bucket exists, checkpoints on a missing one: the checkpoint is named
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket="lake-bucket")
    checkpoints = "s3a://no-such-bucket/checkpoints"
    lines = error_lines({"LAKEHOUSE_LAKE": "s3a://lake-bucket/lake", "LAKEHOUSE_CHECKPOINTS": checkpoints})
    assert lines[0].startswith(f"error: checkpoints {checkpoints}: "), lines
    assert "bucket does not exist" in lines[0], lines
    assert lines[1].startswith("hint: set LAKEHOUSE_CHECKPOINTS"), lines


def test_dbt_builds_silver_in_a_warehouse_on_s3(moto_endpoint, tmp_path, monkeypatch) -> None:
    """The Thrift server of a lake on S3 keeps silver in ``<lake>/warehouse``; silver equals the oracle."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)  # before the server's JVM starts: S3A reads it
    boto3.client("s3").create_bucket(Bucket="warehouse-bucket")
    lake, landing = "s3a://warehouse-bucket/tickit/lake", "s3://warehouse-bucket/kafka-connect"
    settings = dataclasses.replace(settings_for(tmp_path / "home", free_port()), lake=lake, landing=landing)
    assert settings.warehouse == f"{lake}/warehouse"
    thrift.start(settings, timeout=600)
    try:
        server = ThriftServer(settings)
        env = {**os.environ, **server.env, "DBT_TARGET_PATH": str(tmp_path / "target"),
               "DBT_LOG_PATH": str(tmp_path / "logs")}
        for args in (["simulate", "--scale", "0.003", "--changes", "400", "--seed", "12", "--format", "mixed",
                      "--quiet"], ["ingest", "--once", "--quiet"], ["dbt", "run", "--select", "+path:models/silver"]):
            result = subprocess.run([LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=1800)
            assert result.returncode == 0, f"{args}: {result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        assert silver_differences(server.host, server.port, landing) == {}
        state = table_location(server.host, server.port, "silver.users_cdc_state")
        assert state.startswith(f"{lake}/warehouse/silver.db/"), state
        keys = [o["Key"] for page in boto3.client("s3").get_paginator("list_objects_v2").paginate(
            Bucket="warehouse-bucket", Prefix="tickit/lake/warehouse/silver.db/") for o in page.get("Contents", [])]
        assert any("/.hoodie/" in key for key in keys) and any(key.endswith(".parquet") for key in keys)
        assert not (tmp_path / "home" / "warehouse").exists()
    finally:
        thrift.stop(settings)
