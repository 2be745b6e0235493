"""The ``start|stop|status|logs`` commands every managed service shares (thrift, kafka, metastore, cluster).

A service module gives what differs (how its target is found, how it starts, how a status
reads); this module makes the four commands, their exit codes (``status``: 1 when stopped)
and their errors (a ``ServiceError`` becomes one ``error:``/``hint:`` pair).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakehouse.cli._common import CliError
from lakehouse.services.registry import ServiceError
from lakehouse.services.thrift import tail

Options = Callable[[argparse.ArgumentParser], None]


def _no_options(_parser: argparse.ArgumentParser) -> None:
    return None


@dataclass(frozen=True)
class ServiceCommands:
    """One managed service as the CLI sees it.

    ``target`` turns the parsed arguments into what the service functions take (settings or
    a config); ``start``, ``stop`` and ``status`` are the service's; ``describe`` renders a
    status; ``after_start`` gives the lines printed after a start (how to use the service);
    ``log_file`` (None: no ``logs`` command) the service's log.
    """

    name: str
    help: str
    target: Callable[[argparse.Namespace], Any]
    start: Callable[[Any, argparse.Namespace], Any]
    stop: Callable[[Any], str | Iterable[str]]
    status: Callable[[Any], Any]
    describe: Callable[[Any], str]
    helps: dict[str, str]
    after_start: Callable[[Any, Any], Iterable[str]] = lambda _target, _status: ()
    log_file: Callable[[Any], Path] | None = None
    common_options: Options = _no_options
    start_options: Options = _no_options
    start_timeout: float = 120.0


def register_service(subparsers: argparse._SubParsersAction, service: ServiceCommands) -> None:
    """Add ``lakehouse <service.name> start|stop|status[|logs]``."""
    parser = subparsers.add_parser(service.name, help=service.help)
    sub = parser.add_subparsers(dest=f"{service.name}_command", metavar="ACTION", required=True)

    def start(args: argparse.Namespace) -> int:
        target = service.target(args)
        try:
            status = service.start(target, args)
        except ServiceError as exc:
            raise CliError(str(exc), exc.hint) from exc
        print(service.describe(status))
        for line in service.after_start(target, status):
            print(line)
        return 0

    def stop(args: argparse.Namespace) -> int:
        result = service.stop(service.target(args))
        for line in [result] if isinstance(result, str) else result:
            print(line)
        return 0

    def status(args: argparse.Namespace) -> int:
        current = service.status(service.target(args))
        print(service.describe(current))
        return 0 if current.running else 1

    commands = sub.add_parser("start", help=service.helps["start"])
    service.common_options(commands)
    service.start_options(commands)
    commands.add_argument("--timeout", type=float, default=service.start_timeout,
                          help=f"seconds to wait (default {service.start_timeout:.0f})")
    commands.set_defaults(func=start)
    for name, func in (("stop", stop), ("status", status)):
        command = sub.add_parser(name, help=service.helps[name])
        service.common_options(command)
        command.set_defaults(func=func)
    if service.log_file is not None:
        log_file = service.log_file
        logs = sub.add_parser("logs", help=service.helps["logs"])
        service.common_options(logs)
        logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
        logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
        logs.set_defaults(func=lambda args: _logs(log_file(service.target(args)), args.lines, args.follow))


def _logs(path: Path, lines: int, follow: bool) -> int:
    print(tail(path, lines))
    if not follow:
        return 0
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
