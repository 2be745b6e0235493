"""``lakehouse sources start|changes|status|stop``: real PostgreSQL and MariaDB with Debezium into Kafka."""

from __future__ import annotations

import argparse
import random

from lakehouse import real_sources
from lakehouse.cli._common import CliError
from lakehouse.config import load_settings
from lakehouse.services import connect, databases, kafka, registry
from simulator import live


def _bootstrap(args: argparse.Namespace) -> str:
    """The broker to use: ``--kafka-bootstrap``, else this home's broker (started if needed)."""
    if args.kafka_bootstrap:
        return str(args.kafka_bootstrap)
    try:
        return kafka.start(kafka.broker_config(load_settings())).bootstrap
    except kafka.KafkaError as exc:
        raise CliError(str(exc), exc.hint) from exc


def _start(args: argparse.Namespace) -> int:
    settings = load_settings()
    bootstrap = _bootstrap(args)
    try:
        sources = real_sources.start(settings, bootstrap, seed=args.seed, apicurio_url=args.apicurio_url)
    except registry.ServiceError as exc:
        raise CliError(str(exc), exc.hint) from exc
    for system, db in sources.databases().items():
        print(f"{system}: {db.kind} on {db.host}:{db.port}, database {db.database}, user {db.user} "
              f"(password in {databases.sources_dir(settings) / db.kind}.password)")
    print(f"kafka connect: connectors {', '.join(sorted(connect.connector_states(settings)))} running into "
          f"{bootstrap}")
    print(f"crm (SQL Server, simulated): {sources.users} users in {real_sources.CRM_USER_TOPIC}")
    registry_option = f" --schema-registry-url {connect.ccompat_url(args.apicurio_url)}" if args.apicurio_url else ""
    print(f"next: lakehouse sources changes --count 200; lakehouse ingest --kafka-bootstrap {bootstrap}"
          f"{registry_option}")
    return 0


def _changes(args: argparse.Namespace) -> int:
    settings = load_settings()
    sources = real_sources.running(settings)
    if sources is None:
        raise CliError("the real sources are not running", "run 'lakehouse sources start' first")
    with real_sources.connections(sources) as conns:
        workload = live.Workload(conns, real_sources.real_contracts(), random.Random(args.seed), sources.users)
        for _ in range(args.count):
            workload.step()
    try:
        real_sources.wait_settled(settings)  # so that an ingest --once right after sees every change
    except registry.ServiceError as exc:
        raise CliError(str(exc), exc.hint) from exc
    print(f"{args.count} transactions on the real tables: "
          + ", ".join(f"{kind} {n}" for kind, n in sorted(workload.counts.items())))
    return 0


def _status(args: argparse.Namespace) -> int:
    settings = load_settings()
    running = {record.name for record in registry.running(settings)}
    for name in ("postgres", "mariadb", connect.SERVICE):
        print(f"{name}: {'running' if name in running else 'stopped'}")
    for name, state in sorted(connect.connector_states(settings).items()):
        tasks = ", ".join(task.get("state", "?") for task in state.get("tasks", []))
        print(f"connector {name}: {state.get('connector', {}).get('state', '?')} (tasks: {tasks or 'none'})")
    return 0 if {"postgres", "mariadb", connect.SERVICE} <= running else 1


def _stop(args: argparse.Namespace) -> int:
    for line in real_sources.stop(load_settings()):
        print(line)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sources", help="real PostgreSQL (ems) and MariaDB (ecomm) with Debezium's connectors into Kafka")
    sub = parser.add_subparsers(dest="sources_command", metavar="ACTION", required=True)
    start = sub.add_parser("start", help="start the databases (tables and a first snapshot on first start), "
                                         "the simulated crm users and Kafka Connect; wait for the snapshots")
    start.add_argument("--kafka-bootstrap", metavar="HOST:PORT",
                       help="the broker (default: this home's, started with 'lakehouse kafka start' if needed)")
    start.add_argument("--seed", type=int, default=7, help="seed of the first snapshot (default 7)")
    start.add_argument("--apicurio-url", metavar="URL",
                       help="Avro records: Kafka Connect uses Apicurio Registry's Avro converter (Confluent wire "
                            "format) with the Apicurio Registry at URL (its base, e.g. http://127.0.0.1:8080); "
                            "default: JSON with schemas")
    start.set_defaults(func=_start)
    changes = sub.add_parser("changes", help="run random TICKIT transactions on the real tables")
    changes.add_argument("--count", type=int, default=200, help="transactions to run (default 200)")
    changes.add_argument("--seed", type=int, default=None, help="random seed (default: a fresh one)")
    changes.set_defaults(func=_changes)
    status = sub.add_parser("status", help="the databases, Kafka Connect and its connectors (exit 1 if not all run)")
    status.set_defaults(func=_status)
    stop = sub.add_parser("stop", help="stop Kafka Connect and the databases (their data is kept)")
    stop.set_defaults(func=_stop)
