"""A landing zone on S3 read through boto3, for machines whose Spark has no S3A connector.

The pyspark wheel ships no ``hadoop-aws`` jar, so ``s3a://`` paths do not work on the
embedded default (on a cluster with S3A, point ``--landing`` at ``s3a://...`` and Spark
reads it directly). For ``s3://bucket/prefix`` the ingestion mirrors the landing files
into a local directory under ``$LAKEHOUSE_HOME`` and streams from there:

* Kafka Connect S3 sink objects are immutable and named by their first offset, so a
  file that is already mirrored never needs a second download;
* each file is written to a temporary name and renamed, so the file stream source never
  sees half a file;
* the checkpoint stays keyed by the ``s3://`` URI (with the lake), and the mirror only
  ever adds files, so Spark's own file tracking gives exactly-once as for a local
  landing zone; in continuous mode the mirror is refreshed before every trigger.

Credentials and region come from boto3's standard chain; ``AWS_ENDPOINT_URL`` (or
``--s3-endpoint-url``) points at S3-compatible stores such as MinIO or moto.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path

from ingestion.cdc.landing import is_hidden_file_name
from ingestion.sources.object_store import S3Storage

log = logging.getLogger("lakehouse.ingest")


def is_s3_uri(location: str) -> bool:
    return location.startswith("s3://")


class S3LandingError(RuntimeError):
    """The S3 landing zone cannot be listed or read (message names the bucket and the cause)."""


class S3LandingMirror:
    """Copies new landing files of ``s3://bucket/prefix`` into a local directory."""

    def __init__(self, uri: str, mirrors_root: Path, endpoint_url: str | None = None):
        self.uri = uri.rstrip("/")
        self.storage = S3Storage(self.uri, endpoint_url=endpoint_url)
        self.local = mirrors_root / hashlib.sha256(self.uri.encode()).hexdigest()[:16]

    def sync(self) -> int:
        """Download every landing file not mirrored yet; returns how many were copied."""
        try:
            keys = self.storage.list("topics/")
        except Exception as exc:  # noqa: BLE001 - botocore raises many types; all mean "cannot list"
            raise S3LandingError(f"landing zone {self.uri}: cannot list s3://{self.storage.bucket}: {exc}") from exc
        copied = 0
        for relative in keys:
            if is_hidden_file_name(relative.rpartition("/")[2]):
                continue
            target = self.local / relative
            if target.exists():
                continue
            data = self.storage.read(relative)
            if data is None:  # deleted between the listing and the read
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.partial")
            partial.write_bytes(data)
            os.replace(partial, target)
            copied += 1
        (self.local / "topics").mkdir(parents=True, exist_ok=True)
        return copied


class MirrorRefresher:
    """Refreshes a mirror every ``interval`` seconds in a background thread (continuous mode)."""

    def __init__(self, mirror: S3LandingMirror, interval: float):
        self.mirror = mirror
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="s3-landing-mirror", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.mirror.sync()
            except S3LandingError as exc:  # transient S3 trouble: keep streaming what is mirrored
                log.warning("%s; retrying in %.0f s", exc, self.interval)
