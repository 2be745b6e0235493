"""Table contracts written from Debezium's own schemas (``lakehouse contracts generate``).

A change event that carries its schema (Kafka Connect's JsonConverter with
``schemas.enable=true``: ``{"schema": ..., "payload": ...}``) says each column's Connect type
and, for Debezium's logical types, its meaning (``io.debezium.time.MicroTimestamp``,
``org.apache.kafka.connect.data.Decimal`` with its precision and scale, ...). That is enough
to write the contract a human would: the Spark SQL type of every column, in the table's
order. The primary key comes from the Kafka message key's schema (Debezium keys each record
by it) or, for a landing file, which has no keys, from the caller.

What the schema cannot tell is said, not guessed: MySQL/MariaDB ``TINYINT(1)`` arrives as
``int16`` and becomes ``int`` unless the connector propagates the source type
(``datatype.propagate.source.type``; then ``TINYINT`` of length 1 becomes ``boolean``);
types the contracts do not support (structs, arrays, ``VariableScaleDecimal``, times of
day) are a ``ContractError`` naming the column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ingestion.cdc.contracts import Column, ContractError
from ingestion.cdc.values import FieldSchema

#: Connect's primitive types, as the JsonConverter names them in a schema, and the contract type of each.
PRIMITIVE_TYPES = {"int8": "int", "int16": "int", "int32": "int", "int64": "bigint", "float": "double",
                   "double": "double", "boolean": "boolean", "string": "string"}
#: Debezium's and Connect's logical type names and the contract type of each.
LOGICAL_TYPES = {
    "io.debezium.time.Date": "date",
    "org.apache.kafka.connect.data.Date": "date",
    "io.debezium.time.Timestamp": "timestamp",
    "io.debezium.time.MicroTimestamp": "timestamp",
    "io.debezium.time.NanoTimestamp": "timestamp",
    "io.debezium.time.ZonedTimestamp": "timestamp",
    "org.apache.kafka.connect.data.Timestamp": "timestamp",
}
#: Debezium's ``source.connector`` and the contracts' connector names.
CONNECTORS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "sqlserver": "sqlserver"}


@dataclass(frozen=True)
class GeneratedTable:
    name: str
    connector: str
    database: str
    schema: str | None
    topic: str
    primary_key: tuple[str, ...]
    columns: tuple[Column, ...]


def column_type(field: Mapping[str, Any]) -> str:
    """The contract type of one field of a Connect struct schema."""
    name, connect_type = field.get("name"), field.get("type")
    parameters = field.get("parameters") or {}
    if name == "org.apache.kafka.connect.data.Decimal":
        precision = parameters.get("connect.decimal.precision")
        if precision is None:
            raise ContractError(f"column {field.get('field')}: a decimal without connect.decimal.precision")
        return f"decimal({int(precision)},{int(parameters.get('scale', 0))})"
    if name in LOGICAL_TYPES:
        return LOGICAL_TYPES[name]
    source_type = str(parameters.get("__debezium.source.column.type", "")).upper()
    if source_type == "TINYINT" and str(parameters.get("__debezium.source.column.length")) == "1":
        return "boolean"  # MySQL's BOOLEAN, propagated by datatype.propagate.source.type
    if name is None and connect_type in PRIMITIVE_TYPES:
        return PRIMITIVE_TYPES[connect_type]
    raise ContractError(f"column {field.get('field')}: Connect type {connect_type}"
                        f"{f' ({name})' if name else ''} has no contract type")


def schema_type(schema: FieldSchema) -> str | None:
    """The contract type of a field's event schema (``FieldSchema``); None when it has none."""
    spec = {"field": "?", "type": schema.type, "name": schema.name, "parameters": schema.parameters}
    try:
        return column_type(spec)
    except (ContractError, ValueError):
        return None


def _row_fields(value_schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The row's fields: ``after``'s in an envelope, the top level (minus ``__`` metadata) when flattened."""
    fields = value_schema.get("fields") or []
    by_name = {f.get("field"): f for f in fields}
    if "after" in by_name and "op" in by_name:
        return list(by_name["after"].get("fields") or [])
    return [f for f in fields if not str(f.get("field", "")).startswith("__")]


def table_from_event(event: Mapping[str, Any], *, key: Mapping[str, Any] | None = None, topic: str | None = None,
                     primary_key: Sequence[str] = ()) -> GeneratedTable:
    """The contract of the table one schema-carrying event belongs to.

    ``key``: the record's Kafka key as JsonConverter wrote it (its schema's fields are the
    primary key); otherwise ``primary_key`` must name the key columns.
    """
    if not isinstance(event, Mapping) or "schema" not in event or "payload" not in event:
        raise ContractError("the event carries no schema (JsonConverter schemas.enable=true writes "
                            "{\"schema\": ..., \"payload\": ...})")
    payload = event["payload"] or {}
    source = payload.get("source") or {}
    fields = _row_fields(event["schema"])
    if not fields:
        raise ContractError("the event's schema has no row fields")
    columns = tuple(Column(str(f["field"]), column_type(f)) for f in fields)
    if key is not None:
        key_fields = (key.get("schema") or {}).get("fields") or []
        pk = tuple(str(f["field"]) for f in key_fields)
    else:
        pk = tuple(primary_key)
    if not pk:
        raise ContractError("no primary key: give the record's Kafka key, or name the key columns")
    unknown = set(pk) - {c.name for c in columns}
    if unknown:
        raise ContractError(f"primary key columns {sorted(unknown)} are not columns of the table")
    connector = CONNECTORS.get(str(source.get("connector")))
    if connector is None:
        raise ContractError(f"unknown Debezium connector {source.get('connector')!r} in the event's source block")
    table, database, schema = str(source.get("table")), str(source.get("db")), source.get("schema")
    topic = topic or ".".join(str(p) for p in (source.get("name"), schema or database, table))
    return GeneratedTable(table, connector, database, schema, topic, pk, columns)


def render_contracts(system: str, tables: Sequence[GeneratedTable]) -> str:
    """A contracts file (``ingestion/cdc/contracts/<system>.yml``) for tables of one source system."""
    if not tables:
        raise ContractError("no tables to write")
    first = tables[0]
    if any((t.connector, t.database, t.schema) != (first.connector, first.database, first.schema) for t in tables):
        raise ContractError("the tables come from different connectors, databases or schemas: one system per file")
    doc: dict[str, Any] = {"system": system, "connector": first.connector, "database": first.database}
    if first.schema:
        doc["schema"] = first.schema
    doc["tables"] = {t.name: {"topics": [t.topic], "primary_key": list(t.primary_key),
                              "columns": [{"name": c.name, "type": c.type, "description": ""} for c in t.columns]}
                     for t in tables}
    header = (f"# Table contracts of the `{system}` source system, generated from Debezium's schemas by\n"
              "# `lakehouse contracts generate`: fill in the descriptions.\n")
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120)
