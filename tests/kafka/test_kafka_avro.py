"""Kafka source, the simulator's Avro landing as Confluent wire-format values (slow: a second full run).

The registry is ``tests.kafka.registry.SmallRegistry``, a small server written for these
tests that speaks the Confluent REST subset the client needs (``GET /schemas/ids/{id}``,
``POST /subjects/{s}/versions``): Apicurio Registry's runnable jar is not on Maven Central
(``io.apicurio:apicurio-registry-app:3.3.3:runner`` is a 404) and Confluent's registry is
on no reachable package registry. The simulator's Avro landing with mixed shapes gives
several writer schemas per topic, so one topic carries values of two or more schema ids.
Bad input is planted: an unknown schema id, a body that does not decode, a malformed
JSON value, and the registry going down (judged: dead letters with their reason code,
the stream goes on and commits).
"""

from __future__ import annotations

import base64
import io
import json
from collections import Counter
from pathlib import Path

import fastavro
import pytest
from confluent_kafka import Producer

from simulator.kafka_producer import produce_landing
from tests.kafka.helpers import dead_letters_bronze, fresh_topics, ingest_kafka
from tests.stream.conftest import simulate
from tests.stream.judge import compare_events, hudi_rows

TOPIC = "tickit.ecomm.sale"


def _produce(bootstrap: str, values: list[bytes | None], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for value in values:
        producer.produce(TOPIC, value=value, partition=partition)
    assert producer.flush(30) == 0


def _a_valid_wire_value(landing: Path, registry) -> bytes:
    """The first sale record of the landing, as the producer sent it (its schema id + body)."""
    path = sorted((landing / "topics" / TOPIC).rglob("*.avro"))[0]
    reader = fastavro.reader(io.BytesIO(path.read_bytes()))
    schema, record = reader.writer_schema, next(iter(reader))
    schema_id = registry.register(json.dumps(schema))
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


@pytest.fixture(scope="module")
def avro_run(tmp_path_factory, spark, kafka_broker):
    from tests.kafka.registry import SmallRegistry

    registry = SmallRegistry()
    base: Path = tmp_path_factory.mktemp("kafka-avro")
    bootstrap = kafka_broker.bootstrap
    fresh_topics(bootstrap)
    simulate(base / "landing", fmt="mixed", file_format="avro", changes=600, inject_bad=0)
    produced = produce_landing(str(base / "landing"), bootstrap, registry_url=registry.url)
    valid = _a_valid_wire_value(base / "landing", registry)
    planted = [
        b"\x00" + (4242).to_bytes(4, "big") + valid[5:],  # a schema id the registry never had
        valid[:5] + b"\xff\xff\xff",  # a known id, a body that does not decode with it
        b'{"payload": {"op": "c", ',  # malformed JSON among the Avro values
    ]
    _produce(bootstrap, planted)
    try:
        summary, _ = ingest_kafka(spark, base, bootstrap, schema_registry_url=registry.url)
        lookups = [r for r in registry.requests if r.startswith("GET")]
        registry.stop()  # the registry goes down; two more Avro values arrive
        _produce(bootstrap, [valid, valid])
        # the registry stays down: no wait for it to come back (schema_registry_wait_seconds)
        after, _ = ingest_kafka(spark, base, bootstrap, schema_registry_url=registry.url,
                                schema_registry_wait_seconds=0)
    finally:
        registry.stop()
    # what a registry brought back after the outage serves (the replay test)
    (base / "registry-schemas.json").write_text(json.dumps(registry.schemas))
    return base, produced, planted, valid, summary, after, lookups


@pytest.mark.slow
def test_one_topic_carries_several_writer_schema_ids(avro_run) -> None:
    _, produced, *_ = avro_run
    assert any(len(ids) >= 2 for ids in produced.schema_ids.values()), produced.schema_ids


@pytest.mark.slow
def test_bronze_equals_the_oracle(avro_run) -> None:
    base, *_ = avro_run
    report = compare_events(base / "lake", base / "landing")
    assert all(expected > 0 for expected, _, _ in report.values()), report
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report


@pytest.mark.slow
def test_schemas_are_fetched_once_per_id_and_task(avro_run) -> None:
    *_, summary, _, lookups = avro_run
    ids = Counter(lookups)
    assert ids and len(lookups) <= len(ids) * 2 * len(summary.reports) * 4  # per parse task, never per record


@pytest.mark.slow
def test_planted_bad_values_are_dead_lettered_and_the_stream_goes_on(avro_run) -> None:
    base, _, planted, valid, summary, after, _ = avro_run
    dead = dead_letters_bronze(base / "lake")
    by_raw = {raw: reason for (raw, is_b64, reason, topic, _, _) in dead.elements() if topic == TOPIC}
    encoded = [base64.b64encode(v).decode() for v in planted[:2]]
    assert by_raw[encoded[0]] == "unknown_schema_id"
    assert by_raw[encoded[1]] == "bad_encoding"
    assert by_raw[planted[2].decode()] == "malformed_json"
    # the registry went down: both later values are dead letters (same value: one dead-letter row), committed
    assert by_raw[base64.b64encode(valid).decode()] == "registry_unavailable"
    assert sum(r.bad_events for r in after.reports) == 2 and any(r.commits for r in after.reports)
    rows = [r for r in hudi_rows(base / "lake" / "bronze" / "dead_letter") if r["reason"] == "registry_unavailable"]
    assert "did not answer" in rows[0]["message"]


@pytest.mark.slow
@pytest.mark.reliability
def test_registry_outage_dead_letters_replay_once_the_registry_answers(avro_run) -> None:
    """Runs last (it changes the lake): the values dead-lettered while the registry was down decode
    through ``dead-letter replay --schema-registry-url`` once a registry with their schemas answers;
    without a registry the replay leaves them, naming the option. They are re-deliveries of a landed
    sale, so bronze still equals the oracle (stored once) and the dead letters are gone."""
    from ingestion.stream.dead_letters import list_dead_letters, replay
    from tests.kafka.registry import SmallRegistry

    base, *_ = avro_run
    lake = str(base / "lake")
    rows = list_dead_letters(lake, reason="registry_unavailable")
    assert len(rows) == 1, rows
    without = replay(lake, rows, dry_run=True)
    assert len(without.still_bad) == 1 and "no schema registry configured" in without.still_bad[0]["message"]
    back = SmallRegistry()
    try:
        schemas = json.loads((base / "registry-schemas.json").read_text())
        back.schemas.update({int(schema_id): text for schema_id, text in schemas.items()})
        result = replay(lake, rows, schema_registry_url=back.url)
    finally:
        back.stop()
    assert result.replayed == {"sale": 1} and result.still_bad == [], result
    assert list_dead_letters(lake, reason="registry_unavailable") == []
    report = compare_events(base / "lake", base / "landing")
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
