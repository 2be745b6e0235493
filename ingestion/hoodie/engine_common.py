"""What both execution engines share: the plan object and the driver-side tagging summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingestion.hoodie.basefile import BaseFile
from ingestion.hoodie.merge import BucketPlan
from ingestion.hoodie.planner import DEFAULT_RECORD_SIZE

#: Column added while tagging: the file group already holding the incoming key (null for new keys).
TAGGED_FILE_ID = "_hoodie_tagged_file_id"


@dataclass
class ExecutionPlan:
    partitions: list[str]
    workload: dict[str, Any]
    buckets: dict[str, BucketPlan] = field(default_factory=dict)
    payload: Any = None  # engine-specific: grouped Arrow tables or a Spark DataFrame


def average_record_size(latest: dict[str, list[BaseFile]], fallback: int = DEFAULT_RECORD_SIZE) -> int:
    """Bytes per record of the largest existing slices (small files overstate it: the bloom filter)."""
    import pyarrow.parquet as pq

    candidates = sorted((bf for files in latest.values() for bf in files), key=lambda b: -b.size)[:3]
    total_bytes = total_rows = 0
    for base_file in candidates:
        if base_file.size < 1024 * 1024:
            continue
        total_rows += pq.read_metadata(base_file.path).num_rows
        total_bytes += base_file.size
    return max(1, total_bytes // total_rows) if total_rows else fallback
