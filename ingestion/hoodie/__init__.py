"""Apache Hudi table format (table version 6, copy-on-write): the project's own writer.

A library: it knows nothing of CDC, TICKIT or the CLI. Spark only where it distributes work.

    from ingestion.hoodie import HoodieTable, TableConfig, HoodieError
    table = HoodieTable.create_or_open(base_path, TableConfig(name=..., record_key_fields=(...), ...))
    with table.writer() as w:
        instant = w.write(data, operation="insert", drop_duplicates=True, extra_metadata={...})
"""

from ingestion.hoodie.basefile import BaseFile
from ingestion.hoodie.config import TableConfig
from ingestion.hoodie.errors import HoodieError, LockHeldError, UnsupportedTableError
from ingestion.hoodie.table import HoodieTable
from ingestion.hoodie.writer import OPERATIONS, HoodieWriter

__all__ = [
    "OPERATIONS",
    "BaseFile",
    "HoodieError",
    "HoodieTable",
    "HoodieWriter",
    "LockHeldError",
    "TableConfig",
    "UnsupportedTableError",
]
