"""The simulator's oracle: the exact result the pipeline must produce, beside ``topics/``.

Layout under ``<landing>/_oracle/`` (``_`` keeps it out of Spark's file listing):

* ``manifest.json`` — the commit point, written last and atomically: runs, tables,
  counts, the segment files below, and the simulator's resume state;
* ``run-<NNNN>/events/<table>.jsonl`` — every distinct valid change event of that run
  as its bronze row without the delivery columns (``ORACLE_EXCLUDED_COLUMNS``);
* ``run-<NNNN>/live/<table>.jsonl`` — the live rows after that run (the manifest
  points at the latest);
* ``run-<NNNN>/dead_letters.jsonl`` — the injected bad lines and their expected reason.

Segment files are JSON lines: the first line is the list of column names, then one
JSON array of values per row (decimals and times as text, decoded by column type).

Readers call ``load_oracle(landing)`` (a local path or ``s3://bucket/prefix``)::

    o = load_oracle(landing)
    o.tables                # table names
    o.live_rows("sale")     # final live rows: contract columns, typed
    o.events("sale")        # distinct change events: bronze row minus delivery columns
    o.dead_letters()        # dicts: raw_line, raw_is_base64, reason, topic, partition, offset, file
                            # (file = landing path relative to the landing root), by topic/partition/offset;
                            # offset = start offset of the file + index of the record in it (an Avro
                            # sink drops tombstones, so it can be lower than the Kafka offset)
    o.tombstones            # number of tombstone lines written
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS, load_contracts
from ingestion.object_store import Storage, open_storage

ORACLE_DIR = "_oracle"
MANIFEST = f"{ORACLE_DIR}/manifest.json"
ORACLE_FORMAT = 1
#: Bronze columns that depend on delivery, left out of ``events()``.
ORACLE_EXCLUDED_COLUMNS = ("_cdc_ingested_at", "_cdc_landing_file", "_cdc_kafka_offset", "_cdc_kafka_partition")
EVENT_METADATA_COLUMNS = tuple(
    (name, kind) for name, kind in BRONZE_METADATA_COLUMNS if name not in ORACLE_EXCLUDED_COLUMNS
)
DEAD_LETTER_KEYS = ("raw_line", "raw_is_base64", "reason", "topic", "partition", "offset", "file")
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class OracleError(RuntimeError):
    """The landing has no readable oracle (names the location and the problem)."""


def event_columns(table: str) -> tuple[tuple[str, str], ...]:
    contract = load_contracts()[table]
    return tuple((c.name, c.type) for c in contract.columns) + EVENT_METADATA_COLUMNS


def live_columns(table: str) -> tuple[tuple[str, str], ...]:
    return tuple((c.name, c.type) for c in load_contracts()[table].columns)


def _encoder(kind: str):
    if kind == "date" or kind == "timestamp":
        return lambda v: None if v is None else v.isoformat()
    if kind.startswith("decimal"):
        return lambda v: None if v is None else str(v)
    return None


def _decoder(kind: str):
    if kind == "date":
        return lambda v: None if v is None else dt.date.fromisoformat(v)
    if kind == "timestamp":
        return lambda v: None if v is None else dt.datetime.fromisoformat(v)
    if kind.startswith("decimal"):
        return lambda v: None if v is None else Decimal(v)
    return None


class SegmentEncoder:
    """Encodes rows of fixed columns as segment lines (JSON arrays, newline-terminated)."""

    def __init__(self, columns: tuple[tuple[str, str], ...]):
        self.names = [name for name, _ in columns]
        self._encoders = [(i, enc) for i, (_, kind) in enumerate(columns) if (enc := _encoder(kind))]

    def header(self) -> bytes:
        return (_DUMPS(self.names) + "\n").encode("utf-8")

    def fragment(self, values: list[Any]) -> str:
        """The JSON array interior of already-ordered values (encoded in place)."""
        for index, encode in self._encoders:
            values[index] = encode(values[index])
        return _DUMPS(values)[1:-1]

    def line(self, row: dict[str, Any]) -> bytes:
        values = [row[name] for name in self.names]
        for index, encode in self._encoders:
            values[index] = encode(values[index])
        return (_DUMPS(values) + "\n").encode("utf-8")


def encode_segment(columns: tuple[tuple[str, str], ...], rows: Iterable[dict[str, Any]]) -> bytes:
    encoder = SegmentEncoder(columns)
    return encoder.header() + b"".join(encoder.line(row) for row in rows)


def decode_segment(data: bytes, columns: tuple[tuple[str, str], ...], where: str) -> list[dict[str, Any]]:
    lines = data.decode("utf-8").splitlines()
    if not lines:
        raise OracleError(f"{where}: empty segment file")
    names = json.loads(lines[0])
    kinds = dict(columns)
    if set(names) != set(kinds):
        raise OracleError(f"{where}: columns {names} do not match the contract {sorted(kinds)}")
    decoders = [(i, name, dec) for i, name in enumerate(names) if (dec := _decoder(kinds[name]))]
    rows = []
    for line in lines[1:]:
        values = json.loads(line)
        for index, _, decode in decoders:
            values[index] = decode(values[index])
        rows.append(dict(zip(names, values, strict=True)))
    return rows


class Oracle:
    """The expected results of everything the simulator wrote to one landing."""

    def __init__(self, storage: Storage, manifest: dict[str, Any]):
        self._storage = storage
        self.manifest = manifest
        self.tables: tuple[str, ...] = tuple(manifest["tables"])
        self.tombstones: int = manifest["counts"]["tombstones"]
        self.duplicates: int = manifest["counts"]["duplicates"]
        self.runs: list[dict[str, Any]] = manifest["runs"]

    def _read(self, path: str) -> bytes:
        data = self._storage.read(path)
        if data is None:
            raise OracleError(f"{self._storage.root}/{path}: oracle segment missing")
        return data

    def _check_table(self, table: str) -> None:
        if table not in self.tables:
            raise KeyError(f"no table {table!r} in the oracle; tables: {', '.join(self.tables)}")

    def live_rows(self, table: str) -> list[dict[str, Any]]:
        self._check_table(table)
        path = self.manifest["segments"]["live"][table]
        return decode_segment(self._read(path), live_columns(table), path)

    def events(self, table: str) -> list[dict[str, Any]]:
        self._check_table(table)
        rows: list[dict[str, Any]] = []
        for path in self.manifest["segments"]["events"][table]:
            rows.extend(decode_segment(self._read(path), event_columns(table), path))
        return rows

    def dead_letters(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for path in self.manifest["segments"]["dead_letters"]:
            rows.extend(json.loads(line) for line in self._read(path).decode("utf-8").splitlines() if line)
        return sorted(rows, key=lambda d: (d["topic"], d["partition"], d["offset"]))


def read_manifest(storage: Storage) -> dict[str, Any] | None:
    data = storage.read(MANIFEST)
    if data is None:
        return None
    manifest = json.loads(data)
    if manifest.get("format") != ORACLE_FORMAT:
        raise OracleError(f"{storage.root}/{MANIFEST}: unsupported oracle format {manifest.get('format')!r}")
    return manifest


def load_oracle(landing: str | Path, endpoint_url: str | None = None) -> Oracle:
    """The oracle of a landing written by ``lakehouse simulate`` (local path or s3:// URI)."""
    storage = open_storage(landing, endpoint_url)
    manifest = read_manifest(storage)
    if manifest is None:
        raise OracleError(f"{storage.root}: no simulator oracle ({MANIFEST} not found)")
    return Oracle(storage, manifest)


def dead_letter_record(raw: bytes, reason: str, topic: str, partition: int, offset: int, file: str,
                       binary: bool = False) -> dict:
    """One expected dead letter (raw line as text, or base64 when it is not valid UTF-8 or ``binary``:
    the undecodable bytes of an Avro file are always kept as base64)."""
    import base64

    if not binary:
        try:
            return dict(zip(DEAD_LETTER_KEYS, (raw.decode("utf-8"), False, reason, topic, partition, offset, file),
                            strict=True))
        except UnicodeDecodeError:
            pass  # not text: kept as base64
    text, is_b64 = base64.b64encode(raw).decode("ascii"), True
    return dict(zip(DEAD_LETTER_KEYS, (text, is_b64, reason, topic, partition, offset, file), strict=True))
