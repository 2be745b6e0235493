"""``lakehouse tables add``: onboard a new source table (contract, dbt source, staging, silver)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lakehouse.cli._common import CliError, UsageError
from lakehouse.cli.contracts import tables_from_files, tables_from_kafka
from lakehouse.onboarding import OnboardingError, onboard

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _add(args: argparse.Namespace) -> int:
    if bool(args.from_event) == bool(args.kafka_bootstrap):
        raise UsageError("give either --from-event FILE --primary-key COLS or --kafka-bootstrap HOST:PORT --topic T")
    if args.kafka_bootstrap:
        if not args.topic:
            raise UsageError("--kafka-bootstrap needs --topic")
        args.topics = args.topic
        tables = tables_from_kafka(args)
    else:
        if not args.primary_key:
            raise UsageError("--from-event needs --primary-key (a landed event has no Kafka key)")
        tables = tables_from_files(args)
    if len(tables) != 1:
        raise UsageError("one table at a time: give one event file or one topic")
    project = Path(args.project_dir)
    try:
        written = onboard(project, tables[0], args.system, args.entity)
    except OnboardingError as exc:
        raise CliError(str(exc)) from exc
    for path in written:
        print(f"wrote {path.relative_to(project) if path.is_relative_to(project) else path}")
    print(f"next: describe the columns (search for 'TODO: describe'), then `lakehouse ingest` and "
          f"`lakehouse dbt build --select +{args.entity or written[6].stem}` (docs/adding-a-table.md)")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tables", help="onboard source tables")
    sub = parser.add_subparsers(dest="tables_command", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="a new table end to end: contract, dbt source, staging, state and silver models")
    add.add_argument("--system", required=True, help="the source system whose contract file gets the table")
    add.add_argument("--from-event", nargs=1, metavar="FILE", help="an event written with schemas.enable=true")
    add.add_argument("--primary-key", metavar="COLS", help="key columns for --from-event")
    add.add_argument("--kafka-bootstrap", metavar="HOST:PORT", help="read the topic's first keyed record")
    add.add_argument("--topic", metavar="TOPIC", help="the table's topic, with --kafka-bootstrap")
    add.add_argument("--entity", metavar="NAME", help="the silver model's name (default: the table's plural)")
    add.add_argument("--project-dir", default=str(PROJECT_ROOT), help="the project's root (default: this checkout)")
    add.set_defaults(func=_add)
