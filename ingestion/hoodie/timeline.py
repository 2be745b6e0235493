"""The ``.hoodie/`` timeline (layout version 1): instant files, states and their JSON metadata.

A write moves ``<t>.commit.requested`` -> ``<t>.inflight`` -> ``<t>.commit``; the completed file,
written to a temporary name and renamed, is the single atomic switch that makes a write visible.
Clean and rollback instants follow the same pattern with their own action names.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion.hoodie.errors import HoodieError

INSTANT_FORMAT = "%Y%m%d%H%M%S"
_INSTANT_FILE = re.compile(r"^(\d{17})\.([a-z]+)(?:\.(requested|inflight))?\Z")
COMMIT_ACTIONS = ("commit", "replacecommit")
REQUESTED, INFLIGHT, COMPLETED = "REQUESTED", "INFLIGHT", "COMPLETED"
#: Parsed completed-commit metadata, process-wide (commit files are immutable once complete).
_COMPLETED_CACHE: dict[tuple, dict[str, Any]] = {}
_CACHE_LIMIT = 20_000


@dataclass(frozen=True, order=True)
class Instant:
    timestamp: str
    action: str
    state: str

    def file_name(self) -> str:
        if self.state == COMPLETED:
            return f"{self.timestamp}.{self.action}"
        if self.state == INFLIGHT:
            # Hudi names an inflight commit "<t>.inflight" (no action infix); others "<t>.<action>.inflight".
            infix = "" if self.action == "commit" else f".{self.action}"
            return f"{self.timestamp}{infix}.inflight"
        return f"{self.timestamp}.{self.action}.requested"


def parse_instant_file(name: str) -> Instant | None:
    match = _INSTANT_FILE.match(name)
    if not match:
        return None
    timestamp, action, state = match.groups()
    if action == "inflight" and state is None:
        return Instant(timestamp, "commit", INFLIGHT)
    return Instant(timestamp, action, {None: COMPLETED, "requested": REQUESTED, "inflight": INFLIGHT}[state])


def format_instant(moment: dt.datetime) -> str:
    """``yyyyMMddHHmmssSSS`` of a UTC datetime."""
    return moment.strftime(INSTANT_FORMAT) + f"{moment.microsecond // 1000:03d}"


def parse_instant_time(instant: str) -> dt.datetime:
    if not re.fullmatch(r"\d{17}", instant or ""):
        raise HoodieError(f"instant {instant!r} is not a 17-digit yyyyMMddHHmmssSSS time")
    return dt.datetime.strptime(instant[:14], INSTANT_FORMAT).replace(microsecond=int(instant[14:]) * 1000)


def write_atomically(path: Path, data: bytes) -> None:
    """Write to a hidden temporary name, fsync, then rename: readers see all of it or nothing."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def to_json_bytes(payload: dict[str, Any]) -> bytes:
    """Jackson-like pretty JSON (``"key" : value``), as Hudi writes commit metadata."""
    return json.dumps(payload, indent=2, separators=(",", " : ")).encode()


class Timeline:
    """A view of ``<base>/.hoodie`` listed on demand (never cached across writes)."""

    def __init__(self, meta_dir: Path) -> None:
        self.meta_dir = meta_dir

    def instants(self) -> list[Instant]:
        """Every instant, one entry per (timestamp, action) at its furthest state, in time order."""
        best: dict[tuple[str, str], Instant] = {}
        rank = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}
        for entry in os.listdir(self.meta_dir):
            instant = parse_instant_file(entry)
            if instant is None:
                continue
            key = (instant.timestamp, instant.action)
            if key not in best or rank[instant.state] > rank[best[key].state]:
                best[key] = instant
        return sorted(best.values())

    def completed(self, actions: tuple[str, ...] = COMMIT_ACTIONS) -> list[Instant]:
        return [i for i in self.instants() if i.state == COMPLETED and i.action in actions]

    def pending(self) -> list[Instant]:
        return [i for i in self.instants() if i.state != COMPLETED]

    def last_timestamp(self) -> str | None:
        instants = self.instants()
        return max(i.timestamp for i in instants) if instants else None

    def read_json(self, instant: Instant) -> dict[str, Any]:
        path = self.meta_dir / instant.file_name()
        cache_key = None
        if instant.state == COMPLETED:
            # Completed instant files never change; the stat guards against a table recreated in place.
            stat = path.stat()
            cache_key = (str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino)
            if cache_key in _COMPLETED_CACHE:
                return _COMPLETED_CACHE[cache_key]
        raw = path.read_bytes()
        if not raw.strip():
            return {}
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise HoodieError(f"{path}: not JSON commit metadata ({exc})") from exc
        if cache_key is not None:
            if len(_COMPLETED_CACHE) >= _CACHE_LIMIT:
                _COMPLETED_CACHE.clear()
            _COMPLETED_CACHE[cache_key] = payload
        return payload

    def write(self, instant: Instant, payload: bytes) -> None:
        write_atomically(self.meta_dir / instant.file_name(), payload)

    def new_instant_time(self) -> str:
        """A UTC instant strictly greater than every instant on the timeline (waits out a same-ms tie)."""
        last = self.last_timestamp()
        while True:
            candidate = format_instant(dt.datetime.now(dt.UTC).replace(tzinfo=None))
            if last is None or candidate > last:
                return candidate
            if parse_instant_time(last) - dt.datetime.now(dt.UTC).replace(tzinfo=None) > dt.timedelta(seconds=5):
                # The clock is far behind the timeline (e.g. a table written in local time ahead of UTC):
                # keep instants increasing by stepping one millisecond past the last one.
                return format_instant(parse_instant_time(last) + dt.timedelta(milliseconds=1))
            time.sleep(0.001)
