"""The single-writer lock: an ``flock`` on ``.hoodie/.lakehouse-writer.lock``.

The kernel drops the lock when its holder dies (even on SIGKILL), so a crashed writer never leaves
a stale lock; the file keeps the holder's pid and host only for the error message.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import socket
from pathlib import Path

from ingestion.hoodie.errors import LockHeldError

LOCK_FILE = ".lakehouse-writer.lock"


class WriterLock:
    def __init__(self, meta_dir: Path, table_label: str) -> None:
        self.path = meta_dir / LOCK_FILE
        self.table_label = table_label
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            try:
                holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            finally:
                os.close(fd)
            raise LockHeldError(
                f"table {self.table_label} is locked by another writer ({holder or 'unknown holder'}); "
                "only one writer per table may run: stop the other writer or wait for it to finish"
            ) from None
        os.ftruncate(fd, 0)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.pwrite(fd, f"pid={os.getpid()} host={socket.gethostname()} since={stamp}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None
