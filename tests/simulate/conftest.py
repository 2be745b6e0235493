"""Fixtures of the simulator tests: small simulations and a moto S3 server on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.simulation import SimulationOptions, run_simulation

START = dt.datetime(2026, 3, 1, 9, 0, 0)


def small_options(landing: str | Path, **overrides) -> SimulationOptions:
    """A small but complete simulation: every scenario, bad lines, rotation by count and by time."""
    values = dict(
        landing=str(landing),
        scale=0.004,
        changes=600,
        seed=11,
        format="mixed",
        start_time=START,
        flush_size=400,
        rotate_interval_ms=5_000,
        inject_bad=16,
        truncate=True,
    )
    values.update(overrides)
    return SimulationOptions(**values)


@pytest.fixture(scope="module")
def mixed_landing(tmp_path_factory) -> Path:
    landing = tmp_path_factory.mktemp("mixed") / "landing"
    run_simulation(small_options(landing))
    return landing


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint():
    """moto's S3 server on a free loopback port, stopped by PID afterwards."""
    port = _free_port()
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
