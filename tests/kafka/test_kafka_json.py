"""Kafka source, JSON values: simulator -> Kafka -> lakehouse ingest --kafka-bootstrap -> bronze == oracle.

Judges: the simulator's oracle (the events it produced) and hudi-rs (what bronze holds,
read without our code); the lag comes from the broker's end offsets and the checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.sources.kafka import topic_lag
from ingestion.stream.checkpoint import checkpoint_dir
from simulator.kafka_producer import produce_landing
from simulator.oracle import load_oracle
from tests.kafka.helpers import ALL_TOPICS, dead_letters_bronze, dead_letters_oracle, fresh_topics, ingest_kafka
from tests.stream.conftest import simulate
from tests.stream.judge import compare_events, hudi_rows


@pytest.fixture(scope="module")
def json_run(tmp_path_factory, spark, kafka_broker):
    base: Path = tmp_path_factory.mktemp("kafka-json")
    fresh_topics(kafka_broker.bootstrap)
    simulate(base / "landing", fmt="mixed", changes=1500, inject_bad=10)
    produced = produce_landing(str(base / "landing"), kafka_broker.bootstrap)
    checkpoint = checkpoint_dir(base / "checkpoints", f"kafka://{kafka_broker.bootstrap}", str(base / "lake"))
    before = topic_lag(kafka_broker.bootstrap, list(ALL_TOPICS), checkpoint / "query")
    summary, log = ingest_kafka(spark, base, kafka_broker.bootstrap, max_offsets_per_trigger=4000)
    return base, produced, before, summary, checkpoint


def test_bronze_holds_every_event_of_the_topics_exactly_once(json_run) -> None:
    base, produced, _, summary, _ = json_run
    report = compare_events(base / "lake", base / "landing")
    assert all(expected > 0 for expected, _, _ in report.values()), report
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert len(summary.reports) >= 2  # --max-offsets-per-trigger split the backlog
    assert sum(r.tombstones for r in summary.reports) == load_oracle(str(base / "landing")).tombstones > 0
    assert produced.tombstones == load_oracle(str(base / "landing")).tombstones


def test_kafka_partition_and_offset_are_the_records_own(json_run) -> None:
    base, *_ = json_run
    rows = hudi_rows(base / "lake" / "bronze" / "sale")
    assert rows and all(r["_cdc_landing_file"] == f"kafka:{r['_cdc_topic']}/{r['_cdc_kafka_partition']}"
                        for r in rows)
    # the simulator produced the JSON landing in order into fresh topics: Kafka's offsets are the landing's
    offsets = {(r["_cdc_kafka_partition"], r["_cdc_kafka_offset"]) for r in rows}
    assert len(offsets) == len(rows)


def test_bad_values_are_dead_lettered_with_their_reason(json_run) -> None:
    base, *_ = json_run
    expected = dead_letters_oracle(base / "landing")
    assert len(expected) >= 8 and {"malformed_json", "bad_encoding", "unknown_topic"} <= {k[2] for k in expected}
    assert dead_letters_bronze(base / "lake") == expected


def test_lag_is_the_end_offsets_minus_the_checkpoint(json_run, kafka_broker) -> None:
    base, produced, before, _, checkpoint = json_run
    assert sum(t.lag or 0 for t in before) == produced.records  # nothing consumed yet
    after = topic_lag(kafka_broker.bootstrap, list(ALL_TOPICS), checkpoint / "query")
    assert [t.lag for t in after] == [0] * len(ALL_TOPICS)
    assert sum(t.end_offsets for t in after) == produced.records
