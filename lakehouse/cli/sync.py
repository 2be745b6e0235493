"""``lakehouse sync``: register the bronze Hudi tables in the metastore through the Thrift server."""

from __future__ import annotations

import argparse
import sys

from lakehouse.cli._common import CliError, UsageError
from lakehouse.config import load_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sync",
        help="register the bronze Hudi tables as bronze.<table> (the ingestion does it by itself)",
        description="Register each bronze Hudi table of the lake as bronze.<table> USING hudi through the "
        "Thrift server, re-registering a name that points elsewhere (idempotent).",
    )
    parser.add_argument("tables", nargs="*", metavar="TABLE", help="tables to sync (default: every bronze table)")
    parser.add_argument("--lake", help="lake root (default: $LAKEHOUSE_LAKE)")
    parser.add_argument("--thrift-host", help="Thrift server host (default: $LAKEHOUSE_THRIFT_HOST)")
    parser.add_argument("--thrift-port", type=int, help="Thrift server port (default: $LAKEHOUSE_THRIFT_PORT)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ingestion.catalog import IdentifierError, ThriftUnavailable, sync_lake
    from ingestion.catalog.sync import discover_tables

    settings = load_settings()
    lake = args.lake or settings.lake
    host = args.thrift_host or settings.thrift_host
    port = args.thrift_port or settings.thrift_port
    known = discover_tables(lake)
    unknown = [t for t in args.tables if t not in known]
    if unknown:
        raise UsageError(f"no bronze table {', '.join(unknown)} under {lake}/bronze",
                         f"known tables: {', '.join(known) or 'none (run lakehouse ingest first)'}")
    try:
        results = sync_lake(lake, host, port, args.tables or None)
    except ThriftUnavailable as exc:
        raise CliError(str(exc), "start it with 'lakehouse thrift start'") from None
    except IdentifierError as exc:
        raise CliError(str(exc)) from None
    failed = 0
    for result in results:
        detail = f"{result.status:<10} {result.table}"
        if result.message:
            detail += f": {result.message}"
        sys.stdout.write(detail + "\n")
        failed += result.status == "failed"
    if not results:
        sys.stdout.write(f"no bronze tables under {lake}/bronze\n")
    return 1 if failed else 0
