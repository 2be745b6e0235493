"""The bronze tables the stream writes: their Apache Hudi write options and Arrow schemas.

Every source table of the contracts becomes the Hudi table ``<lake>/bronze/<table>``: a
change log, one row per event, copy-on-write, record key = primary key + ``_cdc_position``
(``ComplexKeyGenerator``), partitioned Hive-style by ``_cdc_source_date``. Bad lines go to
``<lake>/bronze/dead_letter`` keyed by a hash of topic + raw line, not partitioned. Each
change a source's events make to a bronze table's schema (policy ``evolve``) is recorded in
``<lake>/bronze/schema_change`` (``ingestion.stream.schema_history``), not partitioned.

Why these options (docs/architecture.md, "Bronze on Apache Hudi"):

- ``insert`` with ``hoodie.datasource.insert.dup.policy=drop``: a record key already stored
  (a re-delivered event, a replayed micro-batch) is dropped, so each event is stored once,
  without the merge work of an ``upsert`` (rows of a change log never change);
- ``hoodie.write.record.merge.mode=COMMIT_TIME_ORDERING`` and no ordering field: nothing in
  bronze is ever merged by an ordering value, so nothing is dropped as "older";
- ``hoodie.write.table.version=6``: the tables stay readable by Athena and EMR's Hudi
  0.14/0.15 readers (and by hudi-rs);
- the metadata table off: on this table size it doubled the cost of every commit;
- zstd parquet: faster to write than Hudi's default gzip and no bigger (hudi-rs reads it;
  Athena and EMR's readers not tested here);
- the ``BLOOM`` index and an 8 MiB small-file limit: an insert's cost must not grow with
  the day's partition. Hudi's defaults (``SIMPLE``, which reads every stored key of the
  partitions a batch touches, and a 100 MiB limit, below which each insert rewrites the
  partition's newest file) took 8.4 s per 2,000-row insert into a 3M-row partition against
  1.3 s with these (mean of 20; ``benchmarks/bench_bronze_commits.py``, docs/performance.md);
- no embedded timeline server: it would listen on every interface (see ``COMMON_OPTIONS``);
- cleaning by hours (retention longer than any dbt run reading the table) and archival.

Any ``hoodie.*`` option can be overridden (``LAKEHOUSE_HOODIE_OPTIONS``, see ``hoodie_overrides``).
"""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa

from ingestion.catalog.hive_sync import hive_sync_options
from ingestion.cdc.contracts import (
    BRONZE_ORDERING_COLUMN,
    BRONZE_PARTITION_COLUMN,
    TableContract,
    load_contracts,
)
from ingestion.cdc.parser import DEAD_LETTER_COLUMNS

DATABASE = "bronze"
DEAD_LETTER_TABLE = "dead_letter"
DEAD_LETTER_KEY = "dead_letter_id"
#: Dead-letter table columns: the key, then the parser's dead-letter row columns.
DEAD_LETTER_TABLE_COLUMNS: tuple[tuple[str, str], ...] = ((DEAD_LETTER_KEY, "string"), *DEAD_LETTER_COLUMNS)
SCHEMA_CHANGE_TABLE = "schema_change"
SCHEMA_CHANGE_KEY = "schema_change_id"
#: The schema history's columns: one row per column a batch added to a bronze table or widened.
SCHEMA_CHANGE_TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    (SCHEMA_CHANGE_KEY, "string"),  # <table>:<schema_version>:<column>
    ("table_name", "string"),
    ("schema_version", "int"),  # 1 is the contract; each batch changing the table adds one
    ("column_name", "string"),
    ("change", "string"),  # added | widened
    ("from_type", "string"),  # the bronze type before (null for an added column)
    ("to_type", "string"),
    ("first_topic", "string"),  # the first event of the batch that carried the change
    ("first_kafka_partition", "int"),
    ("first_kafka_offset", "bigint"),
    ("first_landing_file", "string"),
    ("first_source_ts", "timestamp"),
    ("recorded_at", "timestamp"),
)
#: The commit-metadata key prefix of the project's markers (``hoodie.datasource.write.commitmeta.key.prefix``).
COMMIT_METADATA_PREFIX = "lakehouse."

#: Bronze files below this size take the next inserts (``hoodie.parquet.small.file.limit``).
SMALL_FILE_LIMIT = 8 * 1024 * 1024

#: Options of every table the ingestion writes (bronze and dead letters).
COMMON_OPTIONS: dict[str, str] = {
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.write.table.version": "6",
    "hoodie.datasource.write.operation": "insert",
    "hoodie.datasource.insert.dup.policy": "drop",
    "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING",
    "hoodie.metadata.enable": "false",
    # the drop policy's lookup: bloom filters in the files' footers, not every stored key
    "hoodie.index.type": "BLOOM",
    # an insert packs its rows into a partition's files below this size, rewriting them:
    # ~0.13 s per MB a commit, so the limit bounds a continuous stream's commit latency
    "hoodie.parquet.small.file.limit": str(SMALL_FILE_LIMIT),
    # zstd instead of Hudi's gzip: a 184K-row bulk_insert 1.05 s against 1.40 s, files 3% smaller
    "hoodie.parquet.compression.codec": "zstd",
    # no embedded timeline server: Hudi starts one per write client (Javalin/Jetty) and it
    # binds every interface (no bind-address option), while the project listens on loopback
    # only; executors then read the file-system view themselves, and markers are plain files
    "hoodie.embed.timeline.server": "false",
    "hoodie.write.markers.type": "DIRECT",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.commitmeta.key.prefix": COMMIT_METADATA_PREFIX,
    # cleaning: keep the file versions of the last 6 hours (a dbt run reading a table
    # never loses its files), then archival of old instants (defaults: 20-30 kept)
    "hoodie.clean.automatic": "true",
    "hoodie.clean.policy": "KEEP_LATEST_BY_HOURS",
    "hoodie.clean.hours.retained": "6",
    "hoodie.archive.automatic": "true",
    # an added column (drift) is appended; a batch without it writes nulls
    "hoodie.datasource.write.reconcile.schema": "true",
}

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


def spark_type(kind: pa.DataType) -> str:
    """The contract (Spark SQL) type name of an Arrow type ``arrow_type`` gives."""
    if pa.types.is_decimal(kind):
        return f"decimal({kind.precision},{kind.scale})"
    if pa.types.is_timestamp(kind):
        return "timestamp"
    for name, arrow in _ARROW_TYPES.items():
        if arrow == kind:
            return name
    raise ValueError(f"no contract type for Arrow type {kind}")


def arrow_schema(columns: tuple[tuple[str, str], ...]) -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type(kind)) for name, kind in columns])


def table_path(lake: str, table: str) -> str:
    """``<lake>/bronze/<table>`` for a local path or a URI (``s3a://bucket/lake``)."""
    return f"{str(lake).rstrip('/')}/bronze/{table}"


def hoodie_overrides() -> dict[str, str]:
    """``hoodie.*`` options from ``LAKEHOUSE_HOODIE_OPTIONS`` (a JSON object), applied over the defaults."""
    text = os.environ.get("LAKEHOUSE_HOODIE_OPTIONS", "").strip()
    if not text:
        return {}
    try:
        options = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"LAKEHOUSE_HOODIE_OPTIONS is not a JSON object: {exc}") from None
    if not isinstance(options, dict) or not all(str(k).startswith("hoodie.") for k in options):
        raise ValueError("LAKEHOUSE_HOODIE_OPTIONS must be a JSON object of hoodie.* options")
    return {str(k): str(v) for k, v in options.items()}


def bronze_options(contract: TableContract) -> dict[str, str]:
    """Hudi write options of the bronze table of ``contract``."""
    return {
        **COMMON_OPTIONS,
        "hoodie.table.name": contract.name,
        "hoodie.database.name": DATABASE,
        "hoodie.datasource.write.recordkey.field": ",".join((*contract.primary_key, BRONZE_ORDERING_COLUMN)),
        "hoodie.datasource.write.partitionpath.field": BRONZE_PARTITION_COLUMN,
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        **hoodie_overrides(),
    }


def unpartitioned_options(table: str, key: str) -> dict[str, str]:
    """Hudi write options of an unpartitioned table the ingestion writes (dead letters, schema history)."""
    return {
        **COMMON_OPTIONS,
        "hoodie.table.name": table,
        "hoodie.database.name": DATABASE,
        "hoodie.datasource.write.recordkey.field": key,
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        **hoodie_overrides(),
    }


def bronze_contracts() -> dict[str, TableContract]:
    """The source tables by name (contract order)."""
    return dict(load_contracts())


#: The tables the ingestion writes beside the source tables: name -> (record key, columns).
INGESTION_TABLES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    DEAD_LETTER_TABLE: (DEAD_LETTER_KEY, DEAD_LETTER_TABLE_COLUMNS),
    SCHEMA_CHANGE_TABLE: (SCHEMA_CHANGE_KEY, SCHEMA_CHANGE_TABLE_COLUMNS),
}


def all_table_names() -> list[str]:
    return [*bronze_contracts(), *INGESTION_TABLES]


def table_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    """The contract columns of every table the ingestion writes (bronze tables, dead letters, schema history)."""
    columns = {name: contract.bronze_columns for name, contract in bronze_contracts().items()}
    columns.update({name: spec[1] for name, spec in INGESTION_TABLES.items()})
    return columns


def partition_field(table: str) -> str | None:
    """The partition column of a table the ingestion writes (None: unpartitioned)."""
    return None if table in INGESTION_TABLES else BRONZE_PARTITION_COLUMN


def write_options(table: str, metastore_uri: str | None = None, database: str = DATABASE) -> dict[str, str]:
    """Hudi write options of any table the ingestion writes; with ``metastore_uri``, synced to that metastore."""
    if table in INGESTION_TABLES:
        options = unpartitioned_options(table, INGESTION_TABLES[table][0])
    else:
        options = bronze_options(bronze_contracts()[table])
    if metastore_uri:
        options = {**options, **hive_sync_options(table, metastore_uri, database,
                                                  partition_field=partition_field(table)),
                   **hoodie_overrides()}
    return options
