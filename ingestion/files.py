"""Small files at a local path or an ``s3://``/``s3a://`` URI, addressed by their full location.

What Python reads and writes beside Spark: the streaming checkpoint's own files
(``pair.json``, ``kafka.json``, and Spark's offset, commit and file-source logs that
``lakehouse status`` reads) and the landing zone's listing. Spark reaches the same
locations through Hadoop (S3A for ``s3://`` and ``s3a://``). The work is done by the
storages of ``ingestion.object_store`` (local files; boto3 with retries for S3),
rooted at ``/`` or at the bucket.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from ingestion.object_store import LocalStorage, S3Storage, Storage, StorageError

FilesError = StorageError  # a location cannot be read, listed or written (names it and the cause)


def is_remote(location: str | Path) -> bool:
    """Whether ``location`` is a URI of another file system than the local one."""
    return urlparse(str(location)).scheme not in ("", "file")


def is_s3(location: str | Path) -> bool:
    """Whether ``location`` is an ``s3://`` or ``s3a://`` URI."""
    return urlparse(str(location)).scheme in ("s3", "s3a")


def join(location: str | Path, *parts: str) -> str:
    """``location/part/...`` for a local path or a URI."""
    return "/".join([str(location).rstrip("/"), *(part.strip("/") for part in parts)])


def _resolve(location: str | Path) -> tuple[Storage, str]:
    """The storage holding ``location`` and the path inside it."""
    text = str(location)
    parsed = urlparse(text)
    if parsed.scheme in ("s3", "s3a"):
        return S3Storage(f"s3://{parsed.netloc}"), parsed.path.strip("/")
    if parsed.scheme == "file":
        return LocalStorage("/"), parsed.path.strip("/")
    if parsed.scheme:
        raise FilesError(f"{text}: unsupported location (use a local path, s3:// or s3a://)")
    return LocalStorage("/"), str(Path(text).expanduser().resolve()).strip("/")


def read_text(location: str | Path) -> str | None:
    """The file's text (undecodable bytes replaced), None when it does not exist."""
    storage, path = _resolve(location)
    data = storage.read(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def write_text(location: str | Path, text: str) -> None:
    """Write the whole file at once (one PUT on S3; a temporary file renamed into place on a local disk)."""
    storage, path = _resolve(location)
    storage.write(path, text.encode())


def list_files(location: str | Path) -> list[str]:
    """The files under ``location`` (recursively) relative to it, ``/``-separated, sorted; empty when none."""
    storage, path = _resolve(location)
    strip = len(path) + 1 if path else 0
    return [name[strip:] for name in storage.list(f"{path}/" if path else "")]


def child_names(location: str | Path) -> list[str]:
    """The names of the files and directories directly under ``location``, sorted (empty when none)."""
    storage, path = _resolve(location)
    return storage.child_names(path)


def exists(location: str | Path) -> bool:
    """Whether a file or a directory (on S3: any object under the prefix) is at ``location``."""
    storage, path = _resolve(location)
    return storage.exists(path)


def holds_hudi_table(location: str | Path) -> bool:
    """Whether ``location`` (a local path, a ``file:``, ``s3://`` or ``s3a://`` URI) holds a Hudi
    table (its ``.hoodie/hoodie.properties``); a location on another file system is assumed to."""
    if is_remote(location) and not is_s3(location):
        return True
    return exists(join(location, ".hoodie", "hoodie.properties"))


def delete_tree(location: str | Path) -> int:
    """Remove ``location`` and everything under it; returns how many files went."""
    storage, path = _resolve(location)
    removed = storage.delete_prefix(f"{path}/")
    if isinstance(storage, LocalStorage) and storage.exists(path):
        Path("/", path).rmdir()  # the now empty directory itself
    return removed
