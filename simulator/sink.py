"""A Kafka Connect S3 sink in miniature: offsets per topic partition, rotation, exact file layout.

Like the Confluent S3 sink: a file per (topic, Kafka partition) chunk named
``<topic>+<partition>+<10-digit start offset>.<json|avro>`` under
``topics/<topic>/partition=<p>/`` (DefaultPartitioner) or
``topics/<topic>/year=YYYY/month=MM/day=DD/`` (DailyPartitioner, from the time of the
chunk's first record). A chunk is committed when it holds ``flush_size`` records
(``flush.size``) or when the (virtual) clock enters a new ``rotate_interval_ms`` window
(``rotate.schedule.interval.ms``), and at the end of a run.

* ``json`` (JsonFormat): one record per line; a tombstone is the line ``null``.
* ``avro`` (AvroFormat): an Avro object container file per chunk with the records' writer
  schema (``simulator.avro``); a record whose schema differs from the open chunk's starts
  a new file (``schema.compatibility=NONE``); tombstones are dropped
  (``behavior.on.null.values=ignore``, as in the reference pipeline), so they take a
  Kafka offset but no place in a file: the offset a reader derives from a file
  (start offset + record index) can then be lower than the real one. ``append`` returns
  that derived offset, the one the ingestion records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from ingestion.cdc.landing import AVRO, FILE_FORMATS, JSON, landing_file_name
from ingestion.object_store import Storage
from simulator.avro import AvroItem, container_bytes, sync_marker

PARTITIONERS = ("default", "daily")
#: One record for the sink: a JSON line (no newline) or an Avro record.
SinkRecord = bytes | AvroItem


@dataclass
class _Chunk:
    path: str
    window: int
    start_offset: int
    lines: list[SinkRecord] = field(default_factory=list)


class SinkWriter:
    def __init__(
        self,
        storage: Storage,
        *,
        flush_size: int,
        rotate_interval_ms: int,
        partitioner: str = "default",
        offsets: dict[str, int] | None = None,
        on_commit: Callable[[str, int], None] | None = None,
        file_format: str = JSON,
    ):
        if flush_size < 1:
            raise ValueError(f"flush size must be at least 1, got {flush_size}")
        if rotate_interval_ms < 1:
            raise ValueError(f"rotate interval must be at least 1 ms, got {rotate_interval_ms}")
        if partitioner not in PARTITIONERS:
            raise ValueError(f"partitioner must be one of {PARTITIONERS}, got {partitioner!r}")
        if file_format not in FILE_FORMATS:
            raise ValueError(f"file format must be one of {FILE_FORMATS}, got {file_format!r}")
        self.file_format = file_format
        self.storage = storage
        self.flush_size = flush_size
        self.rotate_interval_ms = rotate_interval_ms
        self.partitioner = partitioner
        #: next offset per "<topic>+<partition>"
        self.offsets: dict[str, int] = dict(offsets or {})
        self.files_written = 0
        self.lines_written = 0
        self._open: dict[str, _Chunk] = {}
        self._on_commit = on_commit
        self._window_seen = -1

    def append(self, topic: str, partition: int, line: SinkRecord, ts_ms: int) -> tuple[int, str]:
        """Add one record at (virtual) time ``ts_ms``; returns its offset as its landing file gives it
        (start offset + index: the Kafka offset, unless the file skips dropped tombstones) and the file's path."""
        if isinstance(line, AvroItem) != (self.file_format == AVRO):
            raise TypeError(f"a {self.file_format} sink takes {'Avro items' if self.file_format == AVRO else 'lines'}")
        self.advance(ts_ms)
        key = f"{topic}+{partition}"
        chunk = self._open.get(key)
        if chunk is not None and isinstance(line, AvroItem) and _schema_key(chunk) != line.schema.key:
            self._commit(key)  # schema.compatibility=NONE: a new writer schema starts a new file
            chunk = None
        offset = self.offsets.get(key, 0)
        if chunk is None:
            chunk = _Chunk(self._path(topic, partition, offset, ts_ms), self._window(ts_ms), offset)
            self._open[key] = chunk
        landing_offset = chunk.start_offset + len(chunk.lines)
        chunk.lines.append(line)
        self.offsets[key] = offset + 1
        path = chunk.path
        if len(chunk.lines) >= self.flush_size:
            self._commit(key)
        return landing_offset, path

    def tombstone(self, topic: str, partition: int, ts_ms: int) -> bool:
        """A tombstone: a ``null`` line (JSON; True), or dropped by an Avro sink after taking its offset (False)."""
        if self.file_format == JSON:
            self.append(topic, partition, b"null", ts_ms)
            return True
        self.advance(ts_ms)
        key = f"{topic}+{partition}"
        self.offsets[key] = self.offsets.get(key, 0) + 1
        return False

    def open_tag(self, topic: str, partition: int) -> str | None:
        """The shape of the open Avro chunk of a topic partition (None: no open chunk, or JSON)."""
        chunk = self._open.get(f"{topic}+{partition}")
        if chunk is None or not chunk.lines or not isinstance(chunk.lines[0], AvroItem):
            return None
        return chunk.lines[0].tag

    def append_file(self, topic: str, partition: int, ts_ms: int, build: Callable[[str], bytes]) -> tuple[int, str]:
        """A file of one record written as ``build(path)`` makes it (a damaged upload); (its offset, path)."""
        self.advance(ts_ms)
        key = f"{topic}+{partition}"
        if key in self._open:
            self._commit(key)
        offset = self.offsets.get(key, 0)
        path = self._path(topic, partition, offset, ts_ms)
        self.storage.write(path, build(path))
        self.offsets[key] = offset + 1
        self.files_written += 1
        self.lines_written += 1
        if self._on_commit:
            self._on_commit(path, 1)
        return offset, path

    def advance(self, ts_ms: int) -> None:
        """Move the clock: commit every chunk opened in an earlier rotation window."""
        window = self._window(ts_ms)
        if window <= self._window_seen:
            return
        self._window_seen = window
        for key in [k for k, chunk in self._open.items() if chunk.window < window]:
            self._commit(key)

    def flush_all(self) -> None:
        for key in sorted(self._open):
            self._commit(key)

    def _window(self, ts_ms: int) -> int:
        return ts_ms // self.rotate_interval_ms

    def _path(self, topic: str, partition: int, offset: int, ts_ms: int) -> str:
        name = landing_file_name(topic, partition, offset, self.file_format)
        if self.partitioner == "daily":
            day = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ts_ms)
            return f"topics/{topic}/year={day.year:04d}/month={day.month:02d}/day={day.day:02d}/{name}"
        return f"topics/{topic}/partition={partition}/{name}"

    def _commit(self, key: str) -> None:
        chunk = self._open.pop(key)
        items = [line for line in chunk.lines if isinstance(line, AvroItem)]
        if items:
            data = container_bytes(items[0].schema, [item.record for item in items], sync_marker(chunk.path))
        else:
            data = b"".join(line + b"\n" for line in chunk.lines if isinstance(line, bytes))
        self.storage.write(chunk.path, data)
        self.files_written += 1
        self.lines_written += len(chunk.lines)
        if self._on_commit:
            self._on_commit(chunk.path, len(chunk.lines))


def _schema_key(chunk: _Chunk) -> str | None:
    first = chunk.lines[0] if chunk.lines else None
    return first.schema.key if isinstance(first, AvroItem) else None
