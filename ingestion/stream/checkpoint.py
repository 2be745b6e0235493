"""Where a streaming query keeps its checkpoint, and how to forget it.

The checkpoint of a (source, lake) pair lives under ``<checkpoints root>/<key>/``, where
``key`` hashes the pair: pointing the same landing zone at another lake starts from
scratch instead of skipping files the other lake already has. The root is a local
directory (``$LAKEHOUSE_HOME/checkpoints``) or, for a lake on S3, a prefix in the bucket
(``<lake>/_checkpoints``): a cluster's driver may run on any machine, and its local disk
goes with it. Spark writes ``query/`` (offsets, commits, the file-source log); the
project writes ``pair.json`` and, for Kafka, ``kafka.json`` beside it.

On S3 Spark's default checkpoint file manager (write a temporary file, then rename) would
copy every log entry and could leave a half-written one behind; ``checkpoint_confs``
selects ``spark-hadoop-cloud``'s abortable-stream manager there, which writes each file
once, as one PUT made visible at close, and aborts it on failure.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import unquote

from ingestion import files

#: spark-hadoop-cloud's checkpoint file manager for object stores (S3A's abortable output streams).
ABORTABLE_MANAGER = "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager"
FILE_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"


def normalize_location(location: str | Path) -> str:
    """A stable spelling of a local path or URI (``s3a://b/p/`` == ``s3a://b/p``)."""
    if files.is_remote(location):
        return str(location).rstrip("/")
    return str(Path(location).expanduser().resolve())


def checkpoint_key(landing: str, lake: str) -> str:
    pair = f"{normalize_location(landing)}\n{normalize_location(lake)}"
    return hashlib.sha256(pair.encode()).hexdigest()[:16]


def checkpoint_dir(checkpoints_root: str | Path, landing: str, lake: str) -> str:
    """The checkpoint location of the pair (a local path or a URI)."""
    return files.join(normalize_location(checkpoints_root), checkpoint_key(landing, lake))


def query_dir(checkpoint: str) -> str:
    """Where Spark keeps the streaming query's own checkpoint."""
    return files.join(checkpoint, "query")


def prepare_checkpoint(checkpoints_root: str | Path, landing: str, lake: str, *, reset: bool = False) -> str:
    """The pair's checkpoint location, with a ``pair.json`` naming the landing zone and lake (so an
    operator can tell the hashed directories apart); ``reset`` first removes what is there."""
    location = checkpoint_dir(checkpoints_root, landing, lake)
    if reset:
        files.delete_tree(location)
    pair = {"landing": normalize_location(landing), "lake": normalize_location(lake)}
    files.write_text(files.join(location, "pair.json"), json.dumps(pair, indent=2) + "\n")
    return location


def query_id(checkpoint: str) -> str | None:
    """The streaming query id Spark stored in the checkpoint (stable across restarts)."""
    text = files.read_text(files.join(query_dir(checkpoint), "metadata"))
    try:
        return json.loads(text)["id"] if text else None
    except (KeyError, ValueError):
        return None


def file_manager(checkpoint: str) -> str | None:
    """The checkpoint file manager of a query checkpointing at ``checkpoint``: the abortable-stream
    one on S3, None (Spark's default, rename-based) on a local disk or HDFS."""
    return ABORTABLE_MANAGER if files.is_s3(checkpoint) else None


def kafka_sources(checkpoints_root: str | Path) -> list[tuple[str, dict, dict]]:
    """(checkpoint, pair.json, kafka.json) of every Kafka ingestion's checkpoint under the root."""
    root = normalize_location(checkpoints_root)
    found = []
    for key in files.child_names(root):
        checkpoint = files.join(root, key)
        text = files.read_text(files.join(checkpoint, "kafka.json"))
        if text is None:
            continue
        try:
            kafka = json.loads(text)
            pair = json.loads(files.read_text(files.join(checkpoint, "pair.json")) or "")
        except ValueError:
            continue
        found.append((checkpoint, pair, kafka))
    return found


def planned_files(checkpoint: str, batch_id: int) -> list[str] | None:
    """The files Spark's file source planned for micro-batch ``batch_id``, as ``Path.toString`` spells them.

    Read from the query's checkpoint: ``offsets/<batch_id>`` (and ``<batch_id - 1>``) give the
    file-source log ids of the batch, ``sources/0/<id>`` (or ``<id>.compact``, every 10th id,
    whose entries are filtered by their ``batchId``) the files. A file deleted after the source
    listed it is in this list but in no row of the batch: Spark's file index drops a missing
    root path with a WARN (``HadoopFSUtils.listLeafFiles``). None: the logs cannot be read.
    """
    query = query_dir(checkpoint)

    def log_offset(batch: int) -> int | None:
        text = files.read_text(files.join(query, "offsets", str(batch)))
        if text is None:
            return None
        lines = text.splitlines()  # v1, the batch metadata, then one offset per source
        try:
            return int(json.loads(lines[2])["logOffset"])
        except (IndexError, KeyError, TypeError, ValueError):
            return None

    end = log_offset(batch_id)
    if end is None:
        return None
    start = log_offset(batch_id - 1) if batch_id > 0 else -1
    if start is None:
        return None
    planned: list[str] = []
    for log_id in range(start + 1, end + 1):
        text = None
        for name in (str(log_id), f"{log_id}.compact"):
            text = files.read_text(files.join(query, "sources", "0", name))
            if text is not None:
                break
        if text is None:
            return None
        for line in text.splitlines()[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("batchId") == log_id:
                planned.append(unquote(entry["path"]))  # SparkPath.urlEncoded -> Path.toString
    return planned
