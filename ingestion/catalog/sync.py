"""Register the bronze Hudi tables in the metastore through the Thrift server, and keep it current.

The embedded Derby metastore admits one JVM, the Thrift server's, so the ingestion registers
each bronze table through that server: ``CREATE TABLE IF NOT EXISTS bronze.<table> USING hudi
LOCATION '<path>'`` once per table (Spark's Hudi catalog takes the schema, record key and
partitioning from the table's own ``.hoodie``). Hudi tables need no partition registration:
Hudi's file index lists them from the table's timeline at each query, and the managed Thrift
server keeps no relation cache (``spark.sql.filesourceTableRelationCacheSize=0``, see
``lakehouse.services.thrift``), so every query, in any session, sees the latest commit with
nothing to refresh. A name registered otherwise (a view left by an older checkout, a table
at another location) is dropped (metadata only: the tables are external) and registered again.

The metastore keeps the schema a table had when it was registered, while queries resolve
Hudi's latest: a table whose schema the ingestion evolved (``schema_changed``) is registered
again, so DESCRIBE, dbt's catalog and the docs site show its new columns and types.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ingestion import files
from ingestion.catalog.identifiers import quote_identifier, quote_location
from ingestion.catalog.thrift_client import ThriftCatalog, ThriftUnavailable

log = logging.getLogger(__name__)

DATABASE = "bronze"
#: The Hudi table version the lake is written at (ingestion.stream.bronze).
TABLE_VERSION = "6"


def table_location(lake: str | Path, table: str) -> str:
    """``<lake>/bronze/<table>``: a local path or a URI."""
    return f"{str(lake).rstrip('/')}/bronze/{table}"


def _same_location(registered: str, wanted: str) -> bool:
    def normal(value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme in ("", "file"):
            return str(Path(parsed.path if parsed.scheme else value).resolve())
        return value.rstrip("/")

    return normal(registered) == normal(wanted)


@dataclass
class SyncResult:
    table: str
    status: str  # registered | unchanged | missing | failed
    instant: str | None = None  # the newest commit the caller knew of when it asked
    seconds: float = 0.0
    message: str = ""


class CatalogSync:
    """Registers the bronze tables of one lake behind one Thrift server (once per table and process)."""

    def __init__(self, lake: str | Path, catalog: ThriftCatalog, *, database: str = DATABASE):
        self.lake = str(lake)
        self.catalog = catalog
        self.database = database
        self._registered: set[str] = set()  # registered at the right location, by this process
        self._schema_changed: set[str] = set()  # evolved since they were registered: register again

    def schema_changed(self, table: str) -> None:
        """The ingestion added or widened columns of ``table``: its next sync registers it again."""
        self._schema_changed.add(table)
        self._registered.discard(table)

    def registration(self, table: str) -> tuple[str | None, str | None]:
        """(type, location) of ``<database>.<table>`` in the metastore; (None, None) when absent."""
        db, name = quote_identifier(self.database), quote_identifier(table)
        try:
            rows = self.catalog.execute(f"DESCRIBE TABLE EXTENDED {db}.{name}")
        except ThriftUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - the server's "not found" error
            if "not found" in str(exc).lower() or "TABLE_OR_VIEW_NOT_FOUND" in str(exc):
                return None, None
            raise
        info = {str(row[0]).strip(): str(row[1]).strip() for row in rows if row and row[0] and row[1] is not None}
        return info.get("Type"), info.get("Location")

    def sync_table(self, table: str, instant: str | None = None) -> SyncResult:
        started = time.monotonic()
        location = table_location(self.lake, table)
        if table in self._registered:  # before the look at the table: no request per pass on S3
            return SyncResult(table, "unchanged", instant, time.monotonic() - started)
        if not files.holds_hudi_table(location):
            return SyncResult(table, "missing", instant, message=f"no Hudi table at {location}")
        db, name = quote_identifier(self.database), quote_identifier(table)
        self.catalog.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
        kind, registered = self.registration(table)
        stale = kind is not None and table in self._schema_changed
        if kind is not None and (stale or kind == "VIEW" or registered is None
                                 or not _same_location(registered, location)):
            log.info("re-registering %s.%s (was %s at %s%s)", self.database, table, kind, registered,
                     "; its schema changed" if stale else "")
            self.catalog.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} IF EXISTS {db}.{name}")
            kind = None
        if kind is None:
            # the table version pinned in the catalog too: a SQL write through the server
            # (none is expected) must not upgrade a version-6 table that Athena/EMR 0.x read
            self.catalog.execute(
                f"CREATE TABLE IF NOT EXISTS {db}.{name} USING hudi LOCATION {quote_location(location)} "
                f"TBLPROPERTIES ('hoodie.write.table.version' = '{TABLE_VERSION}')")
        self._registered.add(table)
        self._schema_changed.discard(table)
        return SyncResult(table, "registered", instant, time.monotonic() - started)

    def sync_tables(self, tables: dict[str, str | None] | Iterable[str]) -> list[SyncResult]:
        """Sync each table (optionally with the newest commit known); a failing table is reported
        and the others still sync. Raises ``ThriftUnavailable`` when the server cannot be reached."""
        items = tables.items() if isinstance(tables, dict) else ((t, None) for t in tables)
        results = []
        for table, instant in items:
            try:
                results.append(self.sync_table(table, instant))
            except ThriftUnavailable:
                self._registered.clear()
                raise
            except Exception as exc:  # noqa: BLE001 - one table must not block the others
                log.warning("catalog sync of %s failed: %s", table, exc)
                self._registered.discard(table)
                results.append(SyncResult(table, "failed", instant, message=f"{type(exc).__name__}: {exc}"))
        return results


def registered_tables(catalog: ThriftCatalog, database: str = DATABASE) -> set[str]:
    """The tables and views of ``database`` in the metastore (empty when it does not exist)."""
    db = quote_identifier(database)
    catalog.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    return {str(row[1]) for row in catalog.execute(f"SHOW TABLES IN {db}") if len(row) > 2 and not row[2]}


def discover_tables(lake: str | Path) -> list[str]:
    """Names of the Hudi tables under a local ``<lake>/bronze/``."""
    root = Path(str(lake)) / "bronze"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / ".hoodie" / "hoodie.properties").exists())


def sync_lake(lake: str | Path, host: str, port: int, tables: Iterable[str] | None = None,
              database: str = DATABASE) -> list[SyncResult]:
    """Register every bronze table of ``lake``, or the given ones, through ``host:port``."""
    names = list(tables) if tables is not None else discover_tables(lake)
    with ThriftCatalog(host, port) as catalog:
        return CatalogSync(lake, catalog, database=database).sync_tables(names)
