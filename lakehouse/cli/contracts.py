"""``lakehouse contracts generate|diff|history``: a contracts file from Debezium's own schemas, what the
events carry that the contracts do not, and what the events changed in bronze (its schema history)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ingestion.cdc.contract_diff import contract_differences
from ingestion.cdc.contract_generator import GeneratedTable, render_contracts, table_from_event
from ingestion.cdc.contracts import ContractError, TableContract, load_contracts, topic_map
from lakehouse.cli._common import CliError, UsageError


def _event_from_file(path: Path, newest: bool = False) -> dict[str, Any]:
    """The first (``newest``: the last) event of a file: one JSON document, or JSON lines (a landing file)."""
    text = path.read_text()
    try:
        return dict(json.loads(text))
    except ValueError:
        lines = text.splitlines()
        for line in reversed(lines) if newest else lines:
            if line.strip() and line.strip() != "null":
                return dict(json.loads(line))
    raise CliError(f"{path}: no event in the file")


def tables_from_files(args: argparse.Namespace, newest: bool = False,
                keys: dict[str, TableContract] | None = None) -> list[GeneratedTable]:
    """One table per event file; ``keys``: contracts by table name, whose key a file without
    ``--primary-key`` takes."""
    primary_key = [c.strip() for c in (args.primary_key or "").split(",") if c.strip()]
    tables = []
    for name in args.from_event:
        try:
            event = _event_from_file(Path(name), newest)
            table = str(((event.get("payload") or {}).get("source") or {}).get("table"))
            known = keys.get(table) if keys is not None else None
            pk = primary_key or (list(known.primary_key) if known is not None else [])
            tables.append(table_from_event(event, primary_key=pk))
        except (OSError, ValueError) as exc:
            raise CliError(f"{name}: {exc}", "give a Debezium event written with schemas.enable=true") from exc
    return tables


def tables_from_kafka(args: argparse.Namespace, newest: bool = False) -> list[GeneratedTable]:
    from ingestion.sources.kafka import first_keyed_record, last_keyed_record

    tables = []
    for topic in [t.strip() for t in args.topics.split(",") if t.strip()]:
        record = (last_keyed_record if newest else first_keyed_record)(args.kafka_bootstrap, topic)
        if record is None:
            raise CliError(f"topic {topic} on {args.kafka_bootstrap}: no record with a key and a value",
                           "is the connector running and has it sent its snapshot?")
        key, value = record
        try:
            tables.append(table_from_event(json.loads(value), key=json.loads(key), topic=topic))
        except ValueError as exc:  # ContractError included
            raise CliError(f"topic {topic}: {exc}",
                           "the JSON converter must write schemas (schemas.enable=true)") from exc
    return tables


def _generate(args: argparse.Namespace) -> int:
    if bool(args.from_event) == bool(args.kafka_bootstrap):
        raise UsageError("give either --from-event FILE... or --kafka-bootstrap HOST:PORT --topics T1,T2")
    if args.kafka_bootstrap and not args.topics:
        raise UsageError("--kafka-bootstrap needs --topics")
    tables = tables_from_kafka(args) if args.kafka_bootstrap else tables_from_files(args)
    try:
        text = render_contracts(args.system, tables)
    except ContractError as exc:
        raise CliError(str(exc)) from exc
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}: {len(tables)} table(s) of system {args.system}")
    else:
        print(text, end="")
    return 0


def _diff(args: argparse.Namespace) -> int:
    if bool(args.from_event) == bool(args.kafka_bootstrap):
        raise UsageError("give either --from-event FILE... or --kafka-bootstrap HOST:PORT [--topics T1,T2]")
    by_topic = topic_map()
    if args.kafka_bootstrap:
        from ingestion.sources.kafka import KafkaUnavailable, watermarks

        if not args.topics:  # every contract topic the broker holds records of
            try:
                marks = watermarks(args.kafka_bootstrap, list(by_topic))
            except KafkaUnavailable as exc:
                raise CliError(str(exc), "is the broker running? (lakehouse kafka status)") from exc
            args.topics = ",".join(t for t, parts in marks.items() if any(high > low for low, high in parts.values()))
            if not args.topics:
                raise CliError(f"no topic of the contracts on {args.kafka_bootstrap}")
        tables = tables_from_kafka(args, newest=True)
    else:
        tables = tables_from_files(args, newest=True, keys=load_contracts())
    differing = 0
    for table in tables:
        contract = by_topic.get(table.topic) or load_contracts().get(table.name)
        if contract is None:
            print(f"{table.topic}: no contract (a new table: `lakehouse contracts generate`)")
            differing += 1
            continue
        differences = contract_differences(contract, table)
        print(f"{contract.name} ({table.topic}): " + ("as the contract says" if not differences
                                                      else f"{len(differences)} difference(s)"))
        for difference in differences:
            print(f"  {difference.line()}")
        differing += bool(differences)
    return 1 if differing else 0


def _history(args: argparse.Namespace) -> int:
    from ingestion.stream.schema_history import read_history
    from lakehouse.config import load_settings

    lake = args.lake or load_settings().lake
    rows = [r for r in read_history(lake) if args.table is None or r["table_name"] == args.table]
    if args.json:
        print(json.dumps(rows, default=str, indent=2))
        return 0
    if not rows:
        print(f"no schema change recorded in {lake}" + (f" for {args.table}" if args.table else "")
              + ": every bronze table is at version 1, its contract")
        return 0
    for row in rows:
        kinds = (f"{row['from_type']} -> {row['to_type']}" if row["change"] == "widened" else row["to_type"])
        first = (f"{row['first_topic']} partition {row['first_kafka_partition']} offset {row['first_kafka_offset']}"
                 + (f" ({row['first_landing_file']})" if row["first_landing_file"] else ""))
        print(f"{row['table_name']} v{row['schema_version']}: {row['change']} {row['column_name']} {kinds}; "
              f"first seen {first}, source time {row['first_source_ts']}; recorded {row['recorded_at']}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("contracts", help="table contracts (ingestion/cdc/contracts/*.yml)")
    sub = parser.add_subparsers(dest="contracts_command", metavar="ACTION", required=True)
    generate = sub.add_parser("generate", help="write a contracts file from Debezium's schemas (events or topics)")
    generate.add_argument("--system", required=True, help="the source system's name (the file's `system`)")
    generate.add_argument("--from-event", nargs="+", metavar="FILE",
                          help="events written with schemas.enable=true (a JSON document or JSON lines each)")
    generate.add_argument("--primary-key", metavar="COLS", help="key columns for --from-event (files have no keys)")
    generate.add_argument("--kafka-bootstrap", metavar="HOST:PORT", help="read each topic's first keyed record")
    generate.add_argument("--topics", metavar="T1,T2", help="topics to read with --kafka-bootstrap")
    generate.add_argument("--output", metavar="FILE", help="write here instead of standard output")
    generate.set_defaults(func=_generate)
    diff = sub.add_parser("diff", help="what the newest events carry that the contracts do not (exit 1 if anything)")
    diff.add_argument("--kafka-bootstrap", metavar="HOST:PORT",
                      help="read each topic's newest keyed record (schemas.enable=true)")
    diff.add_argument("--topics", metavar="T1,T2", help="topics to read (default: every contract topic the broker has)")
    diff.add_argument("--from-event", nargs="+", metavar="FILE",
                      help="event files (the last event of each; the key is the contract's unless --primary-key)")
    diff.add_argument("--primary-key", metavar="COLS", help="key columns for --from-event")
    diff.set_defaults(func=_diff)
    history = sub.add_parser("history", help="the changes the events made to the bronze tables' schemas "
                             "(version, column, types, first position seen)")
    history.add_argument("--table", help="one table (default: all)")
    history.add_argument("--lake", help="lake root (default: $LAKEHOUSE_LAKE)")
    history.add_argument("--json", action="store_true", help="print JSON rows")
    history.set_defaults(func=_history)
