"""Light reads of the lake's Hudi tables for the operator's commands (status, dead-letter list).

Through hudi-rs (the ``hudi`` package, a Hudi reader without a JVM), so ``lakehouse status``
answers in a second; everything the ingestion writes goes through Apache Hudi's Java writer.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
from hudi import HudiReadOptions, HudiTableBuilder


def is_table(path: str) -> bool:
    """Whether a local ``path`` (or ``file:`` URI) holds a Hudi table."""
    parsed = urlparse(path)
    if parsed.scheme not in ("", "file"):
        return True
    return (Path(parsed.path if parsed.scheme else path) / ".hoodie" / "hoodie.properties").is_file()


def _open(path: str):
    return HudiTableBuilder.from_base_uri(str(path)).build()


def completed_commits(path: str) -> list[str]:
    """Instants of the table's completed commits, oldest first."""
    return [instant.timestamp for instant in _open(path).get_timeline().get_completed_commits()]


def read_latest(path: str, columns: list[str] | None = None) -> pa.Table | None:
    """The latest snapshot (optionally only ``columns``), or None when no row is committed."""
    options = HudiReadOptions()
    if columns is not None:
        options = options.with_projection(columns)
    batches = _open(path).read(options)
    return pa.Table.from_batches(batches) if batches else None


def row_count(path: str) -> int:
    """Rows of the latest snapshot (read from the record keys only)."""
    table = read_latest(path, ["_hoodie_record_key"])
    return 0 if table is None else table.num_rows


def column_names(path: str) -> list[str]:
    """The data columns of the table's latest schema (no ``_hoodie_*`` meta columns)."""
    return list(_open(path).get_schema().names)
