"""Repoint ``bronze.<table>`` views at hard-link snapshots of the latest Hudi commit.

One sync of one table: read the latest base files through ``ingestion.hoodie``, build
``<lake>/_catalog/<table>/<instant>/`` (hard links), then repoint the view in one
metastore update: ``ALTER VIEW bronze.<table> AS SELECT * FROM parquet.`<dir>``` (the
first sync creates it; Spark's ``CREATE OR REPLACE VIEW`` would drop and re-create it,
so a concurrent reader could find no view). The synced instant is kept in the view's properties, so a sync is
idempotent and a restarted process knows where the catalog stands. Old snapshot
directories are removed after a grace period.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ingestion.catalog.identifiers import check_type, quote_identifier, quote_path, quote_property_value
from ingestion.catalog.snapshot import SnapshotFile, build_snapshot, remove_old_snapshots
from ingestion.catalog.thrift_client import ThriftCatalog, ThriftUnavailable

log = logging.getLogger(__name__)

DATABASE = "bronze"
SYNCED_INSTANT_PROPERTY = "lakehouse.synced_instant"
SNAPSHOT_DIR_PROPERTY = "lakehouse.snapshot_dir"
DEFAULT_GRACE_SECONDS = 300.0
#: The synced instant of a placeholder view (a table with nothing committed yet).
EMPTY_INSTANT = "00000000000000000"
#: Hudi meta columns every base file starts with (placeholder views carry them too).
HOODIE_META_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (name, "string") for name in ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                  "_hoodie_partition_path", "_hoodie_file_name")
)

Columns = tuple[tuple[str, str], ...]


def bronze_path(lake: str | Path, table: str) -> Path:
    return Path(lake) / "bronze" / table


def snapshot_root(lake: str | Path, table: str) -> Path:
    return Path(lake) / "_catalog" / table


@dataclass
class SyncResult:
    table: str
    status: str  # synced | unchanged | placeholder | empty | missing | failed
    instant: str | None = None
    previous: str | None = None
    files: int = 0
    seconds: float = 0.0
    message: str = ""
    removed_snapshots: list[str] = field(default_factory=list)


def latest_snapshot_files(table_path: Path) -> tuple[str | None, list[SnapshotFile]]:
    """(instant, files) of the latest committed file slices; (None, []) when nothing is committed.

    The instant is the newest instant among the latest base files, so files and instant
    always describe the same timeline even if a commit lands meanwhile.
    """
    from ingestion.hoodie import HoodieTable

    table = HoodieTable.open(str(table_path))
    base_files = table.latest_base_files()
    if not base_files:
        return None, []
    instant = max(bf.instant for bf in base_files)
    files = [SnapshotFile(bf.partition_path or "", str(bf.path)) for bf in base_files]
    return instant, files


class CatalogSync:
    """Syncs bronze tables of one lake into the metastore behind one Thrift server."""

    def __init__(self, lake: str | Path, catalog: ThriftCatalog, *, database: str = DATABASE,
                 grace_seconds: float = DEFAULT_GRACE_SECONDS, placeholder_columns: dict[str, Columns] | None = None):
        """``placeholder_columns``: per table, the data columns of an empty view to create while
        the table has nothing committed (so readers such as dbt sources find every table)."""
        self.placeholder_columns = placeholder_columns or {}
        self.lake = Path(lake)
        self.catalog = catalog
        self.database = database
        self.grace_seconds = grace_seconds
        self._synced: dict[str, str] | None = None

    # -- metastore state -------------------------------------------------------------
    def synced_instants(self, refresh: bool = False) -> dict[str, str]:
        """Synced instant per view of the database, read from the view properties."""
        if self._synced is None or refresh:
            db = quote_identifier(self.database)
            self.catalog.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
            synced: dict[str, str] = {}
            for row in self.catalog.execute(f"SHOW TABLES IN {db}"):
                name = row[1] if len(row) > 1 else row[0]
                if isinstance(name, str) and not (len(row) > 2 and row[2] is True):
                    try:
                        props = self.catalog.execute(f"SHOW TBLPROPERTIES {db}.{quote_identifier(name)}")
                    except ThriftUnavailable:
                        raise
                    except Exception:  # noqa: BLE001 - a table that is not ours
                        continue
                    for key, value in props:
                        if key == SYNCED_INSTANT_PROPERTY:
                            synced[name] = value
            self._synced = synced
        return self._synced

    # -- one table -------------------------------------------------------------------
    def sync_table(self, table: str) -> SyncResult:
        started = time.monotonic()
        quoted_table = quote_identifier(table)
        path = bronze_path(self.lake, table)
        if not (path / ".hoodie" / "hoodie.properties").exists():
            return self._placeholder(table) or SyncResult(table, "missing", message=f"no Hudi table at {path}")
        previous = self.synced_instants().get(table)
        instant, files = latest_snapshot_files(path)
        if instant is None:
            return self._placeholder(table) or SyncResult(table, "empty", previous=previous,
                                                          message="no committed base files yet")
        root = snapshot_root(self.lake, table)
        if instant == previous:
            removed = remove_old_snapshots(root, instant, self.grace_seconds)
            return SyncResult(table, "unchanged", instant, previous, len(files),
                              time.monotonic() - started, removed_snapshots=removed)
        directory = build_snapshot(root, instant, files)
        db = quote_identifier(self.database)
        properties = ", ".join(
            f"{quote_property_value(key)} = {quote_property_value(value)}"
            for key, value in ((SYNCED_INSTANT_PROPERTY, instant), (SNAPSHOT_DIR_PROPERTY, str(directory)))
        )
        select = f"SELECT * FROM parquet.{quote_path(str(directory))}"
        if previous is None:
            self.catalog.execute(f"CREATE OR REPLACE VIEW {db}.{quoted_table} TBLPROPERTIES ({properties}) AS {select}")
        else:
            # Spark's CREATE OR REPLACE VIEW drops and re-creates an existing view, so a
            # concurrent reader can miss it; ALTER VIEW ... AS updates it in one metastore call.
            # The properties follow: a crash between the two leaves an older synced instant
            # recorded, and the next sync simply repoints again.
            self.catalog.execute(f"ALTER VIEW {db}.{quoted_table} AS {select}")
            self.catalog.execute(f"ALTER VIEW {db}.{quoted_table} SET TBLPROPERTIES ({properties})")
        self.synced_instants()[table] = instant
        removed = remove_old_snapshots(root, instant, self.grace_seconds)
        return SyncResult(table, "synced", instant, previous, len(files), time.monotonic() - started,
                          removed_snapshots=removed)

    def _placeholder(self, table: str) -> SyncResult | None:
        """An empty typed view for a table with no commit yet (never replaces an existing view)."""
        columns = self.placeholder_columns.get(table)
        current = self.synced_instants().get(table)
        if columns and current == EMPTY_INSTANT:
            return SyncResult(table, "unchanged", EMPTY_INSTANT, EMPTY_INSTANT, message="empty view")
        if not columns or current is not None:
            return None
        selected = ", ".join(f"CAST(NULL AS {check_type(kind)}) AS {quote_identifier(name)}"
                             for name, kind in (*HOODIE_META_COLUMNS, *columns))
        db = quote_identifier(self.database)
        self.catalog.execute(
            f"CREATE VIEW IF NOT EXISTS {db}.{quote_identifier(table)} "
            f"TBLPROPERTIES ({quote_property_value(SYNCED_INSTANT_PROPERTY)} = {quote_property_value(EMPTY_INSTANT)}) "
            f"AS SELECT {selected} WHERE 1 = 0"
        )
        self.synced_instants()[table] = EMPTY_INSTANT
        return SyncResult(table, "placeholder", EMPTY_INSTANT, message="nothing committed yet: empty view")

    def sync_tables(self, tables: Iterable[str]) -> list[SyncResult]:
        """Sync each table; a failing table is reported and the others still sync.

        Raises ``ThriftUnavailable`` when the server is unreachable (nothing to catch up
        with until it is back).
        """
        results = []
        for table in tables:
            try:
                results.append(self.sync_table(table))
            except ThriftUnavailable:
                self._synced = None
                raise
            except Exception as exc:  # noqa: BLE001 - one table must not block the others
                log.warning("catalog sync of %s failed: %s", table, exc)
                results.append(SyncResult(table, "failed", message=f"{type(exc).__name__}: {exc}"))
        return results


def discover_tables(lake: str | Path) -> list[str]:
    """Names of the Hudi tables under ``<lake>/bronze/``."""
    root = Path(lake) / "bronze"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / ".hoodie" / "hoodie.properties").exists())


def sync_lake(lake: str | Path, host: str, port: int, tables: Iterable[str] | None = None,
              grace_seconds: float = DEFAULT_GRACE_SECONDS, database: str = DATABASE,
              placeholder_columns: dict[str, Columns] | None = None) -> list[SyncResult]:
    """Sync every bronze table of ``lake`` (or the given ones) through ``host:port``.

    Tables named in ``placeholder_columns`` but not committed yet get an empty view.
    """
    everything = sorted(set(discover_tables(lake)) | set(placeholder_columns or {}))
    names = list(tables) if tables is not None else everything
    with ThriftCatalog(host, port) as catalog:
        sync = CatalogSync(lake, catalog, database=database, grace_seconds=grace_seconds,
                           placeholder_columns=placeholder_columns)
        return sync.sync_tables(names)
