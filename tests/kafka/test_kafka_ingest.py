"""Kafka source end to end (default suite): JSON and Avro values -> lakehouse ingest --kafka-bootstrap -> bronze.

One run, on the session's broker and SparkSession: the simulator's JSON events (with
bad lines: malformed JSON, bad encodings, unknown topic, ...) produced to their topics,
plus Avro category events in the Confluent wire format under two writer schema ids of
one topic (the second adds a column), plus planted bad Avro values (a schema id the
registry never had, a body that does not decode). Then the registry goes down and two
more Avro values arrive.

Judges, none of them the ingestion's code path: the simulator's oracle for its events;
for the Avro events, the rows their JSON twins give (``parse_line`` of the same record as
a flattened JSON line, plain Python); hudi-rs reads of bronze; the broker's end offsets
for the lag. The registry is ``tests.kafka.registry.SmallRegistry``, a small server of
these tests speaking the Confluent REST subset (``GET /schemas/ids/{id}``, ``POST
/subjects/{s}/versions``): no real registry runs from the reachable package registries
(Apicurio's ``apicurio-registry-app:3.3.3:runner`` is not on Maven Central).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import uuid
from collections import Counter
from pathlib import Path

import fastavro
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from ingestion.cdc.contracts import topic_map
from ingestion.cdc.parser import BronzeEvent, parse_line
from ingestion.sources.kafka import topic_lag
from ingestion.stream.checkpoint import checkpoint_dir, query_dir
from simulator.kafka_producer import produce_landing
from simulator.oracle import event_columns, load_oracle
from tests.kafka.helpers import ALL_TOPICS, dead_letters_bronze, dead_letters_oracle, fresh_topics, ingest_kafka
from tests.kafka.registry import SmallRegistry
from tests.stream.conftest import simulate
from tests.stream.judge import hudi_rows, project

AVRO_TOPIC = "tickit.ems.category"
FIELDS = [
    {"name": "catid", "type": "int"},
    {"name": "catgroup", "type": ["null", "string"], "default": None},
    {"name": "catname", "type": ["null", "string"], "default": None},
    {"name": "catdesc", "type": ["null", "string"], "default": None},
    {"name": "__op", "type": ["null", "string"], "default": None},
    {"name": "__lsn", "type": ["null", "long"], "default": None},
    {"name": "__source_ts_ms", "type": ["null", "long"], "default": None},
    {"name": "__deleted", "type": ["null", "string"], "default": None},
]
SCHEMA_V1 = {"type": "record", "name": "Value", "namespace": AVRO_TOPIC, "fields": FIELDS}
SCHEMA_V2 = {**SCHEMA_V1, "fields": [*FIELDS, {"name": "catnote", "type": ["null", "string"], "default": None}]}
#: Avro category events: keys far from the simulator's, positions of their own
AVRO_EVENTS = [
    (SCHEMA_V1, {"catid": 9001 + i, "catgroup": "Shows", "catname": f"Avro {i}", "catdesc": None, "__op": "c",
                 "__lsn": 10_000_000 + i, "__source_ts_ms": 1767225600000 + i, "__deleted": "false"})
    for i in range(4)
] + [
    (SCHEMA_V2, {"catid": 9101 + i, "catgroup": "Concerts", "catname": f"Avro v2 {i}", "catdesc": "two",
                 "__op": "u", "__lsn": 10_000_100 + i, "__source_ts_ms": 1767225700000 + i, "__deleted": "false",
                 "catnote": f"note {i}"})
    for i in range(3)
]


def _wire(schema_id: int, schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def _produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for value in values:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0


def _twin_rows() -> list[dict]:
    """The bronze rows of the Avro events as their JSON twins give them (schemas off, flattened)."""
    rows = []
    for _, record in AVRO_EVENTS:
        result = parse_line(json.dumps(record).encode(), topic=AVRO_TOPIC, partition=0, offset=0, landing_file="",
                            ingested_at=dt.datetime(2026, 1, 1), contracts=topic_map())
        assert isinstance(result, BronzeEvent)
        rows.append(result.row)
    return rows


@pytest.fixture(scope="module")
def run(tmp_path_factory, spark, kafka_broker):
    base: Path = tmp_path_factory.mktemp("kafka-ingest")
    bootstrap = kafka_broker.bootstrap
    registry = SmallRegistry()
    try:
        fresh_topics(bootstrap)
        simulate(base / "landing", fmt="mixed", changes=800, inject_bad=10)
        produced = produce_landing(str(base / "landing"), bootstrap)
        ids = {json.dumps(s): registry.register(json.dumps(s)) for s in (SCHEMA_V1, SCHEMA_V2)}
        avro = [_wire(ids[json.dumps(schema)], schema, record) for schema, record in AVRO_EVENTS]
        bad = [_wire(4242, SCHEMA_V1, AVRO_EVENTS[0][1]),  # a schema id the registry never had
               avro[0][:5] + b"\xff\xff\xff"]  # a known id, a body that does not decode with it
        _produce(bootstrap, AVRO_TOPIC, [*avro, *bad])
        checkpoint = checkpoint_dir(base / "checkpoints", f"kafka://{bootstrap}", str(base / "lake"))
        before = topic_lag(bootstrap, list(ALL_TOPICS), query_dir(checkpoint))
        summary, _ = ingest_kafka(spark, base, bootstrap, schema_registry_url=registry.url)
        lookups = [r for r in registry.requests if r.startswith("GET")]
        registry.stop()  # the registry goes down; two more Avro values arrive
        _produce(bootstrap, AVRO_TOPIC, [avro[1], avro[5]], partition=1)
        # the registry stays down: no wait for it to come back (schema_registry_wait_seconds)
        after, _ = ingest_kafka(spark, base, bootstrap, schema_registry_url=registry.url,
                                schema_registry_wait_seconds=0)
    finally:
        registry.stop()
    return dict(base=base, produced=produced, avro=avro, bad=bad, before=before, summary=summary, after=after,
                lookups=lookups, checkpoint=checkpoint, ids=ids)


def test_bronze_holds_every_event_exactly_once(run) -> None:
    base = run["base"]
    oracle = load_oracle(str(base / "landing"))
    for table in oracle.tables:
        columns = [name for name, _ in event_columns(table)]
        expected = project(oracle.events(table), columns)
        if table == "category":
            expected += project(_twin_rows(), columns)
        actual = project(hudi_rows(base / "lake" / "bronze" / table), columns)
        assert sum(expected.values()) > 0 and actual == expected, table
    assert sum(r.tombstones for r in run["summary"].reports) == oracle.tombstones == run["produced"].tombstones > 0


def test_avro_values_of_two_writer_schemas_in_one_topic(run) -> None:
    rows = {r["catid"]: r for r in hudi_rows(run["base"] / "lake" / "bronze" / "category") if r["catid"] > 9000}
    assert sorted(rows) == [9001, 9002, 9003, 9004, 9101, 9102, 9103]
    assert len(set(run["ids"].values())) == 2
    assert rows[9101]["catnote"] == "note 0" and rows[9001]["catnote"] is None  # the second schema's column
    # the registry was asked once per schema id and parse task, never once per record
    assert set(Counter(run["lookups"])) <= {f"GET /schemas/ids/{i}" for i in (*run["ids"].values(), 4242)}
    assert len(run["lookups"]) < len(AVRO_EVENTS) + 2


def _broker_records(bootstrap: str, topic: str) -> dict[tuple[int, int], bytes]:
    """Every record value of ``topic`` by (partition, offset), read back from the broker by a plain consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"judge-{uuid.uuid4()}",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        records: dict[tuple[int, int], bytes] = {}
        while len(records) < sum(ends.values()):
            message = consumer.poll(10)
            assert message is not None, f"the broker stopped before the end offsets {ends}"
            assert message.error() is None, message.error()
            records[(message.partition(), message.offset())] = message.value()
        return records
    finally:
        consumer.close()


def _sale_key(value: bytes) -> int:
    """The salesid a Debezium JSON value (envelope, schema wrapper or flattened) carries."""
    document = json.loads(value)
    document = document.get("payload", document) if "schema" in document else document
    return (document.get("after") or document.get("before") or document)["salesid"]


def test_kafka_partition_and_offset_are_the_records_own(run, kafka_broker) -> None:
    rows = hudi_rows(run["base"] / "lake" / "bronze" / "sale")
    assert rows and all(r["_cdc_landing_file"] == f"kafka:{r['_cdc_topic']}/{r['_cdc_kafka_partition']}"
                        for r in rows)
    # judged by the broker: the record at each row's partition and offset is that row's event
    records = _broker_records(kafka_broker.bootstrap, "tickit.ecomm.sale")
    assert {r["_cdc_topic"] for r in rows} == {"tickit.ecomm.sale"}
    assert [(r["_cdc_kafka_partition"], r["_cdc_kafka_offset"]) for r in rows if
            (r["_cdc_kafka_partition"], r["_cdc_kafka_offset"]) not in records] == []
    assert {(r["_cdc_kafka_partition"], r["_cdc_kafka_offset"]): r["salesid"] for r in rows} == {
        (r["_cdc_kafka_partition"], r["_cdc_kafka_offset"]): _sale_key(records[(r["_cdc_kafka_partition"],
                                                                                  r["_cdc_kafka_offset"])])
        for r in rows}
    assert len({(r["_cdc_kafka_partition"], r["_cdc_kafka_offset"]) for r in rows}) == len(rows)


def test_bad_values_are_dead_lettered_with_their_reason(run) -> None:
    base = run["base"]
    dead = dead_letters_bronze(base / "lake")
    expected = dead_letters_oracle(base / "landing")  # JSON landed in order into fresh topics: same offsets
    assert len(expected) >= 8 and {"malformed_json", "bad_encoding", "unknown_topic"} <= {k[2] for k in expected}
    assert expected <= dead, expected - dead
    by_raw = {raw: reason for (raw, _, reason, topic, _, _) in (dead - expected).elements() if topic == AVRO_TOPIC}
    assert by_raw == {
        base64.b64encode(run["bad"][0]).decode(): "unknown_schema_id",
        base64.b64encode(run["bad"][1]).decode(): "bad_encoding",
        base64.b64encode(run["avro"][1]).decode(): "registry_unavailable",
        base64.b64encode(run["avro"][5]).decode(): "registry_unavailable",
    }
    # the stream went on without its registry: the run committed its dead letters
    assert sum(r.bad_events for r in run["after"].reports) == 2
    assert any(r.commits for r in run["after"].reports)


def test_lag_is_the_end_offsets_minus_the_checkpoint(run, kafka_broker) -> None:
    before = {t.topic: t for t in run["before"]}
    produced = run["produced"].records + len(AVRO_EVENTS) + 2
    assert sum(t.lag or 0 for t in before.values()) == produced  # nothing consumed yet
    after = topic_lag(kafka_broker.bootstrap, list(ALL_TOPICS), query_dir(run["checkpoint"]))
    assert [t.lag for t in after] == [0] * len(ALL_TOPICS)
    assert sum(t.end_offsets for t in after) == produced + 2
