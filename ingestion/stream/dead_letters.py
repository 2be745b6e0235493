"""The dead-letter table: list bad lines, and replay fixed or reclassified ones into bronze.

Replay re-parses each selected line with the current contracts and parser (a contract
that now knows a column, a fixed parser) or with a corrected line supplied by the
operator, inserts the events that now parse into their bronze tables (record keys make
a replay idempotent) and deletes exactly those entries from ``bronze.dead_letter``.
Lines that still fail stay, with their new reason reported.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ingestion.cdc.contracts import BRONZE_ORDERING_COLUMN, topic_map
from ingestion.cdc.kafka_values import kafka_source_name, parse_kafka_value, wire_schema_id
from ingestion.cdc.parser import FILE_VANISHED, BronzeEvent, DeadLetter, Tombstone, parse_line
from ingestion.errors import IngestionError
from ingestion.lake_lock import LakeWriterLock
from ingestion.sources.schema_registry import SchemaRegistryClient
from ingestion.stream.bronze import (
    COMMIT_METADATA_PREFIX,
    DEAD_LETTER_KEY,
    DEAD_LETTER_TABLE,
    bronze_contracts,
    table_path,
    write_options,
)
from ingestion.stream.hudi_tables import is_created, latest_commit, refuse_foreign_bloom_filters
from ingestion.stream.late_copies import ANY_OFFSET, LATE_ROWS_OPTIONS, batch_offsets, resolve_late
from ingestion.stream.parse import LineParser, utc_timestamps
from ingestion.stream.reading import latest_rows

REPLAY_METADATA_KEY = COMMIT_METADATA_PREFIX + "dead_letter_replay"


class DeadLetterError(IngestionError, ValueError):
    """Bad input to list/replay (names the input and the problem)."""


def list_dead_letters(lake: str, *, reason: str | None = None, topic: str | None = None,
                      table: str | None = None, ids: Iterable[str] | None = None,
                      limit: int | None = None) -> list[dict]:
    """Dead letters matching every given filter, oldest landing position first."""
    wanted = set(ids) if ids is not None else None
    rows = []
    for row in latest_rows(table_path(lake, DEAD_LETTER_TABLE)):
        if reason and row["reason"] != reason:
            continue
        if topic and row["topic"] != topic:
            continue
        if table and row["table_name"] != table:
            continue
        if wanted is not None and row[DEAD_LETTER_KEY] not in wanted:
            continue
        rows.append({k: v for k, v in row.items() if not k.startswith("_hoodie")})
    rows.sort(key=lambda r: (r["topic"] or "", r["kafka_partition"] or 0, r["kafka_offset"] or 0,
                             r["landing_file"] or ""))
    return rows[:limit] if limit else rows


def load_fixes(path: str | Path) -> dict[str, dict]:
    """Corrected lines from a JSON-lines file: ``{"dead_letter_id": ..., "raw_line": ..., "topic"?: ...}``."""
    fixes: dict[str, dict] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise DeadLetterError(f"{path}:{number}: not JSON ({exc})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get(DEAD_LETTER_KEY), str) \
                or not isinstance(doc.get("raw_line"), str):
            raise DeadLetterError(f"{path}:{number}: needs string fields {DEAD_LETTER_KEY!r} and 'raw_line'")
        fixes[doc[DEAD_LETTER_KEY]] = doc
    return fixes


@dataclass
class ReplayResult:
    selected: int = 0
    replayed: dict[str, int] = field(default_factory=dict)  # table -> events inserted or already present
    tombstones: int = 0
    still_bad: list[dict] = field(default_factory=list)  # dead_letter_id, reason, message
    commits: dict[str, str] = field(default_factory=dict)
    removed: int = 0
    not_found: list[str] = field(default_factory=list)  # fixes naming no selected dead letter


def replay(lake: str, rows: list[dict], *, fixes: dict[str, dict] | None = None,
           dry_run: bool = False, schema_registry_url: str | None = None) -> ReplayResult:
    """Re-parse ``rows`` (from ``list_dead_letters``) and move the ones that now parse into bronze.

    A Kafka record's value in the Confluent wire format (``registry_unavailable``,
    ``unknown_schema_id``: kept base64) is decoded with its writer schema from
    ``schema_registry_url``, as the ingestion decodes it; without one it stays, naming the option.

    Unless ``dry_run``, the lake's writer lock is taken first: while an ingestion (or another replay)
    writes the lake, the replay is refused with ``LakeLockedError`` before it writes anything.
    """
    if dry_run:
        return _replay(lake, rows, fixes, dry_run=True, schema_registry_url=schema_registry_url)
    with LakeWriterLock(lake):
        return _replay(lake, rows, fixes, dry_run=False, schema_registry_url=schema_registry_url)


def _replay(lake: str, rows: list[dict], fixes: dict[str, dict] | None, *, dry_run: bool,
            schema_registry_url: str | None = None) -> ReplayResult:
    fixes = fixes or {}
    registry = SchemaRegistryClient(schema_registry_url, wait_seconds=10.0) if schema_registry_url else None
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    topics = topic_map()
    result = ReplayResult(selected=len(rows))
    # A fix for a line that is not (or no longer) in the table: already replayed, or a typo.
    result.not_found = sorted(set(fixes) - {r[DEAD_LETTER_KEY] for r in rows})
    events: dict[str, list[BronzeEvent]] = {}
    resolved: list[dict] = []
    for row in rows:
        fix = fixes.get(row[DEAD_LETTER_KEY])
        if fix is not None:
            raw = fix["raw_line"].encode()
            topic = fix.get("topic") or row["topic"]
        else:
            raw = base64.b64decode(row["raw_line"]) if row["raw_is_base64"] else row["raw_line"].encode()
            topic = row["topic"]
        if topic is None:
            result.still_bad.append({DEAD_LETTER_KEY: row[DEAD_LETTER_KEY], "reason": row["reason"],
                                     "message": "no topic: supply one in the fix file"})
            continue
        if row["reason"] == FILE_VANISHED and fix is None:
            result.still_bad.append({DEAD_LETTER_KEY: row[DEAD_LETTER_KEY], "reason": row["reason"],
                                     "message": "the file was deleted before it was read: nothing to re-parse; "
                                     "land it again under a new path"})
            continue
        partition, offset = row["kafka_partition"] or 0, row["kafka_offset"] or 0
        if fix is None and wire_schema_id(raw) is not None \
                and row["landing_file"] == kafka_source_name(topic, partition):
            # a Kafka record's Avro value: through the registry, as the ingestion reads it
            parsed = parse_kafka_value(raw, topic=topic, partition=partition, offset=offset, ingested_at=now,
                                       contracts=topics, schemas=registry)
        else:
            parsed = parse_line(raw, topic=topic, partition=partition, offset=offset,
                                landing_file=row["landing_file"] or "", ingested_at=now, contracts=topics)
        if isinstance(parsed, DeadLetter):
            result.still_bad.append({DEAD_LETTER_KEY: row[DEAD_LETTER_KEY], "reason": parsed.reason,
                                     "message": parsed.message})
            continue
        if isinstance(parsed, Tombstone):
            result.tombstones += 1
        else:
            events.setdefault(parsed.table, []).append(parsed)
            result.replayed[parsed.table] = result.replayed.get(parsed.table, 0) + 1
        resolved.append(row)
    if dry_run or not resolved:
        return result
    _write_replay(lake, events, resolved, now, result)
    return result


def _write_replay(lake: str, events: dict[str, list[BronzeEvent]], resolved: list[dict], now: dt.datetime,
                  result: ReplayResult) -> None:
    """Commit the replayed events to their bronze tables, then delete their dead letters."""
    marker = json.dumps({"replayed_at": now.isoformat(), "dead_letters": len(resolved)})
    spark = spark_session()
    refuse_foreign_bloom_filters(spark, [table_path(lake, table) for table in [*sorted(events), DEAD_LETTER_TABLE]])
    builder = LineParser(now)
    contracts = bronze_contracts()
    for table, table_events in sorted(events.items()):
        # within the selection, the first wins; then each event's lowest-offset copy (late_copies)
        keys = [*contracts[table].primary_key, BRONZE_ORDERING_COLUMN]
        instant = _write_events(spark, lake, table, first_rows(builder.event_table(table, table_events), keys),
                                keys, marker)
        if instant:
            result.commits[table] = instant
    keys = pa.Table.from_pylist([dict(r) for r in resolved], schema=builder.dead_schema)
    instant = _write(spark, lake, DEAD_LETTER_TABLE, keys, marker, {"hoodie.datasource.write.operation": "delete"})
    if instant:
        result.commits[DEAD_LETTER_TABLE] = instant
    result.removed = len(resolved)


def first_rows(table: pa.Table, keys: list[str]) -> pa.Table:
    """The first row of every key (input order)."""
    if table.num_rows < 2:
        return table
    indexed = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    firsts = indexed.group_by(keys, use_threads=False).aggregate([("__row", "min")]).column("__row_min")
    return table.take(pc.take(firsts, pc.sort_indices(firsts)))


def spark_session():
    from ingestion.spark import local_spark_session

    return local_spark_session("lakehouse-dead-letter-replay")


def _frame(spark, data: pa.Table):
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = utc_timestamps(data.schema)
    return spark.createDataFrame(data.cast(schema).to_pandas(), from_arrow_schema(schema))


def _write_events(spark, lake: str, table: str, data: pa.Table, keys: list[str], marker: str) -> str | None:
    """Replayed events into a bronze table: replayed lines sit at their original offsets, which
    may be lower than a stored re-delivered copy of the same event: each is written as a late row
    (``resolve_late``: new events inserted, higher-offset copies replaced, others dropped)."""
    path = table_path(lake, table)
    frame = _frame(spark, data)
    late = {key: (low, ANY_OFFSET) for key, (low, _) in batch_offsets(frame).items()}
    if not late or not is_created(spark, path):  # no completed commit: no stored row to resolve against
        return _write(spark, lake, table, frame, marker)
    resolution = resolve_late(frame, path, keys, late, table)
    try:
        return _write(spark, lake, table, resolution.rows, marker, LATE_ROWS_OPTIONS)
    finally:
        resolution.release()


def _write(spark, lake: str, table: str, data, marker: str, options: dict[str, str] | None = None) -> str | None:
    """One Hudi commit of ``data`` (an Arrow table or a DataFrame) into ``table`` with ``options``
    over the table's (default: its insert); its instant (None: none made)."""
    path = table_path(lake, table)
    frame = _frame(spark, data) if isinstance(data, pa.Table) else data
    before = latest_commit(spark, path)
    frame.write.format("hudi").options(**write_options(table)).options(**(options or {})) \
        .option(REPLAY_METADATA_KEY, marker).mode("append").save(path)
    after = latest_commit(spark, path)
    return after if after != before else None
