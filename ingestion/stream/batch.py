"""One micro-batch: landed files -> lines -> parsed chunks -> one Hudi insert per table -> sync.

``BatchProcessor`` is the ``foreachBatch`` function of the streaming query. Parsing runs
in the Python workers (``ingestion.stream.parse``); the driver collects the compact Arrow
chunks, concatenates them per table, drops in-batch duplicates (same record key), writes
each bronze table that received events and the dead-letter table with exactly-once
markers, syncs the catalog (best effort: the stream keeps going when the Thrift server
is down, and the sync catches up later), and emits one JSON log line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from ingestion.cdc.contracts import BRONZE_ORDERING_COLUMN
from ingestion.sources.landing import reads_in_workers
from ingestion.stream import checkpoint as ckpt
from ingestion.stream.bronze import (
    DEAD_LETTER_KEY,
    DEAD_LETTER_TABLE,
    bronze_config,
    bronze_contracts,
    dead_letter_config,
    table_path,
)
from ingestion.stream.commit import CommitOutcome, StreamMarker, write_once
from ingestion.stream.fast_parse import parser_mode
from ingestion.stream.forked_writes import run_shares
from ingestion.stream.parse import CHUNKS_DDL, EVENT, FILES, TOMBSTONE, from_ipc, parse_file_batches
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
    bad_events: int = 0
    dead_letters_by_reason: dict[str, int] = field(default_factory=dict)
    tombstones: int = 0
    commits: dict[str, str] = field(default_factory=dict)
    skipped_replays: list[str] = field(default_factory=list)
    drift: dict[str, list[str]] = field(default_factory=dict)
    synced: dict[str, str] = field(default_factory=dict)
    sync_error: str | None = None
    processing_seconds: float = 0.0
    parse_seconds: float = 0.0  # landed files -> parsed chunks collected in the driver (Spark + workers)
    write_seconds: float = 0.0  # the Hudi commits of the batch
    max_lag_seconds: float | None = None

    def to_json(self) -> str:
        doc = {"event": "micro_batch", **self.__dict__}
        return json.dumps(doc, sort_keys=True, default=str)


def dedupe(table: pa.Table, keys: list[str]) -> pa.Table:
    """The first row of every record key (input order), in input order."""
    if table.num_rows < 2:
        return table
    indexed = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    firsts = indexed.group_by(keys, use_threads=False).aggregate([("__row", "min")]).column("__row_min")
    if len(firsts) == table.num_rows:
        return table
    return table.take(pc.take(firsts, pc.sort_indices(firsts)))


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
    def __init__(self, landing: str, lake: str, checkpoint: Path, *, syncer: CatalogSyncer | None = None,
                 log_stream: TextIO | None = sys.stdout,
                 on_report: Callable[[BatchReport], None] | None = None):
        self.landing = landing
        self.lake = lake
        self.checkpoint = checkpoint
        self.syncer = syncer
        self.log_stream = log_stream
        self.on_report = on_report
        self.contracts = bronze_contracts()
        self.reports: list[BatchReport] = []

    # -- foreachBatch entry point ---------------------------------------------------
    def __call__(self, files: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        report = BatchReport(batch_id=batch_id)
        query_id = ckpt.query_id(self.checkpoint) or "unknown"
        marker = StreamMarker(query_id, batch_id, self.checkpoint.name)
        self._process(files, marker, report)
        if self.syncer is not None:
            self.syncer.notify(report)
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
        # the mode is read here, in the driver, so LAKEHOUSE_INGEST_PARSER of this process decides
        parse = functools.partial(parse_file_batches, landing=self.landing, ingested_at=ingested_at,
                                  mode=parser_mode())
        # a local landing zone: the workers read the files (their bytes never cross the JVM)
        in_workers = reads_in_workers(self.landing)
        chunks = files.select(*(["path"] if in_workers else ["path", "content"])).mapInArrow(parse, CHUNKS_DDL)
        started = time.monotonic()
        with session_confs(files.sparkSession, worker_read_confs(files.sparkSession) if in_workers else {}):
            collected = chunks.toArrow()
        report.parse_seconds = round(time.monotonic() - started, 3)
        per_table, oldest = self._gather(collected, report)
        started = time.monotonic()
        self._write(per_table, marker, report)
        report.write_seconds = round(time.monotonic() - started, 3)
        if oldest is not None and report.commits:
            now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
            report.max_lag_seconds = round((now - oldest).total_seconds(), 3)

    def _gather(self, collected: pa.Table, report: BatchReport) -> tuple[dict[str, list[pa.Table]], dt.datetime | None]:
        """The collected chunk rows -> per-table Arrow chunks (in collection order) and the report's counts."""
        file_bytes: dict[str, int] = {}
        per_table: dict[str, list[pa.Table]] = {}
        oldest: dt.datetime | None = None
        reasons: Counter[str] = Counter()
        for kind, table, rows, source_ts, payload in zip(
            *(collected.column(n).to_pylist() for n in ("kind", "table_name", "rows", "oldest_source_ts",
                                                        "payload")), strict=True,
        ):
            if kind == FILES:
                for name, size in json.loads(payload).items():
                    file_bytes[name] = file_bytes.get(name, 0) + size
                continue
            report.lines += rows
            if kind == TOMBSTONE:
                report.tombstones += rows
                continue
            chunk = from_ipc(payload)
            per_table.setdefault(table, []).append(chunk)
            if kind == EVENT:
                report.events[table] = report.events.get(table, 0) + rows
                if source_ts is not None and source_ts.tzinfo is not None:
                    source_ts = source_ts.astimezone(dt.UTC).replace(tzinfo=None)
                if source_ts is not None and (oldest is None or source_ts < oldest):
                    oldest = source_ts
            else:
                report.bad_events += rows
                reasons.update(chunk.column("reason").to_pylist())
        report.files, report.bytes = len(file_bytes), sum(file_bytes.values())
        report.dead_letters_by_reason = dict(sorted(reasons.items()))
        return per_table, oldest

    def _write(self, per_table: dict[str, list[pa.Table]], marker: StreamMarker, report: BatchReport) -> None:
        """One exactly-once commit per table that received rows: bronze tables by name, then the dead letters.

        Big batches write on two cores: a forked child takes about half the rows
        (``ingestion.stream.forked_writes``; a thread pool was measured at no gain).
        """
        jobs = [table for table in sorted(per_table) if table != DEAD_LETTER_TABLE]
        if DEAD_LETTER_TABLE in per_table:
            jobs.append(DEAD_LETTER_TABLE)
        sizes = {table: sum(chunk.num_rows for chunk in per_table[table]) for table in jobs}
        results = run_shares(jobs, sizes, lambda table: self._write_table(table, per_table[table], marker))
        for table, (drift, duplicates, outcome) in zip(jobs, results, strict=True):
            if drift:
                report.drift[table] = drift
            report.duplicates_in_batch += duplicates
            self._record(outcome, report)

    def _write_table(self, table: str, chunks: list[pa.Table], marker: StreamMarker
                     ) -> tuple[list[str], int, CommitOutcome]:
        """(drift columns, in-batch duplicates dropped, commit outcome) of one table's rows of the batch."""
        if table == DEAD_LETTER_TABLE:
            data = dedupe(pa.concat_tables(chunks), [DEAD_LETTER_KEY])
            return [], 0, write_once(table_path(self.lake, table), dead_letter_config(), data, marker)
        contract = self.contracts[table]
        data = pa.concat_tables(chunks, promote_options="default")
        known = {c for c, _ in contract.bronze_columns}
        drift = [n for n in data.column_names if n not in known]
        unique = dedupe(data, [*contract.primary_key, BRONZE_ORDERING_COLUMN])
        outcome = write_once(table_path(self.lake, table), bronze_config(contract), unique, marker)
        return drift, data.num_rows - unique.num_rows, outcome

    def _record(self, outcome: CommitOutcome, report: BatchReport) -> None:
        if outcome.skipped:
            report.skipped_replays.append(outcome.table)
        elif outcome.instant:
            report.commits[outcome.table] = outcome.instant

