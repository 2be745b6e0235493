"""Files under a root that is a local directory or ``s3://bucket/prefix`` (boto3), written atomically.

What Python reads and writes beside Spark: the simulator's landing zone and oracle, and
(through ``ingestion.files``) the streaming checkpoint's small files. Paths are relative to
the root and use ``/``. A local write goes to a hidden temporary file in the target
directory (``.<name>.tmp-<pid>``; names starting with ``.`` are ignored by Spark's file
listing and by the landing-name parser) and is renamed into place; an S3 write is one PUT,
which S3 makes visible atomically. boto3 honours the usual ``AWS_*`` variables, including
``AWS_ENDPOINT_URL`` (tests point it at moto's server); throttled and failed requests are
retried in botocore's ``standard`` mode, 10 attempts (``AWS_RETRY_MODE``/``AWS_MAX_ATTEMPTS``
override both).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from ingestion.errors import IngestionError


class Storage(Protocol):
    root: str

    def write(self, path: str, data: bytes) -> None: ...

    def read(self, path: str) -> bytes | None: ...

    def list(self, prefix: str) -> list[str]: ...

    def delete_prefix(self, prefix: str) -> int: ...

    def delete(self, path: str) -> None: ...

    def exists(self, path: str) -> bool: ...

    def child_names(self, path: str) -> builtins.list[str]: ...


class StorageError(IngestionError, RuntimeError):
    """The landing location cannot be used (names the location and the problem)."""


class LocalStorage:
    def __init__(self, root: str | Path):
        self.root = str(Path(root).expanduser().resolve())

    def _full(self, path: str) -> Path:
        return Path(self.root, *path.split("/"))

    def write(self, path: str, data: bytes) -> None:
        target = self._full(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, target)

    def read(self, path: str) -> bytes | None:
        try:
            return self._full(path).read_bytes()
        except FileNotFoundError:
            return None

    def list(self, prefix: str) -> list[str]:
        base = self._full(prefix)
        if not base.exists():
            return []
        root = Path(self.root)
        return sorted(str(p.relative_to(root)).replace(os.sep, "/") for p in base.rglob("*") if p.is_file())

    def delete(self, path: str) -> None:
        self._full(path).unlink(missing_ok=True)

    def exists(self, path: str) -> bool:
        return self._full(path).exists()

    def child_names(self, path: str) -> builtins.list[str]:
        base = self._full(path)
        return sorted(entry.name for entry in base.iterdir()) if base.is_dir() else []

    def delete_prefix(self, prefix: str) -> int:
        base = self._full(prefix)
        if not base.exists():
            return 0
        count = sum(1 for p in base.rglob("*") if p.is_file())
        shutil.rmtree(base)
        return count


def s3_client(endpoint_url: str | None = None):
    """A boto3 S3 client for ``endpoint_url`` (None: ``AWS_ENDPOINT_URL`` or AWS) that retries throttled
    requests; one per endpoint, region and key, so a changed environment gets a new one."""
    endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return _client(endpoint, region, os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_RETRY_MODE"),
                   os.environ.get("AWS_MAX_ATTEMPTS"))


@functools.cache
def _client(endpoint: str | None, region: str | None, _key_id: str | None, retry_mode: str | None,
            max_attempts: str | None):
    import boto3  # imported lazily: local runs do not need it
    from botocore.config import Config

    retries = {"mode": retry_mode or "standard", "max_attempts": int(max_attempts or 10)}
    return boto3.client("s3", endpoint_url=endpoint, region_name=region, config=Config(retries=retries))


class S3Storage:
    """``s3://bucket/prefix`` (``s3a://`` too: the same objects, as Hadoop's S3A names them).

    A request that still fails after botocore's retries (a missing bucket, no credentials, an
    outage) is a ``StorageError`` naming the location, the action and S3's answer.
    """

    def __init__(self, uri: str, endpoint_url: str | None = None):
        scheme, _, without_scheme = uri.partition("://")
        bucket, _, prefix = without_scheme.partition("/")
        if scheme not in ("s3", "s3a") or not bucket:
            raise StorageError(f"{uri}: no bucket name (expected s3://bucket/prefix)")
        self.root = uri.rstrip("/")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = s3_client(endpoint_url)

    def _key(self, path: str) -> str:
        path = path.strip("/")
        return f"{self.prefix}/{path}" if self.prefix and path else (self.prefix or path)

    @contextlib.contextmanager
    def _failing(self, action: str, key: str) -> Iterator[None]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"s3://{self.bucket}/{key}: cannot {action}: {exc}") from None

    def write(self, path: str, data: bytes) -> None:
        key = self._key(path)
        with self._failing("write", key):
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def read(self, path: str) -> bytes | None:
        key = self._key(path)
        with self._failing("read", key):
            try:
                response = self.client.get_object(Bucket=self.bucket, Key=key)
            except self.client.exceptions.NoSuchKey:
                return None
            return response["Body"].read()

    def _pages(self, prefix: str, **extra) -> Iterator[dict]:
        with self._failing("list", prefix):
            yield from self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix,
                                                                               **extra)

    def list(self, prefix: str) -> list[str]:
        """Every object whose path starts with ``prefix`` (end it with ``/`` for a directory)."""
        strip = len(self.prefix) + 1 if self.prefix else 0
        key = self._key(prefix)
        if key and (prefix.endswith("/") or not prefix.strip("/")):
            key += "/"
        return sorted(item["Key"][strip:] for page in self._pages(key) for item in page.get("Contents", []))

    def exists(self, path: str) -> bool:
        """An object at ``path``, or any under ``path/`` (S3 has no directories)."""
        key = self._key(path)
        with self._failing("list", key):
            found = self.client.list_objects_v2(Bucket=self.bucket, Prefix=key, MaxKeys=2).get("Contents", [])
        return any(item["Key"] == key or item["Key"].startswith(key.rstrip("/") + "/") for item in found)

    def child_names(self, path: str) -> builtins.list[str]:
        """Names of the objects and common prefixes directly under ``path/``."""
        key = self._key(path)
        key = f"{key}/" if key else ""
        names: builtins.list[str] = []
        for page in self._pages(key, Delimiter="/"):
            names.extend(item["Prefix"][len(key):].rstrip("/") for item in page.get("CommonPrefixes", []))
            names.extend(item["Key"][len(key):] for item in page.get("Contents", []))
        return sorted(name for name in names if name)

    def delete(self, path: str) -> None:
        key = self._key(path)
        with self._failing("delete", key):
            self.client.delete_object(Bucket=self.bucket, Key=key)

    def delete_prefix(self, prefix: str) -> int:
        keys = [self._key(path) for path in self.list(prefix)]
        for start in range(0, len(keys), 1000):
            chunk = [{"Key": key} for key in keys[start : start + 1000]]
            with self._failing("delete", prefix):
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": chunk, "Quiet": True})
        return len(keys)


def open_storage(landing: str | Path, endpoint_url: str | None = None) -> Storage:
    """The storage of a landing location: ``s3://bucket/prefix`` or a local directory."""
    text = str(landing)
    if text.startswith(("s3://", "s3a://")):
        return S3Storage(text, endpoint_url)
    if "://" in text:
        raise StorageError(f"{text}: unsupported landing location (use a local path or s3://bucket/prefix)")
    return LocalStorage(text)
