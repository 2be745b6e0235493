"""One writer per lake: the lock every process that writes bronze takes before it writes anything.

Two ingestions on one lake (a scheduled ``--once`` beside a continuous stream, a ``dead-letter
replay`` or an ``ingest --reset`` during either) would replay the same micro-batches into
bronze and store their events twice. So each of them holds ``<lake>/_writer.lock`` from before
its first read until it exits, and a second one fails before it writes, naming the holder.

- **Local lake**: an exclusive ``flock`` on the file. The kernel releases it when the holder
  exits or is killed, so a dead holder never leaves a stale lock; the file's text describes the
  holder for the error message of the process that is refused.
- **S3 lake** (``s3://``/``s3a://``): a lease object created with a conditional PUT
  (``If-None-Match: *``). The holder renews it every ``renew_seconds`` (``If-Match`` on its own
  ETag). A lease that was not renewed for ``ttl_seconds``, or whose holder on this host is gone,
  is stale: it is taken over with a PUT conditional on the stale lease's ETag, so of two
  processes taking it over at once only one wins. A holder whose renewal finds the lease
  changed has lost it and writes nothing more (``LakeWriterLock.check``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import re
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ingestion.errors import IngestionError
from ingestion.process_identity import pid_alive, process_start_ticks

log = logging.getLogger("lakehouse.lock")

LOCK_NAME = "_writer.lock"  # '_' prefix: Hadoop's and Hudi's listings skip it
TTL_SECONDS = 120.0
RENEW_SECONDS = 30.0


class LakeLockedError(IngestionError, RuntimeError):
    """Another process writes the lake: this one wrote nothing (the message names the holder)."""

    def __init__(self, lake: str, holder: dict[str, Any] | None):
        self.lake = lake
        self.holder = holder or {}
        self.hint = ("one writer per lake: wait for it to finish, or stop it ('lakehouse down' stops what this "
                     "home started); a holder that died releases the lock (on S3 after "
                     f"{int(TTL_SECONDS)} s without renewal)")
        super().__init__(f"lake {lake} is being written by another process ({describe(self.holder)}): "
                         "nothing was written")


class LakeLockError(IngestionError, RuntimeError):
    """The lock itself cannot be read or written (a missing bucket, no credentials, an outage)."""

    hint = "check the lake path: its bucket, the AWS credentials, region and AWS_ENDPOINT_URL"


class LakeLockLostError(IngestionError, RuntimeError):
    """The S3 lease was taken over while this process held it (it stalled past the lease's TTL)."""


def describe(holder: dict[str, Any]) -> str:
    """'pid 123 on host h since 2026-...Z: lakehouse ingest --once' (what is known of a holder)."""
    if not holder:
        return "holder not yet recorded"
    text = f"pid {holder.get('pid')} on host {holder.get('host')} since {holder.get('started_at')}"
    return f"{text}: {holder['command']}" if holder.get("command") else text


def _holder_alive_here(holder: dict[str, Any]) -> bool | None:
    """Whether a holder on this host still runs (pid and start time); None for another host's holder."""
    if holder.get("host") != socket.gethostname():
        return None
    return pid_alive(int(holder.get("pid") or -1), holder.get("start_ticks"))


def _command_words(argv: list[str]) -> str:
    """What the holder runs, for the refusal message: the program, subcommands and flags, but no
    value that could carry a secret (a URL with credentials, a path): the lock sits in the lake."""
    words = [Path(argv[0]).name] if argv else []
    words += [arg.split("=", 1)[0] for arg in argv[1:] if re.fullmatch(r"-{0,2}[A-Za-z][\w-]*(=.*)?", arg)]
    return " ".join(words)[:200]


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LakeWriterLock:
    """Hold ``<lake>/_writer.lock`` (a context manager); ``check()`` before each write."""

    def __init__(self, lake: str, command: str | None = None, *, ttl_seconds: float = TTL_SECONDS,
                 renew_seconds: float = RENEW_SECONDS):
        self.lake = str(lake).rstrip("/")
        self.command = command if command is not None else _command_words(sys.argv)
        self.ttl_seconds = ttl_seconds
        self.renew_seconds = renew_seconds
        self.holder = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": _now(),
                       "start_ticks": process_start_ticks(os.getpid()), "command": self.command}
        self._fd: int | None = None
        self._s3: _S3Lease | None = None

    def __enter__(self) -> LakeWriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        scheme = urlparse(self.lake).scheme
        if scheme in ("s3", "s3a"):
            self._s3 = _S3Lease(self.lake, self.holder, self.ttl_seconds, self.renew_seconds)
            self._s3.acquire()
        elif scheme in ("", "file"):
            self._acquire_local(Path(urlparse(self.lake).path if scheme else self.lake).expanduser())
        else:
            raise ValueError(f"{self.lake}: no writer lock for this file system (use a local path, s3:// or s3a://)")

    def _acquire_local(self, lake: Path) -> None:
        lake.mkdir(parents=True, exist_ok=True)
        path = lake / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LakeLockedError(self.lake, _read_local_holder(path)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self.holder).encode(), 0)
        self._fd = fd

    def check(self) -> None:
        """Raise ``LakeLockLostError`` if the lock is no longer this process's (S3 lease taken over)."""
        if self._s3 is not None:
            self._s3.check()

    def release(self) -> None:
        if self._fd is not None:
            # the file stays (unlinking it would let a process that opened it before see a lock of its
            # own while a third creates a new file); emptied, it says no one holds the lake
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing releases the flock
            self._fd = None
        if self._s3 is not None:
            self._s3.release()
            self._s3 = None


def _s3_problem(exc: Exception) -> str:
    """S3's answer in a few words ("the bucket does not exist (NoSuchBucket)")."""
    error = getattr(exc, "response", {}).get("Error", {})
    code, message = error.get("Code"), error.get("Message")
    if code == "NoSuchBucket":
        return "the bucket does not exist (NoSuchBucket)"
    return f"{message or exc} ({code})" if code else str(exc)


def _read_local_holder(path: Path) -> dict[str, Any] | None:
    """The holder's record; the holder writes it right after taking the lock, so a few short retries."""
    for _ in range(5):
        with contextlib.suppress(OSError, ValueError):
            text = path.read_text()
            if text:
                return json.loads(text)
        time.sleep(0.05)
    return None


class _S3Lease:
    """The lease object of a lake on S3 (see the module docstring)."""

    def __init__(self, lake: str, holder: dict[str, Any], ttl_seconds: float, renew_seconds: float):
        from ingestion.object_store import s3_client

        parsed = urlparse(lake)
        self.lake = lake
        self.bucket = parsed.netloc
        self.key = "/".join(part for part in (parsed.path.strip("/"), LOCK_NAME) if part)
        self.client = s3_client()
        self.holder = holder
        self.ttl_seconds = ttl_seconds
        self.renew_seconds = renew_seconds
        self.etag: str | None = None
        self.lost: str | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._guard = threading.Lock()

    def _body(self) -> bytes:
        return json.dumps({**self.holder, "renewed_at": time.time(), "ttl_seconds": self.ttl_seconds}).encode()

    def _put(self, **condition: str) -> str | None:
        """PUT the lease under ``condition``; its new ETag, or None when the condition failed."""
        from botocore.exceptions import ClientError

        try:
            response = self.client.put_object(Bucket=self.bucket, Key=self.key, Body=self._body(), **condition)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412):
                return None
            raise
        return response["ETag"]

    def _current(self) -> tuple[dict[str, Any] | None, str | None]:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except self.client.exceptions.NoSuchKey:
            return None, None
        body = response["Body"].read()
        try:
            return json.loads(body), response["ETag"]
        except ValueError:
            return {}, response["ETag"]

    def _stale(self, holder: dict[str, Any]) -> bool:
        alive = _holder_alive_here(holder)
        if alive is not None:
            return not alive
        renewed = holder.get("renewed_at")
        ttl = float(holder.get("ttl_seconds") or self.ttl_seconds)
        return not isinstance(renewed, int | float) or time.time() - renewed > ttl

    def acquire(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._acquire()
        except (BotoCoreError, ClientError) as exc:
            raise LakeLockError(f"lake {self.lake}: cannot take the writer lock s3://{self.bucket}/{self.key}: "
                                f"{_s3_problem(exc)}") from None

    def _acquire(self) -> None:
        for _ in range(5):
            etag = self._put(IfNoneMatch="*")
            if etag is None:
                holder, stale_etag = self._current()
                if stale_etag is None:
                    continue  # released between the two requests: try again
                if holder is not None and not self._stale(holder):
                    raise LakeLockedError(self.lake, holder)
                etag = self._put(IfMatch=stale_etag)
                if etag is None:
                    continue  # someone else took it over (or renewed it) first
                log.warning("lake %s: took over the writer lock of a holder that is gone (%s)", self.lake,
                            describe(holder or {}))
            self.etag = etag
            self._renewer = threading.Thread(target=self._renew, name="lake-lock-renewer", daemon=True)
            self._renewer.start()
            return
        holder, _ = self._current()
        raise LakeLockedError(self.lake, holder)

    def _renew(self) -> None:
        while not self._stop.wait(self.renew_seconds):
            with self._guard:
                try:
                    etag = self._put(IfMatch=self.etag or "")
                except Exception as exc:  # noqa: BLE001 - an outage: keep trying until the TTL says otherwise
                    log.warning("lake %s: could not renew the writer lock: %s", self.lake, exc)
                    continue
                if etag is None:
                    self.lost = "the lease was taken over by another process"
                    log.error("lake %s: writer lock lost: %s", self.lake, self.lost)
                    return
                self.etag = etag

    def check(self) -> None:
        if self.lost:
            raise LakeLockLostError(f"lake {self.lake}: {self.lost}; this process stops writing")

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=10)
        with self._guard:
            if self.lost or self.etag is None:
                return
            holder, etag = self._current()
            if etag == self.etag and holder and holder.get("pid") == self.holder["pid"]:
                with contextlib.suppress(Exception):
                    self.client.delete_object(Bucket=self.bucket, Key=self.key)
