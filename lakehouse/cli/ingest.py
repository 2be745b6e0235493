"""``lakehouse ingest``: the streaming ingestion, landing zone or Kafka topics -> Hudi bronze."""

from __future__ import annotations

import argparse
import contextlib
import sys

from lakehouse.cli._common import CliError, UsageError
from lakehouse.config import load_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="stream the landing zone into the Hudi bronze tables (exactly once, dead-letter, catalog sync)",
        description="Read Debezium events landed by a Kafka Connect S3 sink (JsonFormat .json lines or AvroFormat "
        ".avro container files, in any mix), write one Hudi bronze table per "
        "source table plus bronze.dead_letter, and sync bronze.<table> views through the Thrift server. "
        "One JSON log line per micro-batch goes to stdout.",
    )
    parser.add_argument("--landing", help="landing zone: a local directory or s3://bucket/prefix (s3a:// too; read "
                        "through Hadoop's S3A) (default: $LAKEHOUSE_LANDING)")
    parser.add_argument("--lake", help="lake root holding bronze/ (default: $LAKEHOUSE_LAKE)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="process everything landed, then stop (availableNow)")
    mode.add_argument("--trigger", type=float, metavar="SECONDS", default=None,
                      help="continuous mode: start a micro-batch every SECONDS (default 1)")
    parser.add_argument("--max-files-per-trigger", type=int, metavar="N", help="at most N files per micro-batch")
    parser.add_argument("--reset", action="store_true",
                        help="forget the checkpoint of this landing+lake pair (bronze keeps every event once)")
    kafka = parser.add_argument_group("Kafka source (instead of the landing zone)")
    kafka.add_argument("--kafka-bootstrap", metavar="HOST:PORT",
                       help="read the topics from this Kafka cluster with Spark's Kafka source (offsets in the "
                       "checkpoint); values: Debezium JSON, or Avro in the Confluent wire format")
    kafka.add_argument("--topics", help="comma-separated topics (default: every topic of the table contracts)")
    kafka.add_argument("--starting-offsets", default="earliest",
                       help="where a new checkpoint starts: earliest (default), latest or Spark's JSON per partition")
    kafka.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="at most N records per micro-batch")
    kafka.add_argument("--schema-registry-url", metavar="URL",
                       help="Confluent-compatible schema registry for Avro values (GET /schemas/ids/{id}), e.g. "
                       "Apicurio's http://HOST:8080/apis/ccompat/v7")
    kafka.add_argument("--schema-registry-wait", type=float, metavar="SECONDS", default=60.0,
                       help="how long a schema lookup retries a registry that does not answer before the record "
                       "becomes a registry_unavailable dead letter (default 60)")
    kafka.add_argument("--no-fail-on-data-loss", action="store_true",
                       help="skip offsets lost to retention instead of stopping with an error")
    parser.add_argument("--no-sync", action="store_true",
                        help="do not register the tables (through the Thrift server, or in $LAKEHOUSE_METASTORE_URI)")
    parser.add_argument("--thrift-host", help="Thrift server host (default: $LAKEHOUSE_THRIFT_HOST)")
    parser.add_argument("--thrift-port", type=int, help="Thrift server port (default: $LAKEHOUSE_THRIFT_PORT)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="continuous mode: stop after SECONDS (default: run until interrupted)")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ingestion.stream import IngestError, IngestOptions, run_ingest
    from lakehouse.progress import BackfillProgress

    settings = load_settings()
    options = IngestOptions(
        landing=args.landing or settings.landing,
        lake=args.lake or settings.lake,
        checkpoints_root=settings.checkpoints_for(args.lake or settings.lake),
        once=args.once,
        trigger_seconds=args.trigger or 1.0,
        max_files_per_trigger=args.max_files_per_trigger,
        reset=args.reset,
        sync=not args.no_sync,
        thrift_host=args.thrift_host or settings.thrift_host,
        thrift_port=args.thrift_port or settings.thrift_port,
        metastore_uri=settings.metastore_uri,
        timeout_seconds=args.timeout,
        kafka_bootstrap=args.kafka_bootstrap,
        topics=tuple(t.strip() for t in args.topics.split(",") if t.strip()) if args.topics else None,
        starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        fail_on_data_loss=not args.no_fail_on_data_loss,
        schema_registry_url=args.schema_registry_url,
        schema_registry_wait_seconds=args.schema_registry_wait,
    )
    if args.kafka_bootstrap is None and (args.topics or args.schema_registry_url or args.max_offsets_per_trigger):
        raise UsageError("--topics, --schema-registry-url and --max-offsets-per-trigger need --kafka-bootstrap")
    if args.timeout is not None and args.once:
        raise UsageError("--timeout applies to continuous mode only", "drop --once or --timeout")
    try:
        options.validate()
    except IngestError as exc:
        raise UsageError(str(exc), exc.hint) from None
    progress = None
    if options.once and not args.quiet and sys.stderr.isatty() and options.kafka_bootstrap is None:
        progress = BackfillProgress(options.landing)
    try:
        with progress if progress is not None else contextlib.nullcontext():
            summary = run_ingest(options, on_report=progress.update if progress else None)
    except IngestError as exc:
        raise CliError(str(exc), exc.hint) from None
    total = sum(summary.events.values())
    sys.stderr.write(
        f"ingested {total} events into {len(summary.events)} tables, {summary.bad_events} dead-lettered, "
        f"{len(summary.reports)} micro-batches (checkpoint {summary.checkpoint})\n"
    )
    return 0

