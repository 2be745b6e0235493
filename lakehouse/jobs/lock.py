"""Lock files that refuse overlapping runs and survive a crashed run.

A job's runs hold two: the job's own (``jobs/<job>/lock``: one run of a job at a time, and
what ``jobs history`` reads to tell a running run from a crashed one) and its lock group's
(``jobs/.<group>.group-lock``: jobs that write the same tables, ``hourly`` and ``nightly`` by
default, never run at once).

A lock is a file holding the owner's PID and that process's start time (from ``/proc``, so
a recycled PID is not mistaken for the owner), its run and job. It is written beside its
place and hard-linked into it, so it never exists without its record (a reader never takes
a half-written lock for a dead owner's). A lock whose owner is gone is stale: the next run
takes it over and says so; the takeover runs under an ``flock`` of ``<lock>.guard``, so of
two processes finding the same stale lock only one takes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from ingestion.process_identity import pid_alive, process_start_ticks

_PROCESS_LOCK = threading.Lock()  # serialises acquire() between scheduler threads


class JobLockedError(RuntimeError):
    """Another run of the job holds the lock."""

    def __init__(self, path: Path, owner: dict):
        self.path = path
        self.owner = owner
        holder = f"job '{owner['job']}', " if owner.get("job") else ""
        super().__init__(
            f"job is already running (lock {path} held by {holder}pid {owner.get('pid')}, "
            f"run {owner.get('run_id')}, since {owner.get('acquired_at')})"
        )


@dataclass
class JobLock:
    path: Path
    run_id: str
    acquired_at: str
    took_over: dict | None = None  # the stale owner's record, when a crashed run's lock was reclaimed
    job: str | None = None  # the job taking the lock (named to the runs it refuses)
    _held: bool = False

    def acquire(self) -> JobLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "pid": os.getpid(),
            "start_ticks": process_start_ticks(os.getpid()),
            "host": socket.gethostname(),
            "run_id": self.run_id,
            "job": self.job,
            "acquired_at": self.acquired_at,
        }
        written = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}")
        written.write_text(json.dumps(record))
        try:
            with _PROCESS_LOCK, _guard(self.path):
                for _ in range(3):
                    try:
                        os.link(written, self.path)  # the lock appears with its record, or not at all
                    except FileExistsError:
                        owner = read_lock(self.path)
                        if owner is None:  # released between the two calls: try again
                            continue
                        if lock_is_live(owner):
                            raise JobLockedError(self.path, owner) from None
                        self.took_over = owner
                        with contextlib.suppress(FileNotFoundError):
                            self.path.unlink()
                        continue
                    self._held = True
                    return self
        finally:
            written.unlink(missing_ok=True)
        raise JobLockedError(self.path, read_lock(self.path) or {})

    def release(self) -> None:
        if not self._held:
            return
        owner = read_lock(self.path)
        if owner and owner.get("run_id") == self.run_id:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        self._held = False

    def __enter__(self) -> JobLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


@contextlib.contextmanager
def _guard(path: Path):
    """An exclusive ``flock`` of ``<path>.guard`` (held by one process at a time, released by its death)."""
    with open(path.with_name(path.name + ".guard"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_lock(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # A torn write from a crash: treat as a dead owner so it can be reclaimed.
        return {"pid": -1, "run_id": None, "acquired_at": None, "corrupt": True}


def lock_is_live(owner: dict) -> bool:
    if owner.get("host") not in (None, socket.gethostname()):
        return True  # another machine's lock: we cannot check its PID, so respect it
    return pid_alive(int(owner.get("pid") or -1), owner.get("start_ticks"))
