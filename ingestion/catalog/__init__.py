"""Catalog sync: committed bronze snapshots registered as views through the Thrift server.

ARCHITECTURE.md Decision 2 (hard-link snapshot directories + one-statement view
repoint) and Decision 7 (the metastore is only ever reached through the Thrift server).
"""

from ingestion.catalog.identifiers import IdentifierError, quote_identifier, quote_path
from ingestion.catalog.snapshot import SnapshotFile, build_snapshot, remove_old_snapshots
from ingestion.catalog.sync import CatalogSync, SyncResult, sync_lake
from ingestion.catalog.thrift_client import ThriftCatalog, ThriftUnavailable

__all__ = [
    "CatalogSync",
    "IdentifierError",
    "SnapshotFile",
    "SyncResult",
    "ThriftCatalog",
    "ThriftUnavailable",
    "build_snapshot",
    "quote_identifier",
    "quote_path",
    "remove_old_snapshots",
    "sync_lake",
]
