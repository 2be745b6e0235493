"""Catalog sync from the stream: best effort, off the batch path, catching up after outages.

Registers every bronze table once (``ingestion.catalog.sync``); a table that could not be
registered (the Thrift server down) stays pending and is retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ingestion.catalog import CatalogSync, ThriftCatalog, ThriftUnavailable
from ingestion.stream.bronze import all_table_names

log = logging.getLogger("lakehouse.ingest.sync")


@dataclass(frozen=True)
class SyncNews:
    """What the syncer did since a batch last asked: the tables synced (name -> instant) and the last error."""

    synced: dict[str, str]
    error: str | None


class CatalogSyncer:
    """Syncs the tables the batches committed, plus every table still pending.

    All tables start pending, so a restarted stream first catches the catalog up. When
    the Thrift server is unreachable, the tables stay pending and are retried (at most
    every ``retry_seconds``). ``run`` syncs in the caller's thread; after ``start()`` a
    background thread does it, so a slow or absent Thrift server never delays a
    micro-batch (``notify`` hands it the committed tables).
    """

    def __init__(self, lake: str, host: str, port: int, *, database: str = "bronze", retry_seconds: float = 5.0):
        self.lake = lake
        self.catalog = ThriftCatalog(host, port)
        self.sync = CatalogSync(lake, self.catalog, database=database)
        #: tables to register or refresh, with the newest commit instant known (None: unknown)
        self.pending: dict[str, str | None] = dict.fromkeys(all_table_names())
        self.retry_seconds = retry_seconds
        self.last_error: str | None = None
        self.synced: dict[str, str] = {}  # synced since the last ``take_synced``
        self._last_failure = 0.0
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- background mode --------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="catalog-sync", daemon=True)
        self._thread.start()

    def hold(self, tables: list[str]) -> None:
        """Leave ``tables`` (not in the lake yet) out until a batch writes or creates them: the server
        finds no schema in a table whose first commit is still being written."""
        with self._lock:
            for table in tables:
                self.pending.pop(table, None)

    def queue(self, tables: list[str]) -> None:
        """Sync ``tables`` (created outside a batch) on the next pass."""
        with self._lock:
            for table in tables:
                self.pending.setdefault(table, None)
        self._wake.set()

    def notify(self, commits: Mapping[str, str], created: Iterable[str], drift: Iterable[str]) -> SyncNews:
        """Queue a batch's tables: ``commits`` (table -> instant) and ``created`` (empty); those of ``drift``
        (columns added or widened) that it committed are registered again (their metastore schema). What
        was synced, and any error, since the last batch."""
        with self._lock:
            for table in drift:
                if table in commits:
                    self.sync.schema_changed(table)
            self.pending.update(commits)
            for table in created:
                self.pending.setdefault(table, None)
            news = SyncNews(self.take_synced(), self.last_error)
        self._wake.set()
        return news

    def take_synced(self) -> dict[str, str]:
        with self._lock:
            synced, self.synced = self.synced, {}
            return synced

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=self.retry_seconds)
            self._wake.clear()
            if self._stop.is_set():
                break
            self.run(force=True)

    def stop(self, timeout: float = 300.0) -> bool:
        """Stop the background thread; False when it is still stuck in a sync after ``timeout``."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            if self._thread.is_alive():
                log.warning("catalog sync thread still busy after %.0fs; the next start catches up", timeout)
                return False
            self._thread = None
        return True

    # -- one pass -----------------------------------------------------------------------
    def run(self, force: bool = False) -> None:
        """One pass over the pending tables (``force``: even within ``retry_seconds`` of a failure)."""
        with self._lock:
            if not self.pending:
                return
            if not force and time.monotonic() - self._last_failure < self.retry_seconds:
                return
            # Take the pending set: a commit notified while this pass runs stays pending for the next.
            tables, self.pending = dict(sorted(self.pending.items())), {}
        try:
            results = self.sync.sync_tables(tables)
        except ThriftUnavailable as exc:
            with self._lock:
                self.pending = {**tables, **self.pending}
            self._last_failure = time.monotonic()
            self.last_error = str(exc)
            log.warning("catalog sync postponed: %s", exc)
            return
        with self._lock:
            self.last_error = None
            for result in results:
                if result.status not in ("registered", "unchanged"):
                    self.pending.setdefault(result.table, result.instant)
                else:
                    self.synced[result.table] = result.instant or ""
                if result.status == "failed":
                    self.last_error = f"{result.table}: {result.message}"

    def close(self) -> None:
        self.stop()
        self.catalog.close()
