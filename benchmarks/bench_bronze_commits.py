"""Benchmark (not a timed test): the cost of one continuous-mode bronze commit as the day's partition grows.

A continuous stream commits a few thousand rows per table per micro-batch into the same
``_cdc_source_date`` partition all day, so what an insert costs must not grow with what the
partition already holds. This writes rows shaped like ``bronze.event`` (its contract's
columns, record key, partition and every ingestion option) into one partition of a fresh
table: a ``bulk_insert`` of ``--initial`` rows (what the partition already holds), then
``--commits`` inserts of ``--rows`` rows each, the way the stream does, and prints per
configuration the mean, p50, p95 and max seconds of those inserts, the live file groups and
their sizes, and each configuration's mean and p95 as a ratio of the project's.

Configurations: ``project`` (the ingestion's options as they are), ``hudi-defaults`` (the
same with Hudi's own index and small-file limit: ``SIMPLE``, 100 MiB), and one
``bloom-<N>mb`` per ``--limits`` value (the project's options with that small-file limit).
All run in one SparkSession, one after the other; a first, unreported configuration warms
the JVM.

    .venv/bin/python benchmarks/bench_bronze_commits.py [--initial 3000000] [--commits 20]
        [--rows 2000] [--limits 4 8 16 32]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from ingestion.spark import local_spark_session
from ingestion.stream.bronze import bronze_contracts, bronze_options

HUDI_DEFAULTS = {"hoodie.index.type": "SIMPLE", "hoodie.parquet.small.file.limit": str(100 * 1024 * 1024)}
#: Cleaning by commits: the benchmark runs for minutes, the project's retention is hours.
RETENTION = {"hoodie.clean.policy": "KEEP_LATEST_COMMITS", "hoodie.clean.commits.retained": "10"}
#: A column expression per contract type, from the row number ``id`` (strings hash it, so
#: they compress like real names rather than like a counter).
EXPRESSIONS = {
    "int": "cast(id % 1000 as int)",
    "bigint": "id",
    "string": "concat(md5(cast(id as string)), substr(sha1(cast(id as string)), 1, 8))",
    "boolean": "id % 50 = 0",
    "timestamp": "timestamp_seconds(1700000000 + id)",
    "date": "date'2026-11-26'",
}


def rows(spark, start: int, count: int):
    """``count`` rows of ``bronze.event``'s columns, unique by record key, all in one date partition."""
    contract = bronze_contracts()["event"]
    columns = []
    for name, kind in contract.bronze_columns:
        if name == "eventid":
            expression = "cast(id % 2000000000 as int)"
        elif name == "_cdc_position":
            expression = "lpad(cast(id as string), 20, '0')"
        else:
            expression = EXPRESSIONS[kind]
        columns.append(f"{expression} as {name}")
    return spark.range(start, start + count).selectExpr(*columns)


def live_file_sizes(table: Path) -> list[float]:
    """MB of the newest version of each file group in the table's partitions."""
    newest: dict[str, Path] = {}
    for path in table.glob("_cdc_source_date=*/*.parquet"):
        group = path.name.split("_")[0]
        if group not in newest or path.name > newest[group].name:
            newest[group] = path
    return sorted(round(p.stat().st_size / 1e6, 1) for p in newest.values())


def run(spark, table: Path, options: dict[str, str], initial: int, commits: int, count: int) -> list[float]:
    """Seconds of each insert after the initial bulk_insert."""
    rows(spark, 0, initial).write.format("hudi").options(**options) \
        .option("hoodie.datasource.write.operation", "bulk_insert").mode("append").save(str(table))
    seconds = []
    for i in range(commits):
        batch = rows(spark, initial + i * count, count)
        started = time.perf_counter()
        batch.write.format("hudi").options(**options).mode("append").save(str(table))
        seconds.append(time.perf_counter() - started)
    return seconds


def p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * 0.95))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=3_000_000, help="rows in the partition before the inserts")
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--rows", type=int, default=2000, help="rows per insert")
    parser.add_argument("--limits", type=int, nargs="*", default=[], help="small-file limits (MiB) to try")
    args = parser.parse_args()

    spark = local_spark_session("bench-bronze-commits")
    spark.sparkContext.setLogLevel("ERROR")
    project = {**bronze_options(bronze_contracts()["event"]), **RETENTION}
    configurations = {"warm-up": project, "project": project, "hudi-defaults": {**project, **HUDI_DEFAULTS}}
    for limit in args.limits:
        configurations[f"bloom-{limit}mb"] = {**project, "hoodie.parquet.small.file.limit": str(limit * 1024 * 1024)}
    work = Path(tempfile.mkdtemp(prefix="bench-bronze-commits-"))
    print(f"work {work}; {args.initial} rows, then {args.commits} inserts of {args.rows}", flush=True)
    results: dict[str, list[float]] = {}
    for name, options in configurations.items():
        seconds = run(spark, work / name, options, args.initial, args.commits, args.rows)
        if name == "warm-up":
            continue
        results[name] = seconds
        print(f"{name}: mean {statistics.mean(seconds):.2f} s, p50 {statistics.median(seconds):.2f} s, "
              f"p95 {p95(seconds):.2f} s, max {max(seconds):.2f} s; file groups (MB) "
              f"{live_file_sizes(work / name)}", flush=True)
    shutil.rmtree(work, ignore_errors=True)  # kept (and named above) when a run fails
    base = results["project"]
    print("\nratio to the project's options (mean, p95):")
    for name, seconds in results.items():
        print(f"  {name}: {statistics.mean(seconds) / statistics.mean(base):.2f}, {p95(seconds) / p95(base):.2f}")


if __name__ == "__main__":
    main()
