"""One writer per lake: a second ingestion, a ``--reset`` and a dead-letter replay started while a
continuous ingestion writes the lake are refused before they write, naming the holder; a SIGKILLed
holder leaves no lock behind; the lake then equals the oracle (hudi-rs), nothing stored twice.

Without the lock, a second ``ingest --once`` on a lake a continuous ingestion writes replayed
batch 0 and committed tables before failing: every event of those tables stored twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.figures import record
from tests.reliability.judge import compare_lake, duplicate_identities
from tests.reliability.processes import Background, cli_env, run, wait_for

SCENARIO = "two writers on one lake"


def _batches(home: Path, kind: str) -> int:
    return sum(1 for p in home.glob(f"checkpoints/*/query/{kind}/*") if p.name.isdigit())


def _checkpoint_files(home: Path) -> set[str]:
    """The checkpoint's files but the running stream's temporary ones (which come and go)."""
    return {str(p.relative_to(home)) for p in home.glob("checkpoints/**/*") if p.is_file() and ".tmp" not in p.name}


@pytest.mark.reliability
def test_second_writers_are_refused_and_nothing_is_stored_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    landing, lake = home / "landing", home / "lake"
    env = cli_env(home)
    sim = run(["simulate", "--scale", "0.02", "--changes", "300", "--inject-bad", "6", "--seed", "5", "--quiet"],
              env)
    assert sim.returncode == 0, sim.stderr
    holder = Background(["ingest", "--trigger", "1", "--no-sync", "--quiet", "--max-files-per-trigger", "2"],
                        env, tmp_path / "holder.log")
    refusals: dict[str, str] = {}
    try:
        assert wait_for(lambda: _batches(home, "commits") > 0 or not holder.running(), timeout=600, interval=0.2)
        assert holder.running(), (tmp_path / "holder.log").read_text()[-3000:]
        before = _checkpoint_files(home)
        for name, args in {"ingest --once": ["ingest", "--once", "--no-sync", "--quiet"],
                           "ingest --once --reset": ["ingest", "--once", "--reset", "--no-sync", "--quiet"],
                           "dead-letter replay": ["dead-letter", "replay", "--all"]}.items():
            refused = run(args, env, timeout=600)
            assert refused.returncode != 0, f"{name} was not refused: {refused.stdout}{refused.stderr}"
            refusals[name] = refused.stderr
        # --reset was refused before it touched the holder's checkpoint
        assert before <= _checkpoint_files(home)
        holder_running = holder.running()
    finally:
        holder.kill()  # a crash: no release, the kernel drops the lock with the process
    final = run(["ingest", "--once", "--no-sync", "--quiet"], env, timeout=900)
    comparisons = compare_lake(lake, landing)
    duplicates = duplicate_identities(lake)
    lost = sum(c.lost for c in comparisons)
    duplicated = sum(c.duplicated for c in comparisons) + sum(duplicates.values())
    errors = (final.returncode != 0) + (not holder_running) + sum(c.mismatched for c in comparisons)
    record(SCENARIO, trials=1, events=sum(c.expected for c in comparisons), lost=lost, duplicated=duplicated,
           errors=errors, note="3 second writers refused while a stream ran; its SIGKILL left no lock")
    for name, stderr in refusals.items():
        assert f"is being written by another process (pid {holder.pid} on host" in stderr, (name, stderr)
        assert "nothing was written" in stderr, (name, stderr)
    assert holder_running, "the holding stream stopped while the second writers were refused"
    assert final.returncode == 0, f"the lock of a killed holder was not recovered:\n{final.stderr[-2000:]}"
    details = [e for c in comparisons for e in c.examples]
    assert (lost, duplicated, errors) == (0, 0, 0), "\n".join([*details, f"duplicates {duplicates}"])
