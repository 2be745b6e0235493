"""Small files at a local path or an ``s3://``/``s3a://`` URI, one way for both (pyarrow's file systems).

What Python reads and writes beside Spark: the streaming checkpoint's own files (``pair.json``,
``kafka.json``, Spark's offset and commit logs that ``lakehouse status`` reads) and the
landing zone's listing. Spark itself reaches the same locations through Hadoop (S3A for
``s3://`` and ``s3a://``). For S3 the settings are those S3A and hudi-rs get: the AWS
credential chain, ``AWS_REGION``/``AWS_DEFAULT_REGION``, and ``AWS_ENDPOINT_URL`` (or
``AWS_ENDPOINT_URL_S3``) for an S3-compatible store (MinIO, moto), path-style.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.fs as pafs

_S3_SCHEMES = ("s3", "s3a")


class FilesError(RuntimeError):
    """A location cannot be read or written (the message names it and the cause)."""


def is_remote(location: str | Path) -> bool:
    """Whether ``location`` is a URI of another file system than the local one."""
    return urlparse(str(location)).scheme not in ("", "file")


def is_s3(location: str | Path) -> bool:
    """Whether ``location`` is an ``s3://`` or ``s3a://`` URI."""
    return urlparse(str(location)).scheme in _S3_SCHEMES


def join(location: str | Path, *parts: str) -> str:
    """``location/part/...`` for a local path or a URI."""
    return "/".join([str(location).rstrip("/"), *(part.strip("/") for part in parts)])


def _s3() -> pafs.S3FileSystem:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    options: dict[str, object] = {}
    if endpoint:
        parsed = urlparse(endpoint)
        options.update(endpoint_override=parsed.netloc or endpoint, scheme=parsed.scheme or "https")
    if region:
        options["region"] = region
    return pafs.S3FileSystem(**options)


def resolve(location: str | Path) -> tuple[pafs.FileSystem, str]:
    """The file system of ``location`` and the path inside it."""
    text = str(location)
    parsed = urlparse(text)
    if parsed.scheme in _S3_SCHEMES:
        if not parsed.netloc:
            raise FilesError(f"{text}: no bucket name (expected s3://bucket/prefix)")
        return _s3(), f"{parsed.netloc}{parsed.path}".rstrip("/")
    if parsed.scheme == "file":
        return pafs.LocalFileSystem(), parsed.path
    if parsed.scheme:
        raise FilesError(f"{text}: unsupported location (use a local path, s3:// or s3a://)")
    return pafs.LocalFileSystem(), str(Path(text).expanduser().resolve())


def read_text(location: str | Path) -> str | None:
    """The file's text (undecodable bytes replaced), None when it does not exist."""
    fs, path = resolve(location)
    try:
        with fs.open_input_stream(path) as stream:
            return stream.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        if _is_missing(exc):
            return None
        raise FilesError(f"{location}: cannot read: {exc}") from exc


def write_text(location: str | Path, text: str) -> None:
    """Write the whole file (one PUT on S3; on a local disk, a temporary file renamed into place)."""
    fs, path = resolve(location)
    if isinstance(fs, pafs.LocalFileSystem):
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        temp.write_text(text)
        os.replace(temp, target)
        return
    try:
        with fs.open_output_stream(path) as stream:
            stream.write(text.encode())
    except OSError as exc:
        raise FilesError(f"{location}: cannot write: {exc}") from exc


def list_files(location: str | Path) -> list[str]:
    """The files under ``location`` (recursively) as paths relative to it, ``/``-separated and sorted;
    empty when it does not exist."""
    fs, path = resolve(location)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    except OSError as exc:
        raise FilesError(f"{location}: cannot list: {exc}") from exc
    prefix = path.rstrip("/") + "/"
    return sorted(info.path[len(prefix):] for info in infos
                  if info.type == pafs.FileType.File and info.path.startswith(prefix))


def child_names(location: str | Path) -> list[str]:
    """The names of the files and directories directly under ``location``, sorted (empty when none)."""
    fs, path = resolve(location)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
    except OSError as exc:
        raise FilesError(f"{location}: cannot list: {exc}") from exc
    return sorted(info.base_name for info in infos)


def exists(location: str | Path) -> bool:
    """Whether a file or directory (on S3: any object under the prefix) is at ``location``."""
    fs, path = resolve(location)
    try:
        return fs.get_file_info(path).type != pafs.FileType.NotFound
    except OSError as exc:
        raise FilesError(f"{location}: cannot look it up: {exc}") from exc


def delete_tree(location: str | Path) -> None:
    """Remove ``location`` and everything under it (nothing when it does not exist)."""
    fs, path = resolve(location)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return
    try:
        fs.delete_dir(path)
    except OSError as exc:
        raise FilesError(f"{location}: cannot delete: {exc}") from exc


def _is_missing(exc: OSError) -> bool:
    text = str(exc)
    return "NoSuchKey" in text or "Path does not exist" in text or "[errno 2]" in text.lower()
