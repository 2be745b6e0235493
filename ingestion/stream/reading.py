"""Read bronze tables through ``ingestion.hoodie``'s file-system view (latest committed base files)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def is_table(path: str | Path) -> bool:
    return (Path(path) / ".hoodie" / "hoodie.properties").exists()


def latest_files(path: str | Path) -> list:
    from ingestion.hoodie import HoodieTable

    return HoodieTable.open(str(path)).latest_base_files()


def read_latest(path: str | Path, columns: list[str] | None = None) -> pa.Table | None:
    """The latest snapshot of a table (optionally only ``columns``), or None when nothing is committed."""
    files = latest_files(path)
    if not files:
        return None
    tables = []
    for base_file in files:
        parquet = pq.ParquetFile(base_file.path)
        wanted = None if columns is None else [c for c in columns if c in parquet.schema_arrow.names]
        tables.append(parquet.read(columns=wanted))
    return pa.concat_tables(tables, promote_options="default")


def row_count(path: str | Path) -> int:
    """Rows of the latest snapshot, from the parquet footers only."""
    return sum(pq.ParquetFile(f.path).metadata.num_rows for f in latest_files(path))
