"""One writer per lake: the writer lock on a local lake (flock) and on S3 (a lease, moto's server)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3
import pytest

from ingestion.lake_lock import LOCK_NAME, LakeLockedError, LakeLockLostError, LakeWriterLock

HOLD = (
    "import sys, time\n"
    "from ingestion.lake_lock import LakeWriterLock\n"
    "lock = LakeWriterLock(sys.argv[1], 'lakehouse ingest --once')\n"
    "lock.acquire()\n"
    "print('held', flush=True)\n"
    "time.sleep(120)\n"
)


def hold_in_another_process(lake: str) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, lake], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_local_second_writer_is_refused_naming_the_holder_until_it_dies(tmp_path):
    lake = str(tmp_path / "lake")
    holder = hold_in_another_process(lake)
    try:
        with pytest.raises(LakeLockedError) as refused:
            LakeWriterLock(lake).acquire()
        message = str(refused.value)
        assert f"pid {holder.pid} on host {socket.gethostname()}" in message
        assert "lakehouse ingest --once" in message and "nothing was written" in message
    finally:
        holder.send_signal(signal.SIGKILL)  # a crash: the kernel drops its flock
        holder.wait()
    with LakeWriterLock(lake, "replay") as lock:
        assert json.loads((tmp_path / "lake" / LOCK_NAME).read_text())["command"] == "replay"
        lock.check()
    assert (tmp_path / "lake" / LOCK_NAME).read_text() == ""  # released: no holder recorded


@pytest.fixture
def s3_lake(moto_endpoint, monkeypatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    bucket = f"lock-{time.monotonic_ns()}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return f"s3a://{bucket}/lake"


def lease(lake: str) -> dict:
    bucket, _, prefix = lake.removeprefix("s3a://").partition("/")
    client = boto3.client("s3", region_name="us-east-1")
    return json.loads(client.get_object(Bucket=bucket, Key=f"{prefix}/{LOCK_NAME}")["Body"].read())


def plant_lease(lake: str, **holder) -> None:
    bucket, _, prefix = lake.removeprefix("s3a://").partition("/")
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket=bucket, Key=f"{prefix}/{LOCK_NAME}", Body=json.dumps(holder).encode())


def test_s3_second_writer_is_refused_then_the_lock_is_free_after_release(s3_lake):
    first = LakeWriterLock(s3_lake, "lakehouse ingest")
    first.acquire()
    try:
        with pytest.raises(LakeLockedError, match=r"pid \d+ on host .*: lakehouse ingest"):
            LakeWriterLock(s3_lake, "lakehouse dead-letter replay").acquire()
        assert lease(s3_lake)["command"] == "lakehouse ingest"
    finally:
        first.release()
    with LakeWriterLock(s3_lake, "lakehouse dead-letter replay"):
        assert lease(s3_lake)["command"] == "lakehouse dead-letter replay"


def test_s3_stale_leases_are_taken_over_and_live_ones_respected(s3_lake):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # a holder on this host that is gone: taken over at once
    plant_lease(s3_lake, pid=dead.pid, host=socket.gethostname(), renewed_at=time.time(), ttl_seconds=120)
    with LakeWriterLock(s3_lake, "after a crash here"):
        assert lease(s3_lake)["command"] == "after a crash here"
    # another host's holder that renewed recently: respected
    plant_lease(s3_lake, pid=1, host="elsewhere", renewed_at=time.time(), ttl_seconds=120, command="ingest")
    with pytest.raises(LakeLockedError, match="pid 1 on host elsewhere"):
        LakeWriterLock(s3_lake).acquire()
    # another host's holder silent for longer than its lease: stale
    plant_lease(s3_lake, pid=1, host="elsewhere", renewed_at=time.time() - 300, ttl_seconds=120)
    with LakeWriterLock(s3_lake, "after a crash elsewhere"):
        assert lease(s3_lake)["command"] == "after a crash elsewhere"


def test_s3_two_processes_taking_over_one_stale_lease_one_wins(s3_lake):
    plant_lease(s3_lake, pid=1, host="elsewhere", renewed_at=time.time() - 300, ttl_seconds=120)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def take(name: str) -> None:
        lock = LakeWriterLock(s3_lake, name, renew_seconds=3600)
        barrier.wait()
        try:
            lock.acquire()
        except LakeLockedError:
            outcomes.append("refused")
            return
        outcomes.append("held")  # held until the end of the test: not released

    threads = [threading.Thread(target=take, args=(f"taker-{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["held", "refused", "refused", "refused"]


def test_s3_holder_whose_lease_was_taken_over_stops_writing(s3_lake):
    lock = LakeWriterLock(s3_lake, "stalled", renew_seconds=0.2)
    lock.acquire()
    try:
        plant_lease(s3_lake, pid=1, host="elsewhere", renewed_at=time.time(), ttl_seconds=120)  # taken over
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                lock.check()
            except LakeLockLostError as lost:
                assert "taken over" in str(lost)
                break
            time.sleep(0.1)
        else:
            pytest.fail("the lost lease was not noticed")
    finally:
        lock.release()
    assert lease(s3_lake)["host"] == "elsewhere"  # the new holder's lease is left alone


def test_local_lake_path_may_be_a_file_uri(tmp_path: Path):
    with LakeWriterLock(f"file://{tmp_path}/lake"), pytest.raises(LakeLockedError):
        LakeWriterLock(str(tmp_path / "lake")).acquire()


def test_the_holders_command_keeps_no_value_that_could_carry_a_secret(tmp_path: Path) -> None:
    """The lock (in the lake, on S3 too) names the holder's command: its words and flags, no values."""
    secret_url = "http://registry-user:" + "registry-pass@127.0.0.1:8080/apis"
    holder = subprocess.Popen([sys.executable, "-c", HOLD.replace("'lakehouse ingest --once'", "None"),
                               str(tmp_path / "lake"), "--schema-registry-url", secret_url, "--once"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        recorded = json.loads((tmp_path / "lake" / LOCK_NAME).read_text())["command"]
    finally:
        holder.kill()
        holder.wait()
    assert "registry-pass" not in recorded and "--schema-registry-url" in recorded and "--once" in recorded
