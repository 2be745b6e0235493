"""``lakehouse kafka start|stop|status|logs``: the managed single-node Kafka broker (KRaft)."""

from __future__ import annotations

import argparse

from lakehouse.cli._service import ServiceCommands, register_service
from lakehouse.config import load_settings
from lakehouse.services import kafka


def _config(args: argparse.Namespace) -> kafka.BrokerConfig:
    return kafka.broker_config(load_settings(), getattr(args, "port", None))


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="client port (default LAKEHOUSE_KAFKA_PORT or 9092)")


def register(subparsers: argparse._SubParsersAction) -> None:
    register_service(subparsers, ServiceCommands(
        name="kafka",
        help="manage the local Kafka broker (KRaft, 127.0.0.1)",
        target=_config,
        start=lambda config, args: kafka.start(config, timeout=args.timeout),
        stop=kafka.stop,
        status=kafka.status,
        describe=lambda status: status.describe(),
        after_start=lambda _config, status: [
            f"bootstrap: {status.bootstrap}  (lakehouse ingest --kafka-bootstrap {status.bootstrap})",
            f"log: {status.log_file}",
        ],
        log_file=kafka.log_file,
        common_options=_options,
        start_timeout=90.0,
        helps={"start": "format the log directory if needed, start the broker, wait until it serves",
               "stop": "stop the broker this LAKEHOUSE_HOME started (by PID)",
               "status": "is the broker running? (exit 1 when stopped)",
               "logs": "show the broker log"},
    ))
