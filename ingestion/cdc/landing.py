"""Kafka Connect S3-sink landing file names: ``<topic>+<partition>+<10-digit start offset>.json``.

A landing file lives anywhere under ``topics/<topic>/`` (any prefix before ``topics/``,
local path or ``s3://`` URI), directly or below the DefaultPartitioner's
``partition=<p>/`` directory or the DailyPartitioner's ``year=YYYY/month=MM/day=DD/``
directories. Topic, partition and start offset come from the file name; the line at
index ``i`` (0-based) of the file has Kafka offset ``start_offset + i``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OFFSET_DIGITS = 10
_FILE_NAME = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)\+(?P<partition>\d+)\+(?P<offset>\d{10})\.json\Z")
_DAILY_DIRS = re.compile(r"^year=\d{4}/month=\d{2}/day=\d{2}\Z")


class LandingPathError(ValueError):
    """A path is not a Kafka Connect S3-sink landing file (the message names path and problem)."""


@dataclass(frozen=True, order=True)
class LandingFile:
    topic: str
    partition: int
    start_offset: int


def landing_file_name(topic: str, partition: int, start_offset: int) -> str:
    """The S3-sink file name of a chunk: ``tickit.ecomm.sale+0+0000000000.json``."""
    if start_offset < 0 or start_offset >= 10**OFFSET_DIGITS:
        raise ValueError(f"start offset {start_offset} does not fit {OFFSET_DIGITS} digits")
    return f"{topic}+{partition}+{start_offset:0{OFFSET_DIGITS}d}.json"


def parse_landing_path(path: str) -> LandingFile:
    """(topic, partition, start offset) of a landing file path; LandingPathError when it is not one."""
    text = str(path).replace("\\", "/")
    directory, _, name = text.rpartition("/")
    match = _FILE_NAME.match(name)
    if not match:
        raise LandingPathError(f"{path}: file name must be <topic>+<partition>+<10-digit start offset>.json")
    topic = match.group("topic")
    partition = int(match.group("partition"))
    segments = directory.split("/")
    try:
        index = max(i for i, seg in enumerate(segments[:-1]) if seg == "topics" and segments[i + 1] == topic)
    except ValueError:
        raise LandingPathError(f"{path}: not under topics/{topic}/ (the topic of its file name)") from None
    between = "/".join(segments[index + 2 :])
    if between and not _DAILY_DIRS.match(between):
        if between.startswith("partition="):
            if between != f"partition={partition}":
                raise LandingPathError(f"{path}: directory {between} does not match partition {partition}")
        else:
            raise LandingPathError(
                f"{path}: unexpected directories {between!r} under topics/{topic}/ "
                "(expected partition=<p>/ or year=YYYY/month=MM/day=DD/)"
            )
    return LandingFile(topic, partition, int(match.group("offset")))
