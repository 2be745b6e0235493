"""S3 faults mid-ingestion: throttled and stalled requests are retried; an outage is one clear error;
a restart after it resumes with nothing lost or written twice.

The ingestion runs as users run it (the CLI, its own Spark), with the landing zone, the lake
and the checkpoint on moto's S3 server behind ``FaultyS3Proxy``. The judge reads bronze with
hudi-rs straight from moto (not through the proxy) and compares it with the simulator's
oracle as a multiset: a lost event or a second copy of one fails it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import boto3
import pytest

from ingestion.stream.reading import read_latest
from lakehouse.services.ports import free_port
from simulator.oracle import event_columns, load_oracle
from simulator.simulation import SimulationOptions, run_simulation
from tests.cluster.s3_faults import Faults, FaultyS3Proxy
from tests.stream.judge import normalize

pytestmark = pytest.mark.cluster
LAKEHOUSE = os.path.join(os.path.dirname(sys.executable), "lakehouse")
LANDING = "s3://fault-landing/kafka-connect"
LAKE = "s3a://fault-lake/tickit/lake"


@pytest.fixture
def proxy(moto_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)  # the test's own reads and writes go to moto
    s3 = boto3.client("s3")
    for bucket in ("fault-landing", "fault-lake"):
        s3.create_bucket(Bucket=bucket)
    proxy = FaultyS3Proxy(moto_endpoint, free_port())
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
        for bucket in ("fault-landing", "fault-lake"):
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                for item in page.get("Contents", []):
                    s3.delete_object(Bucket=bucket, Key=item["Key"])
            s3.delete_bucket(Bucket=bucket)


def _env(proxy: FaultyS3Proxy, home) -> dict[str, str]:
    return {**os.environ, "AWS_ENDPOINT_URL": proxy.endpoint, "LAKEHOUSE_HOME": str(home),
            "LAKEHOUSE_LANDING": LANDING, "LAKEHOUSE_LAKE": LAKE}


def _batches(log) -> int:
    """Micro-batches the ingestion reported so far (one JSON line each)."""
    return sum(1 for line in log.read_text(errors="replace").splitlines() if line.startswith('{"bad_events"'))


def _assert_bronze_equals_oracle() -> None:
    oracle = load_oracle(LANDING)
    for table in oracle.tables:
        columns = [name for name, _ in event_columns(table)]
        expected = Counter(tuple(normalize(e.get(c)) for c in columns) for e in oracle.events(table))
        rows = read_latest(f"{LAKE}/bronze/{table}")
        actual = Counter(tuple(normalize(r.get(c)) for c in columns) for r in (rows.to_pylist() if rows else []))
        lost, duplicated = sum((expected - actual).values()), sum((actual - expected).values())
        assert (lost, duplicated) == (0, 0), (table, sum(expected.values()), lost, duplicated)


def test_throttled_and_stalled_requests_are_retried(proxy, tmp_path) -> None:
    run_simulation(SimulationOptions(landing=LANDING, scale=0.002, changes=200, format="mixed", seed=5))
    proxy.faults = Faults(throttle_every=5, stall_every=61, stall_seconds=0.5)
    result = subprocess.run([LAKEHOUSE, "ingest", "--once", "--no-sync", "--quiet"], env=_env(proxy, tmp_path),
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    assert proxy.throttled > 20 and proxy.stalled > 10, (proxy.requests, proxy.throttled, proxy.stalled)
    _assert_bronze_equals_oracle()


def test_an_outage_is_one_clear_error_and_a_restart_loses_nothing(proxy, tmp_path) -> None:
    run_simulation(SimulationOptions(landing=LANDING, scale=0.003, changes=1500, format="envelope", seed=6))
    env = _env(proxy, tmp_path)
    log = tmp_path / "ingest.log"
    with open(log, "w") as out:  # one file per micro-batch: ~40 batches, the outage comes after the third
        process = subprocess.Popen([LAKEHOUSE, "ingest", "--trigger", "1", "--max-files-per-trigger", "1",
                                    "--no-sync", "--quiet"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None and _batches(log) < 3:
            time.sleep(0.2)
        assert process.poll() is None and _batches(log) >= 3, log.read_text()[-3000:]
        proxy.faults = Faults(down=True)  # S3 answers nothing but 503 from now on
        outage = time.monotonic()
        returncode = process.wait(timeout=900)
        failed_after = time.monotonic() - outage
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
    output = log.read_text()
    errors = [line for line in output.splitlines() if line.startswith(("error:", "hint:"))]
    assert returncode == 1, output[-3000:]
    assert errors and errors[0].startswith("error: S3 did not complete a request after S3A's retries ("), output[-3000:]
    assert "HTTP 503" in errors[0] and errors[1].startswith("hint: once S3 answers again"), errors
    assert proxy.refused_while_down > 0
    print(f"outage: the ingestion gave up after {failed_after:.0f} s: {errors}")

    proxy.faults = Faults()  # S3 is back
    result = subprocess.run([LAKEHOUSE, "ingest", "--once", "--no-sync", "--quiet"], env=env,
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    _assert_bronze_equals_oracle()
