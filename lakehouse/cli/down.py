"""``lakehouse down``: stop every service this LAKEHOUSE_HOME started; say what stays."""

from __future__ import annotations

import argparse

from lakehouse.config import load_settings
from lakehouse.services import databases, kafka, metastore, registry, spark_cluster, thrift


def _down(args: argparse.Namespace) -> int:
    settings = load_settings()
    # a server before the database it keeps its state in
    for record in sorted(registry.running(settings), key=lambda r: r.name == metastore.DATABASE_SERVICE):
        if record.name == kafka.SERVICE:  # the broker checks that the PID is still its own
            print(kafka.stop(kafka.broker_config(settings)))
        else:
            print(registry.stop(settings, record.name))
    print(thrift.stop(settings))
    print(spark_cluster.stop(settings))  # after the server: it may run on the cluster
    if args.discard:
        databases.discard(settings)
        metastore.discard(settings)
        print(f"removed the PostgreSQL data this home kept outside it (under {databases.EXTERNAL_ROOT}), if any")
    print(
        f"state kept under {settings.home}: landing zone, lake (bronze tables), metastore, warehouse,"
        " checkpoints, logs and job history. 'make clean' removes it."
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("down", help="stop every service this project started")
    parser.add_argument("--discard", action="store_true",
                        help="also remove the PostgreSQL data (sources, metastore) this home keeps outside it: "
                        f"as root under a home PostgreSQL's user cannot enter, under {databases.EXTERNAL_ROOT}")
    parser.set_defaults(func=_down)
