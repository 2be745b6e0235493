"""The bronze tables the stream writes: Hudi configs and Arrow/Spark schemas.

Every source table of the contracts becomes ``<lake>/bronze/<table>`` (record key =
primary key + ``_cdc_position``, precombine ``_cdc_position``, partitioned Hive-style by
``_cdc_source_date``); bad lines go to ``<lake>/bronze/dead_letter`` keyed by a hash of
topic + raw line, so a re-delivered bad line is stored once.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from ingestion.cdc.contracts import (
    BRONZE_ORDERING_COLUMN,
    BRONZE_PARTITION_COLUMN,
    TableContract,
    load_contracts,
)
from ingestion.cdc.parser import DEAD_LETTER_COLUMNS
from ingestion.hoodie.config import TableConfig

DATABASE = "bronze"
DEAD_LETTER_TABLE = "dead_letter"
DEAD_LETTER_KEY = "dead_letter_id"
#: Dead-letter table columns: the key, then the parser's dead-letter row columns.
DEAD_LETTER_TABLE_COLUMNS: tuple[tuple[str, str], ...] = ((DEAD_LETTER_KEY, "string"), *DEAD_LETTER_COLUMNS)

_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)\Z")
_ARROW_TYPES = {
    "int": pa.int32(),
    "bigint": pa.int64(),
    "string": pa.string(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
}


def arrow_type(spark_type: str) -> pa.DataType:
    """The Arrow type of a contract (Spark SQL) type name."""
    match = _DECIMAL.match(spark_type)
    if match:
        return pa.decimal128(int(match.group(1)), int(match.group(2)))
    return _ARROW_TYPES[spark_type]


def arrow_schema(columns: tuple[tuple[str, str], ...]) -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type(kind)) for name, kind in columns])


def table_path(lake: str | Path, table: str) -> str:
    return str(Path(lake) / "bronze" / table)


def bronze_config(contract: TableContract) -> TableConfig:
    return TableConfig(
        name=contract.name,
        database=DATABASE,
        record_key_fields=(*contract.primary_key, BRONZE_ORDERING_COLUMN),
        precombine_field=BRONZE_ORDERING_COLUMN,
        partition_fields=(BRONZE_PARTITION_COLUMN,),
        hive_style=True,
    )


def dead_letter_config() -> TableConfig:
    return TableConfig(
        name=DEAD_LETTER_TABLE,
        database=DATABASE,
        record_key_fields=(DEAD_LETTER_KEY,),
        precombine_field="kafka_offset",
        partition_fields=(),
    )


def bronze_contracts() -> dict[str, TableContract]:
    """The source tables by name (contract order)."""
    return dict(load_contracts())


def all_table_names() -> list[str]:
    return [*bronze_contracts(), DEAD_LETTER_TABLE]


def placeholder_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    """Data columns of every bronze table, for empty catalog views before the first commit."""
    columns = {name: contract.bronze_columns for name, contract in bronze_contracts().items()}
    columns[DEAD_LETTER_TABLE] = DEAD_LETTER_TABLE_COLUMNS
    return columns
