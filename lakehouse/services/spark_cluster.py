"""A standalone Spark cluster on 127.0.0.1: one master and N workers (``lakehouse cluster start|stop|status``).

The pyspark wheel has no ``sbin`` start scripts, so the master and the workers are started
as ``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``, each in its
own process group, their PIDs in ``$LAKEHOUSE_HOME/run/cluster.pids`` (stopped by PID). The
master's web UI answers ``/json/`` on 127.0.0.1: ``status`` reads the alive workers and the
applications from it. The project's applications join the cluster with
``LAKEHOUSE_SPARK_MASTER=spark://127.0.0.1:<port>`` (``lakehouse cluster start`` prints it):
the ingestion's driver runs in the ``lakehouse`` process (client mode, as ``spark-submit
--deploy-mode client``), the executors in the workers' JVMs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ingestion.spark import spark_home
from lakehouse.config import Settings
from lakehouse.services.ports import free_port
from lakehouse.services.registry import ServiceError
from lakehouse.services.thrift import cmdline, java_executable, port_open, spark_env

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class ClusterError(ServiceError):
    """The cluster cannot start or answer (the message names the process and its log)."""


@dataclass
class ClusterStatus:
    running: bool
    master_url: str
    ui_url: str
    pids: list[int] = field(default_factory=list)
    alive_workers: int = 0
    cores: int = 0
    active_apps: list[str] = field(default_factory=list)
    completed_apps: list[str] = field(default_factory=list)


def _dir(settings: Settings) -> Path:
    return settings.home / "cluster"


def _pids_file(settings: Settings) -> Path:
    return settings.run_dir / "cluster.pids"


def _properties(settings: Settings) -> Path:
    """A properties file of this home's cluster: in every process's command line, so a PID is ours."""
    return _dir(settings) / "cluster.properties"


def master_url(settings: Settings) -> str:
    return f"spark://127.0.0.1:{settings.spark_master_port}"


def ui_url(settings: Settings) -> str:
    return f"http://127.0.0.1:{settings.spark_master_ui_port}"


def _ours(pid: int, settings: Settings) -> bool:
    command = cmdline(pid)
    return str(_properties(settings)) in command and (MASTER_CLASS in command or WORKER_CLASS in command)


def _read_pids(settings: Settings) -> list[int]:
    try:
        return [int(p) for p in json.loads(_pids_file(settings).read_text())]
    except (FileNotFoundError, ValueError, TypeError):
        return []


def master_state(settings: Settings, timeout: float = 2.0) -> dict | None:
    """The master's ``/json/`` document (workers, cores, applications), None when it does not answer."""
    try:
        with urllib.request.urlopen(f"{ui_url(settings)}/json/", timeout=timeout) as response:  # noqa: S310
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def status(settings: Settings) -> ClusterStatus:
    pids = [pid for pid in _read_pids(settings) if _ours(pid, settings)]
    state = master_state(settings) if pids else None
    result = ClusterStatus(running=bool(pids) and state is not None, master_url=master_url(settings),
                           ui_url=ui_url(settings), pids=pids)
    if state is not None:
        result.alive_workers = int(state.get("aliveworkers", 0))
        result.cores = int(state.get("cores", 0))
        result.active_apps = [app.get("name", "?") for app in state.get("activeapps", [])]
        result.completed_apps = [app.get("name", "?") for app in state.get("completedapps", [])]
    return result


def _spawn(settings: Settings, name: str, args: list[str]) -> int:
    log = settings.logs_dir / f"cluster-{name}.log"
    with open(log, "ab") as out:
        out.write(f"\n==== starting {name} {time.strftime('%Y-%m-%d %H:%M:%S')} ====\n".encode())
        out.flush()
        process = subprocess.Popen(  # noqa: S603 - fixed command
            [str(spark_home() / "bin" / "spark-class"), *args, "--properties-file", str(_properties(settings))],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=spark_env(settings),
            cwd=_dir(settings), start_new_session=True)
    return process.pid


def start(settings: Settings, workers: int = 2, cores: int = 1, memory: str = "2g",
          timeout: float = 120.0) -> ClusterStatus:
    """Start the master and ``workers`` workers of ``cores`` cores and ``memory`` each (idempotent)."""
    current = status(settings)
    if current.running:
        return current
    if port_open("127.0.0.1", settings.spark_master_port) or port_open("127.0.0.1", settings.spark_master_ui_port):
        raise ClusterError(f"port {settings.spark_master_port} or {settings.spark_master_ui_port} on 127.0.0.1 is "
                           "already in use by another process",
                           "stop it, or choose others with LAKEHOUSE_SPARK_MASTER_PORT / _UI_PORT")
    java_executable()
    for directory in (_dir(settings), settings.logs_dir, settings.run_dir):
        directory.mkdir(parents=True, exist_ok=True)
    _properties(settings).write_text("# lakehouse cluster of this home (see lakehouse/services/spark_cluster.py)\n"
                                     "spark.master.rest.enabled false\nspark.ui.reverseProxy false\n")
    pids = [_spawn(settings, "master", [MASTER_CLASS, "--host", "127.0.0.1", "--port",
                                        str(settings.spark_master_port), "--webui-port",
                                        str(settings.spark_master_ui_port)])]
    _pids_file(settings).write_text(json.dumps(pids))
    try:
        _wait(settings, lambda state: state is not None, timeout, "the master")
        for number in range(1, workers + 1):
            work = _dir(settings) / f"worker-{number}"
            work.mkdir(parents=True, exist_ok=True)
            pids.append(_spawn(settings, f"worker-{number}", [
                WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory, "--work-dir",
                str(work), "--webui-port", str(free_port()), master_url(settings)]))
            _pids_file(settings).write_text(json.dumps(pids))
        _wait(settings, lambda state: state is not None and int(state.get("aliveworkers", 0)) >= workers,
              timeout, f"{workers} workers")
    except ClusterError:
        stop(settings)
        raise
    return status(settings)


def _wait(settings: Settings, ready, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready(master_state(settings)):
            return
        time.sleep(0.5)
    raise ClusterError(f"{what} of the Spark cluster did not come up within {timeout:.0f} s",
                       f"see {settings.logs_dir}/cluster-*.log")


def stop(settings: Settings, timeout: float = 30.0) -> str:
    """Stop the workers, then the master, this home started (by PID); a one-line description."""
    pids = [pid for pid in _read_pids(settings) if _ours(pid, settings)]
    for pid in reversed(pids):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_ours(pid, settings) for pid in pids):
        time.sleep(0.3)
    for pid in pids:
        if _ours(pid, settings):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    _pids_file(settings).unlink(missing_ok=True)
    return f"spark cluster: stopped {len(pids)} processes" if pids else "spark cluster: not running"
