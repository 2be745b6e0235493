"""Every process the project starts listens on 127.0.0.1 only by default."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.security.listening_sockets import assert_loopback_only, listeners, process_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux only)")


def test_detector_sees_a_wildcard_listener() -> None:
    with socket.socket() as wildcard, socket.socket() as loopback:
        wildcard.bind(("0.0.0.0", 0))
        wildcard.listen()
        loopback.bind(("127.0.0.1", 0))
        loopback.listen()
        found = {item.port: item for item in listeners([os.getpid()])}
        assert not found[wildcard.getsockname()[1]].is_loopback
        assert found[loopback.getsockname()[1]].is_loopback
        with pytest.raises(AssertionError, match="listens beyond loopback"):
            assert_loopback_only([os.getpid()], "this test")


def test_thrift_server_listens_on_loopback_only(thrift_server) -> None:
    pid = thrift_server.pid()
    assert pid is not None, "the managed Thrift server has no PID"
    tree = process_tree(pid)
    ports = {item.port for item in listeners(tree)}
    assert thrift_server.port in ports, f"Thrift port {thrift_server.port} not among {sorted(ports)}"
    assert_loopback_only(tree, "the Thrift server")


def test_ingestion_driver_listens_on_loopback_only(spark) -> None:
    """The SparkSession the ingestion uses (``local_spark_session``): its JVM is our child."""
    spark.range(10).count()  # make sure the block manager and driver RPC are up
    jvm_tree = [pid for pid in process_tree(os.getpid()) if pid != os.getpid()]
    assert jvm_tree, "no child JVM found for the SparkSession"
    assert_loopback_only(jvm_tree, "the ingestion Spark driver")


def test_ingestion_listens_on_loopback_only_while_writing_hudi(spark, tmp_path: Path) -> None:
    """During Hudi commits too: Hudi's embedded timeline server (one per write) would bind every interface."""
    import threading

    from tests.catalog.test_sync_thrift import sale_rows, write_sale

    jvm_tree = [pid for pid in process_tree(os.getpid()) if pid != os.getpid()]
    seen: dict[tuple[str, int], bool] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            seen.update({(item.address, item.port): item.is_loopback for item in listeners(jvm_tree)})
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        for first in (1, 1000, 2000):
            write_sale(spark, tmp_path / "lake", sale_rows(first, 40, days=4))
    finally:
        stop.set()
        sampler.join(timeout=10)
    assert seen, "no listening socket seen during the writes (the detector sees nothing?)"
    exposed = sorted(f"{address}:{port}" for (address, port), loopback in seen.items() if not loopback)
    assert not exposed, f"the ingestion listened beyond loopback while committing: {', '.join(exposed)}"


def test_thrift_server_listens_on_loopback_only_while_dbt_writes_hudi(thrift_server, tmp_path: Path) -> None:
    """Hudi writes through the Thrift server with the options dbt_project.yml gives snapshots (the
    Hudi tables dbt writes with project-wide options; the state tables and facts set the same
    `hoodie.embed.timeline.server`).

    Hudi's embedded timeline server (one per write) binds every interface unless the
    project's model options turn it off.
    """
    import threading

    import yaml

    from lakehouse.config import PROJECT_DIR

    options = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())["snapshots"]["lakehouse"]["+options"]
    clause = ", ".join(f"'{key}' = '{value}'" for key, value in options.items())
    tree = process_tree(thrift_server.pid() or 0)
    seen: dict[tuple[str, int], bool] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            seen.update({(item.address, item.port): item.is_loopback for item in listeners(tree)})
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        thrift_server.sql("create schema if not exists loopback_probe")
        for attempt in range(2):
            thrift_server.sql("drop table if exists loopback_probe.t")
            thrift_server.sql(f"create table loopback_probe.t using hudi options ({clause}) "
                              f"location '{tmp_path / f'probe{attempt}'}' as select id, id * 2 as v from range(2000)")
    finally:
        stop.set()
        sampler.join(timeout=10)
        thrift_server.sql("drop schema if exists loopback_probe cascade")
    assert any(port == thrift_server.port for _, port in seen), "the Thrift port was not seen (detector?)"
    exposed = sorted(f"{address}:{port}" for (address, port), loopback in seen.items() if not loopback)
    assert not exposed, f"the Thrift server listened beyond loopback during Hudi writes: {', '.join(exposed)}"


def test_docs_server_listens_on_loopback_only(tmp_path: Path) -> None:
    """``lakehouse docs serve`` on a minimal site (the files it requires), as a user starts it."""
    home = tmp_path / "home"
    site = home / "docs" / "site"
    site.mkdir(parents=True)
    (site / "index.html").write_text("<html><body>docs</body></html>")
    (site / "manifest.json").write_text("{}")
    port = free_port()
    env = {**os.environ, "LAKEHOUSE_HOME": str(home), "LAKEHOUSE_DOCS_PORT": str(port)}
    lakehouse = str(Path(sys.executable).with_name("lakehouse"))
    server = subprocess.Popen([lakehouse, "docs", "serve", "--port", str(port)], env=env, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and port not in {item.port for item in listeners(process_tree(server.pid))}:
            assert server.poll() is None, server.stdout.read().decode(errors="replace")
            time.sleep(0.2)
        tree = process_tree(server.pid)
        assert port in {item.port for item in listeners(tree)}, f"the docs server never listened on {port}"
        assert_loopback_only(tree, "the docs server")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
