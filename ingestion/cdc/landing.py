"""Kafka Connect S3-sink landing file names: ``<topic>+<partition>+<10-digit start offset>.<ext>``.

The extension is the sink's format: ``.json`` (JsonFormat: one record per line),
``.json.gz`` (JsonFormat with ``s3.compression.type=gzip``), ``.bin`` / ``.bin.gz``
(ByteArrayFormat: each record's bytes followed by the line separator, read as JSON lines:
Debezium JSON values through the ByteArrayConverter) or ``.avro`` (AvroFormat: an Avro
object container file, ``ingestion.cdc.avro_records``). Any other extension (e.g. the
ParquetFormat's ``.parquet``) is ``UnsupportedLandingFormat``: the ingestion dead-letters
such a file whole, never skips it silently. A landing file lives anywhere under
``topics/<topic>/`` (any prefix before ``topics/``, local path or ``s3://`` URI), directly
or below the DefaultPartitioner's ``partition=<p>/`` directory or the Daily/Hourly
partitioners' ``year=YYYY/month=MM/day=DD/[hour=HH/]`` directories. Topic, partition and
start offset come from the file name; the record at
index ``i`` (0-based: the line of a JSON file, the record of an Avro file) has Kafka
offset ``start_offset + i``. A sink that drops records (``behavior.on.null.values=ignore``
drops tombstones) leaves gaps in a file's real offsets: ``start_offset + i`` is then a
lower bound that keeps the order of the records, not the real offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingestion.errors import IngestionError

OFFSET_DIGITS = 10
#: Landing file formats the simulator writes (the sink's ``format.class``).
JSON, AVRO = "json", "avro"
FILE_FORMATS = (JSON, AVRO)
GZIP = "gzip"
#: What the ingestion reads, by file name suffix: (how its records are parsed, compression).
READ_SUFFIXES: dict[str, tuple[str, str | None]] = {
    ".json": (JSON, None),
    ".json.gz": (JSON, GZIP),
    ".bin": (JSON, None),
    ".bin.gz": (JSON, GZIP),
    ".avro": (AVRO, None),
}
#: File name suffixes of the landing files the ingestion reads.
LANDING_SUFFIXES = tuple(READ_SUFFIXES)
_FILE_NAME = re.compile(
    r"^(?P<topic>[A-Za-z0-9._-]+)\+(?P<partition>\d+)\+(?P<offset>\d{10})(?P<suffix>\.[A-Za-z0-9.]+)\Z"
)
_DATE_DIRS = re.compile(r"^year=\d{4}/month=\d{2}/day=\d{2}(/hour=\d{2})?\Z")


class LandingPathError(IngestionError, ValueError):
    """A path is not a Kafka Connect S3-sink landing file (the message names path and problem)."""


class UnsupportedLandingFormat(LandingPathError):
    """A landing file of a sink format the ingestion does not read (e.g. ``.parquet``)."""


@dataclass(frozen=True, order=True)
class LandingFile:
    topic: str
    partition: int
    start_offset: int
    format: str = JSON  # JSON or AVRO: how the records are parsed (from the file name's suffix)
    compression: str | None = None  # GZIP for ``.json.gz`` / ``.bin.gz``


def landing_file_name(topic: str, partition: int, start_offset: int, file_format: str = JSON) -> str:
    """The S3-sink file name of a chunk: ``tickit.ecomm.sale+0+0000000000.json`` (or ``.avro``)."""
    if start_offset < 0 or start_offset >= 10**OFFSET_DIGITS:
        raise ValueError(f"start offset {start_offset} does not fit {OFFSET_DIGITS} digits")
    if file_format not in FILE_FORMATS:
        raise ValueError(f"file format must be one of {FILE_FORMATS}, got {file_format!r}")
    return f"{topic}+{partition}+{start_offset:0{OFFSET_DIGITS}d}.{file_format}"


def is_hidden_file_name(name: str) -> bool:
    """Names Spark's file sources skip (``.``/``_`` prefixes: temporary and marker files).

    Every other file under ``topics/`` is read: a landing file of a format the ingestion
    reads, or a dead letter naming the file (``UnsupportedLandingFormat``)."""
    return name.startswith((".", "_"))


def is_landing_file_name(name: str) -> bool:
    """Whether a file name has the suffix of a format the ingestion reads and is not hidden
    (``.``/``_``, as Spark skips)."""
    return name.endswith(LANDING_SUFFIXES) and not name.startswith((".", "_"))


def is_avro_path(path: str) -> bool:
    """Whether a landing path names an Avro file (by its extension, whatever the rest of the name)."""
    return str(path).endswith(".avro")


def is_gzip_path(path: str) -> bool:
    """Whether a landing path names a gzip-compressed file (``.json.gz``, ``.bin.gz``)."""
    return str(path).endswith(".gz")


def parse_landing_path(path: str) -> LandingFile:
    """(topic, partition, start offset) of a landing file path; LandingPathError when it is not one."""
    text = str(path).replace("\\", "/")
    directory, _, name = text.rpartition("/")
    match = _FILE_NAME.match(name)
    if not match:
        raise LandingPathError(
            f"{path}: file name must be <topic>+<partition>+<10-digit start offset>.json (or .avro)"
        )
    suffix = match.group("suffix")
    if suffix not in READ_SUFFIXES:
        raise UnsupportedLandingFormat(
            f"{path}: unsupported landing format {suffix!r} (the ingestion reads {', '.join(READ_SUFFIXES)}; "
            "set the S3 sink's format.class to JsonFormat or AvroFormat)"
        )
    topic = match.group("topic")
    partition = int(match.group("partition"))
    segments = directory.split("/")
    try:
        index = max(i for i, seg in enumerate(segments[:-1]) if seg == "topics" and segments[i + 1] == topic)
    except ValueError:
        raise LandingPathError(f"{path}: not under topics/{topic}/ (the topic of its file name)") from None
    between = "/".join(segments[index + 2 :])
    if between and not _DATE_DIRS.match(between):
        if between.startswith("partition="):
            if between != f"partition={partition}":
                raise LandingPathError(f"{path}: directory {between} does not match partition {partition}")
        else:
            raise LandingPathError(
                f"{path}: unexpected directories {between!r} under topics/{topic}/ "
                "(expected partition=<p>/ or year=YYYY/month=MM/day=DD/[hour=HH/])"
            )
    file_format, compression = READ_SUFFIXES[suffix]
    return LandingFile(topic, partition, int(match.group("offset")), file_format, compression)
