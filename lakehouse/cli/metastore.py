"""``lakehouse metastore start|stop|status``: a shared Hive Metastore (on PostgreSQL) on 127.0.0.1."""

from __future__ import annotations

import argparse

from lakehouse.cli._service import ServiceCommands, register_service
from lakehouse.config import Settings, load_settings
from lakehouse.services import metastore


def _describe(st: metastore.MetastoreStatus) -> str:
    if not st.running:
        return f"metastore: not running ({st.uri})"
    return f"metastore: {st.uri} (pid {st.pid}; database {st.database or 'not running'})"


def _after_start(settings: Settings, st: metastore.MetastoreStatus) -> list[str]:
    if settings.metastore_uri == st.uri:
        return []
    return [f"use it from the ingestion, the Thrift server and dbt: export LAKEHOUSE_METASTORE_URI={st.uri}"]


def register(subparsers: argparse._SubParsersAction) -> None:
    register_service(subparsers, ServiceCommands(
        name="metastore",
        help="manage a shared Hive Metastore on PostgreSQL (127.0.0.1)",
        target=lambda _args: load_settings(),
        start=lambda settings, args: metastore.start(settings, timeout=args.timeout),
        stop=metastore.stop,
        status=metastore.status,
        describe=_describe,
        after_start=_after_start,
        helps={"start": "start PostgreSQL and the metastore (schema created on first start)",
               "stop": "stop the metastore and its PostgreSQL (by PID); their data stays",
               "status": "URI, PID and database (exit 1 when stopped)"},
    ))
