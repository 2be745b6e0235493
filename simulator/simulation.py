"""Run the TICKIT CDC simulation: snapshot, changes, Kafka Connect S3-sink landing, oracle.

One run = (first run only) a snapshot phase of every table (``op: r``) then a change
phase of ``changes`` events, written as landing files and committed with the oracle
manifest. A later run on the same landing resumes from the manifest's state: Kafka
offsets, keys, source positions and the virtual clock continue, and the oracle covers
every run. ``reset`` deletes ``topics/`` and ``_oracle/`` first.

Randomness comes from ``random.Random`` seeded with text built from the seed and the run
number, so a seed and a start time give byte-identical output.

``file_format`` is the sink's format: ``json`` (JsonFormat, one event per line) or ``avro``
(AvroFormat with Debezium's Avro converter, ``simulator.avro``); ``format`` is the event
shape (envelope, flattened, or mixed). The events themselves (data, positions, Kafka
partitions, re-deliveries) do not depend on either: a seed gives the same events in JSON
and in Avro. In Avro, a mixed shape changes at file boundaries only (a file has one writer
schema), tombstones are dropped by the sink, and the injected bad events are Avro records
that fail the contract or damaged files (``simulator.badlines.AVRO_KINDS``).
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import logging
import random
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ingestion.cdc.contracts import TableContract, load_contracts
from ingestion.cdc.landing import AVRO, FILE_FORMATS, JSON, LandingPathError, parse_landing_path
from ingestion.cdc.position import render_position
from ingestion.cdc.rules import TX_ID_FIELD
from ingestion.object_store import Storage, open_storage
from simulator import tickit
from simulator.avro import AvroItem, AvroRowEncoder, sync_marker, truncated_container
from simulator.badlines import BAD_KINDS, UNKNOWN_TOPIC, AvroBadFile, bad_avro, bad_line
from simulator.connectors import LOG_CLASSES, MySqlLog, PostgresLog, SourceLog, source_block
from simulator.database import PRIMARY_KEYS, TABLES, Row, SourceDatabase
from simulator.encode import ENVELOPE, FLATTENED, SHAPES, WRAPPED, RowEncoder, epoch_ms
from simulator.generate import Calendar, Generator
from simulator.oracle import (
    MANIFEST,
    ORACLE_DIR,
    ORACLE_FORMAT,
    SegmentEncoder,
    dead_letter_record,
    decode_segment,
    event_columns,
    live_columns,
    read_manifest,
)
from simulator.sink import SinkWriter

log = logging.getLogger(__name__)
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
FORMATS = ("envelope", "flattened", "mixed")
#: Full TICKIT sizes of the synthetic tables (scale 1.0).
FULL_SIZES = {"user": 49_990, "listing": 192_497, "sale": 172_456}
#: Order in which tables are generated and snapshotted (referenced tables first).
GENERATION_ORDER = ("category", "venue", "date", "event", "user", "listing", "sale")
MEAN_TX_GAP_MS = 50
SNAPSHOT_ROWS_PER_MS = 10


class SimulationError(RuntimeError):
    """The simulation cannot run as asked (names the input and the problem)."""


@dataclass(frozen=True)
class SimulationOptions:
    landing: str
    scale: float = 1.0
    changes: int = 20_000
    seed: int = 42
    format: str = "envelope"
    start_time: dt.datetime | None = None
    rate: float | None = None
    duration: float | None = None
    partitions: int = 3
    flush_size: int = 10_000
    rotate_interval_ms: int = 60_000
    partitioner: str = "default"
    inject_bad: int = 0
    restarts: int = 2
    truncate: bool = False
    reset: bool = False
    endpoint_url: str | None = None
    file_format: str = JSON  # the sink's format: json (JsonFormat) or avro (AvroFormat)


@dataclass
class RunSummary:
    run: int
    landing: str
    seed: int
    format: str
    start_time: str
    end_time: str
    snapshot_events: int = 0
    change_events: int = 0
    #: changes by a transaction open across the snapshot (smaller position, later offset than the snapshot row)
    in_flight_changes: int = 0
    #: rows a PostgreSQL incremental snapshot (a signal) read again: ``snapshot: incremental``, no ``lsn``
    incremental_snapshot_events: int = 0
    duplicates: int = 0
    tombstones: int = 0
    bad_lines: int = 0
    files: int = 0
    lines: int = 0
    events_by_table: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    file_format: str = JSON


ProgressCallback = Callable[[int, int], None]
#: One change of a transaction: (op, before image, after image); an insert has no before, a delete no after.
Change = tuple[str, Row | None, Row | None]


def _check_options(options: SimulationOptions) -> None:
    if options.format not in FORMATS:
        raise SimulationError(f"--shape must be one of {', '.join(FORMATS)}, got {options.format!r}")
    if options.file_format not in FILE_FORMATS:
        raise SimulationError(f"--format must be one of {', '.join(FILE_FORMATS)}, got {options.file_format!r}")
    if not 0 < options.scale <= 10:
        raise SimulationError(f"--scale must be > 0 and <= 10, got {options.scale}")
    if options.changes < 0:
        raise SimulationError(f"--changes must be >= 0, got {options.changes}")
    if options.inject_bad < 0:
        raise SimulationError(f"--inject-bad must be >= 0, got {options.inject_bad}")
    if not 1 <= options.partitions <= 64:
        raise SimulationError(f"--partitions must be between 1 and 64, got {options.partitions}")
    if options.rate is not None and options.rate <= 0:
        raise SimulationError(f"--rate must be > 0 events per second, got {options.rate}")


class Simulation:
    """One run against one landing location."""

    def __init__(self, options: SimulationOptions, progress: ProgressCallback | None = None):
        _check_options(options)
        self.options = options
        self.progress = progress
        self.storage: Storage = open_storage(options.landing, options.endpoint_url)
        self.contracts: dict[str, TableContract] = load_contracts()
        self.encoders = {name: RowEncoder(c) for name, c in self.contracts.items()}
        self.boolean_encoders = {name: RowEncoder(c, tinyint_booleans=False) for name, c in self.contracts.items()}
        self.avro = options.file_format == AVRO
        self.avro_encoders = {name: AvroRowEncoder(c) for name, c in self.contracts.items()}
        self.avro_boolean_encoders = {name: AvroRowEncoder(c, tinyint_booleans=False)
                                      for name, c in self.contracts.items()}
        self.topics = {name: c.topics[0] for name, c in self.contracts.items()}
        self.column_names = {name: c.column_names for name, c in self.contracts.items()}
        if options.reset:
            self._reset()
        manifest = read_manifest(self.storage)
        if manifest is None and self.storage.list("topics/"):
            raise SimulationError(
                f"{self.storage.root}: topics/ holds files but there is no simulator oracle ({MANIFEST})",
            )
        self.previous = manifest
        self.run = 1 if manifest is None else len(manifest["runs"]) + 1
        state = manifest["state"] if manifest else {}
        self.seed = options.seed
        self.rng = random.Random(f"tickit-sim:{self.seed}:{self.run}:data")
        self.shape_rng = random.Random(f"tickit-sim:{self.seed}:{self.run}:shape")
        #: the partitions of null-key records (truncates): Kafka's default partitioner spreads them
        self.null_key_rng = random.Random(f"tickit-sim:{self.seed}:{self.run}:null-key")
        self.logs: dict[str, SourceLog] = {
            name: cls(state.get("logs", {}).get(name)) for name, cls in LOG_CLASSES.items()
        }
        self.db = SourceDatabase()
        real = tickit.load_real_dimensions()
        self.real_dates = {row["dateid"]: row for row in real["date"]}
        self.calendar = Calendar(real["date"])
        places = sorted({(v["venuecity"], v["venuestate"]) for v in real["venue"]})
        self.generator = Generator(self.db, self.calendar, places)
        self.clock_ms = self._start_ms(state)
        self.start_ms = self.clock_ms
        #: continuous mode: transactions are stamped with the wall clock
        self.wall_clock = False
        offsets = state.get("offsets", {})
        if manifest is not None:
            self._remove_orphans(offsets)
        self.sink = SinkWriter(
            self.storage,
            flush_size=options.flush_size,
            rotate_interval_ms=options.rotate_interval_ms,
            partitioner=options.partitioner,
            offsets=offsets,
            file_format=options.file_format,
        )
        self.reinsert_queue: list[list[Any]] = [list(item) for item in state.get("reinsert_queue", [])]
        self.recent: dict[str, collections.deque] = {name: collections.deque(maxlen=64) for name in LOG_CLASSES}
        self.oracle_lines: dict[str, list[bytes]] = {name: [] for name in TABLES}
        self.event_encoders = {name: SegmentEncoder(event_columns(name)) for name in TABLES}
        self.live_encoders = {name: SegmentEncoder(live_columns(name)) for name in TABLES}
        self.fragment_cache: dict[str, dict[Any, tuple[dict[str, Any], str]]] = {name: {} for name in TABLES}
        self.dead_letters: list[dict[str, Any]] = []
        self.summary = RunSummary(
            run=self.run,
            landing=self.storage.root,
            seed=self.seed,
            format=options.format,
            start_time="",
            end_time="",
            events_by_table={name: 0 for name in TABLES},
            file_format=options.file_format,
        )
        if manifest is None:
            self._load_snapshot_rows(real)
        else:
            self._load_live_rows(manifest, state)

    # --- setup -------------------------------------------------------------------------------
    def _reset(self) -> None:
        removed = self.storage.delete_prefix(f"{ORACLE_DIR}/") + self.storage.delete_prefix("topics/")
        log.info("reset %s: removed %d files", self.storage.root, removed)

    def _start_ms(self, state: dict[str, Any]) -> int:
        previous_end = state.get("clock_ms")
        if self.options.start_time is not None:
            start = epoch_ms(self.options.start_time)
            if previous_end is not None and start <= previous_end:
                raise SimulationError(
                    f"--start-time {self.options.start_time.isoformat()} is not after the previous run's "
                    f"end {_iso(previous_end)}; omit it to continue from there, or use --reset"
                )
            return start
        if previous_end is not None:
            return previous_end + 1000
        return epoch_ms(dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0))

    def _remove_orphans(self, offsets: dict[str, int]) -> None:
        """Delete landing files a crashed run left beyond the committed offsets."""
        orphans = []
        for path in self.storage.list("topics/"):
            try:
                landing = parse_landing_path(path)
            except LandingPathError:
                continue
            if landing.start_offset >= offsets.get(f"{landing.topic}+{landing.partition}", 0):
                orphans.append(path)
        for path in orphans:
            self.storage.delete(path)
        if orphans:
            log.warning("removed %d landing files of an interrupted run (beyond the oracle's offsets)", len(orphans))

    def _load_snapshot_rows(self, real: dict[str, list[dict[str, Any]]]) -> None:
        for table in ("category", "venue", "date", "event"):
            for row in real[table]:
                self.db.insert(table, row)
        scale = self.options.scale
        for table in ("user", "listing", "sale"):
            target = max(1, round(FULL_SIZES[table] * scale))
            attempts = 0
            while self.db.count(table) < target and attempts < target * 3:
                attempts += 1
                new = self.generator.new_row(table, self.rng, self.db.next_id[table])
                if new is not None:
                    self.db.insert(table, new)

    def _load_live_rows(self, manifest: dict[str, Any], state: dict[str, Any]) -> None:
        for table in GENERATION_ORDER:
            path = manifest["segments"]["live"][table]
            data = self.storage.read(path)
            if data is None:
                raise SimulationError(f"{self.storage.root}/{path}: oracle live rows missing; use --reset")
            for row in decode_segment(data, live_columns(table), path):
                self.db.insert(table, row)
        for table, next_id in state.get("next_id", {}).items():
            self.db.next_id[table] = max(self.db.next_id[table], next_id)

    # --- emitting ----------------------------------------------------------------------------
    def _shape(self, topic: str, partition: int) -> str:
        if self.options.format == "envelope":
            return ENVELOPE
        if self.options.format == "flattened":
            return FLATTENED
        if self.avro:  # one writer schema per file: the open file's shape goes on
            open_shape = self.sink.open_tag(topic, partition)
            if open_shape in SHAPES:
                return open_shape
        pick = self.shape_rng.random()
        return ENVELOPE if pick < 0.45 else FLATTENED if pick < 0.9 else WRAPPED

    def _partition(self, table: str, key: Any) -> int:
        if key is None:  # a truncate: no key, so any partition (no order against the table's row events)
            return self.null_key_rng.randrange(self.options.partitions)
        return zlib.crc32(f'{{"{PRIMARY_KEYS[table]}":{key}}}'.encode()) % self.options.partitions

    def emit(
        self,
        table: str,
        op: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        positions: dict[str, Any],
        ts_ms: int,
        snapshot: str = "false",
    ) -> None:
        contract = self.contracts[table]
        image = before if op == "d" else after
        key = None if image is None else image[PRIMARY_KEYS[table]]
        topic = self.topics[table]
        partition = self._partition(table, key)
        shape = self._shape(topic, partition)
        # mixed: flattened lines come from a pipeline whose MySQL tinyint(1) columns are JSON booleans
        mixed_flat = shape == FLATTENED and self.options.format == "mixed"
        connector_log = self.logs[contract.connector]
        source = source_block(connector_log, contract, ts_ms, snapshot, positions)
        lag = self.rng.randint(3, 900)
        line: bytes | AvroItem
        if self.avro:
            avro = self.avro_boolean_encoders[table] if mixed_flat else self.avro_encoders[table]
            line = avro.item(shape, op, before, after, source, ts_ms + lag)
        else:
            encoder = self.boolean_encoders[table] if mixed_flat else self.encoders[table]
            line = encoder.render(shape, op, before, after, source, ts_ms + lag)
        self.sink.append(topic, partition, line, ts_ms)
        self.recent[contract.connector].append((topic, partition, line))
        self._record_event(table, contract, op, image, source, ts_ms)
        if op == "d" and self.sink.tombstone(topic, partition, ts_ms):
            # tombstones.on.delete=true: the tombstone follows the delete (an Avro sink drops it)
            self.summary.tombstones += 1

    def _row_fragment(self, table: str, row: dict[str, Any]) -> str:
        """The oracle encoding of a row's contract columns, cached per row version (rows are never mutated)."""
        contract = self.contracts[table]
        key = row[contract.primary_key[0]]
        cached = self.fragment_cache[table].get(key)
        if cached is not None and cached[0] is row:
            return cached[1]
        fragment = self.live_encoders[table].fragment([row[name] for name in self.column_names[table]])
        self.fragment_cache[table][key] = (row, fragment)
        return fragment

    def _record_event(self, table, contract, op, image, source, ts_ms) -> None:
        source_ts = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ts_ms)
        tx_id = source.get(TX_ID_FIELD[contract.connector])
        nulls = ",".join(["null"] * len(self.column_names[table]))
        values = nulls if image is None else self._row_fragment(table, image)
        meta = [
            op,
            op in ("d", "t"),
            source_ts.isoformat(),
            render_position(contract.connector, source),
            None if tx_id is None else str(tx_id),
            source["db"],
            source["table"],
            self.topics[table],
            source_ts.date().isoformat(),
        ]
        self.oracle_lines[table].append(f"[{values},{_DUMPS(meta)[1:]}\n".encode())
        self.summary.events_by_table[table] += 1

    # --- snapshot phase ----------------------------------------------------------------------
    def snapshot(self) -> None:
        by_connector: dict[str, list[str]] = collections.defaultdict(list)
        for table in GENERATION_ORDER:
            by_connector[self.contracts[table].connector].append(table)
        index = 0
        for connector, tables in by_connector.items():
            connector_log = self.logs[connector]
            in_flight = self._open_across_snapshot(connector_log)
            positions = connector_log.snapshot_positions()
            total = sum(self.db.count(t) for t in tables)
            seen = 0
            for table in tables:
                for key in sorted(self.db.rows[table]):
                    seen += 1
                    flag = "first" if seen == 1 else "last" if seen == total else "true"
                    ts = self.clock_ms + index // SNAPSHOT_ROWS_PER_MS
                    self.emit(table, "r", None, self.db.get(table, key), positions, ts, flag)
                    index += 1
                    self._tick()
            self.summary.snapshot_events += seen
            if in_flight is not None:  # the open transaction commits after the snapshot
                table, after, position = in_flight
                before = self.db.update(table, after)
                self.emit(table, "u", before, after, position, self.clock_ms + index // SNAPSHOT_ROWS_PER_MS + 1)
                self.summary.change_events += 1
                self.summary.in_flight_changes += 1
        self.clock_ms += index // SNAPSHOT_ROWS_PER_MS + 1000

    def _open_across_snapshot(self, connector_log: SourceLog) -> tuple[str, Row, dict[str, Any]] | None:
        """A PostgreSQL venue update whose transaction is open while the snapshot runs (see
        ``PostgresLog.in_flight_change``): (table, new row, position). Its own random stream,
        so the rest of the run's data is what it would be without it."""
        if not isinstance(connector_log, PostgresLog) or not self.db.rows["venue"]:
            return None
        rng = random.Random(f"tickit-sim:{self.seed}:{self.run}:in-flight")
        before = self.db.get("venue", rng.choice(sorted(self.db.rows["venue"])))
        after = self.generator.changed_row("venue", rng, before)
        if after is None or after == before:
            return None
        return "venue", after, connector_log.in_flight_change(rng)

    # --- change phase ------------------------------------------------------------------------
    def _quotas(self, total: int) -> dict[str, int]:
        sizes = {t: max(1, self.db.count(t)) for t in TABLES}
        whole = sum(sizes.values())
        raw = {t: total * size / whole for t, size in sizes.items()}
        quotas = {t: int(value) for t, value in raw.items()}
        left = total - sum(quotas.values())
        for table in sorted(raw, key=lambda t: (quotas[t] - raw[t], t))[:left]:
            quotas[table] += 1
        return quotas

    def _transaction(self, table: str, changes: Sequence[Change], statements: list[int]) -> None:
        if self.wall_clock:
            self.clock_ms = max(self.clock_ms + 1, _now_ms())
        else:
            self.clock_ms += max(1, int(self.rng.expovariate(1 / MEAN_TX_GAP_MS)))
        contract = self.contracts[table]
        connector_log = self.logs[contract.connector]
        _, positions = connector_log.transaction(self.rng, statements)
        ts = self.clock_ms
        if contract.connector == "mysql":
            ts -= ts % 1000  # binlog timestamps have second precision
        for (op, before, after), position in zip(changes, positions, strict=True):
            self.emit(table, op, before, after, position, ts)
            self.summary.change_events += 1
            self._tick()

    def _pick_deletable(self, table: str) -> int | None:
        pool = self.db.pools[table]
        for _ in range(30):
            if not len(pool):
                return None
            key = pool.choice(self.rng)
            if not self.db.referenced(table, key):
                return key
        return None

    def _insert_row(self, table: str) -> dict[str, Any] | None:
        for index, (queued_table, key) in enumerate(self.reinsert_queue):
            if queued_table == table:
                del self.reinsert_queue[index]
                row = self.real_dates.get(key) if table == "date" else self.generator.new_row(table, self.rng, key)
                if row is not None:
                    return dict(row)
        if table == "date":
            return None
        for _ in range(5):
            row = self.generator.new_row(table, self.rng, self.db.next_id[table])
            if row is not None:
                self.db.allocate_id(table)
                return row
        return None

    def _updated(self, table: str) -> tuple[Row, Row] | None:
        for _ in range(5):
            if not len(self.db.pools[table]):
                return None
            key = self.db.pools[table].choice(self.rng)
            before = self.db.get(table, key)
            after = self.generator.changed_row(table, self.rng, before)
            if after is not None and after != before:
                self.db.update(table, after)
                return before, after
        return None

    def step(self, table: str, scenario: str, budget: int) -> int:
        """Run one scenario on ``table`` within ``budget`` events; returns the events emitted."""
        if scenario == "multi" and budget >= 3:
            first = self._updated(table)
            if first is None:
                return 0
            before, current = first
            changes: list[Change] = [("u", before, current)]
            for _ in range(self.rng.randint(1, 2)):
                after = self.generator.changed_row(table, self.rng, current)
                if after is None or after == current:
                    break
                self.db.update(table, after)
                changes.append(("u", current, after))
                current = after
            self._transaction(table, changes, [1] * len(changes))
            return len(changes)
        if scenario == "insert_update_delete" and budget >= 3 and table in ("sale", "user", "listing"):
            row = self._insert_row(table)
            if row is None:
                return 0
            self.db.insert(table, row)
            changes = [("c", None, row)]
            after = self.generator.changed_row(table, self.rng, row)
            if after is not None and after != row:
                self.db.update(table, after)
                changes.append(("u", row, after))
                row = after
            if not self.db.referenced(table, row[PRIMARY_KEYS[table]]):
                self.db.delete(table, row[PRIMARY_KEYS[table]])
                changes.append(("d", row, None))
            self._transaction(table, changes, [1] * len(changes))
            return len(changes)
        if scenario == "batch_insert" and budget >= 3:
            rows = []
            for _ in range(3):
                row = self._insert_row(table)
                if row is None:
                    break
                self.db.insert(table, row)
                rows.append(row)
            if rows:
                self._transaction(table, [("c", None, r) for r in rows], [len(rows)])
            return len(rows)
        if scenario in ("delete", "delete_reinsert"):
            key = self._pick_deletable(table)
            if key is not None:
                before = self.db.delete(table, key)
                self._transaction(table, [("d", before, None)], [1])
                if scenario == "delete_reinsert":
                    self.reinsert_queue.append([table, key])
                return 1
            scenario = "update"
        if scenario == "insert":
            row = self._insert_row(table)
            if row is not None:
                self.db.insert(table, row)
                self._transaction(table, [("c", None, row)], [1])
                return 1
        changed = self._updated(table)
        if changed is None:
            return 0
        self._transaction(table, [("u", *changed)], [1])
        return 1

    def _mysql_log(self) -> MySqlLog:
        mysql_log = self.logs["mysql"]
        if not isinstance(mysql_log, MySqlLog):  # LOG_CLASSES maps "mysql" to MySqlLog
            raise TypeError(f"the mysql source log is a {type(mysql_log).__name__}, not a MySqlLog")
        return mysql_log

    def _scenario(self, table: str) -> str:
        if any(queued == table for queued, _ in self.reinsert_queue) and self.rng.random() < 0.5:
            return "insert"
        pick = self.rng.random()
        if pick < 0.30:
            return "insert"
        if pick < 0.72:
            return "update"
        if pick < 0.82:
            return "delete"
        if pick < 0.87:
            return "delete_reinsert"
        if pick < 0.93:
            return "multi"
        if pick < 0.96 and table == "sale":
            return "batch_insert"
        if pick < 0.98:
            return "insert_update_delete"
        return "update"

    def changes(self, total: int, special: bool = True) -> None:
        """``total`` change events split over the tables in proportion to their sizes.

        With ``special`` (batch runs) the run also gets its scripted cases: a MySQL binlog
        rollover half-way, connector restarts that re-deliver recent events, the optional
        truncate-and-reload, the injected bad lines, the tricky scenarios up front, and (in
        the first run of a landing) a PostgreSQL incremental snapshot a third of the way in.
        """
        if total < 2 * len(TABLES):
            weights = [max(1, self.db.count(t)) for t in TABLES]
            schedule = self.rng.choices(TABLES, weights=weights, k=total)
            quotas = dict(collections.Counter(schedule))
            quotas.update({t: 0 for t in TABLES if t not in quotas})
        else:
            quotas = self._quotas(total)
            schedule = [t for t in TABLES for _ in range(quotas[t])]
            self.rng.shuffle(schedule)
        forced = collections.deque(
            [("listing", "multi"), ("sale", "delete_reinsert"), ("user", "delete_reinsert"),
             ("sale", "batch_insert"), ("user", "multi"), ("listing", "delete_reinsert"),
             ("sale", "insert_update_delete")] if special else []
        )  # fmt: skip
        restart_count = self.options.restarts if special else 0
        restarts = {int(len(schedule) * (k + 1) / (restart_count + 1)) for k in range(restart_count)}
        rollover_at = len(schedule) // 2 if special else -1
        truncate_at = (len(schedule) * 2) // 3 if self.options.truncate and special else -1
        # once per landing: a later run re-reading every venue again would only grow the data
        incremental_at = len(schedule) // 3 if special and self.run == 1 else -1
        bad_count = self.options.inject_bad if special else 0
        bad_at = sorted(self.rng.randrange(max(1, len(schedule))) for _ in range(bad_count))
        remaining = dict(quotas)
        for index, table in enumerate(schedule):
            if index == rollover_at:
                self._mysql_log().rollover()  # FLUSH LOGS: the next binlog file starts at pos 4
            if index in restarts:
                self._redeliver()
            if index == truncate_at:
                self._truncate_and_reload("category")
            if index == incremental_at:
                self._incremental_snapshot("venue")
            while bad_at and bad_at[0] == index:
                bad_at.pop(0)
                self._inject_bad_line()
            if remaining[table] <= 0:
                continue
            scenario = self._scenario(table)
            if forced and forced[0][0] == table:
                scenario = forced.popleft()[1]
            remaining[table] -= self.step(table, scenario, remaining[table])
        for table in TABLES:  # fill the quotas left by steps that emitted less
            guard = 0
            while remaining[table] > 0 and guard < 1000:
                guard += 1
                remaining[table] -= self.step(table, "update", remaining[table])
        while bad_at:
            bad_at.pop()
            self._inject_bad_line()

    def _redeliver(self) -> None:
        """A connector restart: it re-sends its last events with new offsets (at-least-once)."""
        candidates = [name for name in sorted(self.recent) if self.recent[name]]
        if not candidates:
            return
        recent = list(self.recent[candidates[self.rng.randrange(len(candidates))]])
        count = min(len(recent), self.rng.randint(3, 25))
        for topic, partition, line in recent[-count:]:
            self.sink.append(topic, partition, line, self.clock_ms)
        self.summary.duplicates += count

    def _truncate_and_reload(self, table: str) -> None:
        rows = self.db.truncate(table)
        for row in rows:
            self.db.insert(table, row)
        self.clock_ms += 1000
        contract = self.contracts[table]
        _, positions = self.logs[contract.connector].transaction(self.rng, [1] * (len(rows) + 1))
        self.emit(table, "t", None, None, positions[0], self.clock_ms)
        for row, position in zip(rows, positions[1:], strict=True):
            self.emit(table, "c", None, row, position, self.clock_ms)
        self.summary.change_events += len(rows) + 1

    def _incremental_snapshot(self, table: str) -> None:
        """A signal makes the PostgreSQL connector read ``table`` again while it streams (an
        incremental snapshot): every current row once more as a read event positioned only by
        ``sequence`` (``PostgresLog.incremental_snapshot_positions``). One row changed first
        without an event (as when a table joins the capture late, the reason to run one): its
        read event must win over its earlier changes, and changes streamed later over it. Its
        own random stream picks that row."""
        connector_log = self.logs[self.contracts[table].connector]
        if not isinstance(connector_log, PostgresLog) or not self.db.rows[table]:
            return
        rng = random.Random(f"tickit-sim:{self.seed}:{self.run}:incremental-snapshot")
        before = self.db.get(table, rng.choice(sorted(self.db.rows[table])))
        after = self.generator.changed_row(table, rng, before)
        if after is not None and after != before:
            self.db.update(table, after)  # not captured: no event
        self.clock_ms += 1000
        positions = connector_log.incremental_snapshot_positions()
        for key in sorted(self.db.rows[table]):
            self.emit(table, "r", None, self.db.get(table, key), positions, self.clock_ms, "incremental")
            self.summary.incremental_snapshot_events += 1

    def _inject_bad_line(self) -> None:
        kind = BAD_KINDS[self.summary.bad_lines % len(BAD_KINDS)]
        tables = ("category", "venue", "event") if kind == "unsupported_op" else TABLES
        table = self.rng.choice(tables)
        contract = self.contracts[table]
        pool = self.db.pools[table]
        row = self.db.get(table, pool.choice(self.rng))
        positions = self.logs[contract.connector].snapshot_positions()
        source = source_block(self.logs[contract.connector], contract, self.clock_ms, "false", positions)
        line = bad_line(kind, self.rng, contract, self.encoders[table], row, source, self.clock_ms)
        topic = UNKNOWN_TOPIC if kind == "unknown_topic" else self.topics[table]
        partition = self.rng.randrange(self.options.partitions)
        if self.avro:  # the same random draws as JSON: the good events stay those of a JSON run
            self._inject_bad_avro(kind, contract, line, row, source, topic, partition)
        else:
            offset, path = self.sink.append(topic, partition, line, self.clock_ms)
            self.dead_letters.append(dead_letter_record(line, kind, topic, partition, offset, path))
        self.summary.bad_lines += 1

    def _inject_bad_avro(self, kind: str, contract: TableContract, line: bytes, row: Row, source: dict[str, Any],
                         topic: str, partition: int) -> None:
        bad = bad_avro(kind, contract, self.avro_encoders[contract.name], line, row, source, self.clock_ms)
        if isinstance(bad, AvroBadFile):
            raws: list[bytes] = []

            def build(path: str) -> bytes:
                if bad.item is None:  # not an Avro file at all
                    raws.append(bad.content)
                    return bad.content
                data, raw = truncated_container(bad.item, sync_marker(path))
                raws.append(raw)
                return data

            offset, path = self.sink.append_file(topic, partition, self.clock_ms, build)
            self.dead_letters.append(
                dead_letter_record(raws[0], bad.reason, topic, partition, offset, path, binary=True))
            return
        offset, path = self.sink.append(topic, partition, bad.item, self.clock_ms)
        self.dead_letters.append(
            dead_letter_record(bad.raw_line.encode("utf-8"), bad.reason, topic, partition, offset, path))

    def _tick(self) -> None:
        done = self.summary.snapshot_events + self.summary.change_events
        if self.progress is not None and done % 2000 == 0:
            self.progress(done, 0)

    # --- commit ------------------------------------------------------------------------------
    def commit(self) -> None:
        """Flush every open landing file, then write the oracle segments and the manifest."""
        self.sink.flush_all()
        run_dir = f"{ORACLE_DIR}/run-{self.run:04d}"
        previous = self.previous or {}
        segments = json.loads(json.dumps(previous.get("segments", {})))
        segments.setdefault("events", {name: [] for name in TABLES})
        segments.setdefault("live", {})
        segments.setdefault("dead_letters", [])
        for table in TABLES:
            path = f"{run_dir}/events/{table}.jsonl"
            self.storage.write(path, self.event_encoders[table].header() + b"".join(self.oracle_lines[table]))
            if path not in segments["events"][table]:
                segments["events"][table].append(path)
            live_path = f"{run_dir}/live/{table}.jsonl"
            live = self.db.rows[table]
            lines = [f"[{self._row_fragment(table, live[key])}]\n".encode() for key in sorted(live)]
            self.storage.write(live_path, self.live_encoders[table].header() + b"".join(lines))
            segments["live"][table] = live_path
        dead_path = f"{run_dir}/dead_letters.jsonl"
        dead_data = "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in self.dead_letters)
        self.storage.write(dead_path, dead_data.encode("utf-8"))
        if dead_path not in segments["dead_letters"]:
            segments["dead_letters"].append(dead_path)
        self.summary.files = self.sink.files_written
        self.summary.lines = self.sink.lines_written
        self.summary.start_time = _iso(self.start_ms)
        self.summary.end_time = _iso(self.clock_ms)
        runs = list(previous.get("runs", []))
        run_record = asdict(self.summary)
        run_record.pop("seconds", None)
        run_record.pop("landing", None)
        runs = [r for r in runs if r["run"] != self.run] + [run_record]
        counts = {
            "tombstones": sum(r["tombstones"] for r in runs),
            "duplicates": sum(r["duplicates"] for r in runs),
            "bad_lines": sum(r["bad_lines"] for r in runs),
            "events": sum(r["snapshot_events"] + r["change_events"] for r in runs),
        }
        manifest = {
            "format": ORACLE_FORMAT,
            "generator": "lakehouse simulate",
            "tables": list(TABLES),
            "topics": {t: self.topics[t] for t in TABLES},
            "positions_degraded": False,
            "runs": runs,
            "counts": counts,
            "segments": segments,
            "state": {
                "clock_ms": self.clock_ms,
                "logs": {name: lg.state() for name, lg in self.logs.items()},
                "offsets": dict(sorted(self.sink.offsets.items())),
                "next_id": dict(self.db.next_id),
                "reinsert_queue": self.reinsert_queue,
            },
        }
        self.storage.write(MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode("utf-8"))

    # --- modes -------------------------------------------------------------------------------
    def run_batch(self) -> RunSummary:
        started = time.monotonic()
        if self.run == 1:
            self.snapshot()
        self.changes(self.options.changes)
        self.commit()
        self.summary.seconds = round(time.monotonic() - started, 2)
        return self.summary

    def run_continuous(self, should_stop: Callable[[], bool] | None = None) -> RunSummary:
        """Changes at ``rate`` events/s on the wall clock until ``duration`` or interruption.

        A first run commits its snapshot before streaming; files rotate and the oracle is
        committed every ``rotate_interval_ms`` of wall time; ``duration`` counts the streaming only.
        """
        started = time.monotonic()
        rate = float(self.options.rate or 1)
        if self.run == 1:
            self.snapshot()
            self.commit()
        self.clock_ms = max(self.clock_ms, _now_ms())
        self.wall_clock = True
        emitted = 0
        streaming_since = last_commit = time.monotonic()
        try:
            while True:
                elapsed = time.monotonic() - streaming_since
                if self.options.duration is not None and elapsed >= self.options.duration:
                    break
                if should_stop is not None and should_stop():
                    break
                due = int(elapsed * rate) - emitted
                if due > 0:
                    self.clock_ms = max(self.clock_ms, _now_ms())
                    before = self.summary.change_events
                    self.changes(due, special=False)
                    emitted += self.summary.change_events - before
                self.sink.advance(_now_ms())
                if (time.monotonic() - last_commit) * 1000 >= self.options.rotate_interval_ms:
                    self.commit()
                    last_commit = time.monotonic()
                time.sleep(min(0.2, 1.0 / rate))
        except KeyboardInterrupt:
            log.info("interrupted: committing what was written")
        self.commit()
        self.summary.seconds = round(time.monotonic() - started, 2)
        return self.summary


def _now_ms() -> int:
    return epoch_ms(dt.datetime.now(dt.UTC).replace(tzinfo=None))


def _iso(ms: int) -> str:
    return (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)).isoformat(timespec="milliseconds") + "Z"


def expected_events(options: SimulationOptions, resuming: bool) -> int:
    """Rough number of source events a run will emit (for progress bars)."""
    snapshot = 0
    if not resuming:
        snapshot = 11 + 202 + 365 + 8798 + sum(max(1, round(n * options.scale)) for n in FULL_SIZES.values())
    return snapshot + options.changes


def run_simulation(options: SimulationOptions, progress: ProgressCallback | None = None) -> RunSummary:
    """Run one simulation (batch, or continuous when ``options.rate`` is set)."""
    simulation = Simulation(options, progress)
    if options.rate is not None:
        return simulation.run_continuous()
    return simulation.run_batch()
