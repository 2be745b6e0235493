"""``lakehouse sync``: register the latest committed bronze snapshots through the Thrift server."""

from __future__ import annotations

import argparse
import sys

from lakehouse.cli._common import CliError, UsageError
from lakehouse.config import load_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sync",
        help="repoint bronze.<table> views at the latest committed Hudi snapshots",
        description="Build hard-link snapshot directories of each bronze table's latest commit under "
        "<lake>/_catalog/ and repoint bronze.<table> through the Thrift server (idempotent).",
    )
    parser.add_argument("tables", nargs="*", metavar="TABLE", help="tables to sync (default: every bronze table)")
    parser.add_argument("--lake", help="lake root (default: $LAKEHOUSE_LAKE)")
    parser.add_argument("--thrift-host", help="Thrift server host (default: $LAKEHOUSE_THRIFT_HOST)")
    parser.add_argument("--thrift-port", type=int, help="Thrift server port (default: $LAKEHOUSE_THRIFT_PORT)")
    parser.add_argument("--grace", type=float, default=300.0, metavar="SECONDS",
                        help="keep superseded snapshot directories this long (default 300)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ingestion.catalog import IdentifierError, ThriftUnavailable, sync_lake
    from ingestion.catalog.sync import discover_tables
    from ingestion.stream.bronze import placeholder_columns

    settings = load_settings()
    lake = args.lake or settings.lake
    host = args.thrift_host or settings.thrift_host
    port = args.thrift_port or settings.thrift_port
    placeholders = placeholder_columns()
    known = sorted(set(discover_tables(lake)) | set(placeholders))
    unknown = [t for t in args.tables if t not in known]
    if unknown:
        raise UsageError(f"no bronze table {', '.join(unknown)} under {lake}/bronze",
                         f"known tables: {', '.join(known) or 'none (run lakehouse ingest first)'}")
    try:
        results = sync_lake(lake, host, port, args.tables or None, grace_seconds=args.grace,
                            placeholder_columns=placeholders)
    except ThriftUnavailable as exc:
        raise CliError(str(exc), "start it with 'lakehouse thrift start'") from None
    except IdentifierError as exc:
        raise CliError(str(exc)) from None
    failed = 0
    for result in results:
        detail = f"{result.status:<10} {result.table:<12} instant {result.instant or '-'}"
        if result.previous and result.previous != result.instant:
            detail += f" (was {result.previous})"
        if result.message:
            detail += f": {result.message}"
        sys.stdout.write(detail + "\n")
        failed += result.status == "failed"
    if not results:
        sys.stdout.write(f"no bronze tables under {lake}/bronze\n")
    return 1 if failed else 0
