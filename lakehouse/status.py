"""What ``lakehouse status`` reports: per bronze table commits, registration, rows, lag, drift, dead letters."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import asdict, dataclass, field

from ingestion import files
from ingestion.sources.kafka import topic_lag
from ingestion.sources.landing import count_landed_files
from ingestion.stream.bronze import DEAD_LETTER_TABLE, all_table_names, bronze_contracts, spark_type, table_path
from ingestion.stream.checkpoint import checkpoint_dir, kafka_sources, normalize_location, query_dir
from ingestion.stream.reading import completed_commits, read_latest, row_count, schema
from ingestion.stream.schema_history import read_history, schema_versions


@dataclass
class TableStatus:
    table: str
    exists: bool
    last_commit: str | None = None
    registered: bool | None = None  # in the metastore behind the Thrift server (None: not asked)
    commits: int = 0
    rows: int = 0
    commit_age_seconds: float | None = None
    drift_columns: list[str] = field(default_factory=list)  # columns bronze gained beyond the contract
    schema_version: int | None = None  # 1: the contract; one more per batch that changed it (bronze.schema_change)
    widened_columns: list[str] = field(default_factory=list)  # "name contract->bronze" types
    dead_letters: int = 0
    dead_letters_by_reason: dict[str, int] = field(default_factory=dict)


@dataclass
class KafkaLag:
    """A topic's consumer lag: records on the broker the ingestion has not committed (None: no answer)."""

    bootstrap: str
    topic: str
    end_offsets: int
    committed: int
    lag: int | None


@dataclass
class LakeStatus:
    lake: str
    landing: str
    tables: list[TableStatus]
    landed_files: int | None = None
    processed_files: int | None = None
    sync_error: str | None = None
    kafka: list[KafkaLag] = field(default_factory=list)  # per topic of each Kafka ingestion into this lake

    @property
    def backlog_files(self) -> int | None:
        if self.landed_files is None or self.processed_files is None:
            return None
        return max(0, self.landed_files - self.processed_files)

    def to_json(self) -> str:
        doc = asdict(self)
        doc["backlog_files"] = self.backlog_files
        return json.dumps(doc, indent=2, sort_keys=True)


def instant_to_datetime(instant: str) -> dt.datetime:
    """A Hudi instant ``yyyyMMddHHmmssSSS`` (UTC here) as a naive UTC datetime."""
    return dt.datetime.strptime(instant[:14], "%Y%m%d%H%M%S") + dt.timedelta(milliseconds=int(instant[14:17] or 0))


def processed_files(checkpoint: str) -> int | None:
    """Distinct files the streaming query has committed (from its file-source log)."""
    log_dir = files.join(query_dir(checkpoint), "sources", "0")
    names = [name for name in files.child_names(log_dir) if not name.startswith(".") and not name.endswith(".tmp")]
    if not names:
        return None
    seen: set[str] = set()
    for name in names:
        for line in (files.read_text(files.join(log_dir, name)) or "").splitlines()[1:]:
            try:
                seen.add(json.loads(line)["path"])
            except (ValueError, KeyError):
                continue
    return len(seen)


def table_status(lake: str, table: str, registered: set[str] | None, now: dt.datetime,
                 versions: dict[str, int] | None = None) -> TableStatus:
    """``versions``: the schema versions of the lake's tables when the caller has read them (``schema_versions``)."""
    path = table_path(lake, table)
    known = None if registered is None else table in registered
    if not files.holds_hudi_table(path):
        return TableStatus(table, exists=False, registered=known)
    instants = completed_commits(path)
    status = TableStatus(table, exists=True, commits=len(instants), registered=known)
    if instants:
        status.last_commit = instants[-1]
        status.commit_age_seconds = round((now - instant_to_datetime(instants[-1])).total_seconds(), 1)
        status.rows = row_count(path)
    contracts = bronze_contracts()
    if table in contracts:
        if versions is None:
            versions = schema_versions(read_history(lake))
        status.schema_version = versions.get(table, 1)
        expected = dict(contracts[table].bronze_columns)
        for bronze in schema(path):
            if bronze.name not in expected:
                status.drift_columns.append(bronze.name)
                continue
            kind = _spark_type(bronze.type)
            if kind is not None and kind != expected[bronze.name]:
                status.widened_columns.append(f"{bronze.name} {expected[bronze.name]}->{kind}")
    return status


def lake_status(lake: str, landing: str, checkpoints_root: str, registered: set[str] | None = None,
                sync_error: str | None = None) -> LakeStatus:
    """``registered``: the tables of the bronze database the Thrift server knows (None: not asked)."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    versions = schema_versions(read_history(lake))
    tables = [table_status(lake, t, registered, now, versions) for t in all_table_names()]
    dead_path = table_path(lake, DEAD_LETTER_TABLE)
    if files.holds_hudi_table(dead_path):
        dead = read_latest(dead_path, ["table_name", "reason"])
        if dead is not None:
            by_table: dict[str, Counter] = {}
            for name, reason in zip(dead.column("table_name").to_pylist(), dead.column("reason").to_pylist(),
                                    strict=True):
                by_table.setdefault(name or DEAD_LETTER_TABLE, Counter())[reason] += 1
            for status in tables:
                counts = by_table.get(status.table)
                if status.table == DEAD_LETTER_TABLE:
                    counts = sum(by_table.values(), Counter())
                if counts:
                    status.dead_letters = sum(counts.values())
                    status.dead_letters_by_reason = dict(sorted(counts.items()))
    landed = count_landed_files(landing)
    processed = processed_files(checkpoint_dir(checkpoints_root, landing, lake))
    return LakeStatus(lake, landing, tables, landed, processed, sync_error, kafka_lags(checkpoints_root, lake))


def kafka_lags(checkpoints_root: str, lake: str) -> list[KafkaLag]:
    """The lag per topic of every Kafka ingestion into ``lake`` (its checkpoint has a ``kafka.json``).

    Spark's Kafka source commits no consumer-group offsets: the lag is the broker's end
    offsets minus the offsets of the checkpoint's latest committed batch.
    """
    lags: list[KafkaLag] = []
    for checkpoint, pair, kafka in kafka_sources(checkpoints_root):
        if pair.get("lake") != normalize_location(lake):
            continue
        for item in topic_lag(kafka["bootstrap"], list(kafka["topics"]), query_dir(checkpoint)):
            lags.append(KafkaLag(kafka["bootstrap"], item.topic, item.end_offsets, item.consumed, item.lag))
    return lags


def _spark_type(kind) -> str | None:
    try:
        return spark_type(kind)
    except ValueError:
        return None
