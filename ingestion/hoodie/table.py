"""A copy-on-write Hudi table (version 6): create/open, reading helpers, table services."""

from __future__ import annotations

import copy
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ingestion.hoodie import properties
from ingestion.hoodie.basefile import PARTITION_METAFILE, BaseFile, parse_base_file_name
from ingestion.hoodie.config import TableConfig
from ingestion.hoodie.errors import HoodieError, UnsupportedTableError
from ingestion.hoodie.schema import data_schema
from ingestion.hoodie.timeline import COMPLETED, Timeline, write_atomically

if TYPE_CHECKING:
    from ingestion.hoodie.writer import HoodieWriter

META_DIR = ".hoodie"
_EMPTY_DIRS = ("archived", ".aux/.bootstrap/.partitions", ".aux/.bootstrap/.fileids", ".schema", ".temp")


class HoodieTable:
    """Handle on a table at a local ``base_path``. Every reading helper lists the timeline afresh."""

    def __init__(self, base_path: str | Path, config: TableConfig) -> None:
        self.base_path = Path(base_path).absolute()
        self.config = config
        self.meta_dir = self.base_path / META_DIR
        self.timeline = Timeline(self.meta_dir)

    def __repr__(self) -> str:
        return f"HoodieTable({str(self.base_path)!r}, {self.config.database}.{self.config.name})"

    @property
    def label(self) -> str:
        return f"{self.config.database}.{self.config.name} at {self.base_path}"

    # ----------------------------------------------------------------- create / open
    @classmethod
    def create_or_open(cls, base_path: str | Path, config: TableConfig) -> HoodieTable:
        """Open the table if ``hoodie.properties`` exists (its layout must match ``config``), else create it."""
        base = Path(base_path).absolute()
        if (base / META_DIR / "hoodie.properties").exists():
            table = cls.open(base)
            if not table.config.same_layout(config):
                raise HoodieError(
                    f"table at {base} exists with a different layout: stored keys={table.config.record_key_fields} "
                    f"precombine={table.config.precombine_field} partitions={table.config.partition_fields} "
                    f"hive_style={table.config.hive_style}; requested keys={config.record_key_fields} "
                    f"precombine={config.precombine_field} partitions={config.partition_fields} "
                    f"hive_style={config.hive_style}"
                )
            return table
        if base.exists() and any(p for p in base.iterdir() if p.name != META_DIR):
            raise HoodieError(f"cannot create a table at {base}: the directory exists and is not a Hudi table")
        meta = base / META_DIR
        meta.mkdir(parents=True, exist_ok=True)
        for sub in _EMPTY_DIRS:
            (meta / sub).mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now(dt.UTC)
        text = properties.render(config.to_properties(), f"Properties saved on {now.isoformat()}", now)
        write_atomically(meta / "hoodie.properties", text.encode())  # the table exists once this lands
        return cls(base, config)

    @classmethod
    def open(cls, base_path: str | Path) -> HoodieTable:
        """Open an existing table; refuse tables this writer must not write, naming the property."""
        base = Path(base_path).absolute()
        props_path = base / META_DIR / "hoodie.properties"
        if not props_path.exists():
            if (base / META_DIR / "timeline").is_dir():
                raise UnsupportedTableError(f"{base}: .hoodie/hoodie.properties missing (a v8+ table?)")
            raise HoodieError(f"{base} is not a Hudi table: {props_path} does not exist")
        props = properties.parse(props_path.read_text(encoding="utf-8", errors="replace"))
        if (base / META_DIR / "metadata").is_dir():
            raise UnsupportedTableError(
                f"{base}: has a metadata table (.hoodie/metadata; hoodie.metadata.enable=true); "
                "this writer would leave it stale"
            )
        return cls(base, TableConfig.from_properties(props, str(props_path)))

    def properties(self) -> dict[str, str]:
        return properties.parse((self.meta_dir / "hoodie.properties").read_text(encoding="utf-8"))

    # ----------------------------------------------------------------- timeline helpers
    def completed_instants(self) -> list[str]:
        """Completed write instants (commit and replacecommit), oldest first."""
        return [i.timestamp for i in self.timeline.completed()]

    def _completed(self, instant: str):
        for candidate in self.timeline.completed():
            if candidate.timestamp == instant:
                return candidate
        raise HoodieError(f"table {self.label}: no completed commit {instant!r}")

    def commit_metadata(self, instant: str) -> dict[str, Any]:
        """The completed instant's HoodieCommitMetadata (a copy: callers may change it)."""
        return copy.deepcopy(self.timeline.read_json(self._completed(instant)))

    def latest_extra_metadata(self, key: str) -> str | None:
        """The newest completed commit's ``extraMetadata[key]`` (commits without the key are skipped)."""
        for instant in reversed(self.timeline.completed()):
            value = self.timeline.read_json(instant).get("extraMetadata", {}).get(key)
            if value is not None:
                return value
        return None

    def commits_since(self, instant: str | None) -> list[str]:
        """Completed commits strictly after ``instant`` (all of them for None)."""
        return [t for t in self.completed_instants() if instant is None or t > instant]

    def pending_instants(self) -> list[str]:
        return [f"{i.timestamp}.{i.action}.{i.state.lower()}" for i in self.timeline.pending()]

    # ----------------------------------------------------------------- file system view
    def partition_paths(self) -> list[str]:
        """Relative paths of every partition directory (those holding ``.hoodie_partition_metadata``)."""
        found = []
        for root, dirs, files in os.walk(self.base_path):
            rel = os.path.relpath(root, self.base_path)
            if rel == META_DIR or rel.startswith(META_DIR + os.sep):
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            if PARTITION_METAFILE in files:
                found.append("" if rel == "." else rel.replace(os.sep, "/"))
        return sorted(found)

    def _committed_files(self, as_of: str | None) -> tuple[set[str], set[tuple[str, str]]]:
        """Relative paths written by completed commits up to ``as_of``, and the replaced file groups."""
        paths: set[str] = set()
        replaced: set[tuple[str, str]] = set()
        for instant in self.timeline.completed():
            if as_of is not None and instant.timestamp > as_of:
                break
            meta = self.timeline.read_json(instant)
            for stats in meta.get("partitionToWriteStats", {}).values():
                for stat in stats or []:
                    if stat.get("path"):
                        paths.add(stat["path"])
            for partition, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                replaced.update((partition, file_id) for file_id in ids)
        return paths, replaced

    def iter_base_files(self, partitions: list[str] | None = None) -> Iterator[BaseFile]:
        """Every base file on storage (committed or not) in the given partitions (all by default)."""
        for partition in self.partition_paths() if partitions is None else partitions:
            directory = self.base_path / partition if partition else self.base_path
            try:
                entries = list(os.scandir(directory))
            except FileNotFoundError:
                continue
            for entry in entries:
                parsed = parse_base_file_name(entry.name)
                if parsed and entry.is_file():
                    file_id, token, instant = parsed
                    yield BaseFile(partition, file_id, instant, entry.path, token, entry.stat().st_size)

    def latest_base_files(self, as_of: str | None = None, partitions: list[str] | None = None) -> list[BaseFile]:
        """The latest committed base file of every live file group (as of ``as_of``, default: now)."""
        instants = self.timeline.instants()
        completed = {i.timestamp for i in instants if i.state == COMPLETED and (as_of is None or i.timestamp <= as_of)}
        # Slices older than the active timeline were written by archived (hence completed) commits.
        timeline_start = min((i.timestamp for i in instants), default=None)
        committed_paths, replaced = self._committed_files(as_of)
        latest: dict[tuple[str, str], BaseFile] = {}
        for base_file in self.iter_base_files(partitions):
            archived = timeline_start is not None and base_file.instant < timeline_start
            if not archived and base_file.instant not in completed:
                continue
            if not archived and base_file.relative_path not in committed_paths:
                continue  # a failed task attempt's file
            key = (base_file.partition_path, base_file.file_id)
            if key in replaced:
                continue
            if key not in latest or base_file.instant > latest[key].instant:
                latest[key] = base_file
        return sorted(latest.values(), key=lambda b: (b.partition_path, b.file_id))

    def schema(self) -> pa.Schema | None:
        """The data schema (no meta columns) of the newest committed slice, or None for an empty table."""
        completed = self.timeline.completed()
        for instant in reversed(completed):
            meta = self.timeline.read_json(instant)
            for stats in meta.get("partitionToWriteStats", {}).values():
                for stat in stats or []:
                    path = self.base_path / stat["path"] if stat.get("path") else None
                    if path is not None and path.exists():
                        return data_schema(pq.read_schema(path))
        return None

    # ----------------------------------------------------------------- writing and services
    def writer(self, **options: Any) -> HoodieWriter:
        """A context manager holding the single-writer lock; it recovers failed writes on entry."""
        from ingestion.hoodie.writer import HoodieWriter

        return HoodieWriter(self, **options)

    def clean(self, retain_commits: int = 10) -> list[str]:
        """Delete file slices not needed to read the last ``retain_commits`` commits; returns removed paths."""
        from ingestion.hoodie.services import clean

        with self.writer() as writer:
            return clean(self, retain_commits, writer)

    def rollback_pending(self) -> list[str]:
        """Roll back every pending instant (takes the lock); returns the instants rolled back."""
        with self.writer() as writer:
            return writer.recovered

    def is_completed(self, instant: str) -> bool:
        return any(i.timestamp == instant and i.state == COMPLETED for i in self.timeline.instants())
