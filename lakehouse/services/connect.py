"""Kafka Connect in standalone mode with Debezium's PostgreSQL and MariaDB connectors.

Started from the ``connect`` JVM role (``jvm/connect/pom.xml``: connect-runtime of the broker's
Kafka version, Debezium 3.x, their JDBC drivers; never on Spark's classpath) with
``ConnectStandalone <worker.properties> <connector.properties>...``. The worker writes to the
project's broker with the JSON converter (``schemas.enable=true``, the schema in every value,
as the ingestion's contracts decode it), keeps source offsets in a file under
``$LAKEHOUSE_HOME/connect`` (so a restart resumes where it stopped) and serves its REST API on
a free port of 127.0.0.1 (connector and task states in ``status``).

Connector settings follow what a production deployment of these connectors sets for CDC
into a lakehouse: ``skipped.operations=none`` (truncates are sent), ``pgoutput`` with a
publication of the captured schema only, a file schema history for MariaDB, tombstones
after deletes (Kafka compaction semantics; the ingestion ignores them).
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion.jvm import JvmDependencyError, classpath
from lakehouse.config import Settings
from lakehouse.services import registry
from lakehouse.services.databases import Database
from lakehouse.services.ports import free_port
from lakehouse.services.private_file import write_private
from lakehouse.services.thrift import ThriftError, java_executable, tail

SERVICE = "connect"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectStandalone"
HEAP = "-Xmx512m"
#: Debezium's topic prefix: topics are ``tickit.<schema or database>.<table>``, as the contracts name them.
TOPIC_PREFIX = "tickit"


class ConnectError(registry.ServiceError):
    """Kafka Connect could not start, or a connector failed; the message says why."""


@dataclass(frozen=True)
class Connector:
    """One Debezium connector: its name and its configuration."""

    name: str
    config: dict[str, str]


def connect_dir(settings: Settings) -> Path:
    return settings.home / "connect"


def log_file(settings: Settings) -> Path:
    return settings.logs_dir / "connect.log"


def postgres_connector(db: Database, schema: str = "ems", signal_table: str | None = None) -> Connector:
    """Debezium's PostgreSQL connector on ``db`` capturing ``schema`` (pgoutput, its own slot).
    ``signal_table``: Debezium's signaling table (``<schema>.<table>``, captured like the others),
    where an ``execute-snapshot`` row starts an incremental snapshot."""
    signals = {"signal.data.collection": signal_table} if signal_table else {}
    return Connector(f"{TOPIC_PREFIX}-{schema}", {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "plugin.name": "pgoutput",
        "database.hostname": db.host,
        "database.port": str(db.port),
        "database.user": db.user,
        "database.password": db.password,
        "database.dbname": db.database,
        "topic.prefix": TOPIC_PREFIX,
        "schema.include.list": schema,
        "slot.name": f"lakehouse_{schema}",
        "publication.name": f"lakehouse_{schema}",
        "publication.autocreate.mode": "filtered",
        "snapshot.mode": "initial",
        "skipped.operations": "none",
        **signals,
    })


def mariadb_connector(db: Database, settings: Settings, server_id: int = 5401) -> Connector:
    """Debezium's MariaDB connector on ``db`` capturing its database (binlog, file schema history)."""
    return Connector(f"{TOPIC_PREFIX}-{db.database}", {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": db.host,
        "database.port": str(db.port),
        "database.user": db.user,
        "database.password": db.password,
        "database.server.id": str(server_id),
        "database.ssl.mode": "disable",
        "database.include.list": db.database,
        "topic.prefix": TOPIC_PREFIX,
        "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        "schema.history.internal.file.filename": str(connect_dir(settings) / f"{db.database}.history"),
        "include.schema.changes": "false",
        # say which int16 columns are TINYINT(1), MySQL's BOOLEAN (contracts generate reads it)
        "datatype.propagate.source.type": ".+\\.TINYINT",
        "snapshot.mode": "initial",
        "skipped.operations": "none",
    })


#: Apicurio Registry's Avro converter (the reference pipeline's), writing Confluent's wire format.
AVRO_CONVERTER = "io.apicurio.registry.utils.converter.AvroConverter"


def converter_properties(apicurio_url: str | None) -> dict[str, str]:
    """Key and value converters: JSON with its schema in every record, or, given an Apicurio
    Registry (2.x or 3.x, its base URL), Apicurio's Avro converter in Confluent's wire format:
    magic byte + the 4-byte content id of the schema it registers through Apicurio's v2 API,
    which the registry's Confluent-compatible API (``ccompat_url``) serves as that id."""
    if apicurio_url is None:
        return {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"}
    properties = {}
    for side in ("key", "value"):
        prefix = f"{side}.converter"
        properties.update({
            prefix: AVRO_CONVERTER,
            f"{prefix}.apicurio.registry.url": apicurio_url.rstrip("/") + "/apis/registry/v2",
            f"{prefix}.apicurio.registry.auto-register": "true",
            f"{prefix}.apicurio.registry.as-confluent": "true",
            f"{prefix}.apicurio.registry.use-id": "contentId",
            f"{prefix}.apicurio.registry.headers.enabled": "false",
        })
    return properties


def ccompat_url(apicurio_url: str) -> str:
    """The Confluent-compatible API of an Apicurio Registry (the ingestion's ``--schema-registry-url``):
    ``ccompat/v7`` (Apicurio 2.6 and 3.x), whose schema ids are content ids unless the registry
    runs in legacy id mode (``apicurio.ccompat.legacy-id-mode.enabled``, default false)."""
    return apicurio_url.rstrip("/") + "/apis/ccompat/v7"


def worker_properties(settings: Settings, bootstrap: str, rest_port: int,
                      apicurio_url: str | None = None) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        **converter_properties(apicurio_url),
        "offset.storage.file.filename": str(connect_dir(settings) / "offsets.dat"),
        "offset.flush.interval.ms": "1000",
        "listeners": f"http://127.0.0.1:{rest_port}",
        # the connectors are on the worker's classpath (the connect role), not in a plugin.path
        "plugin.discovery": "only_scan",
        "producer.linger.ms": "5",
    }


LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = stdout
appender.stdout.type = Console
appender.stdout.name = stdout
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
logger.debezium.name = io.debezium
logger.debezium.level = info
logger.started.name = org.apache.kafka.connect.cli
logger.started.level = info
"""


def _write_properties(path: Path, values: dict[str, str]) -> None:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")

    # a connector's file holds its database password
    write_private(path, "".join(f"{key}={escape(value)}\n" for key, value in values.items()))


def _is_our_worker(pid: int, settings: Settings) -> bool:
    return registry.runs_java_main(pid, MAIN_CLASS, settings.home)


def rest_url(settings: Settings) -> str | None:
    """The running worker's REST address (from its worker.properties)."""
    try:
        for line in (connect_dir(settings) / "worker.properties").read_text().splitlines():
            if line.startswith("listeners="):
                return line.split("=", 1)[1].replace("\\:", ":")
    except OSError:
        return None
    return None


def start(settings: Settings, bootstrap: str, connectors: list[Connector], timeout: float = 180.0,
          apicurio_url: str | None = None) -> int:
    """Start the worker with ``connectors`` (idempotent) and wait until every task runs; its PID.
    With ``apicurio_url``, records are Avro (``converter_properties``), else JSON."""
    record = registry.read(settings, SERVICE)
    if record is not None and record.alive and _is_our_worker(record.pid, settings):
        wait_running(settings, [c.name for c in connectors], timeout)
        return record.pid
    directory = connect_dir(settings)
    for path in (directory, settings.logs_dir):
        path.mkdir(parents=True, exist_ok=True)
    worker = directory / "worker.properties"
    _write_properties(worker, worker_properties(settings, bootstrap, free_port(), apicurio_url))
    files = []
    for connector in connectors:
        path = directory / f"{connector.name}.properties"
        _write_properties(path, {"name": connector.name, **connector.config})
        files.append(str(path))
    (directory / "log4j2.properties").write_text(LOG4J2)
    try:
        jars = classpath("connect")
        java = java_executable()
    except JvmDependencyError as exc:
        raise ConnectError(f"JVM role connect: {exc}", exc.hint) from exc
    except ThriftError as exc:
        raise ConnectError(str(exc), exc.hint) from exc
    command = [java, HEAP, "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
               f"-Dlakehouse.home={settings.home}", "-cp", jars, MAIN_CLASS, str(worker), *files]
    with open(log_file(settings), "ab") as out:
        out.write(f"\n==== starting kafka connect {time.strftime('%Y-%m-%d %H:%M:%S')} ====\n".encode())
        out.flush()
        proc = subprocess.Popen(  # noqa: S603 - fixed command built above
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=directory,
            start_new_session=True)
    registry.register(settings, SERVICE, proc.pid)
    wait_running(settings, [c.name for c in connectors], timeout, proc)
    return proc.pid


def connector_states(settings: Settings) -> dict[str, dict[str, Any]]:
    """``GET /connectors?expand=status`` of the running worker ({} when it does not answer)."""
    url = rest_url(settings)
    if url is None:
        return {}
    try:
        with urllib.request.urlopen(f"{url}/connectors?expand=status", timeout=5) as response:  # noqa: S310
            body = json.load(response)
    except (OSError, urllib.error.URLError, ValueError):
        return {}
    return {name: entry.get("status", {}) for name, entry in body.items()}


def wait_running(settings: Settings, names: list[str], timeout: float,
                 proc: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until each named connector and all its tasks are RUNNING; a FAILED one is an error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            registry.unregister(settings, SERVICE)
            raise ConnectError(f"Kafka Connect exited with code {proc.returncode} while starting; last log lines:\n"
                               + tail(log_file(settings), 30), f"full log: {log_file(settings)}")
        states = check_not_failed(settings, names)
        if names and all(_running(states.get(name, {})) for name in names):
            return
        time.sleep(0.5)
    raise ConnectError(f"the connectors {names} were not running within {timeout:.0f}s; last log lines:\n"
                       + tail(log_file(settings), 30), f"full log: {log_file(settings)}")


def check_not_failed(settings: Settings, names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The connectors' states (``connector_states``); a FAILED connector or task among ``names``
    (default: every connector) is a ``ConnectError`` with the first lines of its trace."""
    states = connector_states(settings)
    for name in states if names is None else names:
        state = states.get(name, {})
        for part in [state.get("connector", {}), *state.get("tasks", [])]:
            if part.get("state") == "FAILED":
                trace = str(part.get("trace", "")).strip().splitlines()
                raise ConnectError(f"connector {name} failed: {' '.join(trace[:3])}", f"full log: {log_file(settings)}")
    return states


def _running(state: dict[str, Any]) -> bool:
    tasks = state.get("tasks", [])
    return state.get("connector", {}).get("state") == "RUNNING" and bool(tasks) and all(
        task.get("state") == "RUNNING" for task in tasks)


def stop(settings: Settings, timeout: float = 30.0) -> str:
    """Stop the worker this home started (SIGTERM: offsets are flushed; SIGKILL after ``timeout``)."""
    record = registry.read(settings, SERVICE)
    if record is None:
        return "kafka connect: not running (no PID file)"
    if not record.alive or not _is_our_worker(record.pid, settings):
        registry.unregister(settings, SERVICE)
        return f"kafka connect: not running (stale PID file for pid {record.pid} removed)"
    registry.terminate(record, timeout)
    registry.unregister(settings, SERVICE)
    return f"kafka connect: stopped pid {record.pid}"
