"""An independent plain-Python replay of a landing zone: the check the oracle is compared with.

It reads the landing files through the storage listing, parses each line with the CDC
parser, drops re-delivered duplicates by (table, primary key, position), keeping the first
copy (the lowest Kafka offset: files are listed in offset order), and replays the distinct
events: per key the one with the largest Kafka offset is the latest; a key is live unless
that event is a delete or its source position is smaller than the latest truncate's.
Written separately from the simulator on purpose: it shares no code with it except the
parser under test elsewhere.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ingestion.cdc.contracts import load_contracts
from ingestion.cdc.landing import parse_landing_path
from ingestion.cdc.parser import BronzeEvent, DeadLetter, Tombstone, parse_lines

DELIVERY_COLUMNS = {"_cdc_ingested_at", "_cdc_landing_file", "_cdc_kafka_offset", "_cdc_kafka_partition"}
INGESTED_AT = dt.datetime(2030, 1, 1)


@dataclass
class Replay:
    events: dict[str, dict[tuple, dict[str, Any]]] = field(default_factory=lambda: defaultdict(dict))
    #: the Kafka offset of each event's first copy, by the same keys as ``events``
    offsets: dict[str, dict[tuple, int]] = field(default_factory=lambda: defaultdict(dict))
    lines: int = 0
    duplicates: int = 0
    tombstones: int = 0
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def live_rows(self, table: str) -> dict[tuple, dict[str, Any]]:
        contract = load_contracts()[table]
        truncates = [row["_cdc_position"] for row in self.events[table].values() if row["_cdc_op"] == "t"]
        truncated_before = max(truncates, default="")
        latest: dict[tuple, tuple[int, dict[str, Any]]] = {}
        for identity, row in self.events[table].items():
            if row["_cdc_op"] == "t":
                continue
            key = tuple(row[k] for k in contract.primary_key)
            offset = self.offsets[table][identity]
            if key not in latest or offset > latest[key][0]:
                latest[key] = (offset, row)
        return {
            key: {name: row[name] for name in contract.column_names}
            for key, (_, row) in latest.items()
            if not row["_cdc_is_deleted"] and row["_cdc_position"] > truncated_before
        }


def replay_landing(storage) -> Replay:
    """Parse every landing file under ``topics/`` of a storage (LocalStorage or S3Storage)."""
    contracts = load_contracts()
    result = Replay()
    for path in storage.list("topics/"):
        if path.rsplit("/", 1)[-1].startswith("."):
            continue
        landing = parse_landing_path(path)
        result.files.append(path)
        for parsed in parse_lines(storage.read(path), landing, path, INGESTED_AT):
            result.lines += 1
            if isinstance(parsed, Tombstone):
                result.tombstones += 1
            elif isinstance(parsed, DeadLetter):
                result.dead_letters.append(
                    {
                        "raw_line": parsed.raw_line,
                        "raw_is_base64": parsed.raw_is_base64,
                        "reason": parsed.reason,
                        "topic": parsed.topic,
                        "partition": parsed.partition,
                        "offset": parsed.offset,
                        "file": parsed.landing_file,
                    }
                )
            else:
                assert isinstance(parsed, BronzeEvent)
                contract = contracts[parsed.table]
                row = {k: v for k, v in parsed.row.items() if k not in DELIVERY_COLUMNS}
                key = tuple(row[k] for k in contract.primary_key) + (row["_cdc_position"],)
                if key in result.events[parsed.table]:
                    assert result.events[parsed.table][key] == row, f"same key+position, different event: {key}"
                    result.duplicates += 1
                else:
                    result.events[parsed.table][key] = row
                    result.offsets[parsed.table][key] = parsed.row["_cdc_kafka_offset"]
    return result
