"""Session-wide fixtures: one SparkSession, one managed Thrift server and one Kafka broker per test run."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakehouse.config import Settings, load_settings
from lakehouse.services import kafka, thrift
from lakehouse.services.ports import free_port


def settings_for(home: Path, port: int) -> Settings:
    """Settings of an isolated lakehouse instance (own home, lake, landing and port)."""
    return dataclasses.replace(
        load_settings(),
        home=home,
        landing=str(home / "landing"),
        lake=str(home / "lake"),
        thrift_host="127.0.0.1",
        thrift_port=port,
    )


def process_running(pid: int) -> bool:
    """Whether ``pid`` runs, read from /proc: a zombie (exited, not yet reaped by the test process
    that spawned it) does not."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@dataclass
class ThriftServer:
    """A running managed Thrift server for tests."""

    settings: Settings

    @property
    def host(self) -> str:
        return self.settings.thrift_host

    @property
    def port(self) -> int:
        return self.settings.thrift_port

    @property
    def home(self) -> Path:
        return self.settings.home

    @property
    def env(self) -> dict[str, str]:
        """Environment variables that point the CLI and dbt at this instance."""
        return {
            "LAKEHOUSE_HOME": str(self.home),
            "LAKEHOUSE_LANDING": self.settings.landing,
            "LAKEHOUSE_LAKE": self.settings.lake,
            "LAKEHOUSE_THRIFT_HOST": self.host,
            "LAKEHOUSE_THRIFT_PORT": str(self.port),
        }

    def sql(self, statement: str) -> list[tuple]:
        return thrift.run_sql(self.host, self.port, statement)

    def pid(self) -> int | None:
        return thrift.status(self.settings).pid


@pytest.fixture(scope="session")
def thrift_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThriftServer]:
    """One managed Thrift server (temporary LAKEHOUSE_HOME, free port) for the whole run."""
    home = tmp_path_factory.mktemp("lakehouse-thrift")
    settings = settings_for(home, free_port())
    thrift.start(settings, timeout=300)
    try:
        yield ThriftServer(settings)
    finally:
        thrift.stop(settings)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    """One local SparkSession (127.0.0.1, UI off, UTC) for the whole run."""
    from ingestion.spark import local_spark_session

    session = local_spark_session(
        "lakehouse-tests", warehouse_dir=tmp_path_factory.mktemp("spark-warehouse")
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def moto_endpoint():
    """moto's server (S3, SSM, Glue...) on a free loopback port with fake credentials, stopped by PID afterwards."""
    port = free_port()
    server = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto_server did not start on port {port}")
                time.sleep(0.2)
        yield endpoint
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka.BrokerConfig]:
    """One KRaft broker (temporary home, free port on 127.0.0.1) for the whole test run."""
    home = tmp_path_factory.mktemp("kafka-broker")
    config = kafka.broker_config(dataclasses.replace(load_settings(), home=home), free_port())
    try:
        kafka.start(config)
    except kafka.KafkaError as exc:  # e.g. another process took the free port first: once more, on another
        print(f"the test broker did not start ({exc}); trying another port")
        kafka.stop(config)
        config = kafka.broker_config(config.settings, free_port())
        kafka.start(config)
    try:
        yield config
    finally:
        kafka.stop(config)
