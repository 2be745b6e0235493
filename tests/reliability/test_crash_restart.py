"""Crash/restart: the ingestion is SIGKILLed at random moments while the simulator keeps landing data.

After every kill, bronze (read by hudi-rs) must hold no duplicated record key; after the
last restart and a final ``lakehouse ingest --once``, bronze must equal the simulator's
oracle exactly (every event once: none lost, none duplicated, none altered) and the
dead-letter table must hold every injected bad line once.

Knobs (environment): ``LAKEHOUSE_RELIABILITY_CRASH_TRIALS`` (default 20),
``LAKEHOUSE_RELIABILITY_SEED`` (default: random, printed in the figures note).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from ingestion.stream.bronze import all_table_names
from tests.reliability.figures import record
from tests.reliability.judge import compare_lake, duplicate_identities
from tests.reliability.processes import Background, cli_env, run
from tests.security.listening_sockets import listeners, process_tree
from tests.stream.judge import hudi_commits

SCENARIO = "crash/restart: SIGKILL ingest"
TRIALS = int(os.environ.get("LAKEHOUSE_RELIABILITY_CRASH_TRIALS", "20"))
#: Kill moments, each phase equally likely: "startup" (uniform from process start: JVM
#: start, recovery of a torn commit, first listing), "batch" (uniform after a micro-batch
#: started, i.e. its offsets file exists: parsing, writing base files, committing,
#: checkpointing), "commit" (uniform shortly after a new Hudi instant was requested:
#: inside a commit).
STARTUP_KILL_WINDOW = (2.0, 40.0)
BATCH_KILL_WINDOW = (0.0, 20.0)
COMMIT_KILL_WINDOW = (0.0, 1.5)
PHASE_TIMEOUT = 240.0
#: Small micro-batches: many commit boundaries for the kills to hit.
MAX_FILES_PER_TRIGGER = "4"


def started_batches(home: Path) -> int:
    """Micro-batches the streaming query has started (offset log entries in its checkpoint)."""
    return sum(1 for p in home.glob("checkpoints/*/query/offsets/*") if p.name.isdigit())


def requested_instants(home: Path) -> int:
    return sum(1 for _ in home.glob("lake/bronze/*/.hoodie/*.requested"))


def _wait_for_change(ingest: Background, probe, timeout: float) -> bool:
    before = probe()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and ingest.running():
        if probe() != before:
            return True
        time.sleep(0.05)
    return False


def wait_and_kill(ingest: Background, home: Path, rng: random.Random) -> dict:
    """Kill ``ingest`` at a random moment; returns what happened (phase, seconds, early exit)."""
    started = time.monotonic()
    phase = rng.choice(["startup", "batch", "commit"])
    if phase == "startup":
        reached = True
        delay = rng.uniform(*STARTUP_KILL_WINDOW)
    elif phase == "batch":
        reached = _wait_for_change(ingest, lambda: started_batches(home), PHASE_TIMEOUT)
        delay = rng.uniform(*BATCH_KILL_WINDOW)
    else:
        reached = _wait_for_change(ingest, lambda: requested_instants(home), PHASE_TIMEOUT)
        delay = rng.uniform(*COMMIT_KILL_WINDOW)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and ingest.running():
        time.sleep(0.02)
    exited_early = not ingest.running()
    sockets = listeners(process_tree(ingest.pid))  # the live driver and its JVM, just before the kill
    ingest.kill()
    return {"phase": phase, "phase_reached": reached, "kill_after_s": round(time.monotonic() - started, 1),
            "exited_early": exited_early, "listening": sorted(f"{s.address}:{s.port}" for s in sockets),
            "exposed": [f"{s.address}:{s.port}" for s in sockets if not s.is_loopback]}


def torn_instants(lake: Path) -> int:
    """Instants with an ``.inflight`` file and no completed action file (a commit cut short)."""
    torn = 0
    for timeline in (lake / "bronze").glob("*/.hoodie"):
        names = {p.name for p in timeline.iterdir()}
        for name in names:
            if name.endswith(".inflight"):
                instant = name.split(".")[0]
                if not any(n.startswith(instant) and n.split(".")[1] in ("commit", "replacecommit")
                           and len(n.split(".")) == 2 for n in names):
                    torn += 1
    return torn


def completed_commits(lake: Path) -> int:
    return sum(1 for _ in (lake / "bronze").glob("*/.hoodie/*.commit"))


@pytest.mark.reliability
def test_sigkill_during_ingestion_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    seed = int(os.environ.get("LAKEHOUSE_RELIABILITY_SEED", random.randrange(1_000_000)))
    rng = random.Random(seed)
    home = tmp_path / "home"
    lake = home / "lake"
    env = cli_env(home)
    trials_log = tmp_path / "trials.jsonl"
    first = run(["simulate", "--scale", "0.005", "--changes", "300", "--inject-bad", "12", "--restarts", "2",
                 "--seed", str(seed), "--quiet"], env)
    assert first.returncode == 0, first.stderr
    simulator = Background(["simulate", "--rate", "15", "--rotate-interval-ms", "2000", "--seed", str(seed),
                            "--quiet"], env, tmp_path / "simulator.log")
    duplicated_mid_run = torn = errors = commits = exposed = sockets_seen = unreached = 0
    try:
        for trial in range(TRIALS):
            ingest = Background(["ingest", "--trigger", "1", "--no-sync", "--quiet", "--max-files-per-trigger",
                                 MAX_FILES_PER_TRIGGER], env, tmp_path / f"ingest-{trial:02d}.log")
            commits_before = completed_commits(lake) if lake.exists() else 0
            kill = wait_and_kill(ingest, home, rng)
            if kill["exited_early"]:  # the ingestion must only ever stop because we killed it
                errors += 1
            unreached += not kill["phase_reached"]  # a batch or commit never began: an idle process killed
            exposed += len(kill["exposed"])
            sockets_seen += len(kill["listening"])
            duplicates = duplicate_identities(lake) if lake.exists() else {}
            duplicated_mid_run += sum(duplicates.values())
            torn_now = torn_instants(lake) if lake.exists() else 0
            torn += torn_now > 0
            commits += (completed_commits(lake) if lake.exists() else 0) - commits_before
            with trials_log.open("a") as out:
                out.write(json.dumps({
                    "trial": trial, **kill,
                    "commits_during_trial": (completed_commits(lake) if lake.exists() else 0) - commits_before,
                    "torn_instants_after_kill": torn_now, "duplicates": duplicates,
                }) + "\n")
            assert simulator.running(), "the simulator stopped:\n" + simulator.output()[-2000:]
    finally:
        simulator.stop(signal.SIGINT)
    final = run(["ingest", "--once", "--no-sync", "--quiet"], env, timeout=900)
    if final.returncode != 0:
        errors += 1
    comparisons = compare_lake(lake, home / "landing")
    lost = sum(c.lost for c in comparisons)
    duplicated = duplicated_mid_run + sum(c.duplicated for c in comparisons)
    mismatched = sum(c.mismatched for c in comparisons)
    events = sum(c.expected for c in comparisons)
    record(SCENARIO, trials=TRIALS, events=events, lost=lost, duplicated=duplicated, errors=errors + mismatched,
           note=f"seed {seed}; {commits} commits between kills; {torn} kills left a torn commit; "
                f"{unreached} kills before their phase began")
    record("security: ingest driver listens on loopback", trials=TRIALS, events=sockets_seen, errors=exposed,
           note="listening sockets of the live ingest process tree, sampled before each kill")
    assert final.returncode == 0, final.stdout[-2000:] + final.stderr[-3000:]
    # the kills hit an ingestion at work: it committed between them, and every batch- or
    # commit-phase kill came after its batch or commit had begun
    assert commits > 0, f"no commit between the kills; see {trials_log}"
    assert unreached == 0, f"{unreached} kills came before their batch or commit began; see {trials_log}"
    assert exposed == 0, f"the ingestion listened beyond loopback; see {trials_log}"
    assert sockets_seen > 0, "no listening socket of the ingestion seen (the detector sees nothing?)"
    details = [example for c in comparisons for example in c.examples]
    assert (lost, duplicated, mismatched, errors) == (0, 0, 0, 0), "\n".join(details)
    # every table a kill may have caught in its creation was made again: each has a completed
    # commit (hudi-rs), so a catalog can register it
    assert [t for t in all_table_names() if not hudi_commits(lake / "bronze" / t)] == []
    assert events > 10_000
