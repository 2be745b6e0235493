"""The schema history of the bronze tables: each change a source's events made, with where it was first seen.

Under the policy ``evolve`` (``ingestion.cdc.schema_policy``) a batch may add columns to a
bronze table or widen one. Before such a batch writes the table, the writer records each
change in ``bronze.schema_change``: the table's new schema version (1 is the contract; each
batch that changes the table adds one), the column, ``added`` or ``widened``, the types
before and after, and the first event of the batch that carried it (topic, Kafka partition
and offset, landing file, source time). The history is written in the batch's
exactly-once commit (``write_once``), before the table it describes: a replayed batch finds
it written and does not record it twice. ``lakehouse contracts history`` shows it; the
catalog registers it beside the dead letters, and dbt documents it as a source.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ingestion.stream.bronze import SCHEMA_CHANGE_TABLE, table_path
from ingestion.stream.reading import latest_rows

ADDED = "added"
WIDENED = "widened"


@dataclass(frozen=True)
class FirstSeen:
    """Where a change was first seen: the first event of a batch that carried it."""

    topic: str | None
    partition: int | None
    offset: int | None
    landing_file: str | None
    source_ts: str | None  # ISO 8601, UTC

    def order(self) -> tuple:
        """Earlier events first: by source time, then Kafka partition and offset (unknown ones last)."""
        return (self.source_ts is None, self.source_ts or "", self.partition if self.partition is not None else -1,
                self.offset if self.offset is not None else -1, self.landing_file or "")

    @classmethod
    def from_json(cls, doc: dict | None) -> FirstSeen | None:
        if not doc:
            return None
        return cls(doc.get("topic"), doc.get("partition"), doc.get("offset"), doc.get("landing_file"),
                   doc.get("source_ts"))


def earliest(first: FirstSeen | None, other: FirstSeen | None) -> FirstSeen | None:
    """The earlier of two sightings (either may be unknown)."""
    if first is None or other is None:
        return first or other
    return min(first, other, key=FirstSeen.order)


@dataclass(frozen=True)
class SchemaChange:
    table: str
    version: int
    column: str
    change: str  # ADDED | WIDENED
    from_type: str | None
    to_type: str
    first: FirstSeen | None

    @property
    def key(self) -> str:
        return f"{self.table}:{self.version}:{self.column}"

    def as_row(self, recorded_at: dt.datetime) -> dict:
        """The row of ``bronze.schema_change`` (timestamps UTC-aware: naive ones are UTC here)."""
        first = self.first or FirstSeen(None, None, None, None, None)
        source_ts = _utc(dt.datetime.fromisoformat(first.source_ts)) if first.source_ts else None
        recorded_at = _utc(recorded_at)
        return {"schema_change_id": self.key, "table_name": self.table, "schema_version": self.version,
                "column_name": self.column, "change": self.change, "from_type": self.from_type,
                "to_type": self.to_type, "first_topic": first.topic, "first_kafka_partition": first.partition,
                "first_kafka_offset": first.offset, "first_landing_file": first.landing_file,
                "first_source_ts": source_ts, "recorded_at": recorded_at}


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def schema_changes(table: str, before: tuple[tuple[str, str], ...], after: tuple[tuple[str, str], ...],
                   version: int, firsts: dict[str, FirstSeen | None]) -> list[SchemaChange]:
    """The changes from the columns ``before`` to ``after`` of ``table``, as its schema ``version``."""
    old = dict(before)
    changes = []
    for name, kind in after:
        if name not in old:
            changes.append(SchemaChange(table, version, name, ADDED, None, kind, firsts.get(name)))
        elif old[name] != kind:
            changes.append(SchemaChange(table, version, name, WIDENED, old[name], kind, firsts.get(name)))
    return changes


def read_history(lake: str) -> list[dict]:
    """Every recorded change of the lake's bronze tables, by table and version (hudi-rs read)."""
    rows = [{k: v for k, v in row.items() if not k.startswith("_hoodie_")}
            for row in latest_rows(table_path(lake, SCHEMA_CHANGE_TABLE))]
    return sorted(rows, key=lambda r: (r["table_name"], r["schema_version"], r["column_name"]))


def schema_versions(history: list[dict]) -> dict[str, int]:
    """Each table's current schema version (tables without a recorded change are at 1, the contract)."""
    versions: dict[str, int] = {}
    for row in history:
        versions[row["table_name"]] = max(versions.get(row["table_name"], 1), int(row["schema_version"]))
    return versions
