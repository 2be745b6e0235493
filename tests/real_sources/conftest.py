"""Fixtures of the real-sources tests that run one database of their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lakehouse.services import connect, databases
from tests.conftest import settings_for

LAYER_SCHEMAS = ("bronze", "staging", "silver", "gold", "seeds", "snapshots")


@pytest.fixture
def postgres_home(thrift_server, kafka_broker, tmp_path: Path) -> Iterator[tuple]:
    from tests.kafka.helpers import fresh_topics

    for schema in LAYER_SCHEMAS:
        thrift_server.sql(f"drop schema if exists {schema} cascade")
    fresh_topics(kafka_broker.bootstrap)
    settings = settings_for(tmp_path / "home", thrift_server.port)
    try:
        yield settings, databases.start_postgres(settings)
    finally:
        print(connect.stop(settings), databases.stop(settings, "postgres"))
        databases.discard(settings)
