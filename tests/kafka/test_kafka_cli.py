"""``lakehouse kafka start|status|stop`` and ``lakehouse down``: a broker of its own home, stopped by PID."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

from lakehouse.services import kafka
from lakehouse.services.registry import process_start_ticks
from tests.conftest import free_port

LAKEHOUSE = str(Path(sys.executable).with_name("lakehouse"))
LEADING_DASH_ID = "-" + base64.urlsafe_b64encode(bytes(range(1, 17))).decode().rstrip("=")[1:]


def test_new_cluster_ids_are_kafka_uuids_that_never_start_with_a_dash() -> None:
    ids = [kafka.new_cluster_id() for _ in range(2000)]
    assert not [each for each in ids if each.startswith("-")]
    assert {len(base64.urlsafe_b64decode(each + "==")) for each in ids} == {16}
    assert len(set(ids)) == len(ids)


def test_start_status_then_down_stops_the_broker_by_pid(tmp_path) -> None:
    port = free_port()
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path), "LAKEHOUSE_KAFKA_PORT": str(port)}

    def _run(_home: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=180, check=False)

    # an id file of an older release that starts with "-" (1 in 64 did): the format step must not read it as an option
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "cluster.id").write_text(LEADING_DASH_ID + "\n")
    started = _run(tmp_path, "kafka", "start")
    pid = int((tmp_path / "run" / "kafka.pid").read_text().split()[0])
    try:
        assert started.returncode == 0, started.stderr
        assert f"127.0.0.1:{port}" in started.stdout
        assert f"cluster.id={LEADING_DASH_ID}" in (tmp_path / "kafka" / "data" / "meta.properties").read_text()
        status = _run(tmp_path, "kafka", "status")
        assert status.returncode == 0 and f"running, pid {pid}" in status.stdout, status.stdout
        assert _run(tmp_path, "kafka", "start").returncode == 0  # idempotent: the same broker
        assert int((tmp_path / "run" / "kafka.pid").read_text().split()[0]) == pid
        down = _run(tmp_path, "down")
        assert f"kafka broker: stopped pid {pid}" in down.stdout, down.stdout
        assert process_start_ticks(pid) is None
        stopped = _run(tmp_path, "kafka", "status")
        assert stopped.returncode == 1 and "stopped" in stopped.stdout
    finally:
        if process_start_ticks(pid) is not None:  # only the broker this test started
            os.kill(pid, 9)


def test_ingest_usage_errors_name_the_kafka_flags(tmp_path) -> None:
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path)}

    def ingest(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([LAKEHOUSE, "ingest", *args], env=env, capture_output=True, text=True, timeout=120,
                              check=False)

    without = ingest("--topics", "tickit.ems.category")
    assert without.returncode == 2 and "need --kafka-bootstrap" in without.stderr, without.stderr
    bad = ingest("--kafka-bootstrap", "localhost", "--once")
    assert bad.returncode == 2 and "is not HOST:PORT" in bad.stderr, bad.stderr
    mixed = ingest("--kafka-bootstrap", "127.0.0.1:9", "--max-files-per-trigger", "3")
    assert mixed.returncode == 2 and "--max-offsets-per-trigger" in mixed.stderr, mixed.stderr
