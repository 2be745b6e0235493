"""``lakehouse cluster start|status|stop``: a standalone master and a worker of their own home, stopped by PID."""

from __future__ import annotations

import os
import subprocess
import sys

from lakehouse.services.ports import free_port
from tests.conftest import process_running

LAKEHOUSE = os.path.join(os.path.dirname(sys.executable), "lakehouse")


def test_cluster_starts_reports_and_stops_by_pid(tmp_path) -> None:
    port, ui = free_port(), free_port()
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path), "LAKEHOUSE_SPARK_MASTER_PORT": str(port),
           "LAKEHOUSE_SPARK_MASTER_UI_PORT": str(ui)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([LAKEHOUSE, "cluster", *args], env=env, capture_output=True, text=True, timeout=180)

    started = run("start", "--workers", "1", "--memory", "1g")
    pids = [int(p) for p in (tmp_path / "run" / "cluster.pids").read_text().strip("[]\n").split(",")]
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        assert f"spark://127.0.0.1:{port} (1 workers, 1 cores; UI http://127.0.0.1:{ui})" in started.stdout
        assert f"LAKEHOUSE_SPARK_MASTER=spark://127.0.0.1:{port}" in started.stdout
        assert len(pids) == 2 and all(process_running(pid) for pid in pids)
        assert run("start").returncode == 0  # idempotent: the same processes
        assert (tmp_path / "run" / "cluster.pids").read_text().count(",") == 1
        status = run("status")
        assert status.returncode == 0 and "1 workers" in status.stdout, status.stdout
        down = subprocess.run([LAKEHOUSE, "down"], env=env, capture_output=True, text=True, timeout=120)
        assert "spark cluster: stopped 2 processes" in down.stdout, down.stdout
        assert not [pid for pid in pids if process_running(pid)]
        stopped = run("status")
        assert stopped.returncode == 1 and "not running" in stopped.stdout
    finally:
        for pid in pids:  # only the processes this test started
            if process_running(pid):
                os.killpg(pid, 9)
