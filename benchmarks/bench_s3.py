"""Benchmark (not a timed test): the ingestion with the lake on S3 (moto's server) vs on local disk.

One simulated JSON landing zone on local disk (default scale 1.0) is ingested with
``ingest --once`` into a fresh lake, alternately on local disk and on an ``s3a://`` bucket of
moto's S3 server (with the checkpoint there too, the default for a lake on S3), in the same
SparkSession; runs are interleaved so load changes affect both alike. Prints the median
seconds of each, the ratio S3 / local, and where the S3 time goes: the requests of the
median S3 run by kind (LIST, HEAD, GET, PUT, multi-object DELETE, multipart) with the
seconds moto took to answer them, measured by a pass-through proxy
(``tests/cluster/s3_faults.py``) between S3A and moto.

moto is an in-memory Python server on the same two cores: the ratio is an upper bound of
what the request count costs, not a figure for AWS (whose per-request latency is higher
and whose throughput is far higher).

Usage: ``python benchmarks/bench_s3.py [--scale 1.0] [--changes 20000] [--runs 3] [--work DIR]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lakehouse.services.ports import free_port
from simulator.simulation import SimulationOptions, run_simulation

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project root: tests.cluster.s3_faults

BUCKET = "bench-lake"


def start_moto() -> tuple[subprocess.Popen, str]:
    """moto's server on a free loopback port (stopped by PID by the caller)."""
    port = free_port()
    process = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p",
                                str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process, f"http://127.0.0.1:{port}"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto_server did not start on port {port}") from None
            time.sleep(0.2)


def ingest_once(spark, landing: Path, lake: str, checkpoints: str) -> tuple[float, int]:
    from ingestion.stream import IngestOptions, run_ingest

    options = IngestOptions(landing=str(landing), lake=lake, checkpoints_root=checkpoints, once=True, sync=False)
    started = time.perf_counter()
    summary = run_ingest(options, spark=spark, log_stream=None)
    return time.perf_counter() - started, sum(summary.events.values()) + summary.bad_events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--changes", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-s3-"))
    moto, endpoint = start_moto()
    try:
        from tests.cluster.s3_faults import FaultyS3Proxy

        proxy = FaultyS3Proxy(endpoint, free_port())
        proxy.start()
        # before the session starts: its S3A settings come from the environment (ingestion.spark.s3a_confs)
        os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
                          AWS_ENDPOINT_URL=proxy.endpoint)
        import boto3

        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        landing = work / "landing"
        run_simulation(SimulationOptions(landing=str(landing), scale=args.scale, changes=args.changes,
                                         format="envelope", inject_bad=0, seed=7))
        from ingestion.spark import local_spark_session

        spark = local_spark_session("bench-s3")
        times: dict[str, list[float]] = {"local": [], "s3": []}
        requests: list[tuple[float, dict[str, list[float]]]] = []
        events = 0
        for run in range(1, args.runs + 1):
            local = work / f"local-{run}"
            seconds, events = ingest_once(spark, landing, str(local / "lake"), str(local / "checkpoints"))
            times["local"].append(seconds)
            shutil.rmtree(local, ignore_errors=True)
            lake = f"s3a://{BUCKET}/run-{run}/lake"
            proxy.by_kind = {}
            seconds, events = ingest_once(spark, landing, lake, f"{lake}/_checkpoints")
            times["s3"].append(seconds)
            requests.append((seconds, {kind: list(v) for kind, v in proxy.by_kind.items()}))
            print(f"run {run}: local {times['local'][-1]:.1f} s, S3 {seconds:.1f} s ({events} events)", flush=True)
        spark.stop()
        local_median, s3_median = statistics.median(times["local"]), statistics.median(times["s3"])
        print(f"\ningest --once, scale {args.scale}, {events} events, medians of {args.runs} runs")
        print(f"  lake on local disk: {local_median:7.1f} s  ({events / local_median:,.0f} events/s)")
        print(f"  lake on moto S3:    {s3_median:7.1f} s  ({events / s3_median:,.0f} events/s)")
        print(f"  ratio S3 / local:   {s3_median / local_median:7.2f}")
        _, median_run = sorted(requests, key=lambda item: item[0])[len(requests) // 2]
        total = sum(v[0] for v in median_run.values())
        print(f"\nS3 requests of the median S3 run: {int(total)} "
              f"({sum(v[1] for v in median_run.values()):.1f} s of moto's answering time)")
        for kind, (count, seconds) in sorted(median_run.items(), key=lambda item: -item[1][1]):
            print(f"  {kind:<15} {int(count):>7}  {seconds:7.1f} s")
        proxy.stop()
    finally:
        os.killpg(moto.pid, signal.SIGTERM)
        moto.wait(timeout=10)
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
