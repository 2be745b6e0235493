"""The pipeline on a standalone Spark cluster: a master and two 1-core workers on 127.0.0.1.

The ingestion (``spark-submit --master spark://... lakehouse/submit.py ingest --once``: its driver
in the submitting process, its executors in the workers' JVMs) reads an ``s3://`` landing and writes
the lake on moto's S3, so no executor needs the driver's disk; the Thrift server runs on the
same cluster, and ``dbt run`` builds silver through it. Each application may take one core
(``LAKEHOUSE_SPARK_CONF``), so the server and the ingestion run side by side. Judged by the
simulator's oracle: bronze read by hudi-rs, silver through the Thrift server and hudi-rs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import boto3
import pytest

import lakehouse
from ingestion.jvm import classpath
from ingestion.spark import spark_home
from ingestion.stream.reading import read_latest
from lakehouse.services import spark_cluster, thrift
from lakehouse.services.ports import free_port
from simulator.oracle import event_columns, load_oracle
from tests.conftest import ThriftServer, settings_for
from tests.dbt_project.silver_oracle import silver_differences
from tests.stream.judge import normalize

pytestmark = pytest.mark.cluster
LAKEHOUSE = os.path.join(os.path.dirname(sys.executable), "lakehouse")
ONE_CORE_EACH = json.dumps({"spark.cores.max": "1", "spark.executor.memory": "1g"})


def test_ingest_and_dbt_on_a_standalone_cluster_equal_the_oracle(moto_endpoint, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    boto3.client("s3").create_bucket(Bucket="cluster-bucket")
    lake, landing = "s3a://cluster-bucket/tickit/lake", "s3://cluster-bucket/kafka-connect"
    settings = dataclasses.replace(settings_for(tmp_path / "home", free_port()), lake=lake, landing=landing,
                                   spark_master_port=free_port(), spark_master_ui_port=free_port())
    master = spark_cluster.master_url(settings)
    monkeypatch.setenv("LAKEHOUSE_SPARK_MASTER", master)  # read by the Thrift server started below, too
    monkeypatch.setenv("LAKEHOUSE_SPARK_CONF", ONE_CORE_EACH)
    started = spark_cluster.start(settings, workers=2, cores=1, memory="2g")
    assert started.running and started.alive_workers == 2, started
    try:
        thrift.start(settings, timeout=600)
        server = ThriftServer(settings)
        env = {**os.environ, **server.env, "DBT_TARGET_PATH": str(tmp_path / "target"),
               "DBT_LOG_PATH": str(tmp_path / "logs")}
        result = subprocess.run([LAKEHOUSE, "simulate", "--scale", "0.003", "--changes", "400", "--seed", "13",
                                 "--format", "mixed", "--inject-bad", "3", "--quiet"],
                                env=env, capture_output=True, text=True, timeout=1800)
        assert result.returncode == 0, result.stderr[-3000:]
        # the ingestion submitted as a user submits it: spark-submit's master, not LAKEHOUSE_SPARK_MASTER
        jars = classpath("spark")
        submit_env = {k: v for k, v in env.items() if k != "LAKEHOUSE_SPARK_MASTER"}
        result = subprocess.run(
            [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--deploy-mode", "client",
             "--driver-class-path", jars, "--conf", f"spark.executor.extraClassPath={jars}",
             "--conf", "spark.cores.max=1", "--conf", "spark.executor.memory=1g",
             str(Path(lakehouse.__file__).with_name("submit.py")), "ingest", "--once", "--quiet"],
            env=submit_env, capture_output=True, text=True, timeout=1800)
        assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"

        state = spark_cluster.status(settings)
        assert f"lakehouse-thrift-{settings.thrift_port}" in state.active_apps, state
        assert "lakehouse-ingest" in state.completed_apps, state
        # the executors ran in the workers: each application has a directory in a worker's work dir
        executors = {p.parent.parent.name for p in (tmp_path / "home" / "cluster").glob("worker-*/app-*/*/stderr")}
        assert len(executors) >= 2, executors  # the server's and the ingestion's at least

        oracle = load_oracle(landing)
        for table in oracle.tables:
            columns = [name for name, _ in event_columns(table)]
            expected = Counter(tuple(normalize(e.get(c)) for c in columns) for e in oracle.events(table))
            rows = read_latest(f"{lake}/bronze/{table}")
            actual = Counter(tuple(normalize(r.get(c)) for c in columns)
                             for r in (rows.to_pylist() if rows else []))
            assert actual == expected, (table, sum(expected.values()), sum(actual.values()))

        result = subprocess.run([LAKEHOUSE, "dbt", "build"], env=env,
                                capture_output=True, text=True, timeout=1800)
        assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        assert silver_differences(server.host, server.port, landing) == {}
    finally:
        thrift.stop(settings)
        spark_cluster.stop(settings)
    assert not spark_cluster.status(settings).pids
    assert not [pid for pid in started.pids if _alive(pid)]


def _alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by this test process, does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
