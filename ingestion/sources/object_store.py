"""Where the simulator writes: a local directory or ``s3://bucket/prefix`` (boto3), atomically.

Paths are relative to the landing root and use ``/``. A local write goes to a hidden
temporary file in the target directory (``.<name>.tmp-<pid>``; names starting with ``.``
are ignored by Spark's file listing and by the landing-name parser) and is renamed into
place; an S3 write is one PUT, which S3 makes visible atomically. boto3 honours the usual
``AWS_*`` variables, including ``AWS_ENDPOINT_URL`` (tests point it at moto's server).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol


class Storage(Protocol):
    root: str

    def write(self, path: str, data: bytes) -> None: ...

    def read(self, path: str) -> bytes | None: ...

    def list(self, prefix: str) -> list[str]: ...

    def delete_prefix(self, prefix: str) -> int: ...

    def delete(self, path: str) -> None: ...


class StorageError(RuntimeError):
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

    def delete_prefix(self, prefix: str) -> int:
        base = self._full(prefix)
        if not base.exists():
            return 0
        count = sum(1 for p in base.rglob("*") if p.is_file())
        shutil.rmtree(base)
        return count


class S3Storage:
    def __init__(self, uri: str, endpoint_url: str | None = None):
        import boto3  # imported lazily: local runs do not need it

        without_scheme = uri[len("s3://") :]
        bucket, _, prefix = without_scheme.partition("/")
        if not bucket:
            raise StorageError(f"{uri}: no bucket name (expected s3://bucket/prefix)")
        self.root = uri.rstrip("/")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = boto3.client("s3", endpoint_url=endpoint_url)

    def _key(self, path: str) -> str:
        return f"{self.prefix}/{path}" if self.prefix else path

    def write(self, path: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(path), Body=data)

    def read(self, path: str) -> bytes | None:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(path))
        except self.client.exceptions.NoSuchKey:
            return None
        return response["Body"].read()

    def list(self, prefix: str) -> list[str]:
        strip = len(self.prefix) + 1 if self.prefix else 0
        keys: list[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
            keys.extend(item["Key"][strip:] for item in page.get("Contents", []))
        return sorted(keys)

    def delete(self, path: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(path))

    def delete_prefix(self, prefix: str) -> int:
        keys = [self._key(path) for path in self.list(prefix)]
        for start in range(0, len(keys), 1000):
            chunk = [{"Key": key} for key in keys[start : start + 1000]]
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": chunk, "Quiet": True})
        return len(keys)


def open_storage(landing: str | Path, endpoint_url: str | None = None) -> Storage:
    """The storage of a landing location: ``s3://bucket/prefix`` or a local directory."""
    text = str(landing)
    if text.startswith("s3://"):
        return S3Storage(text, endpoint_url)
    if "://" in text:
        raise StorageError(f"{text}: unsupported landing location (use a local path or s3://bucket/prefix)")
    return LocalStorage(text)
