"""``lakehouse thrift start|stop|status|logs``: the managed Spark Thrift server."""

from __future__ import annotations

import argparse
import dataclasses
import time

from lakehouse.cli._common import CliError
from lakehouse.config import load_settings
from lakehouse.services import thrift


def _settings(args: argparse.Namespace):
    settings = load_settings()
    changes = {}
    if getattr(args, "host", None):
        changes["thrift_host"] = args.host
    if getattr(args, "port", None):
        changes["thrift_port"] = args.port
    return dataclasses.replace(settings, **changes) if changes else settings


def _start(args: argparse.Namespace) -> int:
    settings = _settings(args)
    try:
        st = thrift.start(settings, ui=args.ui, timeout=args.timeout, allow_remote=args.allow_remote)
    except thrift.ThriftError as exc:
        raise CliError(str(exc), exc.hint) from exc
    print(st.describe())
    print(f"log: {st.log_file}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    print(thrift.stop(_settings(args)))
    return 0


def _status(args: argparse.Namespace) -> int:
    st = thrift.status(_settings(args))
    print(st.describe())
    return 0 if st.running else 1


def _logs(args: argparse.Namespace) -> int:
    path = thrift.log_file(_settings(args))
    print(thrift.tail(path, args.lines))
    if args.follow:
        with open(path, errors="replace") as handle:
            handle.seek(0, 2)
            try:
                while True:
                    line = handle.readline()
                    if line:
                        print(line, end="")
                    else:
                        time.sleep(0.5)
            except KeyboardInterrupt:
                return 0
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("thrift", help="manage the local Spark Thrift server")
    sub = parser.add_subparsers(dest="thrift_command", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--host", help="bind address (default LAKEHOUSE_THRIFT_HOST or 127.0.0.1)")
        p.add_argument("--port", type=int, help="port (default LAKEHOUSE_THRIFT_PORT or 10000)")

    start = sub.add_parser("start", help="start the server and wait until it answers SELECT 1")
    common(start)
    start.add_argument("--ui", action="store_true", help="enable the Spark UI (off by default)")
    start.add_argument("--allow-remote", action="store_true",
                       help="allow a --host beyond loopback (the server takes unauthenticated SQL: warned)")
    start.add_argument("--timeout", type=float, default=240.0, help="seconds to wait (default 240)")
    start.set_defaults(func=_start)

    stop = sub.add_parser("stop", help="stop the server this LAKEHOUSE_HOME started")
    common(stop)
    stop.set_defaults(func=_stop)

    status = sub.add_parser("status", help="is the server running and answering? (exit 1 when stopped)")
    common(status)
    status.set_defaults(func=_status)

    logs = sub.add_parser("logs", help="show the server log")
    common(logs)
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.set_defaults(func=_logs)
