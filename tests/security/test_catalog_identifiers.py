"""Identifiers used in catalog sync are validated: a hostile table, topic or path cannot inject SQL.

Three layers of proof: the quoting helpers refuse every hostile name (example list plus a
property-based run over arbitrary text); ``CatalogSync`` sends no statement at all for a
hostile table directory (a recording fake catalog); and against a real Thrift server a
hostile table directory next to a canary table leaves the canary and the metastore intact.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.catalog.identifiers import IdentifierError, quote_identifier, quote_location
from ingestion.catalog.sync import CatalogSync, sync_lake
from ingestion.cdc.landing import LandingPathError, parse_landing_path
from ingestion.cdc.parser import UNKNOWN_TOPIC, DeadLetter, parse_line

HOSTILE_NAMES = [
    "sale`; DROP DATABASE bronze CASCADE; --",
    "sale; DROP TABLE x",
    "sale` AS SELECT 1 --",
    "sale'",
    'sale"',
    "sale\nDROP DATABASE bronze",
    "sale\n",  # `$` would match before a trailing newline
    "sale/*comment*/",
    "sale--",
    "Sale",  # upper case would silently alias another table
    "1sale",
    "",
    "sale\0",
    "bronze.sale",
    "sale name",
    "s" * 200,
    "sälé",
]

#: The only shape a quoted identifier may ever have (an independent restatement of the rule).
_SAFE_QUOTED = re.compile(r"^`[a-z_][a-z0-9_]*`\Z")


class RecordingCatalog:
    """A stand-in for ``ThriftCatalog`` that records statements and answers empty results."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def execute(self, statement: str) -> list[tuple]:
        self.statements.append(statement)
        return []


def _plant_table_dir(lake: Path, name: str) -> Path:
    table = lake / "bronze" / name
    (table / ".hoodie").mkdir(parents=True)
    (table / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=x\nhoodie.table.version=6\n")
    return table


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_quote_identifier_refuses_hostile_names(name: str) -> None:
    with pytest.raises(IdentifierError, match="not a valid identifier"):
        quote_identifier(name)


@pytest.mark.parametrize("name", ["sale", "dead_letter", "_tmp1", "user"])
def test_quote_identifier_accepts_plain_names(name: str) -> None:
    assert quote_identifier(name) == f"`{name}`"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_refused_or_quoted_safely(name: str) -> None:
    try:
        quoted = quote_identifier(name)
    except IdentifierError:
        return
    assert _SAFE_QUOTED.match(quoted), quoted
    assert quoted[1:-1] == name


@pytest.mark.parametrize(
    "path",
    ["/lake/bronze/sale`; DROP DATABASE bronze CASCADE; --", "/lake/it's", "s3a://b/x' --", "/lake/a\nb",
     "/lake/a\rb", "/lake/a\0b", "/lake/a\\b", ""],
)
def test_quote_location_refuses_quotes_and_control_characters(path: str) -> None:
    with pytest.raises(IdentifierError):
        quote_location(path)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_location_is_refused_or_a_closed_literal(path: str) -> None:
    try:
        quoted = quote_location(path)
    except IdentifierError:
        return
    # one literal: opens and closes with the only quote, no escape, no line break
    assert quoted == f"'{path}'" and quoted.count("'") == 2
    assert not any(ch in path for ch in "`\\\n\r\0")


@pytest.mark.parametrize("name", HOSTILE_NAMES[:6])
def test_sync_sends_no_statement_for_a_hostile_table_directory(tmp_path: Path, name: str) -> None:
    lake = tmp_path / "lake"
    if "/" in name or "\0" in name:
        pytest.skip("not a possible directory name")
    _plant_table_dir(lake, name)
    catalog = RecordingCatalog()
    results = CatalogSync(lake, catalog).sync_tables([name])
    assert [r.status for r in results] == ["failed"]
    assert "not a valid identifier" in results[0].message
    assert catalog.statements == []


def test_sync_refuses_a_hostile_database_name(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _plant_table_dir(lake, "sale")
    catalog = RecordingCatalog()
    results = CatalogSync(lake, catalog, database="bronze; DROP DATABASE default").sync_tables(["sale"])
    assert [r.status for r in results] == ["failed"]
    assert not any("DROP" in s for s in catalog.statements), catalog.statements


@pytest.mark.parametrize(
    "path",
    [
        "landing/topics/x`;drop/x`;drop+0+0000000000.json",
        "landing/topics/x;DROP TABLE y/x;DROP TABLE y+0+0000000000.json",
        "landing/topics/a'b/a'b+0+0000000000.json",
    ],
)
def test_hostile_topic_in_a_landing_path_is_refused(path: str) -> None:
    with pytest.raises(LandingPathError, match="file name must be"):
        parse_landing_path(path)


def test_hostile_topic_of_a_line_is_dead_lettered_without_a_table() -> None:
    result = parse_line(
        b'{"op":"c"}',
        topic="tickit`; DROP DATABASE bronze CASCADE; --",
        partition=0,
        offset=0,
        landing_file="f.json",
        ingested_at=dt.datetime(2026, 1, 1),
    )
    assert isinstance(result, DeadLetter)
    assert result.reason == UNKNOWN_TOPIC
    assert result.table is None


def test_hostile_table_directory_cannot_touch_the_metastore(thrift_server, tmp_path: Path) -> None:
    """Against the real server: a canary survives a sync of a lake holding hostile table directories."""
    thrift_server.sql("CREATE DATABASE IF NOT EXISTS bronze")
    thrift_server.sql("CREATE DATABASE IF NOT EXISTS security_canary")
    thrift_server.sql("CREATE TABLE IF NOT EXISTS security_canary.keep (id INT) USING parquet")
    thrift_server.sql("INSERT OVERWRITE security_canary.keep VALUES (1), (2)")
    lake = tmp_path / "lake"
    hostile = [
        "x` AS SELECT 1; DROP DATABASE security_canary CASCADE; --",
        "keep; DROP TABLE security_canary.keep",
    ]
    for name in hostile:
        _plant_table_dir(lake, name)
    bronze_before = sorted(thrift_server.sql("SHOW TABLES IN bronze"))
    try:
        results = sync_lake(lake, thrift_server.host, thrift_server.port)
        assert sorted(r.table for r in results) == sorted(hostile)
        assert {r.status for r in results} == {"failed"}
        assert thrift_server.sql("SELECT count(*) FROM security_canary.keep") == [(2,)]
        assert sorted(thrift_server.sql("SHOW TABLES IN bronze")) == bronze_before
    finally:
        thrift_server.sql("DROP DATABASE IF EXISTS security_canary CASCADE")
