"""PID files of the long-running processes the project starts (docs server, scheduler, ingestion).

Each service records ``<pid> <start ticks>`` in ``$LAKEHOUSE_HOME/run/<name>.pid``. Stopping
checks both, so a PID reused by an unrelated process is never signalled. (The Thrift server
has its own stricter check in ``lakehouse.services.thrift``.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from lakehouse.config import Settings


class ServiceError(RuntimeError):
    """A service operation failed; the message says what and why, the hint what to do."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class ServiceRecord:
    name: str
    pid: int
    start_ticks: int
    pid_file: Path

    @property
    def alive(self) -> bool:
        return process_start_ticks(self.pid) == self.start_ticks


def process_start_ticks(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie is not running
        return None
    return int(fields[19])


def runs_java_main(pid: int, main_class: str, home: Path) -> bool:
    """True when ``pid`` is a JVM running ``main_class`` started for ``home`` (``-Dlakehouse.home=``)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return main_class in cmd and f"-Dlakehouse.home={home} " in cmd


def pid_file(settings: Settings, name: str) -> Path:
    return settings.run_dir / f"{name}.pid"


def register(settings: Settings, name: str, pid: int | None = None) -> Path:
    """Record ``pid`` (default: this process) as the running service ``name``."""
    pid = os.getpid() if pid is None else pid
    path = pid_file(settings, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{pid} {process_start_ticks(pid)}\n")
    tmp.replace(path)
    return path


def unregister(settings: Settings, name: str) -> None:
    pid_file(settings, name).unlink(missing_ok=True)


def read(settings: Settings, name: str) -> ServiceRecord | None:
    path = pid_file(settings, name)
    try:
        pid_text, ticks_text = path.read_text().split()[:2]
        return ServiceRecord(name, int(pid_text), int(ticks_text), path)
    except (FileNotFoundError, ValueError):
        return None


def running(settings: Settings) -> list[ServiceRecord]:
    """Every registered service whose process is still alive (Thrift server excluded)."""
    records = []
    if settings.run_dir.is_dir():
        for path in sorted(settings.run_dir.glob("*.pid")):
            if path.stem == "thrift":
                continue
            record = read(settings, path.stem)
            if record and record.alive:
                records.append(record)
    return records


def stop(settings: Settings, name: str, timeout: float = 20.0) -> str:
    """Stop service ``name`` if this home started it; returns a one-line description."""
    record = read(settings, name)
    if record is None:
        return f"{name}: not running"
    if not record.alive:
        unregister(settings, name)
        return f"{name}: not running (stale PID file removed)"
    terminate(record, timeout)
    unregister(settings, name)
    return f"{name}: stopped pid {record.pid}"


def terminate(record: ServiceRecord, timeout: float) -> None:
    """SIGTERM the recorded process, then SIGKILL it if it still runs after ``timeout`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and record.alive:
        time.sleep(0.2)
    if record.alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGKILL)
