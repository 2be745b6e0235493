"""Splitting a micro-batch's table writes over the driver and one forked child."""

from __future__ import annotations

import os

import pytest

from ingestion.stream import forked_writes
from ingestion.stream.forked_writes import MIN_ROWS_TO_FORK, run_shares, split_by_size

pytestmark = pytest.mark.skipif(not forked_writes.fork_available(), reason="needs fork and two cores")


def test_split_balances_rows_and_keeps_order() -> None:
    sizes = {"category": 10, "date": 300, "event": 800, "listing": 180_000, "sale": 175_000, "user": 50_000}
    here, there = split_by_size(sizes)
    assert sorted(here + there) == sorted(sizes)
    totals = sorted(sum(sizes[n] for n in share) for share in (here, there))
    assert totals[1] - totals[0] <= max(sizes.values())  # no share holds more than the other plus one table
    assert {"listing", "sale"} & set(here) and {"listing", "sale"} & set(there)  # the two big ones apart
    for share in (here, there):
        assert share == [n for n in sizes if n in share]


def test_big_batches_run_in_two_processes_with_results_in_order() -> None:
    names = ["a", "b", "c", "d"]
    sizes = dict.fromkeys(names, MIN_ROWS_TO_FORK)

    results = run_shares(names, sizes, lambda name: (name, name.upper() * 2, os.getpid()))

    assert [r[:2] for r in results] == [(n, n.upper() * 2) for n in names]
    pids = {r[2] for r in results}
    assert os.getpid() in pids and len(pids) == 2


def test_small_batches_stay_in_the_driver() -> None:
    names = ["a", "b", "c"]
    results = run_shares(names, dict.fromkeys(names, 10), lambda name: os.getpid())
    assert set(results) == {os.getpid()}


def _fail_with_error(name: str) -> None:
    raise ValueError(f"disk full while writing {name}")


def _die(name: str) -> None:
    os._exit(3)


@pytest.mark.parametrize(("child_does", "message"), [
    (_fail_with_error, r"writing (listing|sale) in a forked writer failed: ValueError: disk full"),
    (_die, "exited with code 3"),
], ids=["error", "exit"])
def test_a_failing_child_fails_the_batch(child_does, message: str) -> None:
    names = ["listing", "sale"]
    driver = os.getpid()

    def work(name: str) -> str:
        if os.getpid() != driver:
            child_does(name)
        return name

    with pytest.raises(RuntimeError, match=message):
        run_shares(names, dict.fromkeys(names, MIN_ROWS_TO_FORK), work)


def test_an_ingest_writing_from_two_processes_equals_the_oracle(tmp_path, spark, monkeypatch) -> None:
    """Every batch forks (threshold 1 row): bronze read by hudi-rs == the simulator's oracle, exactly once."""
    from tests.stream.conftest import ingest, simulate
    from tests.stream.judge import compare_events, dead_letter_tuples_bronze, dead_letter_tuples_oracle

    forks: list[int] = []
    original = forked_writes.split_by_size

    def counting_split(sizes: dict[str, int]) -> tuple[list[str], list[str]]:
        forks.append(len(sizes))
        return original(sizes)

    monkeypatch.setattr(forked_writes, "MIN_ROWS_TO_FORK", 1)
    monkeypatch.setattr(forked_writes, "split_by_size", counting_split)
    simulate(tmp_path / "landing", fmt="mixed", scale=0.005, changes=1500, inject_bad=6)
    run = ingest(spark, tmp_path, "bronze_forked", max_files_per_trigger=40)

    assert forks, "no batch was split"
    report = compare_events(run.lake, run.landing)
    assert all(expected > 0 for expected, _, _ in report.values()), report
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert dead_letter_tuples_bronze(run.lake) == dead_letter_tuples_oracle(run.landing)


DRIVER_KILLED_MID_WRITE = """
import os, signal, sys, time
from ingestion.stream import forked_writes

driver = os.getpid()
pid_file = sys.argv[1]

def work(name):
    if os.getpid() != driver:
        with open(pid_file, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(60)  # a long write in the child
        return name
    while not os.path.exists(pid_file):
        time.sleep(0.01)
    os.kill(driver, signal.SIGKILL)  # the driver dies mid-batch

forked_writes.run_shares(["listing", "sale"], {"listing": 10**6, "sale": 10**6}, work)
"""


def test_the_writer_child_dies_with_a_killed_driver(tmp_path) -> None:
    """No orphan keeps writing (or holding a table's lock) after the driver is SIGKILLed."""
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    driver = subprocess.run([sys.executable, "-c", DRIVER_KILLED_MID_WRITE, str(pid_file)], timeout=60)
    assert driver.returncode == -9
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), f"writer child {child} outlived the driver"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_fork_can_be_switched_off(monkeypatch) -> None:
    monkeypatch.setenv(forked_writes.FORK_ENV, "0")
    names = ["a", "b"]
    results = run_shares(names, dict.fromkeys(names, MIN_ROWS_TO_FORK), lambda name: os.getpid())
    assert set(results) == {os.getpid()}
