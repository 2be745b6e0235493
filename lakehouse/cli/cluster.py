"""``lakehouse cluster start|stop|status``: a standalone Spark master and workers on 127.0.0.1."""

from __future__ import annotations

import argparse

from lakehouse.cli._common import CliError
from lakehouse.config import load_settings
from lakehouse.services import spark_cluster


def _describe(st: spark_cluster.ClusterStatus) -> str:
    if not st.running:
        return "spark cluster: not running"
    return (f"spark cluster: {st.master_url} ({st.alive_workers} workers, {st.cores} cores; UI {st.ui_url})\n"
            f"active applications: {', '.join(st.active_apps) or '-'}")


def _start(args: argparse.Namespace) -> int:
    try:
        st = spark_cluster.start(load_settings(), workers=args.workers, cores=args.cores, memory=args.memory,
                                 timeout=args.timeout)
    except spark_cluster.ClusterError as exc:
        raise CliError(str(exc), exc.hint) from exc
    print(_describe(st))
    print(f"run the project's Spark applications on it: export LAKEHOUSE_SPARK_MASTER={st.master_url}")
    return 0


def _stop(_args: argparse.Namespace) -> int:
    print(spark_cluster.stop(load_settings()))
    return 0


def _status(_args: argparse.Namespace) -> int:
    st = spark_cluster.status(load_settings())
    print(_describe(st))
    return 0 if st.running else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cluster", help="manage a standalone Spark cluster (master + workers, 127.0.0.1)")
    sub = parser.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    start = sub.add_parser("start", help="start the master and the workers, wait until the workers registered")
    start.add_argument("--workers", type=int, default=2, help="workers (default 2)")
    start.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    start.add_argument("--memory", default="2g", help="memory per worker (default 2g)")
    start.add_argument("--timeout", type=float, default=120.0, help="seconds to wait (default 120)")
    start.set_defaults(func=_start)
    sub.add_parser("stop", help="stop the master and workers this LAKEHOUSE_HOME started (by PID)").set_defaults(
        func=_stop)
    sub.add_parser("status", help="master URL, alive workers, applications (exit 1 when stopped)").set_defaults(
        func=_status)
