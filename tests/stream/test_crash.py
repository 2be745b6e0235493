"""Crash tests: bronze == oracle exactly once after crashes, and a replayed batch skips committed tables.

SIGKILL: each trial starts the CLI in a subprocess with small micro-batches, waits a random
number of completed batches plus a random delay (so kills land during parsing, Hudi
commits and checkpoint commits alike), then SIGKILLs it. A final run completes; the
oracle and hudi-rs judge the result. The default suite runs one trial, the slow suite ten.

Replay: a micro-batch fails after some of its tables were committed (before Spark's
checkpoint commit); the restarted query replays it, and the commit markers
(``lakehouse.stream`` in each Hudi commit, read here from the timeline's commit files)
must show every table committed once for that batch: skipped where already committed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingestion.stream import IngestError
from ingestion.stream import batch as batch_module
from tests.stream.conftest import ingest, simulate
from tests.stream.judge import compare_events, dead_letter_tuples_bronze, dead_letter_tuples_oracle

CLI = "import sys; from lakehouse.cli import main; sys.exit(main())"


def _command(base: Path) -> list[str]:
    return [sys.executable, "-c", CLI, "ingest", "--once", "--no-sync", "--quiet",
            "--max-files-per-trigger", "3", "--landing", str(base / "landing"), "--lake", str(base / "lake")]


def _env(base: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(LAKEHOUSE_HOME=str(base / "home"), PYTHONUNBUFFERED="1")
    return env


def _batches_logged(log: Path) -> int:
    try:
        return log.read_text(errors="replace").count('"event": "micro_batch"')
    except FileNotFoundError:
        return 0


def run_and_kill(base: Path, rng: random.Random, trial: int, startup_timeout: float = 240) -> bool:
    """One trial; True when the process was killed (False: it finished first)."""
    log = base / f"trial-{trial}.log"
    wait_batches = rng.randint(0, 2)
    with log.open("wb") as out:
        proc = subprocess.Popen(_command(base), env=_env(base), stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + startup_timeout
            while proc.poll() is None and _batches_logged(log) < wait_batches and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(rng.uniform(0.0, 4.0))
            if proc.poll() is not None:
                return False
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            return True
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def crash_and_recover(base: Path, trials: int, seed: int) -> int:
    simulate(base / "landing", fmt="mixed", changes=1500, inject_bad=8, seed=seed)
    rng = random.Random(seed)
    kills = sum(run_and_kill(base, rng, trial) for trial in range(trials))
    final = subprocess.run(_command(base), env=_env(base), capture_output=True, text=True, timeout=900)
    assert final.returncode == 0, final.stderr[-2000:]
    report = compare_events(base / "lake", base / "landing")
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert dead_letter_tuples_bronze(base / "lake") == dead_letter_tuples_oracle(base / "landing")
    return kills


def test_sigkill_then_restart_stores_every_event_once(tmp_path: Path) -> None:
    # the trial must kill a running ingestion, or the test would only check a normal run
    assert crash_and_recover(tmp_path, trials=1, seed=11) == 1


@pytest.mark.slow
def test_ten_sigkills_then_restart_store_every_event_once(tmp_path: Path) -> None:
    kills = crash_and_recover(tmp_path, trials=10, seed=23)
    assert kills >= 5  # most trials must really kill mid-run for the test to mean something


def stream_markers(table_path: Path) -> list[dict]:
    """The ``lakehouse.stream`` marker of every completed commit of a table (the timeline's JSON files)."""
    markers = []
    for commit in sorted((table_path / ".hoodie").glob("*.commit")):
        extra = json.loads(commit.read_text()).get("extraMetadata") or {}
        if extra.get("lakehouse.stream"):
            markers.append(json.loads(extra["lakehouse.stream"]))
    return markers


def test_a_replayed_batch_skips_the_tables_it_already_committed(tmp_path: Path, spark, monkeypatch) -> None:
    simulate(tmp_path / "landing", fmt="mixed", scale=0.003, changes=300, inject_bad=6, seed=5)
    failing_table = "sale"
    failed: list[int] = []
    real_write_once = batch_module.write_once

    def crash_on_sale(data, path, options, marker, table, state=None, metadata=None):
        """The first batch writing sale fails there; its other tables are written (3 writer threads)."""
        if table == failing_table and not failed:
            failed.append(marker.batch_id)
            raise RuntimeError("simulated crash before the sale commit")
        return real_write_once(data, path, options, marker, table, state, metadata)

    monkeypatch.setattr(batch_module, "write_once", crash_on_sale)
    with pytest.raises(IngestError, match="simulated crash"):
        ingest(spark, tmp_path, "unused", max_files_per_trigger=6)
    failing_batch = failed[0]
    lake = tmp_path / "lake" / "bronze"
    committed = {p.name for p in lake.iterdir()
                 if any(m["batch_id"] == failing_batch for m in stream_markers(p))}
    assert committed and failing_table not in committed  # the crash left the batch half-committed

    monkeypatch.setattr(batch_module, "write_once", real_write_once)
    restart = ingest(spark, tmp_path, "unused", max_files_per_trigger=6)
    replayed = restart.summary.reports[0]
    assert replayed.batch_id == failing_batch
    assert set(replayed.skipped_replays) == committed
    assert failing_table in replayed.commits and not committed & set(replayed.commits)
    query_ids = set()
    for table in lake.iterdir():
        markers = stream_markers(table)
        query_ids |= {m["query_id"] for m in markers}
        batches = [m["batch_id"] for m in markers]
        assert len(batches) == len(set(batches)), (table.name, batches)  # no batch committed twice
    assert len(query_ids) == 1  # the restart resumed the same streaming query
    report = compare_events(tmp_path / "lake", tmp_path / "landing")
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert all(expected == actual for expected, actual, _ in report.values()), report
    assert dead_letter_tuples_bronze(tmp_path / "lake") == dead_letter_tuples_oracle(tmp_path / "landing")
