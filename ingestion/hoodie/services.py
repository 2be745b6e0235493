"""Table services: rollback of failed writes (recovery) and cleaning of old file slices.

Not implemented (documented in docs/hoodie.md): archival, compaction (COW needs none), clustering,
savepoints/restore, the metadata table. Rollback and clean leave no instant on the timeline: a
rollback removes the failed instant's files and then its instant files; a clean only deletes file
slices that no retained commit can read.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from ingestion.hoodie.timeline import COMMIT_ACTIONS, COMPLETED, fsync_dir

if TYPE_CHECKING:
    from ingestion.hoodie.table import HoodieTable
    from ingestion.hoodie.writer import HoodieWriter


def rollback_pending(table: HoodieTable) -> list[str]:
    """Undo every write instant that never completed: data files first, then its instant files.

    The order makes recovery itself crash-safe: until the instant files go, the next open retries.
    """
    rolled_back = []
    for stale in table.meta_dir.glob(".*.tmp"):  # a timeline write torn before its rename
        stale.unlink(missing_ok=True)
    pending = [i for i in table.timeline.pending() if i.action in COMMIT_ACTIONS]
    if not pending:
        return rolled_back
    doomed = {i.timestamp for i in pending}
    for base_file in table.iter_base_files():
        if base_file.instant in doomed:
            os.remove(base_file.path)
    for instant in pending:
        for state_name in (instant.file_name(), f"{instant.timestamp}.{instant.action}.requested"):
            candidates = {state_name}
            if instant.action == "commit":
                candidates |= {f"{instant.timestamp}.inflight", f"{instant.timestamp}.commit.requested"}
            for name in candidates:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(table.meta_dir / name)
        rolled_back.append(instant.timestamp)
    fsync_dir(table.meta_dir)
    return rolled_back


def remove_uncommitted_files(table: HoodieTable, instant: str, keep: set[str], partitions: list[str]) -> int:
    """Delete files stamped ``instant`` that the commit will not list (failed task attempts)."""
    removed = 0
    for base_file in table.iter_base_files(partitions):
        if base_file.instant == instant and base_file.relative_path not in keep:
            os.remove(base_file.path)
            removed += 1
    return removed


def clean(table: HoodieTable, retain_commits: int, writer: HoodieWriter) -> list[str]:
    """Hudi's KEEP_LATEST_COMMITS policy: keep every slice a read as of the last N commits needs."""
    if retain_commits < 1:
        raise ValueError(f"retain_commits must be at least 1, got {retain_commits}")
    completed = [i for i in table.timeline.instants() if i.state == COMPLETED and i.action in COMMIT_ACTIONS]
    if not completed:
        return []
    retained = completed[-retain_commits:]
    earliest_retained = retained[0].timestamp
    needed: set[str] = set()
    for instant in retained:
        needed.update(bf.path for bf in table.latest_base_files(as_of=instant.timestamp))
    removed = []
    committed = {i.timestamp for i in completed}
    on_timeline = {i.timestamp for i in table.timeline.instants()}
    timeline_start = min(on_timeline)
    for base_file in table.iter_base_files():
        if base_file.instant not in on_timeline and base_file.instant > timeline_start:
            # An orphan of a rolled-back write (e.g. a worker of a killed driver finished late).
            os.remove(base_file.path)
            removed.append(base_file.path)
            continue
        if base_file.path in needed or base_file.instant >= earliest_retained:
            continue
        if base_file.instant not in committed:
            continue  # pending writes belong to recovery, not cleaning
        os.remove(base_file.path)
        removed.append(base_file.path)
    return removed
