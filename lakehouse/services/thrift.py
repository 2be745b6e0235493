"""The managed Spark Thrift server (HiveThriftServer2 from the pyspark wheel).

One server per ``LAKEHOUSE_HOME``: its Derby metastore, warehouse, log and PID file live
under that directory, and it binds to ``LAKEHOUSE_THRIFT_HOST``:``LAKEHOUSE_THRIFT_PORT``
(127.0.0.1:10000 by default), so two instances with different homes and ports run side
by side. ``stop`` only ever signals the process whose PID it recorded, after checking that
this PID still runs a Thrift server for the same home.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion.spark import HUDI_CONFS, jar_confs, s3a_confs, spark_home, spark_master, with_user_confs
from lakehouse.config import Settings
from lakehouse.services import registry

MAIN_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
DRIVER_MEMORY = "6g"  # 2 cores / 24 GB machines run the server beside ingestion and tests
SHUFFLE_PARTITIONS = 8
#: Generated classes the server keeps compiled (Spark's default: 100); see server_confs.
CODEGEN_CACHE_ENTRIES = 4000


class ThriftError(registry.ServiceError):
    """A Thrift server operation failed; the message says what and why."""


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    host: str
    port: int
    answering: bool
    log_file: Path

    def describe(self) -> str:
        if not self.running:
            return f"thrift server: stopped (home {self.log_file.parent.parent})"
        state = "answering" if self.answering else "starting (not answering yet)"
        return f"thrift server: running, pid {self.pid}, {self.host}:{self.port}, {state}"


def java_executable() -> str:
    """The java binary Spark will use; a clear error when Java is missing."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ThriftError(
            "Java was not found (no JAVA_HOME, no java on PATH); Spark needs Java 17",
            hint="run 'make setup' (installs openjdk-17-jre-headless) or set JAVA_HOME",
        )
    return found


def spark_env(settings: Settings) -> dict[str, str]:
    """Environment for every Spark JVM the project starts: loopback only, project Python."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(settings.logs_dir),
        SPARK_PID_DIR=str(settings.run_dir),
    )
    return env


#: Hive keeps one DataNucleus persistence manager factory per JVM and closes it and builds a
#: new one whenever a metastore client's datastore settings differ from the last client's.
#: Spark's Hive client runs with schema verification off and ``autoCreateAll`` on, but the
#: ``HiveConf`` Hudi's hive sync builds has Hive's defaults (verification on, which forces
#: ``autoCreateAll`` off), so every sync closed the factory under the server's own statements
#: and rebuilt it (55 times in one test run), each time with cold map stores: the race
#: ``prime_embedded_metastore`` removes came back with every rebuild. JVM system properties
#: are the one place both ``HiveConf``s read the same way, so both now agree and the factory
#: is built once.
EMBEDDED_METASTORE_PROPERTIES = "-Dhive.metastore.schema.verification=false -Ddatanucleus.schema.autoCreateAll=true"


def metastore_confs(settings: Settings) -> dict[str, str]:
    """The server's metastore: the shared one (``LAKEHOUSE_METASTORE_URI``), else its own Derby."""
    home = settings.home
    marker = f"-Dlakehouse.home={home}"  # identifies the server of this home (_is_our_server)
    if settings.metastore_uri:
        return {"spark.hadoop.hive.metastore.uris": settings.metastore_uri,
                "spark.driver.extraJavaOptions": marker}
    return {
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
        ),
        # The embedded metastore is the server's own (Derby allows one JVM per database), so
        # caching its objects is safe. Every statement looks tables up in it several times;
        # DataNucleus' level-2 cache and a larger Derby statement cache cut the server's CPU
        # per dbt run by ~20% (benchmarks/bench_dbt.py, docs/performance.md).
        "spark.hadoop.datanucleus.cache.level2": "true",
        "spark.hadoop.datanucleus.cache.level2.type": "soft",
        "spark.driver.extraJavaOptions": (
            f"{marker} -Dderby.system.home={home / 'logs'} -Dderby.language.statementCacheSize=2000 "
            + EMBEDDED_METASTORE_PROPERTIES
        ),
    }


def server_confs(settings: Settings, ui: bool = False) -> dict[str, str]:
    """Spark settings of the managed server (``LAKEHOUSE_SPARK_CONF`` last, ``with_user_confs``)."""
    return with_user_confs({
        "spark.master": spark_master(),
        "spark.app.name": f"lakehouse-thrift-{settings.thrift_port}",
        "spark.driver.memory": DRIVER_MEMORY,
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.port": "4040",
        "spark.sql.warehouse.dir": settings.warehouse,
        # Hive's session resources directory defaults to <system temp>/<session id>_resources,
        # and the server's own session leaves it behind at every start: keep it in the home
        "spark.hadoop.hive.downloaded.resources.dir":
            str(settings.home / "hive" / "resources" / "${hive.session.id}_resources"),
        **metastore_confs(settings),
        # Apache Hudi: the bundle and the other pinned jars, Kryo, Hudi's SQL extension and catalog
        **HUDI_CONFS,
        **jar_confs(),
        # s3a:// and s3:// tables (a lake on S3): endpoint and region from the environment
        **s3a_confs(),
        # No cached table relations: Hudi's file index then reads each table's timeline at
        # every query, so a long-lived session (a BI tool, a pooled connection) sees every
        # new commit without a REFRESH TABLE (each session has its own relation cache).
        "spark.sql.filesourceTableRelationCacheSize": "0",
        "spark.sql.catalogImplementation": "hive",
        # Hudi tables of many partitions: list them in the driver, not in a job per query.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        "spark.sql.ansi.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS),
        "spark.sql.adaptive.enabled": "true",
        # Spark compiles the Java code it generates per query (Janino) and keeps the classes
        # in a cache of 100 entries by default; one `dbt build` of this project generates
        # ~1,800 distinct classes, so every build compiled them all again, and the JIT then
        # compiled the new classes' methods again too. With room for every class of a build,
        # repeated builds on a long-lived server (scheduled jobs) reuse them: 1,774 -> 205
        # classes per build, 88-98 s -> 77-86 s for builds 2-3 (docs/performance.md at c579324, "dbt, session 8").
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        # Run each statement in its handler thread: dbt-spark polls async statements every
        # poll_interval (whole seconds), which cost ~1 s per statement; synchronous statements
        # are FINISHED at the first poll.
        "spark.sql.hive.thriftServer.async": "false",
    })


def _pid_file(settings: Settings) -> Path:
    return settings.run_dir / "thrift.pid"


def log_file(settings: Settings) -> Path:
    return settings.logs_dir / "thrift.log"


def _read_pid(settings: Settings) -> int | None:
    try:
        return int(_pid_file(settings).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def cmdline(pid: int) -> str:
    """The command line of ``pid`` (empty when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _is_our_server(pid: int, settings: Settings) -> bool:
    """True when ``pid`` is alive and runs the Thrift server of this home."""
    cmd = cmdline(pid)
    return MAIN_CLASS in cmd and f"-Dlakehouse.home={settings.home} " in cmd


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


@contextlib.contextmanager
def connect(host: str, port: int, timeout: float = 30.0) -> Iterator[Any]:
    """A PyHive connection to a Thrift server (closed on exit)."""
    from pyhive import hive

    conn = hive.connect(host=host, port=port, username="lakehouse", auth="NONE")
    try:
        yield conn
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def run_sql(host: str, port: int, statement: str) -> list[tuple]:
    """Run one statement through the Thrift server; rows for queries, [] otherwise."""
    with connect(host, port) as conn:
        cursor = conn.cursor()
        try:
            cursor.execute(statement)
            try:
                return [tuple(row) for row in cursor.fetchall()]
            except Exception:  # noqa: BLE001 - statements without a result set
                return []
        finally:
            with contextlib.suppress(Exception):
                cursor.close()


def answers(host: str, port: int) -> bool:
    try:
        return run_sql(host, port, "SELECT 1") == [(1,)]
    except Exception:  # noqa: BLE001 - any failure means "not answering"
        return False


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log yet)"
    return "\n".join(text[-lines:])


def status(settings: Settings) -> ServerStatus:
    pid = _read_pid(settings)
    running = pid is not None and _is_our_server(pid, settings)
    host, port = settings.thrift_host, settings.thrift_port
    return ServerStatus(
        running=running,
        pid=pid if running else None,
        host=host,
        port=port,
        answering=running and answers(host, port),
        log_file=log_file(settings),
    )


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps a server on this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind_host(host: str, allow_remote: bool) -> None:
    """Refuse a bind address beyond loopback unless asked for explicitly (``--allow-remote`` or
    ``LAKEHOUSE_ALLOW_REMOTE_BIND=1``), and warn when it is: the server takes unauthenticated SQL."""
    if is_loopback(host):
        return
    if not (allow_remote or os.environ.get("LAKEHOUSE_ALLOW_REMOTE_BIND") == "1"):
        raise ThriftError(
            f"refusing to bind the Thrift server to {host}: it accepts unauthenticated SQL from anyone who "
            "reaches that address",
            hint="bind 127.0.0.1 (the default), or pass --allow-remote (LAKEHOUSE_ALLOW_REMOTE_BIND=1) behind a "
            "firewall you control",
        )
    print(f"warning: the Thrift server binds {host}: anyone who reaches it can run SQL without a password",
          file=sys.stderr)


def start(settings: Settings, ui: bool = False, timeout: float = 240.0, allow_remote: bool = False) -> ServerStatus:
    """Start the server (idempotent) and wait until ``SELECT 1`` answers; a bind address beyond loopback
    needs ``allow_remote`` (``check_bind_host``)."""
    check_bind_host(settings.thrift_host, allow_remote)
    current = status(settings)
    if current.running:
        if not current.answering:
            _wait_until_answering(settings, current.pid, timeout)
        return status(settings)
    host, port = settings.thrift_host, settings.thrift_port
    if port_open(host, port):
        raise ThriftError(
            f"port {host}:{port} is already in use by another process",
            hint="stop that process or choose another port with --port / LAKEHOUSE_THRIFT_PORT",
        )
    java_executable()
    for directory in (settings.home, settings.logs_dir, settings.run_dir):
        directory.mkdir(parents=True, exist_ok=True)
    command = [str(spark_home() / "bin" / "spark-submit"), "--class", MAIN_CLASS]
    for key, value in server_confs(settings, ui).items():
        command += ["--conf", f"{key}={value}"]
    command += [
        "--hiveconf", f"hive.server2.thrift.bind.host={host}",
        "--hiveconf", f"hive.server2.thrift.port={port}",
        "--hiveconf", "hive.server2.enable.doAs=false",
        # Hive's per-session scratch and operation-log directories default to /tmp/<user>
        "--hiveconf", f"hive.server2.logging.operation.log.location={settings.home / 'hive' / 'operation_logs'}",
        "--hiveconf", f"hive.exec.scratchdir={settings.home / 'hive' / 'scratch'}",
        "--hiveconf", f"hive.exec.local.scratchdir={settings.home / 'hive' / 'local_scratch'}",
        "spark-internal",
    ]  # fmt: skip
    log = log_file(settings)
    with open(log, "ab") as out:
        out.write(f"\n==== starting thrift server {time.strftime('%Y-%m-%d %H:%M:%S')} ====\n".encode())
        out.flush()
        proc = subprocess.Popen(  # noqa: S603 - fixed command built above
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=spark_env(settings),
            cwd=settings.home,
            start_new_session=True,
        )
    _pid_file(settings).write_text(f"{proc.pid}\n")
    _wait_until_answering(settings, proc.pid, timeout, proc)
    if not settings.metastore_uri:
        prime_embedded_metastore(host, port)
    return status(settings)


#: One of each metastore write with key-value parameters (database, table, storage and serde,
#: partition), run once, alone, before the server is handed out (``prime_embedded_metastore``).
PRIMER_DATABASE = "lakehouse_metastore_primer"
PRIMER_STATEMENTS = (
    f"CREATE DATABASE IF NOT EXISTS {PRIMER_DATABASE} WITH DBPROPERTIES ('purpose' = 'primer')",
    f"CREATE TABLE {PRIMER_DATABASE}.t (a INT, p INT) USING parquet PARTITIONED BY (p)"
    " TBLPROPERTIES ('purpose' = 'primer')",
    f"ALTER TABLE {PRIMER_DATABASE}.t ADD PARTITION (p = 1)",
    f"DROP DATABASE {PRIMER_DATABASE} CASCADE",
)


def prime_embedded_metastore(host: str, port: int) -> None:
    """Make the embedded metastore's first writes of each kind one at a time.

    DataNucleus 4.1 (the wheel's) builds the SQL of a map field's store (a table's, a
    storage descriptor's, a SerDe's, a partition's parameters) on first use without
    checking again under its lock: two threads writing their first tables at once can
    rebuild it under each other, and one fails with ``NullPointerException ... "ownerIdx"
    is null`` in ``JoinMapStore.getValue`` (seen once in a CI run: Hudi's hive sync of two
    dbt models created on four threads right after the server started). Once built, the
    stores are read-only, so one write of each kind before any client connects removes
    the race, as long as the factory holding them lives (``EMBEDDED_METASTORE_PROPERTIES``).
    """
    with connect(host, port) as conn:
        cursor = conn.cursor()
        try:
            for statement in PRIMER_STATEMENTS:
                cursor.execute(statement)
        finally:
            with contextlib.suppress(Exception):
                cursor.close()


def _wait_until_answering(
    settings: Settings, pid: int | None, timeout: float, proc: subprocess.Popen | None = None
) -> None:
    deadline = time.monotonic() + timeout
    host, port = settings.thrift_host, settings.thrift_port
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            _pid_file(settings).unlink(missing_ok=True)
            raise ThriftError(
                f"the Thrift server exited with code {proc.returncode} while starting; last log lines:\n"
                + tail(log_file(settings)),
                hint=f"full log: {log_file(settings)}",
            )
        if port_open(host, port) and answers(host, port):
            return
        time.sleep(1.0)
    raise ThriftError(
        f"the Thrift server (pid {pid}) did not answer 'SELECT 1' on {host}:{port} within {timeout:.0f}s;"
        " last log lines:\n" + tail(log_file(settings)),
        hint=f"check {log_file(settings)}, then 'lakehouse thrift stop'",
    )


def stop(settings: Settings, timeout: float = 30.0) -> str:
    """Stop the server this home started; returns a one-line description of what happened."""
    pid = _read_pid(settings)
    if pid is None:
        return "thrift server: not running (no PID file)"
    if not _is_our_server(pid, settings):
        _pid_file(settings).unlink(missing_ok=True)
        return f"thrift server: not running (stale PID file for pid {pid} removed)"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _is_our_server(pid, settings):
        time.sleep(0.3)
    if _is_our_server(pid, settings):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        time.sleep(0.5)
    _pid_file(settings).unlink(missing_ok=True)
    return f"thrift server: stopped pid {pid}; metastore and warehouse kept under {settings.home}"
