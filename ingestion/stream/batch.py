"""One micro-batch: landed files -> lines -> parsed rows -> one Hudi insert per table -> sync.

``BatchProcessor`` is the ``foreachBatch`` function of the streaming query. It parses
the batch once (persisted), writes each bronze table that received events and the
dead-letter table with exactly-once markers, syncs the catalog (best effort: the
stream keeps going when the Thrift server is down and the sync catches up later), and
emits one JSON log line.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS, BRONZE_ORDERING_COLUMN
from ingestion.stream import checkpoint as ckpt
from ingestion.stream.bronze import (
    DEAD_LETTER_KEY,
    DEAD_LETTER_TABLE,
    DEAD_LETTER_TABLE_COLUMNS,
    bronze_config,
    bronze_contracts,
    dead_letter_config,
    table_path,
)
from ingestion.stream.commit import CommitOutcome, StreamMarker, write_once
from ingestion.stream.landing import landed_lines
from ingestion.stream.parse import (
    DEAD,
    EVENT,
    EXTRA,
    KIND,
    TABLE,
    TOMBSTONE,
    dead_column,
    parse_partition,
    parsed_schema,
    spark_ddl,
    table_column,
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
    bad_events: int = 0
    dead_letters_by_reason: dict[str, int] = field(default_factory=dict)
    tombstones: int = 0
    commits: dict[str, str] = field(default_factory=dict)
    skipped_replays: list[str] = field(default_factory=list)
    drift: dict[str, list[str]] = field(default_factory=dict)
    synced: dict[str, str] = field(default_factory=dict)
    sync_error: str | None = None
    processing_seconds: float = 0.0
    max_lag_seconds: float | None = None

    def to_json(self) -> str:
        doc = {"event": "micro_batch", **self.__dict__}
        return json.dumps(doc, sort_keys=True, default=str)


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
        self.schema = parsed_schema(self.contracts)
        self.ddl = spark_ddl(self.schema)
        self.reports: list[BatchReport] = []

    # -- foreachBatch entry point ---------------------------------------------------
    def __call__(self, files: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        report = BatchReport(batch_id=batch_id)
        query_id = ckpt.query_id(self.checkpoint / "query") or "unknown"
        marker = StreamMarker(query_id, batch_id, self.checkpoint.name)
        stats = files.agg(F.count(F.lit(1)).alias("n"), F.sum("length").alias("b")).collect()[0]
        report.files, report.bytes = int(stats["n"] or 0), int(stats["b"] or 0)
        if report.files:
            self._process(files, marker, report)
        if self.syncer is not None:
            self.syncer.run(report)
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
        lines = landed_lines(files, self.landing)
        parsed = lines.mapInArrow(functools.partial(parse_partition, ingested_at=ingested_at), self.ddl)
        parsed = parsed.persist()
        try:
            summary = (
                parsed.groupBy(KIND, TABLE, F.col("dl__reason").alias("reason"))
                .agg(F.count(F.lit(1)).alias("n"), F.min("_cdc_source_ts").alias("oldest"),
                     F.count(EXTRA).alias("drift"))
                .collect()
            )
            oldest: dt.datetime | None = None
            drift_tables = []
            for row in summary:
                report.lines += row["n"]
                if row[KIND] == EVENT:
                    report.events[row[TABLE]] = report.events.get(row[TABLE], 0) + row["n"]
                    if row["oldest"] is not None and (oldest is None or row["oldest"] < oldest):
                        oldest = row["oldest"]
                    if row["drift"]:
                        drift_tables.append(row[TABLE])
                elif row[KIND] == DEAD:
                    report.bad_events += row["n"]
                    report.dead_letters_by_reason[row["reason"]] = row["n"]
                elif row[KIND] == TOMBSTONE:
                    report.tombstones += row["n"]
            for table in sorted(report.events):
                frame = self._table_frame(parsed, table, table in drift_tables, report)
                self._record(write_once(table_path(self.lake, table), bronze_config(self.contracts[table]),
                                        frame, marker), report)
            if report.bad_events:
                self._record(write_once(table_path(self.lake, DEAD_LETTER_TABLE), dead_letter_config(),
                                        self._dead_frame(parsed), marker), report)
            if oldest is not None and report.commits:
                now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
                report.max_lag_seconds = round((now - oldest).total_seconds(), 3)
        finally:
            parsed.unpersist()

    def _record(self, outcome: CommitOutcome, report: BatchReport) -> None:
        if outcome.skipped:
            report.skipped_replays.append(outcome.table)
        elif outcome.instant:
            report.commits[outcome.table] = outcome.instant

    def _table_frame(self, parsed: DataFrame, table: str, has_drift: bool, report: BatchReport) -> DataFrame:
        contract = self.contracts[table]
        rows = parsed.filter((F.col(KIND) == EVENT) & (F.col(TABLE) == table))
        columns: list[Any] = [F.col(table_column(table, c.name)).alias(c.name) for c in contract.columns]
        drift_columns: list[str] = []
        if has_drift:
            extra = F.from_json(F.col(EXTRA), "map<string,string>")
            keys = rows.select(F.explode(F.map_keys(extra)).alias("k")).distinct().collect()
            known = set(contract.column_names) | {name for name, _ in BRONZE_METADATA_COLUMNS}
            drift_columns = sorted(r["k"] for r in keys if r["k"] not in known and _safe_name(r["k"]))
            columns += [extra.getItem(name).alias(name) for name in drift_columns]
            report.drift[table] = drift_columns
        columns += [F.col(name) for name, _ in BRONZE_METADATA_COLUMNS]
        frame = rows.select(*columns)
        return frame.dropDuplicates([*contract.primary_key, BRONZE_ORDERING_COLUMN])

    def _dead_frame(self, parsed: DataFrame) -> DataFrame:
        rows = parsed.filter(F.col(KIND) == DEAD)
        frame = rows.select(*[F.col(dead_column(name)).alias(name) for name, _ in DEAD_LETTER_TABLE_COLUMNS])
        return frame.dropDuplicates([DEAD_LETTER_KEY])


def _safe_name(name: str) -> bool:
    """Drift columns become bronze columns: only plain identifiers are carried."""
    return name.isidentifier() and name.isascii() and not name.startswith("_hoodie")
