"""The lake's Hudi tables as Apache Hudi sees them (its Java API, through the driver's JVM).

Existence, the newest completed commit, the extra metadata of recent commits, and the
creation of an empty table (so that every bronze table exists, typed, before its first
event: dbt's sources then find all of them).
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from ingestion.errors import IngestionError

if TYPE_CHECKING:
    from py4j.java_gateway import JVMView

log = logging.getLogger("lakehouse.ingest")

#: Completed commits looked at (newest first) for a marker: table services (clustering) and
#: dead-letter replays commit without one.
MARKER_LOOKBACK = 20


def _jvm(spark: SparkSession) -> JVMView:
    """The driver's JVM gateway (None in pyspark's types: a stopped context has none)."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the Spark session has no JVM gateway (its context is stopped)")
    return jvm


def _meta_client(spark: SparkSession, path: str):
    jvm = _jvm(spark)
    storage_conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(
        spark.sparkContext._jsc.hadoopConfiguration())
    return jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder() \
        .setConf(storage_conf).setBasePath(path).build()


def table_exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds a Hudi table (its ``.hoodie/hoodie.properties``)."""
    jvm = _jvm(spark)
    hadoop_path = jvm.org.apache.hadoop.fs.Path(f"{path.rstrip('/')}/.hoodie/hoodie.properties")
    return bool(hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path))


def is_created(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds a Hudi table whose creation finished: its first commit (empty or
    with rows) completed. ``hoodie.properties`` alone, or beside a commit that is still requested
    or inflight, is what a creation killed before its first commit leaves: such a table has no
    schema Spark's ``CREATE TABLE ... LOCATION`` can find, and its next write (Hudi rolls the
    pending commit back first) finishes the creation."""
    return latest_commit(spark, path) is not None


def discard_torn_creation(spark: SparkSession, path: str) -> bool:
    """Remove a table creation that was cut short at ``path``; whether there was one.

    Hudi creates a table's ``.hoodie`` folder (``.schema``, ``.temp``, ...) before it writes
    ``hoodie.properties``, and a process killed in between leaves a folder its writer takes for a
    table and then fails to load ("Could not load Hoodie properties"), so no restart could write
    the table. Such a folder holds no commit: every commit comes after the properties. It is
    removed only when it is all the table directory holds and neither ``hoodie.properties`` nor
    the ``hoodie.properties.backup`` Hudi recovers from exists.
    """
    jvm = _jvm(spark)
    table = jvm.org.apache.hadoop.fs.Path(path.rstrip("/"))
    fs = table.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    meta = jvm.org.apache.hadoop.fs.Path(table, ".hoodie")
    if not fs.exists(meta) or any(fs.exists(jvm.org.apache.hadoop.fs.Path(meta, name))
                                  for name in ("hoodie.properties", "hoodie.properties.backup")):
        return False
    if [status.getPath().getName() for status in fs.listStatus(table)] != [".hoodie"]:
        return False  # files beside it: not a bare creation, left for an operator
    log.warning("%s: removing a table creation cut short (.hoodie without hoodie.properties)", path)
    return bool(fs.delete(meta, True))


def latest_commit(spark: SparkSession, path: str) -> str | None:
    """The newest completed commit instant of the table at ``path`` (None: no table or no commit)."""
    return latest_commit_inserts(spark, path)[0]


def latest_commit_inserts(spark: SparkSession, path: str) -> tuple[str | None, int]:
    """The newest completed commit instant of the table at ``path`` and the records it inserted
    (Hudi's write statistics; None and 0: no table or no commit)."""
    if not table_exists(spark, path):
        return None, 0
    timeline = _meta_client(spark, path).getActiveTimeline().getCommitsTimeline().filterCompletedInstants()
    last = timeline.lastInstant()
    if not last.isPresent():
        return None, 0
    return last.get().requestedTime(), int(timeline.readCommitMetadata(last.get()).fetchTotalInsertRecordsWritten())


@dataclass(frozen=True)
class TimelineState:
    """What a writer needs to know of a table's recent completed commits."""

    latest_commit: str | None
    marker: str | None  # the newest value of the marker key among them
    has_records: bool  # whether any commit wrote a record (else: only empty commits, or no commit)
    #: the newest commit's writer schema, meta fields excluded: (name, Spark type; None for a
    #: type the ingestion never writes)
    column_types: tuple[tuple[str, str | None], ...] = ()
    #: the value of ``companion_key`` in the commit holding ``marker`` (None: absent)
    companion: str | None = None


def timeline_state(spark: SparkSession, path: str, marker_key: str,
                   companion_key: str | None = None) -> TimelineState:
    """The newest commit, the newest ``marker_key`` value (of the last ``MARKER_LOOKBACK`` commits)
    and whether the table holds any record, from one read of the timeline; the columns of the
    newest commit's writer schema (Hudi's ``schema`` commit metadata); ``companion_key``'s value
    in the marker's commit."""
    if not table_exists(spark, path):
        return TimelineState(None, None, False)
    timeline = _meta_client(spark, path).getActiveTimeline().getCommitsTimeline().filterCompletedInstants()
    instants = list(timeline.getReverseOrderedInstants().limit(MARKER_LOOKBACK).toArray())
    marker: str | None = None
    companion: str | None = None
    columns: tuple[tuple[str, str | None], ...] = ()
    if instants:
        columns = _schema_columns(timeline.readCommitMetadata(instants[0]).getMetadata(SCHEMA_KEY))
    has_records = len(instants) == MARKER_LOOKBACK  # older commits than the look-back: assume data
    for instant in instants:
        metadata = timeline.readCommitMetadata(instant)
        if marker is None and metadata.getMetadata(marker_key):
            marker = str(metadata.getMetadata(marker_key))
            if companion_key is not None and metadata.getMetadata(companion_key):
                companion = str(metadata.getMetadata(companion_key))
        has_records = has_records or metadata.fetchTotalRecordsWritten() > 0
        if marker is not None and has_records:
            break
    return TimelineState(instants[0].requestedTime() if instants else None, marker, has_records, columns,
                         companion)


#: Hudi's commit metadata key holding the commit's writer schema (Avro JSON).
SCHEMA_KEY = "schema"


def _schema_columns(schema_json: str | None) -> tuple[tuple[str, str | None], ...]:
    if not schema_json:
        return ()
    fields = json.loads(str(schema_json)).get("fields", [])
    return tuple((f["name"], avro_spark_type(f["type"])) for f in fields if not f["name"].startswith("_hoodie_"))


_AVRO_PRIMITIVES = {"int": "int", "long": "bigint", "string": "string", "double": "double", "boolean": "boolean"}
_AVRO_LOGICAL = {"date": "date", "timestamp-micros": "timestamp", "timestamp-millis": "timestamp",
                 "local-timestamp-micros": "timestamp", "local-timestamp-millis": "timestamp"}


def avro_spark_type(avro: object) -> str | None:
    """The Spark SQL type of an Avro field type as Hudi writes a Spark schema (optional fields as
    unions with null); None for a type the ingestion never writes."""
    if isinstance(avro, list):
        members = [member for member in avro if member != "null"]
        return avro_spark_type(members[0]) if len(members) == 1 else None
    if isinstance(avro, str):
        return _AVRO_PRIMITIVES.get(avro)
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "decimal":
            return f"decimal({int(avro['precision'])},{int(avro.get('scale', 0))})"
        if logical in _AVRO_LOGICAL:
            return _AVRO_LOGICAL[logical]
        return avro_spark_type(avro.get("type")) if logical is None else None
    return None


def latest_marker(spark: SparkSession, path: str, key: str) -> str | None:
    """``key`` of the newest completed commit (of the last ``MARKER_LOOKBACK``) that carries it."""
    return timeline_state(spark, path, key).marker


def create_empty(spark: SparkSession, path: str, schema: pa.Schema, options: dict[str, str]) -> bool:
    """Create the Hudi table at ``path`` with ``schema`` and an empty commit, unless it exists with a
    completed commit (``is_created``)."""
    if is_created(spark, path):
        return False
    spark.createDataFrame([], from_arrow_schema(schema)).write.format("hudi").options(**options) \
        .mode("append").save(path)
    return True


@dataclass(frozen=True)
class BloomFilterMiss:
    """A record key stored in a base file that the file's own bloom filter does not contain."""

    file: str  # the base file, relative to the table's path
    key: str


#: Base files whose bloom filters ``bloom_filter_miss`` checks, newest commits first.
BLOOM_CHECK_FILES = 4


def bloom_filter_miss(spark: SparkSession, path: str, max_files: int = BLOOM_CHECK_FILES) -> BloomFilterMiss | None:
    """A key of the table at ``path`` that its base file's bloom filter misses (None: none found).

    The ingestion drops re-delivered events by looking their keys up in the bloom filters of
    the stored base files (the ``BLOOM`` index). A correct bloom filter never misses a key it
    was built from, so a miss means the filters were written by another writer: the project's
    own Hudi writer before it moved onto Apache Hudi hashed keys differently, and a lookup
    in its files misses most stored keys, so re-delivered events would be stored twice. Checks
    the smallest and largest record key (from the footer, no data read) of the newest
    ``max_files`` base files the last ``MARKER_LOOKBACK`` commits wrote.
    """
    if not table_exists(spark, path):
        return None
    jvm = _jvm(spark)
    client = _meta_client(spark, path)
    storage = client.getStorage()
    timeline = client.getActiveTimeline().getCommitsTimeline().filterCompletedInstants()
    checked = 0
    for instant in timeline.getReverseOrderedInstants().limit(MARKER_LOOKBACK).toArray():
        for stat in timeline.readCommitMetadata(instant).getWriteStats():
            relative = str(stat.getPath() or "")
            if not relative.endswith(".parquet") or stat.getNumWrites() == 0:
                continue
            file = jvm.org.apache.hudi.storage.StoragePath(client.getBasePath(), relative)
            if not storage.exists(file):
                continue  # a version cleaning removed
            utils = jvm.org.apache.hudi.io.storage.HoodieIOFactory.getIOFactory(storage).getFileFormatUtils(file)
            bloom = utils.readBloomFilterFromMetadata(storage, file)
            if bloom is None:
                continue  # written without one: nothing to look keys up in
            for key in utils.readMinMaxRecordKeys(storage, file):
                if not bloom.mightContain(key):
                    return BloomFilterMiss(relative, str(key))
            checked += 1
            if checked >= max_files:
                return None
    return None


class ForeignBloomFiltersError(IngestionError, RuntimeError):
    """A table's bloom filters were built by another writer: writing into it would store keys twice."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


#: Tables whose bloom filters ``refuse_foreign_bloom_filters`` checks at once.
BLOOM_CHECK_THREADS = 3


def refuse_foreign_bloom_filters(spark: SparkSession, paths: list[str]) -> None:
    """Raise ``ForeignBloomFiltersError`` for the first of the tables at ``paths`` whose bloom filters
    miss their own keys (``bloom_filter_miss``): such a lake is rebuilt, never upgraded in place."""
    with ThreadPoolExecutor(max_workers=BLOOM_CHECK_THREADS, thread_name_prefix="bloom-check") as pool:
        misses = list(pool.map(lambda path: bloom_filter_miss(spark, path), paths))
    for path, miss in zip(paths, misses, strict=True):
        if miss is not None:
            raise ForeignBloomFiltersError(
                f"bronze table {path}: the bloom filter of {miss.file} does not contain its own record key "
                f"{miss.key!r}: the table was written by another writer (the project's own Hudi writer before "
                "Apache Hudi?), and re-delivered events would be stored twice; nothing was written",
                "rebuild bronze from the landing zone, never upgrade it in place: lakehouse down, remove the lake "
                "and the checkpoints, lakehouse ingest --once, then lakehouse dbt build --full-refresh "
                "(docs/runbook.md, 'Other error messages and symptoms')")
