"""Crash safety (SIGKILL in a subprocess at each step of a commit), recovery, the lock, cleaning."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from ingestion.hoodie import HoodieTable, LockHeldError, TableConfig
from tests.hoodie.judge import Oracle, hudi_commits, hudi_snapshot, project

ROOT = Path(__file__).resolve().parents[2]
CONFIG = TableConfig(name="crash", record_key_fields=("id",), precombine_field="seq", partition_fields=("part",))


def _batch(ids: list[int], seq: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "seq": pa.array([seq] * len(ids), pa.int64()),
                     "part": pa.array([f"p{i % 3}" for i in ids])})


def _state(base: Path) -> list[tuple]:
    return project(hudi_snapshot(base), ["id", "seq", "part"])


def _run_crash(base: Path, point: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tests.hoodie.crash_writer", str(base), point, "5", "10", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "point, survives",
    [("before_inflight", False), ("during_files", False), ("before_complete", False),
     ("torn_complete", False), ("after_complete", True)],
)
def test_sigkill_leaves_before_or_after_never_a_mix(tmp_path, point, survives):
    base = tmp_path / "crash"
    table = HoodieTable.create_or_open(base, CONFIG)
    with table.writer() as writer:
        writer.write(_batch(list(range(10)), 1), operation="upsert")
    before = _state(base)
    result = _run_crash(base, point)
    assert result.returncode == -signal.SIGKILL, result.stderr
    oracle = Oracle(("id",), ("part",), "seq")
    oracle.apply("1", [{"id": i, "seq": 1, "part": f"p{i % 3}"} for i in range(10)], "upsert")
    oracle.apply("2", [{"id": i, "seq": 10, "part": f"p{i % 3}"} for i in range(5, 15)], "upsert")
    after = project(oracle.snapshot(), ["id", "seq", "part"])
    assert before == project(oracle.snapshot("1"), ["id", "seq", "part"])
    expected = after if survives else before
    assert _state(base) == expected  # a reader right after the crash, before any recovery
    reopened = HoodieTable.open(base)
    with reopened.writer() as writer:
        assert bool(writer.recovered) == (not survives)
    assert reopened.pending_instants() == []
    assert _state(base) == expected
    completed = reopened.completed_instants()
    leftovers = [p.name for p in base.rglob("*.parquet") if p.stem.rsplit("_", 1)[1] not in completed]
    assert leftovers == [], "files of the killed write remain"
    assert [p.name for p in (base / ".hoodie").glob(".*.tmp")] == []
    with reopened.writer() as writer:  # and the table keeps working
        writer.write(_batch([100], 5), operation="upsert")
    assert len(hudi_commits(base)) == (3 if survives else 2)


def test_second_writer_is_refused_while_a_live_process_holds_the_lock(tmp_path):
    base = tmp_path / "locked"
    HoodieTable.create_or_open(base, CONFIG)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys,time; from ingestion.hoodie import HoodieTable; t=HoodieTable.open(sys.argv[1]);"
         "w=t.writer().__enter__(); print('locked', flush=True); time.sleep(120)", str(base)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockHeldError, match=f"pid={holder.pid}"), HoodieTable.open(base).writer():
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    deadline = time.time() + 10
    while True:  # the kernel released the lock with the dead process
        try:
            with HoodieTable.open(base).writer():
                break
        except LockHeldError:
            assert time.time() < deadline
            time.sleep(0.1)


def test_clean_keeps_time_travel_within_the_retained_commits(tmp_path):
    base = tmp_path / "clean"
    table = HoodieTable.create_or_open(base, CONFIG)
    oracle = Oracle(("id",), ("part",), "seq")
    instants = []
    with table.writer() as writer:
        for seq in range(1, 6):
            ids = list(range(seq * 2, seq * 2 + 8))
            instant = writer.write(_batch(ids, seq), operation="upsert")
            oracle.apply(instant, [{"id": i, "seq": seq, "part": f"p{i % 3}"} for i in ids], "upsert")
            instants.append(instant)
    files_before = set(base.rglob("*.parquet"))
    removed = table.clean(retain_commits=2)
    assert removed and all(not Path(p).exists() for p in removed)
    assert set(base.rglob("*.parquet")) == files_before - {Path(p) for p in removed}
    for instant in instants[-2:]:
        got = project(hudi_snapshot(base, as_of=instant), ["id", "seq", "part"])
        assert got == project(oracle.snapshot(instant), ["id", "seq", "part"])
    assert _state(base) == project(oracle.snapshot(), ["id", "seq", "part"])
    assert table.clean(retain_commits=2) == []


@pytest.mark.slow
@pytest.mark.parametrize("point", ["while_executors_write", "before_complete", "after_complete"])
def test_sigkill_of_a_spark_driver(tmp_path, point):
    """The driver of a Spark write killed: the table reads as before or after, and recovers."""
    base = tmp_path / "crash"
    table = HoodieTable.create_or_open(base, CONFIG)
    with table.writer() as writer:
        writer.write(_batch(list(range(10)), 1), operation="upsert")
    before = _state(base)
    result = _run_crash(base, point, "spark")
    assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]
    oracle = Oracle(("id",), ("part",), "seq")
    oracle.apply("1", [{"id": i, "seq": 1, "part": f"p{i % 3}"} for i in range(10)], "upsert")
    oracle.apply("2", [{"id": i, "seq": 10, "part": f"p{i % 3}"} for i in range(5, 15)], "upsert")
    after = project(oracle.snapshot(), ["id", "seq", "part"])
    assert _state(base) in (before, after)
    if point == "after_complete":
        assert _state(base) == after
    time.sleep(3)  # let orphaned Python workers of the dead driver finish or die
    reopened = HoodieTable.open(base)
    with reopened.writer():
        pass
    assert reopened.pending_instants() == [] and _state(base) in (before, after)
    completed = reopened.completed_instants()
    visible = {bf.path for bf in reopened.latest_base_files()}
    assert all(Path(p).stem.rsplit("_", 1)[1] in completed for p in visible)


def test_clean_removes_orphans_of_rolled_back_writes(tmp_path):
    base = tmp_path / "orphans"
    table = HoodieTable.create_or_open(base, CONFIG)
    with table.writer() as writer:
        first = writer.write(_batch([1, 2, 3], 1), operation="upsert")
        second = writer.write(_batch([4], 1), operation="upsert")
    committed = {bf.path for bf in table.latest_base_files()}
    # A late file from a worker of a killed write whose instant recovery already removed:
    orphan = base / "part=p1" / f"0000-0_9-9-9_{int(second) + 1}.parquet"
    orphan.write_bytes(b"PAR1")
    assert table.clean(retain_commits=5) == [str(orphan)]
    assert {bf.path for bf in table.latest_base_files()} == committed and first < second
