"""``lakehouse metastore start|stop|status``: a shared Hive Metastore (on PostgreSQL) on 127.0.0.1."""

from __future__ import annotations

import argparse

from lakehouse.cli._common import CliError
from lakehouse.config import load_settings
from lakehouse.services import metastore
from lakehouse.services.registry import ServiceError


def _describe(st: metastore.MetastoreStatus) -> str:
    if not st.running:
        return f"metastore: not running ({st.uri})"
    return f"metastore: {st.uri} (pid {st.pid}; database {st.database or 'not running'})"


def _start(args: argparse.Namespace) -> int:
    settings = load_settings()
    try:
        st = metastore.start(settings, timeout=args.timeout)
    except ServiceError as exc:  # the metastore's, or its PostgreSQL's
        raise CliError(str(exc), exc.hint) from exc
    print(_describe(st))
    if settings.metastore_uri != st.uri:
        print(f"use it from the ingestion, the Thrift server and dbt: export LAKEHOUSE_METASTORE_URI={st.uri}")
    return 0


def _stop(_args: argparse.Namespace) -> int:
    for line in metastore.stop(load_settings()):
        print(line)
    return 0


def _status(_args: argparse.Namespace) -> int:
    st = metastore.status(load_settings())
    print(_describe(st))
    return 0 if st.running else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("metastore", help="manage a shared Hive Metastore on PostgreSQL (127.0.0.1)")
    sub = parser.add_subparsers(dest="metastore_command", metavar="ACTION", required=True)
    start = sub.add_parser("start", help="start PostgreSQL and the metastore (schema created on first start)")
    start.add_argument("--timeout", type=float, default=120.0, help="seconds to wait (default 120)")
    start.set_defaults(func=_start)
    sub.add_parser("stop", help="stop the metastore and its PostgreSQL (by PID); their data stays").set_defaults(
        func=_stop)
    sub.add_parser("status", help="URI, PID and database (exit 1 when stopped)").set_defaults(func=_status)
