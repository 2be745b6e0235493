"""The ``lakehouse`` command: a thin layer that parses flags and calls the modules.

Every subcommand lives in its own module ``lakehouse/cli/<name>.py`` exposing
``register(subparsers)``, which adds its parser and sets ``func`` (called with the
parsed arguments; returns an exit code or None for 0).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import traceback
from typing import NoReturn

from ingestion.errors import IngestionError
from lakehouse import __version__
from lakehouse.cli._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError
from lakehouse.services.registry import ServiceError

#: Subcommand modules, in help order. A module not yet present is skipped.
COMMAND_MODULES = (
    "thrift",
    "kafka",
    "cluster",
    "metastore",
    "sources",
    "contracts",
    "tables",
    "simulate",
    "ingest",
    "sync",
    "status",
    "dead_letter",
    "dbt",
    "docs",
    "jobs",
    "demo",
    "down",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line, exit code 2
        self.print_usage(sys.stderr)
        sys.stderr.write(f"error: {message}\nhint: run '{self.prog} --help'\n")
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lakehouse",
        description="TICKIT CDC lakehouse: Debezium landing zone -> Hudi bronze -> dbt on a Spark Thrift server.",
        epilog="Flags override LAKEHOUSE_* environment variables, which override defaults. "
        "Exit codes: 0 ok, 1 failed, 2 bad usage.",
    )
    parser.add_argument("--version", action="version", version=f"lakehouse {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show stack traces and debug logs")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"lakehouse.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"lakehouse.cli.{name}":
                continue
            raise
        module.register(subparsers)
    return parser


def _settings_from_parameter_store() -> None:
    """``LAKEHOUSE_SSM_PREFIX``: settings from AWS Parameter Store where the environment has none."""
    from lakehouse.ssm import SsmError, apply_parameters

    try:
        applied = apply_parameters()
    except SsmError as exc:
        raise CliError(str(exc), "check the AWS credentials and region, or unset LAKEHOUSE_SSM_PREFIX") from None
    if applied:
        logging.getLogger("lakehouse").debug("settings from Parameter Store: %s", ", ".join(sorted(applied)))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # `lakehouse dbt ...` hands everything after "dbt" to dbt untouched (argparse's
    # REMAINDER would still swallow options such as --help).
    globals_end = 0
    while globals_end < len(argv) and argv[globals_end] in ("-v", "--verbose"):
        globals_end += 1
    if globals_end < len(argv) and argv[globals_end] == "dbt":
        args = parser.parse_args(argv[: globals_end + 1])
        args.dbt_args = argv[globals_end + 1 :]
    else:
        args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        for noisy in ("pyhive", "py4j", "botocore", "urllib3"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        _settings_from_parameter_store()
        code = args.func(args)
    except CliError as exc:
        if args.verbose:
            traceback.print_exc()
        sys.stderr.write(f"error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"hint: {exc.hint}\n")
        return exc.exit_code
    except (IngestionError, ServiceError) as exc:  # raised on purpose: the message names the problem
        if args.verbose:
            traceback.print_exc()
        sys.stderr.write(f"error: {exc}\n")
        hint = getattr(exc, "hint", None)
        if hint:
            sys.stderr.write(f"hint: {hint}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - last-resort one-line error
        if args.verbose:
            traceback.print_exc()
        sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
        sys.stderr.write("hint: rerun with --verbose for the stack trace\n")
        return EXIT_FAILED
    return EXIT_OK if code is None else int(code)


if __name__ == "__main__":
    sys.exit(main())
