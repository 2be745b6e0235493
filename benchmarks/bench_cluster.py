"""Benchmark (not a timed test): the ingestion on a standalone Spark cluster vs ``local[2]``.

For each scale (default 1, 4 and 10) one simulated JSON landing zone is ingested from scratch
with the whole command ``lakehouse ingest --once --no-sync`` (a fresh lake and checkpoint per
run, on local disk: the cost measured is the cluster's, not S3's), alternately in ``local[2]``
(driver and executors in one JVM) and on ``lakehouse cluster`` with two 1-core workers
(``LAKEHOUSE_SPARK_MASTER=spark://...``: the driver in the command's process, two executors in
the workers' JVMs). Interleaved, so load changes affect both alike. Prints per scale the
median seconds of each, events per second and the ratio cluster / local, and how each grows
with the scale (it should grow linearly).

Both use the machine's two cores; the cluster adds executor JVMs, task serialization and
shuffle over the network stack. On a real cluster the workers bring their own cores.

Usage: ``python benchmarks/bench_cluster.py [--scales 1,4,10] [--runs 3] [--work DIR]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lakehouse.config import load_settings
from lakehouse.services import spark_cluster
from lakehouse.services.ports import free_port
from simulator.simulation import SimulationOptions, run_simulation

LAKEHOUSE = os.path.join(os.path.dirname(sys.executable), "lakehouse")
#: one executor per worker, each with 1 core and the memory of a local[2] driver's share
CLUSTER_CONF = {"spark.executor.memory": "2g", "spark.executor.cores": "1"}


def ingest(landing: Path, run_dir: Path, master: str | None) -> tuple[float, int]:
    """``lakehouse ingest --once`` into a fresh lake: (seconds, events + bad events)."""
    env = {**os.environ, "LAKEHOUSE_HOME": str(run_dir / "home"), "LAKEHOUSE_LANDING": str(landing),
           "LAKEHOUSE_LAKE": str(run_dir / "lake"), "LAKEHOUSE_CHECKPOINTS": str(run_dir / "checkpoints")}
    env.pop("LAKEHOUSE_SPARK_MASTER", None)
    if master:
        env["LAKEHOUSE_SPARK_MASTER"] = master
        env["LAKEHOUSE_SPARK_CONF"] = json.dumps(CLUSTER_CONF)
    started = time.perf_counter()
    result = subprocess.run([LAKEHOUSE, "ingest", "--once", "--no-sync", "--quiet"], env=env, capture_output=True,
                            text=True, check=False)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"ingest ({master or 'local'}) failed: {result.stderr[-2000:]}")
    # on stderr: "ingested N events into T tables, B dead-lettered, ..."
    line = next(line for line in result.stderr.splitlines() if line.startswith("ingested "))
    events = int(line.split()[1]) + int(line.split(", ")[1].split()[0])
    shutil.rmtree(run_dir, ignore_errors=True)
    return seconds, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,4,10")
    parser.add_argument("--changes-per-scale", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    settings = dataclasses.replace(load_settings(), home=work / "cluster-home", spark_master_port=free_port(),
                                   spark_master_ui_port=free_port())
    status = spark_cluster.start(settings, workers=2, cores=1, memory="3g")
    results: dict[float, dict[str, list[float]]] = {}
    try:
        for scale in (float(s) for s in args.scales.split(",")):
            landing = work / f"landing-{scale:g}"
            run_simulation(SimulationOptions(landing=str(landing), scale=scale,
                                             changes=int(args.changes_per_scale * scale), format="envelope",
                                             inject_bad=0, seed=7))
            times: dict[str, list[float]] = {"local": [], "cluster": []}
            events = 0
            for run in range(1, args.runs + 1):
                for mode, master in (("local", None), ("cluster", status.master_url)):
                    seconds, events = ingest(landing, work / f"{mode}-{scale:g}-{run}", master)
                    times[mode].append(seconds)
                print(f"scale {scale:g} run {run}: local[2] {times['local'][-1]:.1f} s, "
                      f"cluster {times['cluster'][-1]:.1f} s ({events} events)", flush=True)
            results[scale] = {**times, "events": [float(events)]}
            shutil.rmtree(landing, ignore_errors=True)
    finally:
        spark_cluster.stop(settings)
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nlakehouse ingest --once (whole command), medians of {args.runs} runs; "
          "cluster = 2 workers x 1 core on the same 2 cores")
    print(f"{'scale':>6} {'events':>9} {'local[2] s':>11} {'cluster s':>10} {'ratio':>6} "
          f"{'local ev/s':>11} {'cluster ev/s':>13}")
    base = None
    for scale, times in results.items():
        local, cluster, events = (statistics.median(times["local"]), statistics.median(times["cluster"]),
                                  times["events"][0])
        base = base or (scale, local, cluster)
        print(f"{scale:>6g} {events:>9,.0f} {local:>11.1f} {cluster:>10.1f} {cluster / local:>6.2f} "
              f"{events / local:>11,.0f} {events / cluster:>13,.0f}")
    if base and len(results) > 1:
        print("\ngrowth from the first scale (seconds ratio / scale ratio; 1.0 = linear):")
        for scale, times in list(results.items())[1:]:
            factor = scale / base[0]
            print(f"  x{factor:g}: local[2] {statistics.median(times['local']) / base[1] / factor:.2f}, "
                  f"cluster {statistics.median(times['cluster']) / base[2] / factor:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
