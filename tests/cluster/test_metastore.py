"""A shared Hive Metastore: ``lakehouse metastore`` (HMS 4.0.0 on PostgreSQL), used at once by the
ingestion (Hudi's hive sync, HMS mode), the Thrift server (dbt) and a second Spark application.

The lake is on moto's S3. Judged independently of the code under test: what the metastore
recorded is read from its PostgreSQL database with SQL; bronze and silver against the
simulator's oracle (silver through the Thrift server and hudi-rs); the second application,
which has only the Hudi bundle, S3A and the metastore URI, must read the same answers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import boto3
import psycopg
import pytest

from ingestion.jvm import lib_dir
from ingestion.spark import s3a_confs, spark_home
from ingestion.stream.reading import read_latest
from lakehouse.services import metastore, registry, thrift
from lakehouse.services.ports import free_port
from simulator.oracle import event_columns, load_oracle
from tests.conftest import ThriftServer, settings_for
from tests.dbt_project.silver_oracle import SILVER_COLUMNS, silver_differences
from tests.security.listening_sockets import assert_loopback_only, process_tree
from tests.stream.judge import normalize

pytestmark = pytest.mark.cluster
LAKEHOUSE = os.path.join(os.path.dirname(sys.executable), "lakehouse")
HOODIE_INPUT_FORMAT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"


def registered_tables(settings) -> dict[str, tuple[str, str, str, int]]:
    """bronze tables as the metastore's database holds them: name -> (type, input format, location, partitions)."""
    port = int((metastore.metastore_dir(settings) / "metastore-db.port").read_text())
    password = (metastore.metastore_dir(settings) / "metastore-db.password").read_text().strip()
    with psycopg.connect(host="127.0.0.1", port=port, user="lakehouse", password=password,
                         dbname="metastore") as conn:
        rows = conn.execute(
            'select t."TBL_NAME", t."TBL_TYPE", s."INPUT_FORMAT", s."LOCATION",'
            ' (select count(*) from "PARTITIONS" p where p."TBL_ID" = t."TBL_ID")'
            ' from "TBLS" t join "DBS" d on d."DB_ID" = t."DB_ID" join "SDS" s on s."SD_ID" = t."SD_ID"'
            " where d.\"NAME\" = 'bronze'").fetchall()
    return {name: (kind, fmt, location, partitions) for name, kind, fmt, location, partitions in rows}


def second_engine(uri: str, scratch: Path) -> dict:
    """Run tests/cluster/second_engine.py with spark-submit: the bundle, S3A and the metastore URI only.
    ``scratch``: the directory of Hive's session resources (else one is left in the system temp directory)."""
    spark_jars = lib_dir("spark")
    jars = [next(spark_jars.glob(f"{prefix}*.jar")) for prefix in ("hudi-spark3.5-bundle", "hadoop-aws",
                                                                     "aws-java-sdk-bundle")]
    confs = {"spark.sql.catalogImplementation": "hive", "spark.hadoop.hive.metastore.uris": uri,
             "spark.ui.enabled": "false", "spark.driver.bindAddress": "127.0.0.1",
             "spark.hadoop.hive.downloaded.resources.dir": f"{scratch}/${{hive.session.id}}_resources", **s3a_confs()}
    specs = [f"{relation}=" + ",".join(columns.values()) for relation, columns in SILVER_COLUMNS.values()]
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", "local[1]", "--jars", ",".join(map(str, jars)),
               *[arg for key, value in confs.items() for arg in ("--conf", f"{key}={value}")],
               str(Path(__file__).with_name("second_engine.py")), *specs]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def wait_for_batch(stream: subprocess.Popen, timeout: float = 600.0) -> None:
    """Until the continuous ingestion ``stream`` reported its first micro-batch (a JSON line on stdout)."""
    deadline = time.monotonic() + timeout
    assert stream.stdout is not None
    while time.monotonic() < deadline:
        line = stream.stdout.readline()
        if not line:
            raise AssertionError(f"the ingestion ended early: {stream.stderr.read()[-3000:] if stream.stderr else ''}")
        if '"event": "micro_batch"' in line:
            return
    raise AssertionError("no micro-batch within the timeout")


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, f"{args}: {result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_ingestion_thrift_server_and_a_second_engine_share_one_metastore(moto_endpoint, tmp_path,
                                                                          monkeypatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    boto3.client("s3").create_bucket(Bucket="hms-bucket")
    lake = "s3a://hms-bucket/tickit/lake"
    settings = dataclasses.replace(settings_for(tmp_path / "home", free_port()), lake=lake,
                                   metastore_port=free_port())
    uri = metastore.uri(settings)
    server = ThriftServer(settings)
    env = {**os.environ, **server.env, "LAKEHOUSE_METASTORE_PORT": str(settings.metastore_port),
           "DBT_TARGET_PATH": str(tmp_path / "target"), "DBT_LOG_PATH": str(tmp_path / "logs")}
    env.pop("LAKEHOUSE_METASTORE_URI", None)
    try:
        started = run(env, "metastore", "start")
        assert f"export LAKEHOUSE_METASTORE_URI={uri}" in started.stdout, started.stdout
        for name in (metastore.SERVICE, metastore.DATABASE_SERVICE):
            assert_loopback_only(process_tree(registry.read(settings, name).pid), name)

        env["LAKEHOUSE_METASTORE_URI"] = uri
        settings = dataclasses.replace(settings, metastore_uri=uri)
        thrift.start(settings, timeout=600)
        run(env, "simulate", "--scale", "0.003", "--changes", "400", "--seed", "17", "--inject-bad", "3", "--quiet")
        run(env, "ingest", "--once", "--quiet")

        # Hudi's sync registered every table the ingestion writes, as Hudi tables on S3
        oracle = load_oracle(settings.landing)
        tables = registered_tables(settings)
        assert set(tables) == {*oracle.tables, "dead_letter", "schema_change"}, tables
        for table, (kind, input_format, location, partitions) in tables.items():
            assert (kind, input_format, location) == ("EXTERNAL_TABLE", HOODIE_INPUT_FORMAT,
                                                      f"{lake}/bronze/{table}"), table
            if table in oracle.tables and any(True for _ in oracle.events(table)):
                assert partitions >= 1, table

        # dbt through the Thrift server on the same metastore: the build passes; silver = oracle (Spark and hudi-rs)
        run(env, "dbt", "build")  # every model, snapshot and test, through the shared metastore
        assert silver_differences(server.host, server.port, settings.landing) == {}

        # the second application finds the same tables by name and reads the same answers
        seen = second_engine(uri, tmp_path / "second-engine")
        for table in oracle.tables:
            assert seen["bronze"][table] == sum(1 for _ in oracle.events(table)), table
        assert seen["bronze"]["dead_letter"] == 3
        for relation, columns in SILVER_COLUMNS.values():
            select = ", ".join(f"cast(`{c}` as string)" for c in columns.values())
            through_server = sorted(map(list, server.sql(f"select {select} from silver.`{relation}`")))
            assert sorted(seen["silver"][relation]) == through_server, relation

        # more changes while the server runs: its next query sees them, with no refresh
        run(env, "simulate", "--changes", "300", "--seed", "18", "--quiet")
        run(env, "ingest", "--once", "--quiet")
        oracle = load_oracle(settings.landing)
        for table in oracle.tables:
            assert server.sql(f"select count(*) from bronze.`{table}`")[0][0] == \
                sum(1 for _ in oracle.events(table)), table

        # the metastore stops under a running ingestion: the next commit lands, its sync fails, the
        # ingestion stops with an error naming the metastore; back up, a restart registers every
        # table again and resumes from the checkpoint: nothing lost or written twice
        run(env, "simulate", "--changes", "200", "--seed", "19", "--quiet")
        stream = subprocess.Popen([LAKEHOUSE, "ingest", "--quiet", "--trigger", "2", "--timeout", "600"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_batch(stream)  # those changes are committed and synced
            registry.stop(settings, metastore.SERVICE)
            run(env, "simulate", "--changes", "200", "--seed", "20", "--quiet")
            _, stderr = stream.communicate(timeout=900)
        finally:
            if stream.poll() is None:
                stream.kill()
        assert stream.returncode == 1, stderr[-3000:]
        error = [line for line in stderr.splitlines() if line.startswith("error: ")]
        assert error and error[0].startswith(f"error: metastore {uri}: "), stderr[-3000:]
        run(env, "metastore", "start")
        run(env, "ingest", "--once", "--quiet")
        oracle = load_oracle(settings.landing)
        for table in oracle.tables:
            assert server.sql(f"select count(*) from bronze.`{table}`")[0][0] == \
                sum(1 for _ in oracle.events(table)), table
            columns = [name for name, _ in event_columns(table)]
            expected = Counter(tuple(normalize(e.get(c)) for c in columns) for e in oracle.events(table))
            rows = read_latest(f"{lake}/bronze/{table}")
            actual = Counter(tuple(normalize(r.get(c)) for c in columns) for r in (rows.to_pylist() if rows else []))
            assert actual == expected, table
    finally:
        thrift.stop(settings)
        for line in metastore.stop(settings):
            print(line)
        metastore.discard(settings)
    assert not metastore.status(settings).running
    assert registry.read(settings, metastore.DATABASE_SERVICE) is None
