"""The local SparkSession the project's jobs (ingestion, benchmarks, tests) run in, with Apache Hudi."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

#: Settings every project SparkSession shares: loopback only, UI off, UTC, small shuffles.
DEFAULT_CONFS: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.parquet.mergeSchema": "true",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "4g",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties')}",
}


#: What makes a Spark application speak Hudi (the Hudi Spark bundle's quick-start settings):
#: Kryo with Hudi's registrar, Hudi's SQL extension (MERGE INTO, CALL procedures) and catalog.
HUDI_CONFS: dict[str, str] = {
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
}


#: S3A's retry budget. Hadoop 3.3.4's defaults retry a throttled request 20 times with exponential
#: backoff from 500 ms (a 503 outage would keep the stream retrying for hours) and let the AWS SDK
#: retry each attempt 10 times more. These bound a failing operation to about a minute: the SDK
#: tries 3 times, S3A retries throttling (503 SlowDown) 6 times from 500 ms, exponentially, and
#: other retryable failures (connection refused, timeouts) 5 times, 500 ms apart and growing.
#: Measured against an injected outage: tests/cluster/test_s3_faults.py, docs/cluster.md.
S3A_RETRIES: dict[str, str] = {
    "spark.hadoop.fs.s3a.attempts.maximum": "3",
    "spark.hadoop.fs.s3a.retry.throttle.limit": "6",
    "spark.hadoop.fs.s3a.retry.throttle.interval": "500ms",
    "spark.hadoop.fs.s3a.retry.limit": "5",
    "spark.hadoop.fs.s3a.retry.interval": "500ms",
}


def s3a_confs(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Hadoop S3A settings for ``s3a://`` and ``s3://`` paths (lake, landing), from the environment.

    ``s3://`` is mapped to S3A, so both schemes are read one way. Credentials come from the
    AWS chain S3A walks (environment variables, then instance roles); nothing is written
    here. With ``AWS_ENDPOINT_URL`` (an S3-compatible store: MinIO, moto), S3A talks to that
    endpoint with path-style addressing, and without TLS for an ``http://`` one.
    """
    env = os.environ if environ is None else environ
    confs = {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        # keep the "directory" marker objects instead of deleting the parents' markers after every
        # file written (Hadoop 3.4's only behaviour; read correctly by S3A since 3.3.1/3.2.2): one
        # ingestion batch made 230 multi-object DELETEs fewer (2,350 -> 2,128 requests; bench_s3.py)
        "spark.hadoop.fs.s3a.directory.marker.retention": "keep",
        **S3A_RETRIES,
    }
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        confs["spark.hadoop.fs.s3a.endpoint"] = endpoint
        confs["spark.hadoop.fs.s3a.path.style.access"] = "true"
        confs["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(endpoint.startswith("https://")).lower()
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        confs["spark.hadoop.fs.s3a.endpoint.region"] = region
    return confs


def spark_master(cores: int = 2) -> str:
    """Where the project's Spark applications run: ``LAKEHOUSE_SPARK_MASTER`` (``spark://host:port`` of a
    standalone cluster, ``yarn``, ...), else ``local[cores]`` in the process."""
    return os.environ.get("LAKEHOUSE_SPARK_MASTER") or f"local[{cores}]"


def user_confs() -> dict[str, str]:
    """``LAKEHOUSE_SPARK_CONF``: a JSON object of Spark settings applied last to every project Spark
    application and the managed Thrift server (executor sizes, ``spark.cores.max`` on a shared cluster)."""
    text = os.environ.get("LAKEHOUSE_SPARK_CONF")
    if not text:
        return {}
    try:
        confs = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"LAKEHOUSE_SPARK_CONF is not a JSON object: {exc}") from None
    if not isinstance(confs, dict):
        raise ValueError("LAKEHOUSE_SPARK_CONF is not a JSON object of Spark settings")
    return {str(key): str(value) for key, value in confs.items()}


#: Settings holding JVM options, which the project sets too (log4j's configuration; the Thrift
#: server's home marker that ``lakehouse thrift stop`` finds it by, Derby's home): a user's value
#: is added after the project's instead of replacing it (a later JVM option wins over an earlier one).
JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def with_user_confs(confs: dict[str, str]) -> dict[str, str]:
    """``confs`` with ``user_confs()`` applied last, JVM options (``JAVA_OPTION_KEYS``) joined."""
    merged = dict(confs)
    for key, value in user_confs().items():
        merged[key] = f"{merged[key]} {value}" if key in JAVA_OPTION_KEYS and merged.get(key) else value
    return merged


def jar_confs() -> dict[str, str]:
    """The pinned jars (jvm/spark/pom.xml) on the driver's and executors' classpath.

    Not ``spark.jars``: jars added that way live in a class loader that the Thrift server
    closes with the first client session, after which ``hudi`` is an unknown data source.
    """
    from ingestion.jvm import classpath

    jars = classpath("spark")
    return {"spark.driver.extraClassPath": jars, "spark.executor.extraClassPath": jars}


def spark_home() -> Path:
    """SPARK_HOME of the pyspark wheel installed in this interpreter."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def prepare_environment() -> None:
    """Point PySpark at this interpreter and the wheel's SPARK_HOME, bound to loopback."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["SPARK_HOME"] = str(spark_home())


def submitted() -> bool:
    """Whether this Python runs under ``spark-submit``: its JVM started first and handed PySpark the
    gateway (PySpark otherwise starts the JVM itself, without these variables)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def local_spark_session(
    app_name: str = "lakehouse",
    cores: int = 2,
    extra_confs: dict[str, str] | None = None,
    warehouse_dir: Path | None = None,
):
    """Get (or create) the process's SparkSession with the project's settings.

    Under ``spark-submit`` (``lakehouse/submit.py``) the master, deploy mode, class path and
    Python of the submission stand: only the session's settings are added.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if submitted():
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    else:
        prepare_environment()
        builder = builder.master(spark_master(cores))
    confs = {**DEFAULT_CONFS, **HUDI_CONFS, **jar_confs(), **s3a_confs()}
    if warehouse_dir is not None:
        confs["spark.sql.warehouse.dir"] = str(warehouse_dir)
    confs.update(extra_confs or {})
    confs = with_user_confs(confs)
    for key, value in confs.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
