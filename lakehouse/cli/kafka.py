"""``lakehouse kafka start|stop|status|logs``: the managed single-node Kafka broker (KRaft)."""

from __future__ import annotations

import argparse

from lakehouse.cli._common import CliError
from lakehouse.config import load_settings
from lakehouse.services import kafka


def _config(args: argparse.Namespace) -> kafka.BrokerConfig:
    return kafka.broker_config(load_settings(), getattr(args, "port", None))


def _start(args: argparse.Namespace) -> int:
    try:
        st = kafka.start(_config(args), timeout=args.timeout)
    except kafka.KafkaError as exc:
        raise CliError(str(exc), exc.hint) from exc
    print(st.describe())
    print(f"bootstrap: {st.bootstrap}  (lakehouse ingest --kafka-bootstrap {st.bootstrap})")
    print(f"log: {st.log_file}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    print(kafka.stop(_config(args)))
    return 0


def _status(args: argparse.Namespace) -> int:
    st = kafka.status(_config(args))
    print(st.describe())
    return 0 if st.running else 1


def _logs(args: argparse.Namespace) -> int:
    print(kafka.tail(kafka.log_file(_config(args)), args.lines))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("kafka", help="manage the local Kafka broker (KRaft, 127.0.0.1)")
    sub = parser.add_subparsers(dest="kafka_command", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--port", type=int, help="client port (default LAKEHOUSE_KAFKA_PORT or 9092)")

    start = sub.add_parser("start", help="format the log directory if needed, start the broker, wait until it serves")
    common(start)
    start.add_argument("--timeout", type=float, default=90.0, help="seconds to wait (default 90)")
    start.set_defaults(func=_start)
    stop = sub.add_parser("stop", help="stop the broker this LAKEHOUSE_HOME started (by PID)")
    common(stop)
    stop.set_defaults(func=_stop)
    status = sub.add_parser("status", help="is the broker running? (exit 1 when stopped)")
    common(status)
    status.set_defaults(func=_status)
    logs = sub.add_parser("logs", help="show the broker log")
    common(logs)
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
    logs.set_defaults(func=_logs)
