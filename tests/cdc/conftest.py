"""Helpers for the CDC tests: the fixture directory and contracts for the fixtures' own tables."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from ingestion.cdc.contracts import Column, TableContract

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "debezium"
INGESTED_AT = dt.datetime(2026, 11, 22, 12, 0, 0)

# The fixtures come from Debezium's tutorial databases, not TICKIT: contracts for those tables.
PRODUCTS = (Column("id", "int"), Column("name", "string"), Column("description", "string"), Column("weight", "double"))
CUSTOMERS = (
    Column("id", "int"),
    Column("first_name", "string"),
    Column("last_name", "string"),
    Column("email", "string"),
)


def fixture_contract(connector: str, columns: tuple[Column, ...], name: str = "products") -> TableContract:
    return TableContract(
        name=name,
        system="fixture",
        connector=connector,
        database="inventory",
        schema=None,
        topics=("fixture.topic",),
        primary_key=("id",),
        columns=columns,
    )


def load_fixture(relative: str) -> dict:
    return json.loads((FIXTURES / relative).read_text())


def one_line(event: object) -> bytes:
    """A pretty-printed fixture event as the single landing line Kafka Connect would write."""
    return json.dumps(event, separators=(",", ":")).encode("utf-8")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
