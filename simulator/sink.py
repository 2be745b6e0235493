"""A Kafka Connect S3 sink in miniature: offsets per topic partition, rotation, exact file layout.

Like the Confluent S3 sink with the JSON format: one record per line, a file per
(topic, Kafka partition) chunk named ``<topic>+<partition>+<10-digit start offset>.json``
under ``topics/<topic>/partition=<p>/`` (DefaultPartitioner) or
``topics/<topic>/year=YYYY/month=MM/day=DD/`` (DailyPartitioner, from the time of the
chunk's first record). A chunk is committed when it holds ``flush_size`` records
(``flush.size``) or when the (virtual) clock enters a new ``rotate_interval_ms`` window
(``rotate.schedule.interval.ms``), and at the end of a run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from ingestion.cdc.landing import landing_file_name
from ingestion.sources.object_store import Storage

PARTITIONERS = ("default", "daily")


@dataclass
class _Chunk:
    path: str
    window: int
    lines: list[bytes] = field(default_factory=list)


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
    ):
        if flush_size < 1:
            raise ValueError(f"flush size must be at least 1, got {flush_size}")
        if rotate_interval_ms < 1:
            raise ValueError(f"rotate interval must be at least 1 ms, got {rotate_interval_ms}")
        if partitioner not in PARTITIONERS:
            raise ValueError(f"partitioner must be one of {PARTITIONERS}, got {partitioner!r}")
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

    def append(self, topic: str, partition: int, line: bytes, ts_ms: int) -> tuple[int, str]:
        """Add one record at (virtual) time ``ts_ms``; returns its Kafka offset and landing file path."""
        self.advance(ts_ms)
        key = f"{topic}+{partition}"
        offset = self.offsets.get(key, 0)
        chunk = self._open.get(key)
        if chunk is None:
            chunk = _Chunk(self._path(topic, partition, offset, ts_ms), self._window(ts_ms))
            self._open[key] = chunk
        chunk.lines.append(line)
        self.offsets[key] = offset + 1
        path = chunk.path
        if len(chunk.lines) >= self.flush_size:
            self._commit(key)
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
        name = landing_file_name(topic, partition, offset)
        if self.partitioner == "daily":
            day = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ts_ms)
            return f"topics/{topic}/year={day.year:04d}/month={day.month:02d}/day={day.day:02d}/{name}"
        return f"topics/{topic}/partition={partition}/{name}"

    def _commit(self, key: str) -> None:
        chunk = self._open.pop(key)
        self.storage.write(chunk.path, b"".join(line + b"\n" for line in chunk.lines))
        self.files_written += 1
        self.lines_written += len(chunk.lines)
        if self._on_commit:
            self._on_commit(chunk.path, len(chunk.lines))
