"""Register Hudi tables in a shared Hive Metastore with Hudi's own ``HiveSyncTool`` (HMS mode).

With a shared metastore (``LAKEHOUSE_METASTORE_URI``) every commit the ingestion makes syncs
its table (``hive_sync_options``, added by ``ingestion.stream.bronze.write_options``). A table that receives no commit
(an existing lake moved onto the metastore, a table with no new events) is registered by
running the same tool on it once at start: what Hudi's ``run_sync_tool.sh`` does, in the
ingestion's JVM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def hive_sync_options(table: str, metastore_uri: str, database: str, *, partition_field: str | None,
                      ) -> dict[str, str]:
    """Hudi's hive sync in HMS mode: each commit creates or updates ``<database>.<table>`` in the shared
    metastore at ``metastore_uri`` (columns, new partitions, the last synced commit), as Spark, Trino
    and Hive read it (``partition_field``: the table's one, hive-style; None: unpartitioned).
    Timestamps are registered as timestamps (not Hudi's default, bigint)."""
    return {
        "hoodie.datasource.hive_sync.enable": "true",
        "hoodie.datasource.hive_sync.mode": "hms",
        "hoodie.datasource.hive_sync.metastore.uris": metastore_uri,
        "hoodie.datasource.hive_sync.database": database,
        "hoodie.datasource.hive_sync.table": table,
        "hoodie.datasource.hive_sync.partition_fields": partition_field or "",
        "hoodie.datasource.hive_sync.partition_extractor_class": (
            "org.apache.hudi.hive.MultiPartKeysValueExtractor" if partition_field
            else "org.apache.hudi.hive.NonPartitionedExtractor"),
        "hoodie.datasource.hive_sync.support_timestamp": "true",
    }


def sync_table(spark: SparkSession, path: str, table: str, metastore_uri: str, database: str, *,
               partition_field: str | None) -> None:
    """Create or update ``<database>.<table>`` from the Hudi table at ``path`` (columns, partitions)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has its gateway
    props = jvm.java.util.Properties()
    for key, value in {**hive_sync_options(table, metastore_uri, database, partition_field=partition_field),
                       "hoodie.datasource.meta.sync.base.path": path}.items():
        props.setProperty(key, value)
    tool = jvm.org.apache.hudi.hive.HiveSyncTool(props, spark.sparkContext._jsc.hadoopConfiguration())
    try:
        tool.syncHoodieTable()
    finally:
        tool.close()
