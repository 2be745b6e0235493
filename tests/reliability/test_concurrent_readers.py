"""Concurrent readers: counts through the Thrift server while the ingestion commits to the registered tables.

Reader threads ask ``SELECT count(*) FROM bronze.<table>`` every fraction of a second.
A monitor thread reads every committed instant of the same tables with hudi-rs (as of
that instant). Every answer must equal the count of some committed snapshot (never a
partial commit, never a file slice counted twice, never a missing file), and the answers
of one reader never go backwards (bronze is an append-only change log, and each query
of a registered Hudi table reads the newest completed commit: no refresh, no cache).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder

from ingestion.catalog.thrift_client import ThriftCatalog
from tests.reliability.figures import record
from tests.reliability.processes import Background, cli_env, run, wait_for

SCENARIO = "concurrent readers via Thrift"
TABLES = ("sale", "listing")
POLL_SECONDS = 0.2
READ_SECONDS = 100.0


@dataclass
class ReaderLog:
    table: str
    answers: list[tuple[float, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    not_synced_yet: int = 0


def snapshot_count(table_path: Path, instant: str) -> int:
    table = HudiTableBuilder.from_base_uri(str(table_path)).build()
    batches = table.read(HudiReadOptions().with_as_of_timestamp(instant).with_projection(["_hoodie_record_key"]))
    return pa.Table.from_batches(batches).num_rows if batches else 0


def committed_instants(table_path: Path) -> list[str]:
    if not (table_path / ".hoodie" / "hoodie.properties").exists():
        return []
    timeline = HudiTableBuilder.from_base_uri(str(table_path)).build().get_timeline()
    return [instant.timestamp for instant in timeline.get_completed_commits()]


def monitor(lake: Path, counts: dict[str, dict[str, int]], stop: threading.Event, failures: list[str]) -> None:
    """Record the hudi-rs count of every committed instant as soon as it appears (before cleaning)."""
    while not stop.is_set():
        for table in TABLES:
            path = lake / "bronze" / table
            try:
                for instant in committed_instants(path):
                    if instant not in counts[table]:
                        counts[table][instant] = snapshot_count(path, instant)
            except Exception as exc:  # noqa: BLE001 - a cleaned instant; recorded, judged at the end
                failures.append(f"{table}: {type(exc).__name__}: {exc}")
        stop.wait(0.05)


def reader(host: str, port: int, log: ReaderLog, stop: threading.Event) -> None:
    catalog = ThriftCatalog(host, port)
    try:
        while not stop.is_set():
            try:
                rows = catalog.execute(f"SELECT count(*) FROM bronze.{log.table}")
                log.answers.append((time.monotonic(), int(rows[0][0])))
            except Exception as exc:  # noqa: BLE001 - every failure is a finding
                text = f"{type(exc).__name__}: {exc}"
                if not log.answers and ("TABLE_OR_VIEW_NOT_FOUND" in text or "SCHEMA_NOT_FOUND" in text):
                    log.not_synced_yet += 1
                else:
                    log.errors.append(text[:300])
            stop.wait(POLL_SECONDS)
    finally:
        catalog.close()


@pytest.mark.reliability
def test_readers_only_ever_see_committed_snapshots(own_thrift_server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    lake = home / "lake"
    env = cli_env(home, own_thrift_server.port)
    first = run(["simulate", "--scale", "0.005", "--changes", "300", "--seed", "3", "--quiet"], env)
    assert first.returncode == 0, first.stderr
    counts: dict[str, dict[str, int]] = {t: {} for t in TABLES}
    logs = [ReaderLog(t) for t in TABLES for _ in range(2)]
    stop = threading.Event()
    monitor_failures: list[str] = []
    threads = [threading.Thread(target=monitor, args=(lake, counts, stop, monitor_failures), daemon=True)]
    threads += [threading.Thread(target=reader, args=(own_thrift_server.host, own_thrift_server.port, log, stop),
                                 daemon=True) for log in logs]
    simulator = Background(["simulate", "--rate", "25", "--rotate-interval-ms", "1500", "--seed", "3", "--quiet"],
                           env, tmp_path / "simulator.log")
    ingest = Background(["ingest", "--trigger", "1", "--max-files-per-trigger", "3", "--quiet"], env,
                        tmp_path / "ingest.log")
    for thread in threads:
        thread.start()
    try:
        assert wait_for(lambda: any(a for log in logs for _, a in log.answers) or not ingest.running(),
                        timeout=600), "no reader saw a committed row in 10 minutes"
        time.sleep(READ_SECONDS)
        ingest_alive = ingest.running()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        ingest.stop(signal.SIGINT)
        simulator.stop(signal.SIGINT)
    # 0 is the snapshot before the first commit with rows (the ingestion creates every table empty).
    valid = {table: {0, *by_instant.values()} for table, by_instant in counts.items()}
    wrong: list[str] = []
    backwards = 0
    for log in logs:
        previous = -1
        for _, answer in log.answers:
            if answer not in valid[log.table]:
                wrong.append(f"{log.table}: {answer} is no committed snapshot count {sorted(valid[log.table])[-5:]}")
            if answer < previous:
                backwards += 1
            previous = answer
    answers = sum(len(log.answers) for log in logs)
    nonzero = sum(1 for log in logs for _, a in log.answers if a)
    errors = len(wrong) + backwards + sum(len(log.errors) for log in logs) + (not ingest_alive)
    commits = sum(len(c) for c in counts.values())
    diagnostics = tmp_path / "readers.json"
    diagnostics.write_text(json.dumps({
        "counts": counts, "monitor_failures": monitor_failures[:20], "wrong": wrong[:20], "backwards": backwards,
        "readers": [{"table": log.table, "answers": [a for _, a in log.answers], "errors": log.errors[:10],
                     "not_synced_yet": log.not_synced_yet} for log in logs],
    }, indent=1))
    record(SCENARIO, trials=answers, events=answers, errors=errors,
           note=f"{len(logs)} readers x {READ_SECONDS:.0f}s, {nonzero} non-empty answers; "
                f"{commits} commits of {'/'.join(TABLES)} observed")
    print(f"reader diagnostics: {diagnostics}")
    assert ingest_alive, (tmp_path / "ingest.log").read_text(errors="replace")[-3000:]
    assert nonzero > 30, f"too few answers after the first commit: {nonzero} of {answers}"
    assert commits >= 6, f"too few commits during the read window: {counts}"
    assert not wrong, "\n".join(wrong[:10])
    assert backwards == 0
    assert not [e for log in logs for e in log.errors], [e for log in logs for e in log.errors][:5]
