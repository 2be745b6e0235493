"""Declarative table contracts: the single source of truth for every layer.

One YAML file per source system lives in ``contracts/``; each names the connector
(which fixes the ordering rule), the topics of every table, its primary key and its
typed columns (Spark SQL type names). The simulator, the ingestion and the dbt sources
are all checked against these contracts.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from ingestion.cdc.schema_policy import DEFAULT_POLICY, POLICIES, widens
from ingestion.errors import IngestionError

CONTRACTS_DIR = Path(__file__).with_name("contracts")

#: Bronze metadata columns that follow the source columns in every bronze table,
#: with their Spark SQL types (docs/architecture.md, "Bronze contract").
BRONZE_METADATA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_cdc_op", "string"),
    ("_cdc_is_deleted", "boolean"),
    ("_cdc_source_ts", "timestamp"),
    ("_cdc_position", "string"),
    ("_cdc_tx_id", "string"),
    ("_cdc_source_db", "string"),
    ("_cdc_source_table", "string"),
    ("_cdc_topic", "string"),
    ("_cdc_kafka_partition", "int"),
    ("_cdc_kafka_offset", "bigint"),
    ("_cdc_landing_file", "string"),
    ("_cdc_ingested_at", "timestamp"),
    ("_cdc_source_date", "date"),
)
#: The bronze partition column (UTC date of the source timestamp).
BRONZE_PARTITION_COLUMN = "_cdc_source_date"
#: Ordering (precombine) field of every bronze table.
BRONZE_ORDERING_COLUMN = "_cdc_position"

CONNECTORS = ("mysql", "postgres", "sqlserver")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}\Z")
_TYPE = re.compile(r"^(int|bigint|string|double|boolean|date|timestamp|decimal\(\d+,\d+\))\Z")


class ContractError(IngestionError, ValueError):
    """A contract file is invalid (names the file and the problem)."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str = ""


@dataclass(frozen=True)
class TableContract:
    """One source table: where its events come from and what they hold."""

    name: str
    system: str
    connector: str
    database: str
    schema: str | None
    topics: tuple[str, ...]
    primary_key: tuple[str, ...]
    columns: tuple[Column, ...]
    #: the schema-change policy (``ingestion.cdc.schema_policy``)
    schema_changes: str = DEFAULT_POLICY
    #: columns the bronze table gained beyond the contract (policy ``evolve``), in table order
    evolved: tuple[Column, ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def evolved_type(self, name: str) -> str | None:
        """The bronze type of ``name`` when it is a column the table gained beyond the contract."""
        return next((c.type for c in self.evolved if c.name == name), None)

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    @property
    def bronze_columns(self) -> tuple[tuple[str, str], ...]:
        """(name, Spark SQL type) of the bronze table: source columns, the ``_cdc_*`` metadata, then
        the columns the table gained beyond the contract."""
        return (tuple((c.name, c.type) for c in self.columns) + BRONZE_METADATA_COLUMNS
                + tuple((c.name, c.type) for c in self.evolved))

    def with_bronze_schema(self, bronze: tuple[tuple[str, str], ...]) -> TableContract:
        """This contract as the bronze table holds it (``bronze``: its columns and types): contract
        columns the table widened take the wider type; columns beyond the contract and the
        metadata become ``evolved``. A bronze type that is not a widening is ignored (the contract's wins)."""
        types = dict(bronze)
        columns = tuple(dataclasses.replace(c, type=types[c.name]) if widens(c.type, types.get(c.name, "")) else c
                        for c in self.columns)
        known = {*self.column_names, *(name for name, _ in BRONZE_METADATA_COLUMNS)}
        evolved = tuple(Column(name, kind) for name, kind in bronze if name not in known)
        return dataclasses.replace(self, columns=columns, evolved=evolved)


def _check_identifier(value: str, where: str) -> str:
    if not isinstance(value, str) or not _IDENTIFIER.match(value):
        raise ContractError(f"{where}: {value!r} is not a valid identifier")
    return value


def _policy(value: object, where: str) -> str:
    if value not in POLICIES:
        raise ContractError(f"{where}: must be one of {', '.join(POLICIES)}, got {value!r}")
    return str(value)


def _parse_file(path: Path) -> list[TableContract]:
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ContractError(f"{path}: invalid YAML: {exc}") from exc
    where = path.name
    system = _check_identifier(doc.get("system"), f"{where} system")
    default_policy = _policy(doc.get("schema_changes", DEFAULT_POLICY), f"{where} schema_changes")
    connector = doc.get("connector")
    if connector not in CONNECTORS:
        raise ContractError(f"{where}: connector must be one of {CONNECTORS}, got {connector!r}")
    contracts = []
    for name, spec in (doc.get("tables") or {}).items():
        _check_identifier(name, f"{where} table")
        columns = []
        for col in spec.get("columns") or []:
            cname = _check_identifier(col.get("name"), f"{where} {name} column")
            unknown = set(col) - {"name", "type", "description"}
            if unknown:
                # Usually an unquoted comma inside a flow mapping cut a description short.
                raise ContractError(f"{where}: {name}.{cname} has unknown keys {sorted(map(str, unknown))}")
            ctype = str(col.get("type"))
            if not _TYPE.match(ctype):
                raise ContractError(f"{where}: {name}.{cname} has unsupported type {ctype!r}")
            columns.append(Column(cname, ctype, col.get("description", "")))
        pk = tuple(spec.get("primary_key") or ())
        names = {c.name for c in columns}
        if not pk or not set(pk) <= names:
            raise ContractError(f"{where}: {name} primary key {pk} must name contract columns")
        topics = tuple(spec.get("topics") or ())
        if not topics:
            raise ContractError(f"{where}: {name} lists no topics")
        contracts.append(
            TableContract(
                name=name,
                system=system,
                connector=connector,
                database=doc.get("database", system),
                schema=doc.get("schema"),
                topics=topics,
                primary_key=pk,
                columns=tuple(columns),
                schema_changes=_policy(spec.get("schema_changes", default_policy), f"{where} {name}.schema_changes"),
            )
        )
    return contracts


@functools.cache
def load_contracts(directory: Path = CONTRACTS_DIR) -> dict[str, TableContract]:
    """All table contracts by table name, from every ``*.yml`` in ``directory``."""
    tables: dict[str, TableContract] = {}
    for path in sorted(Path(directory).glob("*.yml")):
        for contract in _parse_file(path):
            if contract.name in tables:
                raise ContractError(f"{path.name}: table {contract.name!r} defined twice")
            tables[contract.name] = contract
    return tables


def topic_map(directory: Path = CONTRACTS_DIR) -> dict[str, TableContract]:
    """The explicit topic -> table mapping (never derived by splitting on dots)."""
    mapping: dict[str, TableContract] = {}
    for contract in load_contracts(directory).values():
        for topic in contract.topics:
            mapping[topic] = contract
    return mapping
