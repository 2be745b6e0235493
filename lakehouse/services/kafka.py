"""The managed Apache Kafka broker: one KRaft node (broker + controller) from the pinned jars.

Started from the ``kafka`` JVM role (``jvm/kafka/pom.xml``, Kafka 4.x, its own classpath:
never mixed with Spark's): ``kafka.tools.StorageTool format`` prepares the log directory
once (a fresh cluster id, kept in ``$LAKEHOUSE_HOME/kafka/cluster.id``), then ``kafka.Kafka``
runs with a generated ``server.properties``. Both listeners (clients and the controller)
bind 127.0.0.1; the client port is ``LAKEHOUSE_KAFKA_PORT`` (default 9092), the controller
takes a free port. The PID is recorded in ``$LAKEHOUSE_HOME/run/kafka.pid`` through the
project's registry, so ``lakehouse down`` stops the broker, and ``stop`` only signals
that PID after checking it is this home's broker.
"""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ingestion.jvm import JvmDependencyError, classpath
from lakehouse.config import Settings
from lakehouse.services import registry
from lakehouse.services.ports import free_port
from lakehouse.services.thrift import ThriftError, java_executable, port_open, tail

SERVICE = "kafka"
MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9092
HEAP = "-Xmx512m"  # a test / demo broker: small heap, the machine is shared with Spark


class KafkaError(registry.ServiceError):
    """A broker operation failed; the message says what and why."""


@dataclass(frozen=True)
class BrokerStatus:
    running: bool
    pid: int | None
    host: str
    port: int
    answering: bool
    log_file: Path

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def describe(self) -> str:
        if not self.running:
            return f"kafka broker: stopped (data under {self.log_file.parent.parent / 'kafka'})"
        state = "answering" if self.answering else "starting (not answering yet)"
        return f"kafka broker: running, pid {self.pid}, {self.bootstrap}, {state}"


@dataclass(frozen=True)
class BrokerConfig:
    """Where one home's broker lives and listens (``broker_config`` reads the environment)."""

    settings: Settings
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT

    @property
    def home(self) -> Path:
        return self.settings.home

    @property
    def logs_dir(self) -> Path:
        return self.settings.logs_dir

    @property
    def run_dir(self) -> Path:
        return self.settings.run_dir

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def broker_config(settings: Settings, port: int | None = None) -> BrokerConfig:
    """The broker of ``settings.home``: ``port``, else ``LAKEHOUSE_KAFKA_PORT``, else 9092, on 127.0.0.1."""
    env_port = os.environ.get("LAKEHOUSE_KAFKA_PORT")
    return BrokerConfig(settings, DEFAULT_HOST, port or (int(env_port) if env_port else DEFAULT_PORT))


def kafka_dir(settings: Settings | BrokerConfig) -> Path:
    return settings.home / "kafka"


def log_file(settings: Settings | BrokerConfig) -> Path:
    return settings.logs_dir / "kafka.log"


def server_properties(settings: BrokerConfig, controller_port: int) -> str:
    """The broker's configuration: one KRaft node, loopback only, topics of 1 replica."""
    host, port = settings.host, settings.port
    data = kafka_dir(settings) / "data"
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
        # retention is checked every 5 s so a test (or an operator) sees a topic's retention act
        "log.retention.check.interval.ms": "5000",
        "log.segment.delete.delay.ms": "1000",
    }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = stdout
appender.stdout.type = Console
appender.stdout.name = stdout
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
logger.kafka.name = kafka
logger.kafka.level = warn
logger.apache.name = org.apache.kafka
logger.apache.level = warn
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = info
"""


def _java_command(settings: BrokerConfig, main: str, *args: str) -> list[str]:
    try:
        jars = classpath("kafka")
    except JvmDependencyError as exc:
        raise KafkaError(f"JVM role kafka: {exc}", exc.hint) from exc
    try:
        java = java_executable()
    except ThriftError as exc:
        raise KafkaError(str(exc), exc.hint) from exc
    log4j = kafka_dir(settings) / "log4j2.properties"
    return [java, HEAP, "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
            f"-Dlakehouse.home={settings.home}", "-cp", jars, main, *args]


def _is_our_broker(pid: int, settings: BrokerConfig) -> bool:
    return registry.runs_java_main(pid, MAIN_CLASS, settings.home)


def _running_pid(settings: BrokerConfig) -> int | None:
    record = registry.read(settings.settings, SERVICE)
    if record is None or not record.alive or not _is_our_broker(record.pid, settings):
        return None
    return record.pid


def _configured_port(settings: BrokerConfig) -> int | None:
    """The client port of the running broker's configuration (it may differ from the settings')."""
    with contextlib.suppress(OSError):
        for line in (kafka_dir(settings) / "server.properties").read_text().splitlines():
            if line.startswith("advertised.listeners="):
                return int(line.rsplit(":", 1)[1])
    return None


def status(settings: BrokerConfig) -> BrokerStatus:
    pid = _running_pid(settings)
    host = settings.host
    port = (_configured_port(settings) if pid else None) or settings.port
    return BrokerStatus(pid is not None, pid, host, port, pid is not None and port_open(host, port),
                        log_file(settings))


def new_cluster_id() -> str:
    """A Kafka cluster id as ``Uuid.randomUuid`` makes one: 16 random bytes, URL-safe base64
    without padding, never starting with "-" (Kafka's tools would read such an id as an option)."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


def _format_storage(settings: BrokerConfig, config: Path) -> None:
    """Format the log directory once (KRaft needs a cluster id and a meta.properties)."""
    if (kafka_dir(settings) / "data" / "meta.properties").exists():
        return
    id_file = kafka_dir(settings) / "cluster.id"
    if not id_file.exists():
        id_file.write_text(new_cluster_id() + "\n")
    # "--cluster-id=ID", not "-t ID": an id file written by an older release may start with "-",
    # which the tool's argument parser would take for an option
    command = _java_command(settings, STORAGE_TOOL, "format", f"--cluster-id={id_file.read_text().strip()}",
                            "-c", str(config), "--ignore-formatted")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603
    if done.returncode != 0:
        raise KafkaError(f"formatting the Kafka log directory failed: {(done.stderr or done.stdout).strip()[-500:]}",
                         f"remove {kafka_dir(settings)} to start with an empty broker")


def start(settings: BrokerConfig, timeout: float = 90.0) -> BrokerStatus:
    """Start the broker (idempotent) and wait until its client port accepts connections."""
    current = status(settings)
    if current.running:
        _wait(settings, current.pid, timeout)
        return status(settings)
    host, port = settings.host, settings.port
    if port_open(host, port):
        raise KafkaError(f"port {host}:{port} is already in use by another process",
                         "stop that process or choose another port with --port / LAKEHOUSE_KAFKA_PORT")
    for directory in (kafka_dir(settings), settings.logs_dir, settings.run_dir):
        directory.mkdir(parents=True, exist_ok=True)
    config = kafka_dir(settings) / "server.properties"
    controller = free_port(host)
    config.write_text(server_properties(settings, controller))
    (kafka_dir(settings) / "log4j2.properties").write_text(LOG4J2)
    _format_storage(settings, config)
    command = _java_command(settings, MAIN_CLASS, str(config))
    log = log_file(settings)
    with open(log, "ab") as out:
        out.write(f"\n==== starting kafka broker {time.strftime('%Y-%m-%d %H:%M:%S')} ====\n".encode())
        out.flush()
        proc = subprocess.Popen(  # noqa: S603 - fixed command built above
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=kafka_dir(settings), start_new_session=True,
        )
    registry.register(settings.settings, SERVICE, proc.pid)
    _wait(settings, proc.pid, timeout, proc)
    return status(settings)


def _wait(settings: BrokerConfig, pid: int | None, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    host = settings.host
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            registry.unregister(settings.settings, SERVICE)
            raise KafkaError(f"the Kafka broker exited with code {proc.returncode} while starting; last log lines:\n"
                             + tail(log_file(settings)), f"full log: {log_file(settings)}")
        port = _configured_port(settings) or settings.port
        if port_open(host, port) and _started(settings):
            return
        time.sleep(0.3)
    raise KafkaError(f"the Kafka broker (pid {pid}) did not start within {timeout:.0f}s; last log lines:\n"
                     + tail(log_file(settings)), f"check {log_file(settings)}, then 'lakehouse kafka stop'")


def _started(settings: BrokerConfig) -> bool:
    """The broker logged that it finished starting (the port opens a little earlier)."""
    try:
        text = log_file(settings).read_text(errors="replace")
    except OSError:
        return False
    last_start = text.rfind("==== starting kafka broker")
    return "Kafka Server started" in text[last_start:]


def stop(settings: BrokerConfig, timeout: float = 30.0) -> str:
    """Stop the broker this home started (SIGTERM, then SIGKILL after ``timeout``); one line."""
    record = registry.read(settings.settings, SERVICE)
    if record is None:
        return "kafka broker: not running (no PID file)"
    if not record.alive or not _is_our_broker(record.pid, settings):
        registry.unregister(settings.settings, SERVICE)
        return f"kafka broker: not running (stale PID file for pid {record.pid} removed)"
    registry.terminate(record, timeout)
    registry.unregister(settings.settings, SERVICE)
    return f"kafka broker: stopped pid {record.pid}; topics kept under {kafka_dir(settings)}"
