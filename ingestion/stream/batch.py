"""One micro-batch: landed files -> parsed chunks -> one Hudi commit per table -> catalog sync.

``BatchProcessor`` is the ``foreachBatch`` function of the streaming query. Parsing runs
in the Python workers (``ingestion.stream.parse``) and yields compact chunk rows, which
Spark keeps for the batch (``persist``). The driver collects only their small ``detail``
(counts, drift columns, dead-letter reasons) and their record keys' hashes, then each table
that received rows is decoded from the chunks on the executors, deduplicated within the
batch when its rows may repeat a record key (the first delivery wins;
``ingestion.stream.repeated_keys``), and written with Apache Hudi's Spark datasource with an
exactly-once marker (``ingestion.stream.commit``); the tables are written concurrently
from a few driver threads, as each Hudi write is one Spark job of its own. The catalog
is refreshed in the background (best effort: the stream keeps going when the Thrift
server is down), and one JSON log line reports the batch.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TextIO

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ingestion import files as landing_files
from ingestion.cdc.contracts import BRONZE_ORDERING_COLUMN, TableContract
from ingestion.cdc.schema_policy import TEXT, common_type
from ingestion.sources.landing import relative_landing_path
from ingestion.stream import checkpoint as ckpt
from ingestion.stream.bronze import (
    DEAD_LETTER_KEY,
    DEAD_LETTER_TABLE,
    SCHEMA_CHANGE_TABLE,
    arrow_schema,
    bronze_contracts,
    table_columns,
    table_path,
    write_options,
)
from ingestion.stream.commit import (
    OFFSETS_METADATA_KEY,
    CommitOutcome,
    StreamMarker,
    already_committed,
    table_state,
    write_once,
    write_operation,
)
from ingestion.stream.fast_parse import parser_mode
from ingestion.stream.hudi_tables import TimelineState, create_empty
from ingestion.stream.kafka_parse import Chunker
from ingestion.stream.late_copies import (
    LATE_ROWS_OPTIONS,
    HighWater,
    Partition,
    resolve_late,
    stored_high_water,
)
from ingestion.stream.parse import (
    CHUNKS_DDL,
    DEAD,
    EVENT,
    FILES,
    TOMBSTONE,
    LineParser,
    decode_chunks,
    parse_file_batches,
    utc_timestamps,
    vanished_file,
)
from ingestion.stream.partition_changes import describe, moved_keys, new_partitions
from ingestion.stream.repeated_keys import RecordKeys, RowSelection
from ingestion.stream.schema_history import (
    FirstSeen,
    SchemaChange,
    earliest,
    read_history,
    schema_changes,
    schema_versions,
)
from ingestion.stream.sync_state import CatalogSyncer

log = logging.getLogger("lakehouse.ingest")


@dataclass
class BatchReport:
    """What one micro-batch did (also the JSON log line)."""

    batch_id: int
    files: int = 0
    bytes: int = 0
    lines: int = 0
    events: dict[str, int] = field(default_factory=dict)
    duplicates_in_batch: int = 0
    #: tables with rows that may repeat a record key in the batch: those rows went through the
    #: in-batch deduplication (``ingestion.stream.repeated_keys``); the others were written as decoded
    deduplicated: list[str] = field(default_factory=list)
    #: per table: rows at or below offsets already committed (a landed file read late), and how
    #: many stored higher-offset copies they replaced (``ingestion.stream.late_copies``)
    late_rows: dict[str, int] = field(default_factory=dict)
    replaced_copies: dict[str, int] = field(default_factory=dict)
    #: per table: keys arriving in a (topic, partition) new to the table whose earlier changes
    #: sit in another one, per "topic[partition]" (``ingestion.stream.partition_changes``)
    moved_keys: dict[str, dict[str, int]] = field(default_factory=dict)
    bad_events: int = 0
    dead_letters_by_reason: dict[str, int] = field(default_factory=dict)
    #: landing files the batch planned but could not read (deleted in between): file_vanished dead letters
    vanished_files: list[str] = field(default_factory=list)
    tombstones: int = 0
    commits: dict[str, str] = field(default_factory=dict)
    #: tables this batch created empty (a new lake's tables it had no rows for)
    created: list[str] = field(default_factory=list)
    skipped_replays: list[str] = field(default_factory=list)
    drift: dict[str, list[str]] = field(default_factory=dict)
    #: the schema version each table reached when this batch changed its schema (bronze.schema_change)
    schema_versions: dict[str, int] = field(default_factory=dict)
    synced: dict[str, str] = field(default_factory=dict)
    sync_error: str | None = None
    processing_seconds: float = 0.0
    parse_seconds: float = 0.0  # landed files -> parsed chunks collected in the driver (Spark + workers)
    write_seconds: float = 0.0  # the Hudi commits of the batch
    max_lag_seconds: float | None = None

    def to_json(self) -> str:
        doc = {"event": "micro_batch", **self.__dict__}
        return json.dumps(doc, sort_keys=True, default=str)


@dataclass
class BatchPlan:
    """What the driver learns of a batch from its chunk details, before reading any row."""

    drift: dict[str, dict[str, str]]  # per table with rows: columns added or widened (name -> Spark type)
    firsts: dict[str, dict[str, FirstSeen | None]]  # where each of those was first seen
    offsets: dict[str, dict[Partition, tuple[int, int]]]  # per table: (lowest, highest) offset per partition
    oldest: dt.datetime | None  # the oldest source time of the batch's events
    keys: dict[str, RecordKeys]  # per table with rows (and the dead letters): its rows' key hashes


#: Tables written at once (each Hudi write is a Spark job; more threads only queue on 2 cores).
WRITE_THREADS = 3

#: Rows of a table one task decodes: a table's rows of a batch are read from the chunk
#: partitions in ``ceil(rows / DECODE_TASK_ROWS)`` tasks (``coalesce``), as a task costs ~0.1 s of
#: a core (a Python worker round trip) whether its partition holds the table's rows or not:
#: decoding an 11-row table from ten chunk partitions took 1.1 s of core time at scale 1.0.
#: A table within one task is also deduplicated without a shuffle (one partition).
DECODE_TASK_ROWS = 100_000


def create_empty_table(spark, lake: str, table: str, metastore_uri: str | None = None,
                       database: str = "bronze") -> bool:
    """Create bronze table ``table`` empty and typed (and registered in the shared metastore, when
    there is one) unless it exists: one empty Hudi commit. False: it existed."""
    return create_empty(spark, table_path(lake, table), utc_timestamps(arrow_schema(table_columns()[table])),
                        write_options(table, metastore_uri, database))


#: Columns ordering the deliveries of one record key within a batch (the first one is kept).
_DELIVERY_ORDER = {
    "bronze": ["_cdc_kafka_partition", "_cdc_kafka_offset", "_cdc_landing_file"],
    DEAD_LETTER_TABLE: ["kafka_partition", "kafka_offset", "landing_file"],
}


def _write_columns(base: tuple[tuple[str, str], ...], state: TimelineState,
                   changed: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The columns to write a table in: ``base`` (its contract's), with the types and the columns the
    table has (``state``: widened, added by earlier batches), then with what a batch adds or widens."""
    types = dict(base)
    for name, kind in [*state.column_types, *changed.items()]:
        if name not in types:
            types[name] = kind or TEXT
        elif kind is not None:
            types[name] = common_type(types[name], kind)
    return tuple(types.items())


#: Options of a commit that widens a column: its schema is the batch's (which holds every column of
#: the table, ``_write_columns``), not the table's narrower one reconciled with it.
WIDENING_OPTIONS = {"hoodie.datasource.write.reconcile.schema": "false"}


def widens_table(state: TimelineState, columns: tuple[tuple[str, str], ...]) -> bool:
    """Whether writing ``columns`` changes the type of a column the table has (a widening)."""
    current = {name: kind for name, kind in state.column_types if kind is not None}
    return any(name in current and current[name] != kind for name, kind in columns)


def first_delivery(data: DataFrame, keys: list[str], order: list[str]) -> DataFrame:
    """One row per record key: the first delivery (lowest Kafka partition/offset, then file name)."""
    window = Window.partitionBy(*keys).orderBy(*(F.col(c).asc_nulls_last() for c in order))
    return data.withColumn("__delivery", F.row_number().over(window)).where("__delivery = 1").drop("__delivery")


#: Spark settings of a whole batch. The batch's caches (its parsed chunks, each table's deduplicated
#: rows) live for one write and are read once or twice, so they are stored uncompressed: building
#: the compressed columnar cache (dictionary and run-length statistics per column) was ~16% of the
#: executors' CPU samples of a scale-1.0 run (JFR). Without it a cold ``ingest --once`` wrote its
#: tables in 14.0 s instead of 14.85 s at scale 1.0 and in 37-38 s instead of 43-46 s at scale 10,
#: peak memory unchanged (docs/performance.md).
BATCH_CONFS = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}


def worker_read_confs(session) -> dict[str, str]:
    """File-scan settings for a batch whose workers read the files (Spark only hands out paths).

    Spark's defaults size a task by 128 MB of content plus 4 MB per file: ~10 uneven tasks
    for 200 MB of landed files, each paying a task's fixed cost (0.1-0.2 s here). As the
    JVM reads no content, tasks can be large: the batch is split in about two tasks per
    core (``minPartitionNum``), with a file counted as 256 KB of parse work on top of its
    bytes so that many small files still spread over the cores.
    """
    try:
        cores = max(1, int(session.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 - no SparkContext (Spark Connect): keep Spark's own default
        return {}
    return {
        "spark.sql.files.maxPartitionBytes": str(1 << 30),
        "spark.sql.files.openCostInBytes": str(256 << 10),
        "spark.sql.files.minPartitionNum": str(2 * cores),
    }


@contextlib.contextmanager
def session_confs(session, confs: dict[str, str]):
    """Set SQL ``confs`` on ``session`` (the streaming query's own session) for the block, then restore them."""
    previous = {key: session.conf.get(key, None) for key in confs}
    for key, value in confs.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, value)


class BatchProcessor:
    def __init__(self, landing: str, lake: str, checkpoint: str, *, syncer: CatalogSyncer | None = None,
                 log_stream: TextIO | None = sys.stdout,
                 on_report: Callable[[BatchReport], None] | None = None,
                 chunker: Chunker | None = None, metastore_uri: str | None = None, database: str = "bronze",
                 before_batch: Callable[[], None] | None = None):
        self.landing = landing
        #: called before each micro-batch writes (the lake lock's check: raises once the lock is lost)
        self.before_batch = before_batch
        #: a shared Hive Metastore each commit is synced to (Hudi's hive sync), and its database
        self.metastore_uri = metastore_uri
        self.database = database
        #: the parse stage of another source (Kafka: ``kafka_chunker``); None: landed files
        self.chunker = chunker
        self.lake = lake
        self.checkpoint = checkpoint
        self._query_id: str | None = None  # Spark's id of the query, read from the checkpoint once known
        self.syncer = syncer
        self.log_stream = log_stream
        self.on_report = on_report
        self.contracts = bronze_contracts()
        self.columns = table_columns()
        #: each table's columns as bronze holds them (contract, metadata, evolved; widened types),
        #: read from the tables before the first batch, then kept as this writer writes them
        self.bronze_columns: dict[str, tuple[tuple[str, str], ...]] | None = None
        #: each table's schema version (``ingestion.stream.schema_history``), read with ``bronze_columns``
        self.schema_versions: dict[str, int] = {}
        #: per bronze table, the highest Kafka offset committed per (topic, partition)
        self.high_water: dict[str, HighWater] = {}
        self.reports: list[BatchReport] = []
        #: tables missing from a new lake that the next batch creates empty when it has no row for
        #: them, beside its writes (a table with rows is created by its write); set by the job
        self.uncreated: list[str] = []

    def _options(self, table: str) -> dict[str, str]:
        return write_options(table, self.metastore_uri, self.database)

    # -- foreachBatch entry point ---------------------------------------------------
    def __call__(self, files: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (``files``: the landed files, or the records of another source)."""
        if self.before_batch is not None:
            self.before_batch()
        started = time.monotonic()
        report = BatchReport(batch_id=batch_id)
        self._query_id = self._query_id or ckpt.query_id(self.checkpoint)
        marker = StreamMarker(self._query_id or "unknown", batch_id, self.checkpoint.rstrip("/").rpartition("/")[2])
        with session_confs(files.sparkSession, BATCH_CONFS):
            self._process(files, marker, report)
        if self.syncer is not None:
            news = self.syncer.notify(report.commits, report.created, report.drift)
            report.synced, report.sync_error = news.synced, news.error
        report.processing_seconds = round(time.monotonic() - started, 3)
        self.reports.append(report)
        if self.log_stream is not None:
            self.log_stream.write(report.to_json() + "\n")
            self.log_stream.flush()
        if self.on_report is not None:
            self.on_report(report)

    # -- the work ---------------------------------------------------------------------
    def _process(self, files: DataFrame, marker: StreamMarker, report: BatchReport) -> None:
        ingested_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        contracts = self._bronze_contracts(files.sparkSession)
        if self.chunker is not None:
            in_workers = False
            chunks = self.chunker(files, ingested_at, contracts)
        else:
            # the mode is read here, in the driver, so LAKEHOUSE_INGEST_PARSER of this process decides
            parse = functools.partial(parse_file_batches, landing=self.landing, ingested_at=ingested_at,
                                      mode=parser_mode(), contracts=contracts)
            # a local landing zone: the source gives no content and the workers read the files (their
            # bytes never cross the JVM; ``landing_stream`` decides, ``reads_in_workers``)
            in_workers = "content" not in files.columns
            chunks = files.select(*(["path"] if in_workers else ["path", "content"])).mapInArrow(parse, CHUNKS_DDL)
        persisted = chunks = chunks.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            started = time.monotonic()
            with session_confs(files.sparkSession, worker_read_confs(files.sparkSession) if in_workers else {}):
                summary = chunks.select("kind", "table_name", "rows", "oldest_source_ts", "detail", "key_types",
                                        "key_hashes").collect()
            report.parse_seconds = round(time.monotonic() - started, 3)
            if self.chunker is None:
                vanished = self._vanished(files.sparkSession, summary, marker.batch_id, ingested_at, contracts, report)
                if vanished is not None:
                    extra, extra_summary = vanished
                    chunks, summary = chunks.unionByName(extra), [*summary, *extra_summary]
            plan = self._gather(summary, report)
            started = time.monotonic()
            self._record_schema_changes(files.sparkSession, plan.drift, plan.firsts, marker, ingested_at, report)
            self._write(chunks, plan, marker, report)
            report.write_seconds = round(time.monotonic() - started, 3)
        finally:
            persisted.unpersist()
        if plan.oldest is not None and report.commits:
            now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
            report.max_lag_seconds = round((now - plan.oldest).total_seconds(), 3)

    def _vanished(self, spark, summary: list, batch_id: int, ingested_at: dt.datetime,
                  contracts: dict[str, TableContract], report: BatchReport) -> tuple[DataFrame, list] | None:
        """The chunk rows (a DataFrame, and their summary rows) of the file_vanished dead letters of the
        landing files Spark planned for this batch but no worker read; None when every planned file was read.

        Spark drops a planned file that is gone by the time it plans or reads the batch with only a
        WARN (its file index ignores a missing root path; the read skips it, ``ignoreMissingFiles``):
        the files the checkpoint's file-source log planned are compared with the ``files`` details.
        """
        planned = ckpt.planned_files(self.checkpoint, batch_id)
        if planned is None:
            log.warning("batch %d: the checkpoint's file-source log cannot be read: files deleted after "
                        "listing would go unnoticed", batch_id)
            return None
        read: set[str] = set()
        for kind, _, _, _, detail, _, _ in summary:
            if kind == FILES:
                read.update(json.loads(detail))
        unread = sorted({relative_landing_path(path, self.landing) for path in planned} - read)
        # a file Spark planned but did not hand over that is still there is empty (Spark's scan skips
        # zero-length files): nothing to ingest, nothing lost
        missing = [name for name in unread if not landing_files.exists(landing_files.join(self.landing, name))]
        if not missing:
            return None
        report.vanished_files = missing
        log.warning("batch %d: %d landing files were deleted after the stream listed them and before they were "
                    "read (file_vanished dead letters): %s", batch_id, len(missing), ", ".join(missing[:5]))
        parser = LineParser(ingested_at, contracts)
        batch = parser.chunk_batch({}, {}, [vanished_file(name, ingested_at, parser.topics) for name in missing], 0)
        rows = [tuple(row.values()) for row in batch.to_pylist()]
        # summary rows: the chunk columns but the payload (``_process``'s select)
        summary_rows = [(kind, table, count, oldest, detail, types, hashes)
                        for kind, table, count, oldest, detail, _, types, hashes in rows]
        return spark.createDataFrame(rows, CHUNKS_DDL), summary_rows

    def _bronze_contracts(self, spark) -> dict[str, TableContract]:
        """The contracts as the bronze tables hold them (``TableContract.with_bronze_schema``)."""
        if self.bronze_columns is None:
            self.schema_versions = schema_versions(read_history(self.lake))
            self.bronze_columns = {
                table: _write_columns(contract.bronze_columns, table_state(spark, table_path(self.lake, table)), {})
                for table, contract in self.contracts.items()}
        return {table: contract.with_bronze_schema(self.bronze_columns[table])
                for table, contract in self.contracts.items()}

    def _gather(self, summary: list, report: BatchReport) -> BatchPlan:
        """The report's counts from the chunk details; per table that has rows, the columns its rows
        add to bronze or hold in a wider type (name -> Spark type), where each was first seen, and
        the Kafka offsets the rows span per (topic, partition)."""
        file_bytes: dict[str, int] = {}
        drift: dict[str, dict[str, str]] = {}
        firsts: dict[str, dict[str, FirstSeen | None]] = {}
        offsets: dict[str, dict[Partition, tuple[int, int]]] = {}
        oldest: dt.datetime | None = None
        reasons: Counter[str] = Counter()
        keys: dict[str, RecordKeys] = {}
        for kind, table, rows, source_ts, detail, types, hashes in summary:
            if kind == FILES:
                for name, size in json.loads(detail).items():
                    file_bytes[name] = file_bytes.get(name, 0) + size
                continue
            report.lines += rows
            if kind == TOMBSTONE:
                report.tombstones += rows
                continue
            known = drift.setdefault(table, {})
            keys.setdefault(table, RecordKeys()).add(types, hashes)
            if kind == EVENT:
                seen = firsts.setdefault(table, {})
                event_detail = json.loads(detail)
                ranges = offsets.setdefault(table, {})
                for topic, partition, low, high in event_detail["offsets"]:
                    key = (topic, partition)
                    ranges[key] = (min(low, ranges[key][0]), max(high, ranges[key][1])) if key in ranges \
                        else (low, high)
                for name, column_type, first in event_detail["drift"]:
                    known[name] = common_type(known[name], column_type) if name in known else column_type
                    seen[name] = earliest(seen.get(name), FirstSeen.from_json(first))
                report.events[table] = report.events.get(table, 0) + rows
                if source_ts is not None and source_ts.tzinfo is not None:
                    source_ts = source_ts.astimezone(dt.UTC).replace(tzinfo=None)
                if source_ts is not None and (oldest is None or source_ts < oldest):
                    oldest = source_ts
            elif kind == DEAD:
                report.bad_events += rows
                reasons.update(json.loads(detail))
        report.files, report.bytes = len(file_bytes), sum(file_bytes.values())
        report.dead_letters_by_reason = dict(sorted(reasons.items()))
        return BatchPlan(drift, firsts, offsets, oldest, keys)

    def _record_schema_changes(self, spark, drift: dict[str, dict[str, str]],
                               firsts: dict[str, dict[str, FirstSeen | None]], marker: StreamMarker,
                               recorded_at: dt.datetime, report: BatchReport) -> None:
        """Record in ``bronze.schema_change`` what this batch adds to or widens in each table, before
        the tables are written (in the batch's exactly-once commit: a replay records nothing twice)."""
        if self.bronze_columns is None:
            return
        changes: list[SchemaChange] = []
        versions: dict[str, int] = {}
        for table in sorted(drift):
            if not drift[table] or table not in self.bronze_columns:
                continue
            before = self.bronze_columns[table]
            after = _write_columns(before, TimelineState(None, None, False), drift[table])
            version = self.schema_versions.get(table, 1) + 1
            found = schema_changes(table, before, after, version, firsts.get(table, {}))
            if found:
                changes.extend(found)
                versions[table] = version
        if not changes:
            return
        schema = utc_timestamps(arrow_schema(self.columns[SCHEMA_CHANGE_TABLE]))
        names = [name for name, _ in self.columns[SCHEMA_CHANGE_TABLE]]
        rows = spark.createDataFrame([tuple(c.as_row(recorded_at)[n] for n in names) for c in changes],
                                     from_arrow_schema(schema))
        path = table_path(self.lake, SCHEMA_CHANGE_TABLE)
        outcome = write_once(rows, path, self._options(SCHEMA_CHANGE_TABLE), marker, SCHEMA_CHANGE_TABLE)
        self._record(outcome, report)
        if not outcome.skipped:  # a replayed batch: the history read at the start holds its versions
            report.schema_versions.update(versions)
            self.schema_versions.update(versions)

    def _write(self, chunks: DataFrame, plan: BatchPlan, marker: StreamMarker, report: BatchReport) -> None:
        """One exactly-once commit per table that received rows (bronze tables and the dead letters)."""
        drift = plan.drift
        # the biggest tables first: the small ones' writes then fill the cores beside them instead
        # of the big ones starting last and running on alone (a first snapshot's sale, listing, user)
        rows = {**report.events, DEAD_LETTER_TABLE: report.bad_events}
        tables = sorted(drift, key=lambda t: (-rows.get(t, 0), t))
        # a new lake's tables without rows in this batch are created empty after the writes start
        empty, self.uncreated = [t for t in self.uncreated if t not in drift], []
        spark = chunks.sparkSession
        with ThreadPoolExecutor(max_workers=WRITE_THREADS, thread_name_prefix="hudi-write") as pool:
            writes = [pool.submit(self._write_table, chunks, t, drift[t], marker, plan.offsets.get(t, {}),
                                  rows.get(t, 0), plan.keys.get(t, RecordKeys()), report) for t in tables]
            creations = [pool.submit(create_empty_table, spark, self.lake, t, self.metastore_uri, self.database)
                         for t in empty]
            outcomes = [write.result() for write in writes]
            report.created = [table for table, creation in zip(empty, creations, strict=True) if creation.result()]
        report.deduplicated.sort()
        for table, outcome in zip(tables, outcomes, strict=True):
            if drift[table]:
                report.drift[table] = [f"{name} {kind}" for name, kind in drift[table].items()]
            self._record(outcome, report)
        report.duplicates_in_batch = sum(report.events.values()) + report.bad_events - sum(
            outcome.rows for outcome in outcomes if outcome.rows is not None)

    def _write_table(self, chunks: DataFrame, table: str, changed: dict[str, str], marker: StreamMarker,
                     offsets: dict[Partition, tuple[int, int]], batch_rows: int, record_keys: RecordKeys,
                     report: BatchReport) -> CommitOutcome:
        """Write the batch's rows of ``table`` in the table's columns with what the batch adds or
        widens (``changed``). Columns added by earlier batches are written as nulls when this
        batch lacks them: Hudi reconciles a batch that only lacks columns, but not one that lacks
        some and adds others. A widened column is written in its wider type, which Hudi's schema
        evolution on write promotes the table column to (int -> long): the commit's schema is then
        the batch's own (``widening_options``), as Hudi's reconciliation keeps the table's narrower
        type when the batch adds no column, and fails converting the batch's values to it.
        ``batch_rows``: the table's rows in the batch before deduplication (from the chunk details);
        they set the number of decoding tasks (``DECODE_TASK_ROWS``). ``record_keys``: the hashes of
        their record keys; only the rows that may repeat a key are deduplicated (``first_delivery``),
        read from the chunks in a pass of their own."""
        path = table_path(self.lake, table)
        state = table_state(chunks.sparkSession, path)
        columns = _write_columns(self.columns[table], state, changed)
        options = self._options(table)
        if widens_table(state, columns):
            options = {**options, **WIDENING_OPTIONS}
        schema = arrow_schema(columns)
        tasks = max(1, math.ceil(batch_rows / DECODE_TASK_ROWS))
        selected = chunks.where(F.col("table_name") == table).select("table_name", "payload").coalesce(tasks)

        def decoded(selection: RowSelection | None = None) -> DataFrame:
            decode = functools.partial(decode_chunks, table=table, schema=schema, selection=selection)
            return selected.mapInArrow(decode, from_arrow_schema(utc_timestamps(schema)))

        dead_letters = table == DEAD_LETTER_TABLE
        keys = [DEAD_LETTER_KEY] if dead_letters else [*self.contracts[table].primary_key, BRONZE_ORDERING_COLUMN]
        order = _DELIVERY_ORDER[DEAD_LETTER_TABLE if dead_letters else "bronze"]
        repeated = record_keys.repeated(schema, keys)
        if repeated is None:  # the hashes cannot tell: every row may repeat a key
            unique = first_delivery(decoded(), keys, order)
        elif repeated.size:  # only the rows of keys hashed more than once are deduplicated
            # the first deliveries of the repeated keys join the other rows' partitions: each partition
            # of their shuffle's output would otherwise become a base file of a few rows (with a
            # full-size bloom filter) in a table's first write, a bulk_insert (docs/performance.md)
            unique = decoded(RowSelection(tuple(keys), repeated, repeating=False)).unionByName(
                first_delivery(decoded(RowSelection(tuple(keys), repeated, repeating=True)), keys, order)
            ).coalesce(tasks)
        else:
            unique = decoded()
        if repeated is None or repeated.size:
            report.deduplicated.append(table)
        if write_operation(options, state) != "bulk_insert":
            # read by the offset checks, the insert's passes and the count: decoded once. A
            # table's first write (a bulk_insert) reads its rows once, uncached, and Hudi counts
            # them: building the cache was ~1.5 s of a scale-1.0 snapshot's writes (docs/performance.md)
            unique = unique.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            if dead_letters:
                outcome = write_once(unique, path, options, marker, table, state)
                if not outcome.skipped and outcome.rows is None:
                    outcome.rows = unique.count()
            else:
                outcome = self._write_bronze(unique, table, path, keys, options, marker, state, offsets)
        finally:
            unique.unpersist()
        if self.bronze_columns is not None and table in self.bronze_columns:
            self.bronze_columns[table] = columns
        return outcome

    def _write_bronze(self, unique: DataFrame, table: str, path: str, keys: list[str], options: dict[str, str],
                      marker: StreamMarker, state: TimelineState,
                      offsets: dict[Partition, tuple[int, int]]) -> CommitOutcome:
        """Commit a bronze table's rows (one per record key) with the table's raised offset marks;
        rows at or below a mark go through ``resolve_late`` and the commit is an upsert. ``offsets``:
        the batch's (lowest, highest) offset per partition, from the parse (before the in-batch
        deduplication, so possibly wider: a wider range can only send rows through ``resolve_late``)."""
        if already_committed(state, marker):  # a replayed batch: the commit holds its marks already
            committed = HighWater.from_json(state.companion)
            if committed is not None:
                self.high_water[table] = committed
            return write_once(unique, path, options, marker, table, state)
        mark = self._high_water(unique.sparkSession, table, path, state)
        moved = moved_keys(unique, path, self.contracts[table].primary_key, new_partitions(mark, offsets))
        if moved:
            log.warning("%s", describe(table, mark, moved))
        late = mark.late(offsets)
        raised = mark.merged(offsets)
        metadata = {OFFSETS_METADATA_KEY: raised.to_json()}
        if not late:
            outcome = write_once(unique, path, options, marker, table, state, metadata)
        else:
            resolution = resolve_late(unique, path, keys, late, table)
            try:
                outcome = write_once(resolution.rows, path, {**options, **LATE_ROWS_OPTIONS}, marker, table,
                                     state, metadata)
            finally:
                resolution.release()
            outcome.late_rows, outcome.replaced = resolution.late_rows, resolution.replaced
            log.warning("bronze.%s: %d rows at or below offsets already committed (%s); %d stored "
                        "higher-offset copies replaced", table, resolution.late_rows,
                        ", ".join(f"{t}[{p}] {low}..{high}" for (t, p), (low, high) in sorted(late.items())),
                        resolution.replaced)
        if outcome.rows is None:  # a bulk_insert counted its rows itself (``write_once``)
            outcome.rows = unique.count()
        outcome.moved_keys = moved
        self.high_water[table] = raised
        return outcome

    def _high_water(self, spark, table: str, path: str, state: TimelineState) -> HighWater:
        """The table's offset marks: kept in memory, else from its newest marker commit, else (a table
        written before marks were recorded) recomputed from its rows once."""
        if table not in self.high_water:
            mark = HighWater.from_json(state.companion)
            if mark is None:
                mark = stored_high_water(spark, path) if state.has_records else HighWater()
            self.high_water[table] = mark
        return self.high_water[table]

    def _record(self, outcome: CommitOutcome, report: BatchReport) -> None:
        if outcome.moved_keys:
            report.moved_keys[outcome.table] = {f"{topic}[{partition}]": count
                                                for (topic, partition), count in sorted(outcome.moved_keys.items())}
        if outcome.late_rows:
            report.late_rows[outcome.table] = outcome.late_rows
            report.replaced_copies[outcome.table] = outcome.replaced
        if outcome.skipped:
            report.skipped_replays.append(outcome.table)
        elif outcome.instant:
            report.commits[outcome.table] = outcome.instant
