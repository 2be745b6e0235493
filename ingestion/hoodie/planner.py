"""Driver-side planning: which file group every incoming record goes to (Hudi's UpsertPartitioner).

Updates and deletes go to the file group that holds their key. Inserts fill the partition's small
file groups first (slices under ``small_file_bytes``, up to ``max_file_bytes``), then new file groups
of at most ``max_file_bytes``, sized with an average record size estimated from existing slices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ingestion.hoodie.basefile import BaseFile, new_file_id
from ingestion.hoodie.merge import BucketPlan

DEFAULT_RECORD_SIZE = 1024  # hoodie.copyonwrite.record.size.estimate


@dataclass(frozen=True)
class SizingOptions:
    max_file_bytes: int = 120 * 1024 * 1024  # hoodie.parquet.max.file.size
    small_file_bytes: int = 100 * 1024 * 1024  # hoodie.parquet.small.file.limit (0 disables)
    record_size_estimate: int = DEFAULT_RECORD_SIZE


@dataclass
class InsertRange:
    """Inserts of ``partition_path`` whose fraction in [low, high) go to ``file_id``."""

    partition_path: str
    low: float
    high: float
    file_id: str


@dataclass
class WritePlan:
    buckets: dict[str, BucketPlan]  # file_id -> plan
    insert_ranges: list[InsertRange]


def plan_write(
    insert_counts: dict[str, int],
    updated_file_ids: dict[str, set[str]],
    latest: dict[str, list[BaseFile]],
    record_size: int,
    sizing: SizingOptions,
) -> WritePlan:
    """Plan buckets from per-partition insert counts and the file groups tagged with updates."""
    by_id = {bf.file_id: bf for files in latest.values() for bf in files}
    buckets: dict[str, BucketPlan] = {}
    for partition, file_ids in updated_file_ids.items():
        for file_id in file_ids:
            current = by_id[file_id]
            buckets[file_id] = BucketPlan(partition, file_id, current.path, current.instant)
    ranges: list[InsertRange] = []
    per_file = max(1, sizing.max_file_bytes // max(1, record_size))
    for partition, count in sorted(insert_counts.items()):
        if count <= 0:
            continue
        assignments: list[tuple[str, int]] = []
        remaining = count
        if sizing.small_file_bytes > 0:
            for current in sorted(latest.get(partition, []), key=lambda b: b.size):
                if remaining <= 0 or current.size >= sizing.small_file_bytes:
                    continue
                room = max(0, (sizing.max_file_bytes - current.size) // max(1, record_size))
                if room <= 0:
                    continue
                take = min(room, remaining)
                assignments.append((current.file_id, take))
                plan = BucketPlan(partition, current.file_id, current.path, current.instant)
                buckets.setdefault(current.file_id, plan)
                remaining -= take
        new_groups = math.ceil(remaining / per_file) if remaining > 0 else 0
        for index in range(new_groups):
            take = min(per_file, remaining - index * per_file)
            file_id = new_file_id()
            buckets[file_id] = BucketPlan(partition, file_id)
            assignments.append((file_id, take))
        low = 0.0
        for position, (file_id, take) in enumerate(assignments):
            high = 1.0 if position == len(assignments) - 1 else low + take / count
            ranges.append(InsertRange(partition, low, high, file_id))
            low = high
    return WritePlan(buckets, ranges)
