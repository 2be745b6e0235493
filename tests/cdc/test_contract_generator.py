"""`contracts generate` from events that carry their schema (the Debezium fixtures, copied verbatim).

The expected columns are what each fixture's source says its table holds (Debezium's
documentation for PostgreSQL and SQL Server: ``customers(id, first_name, last_name,
email)``; the Flink capture of MySQL's ``inventory.products(id, name, description,
weight)``), read off the fixture's provenance, not off the generator.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ingestion.cdc.contract_generator import column_type, render_contracts, table_from_event
from ingestion.cdc.contracts import ContractError, load_contracts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "debezium"


def _event(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize(("fixture", "connector", "database", "schema", "topic", "columns"), [
    ("postgres/pg_docs_create_with_schema.json", "postgres", "postgres", "public", "PostgreSQL_server.public.customers",
     [("id", "int"), ("first_name", "string"), ("last_name", "string"), ("email", "string")]),
    ("mysql/mysql_real_snapshot_with_schema.json", "mysql", "inventory", None, "dbserver1.inventory.products",
     [("id", "int"), ("name", "string"), ("description", "string"), ("weight", "double")]),
    ("sqlserver/sqlserver_docs_create_with_schema.json", "sqlserver", "testDB", "dbo", "server1.dbo.customers",
     [("id", "int"), ("first_name", "string"), ("last_name", "string"), ("email", "string")]),
])
def test_a_schema_carrying_event_gives_the_tables_columns(fixture, connector, database, schema, topic,
                                                         columns) -> None:
    table = table_from_event(_event(fixture), primary_key=["id"])
    assert [(c.name, c.type) for c in table.columns] == columns
    assert (table.connector, table.database, table.schema, table.topic, table.primary_key) == (
        connector, database, schema, topic, ("id",))


def test_the_rendered_file_loads_as_a_contract(tmp_path) -> None:
    table = table_from_event(_event("mysql/mysql_real_snapshot_with_schema.json"), primary_key=["id"])
    (tmp_path / "inventory.yml").write_text(render_contracts("inventory", [table]))
    loaded = load_contracts(tmp_path)["products"]
    assert [(c.name, c.type) for c in loaded.columns] == [(c.name, c.type) for c in table.columns]
    assert loaded.primary_key == ("id",) and loaded.topics == ("dbserver1.inventory.products",)
    assert yaml.safe_load((tmp_path / "inventory.yml").read_text())["connector"] == "mysql"


@pytest.mark.parametrize(("field", "expected"), [
    ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
      "parameters": {"scale": "2", "connect.decimal.precision": "8"}, "field": "price"}, "decimal(8,2)"),
    ({"type": "int32", "name": "io.debezium.time.Date", "field": "d"}, "date"),
    ({"type": "int64", "name": "io.debezium.time.MicroTimestamp", "field": "t"}, "timestamp"),
    ({"type": "string", "name": "io.debezium.time.ZonedTimestamp", "field": "z"}, "timestamp"),
    ({"type": "int64", "field": "n"}, "bigint"),
    ({"type": "int16", "field": "flag"}, "int"),
    ({"type": "int16", "field": "flag", "parameters": {"__debezium.source.column.type": "TINYINT",
                                                      "__debezium.source.column.length": "1"}}, "boolean"),
])
def test_connect_types_map_to_contract_types(field, expected) -> None:
    assert column_type(field) == expected


def test_what_the_schema_cannot_say_is_an_error_naming_it() -> None:
    with pytest.raises(ContractError, match="column tags: Connect type array"):
        column_type({"type": "array", "field": "tags"})
    with pytest.raises(ContractError, match="VariableScaleDecimal"):
        column_type({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal", "field": "amount"})
    event = _event("mysql/mysql_real_snapshot_with_schema.json")
    with pytest.raises(ContractError, match="no primary key"):
        table_from_event(event)
    with pytest.raises(ContractError, match="carries no schema"):
        table_from_event(event["payload"], primary_key=["id"])
    with pytest.raises(ContractError, match=r"\['sku'\] are not columns"):
        table_from_event(event, primary_key=["sku"])
