"""Run the ``lakehouse`` CLI as separate processes (so they can be SIGKILLed like a crashed host)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

LAKEHOUSE = str(Path(sys.executable).with_name("lakehouse"))


def cli_env(home: Path, port: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        LAKEHOUSE_HOME=str(home),
        LAKEHOUSE_LANDING=str(home / "landing"),
        LAKEHOUSE_LAKE=str(home / "lake"),
        LAKEHOUSE_THRIFT_HOST="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    if port is not None:
        env["LAKEHOUSE_THRIFT_PORT"] = str(port)
    return env


def run(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``lakehouse <args>`` to completion (output captured)."""
    return subprocess.run(
        [LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


class Background:
    """``lakehouse <args>`` in its own process group, output appended to ``log``."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path):
        self.log = log
        self._out = open(log, "ab")  # noqa: SIM115 - closed in stop()/kill()
        self.proc = subprocess.Popen(
            [LAKEHOUSE, *args],
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group (driver and its JVM), like a host crash."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._out.close()

    def stop(self, sig: int = signal.SIGINT, timeout: float = 120) -> int:
        """Ask politely (SIGINT to the group), then SIGKILL after ``timeout``."""
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._out.close()
        return self.proc.returncode

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._out.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def wait_for(predicate, timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
