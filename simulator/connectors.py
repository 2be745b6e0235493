"""Simulated source logs: each connector's own position fields, transaction ids and ``source`` block.

* PostgreSQL: a growing WAL ``lsn`` (one per change) and a ``txId`` per transaction;
  snapshot rows share the snapshot's lsn and txId. ``in_flight_change`` is a change of a
  transaction still open when the snapshot starts: lower lsn and txId than the snapshot's,
  streamed after it (Debezium's order is Kafka order, not LSN order).
  ``incremental_snapshot_positions`` is a row read by an incremental snapshot (a signal):
  no ``lsn``, ``txId`` or ``xmin``, only ``sequence`` ``["<last commit lsn>","<lsn>"]``.
* MySQL: binlog ``file``/``pos``/``row``; the rows of one multi-row statement share
  ``pos`` and count ``row`` up; a file rolls over to the next index (new ``pos`` 4)
  past ``MAX_BINLOG_BYTES`` or on ``rollover()`` (FLUSH LOGS); ``gtid`` per transaction;
  binlog timestamps have second precision, so ``source.ts_ms`` is a whole second.
* SQL Server: ``change_lsn`` per statement, ``event_serial_no`` counting the rows of one
  statement, ``commit_lsn`` after every change of the transaction; snapshot rows carry
  only ``commit_lsn``.

State is a plain dict (``state()`` / ``from_state``) so a second run continues the logs.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ingestion.cdc.contracts import TableContract

DEBEZIUM_VERSION = "2.7.3.Final"
SERVER_NAME = "tickit"
MAX_BINLOG_BYTES = 8 * 1024 * 1024
MYSQL_SERVER_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
MYSQL_SERVER_ID = 223344

SourceFields = dict[str, Any]


class SourceLog:
    """Base: hands out ``source`` blocks for snapshot rows and for transactions of changes.

    A subclass's log position is its instance attributes, named by ``initial_state()``'s
    keys and set from the state dict here; each subclass declares them with their types.
    """

    connector = ""
    connector_label = ""

    def __init__(self, state: dict[str, Any] | None = None):
        self.__dict__.update(self.initial_state() | (state or {}))

    def initial_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.initial_state()}

    def base_source(self, contract: TableContract, ts_ms: int, snapshot: str) -> SourceFields:
        source: SourceFields = {
            "version": DEBEZIUM_VERSION,
            "connector": self.connector_label,
            "name": SERVER_NAME,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": contract.database,
        }
        if contract.schema:
            source["schema"] = contract.schema
        source["table"] = contract.name
        return source

    def snapshot_positions(self) -> SourceFields:
        raise NotImplementedError

    def transaction(self, rng: random.Random, statements: list[int]) -> tuple[str | None, list[SourceFields]]:
        """Positions of one transaction's changes: ``statements`` lists the row count of each statement."""
        raise NotImplementedError


class PostgresLog(SourceLog):
    connector = "postgres"
    connector_label = "postgresql"
    lsn: int
    tx_id: int
    last_commit: int | None

    def initial_state(self) -> dict[str, Any]:
        return {"lsn": 33_554_432, "tx_id": 600, "last_commit": None}

    def snapshot_positions(self) -> SourceFields:
        return {"txId": self.tx_id, "lsn": self.lsn, "xmin": None}

    def in_flight_change(self, rng: random.Random) -> SourceFields:
        """The position of one change by a transaction that is open while the snapshot runs.

        Its WAL record is written now; other sessions' commits then move the WAL past it
        before the snapshot reads its LSN, and the snapshot's own transaction id is newer.
        The transaction commits after the snapshot, so its change streams after the
        snapshot rows with a smaller ``lsn`` and ``txId``.
        """
        self.tx_id += 1
        self.lsn += rng.randint(40, 400)
        position = {"txId": self.tx_id, "lsn": self.lsn, "xmin": None}
        self.tx_id += 1  # the snapshot's transaction
        self.lsn += rng.randint(400, 4000)  # other sessions' commits
        return position

    def incremental_snapshot_positions(self) -> SourceFields:
        """The ``source`` position of a row an incremental snapshot reads (DBZ-4329): Debezium
        emits a chunk when its window closes, with the stream's position as ``sequence`` (the
        JSON text Jackson writes) and no ``lsn``, ``txId`` or ``xmin``."""
        commit = None if self.last_commit is None else str(self.last_commit)
        return {"sequence": json.dumps([commit, str(self.lsn)], separators=(",", ":"))}

    def transaction(self, rng: random.Random, statements: list[int]) -> tuple[str | None, list[SourceFields]]:
        self.tx_id += 1
        positions = []
        for rows in statements:
            for _ in range(rows):
                self.lsn += rng.randint(40, 400)
                positions.append({"txId": self.tx_id, "lsn": self.lsn, "xmin": None})
        self.lsn += rng.randint(40, 120)  # the commit record
        self.last_commit = self.lsn
        return str(self.tx_id), positions


class MySqlLog(SourceLog):
    connector = "mysql"
    connector_label = "mysql"
    file_index: int
    pos: int
    gtid_seq: int

    def initial_state(self) -> dict[str, Any]:
        return {"file_index": 3, "pos": 154, "gtid_seq": 0}

    @property
    def file(self) -> str:
        return f"mysql-bin.{self.file_index:06d}"

    def rollover(self) -> None:
        self.file_index += 1
        self.pos = 4

    def snapshot_positions(self) -> SourceFields:
        return {"server_id": 0, "gtid": None, "file": self.file, "pos": self.pos, "row": 0, "thread": None}

    def transaction(self, rng: random.Random, statements: list[int]) -> tuple[str | None, list[SourceFields]]:
        if self.pos > MAX_BINLOG_BYTES:
            self.rollover()
        self.gtid_seq += 1
        gtid = f"{MYSQL_SERVER_UUID}:{self.gtid_seq}"
        thread = rng.randint(2, 64)
        self.pos += rng.randint(60, 90)  # GTID + BEGIN events
        positions = []
        for rows in statements:
            self.pos += rng.randint(50, 80)  # table map event
            for row in range(rows):
                positions.append(
                    {
                        "server_id": MYSQL_SERVER_ID,
                        "gtid": gtid,
                        "file": self.file,
                        "pos": self.pos,
                        "row": row,
                        "thread": thread,
                    }
                )
            self.pos += rows * rng.randint(120, 260)  # the rows event
        self.pos += 31  # XID event
        return gtid, positions


def sqlserver_lsn(value: int) -> str:
    """An integer as a SQL Server LSN ``vvvvvvvv:bbbbbbbb:ssss``."""
    return f"{value >> 48:08x}:{(value >> 16) & 0xFFFFFFFF:08x}:{value & 0xFFFF:04x}"


class SqlServerLog(SourceLog):
    connector = "sqlserver"
    connector_label = "sqlserver"
    lsn: int

    def initial_state(self) -> dict[str, Any]:
        return {"lsn": (0x27 << 48) | (0x758 << 16) | 3}

    def snapshot_positions(self) -> SourceFields:
        return {"change_lsn": None, "commit_lsn": sqlserver_lsn(self.lsn), "event_serial_no": None}

    def transaction(self, rng: random.Random, statements: list[int]) -> tuple[str | None, list[SourceFields]]:
        changes: list[tuple[int, int]] = []  # (change lsn, event serial number)
        for rows in statements:
            self.lsn += rng.randint(1, 40)
            changes.extend((self.lsn, serial) for serial in range(1, rows + 1))
        self.lsn += rng.randint(2, 9)
        commit = sqlserver_lsn(self.lsn)
        positions = [
            {"change_lsn": sqlserver_lsn(change), "commit_lsn": commit, "event_serial_no": serial}
            for change, serial in changes
        ]
        return commit, positions


LOG_CLASSES: dict[str, type[SourceLog]] = {"postgres": PostgresLog, "mysql": MySqlLog, "sqlserver": SqlServerLog}


def source_block(log: SourceLog, contract: TableContract, ts_ms: int, snapshot: str, positions: SourceFields):
    """The envelope ``source`` of one event: common fields, then the connector's position fields."""
    source = log.base_source(contract, ts_ms, snapshot)
    source.update(positions)
    return source
