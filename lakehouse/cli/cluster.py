"""``lakehouse cluster start|stop|status``: a standalone Spark master and workers on 127.0.0.1."""

from __future__ import annotations

import argparse

from lakehouse.cli._service import ServiceCommands, register_service
from lakehouse.config import load_settings
from lakehouse.services import spark_cluster


def _describe(st: spark_cluster.ClusterStatus) -> str:
    if not st.running:
        return "spark cluster: not running"
    return (f"spark cluster: {st.master_url} ({st.alive_workers} workers, {st.cores} cores; UI {st.ui_url})\n"
            f"active applications: {', '.join(st.active_apps) or '-'}")


def _start_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=2, help="workers (default 2)")
    parser.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    parser.add_argument("--memory", default="2g", help="memory per worker (default 2g)")


def register(subparsers: argparse._SubParsersAction) -> None:
    register_service(subparsers, ServiceCommands(
        name="cluster",
        help="manage a standalone Spark cluster (master + workers, 127.0.0.1)",
        target=lambda _args: load_settings(),
        start=lambda settings, args: spark_cluster.start(settings, workers=args.workers, cores=args.cores,
                                                         memory=args.memory, timeout=args.timeout),
        stop=spark_cluster.stop,
        status=spark_cluster.status,
        describe=_describe,
        after_start=lambda _settings, st: [
            f"run the project's Spark applications on it: export LAKEHOUSE_SPARK_MASTER={st.master_url}"],
        start_options=_start_options,
        helps={"start": "start the master and the workers, wait until the workers registered",
               "stop": "stop the master and workers this LAKEHOUSE_HOME started (by PID)",
               "status": "master URL, alive workers, applications (exit 1 when stopped)"},
    ))
