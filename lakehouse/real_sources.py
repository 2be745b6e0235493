"""The real sources: PostgreSQL and MariaDB with Debezium's connectors in Kafka Connect, into Kafka.

``start`` brings up, on 127.0.0.1 and under ``$LAKEHOUSE_HOME``, what a production CDC
deployment runs in front of the lakehouse, minus the S3 sink: the ``ems`` system in
PostgreSQL and ``ecomm`` in MariaDB (their TICKIT tables created from the contracts and
filled with a first snapshot on first start), the ``crm`` system's users produced by the
simulator (SQL Server has no server here), and Kafka Connect running Debezium's PostgreSQL
and MariaDB connectors into the project's Kafka broker. The ingestion then reads the topics
with ``lakehouse ingest --kafka-bootstrap``; ``simulator.live.Workload`` changes the tables.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ingestion.cdc.contracts import TableContract, load_contracts
from ingestion.cdc.kafka_values import WIRE_HEADER, wire_schema_id
from ingestion.sources.schema_registry import SchemaRegistryClient
from lakehouse.config import Settings
from lakehouse.services import connect, databases
from lakehouse.services.databases import Database
from simulator import live
from simulator.live import Connection

#: The crm system's topic: produced from a simulator run, not by a connector.
CRM_USER_TOPIC = "tickit.crm.user"


@dataclass(frozen=True)
class RealSources:
    postgres: Database
    mariadb: Database
    users: int  # user ids 1..users exist in the simulated crm system

    def databases(self) -> dict[str, Database]:
        return {"ems": self.postgres, "ecomm": self.mariadb}


def real_contracts() -> dict[str, TableContract]:
    """The contracts whose system has a real database here (ems, ecomm)."""
    return {name: c for name, c in load_contracts().items() if c.system in live.DIALECTS}


def open_connection(db: Database) -> Connection:
    """A DB-API connection (autocommit off) to one source database."""
    if db.kind == "postgres":
        import psycopg

        return psycopg.connect(host=db.host, port=db.port, user=db.user, password=db.password, dbname=db.database)
    import pymysql

    return pymysql.connect(host=db.host, port=db.port, user=db.user, password=db.password, database=db.database,
                           autocommit=False)


@contextmanager
def connections(sources: RealSources) -> Iterator[dict[str, Connection]]:
    opened = {system: open_connection(db) for system, db in sources.databases().items()}
    try:
        yield opened
    finally:
        for conn in opened.values():
            conn.close()  # type: ignore[attr-defined]


def _marker(settings: Settings) -> Path:
    return databases.sources_dir(settings) / "loaded"


def produce_crm_users(settings: Settings, bootstrap: str, scale: float, seed: int) -> int:
    """Simulate the crm system's snapshot and produce its user topic; returns the number of users."""
    from simulator.kafka_producer import produce_landing
    from simulator.simulation import SimulationOptions, run_simulation

    scratch = databases.sources_dir(settings) / "crm-simulated"
    shutil.rmtree(scratch, ignore_errors=True)
    summary = run_simulation(SimulationOptions(landing=str(scratch), scale=scale, changes=0, seed=seed,
                                               partitions=1, restarts=0))
    crm_only = databases.sources_dir(settings) / "crm-landing"
    shutil.rmtree(crm_only, ignore_errors=True)
    shutil.copytree(scratch / "topics" / CRM_USER_TOPIC, crm_only / "topics" / CRM_USER_TOPIC)
    produce_landing(str(crm_only), bootstrap)
    return summary.events_by_table.get("user", 0)


def start(settings: Settings, bootstrap: str, *, seed: int = 7, users_scale: float = 0.002,
          listings: int = 400, sales: int = 400, apicurio_url: str | None = None) -> RealSources:
    """Start the databases (tables and snapshot on first start), the crm users and Kafka Connect
    (its records in Avro through the Apicurio Registry at ``apicurio_url``, else JSON)."""
    postgres = databases.start_postgres(settings)
    mariadb = databases.start_mariadb(settings)
    marker = _marker(settings)
    if not marker.exists():
        users = produce_crm_users(settings, bootstrap, users_scale, seed)
        sources = RealSources(postgres, mariadb, users)
        with connections(sources) as conns:
            live.create_tables(conns, real_contracts())
            live.Workload(conns, real_contracts(), random.Random(seed), users).load_snapshot(listings, sales)
        marker.write_text(f"{users}\n")
    sources = RealSources(postgres, mariadb, int(marker.read_text()))
    (databases.sources_dir(settings) / "bootstrap").write_text(bootstrap + "\n")
    connect.start(settings, bootstrap, [connect.postgres_connector(postgres),
                                        connect.mariadb_connector(mariadb, settings)],
                  apicurio_url=apicurio_url)
    wait_for_snapshots(settings, bootstrap,
                       schema_registry_url=connect.ccompat_url(apicurio_url) if apicurio_url else None)
    return sources


def record_source(value: bytes, schemas: SchemaRegistryClient | None) -> dict:
    """The ``source`` block of a Debezium record value: JSON with its schema, or Avro in Confluent's
    wire format (its writer schema from ``schemas``)."""
    import fastavro

    schema_id = wire_schema_id(value)
    if schema_id is None:
        return json.loads(value).get("payload", {}).get("source", {})
    if schemas is None:
        raise connect.ConnectError(f"an Avro record (schema id {schema_id}) and no schema registry to decode it")
    datum = fastavro.schemaless_reader(io.BytesIO(value[WIRE_HEADER:]), schemas.schema(schema_id).reader, None)
    return (datum or {}).get("source") or {} if isinstance(datum, dict) else {}


def wait_for_snapshots(settings: Settings, bootstrap: str, timeout: float = 300.0,
                       systems: tuple[str, ...] = tuple(live.DIALECTS), schema_registry_url: str | None = None) -> None:
    """Wait until each connector has sent the last record of its initial snapshot.

    Debezium marks it in the record itself (``source.snapshot = "last"``). Changing a table's
    definition (a TRUNCATE, an ALTER) while its snapshot runs fails the snapshot, so the
    workload starts after this. A connector task that failed meanwhile is an error.
    """
    from confluent_kafka import Consumer, TopicPartition

    schemas = SchemaRegistryClient(schema_registry_url) if schema_registry_url else None

    pending: dict[str, list[str]] = {}
    for contract in real_contracts().values():
        if contract.system in systems:
            pending.setdefault(contract.system, []).extend(contract.topics)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lakehouse-snapshot-probe",
                         "enable.auto.commit": False, "log_level": 0})
    positions: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while pending:
            if time.monotonic() > deadline:
                raise connect.ConnectError(f"the initial snapshots of {sorted(pending)} did not finish within "
                                           f"{timeout:.0f}s", f"see {connect.log_file(settings)}")
            connect.check_not_failed(settings)
            for system, topics in list(pending.items()):
                for topic in topics:
                    start = positions.get(topic, 0)
                    consumer.assign([TopicPartition(topic, 0, start)])
                    for message in consumer.consume(1000, timeout=1.0):
                        value, offset = message.value(), message.offset()
                        if message.error() or value is None or offset is None:
                            continue
                        positions[topic] = offset + 1
                        source = record_source(value, schemas)
                        if source.get("snapshot") == "last":
                            pending.pop(system, None)
                            break
                    if system not in pending:
                        break
            time.sleep(0.5)
    finally:
        consumer.close()


def wait_settled(settings: Settings, bootstrap: str | None = None, quiet: float = 3.0, timeout: float = 120.0) -> None:
    """Wait until the connectors' topics stop growing for ``quiet`` seconds (the last changes sent).
    ``bootstrap``: the broker (default: the one ``start`` used)."""
    from ingestion.sources.kafka import watermarks

    bootstrap = bootstrap or (databases.sources_dir(settings) / "bootstrap").read_text().strip()
    topics = sorted(t for c in real_contracts().values() for t in c.topics)
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        connect.check_not_failed(settings)
        marks = watermarks(bootstrap, topics, 10.0)
        if marks != last:
            last, since = marks, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.5)
    raise connect.ConnectError(f"the connectors' topics kept growing for {timeout:.0f}s",
                               f"see {connect.log_file(settings)}")


def running(settings: Settings) -> RealSources | None:
    """The real sources this home started, if both databases run and were loaded."""
    postgres, mariadb = databases.running(settings, "postgres"), databases.running(settings, "mariadb")
    marker = _marker(settings)
    if postgres is None or mariadb is None or not marker.exists():
        return None
    return RealSources(postgres, mariadb, int(marker.read_text()))


def stop(settings: Settings) -> list[str]:
    """Stop Kafka Connect, then the databases (their data stays under the home)."""
    return [connect.stop(settings), databases.stop(settings, "postgres"), databases.stop(settings, "mariadb")]
