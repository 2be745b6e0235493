"""The landing-zone streaming source: whole files as bytes, split into lines (or Avro records) in Python.

Why ``binaryFile`` and not ``text``/``json``: Spark's text and JSON sources give no line
index (so no Kafka offset = start offset + line index) and decode with replacement, so a
line with invalid UTF-8 could neither be dead-lettered as ``bad_encoding`` nor kept
byte for byte. A Spark Python data source could read the bytes too, but the
``binaryFile`` streaming source is Spark's own file stream source: it tracks the files it
has seen in the checkpoint, supports ``maxFilesPerTrigger``/``maxBytesPerTrigger`` and
``Trigger.AvailableNow``, and works on every Hadoop file system (local, ``s3://``/``s3a://`` through S3A, ``hdfs://``).
Splitting happens in the Python parse workers (``parse.parse_file_batches``, a
``mapInArrow`` over files): Spark's ``split`` would decode the bytes (replacing invalid
UTF-8) before splitting. For a local landing zone the workers also read the files
(``reads_in_workers``): Spark only lists them and plans the batches.
"""

from __future__ import annotations

from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession

from ingestion import files
from ingestion.cdc.landing import is_hidden_file_name

#: The fixed schema of Spark's binaryFile source (a streaming source needs it up front).
BINARY_FILE_SCHEMA = "path string, modificationTime timestamp, length bigint, content binary"

#: Spark's file source never admits a file whose modification time is more than ``maxFileAge``
#: (default 7d) older than the newest file it has seen (``FileStreamSource.SeenFilesMap.isNewFile``):
#: a file copied with its times kept (``cp -p``, ``rsync -a``) or written by a host with a slow
#: clock would be skipped without a word. A landing file's name, not its time, says what it holds,
#: so no file is too old. The cost: the source's in-memory map of seen files keeps every file ever
#: read instead of a week's (~250 bytes of driver heap per file); the checkpoint's file-source log
#: keeps every file whatever the age (``FileStreamSourceLog.compactLogs`` drops nothing).
MAX_FILE_AGE = "36500d"



def topics_root(landing: str) -> str:
    return landing.rstrip("/") + "/topics"


def count_landed_files(landing: str) -> int | None:
    """Files the stream will read under the landing zone's ``topics/`` right now (None: no ``topics/``)."""
    root = topics_root(landing)
    if not files.exists(root):
        return None
    return sum(1 for path in files.list_files(root) if not is_hidden_file_name(path.rpartition("/")[2]))


def landing_stream(spark: SparkSession, landing: str, *, max_files_per_trigger: int | None = None) -> DataFrame:
    """A streaming DataFrame of landed files: ``path``, ``length`` and, unless the parse workers
    read the files themselves (``reads_in_workers``), ``content``.

    Every file under ``topics/`` that is not hidden: a format the ingestion does not read is
    dead-lettered with the file named (``unsupported_format``), never skipped silently. The
    columns are chosen here, in the source: ``foreachBatch`` hands the batch over as an already
    planned RDD, so a ``select`` in the batch cannot keep Spark from opening every file. Spark
    only lists a local landing zone then: its ``LocalFileSystem.open`` would fail on a name
    holding a colon (the checksum file ``.<name>.crc`` is built as a child path, which Hadoop
    parses as ``<scheme>:<path>``: URISyntaxException), while the workers read it and
    dead-letter it as a non-landing name.
    """
    reader = (
        spark.readStream.format("binaryFile")
        .schema(BINARY_FILE_SCHEMA)
        .option("recursiveFileLookup", "true")
        .option("maxFileAge", MAX_FILE_AGE)
        # a file deleted after Spark planned its batch is skipped by the read instead of failing the
        # task; the batch names it in a file_vanished dead letter (``BatchProcessor._vanished``)
        .option("ignoreMissingFiles", "true")
    )
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
    columns = ["path", "length"] if reads_in_workers(landing) else ["path", "length", "content"]
    return reader.load(topics_root(landing)).select(*columns)


def relative_landing_path(path: str, landing: str) -> str:
    """``topics/<topic>/.../<file>.json`` from the URI Spark reports (portable, short)."""
    # Spark reports local paths as Hadoop's Path.toString, not %-encoded: "%41" in a file
    # name is three characters, so the name is kept as it is (no unquoting)
    local = local_file_path(path) if urlparse(path).scheme in ("file", "") else path
    marker = "/topics/"
    index = local.rfind(marker)
    return local[index + 1:] if index >= 0 else local


def reads_in_workers(landing: str) -> bool:
    """True when the parse workers read the landed files themselves (a local landing zone).

    Spark then lists the files and plans the batches (checkpoint, admission limits) but
    never reads their content; other file systems (``s3a://``, ``hdfs://``) go through
    Spark's reader.
    """
    return urlparse(landing).scheme in ("", "file")


def local_file_path(path: str) -> str:
    """The local path of a ``file:`` path as Spark reports it (Hadoop's ``Path.toString``: not %-encoded)."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path
