"""The landing-zone streaming source: whole files as bytes, split into lines in Python.

Why ``binaryFile`` and not ``text``/``json``: Spark's text and JSON sources give no line
index (so no Kafka offset = start offset + line index) and decode with replacement, so a
line with invalid UTF-8 could neither be dead-lettered as ``bad_encoding`` nor kept
byte for byte. A Spark Python data source could read the bytes too, but the
``binaryFile`` streaming source is Spark's own file stream source: it tracks the files it
has seen in the checkpoint, supports ``maxFilesPerTrigger``/``maxBytesPerTrigger`` and
``Trigger.AvailableNow``, and works on every Hadoop file system (local, ``s3a://``).
Splitting happens in a vectorized Arrow UDF: Spark's ``split`` would decode the bytes
(replacing invalid UTF-8) before splitting.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

#: Kafka Connect S3 sink file names end with this suffix.
LANDING_GLOB = "*.json"

#: The fixed schema of Spark's binaryFile source (a streaming source needs it up front).
BINARY_FILE_SCHEMA = "path string, modificationTime timestamp, length bigint, content binary"

#: Schema of the split lines (one row per landed line).
LINES_SCHEMA = "landing_file string, line_index int, raw binary"


def topics_root(landing: str) -> str:
    return landing.rstrip("/") + "/topics"


def landing_stream(spark: SparkSession, landing: str, *, max_files_per_trigger: int | None = None,
                   max_bytes_per_trigger: int | None = None) -> DataFrame:
    """A streaming DataFrame of landed files: ``path``, ``length``, ``content``."""
    reader = (
        spark.readStream.format("binaryFile")
        .schema(BINARY_FILE_SCHEMA)
        .option("pathGlobFilter", LANDING_GLOB)
        .option("recursiveFileLookup", "true")
    )
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
    if max_bytes_per_trigger:
        reader = reader.option("maxBytesPerTrigger", str(max_bytes_per_trigger))
    return reader.load(topics_root(landing)).select("path", "length", "content")


def relative_landing_path(path: str, landing: str) -> str:
    """``topics/<topic>/.../<file>.json`` from the URI Spark reports (portable, short)."""
    parsed = urlparse(path)
    local = unquote(parsed.path) if parsed.scheme in ("file", "") else path
    marker = "/topics/"
    index = local.rfind(marker)
    return local[index + 1:] if index >= 0 else local


def split_lines(batches: Iterator[pa.RecordBatch], landing: str) -> Iterator[pa.RecordBatch]:
    """Arrow UDF body: one output row per line of every landed file, bytes untouched.

    A final empty element after the last newline is not a line; every other element is
    (an empty line in the middle is dead-lettered by the parser).
    """
    for batch in batches:
        files: list[str] = []
        indexes: list[int] = []
        raws: list[bytes] = []
        for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist(),
                                 strict=True):
            rel = relative_landing_path(path, landing)
            pieces = content.split(b"\n")
            if pieces and pieces[-1] == b"":
                pieces.pop()
            files.extend([rel] * len(pieces))
            indexes.extend(range(len(pieces)))
            raws.extend(pieces)
        yield pa.RecordBatch.from_arrays(
            [pa.array(files, pa.string()), pa.array(indexes, pa.int32()), pa.array(raws, pa.binary())],
            names=["landing_file", "line_index", "raw"],
        )


def landed_lines(files: DataFrame, landing: str) -> DataFrame:
    """Split a (batch) DataFrame of landed files into lines."""
    return files.select("path", "content").mapInArrow(
        lambda it: split_lines(it, landing), LINES_SCHEMA
    )
