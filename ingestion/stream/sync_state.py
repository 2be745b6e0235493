"""Catalog sync from the stream: best effort, catching up after the Thrift server is back."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ingestion.catalog import CatalogSync, ThriftCatalog, ThriftUnavailable
from ingestion.stream.bronze import all_table_names

if TYPE_CHECKING:
    from ingestion.stream.batch import BatchReport

log = logging.getLogger("lakehouse.ingest.sync")


class CatalogSyncer:
    """Syncs the tables a batch committed, plus every table still pending from earlier batches.

    All tables start pending, so a restarted stream first catches the catalog up. When
    the Thrift server is unreachable, the tables stay pending and the next attempt is
    made at the next batch (at most every ``retry_seconds``).
    """

    def __init__(self, lake: str, host: str, port: int, *, database: str = "bronze", retry_seconds: float = 5.0,
                 grace_seconds: float = 300.0):
        self.lake = lake
        self.catalog = ThriftCatalog(host, port)
        self.sync = CatalogSync(lake, self.catalog, database=database, grace_seconds=grace_seconds)
        self.pending: set[str] = set(all_table_names())
        self.retry_seconds = retry_seconds
        self._last_failure = 0.0

    def __call__(self, report: BatchReport) -> None:
        self.run(report)

    def run(self, report: BatchReport | None = None, force: bool = False) -> None:
        if report is not None:
            self.pending |= set(report.commits)
        if not self.pending:
            return
        if not force and time.monotonic() - self._last_failure < self.retry_seconds:
            if report is not None:
                report.sync_error = "waiting to retry the Thrift server"
            return
        try:
            results = self.sync.sync_tables(sorted(self.pending))
        except ThriftUnavailable as exc:
            self._last_failure = time.monotonic()
            log.warning("catalog sync postponed: %s", exc)
            if report is not None:
                report.sync_error = str(exc)
            return
        for result in results:
            if result.status in ("synced", "unchanged", "missing", "empty"):
                self.pending.discard(result.table)
            if report is not None and result.status == "synced":
                report.synced[result.table] = result.instant or ""
            if result.status == "failed" and report is not None:
                report.sync_error = f"{result.table}: {result.message}"

    def close(self) -> None:
        self.catalog.close()
