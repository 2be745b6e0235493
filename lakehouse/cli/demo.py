"""``lakehouse demo``: the main job on the embedded default (what ``make demo`` runs)."""

from __future__ import annotations

import argparse

from lakehouse.cli._common import CliError
from lakehouse.config import load_settings
from lakehouse.demo import DemoFailed, real_sources_steps, run_demo, where_to_look
from lakehouse.services import kafka


def _demo(args: argparse.Namespace) -> int:
    settings = load_settings()
    plan = real_sources_steps(kafka.broker_config(settings).bootstrap) if args.real_sources else None
    try:
        outcomes = run_demo(settings, plan=plan)
    except DemoFailed as exc:
        raise CliError(str(exc), hint="see the step's output above; 'lakehouse thrift logs' for the server") from exc
    print("\n[demo] done:")
    for step, outcome in outcomes:
        print(f"  {step:<26} {outcome}")
    print("\n[demo] where to look:")
    for line in where_to_look(settings):
        print(f"  {line}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the whole pipeline on the embedded default (thrift, simulate, ingest, dbt, docs)"
    )
    parser.add_argument("--real-sources", action="store_true",
                        help="real PostgreSQL and MariaDB with Debezium's connectors into Kafka, ingested from "
                             "Kafka, instead of the simulator's landing zone")
    parser.set_defaults(func=_demo)
