"""Benchmark of whole processes (not a timed test): ``lakehouse ingest --once`` against plain Spark.

Where ``bench_ingest.py`` times warm runs inside one JVM, this times what a user runs: each
side a process of its own, JVM start and shutdown included, alternating on the same landed
files (simulated once with the seed ``bench_ingest.py`` uses, or taken from ``--work``):

* ``lakehouse ingest --landing L --lake <fresh> --once --no-sync`` (the CLI: every bronze
  table, the dead-letter table and the schema history written with Hudi, exactly once);
* ``python benchmarks/plain_spark.py`` (plain Spark ``readStream.json ->
  writeStream.parquet``, availableNow, the project's generic Spark settings without Hudi, the
  landing's schema given: it is inferred once by an untimed preparation run).

With ``--hudi-floor`` a third side: ``python benchmarks/hudi_floor.py`` (Spark's JSON reader
into Hudi ``bulk_insert`` with the bronze options, no CDC parsing; the stand-in for
HoodieStreamer, whose bundle is not installable here), each topic's schema given.

Prints each run, the medians, the ratio ingest / plain (and ingest / floor) and the peak
memory (PSS) of each process tree (goal ≤ 4 GB). No side registers tables in a catalog
(``--no-sync``: on the embedded default that goes through a Thrift server, a process of its own).

Usage: ``python benchmarks/bench_processes.py [--scale 1.0] [--changes 20000] [--runs 3] [--hudi-floor]
[--work DIR]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simulator.simulation import SimulationOptions, run_simulation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_tree import PeakMemory  # noqa: E402 - benchmarks/ is not a package

PLAIN_SCRIPT = Path(__file__).resolve().with_name("plain_spark.py")
FLOOR_SCRIPT = Path(__file__).resolve().with_name("hudi_floor.py")


def lakehouse_command() -> str:
    """The ``lakehouse`` console script of this interpreter's environment."""
    script = Path(sys.executable).with_name("lakehouse")
    return str(script) if script.exists() else "lakehouse"


def timed_process(command: list[str], env: dict[str, str], log: Path) -> tuple[float, int, str]:
    """Run ``command`` to its end: (wall seconds, peak PSS of its process tree in bytes, its stdout).

    Its stderr goes to ``log``; a failure raises naming the command and the log.
    """
    with log.open("w") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        with PeakMemory(root=process.pid) as memory:
            out, _ = process.communicate()
        seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}: see {log}")
    return seconds, memory.peak, out


def ingested(stdout: str) -> tuple[int, int]:
    """(lines read, events committed) by the ``micro_batch`` log lines of an ingestion."""
    lines = events = 0
    for line in stdout.splitlines():
        if line.startswith("{"):
            doc = json.loads(line)
            if doc.get("event") == "micro_batch":
                lines += doc["lines"]
                events += sum(doc["events"].values())
    return lines, events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each side, alternating")
    parser.add_argument("--hudi-floor", action="store_true",
                        help="a third side: hudi_floor.py (Spark's JSON reader into Hudi bulk_insert with the bronze "
                             "options, no CDC parsing; the stand-in for HoodieStreamer) as a process")
    parser.add_argument("--work", help="scratch directory (default: a temporary one, removed); a landing "
                                       "under it is reused")
    args = parser.parse_args(argv)

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-processes-"))
    landing = work / "landing"
    try:
        if not (landing / "topics").is_dir():
            run_simulation(SimulationOptions(landing=str(landing), scale=args.scale, changes=args.changes,
                                             format="envelope", start_time=dt.datetime(2026, 1, 1)))
        lines = sum(p.read_bytes().count(b"\n") for p in (landing / "topics").rglob("*.json"))
        print(f"landing: {lines} lines, scale {args.scale}", flush=True)
        env = {**os.environ, "LAKEHOUSE_INGEST_PARSER": "fast"}
        env.pop("LAKEHOUSE_CHECKPOINTS", None)
        schema = work / "landing-schema.json"
        if not schema.exists():
            subprocess.run([sys.executable, str(PLAIN_SCRIPT), "--landing", str(landing), "--out",
                            str(work / "plain-prep"), "--schemas", str(schema)], env=env, check=True)
        floor_schemas = work / "landing-topic-schemas.json"
        if args.hudi_floor and not floor_schemas.exists():
            subprocess.run([sys.executable, str(FLOOR_SCRIPT), "--landing", str(landing), "--out",
                            str(work / "floor-prep"), "--schemas", str(floor_schemas)], env=env, check=True)

        ingest_times: list[float] = []
        plain_times: list[float] = []
        ingest_peaks: list[int] = []
        plain_peaks: list[int] = []
        floor_times: list[float] = []
        floor_peaks: list[int] = []
        for run in range(args.runs):
            lake = work / f"lake-{run}"
            shutil.rmtree(lake, ignore_errors=True)
            seconds, peak, out = timed_process(
                [lakehouse_command(), "ingest", "--landing", str(landing), "--lake", str(lake), "--once",
                 "--no-sync", "--quiet"],
                {**env, "LAKEHOUSE_CHECKPOINTS": str(work / f"checkpoints-{run}")}, work / f"ingest-{run}.log")
            read, events = ingested(out)
            shutil.rmtree(lake, ignore_errors=True)
            shutil.rmtree(work / f"checkpoints-{run}", ignore_errors=True)
            if read != lines:
                raise RuntimeError(f"ingest run {run}: {read} lines read, {lines} landed")
            ingest_times.append(seconds)
            ingest_peaks.append(peak)
            print(f"ingest run {run}: {seconds:.1f}s whole process, {events} events committed, "
                  f"peak PSS {peak / 2**30:.2f} GB", flush=True)

            seconds, peak, out = timed_process(
                [sys.executable, str(PLAIN_SCRIPT), "--landing", str(landing), "--out", str(work / f"plain-{run}"),
                 "--schemas", str(schema)], env, work / f"plain-{run}.log")
            inner = json.loads(out.strip().splitlines()[-1])["plain_seconds"]
            plain_times.append(seconds)
            plain_peaks.append(peak)
            print(f"plain spark run {run}: {seconds:.1f}s whole process ({inner:.1f}s in the query), "
                  f"peak PSS {peak / 2**30:.2f} GB", flush=True)

            if args.hudi_floor:
                seconds, peak, out = timed_process(
                    [sys.executable, str(FLOOR_SCRIPT), "--landing", str(landing), "--out",
                     str(work / f"floor-{run}"), "--schemas", str(floor_schemas)], env, work / f"floor-{run}.log")
                inner = json.loads(out.strip().splitlines()[-1])["floor_seconds"]
                floor_times.append(seconds)
                floor_peaks.append(peak)
                print(f"hudi floor run {run}: {seconds:.1f}s whole process ({inner:.1f}s in the writes), "
                      f"peak PSS {peak / 2**30:.2f} GB", flush=True)

        ingest_median = statistics.median(ingest_times)
        plain_median = statistics.median(plain_times)
        summary = {
            "lines": lines, "runs": args.runs,
            "ingest_median_seconds": round(ingest_median, 2), "plain_median_seconds": round(plain_median, 2),
            "ratio_ingest_to_plain": round(ingest_median / plain_median, 2),
            "ingest_events_per_s": round(lines / ingest_median),
            "ingest_peak_pss_gb": round(max(ingest_peaks) / 2**30, 2),
            "plain_peak_pss_gb": round(max(plain_peaks) / 2**30, 2),
        }
        print(f"whole processes, medians of {args.runs}: ingest --once {ingest_median:.1f}s "
              f"({summary['ingest_events_per_s']:,} events/s), plain Spark {plain_median:.1f}s; ratio ingest/plain = "
              f"{summary['ratio_ingest_to_plain']:.2f} (goal <= 2); peak PSS ingest {summary['ingest_peak_pss_gb']} GB "
              f"(goal <= 4), plain {summary['plain_peak_pss_gb']} GB")
        if floor_times:
            floor_median = statistics.median(floor_times)
            summary.update({"floor_median_seconds": round(floor_median, 2),
                            "ratio_floor_to_plain": round(floor_median / plain_median, 2),
                            "ratio_ingest_to_floor": round(ingest_median / floor_median, 2),
                            "floor_peak_pss_gb": round(max(floor_peaks) / 2**30, 2)})
            print(f"hudi floor (no CDC parsing), median {floor_median:.1f}s: ratio floor/plain = "
                  f"{summary['ratio_floor_to_plain']:.2f}, ingest/floor = {summary['ratio_ingest_to_floor']:.2f} "
                  f"(events/s ingest/floor {floor_median / ingest_median:.2f}); peak PSS "
                  f"{summary['floor_peak_pss_gb']} GB")
        print("summary " + json.dumps(summary, sort_keys=True), flush=True)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
