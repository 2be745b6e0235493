"""Soak benchmark of the continuous ingestion (not a timed test): does a long stream stay fast and bounded?

Runs ``lakehouse ingest --trigger 1`` as users do (a separate process, continuous mode) on a
small simulated landing, then lands one simulator run of ``--changes`` events (every table)
per micro-batch, ``--batches`` times, and prints:

* the micro-batch latency (the batch's ``processing_seconds``, its eight Hudi commits
  included) and the write share of it: p50/p95 of the first 50 batches against the last
  50, and their ratio (goal: p95 of the last 50 <= 1.3x the first 50);
* the bronze timeline (instant files under every ``.hoodie/``, the archived ones apart) and
  the bytes on disk of ``<lake>/bronze`` every ``--sample-every`` batches: once past the
  retention window both must stop growing (cleaning and archival at work);
* a check at the end: every bronze table read by hudi-rs holds the oracle's event count.

Cleaning keeps 6 hours of file versions by default, longer than a soak runs, so the
benchmark sets a retention window measured in commits through the user-visible
``LAKEHOUSE_HOODIE_OPTIONS`` (``--retain-commits``, archival at Hudi's 20-30 defaults
above it), which is what it takes for cleaning and archival to show within the run. For
the same reason ``--small-file-limit-mb`` can lower ``hoodie.parquet.small.file.limit``
(the project's is 8 MiB): an insert rewrites a partition's newest file until it reaches
the limit, so a commit's latency rises with that file and must fall back when a new file
starts; a soak's files only reach the limit within the run if the limit is small.

    .venv/bin/python benchmarks/bench_soak.py [--batches 500] [--changes 200] [--scale 0.02]
                                              [--retain-commits 10] [--sample-every 25]
                                              [--small-file-limit-mb 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hudi import HudiReadOptions, HudiTableBuilder

from simulator.oracle import load_oracle
from simulator.simulation import SimulationOptions, run_simulation

BIN = Path(sys.executable).parent
PROJECT_DIR = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Sample:
    batch: int
    instants: int
    archived_files: int
    bronze_bytes: int


def timeline_counts(bronze: Path) -> tuple[int, int]:
    """(instants on the active timelines, archived timeline files) over every bronze table.

    An instant is one timestamp, whatever its state files (requested, inflight, completed).
    """
    active = archived = 0
    for meta in bronze.glob("*/.hoodie"):
        active += len({p.name.split(".")[0] for p in meta.iterdir() if p.is_file() and p.name[:1].isdigit()})
        for folder in ("history", "archived"):  # the archived timeline (Hudi 1.x names it history)
            archive = meta / folder
            if archive.is_dir():
                archived += sum(1 for p in archive.iterdir() if p.is_file() and not p.name.endswith(".crc"))
    return active, archived


def bytes_on_disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def read_batches(stream, sink: queue.Queue) -> None:
    """Forward the ingestion's micro-batch log lines (JSON on stdout) to ``sink``."""
    for line in stream:
        line = line.strip()
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("event") == "micro_batch":
                sink.put(record)
    sink.put(None)


def hudi_counts(bronze: Path) -> dict[str, int]:
    counts = {}
    for path in sorted(p.parent for p in bronze.glob("*/.hoodie")):
        table = HudiTableBuilder.from_base_uri(str(path)).build()
        counts[path.name] = sum(batch.num_rows for batch in table.read(HudiReadOptions()))
    return counts


def expected_counts(landing: Path) -> dict[str, int]:
    """Events per bronze table by the simulator's oracle (the dead letters included)."""
    oracle = load_oracle(str(landing))
    counts = {table: len(oracle.events(table)) for table in oracle.tables}
    counts["dead_letter"] = len(oracle.dead_letters())
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=500, help="micro-batches with new events to run")
    parser.add_argument("--changes", type=int, default=200, help="change events landed per micro-batch")
    parser.add_argument("--scale", type=float, default=0.02, help="simulator scale of the initial snapshot")
    parser.add_argument("--retain-commits", type=int, default=10, help="hoodie.clean.commits.retained")
    parser.add_argument("--small-file-limit-mb", type=float, default=None,
                        help="hoodie.parquet.small.file.limit in MiB (default: the project's)")
    parser.add_argument("--sample-every", type=int, default=25, help="timeline/disk sample period in batches")
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.batches < 100:
        parser.error("--batches must be >= 100 (first 50 against last 50)")

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-soak-"))
    landing, lake = work / "landing", work / "lake"
    start = dt.datetime(2026, 1, 1)
    run_simulation(SimulationOptions(landing=str(landing), scale=args.scale, start_time=start))
    hoodie_options = {
        "hoodie.clean.policy": "KEEP_LATEST_COMMITS",
        "hoodie.clean.commits.retained": str(args.retain_commits),
    }
    if args.small_file_limit_mb is not None:
        hoodie_options["hoodie.parquet.small.file.limit"] = str(int(args.small_file_limit_mb * 1024 * 1024))
    env = {**os.environ, "LAKEHOUSE_HOME": str(work / "home"), "LAKEHOUSE_LANDING": str(landing),
           "LAKEHOUSE_LAKE": str(lake), "LAKEHOUSE_HOODIE_OPTIONS": json.dumps(hoodie_options)}
    print(f"work {work}; retention: {hoodie_options}", flush=True)
    ingest = subprocess.Popen(
        [str(BIN / "lakehouse"), "ingest", "--trigger", "1", "--no-sync", "--quiet"],
        cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    batches: queue.Queue = queue.Queue()
    threading.Thread(target=read_batches, args=(ingest.stdout, batches), daemon=True).start()

    latencies: list[float] = []
    writes: list[float] = []
    samples: list[Sample] = []
    started = time.perf_counter()
    try:
        first = batches.get(timeout=900)  # the snapshot's backfill: not counted
        if first is None:
            raise SystemExit("the ingestion stopped before its first micro-batch")
        for index in range(args.batches):
            run_simulation(SimulationOptions(landing=str(landing), changes=args.changes))
            while True:
                record = batches.get(timeout=600)
                if record is None:
                    raise SystemExit(f"the ingestion stopped after {index} soak batches")
                if sum(record.get("events", {}).values()):
                    break
            latencies.append(float(record["processing_seconds"]))
            writes.append(float(record["write_seconds"]))
            if (index + 1) % args.sample_every == 0:
                active, archived = timeline_counts(lake / "bronze")
                samples.append(Sample(index + 1, active, archived, bytes_on_disk(lake / "bronze")))
                print(f"batch {index + 1}: latency p50 of the last {args.sample_every} "
                      f"{statistics.median(latencies[-args.sample_every:]):.2f} s, timeline {active} instants "
                      f"({archived} archived files), bronze {samples[-1].bronze_bytes / 1e6:.1f} MB, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
        # the last run's files may span more than one micro-batch: let the stream catch up
        expected = expected_counts(landing)
        deadline = time.monotonic() + 300
        while hudi_counts(lake / "bronze") != expected and time.monotonic() < deadline:
            time.sleep(5)
    finally:
        ingest.send_signal(signal.SIGINT)
        try:
            ingest.wait(timeout=120)
        except subprocess.TimeoutExpired:
            ingest.kill()
            ingest.wait()

    head, tail = latencies[:50], latencies[-50:]
    ratio = percentile(tail, 0.95) / percentile(head, 0.95)
    print(f"\n{len(latencies)} micro-batches of {args.changes} changes in {time.perf_counter() - started:.0f} s")
    print(f"batch latency first 50: p50 {percentile(head, 0.5):.2f} s, p95 {percentile(head, 0.95):.2f} s; "
          f"last 50: p50 {percentile(tail, 0.5):.2f} s, p95 {percentile(tail, 0.95):.2f} s; "
          f"p95 ratio last/first {ratio:.2f} (goal <= 1.3)")
    print(f"write share: first 50 median {statistics.median(writes[:50]):.2f} s, "
          f"last 50 median {statistics.median(writes[-50:]):.2f} s")
    print("timeline and disk (batch: active instants, archived files, bronze MB): " + ", ".join(
        f"{s.batch}: {s.instants}/{s.archived_files}/{s.bronze_bytes / 1e6:.1f}" for s in samples))
    half = samples[len(samples) // 2:]
    if half:
        print(f"second half: instants {min(s.instants for s in half)}-{max(s.instants for s in half)}, "
              f"bronze {min(s.bronze_bytes for s in half) / 1e6:.1f}-{max(s.bronze_bytes for s in half) / 1e6:.1f} MB")
    expected = expected_counts(landing)
    actual = hudi_counts(lake / "bronze")
    wrong = {t: (n, actual.get(t, 0)) for t, n in expected.items() if actual.get(t, 0) != n}
    print("bronze vs oracle (hudi-rs): " + ("every table equal" if not wrong else f"DIFFERENT {wrong}"))
    if not args.work and not wrong:  # a temporary work directory, kept when the run fails
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
