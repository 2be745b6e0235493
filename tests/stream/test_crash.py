"""Crash test: ``lakehouse ingest`` SIGKILLed at random moments, restarted; bronze == oracle exactly once.

Each trial starts the CLI in a subprocess with small micro-batches, waits a random
number of completed batches plus a random delay (so kills land during parsing, Hudi
commits and checkpoint commits alike), then SIGKILLs it. A final run completes; the
oracle and hudi-rs judge the result. The default suite runs one trial, the slow suite
ten.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.stream.conftest import simulate
from tests.stream.judge import compare_events, dead_letter_tuples_bronze, dead_letter_tuples_oracle

CLI = "import sys; from lakehouse.cli import main; sys.exit(main())"


def _command(base: Path) -> list[str]:
    return [sys.executable, "-c", CLI, "ingest", "--once", "--no-sync", "--quiet",
            "--max-files-per-trigger", "3", "--landing", str(base / "landing"), "--lake", str(base / "lake")]


def _env(base: Path) -> dict[str, str]:
    env = dict(os.environ)
    # every batch with two or more tables writes from two processes (ingestion.stream.forked_writes),
    # so the kills also land while a forked writer is committing
    env.update(LAKEHOUSE_HOME=str(base / "home"), PYTHONUNBUFFERED="1", LAKEHOUSE_INGEST_FORK_MIN_ROWS="1")
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
    assert crash_and_recover(tmp_path, trials=1, seed=11) >= 0


@pytest.mark.slow
def test_ten_sigkills_then_restart_store_every_event_once(tmp_path: Path) -> None:
    kills = crash_and_recover(tmp_path, trials=10, seed=23)
    assert kills >= 5  # most trials must really kill mid-run for the test to mean something
