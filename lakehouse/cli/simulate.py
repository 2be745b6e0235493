"""``lakehouse simulate``: write TICKIT Debezium change streams to a Kafka Connect S3-sink landing zone."""

from __future__ import annotations

import argparse
import datetime as dt
import os

from ingestion.cdc.landing import FILE_FORMATS, JSON
from ingestion.object_store import StorageError, open_storage
from lakehouse.cli._common import CliError, UsageError
from lakehouse.config import load_settings
from simulator.oracle import OracleError
from simulator.simulation import (
    FORMATS,
    SimulationError,
    SimulationOptions,
    expected_events,
    run_simulation,
)


def _start_time(text: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r} (e.g. 2026-01-01T00:00:00Z)") from None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _formats(args: argparse.Namespace) -> tuple[str, str]:
    """(file format, event shape) from ``--format`` and ``--shape``.

    ``--format envelope|flattened|mixed`` (the shape, before Avro existed) still means JSON
    lines of that shape.
    """
    if args.format in FORMATS:
        if args.shape is not None and args.shape != args.format:
            raise UsageError(f"--format {args.format} (JSON lines of that shape) contradicts --shape {args.shape}",
                             f"use --format json --shape {args.shape}")
        return JSON, args.format
    return args.format, args.shape or "envelope"


def _run(args: argparse.Namespace) -> int:
    landing = args.landing or load_settings().landing
    file_format, shape = _formats(args)
    if args.schema_registry_url and not args.kafka_bootstrap:
        raise UsageError("--schema-registry-url needs --kafka-bootstrap")
    if args.kafka_bootstrap and file_format != JSON and not args.schema_registry_url:
        raise UsageError("--format avro --kafka-bootstrap needs --schema-registry-url",
                         "Avro values carry a schema id in the Confluent wire format")
    options = SimulationOptions(
        landing=landing,
        scale=args.scale,
        changes=args.changes,
        seed=args.seed,
        format=shape,
        file_format=file_format,
        start_time=args.start_time,
        rate=args.rate,
        duration=args.duration,
        partitions=args.partitions,
        flush_size=args.flush_size,
        rotate_interval_ms=args.rotate_interval_ms,
        partitioner=args.partitioner,
        inject_bad=args.inject_bad,
        restarts=args.restarts,
        truncate=args.truncate,
        reset=args.reset,
        endpoint_url=args.s3_endpoint_url or os.environ.get("AWS_ENDPOINT_URL"),
    )
    try:
        resuming = not args.reset and _has_oracle(options)
        summary = _with_progress(options, resuming, quiet=args.quiet)
    except (SimulationError, StorageError, OracleError) as exc:
        raise CliError(str(exc), "see 'lakehouse simulate --help'") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    print(
        f"run {summary.run} -> {summary.landing}: {summary.snapshot_events} snapshot + "
        f"{summary.change_events} change events + {summary.incremental_snapshot_events} read again by an "
        f"incremental snapshot, {summary.duplicates} re-delivered, "
        f"{summary.tombstones} tombstones, {summary.bad_lines} bad lines; "
        f"{summary.files} {summary.file_format} files / {summary.lines} records; virtual time {summary.start_time} .. "
        f"{summary.end_time}; {summary.seconds}s"
    )
    print(f"oracle: {summary.landing}/_oracle/manifest.json")
    if args.kafka_bootstrap:
        _produce(args, landing)
    return 0


def _produce(args: argparse.Namespace, landing: str) -> None:
    """Produce the landed records to Kafka (``simulator.kafka_producer``)."""
    from simulator.kafka_producer import ProduceError, produce_landing

    try:
        produced = produce_landing(landing, args.kafka_bootstrap, registry_url=args.schema_registry_url)
    except ProduceError as exc:
        raise CliError(str(exc), "is the broker running? 'lakehouse kafka start' (and for Avro: the registry)") from exc
    ids = "; ".join(f"{t}: schema ids {', '.join(map(str, v))}" for t, v in sorted(produced.schema_ids.items()))
    print(f"kafka {args.kafka_bootstrap}: {produced.records} records produced ({produced.tombstones} tombstones), "
          f"{produced.skipped} already there" + (f"; {ids}" if ids else ""))


def _has_oracle(options: SimulationOptions) -> bool:
    storage = open_storage(options.landing, options.endpoint_url)
    return storage.read("_oracle/manifest.json") is not None


def _with_progress(options: SimulationOptions, resuming: bool, quiet: bool):
    if quiet or options.rate is not None:
        return run_simulation(options)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    total = expected_events(options, resuming)
    with Progress(
        TextColumn("simulate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
    ) as progress:
        task = progress.add_task("events", total=total)
        summary = run_simulation(options, lambda done, _total: progress.update(task, completed=done))
        progress.update(task, completed=total)
    return summary


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="write TICKIT Debezium CDC events to a Kafka Connect S3-sink landing zone (+ oracle)",
        description=(
            "Simulate the TICKIT source databases (MySQL ecomm, PostgreSQL ems, SQL Server crm) and their "
            "Debezium connectors: a snapshot, then changes, written as Kafka Connect S3-sink files under "
            "<landing>/topics/ with the expected results in <landing>/_oracle/. A second run on the same "
            "landing resumes (offsets, keys, positions, oracle continue); --reset starts over."
        ),
    )
    parser.add_argument(
        "--landing", help="local directory or s3://bucket/prefix (default LAKEHOUSE_LANDING or $LAKEHOUSE_HOME/landing)"
    )
    parser.add_argument("--scale", type=float, default=1.0, help="synthetic users/listings/sales: 1.0 = full TICKIT")
    parser.add_argument(
        "--changes",
        type=_positive_int,
        default=20_000,
        help="change events per run (default 20000; --truncate adds its truncate + reload events)",
    )
    parser.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    parser.add_argument(
        "--format",
        choices=(*FILE_FORMATS, *FORMATS),
        default=JSON,
        help="landing file format, as the S3 sink's format.class: json (JsonFormat, one event per line) or avro "
        "(AvroFormat: Avro object container files with the writer schema of Debezium's Avro converter; "
        "tombstones dropped); default json. envelope|flattened|mixed: JSON lines of that --shape",
    )
    parser.add_argument(
        "--shape",
        choices=FORMATS,
        default=None,
        help="event shape: envelope (Debezium envelope), flattened (ExtractNewRecordState, delete rewrite), "
        "mixed (both, plus JSON lines with schemas / Avro with precise decimals); default envelope",
    )
    parser.add_argument(
        "--start-time",
        type=_start_time,
        help="virtual clock start, ISO-8601 UTC (default: now; on resume: after the previous run)",
    )
    parser.add_argument("--rate", type=float, help="continuous mode: change events per second on the wall clock")
    parser.add_argument("--duration", type=float, help="continuous mode: stop after this many seconds")
    parser.add_argument("--partitions", type=int, default=3, help="Kafka partitions per topic (default 3)")
    parser.add_argument("--flush-size", type=int, default=10_000, help="records per landing file (default 10000)")
    parser.add_argument(
        "--rotate-interval-ms",
        type=int,
        default=60_000,
        help="rotate files every N ms of (virtual) time (default 60000)",
    )
    parser.add_argument(
        "--partitioner",
        choices=("default", "daily"),
        default="default",
        help="directory layout: partition=<p>/ or year=/month=/day=/ (default: default)",
    )
    parser.add_argument(
        "--inject-bad",
        type=_positive_int,
        default=0,
        help="mix N bad lines into the stream (one per dead-letter reason in turn)",
    )
    parser.add_argument(
        "--restarts",
        type=_positive_int,
        default=2,
        help="connector restarts per run that re-deliver recent events (default 2)",
    )
    parser.add_argument("--truncate", action="store_true", help="also truncate and reload the category table once")
    parser.add_argument("--reset", action="store_true", help="delete topics/ and _oracle/ of the landing first")
    parser.add_argument("--s3-endpoint-url", help="S3 endpoint (default AWS_ENDPOINT_URL; e.g. a moto server)")
    parser.add_argument("--kafka-bootstrap", metavar="HOST:PORT",
                        help="also produce the landed records to their Kafka topics (same partitions, in offset "
                        "order; a resumed run adds only the new ones): JSON values, or with --format avro Avro "
                        "values in the Confluent wire format")
    parser.add_argument("--schema-registry-url", metavar="URL",
                        help="with --format avro --kafka-bootstrap: the Confluent-compatible registry where each "
                        "writer schema is registered (POST /subjects/<topic>-value/versions)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=_run)
