"""Exactly-once commits: each Hudi commit records the streaming query id and batch id.

Spark's checkpoint commits a micro-batch only after ``foreachBatch`` returns, so a crash
between a Hudi commit and the checkpoint commit replays the batch. Before writing a
table, the writer reads the newest commit's ``lakehouse.stream`` extra metadata: when it
already holds this query's id with a batch id at least this one, the table is skipped.
Inserts also drop incoming keys already stored (record key = primary key +
``_cdc_position``), so a replay after ``--reset`` or a re-delivered event is stored once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ingestion.hoodie.config import TableConfig

STREAM_METADATA_KEY = "lakehouse.stream"


@dataclass(frozen=True)
class StreamMarker:
    query_id: str
    batch_id: int
    checkpoint: str

    def to_json(self) -> str:
        return json.dumps({"query_id": self.query_id, "batch_id": self.batch_id, "checkpoint": self.checkpoint},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> StreamMarker | None:
        if not text:
            return None
        try:
            doc = json.loads(text)
            return cls(str(doc["query_id"]), int(doc["batch_id"]), str(doc.get("checkpoint", "")))
        except (ValueError, KeyError, TypeError):
            return None

    def covers(self, other: StreamMarker) -> bool:
        """True when a commit with this marker already holds ``other``'s batch."""
        return self.query_id == other.query_id and self.batch_id >= other.batch_id


@dataclass
class CommitOutcome:
    table: str
    instant: str | None
    skipped: bool  # the batch was already committed to this table before a restart


def open_table(path: str, config: TableConfig):
    from ingestion.hoodie import HoodieTable

    return HoodieTable.create_or_open(path, config)


def write_once(path: str, config: TableConfig, data: Any, marker: StreamMarker) -> CommitOutcome:
    """Insert ``data`` into the table at ``path`` unless ``marker``'s batch is already there."""
    table = open_table(path, config)
    with table.writer() as writer:
        previous = StreamMarker.from_json(table.latest_extra_metadata(STREAM_METADATA_KEY))
        if previous is not None and previous.covers(marker):
            return CommitOutcome(config.name, None, skipped=True)
        instant = writer.write(data, operation="insert", drop_duplicates=True,
                               extra_metadata={STREAM_METADATA_KEY: marker.to_json()})
    return CommitOutcome(config.name, instant, skipped=False)
