"""``lakehouse thrift start|stop|status|logs``: the managed Spark Thrift server."""

from __future__ import annotations

import argparse
import dataclasses

from lakehouse.cli._service import ServiceCommands, register_service
from lakehouse.config import Settings, load_settings
from lakehouse.services import thrift


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings()
    changes = {}
    if getattr(args, "host", None):
        changes["thrift_host"] = args.host
    if getattr(args, "port", None):
        changes["thrift_port"] = args.port
    return dataclasses.replace(settings, **changes) if changes else settings


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="bind address (default LAKEHOUSE_THRIFT_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default LAKEHOUSE_THRIFT_PORT or 10000)")


def _start_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ui", action="store_true", help="enable the Spark UI (off by default)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a --host beyond loopback (the server takes unauthenticated SQL: warned)")


def register(subparsers: argparse._SubParsersAction) -> None:
    register_service(subparsers, ServiceCommands(
        name="thrift",
        help="manage the local Spark Thrift server",
        target=_settings,
        start=lambda settings, args: thrift.start(settings, ui=args.ui, timeout=args.timeout,
                                                  allow_remote=args.allow_remote),
        stop=thrift.stop,
        status=thrift.status,
        describe=lambda status: status.describe(),
        after_start=lambda _settings, status: [f"log: {status.log_file}"],
        log_file=thrift.log_file,
        common_options=_options,
        start_options=_start_options,
        start_timeout=240.0,
        helps={"start": "start the server and wait until it answers SELECT 1",
               "stop": "stop the server this LAKEHOUSE_HOME started",
               "status": "is the server running and answering? (exit 1 when stopped)",
               "logs": "show the server log"},
    ))
