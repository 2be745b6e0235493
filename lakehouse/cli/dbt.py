"""``lakehouse dbt <args>``: dbt with the project's profile, env and Thrift server settings."""

from __future__ import annotations

import argparse

from lakehouse.cli._common import CliError
from lakehouse.dbt_runner import run_dbt


def _dbt(args: argparse.Namespace) -> int:
    dbt_args = list(args.dbt_args)
    if dbt_args and dbt_args[0] == "--":
        dbt_args = dbt_args[1:]
    if not dbt_args:
        raise CliError(
            "no dbt command given", hint="e.g. 'lakehouse dbt build' or 'lakehouse dbt debug'", exit_code=2
        )
    try:
        return run_dbt(dbt_args).returncode
    except FileNotFoundError as exc:
        raise CliError(str(exc), hint="run 'make setup'") from exc


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dbt",
        help="run dbt with the project's profile (e.g. lakehouse dbt build)",
        description="Pass every argument through to dbt, with DBT_PROFILES_DIR=profiles and the "
        "LAKEHOUSE_* environment set (target 'local' = the managed Thrift server).",
        add_help=False,
    )
    parser.add_argument("dbt_args", nargs=argparse.REMAINDER, help="arguments for dbt")
    parser.set_defaults(func=_dbt)
