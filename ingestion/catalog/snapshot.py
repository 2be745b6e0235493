"""Hard-link snapshot directories of a table's latest committed base files.

``<lake>/_catalog/<table>/<instant>/<partition path>/<file>`` holds hard links (same
file system, no copy) to exactly the base files of the latest file slices. The directory
is built under a hidden temporary name and renamed into place, so a reader never sees a
half-built snapshot; an existing directory for the same instant is reused (its content
is fixed by the instant). Old directories are removed once they are neither current nor
younger than a grace period (a query planned against the previous view may still read
them).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

TEMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class SnapshotFile:
    """One base file to expose: its partition path (``a=1/b=2`` or empty) and absolute path."""

    partition_path: str
    path: str


def build_snapshot(snapshot_root: Path, instant: str, files: list[SnapshotFile]) -> Path:
    """Materialize ``snapshot_root/<instant>/`` from ``files`` (idempotent)."""
    snapshot_root = Path(snapshot_root)
    final = snapshot_root / instant
    if final.is_dir():
        return final
    snapshot_root.mkdir(parents=True, exist_ok=True)
    temp = snapshot_root / f"{TEMP_PREFIX}{instant}-{uuid.uuid4().hex[:8]}"
    temp.mkdir()
    try:
        for item in files:
            source = Path(item.path)
            target_dir = temp / item.partition_path if item.partition_path else temp
            target_dir.mkdir(parents=True, exist_ok=True)
            os.link(source, target_dir / source.name)
        try:
            temp.rename(final)
        except OSError:
            if not final.is_dir():  # not a lost race with another syncer: a real error
                raise
            shutil.rmtree(temp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return final


def remove_old_snapshots(snapshot_root: Path, current: str | None, grace_seconds: float,
                         now: float | None = None) -> list[str]:
    """Remove snapshot (and stale temporary) directories other than ``current`` older than the grace."""
    snapshot_root = Path(snapshot_root)
    if not snapshot_root.is_dir():
        return []
    now = time.time() if now is None else now
    removed = []
    for entry in sorted(snapshot_root.iterdir()):
        if not entry.is_dir() or entry.name == current:
            continue
        try:
            age = now - entry.stat().st_mtime
        except FileNotFoundError:
            continue
        if age >= grace_seconds:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed
