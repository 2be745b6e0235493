"""The streaming query: landing zone or Kafka topics -> bronze, ``--once`` (availableNow) or continuous."""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from pyspark.errors import StreamingQueryException

from ingestion import files
from ingestion.cdc.contracts import topic_map
from ingestion.errors import IngestionError
from ingestion.lake_lock import LakeLockedError, LakeLockError, LakeWriterLock
from ingestion.sources.kafka import KafkaSourceOptions, kafka_stream
from ingestion.sources.landing import landing_stream, topics_root
from ingestion.stream.batch import WRITE_THREADS, BatchProcessor, BatchReport, create_empty_table
from ingestion.stream.bronze import partition_field, table_columns, table_path
from ingestion.stream.checkpoint import FILE_MANAGER_CONF, file_manager, prepare_checkpoint, query_dir
from ingestion.stream.hudi_tables import (
    ForeignBloomFiltersError,
    discard_torn_creation,
    is_created,
    refuse_foreign_bloom_filters,
)
from ingestion.stream.kafka_parse import kafka_chunker
from ingestion.stream.sync_state import CatalogSyncer

log = logging.getLogger("lakehouse.ingest")


class IngestError(IngestionError, RuntimeError):
    """The ingestion cannot start or stopped on an error (message names the cause)."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass
class IngestOptions:
    landing: str
    lake: str
    checkpoints_root: str | Path  # a local directory, or a URI (s3a://bucket/lake/_checkpoints)
    once: bool = True
    trigger_seconds: float = 1.0
    max_files_per_trigger: int | None = None
    reset: bool = False
    sync: bool = True
    thrift_host: str = "127.0.0.1"
    thrift_port: int = 10000
    database: str = "bronze"  # the catalog database of the synced views (tests use their own)
    #: a shared Hive Metastore (thrift://...): Hudi's hive sync registers each commit there; None: the
    #: Thrift server's own metastore, registered through the server (``ingestion.catalog.sync``)
    metastore_uri: str | None = None
    timeout_seconds: float | None = None  # continuous mode: stop after this long (tests, benchmarks)
    # -- the Kafka source (``kafka_bootstrap`` set): read the topics instead of the landing zone
    kafka_bootstrap: str | None = None  # HOST:PORT[,HOST:PORT...]
    topics: tuple[str, ...] | None = None  # default: every topic of the table contracts
    starting_offsets: str = "earliest"  # earliest, latest or Spark's per-partition JSON
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True  # offsets lost to retention stop the stream with a clear error
    schema_registry_url: str | None = None  # Confluent-compatible REST API for wire-format Avro values
    #: a registry that does not answer is asked again (backoff) this long before a record is a dead letter
    schema_registry_wait_seconds: float = 60.0
    kafka_timeout_ms: int = 60_000  # one broker request; Spark retries an offset request 3 times
    kafka_restarts: int = 3  # a query failed because the broker stopped answering is started again ...
    kafka_restart_seconds: float = 2.0  # ... after 2 s, 4 s, 6 s, then the ingestion fails

    @property
    def source_location(self) -> str:
        """What the checkpoint is keyed by with the lake: the landing zone, or ``kafka://<bootstrap>``."""
        return f"kafka://{self.kafka_bootstrap}" if self.kafka_bootstrap else self.landing

    def kafka_topics(self) -> tuple[str, ...]:
        return self.topics or tuple(sorted(topic_map()))

    def validate(self) -> None:
        if self.kafka_bootstrap is not None:
            self._validate_kafka()
            return
        if self.max_files_per_trigger is not None and self.max_files_per_trigger <= 0:
            raise IngestError(f"--max-files-per-trigger must be a positive integer, got {self.max_files_per_trigger}")
        if self.trigger_seconds <= 0:
            raise IngestError(f"--trigger must be a positive number of seconds, got {self.trigger_seconds}")
        if self.max_offsets_per_trigger is not None:
            raise IngestError("--max-offsets-per-trigger applies to the Kafka source (--kafka-bootstrap)")
        try:
            landed = files.exists(topics_root(self.landing))
        except files.FilesError as exc:
            raise IngestError(f"landing zone {self.landing}: {exc}",
                              "for s3:// check the bucket, the AWS credentials, region and AWS_ENDPOINT_URL") from None
        if not landed:
            hint = "run 'lakehouse simulate' first or point --landing at a Kafka Connect S3 sink"
            if files.is_remote(self.landing):
                hint += "; for s3:// check the bucket name, the AWS credentials, region and AWS_ENDPOINT_URL"
            raise IngestError(f"landing zone {self.landing}: no topics/ directory", hint)


    def _validate_kafka(self) -> None:
        if self.max_files_per_trigger:
            raise IngestError("--max-files-per-trigger applies to the landing zone",
                              "use --max-offsets-per-trigger with --kafka-bootstrap")
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger <= 0:
            raise IngestError("--max-offsets-per-trigger must be a positive integer, "
                              f"got {self.max_offsets_per_trigger}")
        if self.trigger_seconds <= 0:
            raise IngestError(f"--trigger must be a positive number of seconds, got {self.trigger_seconds}")
        for address in (self.kafka_bootstrap or "").split(","):
            host, _, port = address.strip().rpartition(":")
            if not host or not port.isdigit():
                raise IngestError(f"--kafka-bootstrap: {address!r} is not HOST:PORT", "e.g. 127.0.0.1:9092")
        if not self.kafka_topics():
            raise IngestError("no topics to read: the table contracts name none and --topics is empty")
        if self.schema_registry_url is not None and not self.schema_registry_url.startswith(("http://", "https://")):
            raise IngestError(f"--schema-registry-url must be an http(s) URL, got {self.schema_registry_url!r}")
        if self.schema_registry_wait_seconds < 0:
            raise IngestError(f"--schema-registry-wait must be >= 0 seconds, got {self.schema_registry_wait_seconds}")


@dataclass
class IngestSummary:
    checkpoint: str
    reports: list[BatchReport] = field(default_factory=list)

    @property
    def events(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for report in self.reports:
            for table, count in report.events.items():
                total[table] = total.get(table, 0) + count
        return total

    @property
    def bad_events(self) -> int:
        return sum(r.bad_events for r in self.reports)


def run_ingest(options: IngestOptions, *, spark=None, log_stream: TextIO | None = sys.stdout,
               on_report: Callable[[BatchReport], None] | None = None,
               stop_event: threading.Event | None = None) -> IngestSummary:
    """Run the streaming ingestion until done (``once``), timeout or ``stop_event``.

    The lake's writer lock is held from before the checkpoint is read (or reset) to the end: a
    second writer on the lake fails (an ``IngestError`` naming the holder) before it reads or writes anything.
    """
    options.validate()
    lock = LakeWriterLock(options.lake)
    try:
        lock.acquire()
    except (LakeLockedError, LakeLockError) as exc:
        raise IngestError(str(exc), exc.hint) from None
    try:
        return _run_locked(options, lock, spark=spark, log_stream=log_stream, on_report=on_report,
                           stop_event=stop_event)
    finally:
        lock.release()


def _run_locked(options: IngestOptions, lock: LakeWriterLock, *, spark, log_stream: TextIO | None,
                on_report: Callable[[BatchReport], None] | None,
                stop_event: threading.Event | None) -> IngestSummary:
    checkpoint = _prepare_checkpoint(options)
    if spark is None:
        from ingestion.spark import local_spark_session

        spark = local_spark_session("lakehouse-ingest")
    metastore_uri = options.metastore_uri if options.sync else None
    missing = _open_lake(spark, options.lake, metastore_uri, options.database, create=not options.once)
    syncer = None
    if options.sync and metastore_uri is None:
        syncer = CatalogSyncer(options.lake, options.thrift_host, options.thrift_port, database=options.database)
    if options.kafka_bootstrap is not None:
        write_kafka_source(checkpoint, options.kafka_bootstrap, options.kafka_topics())
        processor = BatchProcessor(options.source_location, options.lake, checkpoint, syncer=syncer,
                                   metastore_uri=metastore_uri, database=options.database,
                                   log_stream=log_stream, on_report=on_report, before_batch=lock.check,
                                   chunker=kafka_chunker(options.schema_registry_url,
                                                         options.schema_registry_wait_seconds))
        source = kafka_stream(spark, KafkaSourceOptions(
            options.kafka_bootstrap, options.kafka_topics(), options.starting_offsets,
            options.max_offsets_per_trigger, options.fail_on_data_loss, options.kafka_timeout_ms))
    else:
        processor = BatchProcessor(options.landing, options.lake, checkpoint, syncer=syncer,
                                   metastore_uri=metastore_uri, database=options.database,
                                   log_stream=log_stream, on_report=on_report, before_batch=lock.check)
        source = landing_stream(spark, options.landing, max_files_per_trigger=options.max_files_per_trigger)
    # --once: a new lake's first batch creates the tables it has no rows for beside its writes (the
    # others are created by their writes); a continuous stream creates them all before it starts
    processor.uncreated = missing
    if syncer is not None:
        syncer.hold(missing)
    writer = source.writeStream.foreachBatch(processor).option("checkpointLocation", query_dir(checkpoint))
    _use_file_manager(spark, checkpoint)
    if options.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{options.trigger_seconds} seconds")
    if syncer is not None:
        syncer.start()  # sync in the background: a slow or absent Thrift server never delays a batch
    query = None
    restarts = 0
    try:
        while True:
            query = writer.start()
            _await(query, options, stop_event)
            error = query.exception()
            if error is None or not _retry_kafka(str(error), options, restarts):
                break
            restarts += 1
            log.warning("the Kafka broker at %s stopped answering: restarting the query from its checkpoint "
                        "(%d of %d)", options.kafka_bootstrap, restarts, options.kafka_restarts)
            time.sleep(options.kafka_restart_seconds * restarts)
        if query.exception() is None and processor.uncreated:  # no batch wrote or created them
            created = _with_lake_errors(spark, options.lake, metastore_uri, lambda session: create_missing_tables(
                session, options.lake, metastore_uri, options.database, processor.uncreated))
            if syncer is not None:
                syncer.queue(created)
    except KeyboardInterrupt:
        log.info("stopping the stream (interrupted)")
    finally:
        if query is not None and query.isActive:
            query.stop()
        if syncer is not None:
            if syncer.stop():
                syncer.run(force=True)  # catch the catalog up with the last commits
            syncer.close()
    error = query.exception() if query is not None else None
    if error is not None:
        if options.kafka_bootstrap is not None:
            kafka_error = kafka_failure(str(error), options.kafka_bootstrap, restarts)
            if kafka_error is not None:
                raise kafka_error
        storage_error = s3_failure(str(error))
        if storage_error is not None:
            raise storage_error
        catalog_error = metastore_failure(str(error), metastore_uri)
        if catalog_error is not None:
            raise catalog_error
        raise IngestError(f"the streaming query failed: {root_cause(str(error))}",
                          "the checkpoint is intact: a restart resumes the failed batch; --verbose for details")
    return IngestSummary(checkpoint, processor.reports)


def _await(query, options: IngestOptions, stop_event: threading.Event | None) -> None:
    """Wait for the query: to its end (``once``), or until timeout / ``stop_event`` / a failure."""
    try:
        if options.once:
            query.awaitTermination()
        else:
            _wait(query, options.timeout_seconds, stop_event)
    except StreamingQueryException:
        pass  # the query failed: the caller reads query.exception()


def _retry_kafka(message: str, options: IngestOptions, restarts: int) -> bool:
    """Whether a failed Kafka query is started again: the broker stopped answering, restarts left."""
    return (options.kafka_bootstrap is not None and restarts < options.kafka_restarts
            and any(marker in message for marker in _BROKER_GONE)
            and not any(marker in message for marker in _DATA_LOSS))


def _open_lake(spark, lake: str, metastore_uri: str | None = None, database: str = "bronze", *,
               create: bool = True) -> list[str]:
    """Find the bronze tables the lake lacks and create them (``create``) or return them (to be
    created by the first batch); with a shared metastore, register the others there. A lake or a
    metastore that cannot be reached is one clear IngestError."""

    def open_tables(spark) -> list[str]:
        # a creation a kill cut short (no hoodie.properties, or no completed first commit) is made again
        missing = [table for table in table_columns() if not is_created(spark, table_path(lake, table))]
        for table in missing:
            discard_torn_creation(spark, table_path(lake, table))
        try:
            refuse_foreign_bloom_filters(spark, [table_path(lake, table) for table in table_columns()
                                                 if table not in missing])
        except ForeignBloomFiltersError as exc:
            raise IngestError(str(exc), exc.hint) from None
        if create:
            create_missing_tables(spark, lake, metastore_uri, database, missing)
        if metastore_uri:
            from ingestion.catalog.hive_sync import sync_table

            for table in table_columns():
                if table not in missing:
                    sync_table(spark, table_path(lake, table), table, metastore_uri, database,
                               partition_field=partition_field(table))
        return [] if create else missing

    return _with_lake_errors(spark, lake, metastore_uri, open_tables)


def _with_lake_errors(spark, lake: str, metastore_uri: str | None, action: Callable[[object], list[str]]) -> list[str]:
    """``action(spark)``, a Java failure of the lake or the metastore turned into one clear IngestError."""
    from py4j.protocol import Py4JJavaError

    try:
        return action(spark)
    except Py4JJavaError as exc:
        cause = str(exc.java_exception).splitlines()[0]
        if metastore_uri and any(marker in cause for marker in _META_SYNC_FAILED):
            raise IngestError(f"metastore {metastore_uri}: cannot register the bronze tables: {cause}",
                              "start it ('lakehouse metastore start') or unset LAKEHOUSE_METASTORE_URI") from None
        raise IngestError(f"lake {lake}: cannot open or create the bronze tables: {cause}",
                          "check the lake path, and for s3a:// the bucket, the AWS credentials, region and "
                          "AWS_ENDPOINT_URL") from None


def create_missing_tables(spark, lake: str, metastore_uri: str | None = None, database: str = "bronze",
                          tables: list[str] | None = None) -> list[str]:
    """Create every bronze table (and the dead letters) that does not exist yet (of ``tables``,
    default all), empty and typed (and registered in the shared metastore, when there is one).

    Each creation is an empty Hudi commit, a Spark job of fixed cost: after the first (which
    may create the metastore database alone), the others run ``WRITE_THREADS`` at a time, as
    a batch's writes do.
    """
    names = list(table_columns()) if tables is None else list(tables)

    def create(table: str) -> bool:
        return create_empty_table(spark, lake, table, metastore_uri, database)

    done = [create(names[0])] if names else []
    with ThreadPoolExecutor(max_workers=WRITE_THREADS, thread_name_prefix="hudi-create") as pool:
        done += list(pool.map(create, names[1:]))
    created = [table for table, was_created in zip(names, done, strict=True) if was_created]
    if created:
        log.info("created empty bronze tables: %s", ", ".join(created))
    return created


def _prepare_checkpoint(options: IngestOptions) -> str:
    """The checkpoint of the (source, lake) pair, created (or reset); a root that cannot be written is
    one clear IngestError."""
    try:
        return prepare_checkpoint(options.checkpoints_root, options.source_location, options.lake,
                                  reset=options.reset)
    except (files.FilesError, OSError) as exc:
        raise IngestError(f"checkpoints {options.checkpoints_root}: {exc}",
                          "set LAKEHOUSE_CHECKPOINTS to a writable directory or s3:// prefix; for s3:// check "
                          "the bucket, the AWS credentials, region and AWS_ENDPOINT_URL") from None


def _use_file_manager(spark, checkpoint: str) -> None:
    """Start the query with the checkpoint file manager its location needs (``checkpoint.file_manager``)."""
    manager = file_manager(checkpoint)
    if manager is None:
        spark.conf.unset(FILE_MANAGER_CONF)
    else:
        spark.conf.set(FILE_MANAGER_CONF, manager)


#: Spark's words when offsets it still needs are no longer in the topic (retention, a deleted topic).
_DATA_LOSS = ("Some data may have been lost", "data loss", "OffsetOutOfRange", "PARTITION_OFFSET_CHANGED",
              "DATA_LOSS", "were lost", "not available in Kafka any more")
#: ... and when the broker does not answer.
_BROKER_GONE = ("TimeoutException", "Timed out waiting", "Connection refused", "DisconnectException",
                "could not be established", "not available for the consumer")


def kafka_failure(message: str, bootstrap: str, restarts: int = 0) -> IngestError | None:
    """A one-line IngestError for the Kafka failures an operator can act on (None: another failure)."""
    if any(marker in message for marker in _DATA_LOSS):
        where = re.search(r"TopicPartition\(([^)]*)\)|partition[s]? ([\w.\-]+-\d+)", message)
        detail = f" ({where.group(1) or where.group(2)})" if where else ""
        return IngestError(
            f"Kafka offsets the checkpoint still needs were lost to retention{detail}: records between the last "
            "committed batch and the earliest offset in the topic are gone",
            "re-ingest from the earliest offsets with --reset (bronze drops what it already has), or accept the gap "
            "with --no-fail-on-data-loss; give the topic a longer retention.ms")
    if any(marker in message for marker in _BROKER_GONE):
        return IngestError(
            f"the Kafka broker at {bootstrap} stopped answering (the query was started again {restarts} times "
            "from its checkpoint, then gave up)",
            "start the broker again, then re-run the ingestion: it resumes from the checkpoint, nothing committed "
            "is lost or written twice")
    return None


#: S3A's and the AWS SDK's words for a request S3 refused or never answered, after its retries.
_S3_FAILED = re.compile(r"(?:(\w+) on (s3a?://\S+?):? )?(?:com\.amazonaws\.\S+|org\.apache\.hadoop\.fs\.s3a\.\w+): "
                        r"(.*?)(?: \(Service: Amazon S3; Status Code: (\d+))?[;)\n]")


def s3_failure(message: str) -> IngestError | None:
    """A one-line IngestError when the query failed because S3 refused or did not answer (None: another
    failure): the operation, the location and S3's status."""
    if "com.amazonaws." not in message and "org.apache.hadoop.fs.s3a." not in message:
        return None
    found = _S3_FAILED.search(message)
    if found is None:
        return None
    operation, location, cause, status = found.groups()
    where = f" ({operation} {location})" if operation and location else ""
    answer = f"HTTP {status}: {cause.strip()}" if status else cause.strip()
    return IngestError(
        f"S3 did not complete a request after S3A's retries{where}: {answer}",
        "once S3 answers again (check the bucket, the AWS credentials, region and AWS_ENDPOINT_URL), re-run the "
        "ingestion: it resumes from the checkpoint, nothing committed is lost or written twice")


_META_SYNC_FAILED = ("HoodieMetaSyncException", "HoodieHiveSyncException", "Could not sync using the meta sync class")


def metastore_failure(message: str, metastore_uri: str | None) -> IngestError | None:
    """A one-line IngestError when the query failed because Hudi's hive sync could not reach the shared
    metastore after a commit (None: another failure): the innermost cause."""
    if metastore_uri is None or not any(marker in message for marker in _META_SYNC_FAILED):
        return None
    lines = [line.strip() for line in message.replace("\\n", "\n").splitlines()]
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    return IngestError(
        f"metastore {metastore_uri}: Hudi's hive sync failed after a commit: {causes[-1] if causes else lines[0]}",
        "the commit is in the lake and the checkpoint intact: once the metastore answers ('lakehouse metastore "
        "status'), run the ingestion again; it registers every table at start and resumes")


def write_kafka_source(checkpoint: str, bootstrap: str, topics: tuple[str, ...]) -> None:
    """``kafka.json`` beside ``pair.json``: what ``lakehouse status`` asks the broker about (the lag)."""
    files.write_text(files.join(checkpoint, "kafka.json"),
                     json.dumps({"bootstrap": bootstrap, "topics": list(topics)}, indent=2) + "\n")


def root_cause(message: str) -> str:
    """The innermost Python error line of a streaming query failure, else its first line."""
    lines = [line.strip() for line in message.replace("\\n", "\n").splitlines()]
    python_errors = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b.*: ", line)
                     and not line.startswith(("org.", "java.", "py4j", "sorg"))]
    return python_errors[-1] if python_errors else (lines[0] if lines else message)


def _wait(query, timeout_seconds: float | None, stop_event: threading.Event | None) -> None:
    waited = 0.0
    while query.isActive:
        if stop_event is not None and stop_event.is_set():
            return
        if timeout_seconds is not None and waited >= timeout_seconds:
            return
        query.awaitTermination(0.5)
        waited += 0.5
