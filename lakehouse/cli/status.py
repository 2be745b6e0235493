"""``lakehouse status``: per bronze table last commit, registration, rows, lag, drift, dead letters;
the consumer lag per topic of a Kafka ingestion."""

from __future__ import annotations

import argparse
import sys

from lakehouse.config import load_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show bronze tables: last commit, registration, rows, lag, drift, dead letters",
        description="Read the bronze tables' timelines (hudi-rs) and which tables the metastore knows "
        "(through the Thrift server, when it answers) and print one line per table.",
    )
    parser.add_argument("--landing", help="landing zone (default: $LAKEHOUSE_LANDING)")
    parser.add_argument("--lake", help="lake root (default: $LAKEHOUSE_LAKE)")
    parser.add_argument("--thrift-host", help="Thrift server host (default: $LAKEHOUSE_THRIFT_HOST)")
    parser.add_argument("--thrift-port", type=int, help="Thrift server port (default: $LAKEHOUSE_THRIFT_PORT)")
    parser.add_argument("--no-catalog", action="store_true",
                        help="do not ask the Thrift server which tables are registered")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ingestion.catalog import ThriftCatalog, ThriftUnavailable
    from ingestion.catalog.sync import registered_tables
    from lakehouse.status import lake_status

    settings = load_settings()
    lake = args.lake or settings.lake
    landing = args.landing or settings.landing
    registered: set[str] | None = None
    sync_error = None
    if not args.no_catalog:
        host, port = args.thrift_host or settings.thrift_host, args.thrift_port or settings.thrift_port
        try:
            with ThriftCatalog(host, port, connect_timeout=2.0) as catalog:
                registered = registered_tables(catalog)
        except ThriftUnavailable as exc:
            sync_error = str(exc)
    status = lake_status(lake, landing, settings.checkpoints_for(lake), registered, sync_error)
    if args.json:
        sys.stdout.write(status.to_json() + "\n")
        return 0
    _print_table(status)
    return 0


def _drift(item) -> str:
    """``v3: +vip, ~venueseats int->bigint``: the schema version and what bronze holds beyond the contract."""
    changes = ", ".join([f"+{n}" for n in item.drift_columns] + [f"~{w}" for w in item.widened_columns])
    if item.schema_version and item.schema_version > 1:
        return f"v{item.schema_version}: {changes}" if changes else f"v{item.schema_version}"
    return changes or "-"


def _print_table(status) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"bronze tables in {status.lake}")
    for name in ("table", "last commit", "in catalog", "rows", "commit age", "drift", "dead letters"):
        table.add_column(name, justify="right" if name in ("rows", "commit age", "dead letters") else "left")
    for item in status.tables:
        registered = {None: "?", True: "yes", False: "no"}[item.registered]
        if not item.exists:
            table.add_row(item.table, "-", registered, "-", "-", "-", str(item.dead_letters or ""))
            continue
        age = "-" if item.commit_age_seconds is None else f"{item.commit_age_seconds:.0f}s"
        reasons = ", ".join(f"{k}={v}" for k, v in item.dead_letters_by_reason.items())
        table.add_row(item.table, item.last_commit or "-", registered, str(item.rows), age,
                      _drift(item),
                      f"{item.dead_letters} ({reasons})" if item.dead_letters else "0")
    console = Console()
    console.print(table)
    if status.landed_files is not None:
        processed = "unknown" if status.processed_files is None else str(status.processed_files)
        console.print(f"landing: {status.landed_files} files landed, {processed} processed"
                      + (f", backlog {status.backlog_files}" if status.backlog_files is not None else ""))
    for lag in status.kafka:
        behind = "unknown (the broker did not answer)" if lag.lag is None else f"lag {lag.lag}"
        console.print(f"kafka {lag.bootstrap} {lag.topic}: {behind}, committed {lag.committed} of "
                      f"{lag.end_offsets} offsets")
    if status.sync_error:
        console.print(f"catalog: unknown ({status.sync_error})")
