"""The catalog: bronze Hudi tables registered in the metastore through the Thrift server."""

from ingestion.catalog.identifiers import IdentifierError, quote_identifier, quote_location
from ingestion.catalog.sync import CatalogSync, SyncResult, sync_lake
from ingestion.catalog.thrift_client import ThriftCatalog, ThriftUnavailable

__all__ = [
    "CatalogSync",
    "IdentifierError",
    "SyncResult",
    "ThriftCatalog",
    "ThriftUnavailable",
    "quote_identifier",
    "quote_location",
    "sync_lake",
]
