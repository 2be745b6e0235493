"""Helpers of the Kafka source tests: fresh topics, in-process ingest runs, dead-letter judges."""

from __future__ import annotations

import io
import time
from collections import Counter
from pathlib import Path

from confluent_kafka.admin import AdminClient

from ingestion.cdc.contracts import topic_map
from ingestion.stream import IngestOptions, IngestSummary, run_ingest
from simulator.badlines import UNKNOWN_TOPIC
from simulator.oracle import load_oracle
from tests.stream.judge import hudi_rows

#: Every topic the simulator writes, the contract-less one of its bad lines included.
ALL_TOPICS = (*sorted(topic_map()), UNKNOWN_TOPIC)


def fresh_topics(bootstrap: str, timeout: float = 30.0) -> None:
    """Delete the simulator's topics (earlier tests of the run used them) and wait until they are gone."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    existing = [t for t in admin.list_topics(timeout=10).topics if t in ALL_TOPICS]
    if existing:
        for future in admin.delete_topics(existing).values():
            future.result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(t in ALL_TOPICS for t in admin.list_topics(timeout=10).topics):
            return
        time.sleep(0.2)
    raise AssertionError("topics were not deleted in time")


def kafka_options(base: Path, bootstrap: str, **overrides) -> IngestOptions:
    values = dict(landing=str(base / "landing"), lake=str(base / "lake"), checkpoints_root=base / "checkpoints",
                  once=True, sync=False, kafka_bootstrap=bootstrap, topics=ALL_TOPICS)
    values.update(overrides)
    return IngestOptions(**values)


def ingest_kafka(spark, base: Path, bootstrap: str, **overrides) -> tuple[IngestSummary, str]:
    log = io.StringIO()
    summary = run_ingest(kafka_options(base, bootstrap, **overrides), spark=spark, log_stream=log)
    return summary, log.getvalue()


def dead_letters_oracle(landing: Path) -> Counter:
    """The oracle's dead letters without the landing file (Kafka records have none)."""
    return Counter((d["raw_line"], d["raw_is_base64"], d["reason"], d["topic"], d["partition"], d["offset"])
                   for d in load_oracle(str(landing)).dead_letters())


def dead_letters_bronze(lake: Path) -> Counter:
    path = lake / "bronze" / "dead_letter"
    if not (path / ".hoodie").exists():
        return Counter()
    return Counter((r["raw_line"], r["raw_is_base64"], r["reason"], r["topic"], r["kafka_partition"],
                    r["kafka_offset"]) for r in hudi_rows(path))
