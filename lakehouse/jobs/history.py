"""Run history under ``$LAKEHOUSE_HOME/jobs/``.

Layout::

    jobs/<job>/lock                                  the running run's lock (see lock.py)
    jobs/<job>/target/                               dbt's target path for this job's steps
    jobs/<job>/runs/<run_id>/run.json                status, times, steps, attempts, alerts
    jobs/<job>/runs/<run_id>/step-<n>-attempt-<m>.log  combined stdout+stderr of one attempt
    jobs/<job>/runs/<run_id>/artifacts/step-<n>-attempt-<m>/{run_results,manifest,sources}.json

``run.json`` is rewritten atomically after every attempt, so a crashed run leaves a
record with status ``running`` that :func:`list_runs` reports as ``crashed`` once its
lock is gone.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lakehouse.jobs.lock import lock_is_live, read_lock

#: Final statuses; ``running`` while in flight; ``crashed`` is inferred on read.
STATUSES = ("success", "failed", "timed_out", "skipped", "running", "crashed")
DBT_ARTIFACTS = ("run_results.json", "manifest.json", "sources.json")


#: What tells one write of an artifact from another: (inode, size, mtime in ns).
ArtifactStamp = tuple[int, int, int]


def artifact_stamps(target_dir: Path) -> dict[str, ArtifactStamp]:
    """The dbt artifacts present in ``target_dir``, each with its stamp (taken before an attempt)."""
    stamps: dict[str, ArtifactStamp] = {}
    for name in DBT_ARTIFACTS:
        try:
            stat = (target_dir / name).stat()
        except FileNotFoundError:
            continue
        stamps[name] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    return stamps


def jobs_root(home: Path) -> Path:
    return home / "jobs"


def job_dir(home: Path, job: str) -> Path:
    return jobs_root(home) / job


def group_lock_path(home: Path, group: str) -> Path:
    """The lock of a lock group's runs (a file beside the jobs' folders, see lock.py)."""
    return jobs_root(home) / f".{group}.group-lock"


@dataclass
class AttemptRecord:
    number: int
    mode: str  # "run" | "dbt retry"
    command: list[str]
    started_at: str
    duration_s: float = 0.0
    exit_code: int | None = None
    outcome: str = "running"  # success | failed | transient | timed_out
    log: str = ""
    artifacts: list[str] = field(default_factory=list)


@dataclass
class StepRecord:
    index: int
    name: str
    status: str = "pending"  # pending | running | success | failed | timed_out
    attempts: list[AttemptRecord] = field(default_factory=list)


@dataclass
class RunRecord:
    job: str
    run_id: str
    trigger: str
    status: str
    started_at: str
    finished_at: str | None = None
    duration_s: float | None = None
    steps: list[StepRecord] = field(default_factory=list)
    failed_step: str | None = None
    error: str | None = None
    alerts: list[dict[str, Any]] = field(default_factory=list)
    stale_sources: list[str] = field(default_factory=list)
    pid: int = field(default_factory=os.getpid)
    lock_taken_over_from: dict | None = None
    resumed_from: str | None = None  # run_id of the failed run this one resumed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        steps = [
            StepRecord(
                index=s["index"],
                name=s["name"],
                status=s["status"],
                attempts=[AttemptRecord(**a) for a in s.get("attempts", [])],
            )
            for s in data.get("steps", [])
        ]
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{**{k: v for k, v in data.items() if k in known}, "steps": steps})


class RunStore:
    """Writes one run's directory; the runner is its only writer."""

    def __init__(self, home: Path, record: RunRecord):
        self.record = record
        self.dir = job_dir(home, record.job) / "runs" / record.run_id
        self.dir.mkdir(parents=True, exist_ok=False)

    def log_path(self, step_index: int, attempt: int) -> Path:
        return self.dir / f"step-{step_index}-attempt-{attempt}.log"

    def archive_artifacts(
        self, target_dir: Path, step_index: int, attempt: int, before: dict[str, ArtifactStamp]
    ) -> list[str]:
        """Copy the dbt artifacts this attempt wrote: those whose stamp differs from ``before``."""
        dest = self.dir / "artifacts" / f"step-{step_index}-attempt-{attempt}"
        copied: list[str] = []
        for name, stamp in artifact_stamps(target_dir).items():
            if before.get(name) != stamp:
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy2(target_dir / name, dest / name)
                copied.append(str((dest / name).relative_to(self.dir)))
        return copied

    def save(self) -> None:
        tmp = self.dir / "run.json.tmp"
        tmp.write_text(json.dumps(self.record.to_json(), indent=2))
        os.replace(tmp, self.dir / "run.json")


def load_run(path: Path) -> RunRecord:
    return RunRecord.from_json(json.loads((path / "run.json").read_text()))


def list_runs(home: Path, job: str | None = None, limit: int | None = None) -> list[RunRecord]:
    """Runs newest first (by start time), optionally of one job; a dead ``running`` run reads ``crashed``."""
    root = jobs_root(home)
    job_dirs = [root / job] if job else sorted(p for p in root.glob("*") if p.is_dir())
    runs: list[RunRecord] = []
    for directory in job_dirs:
        lock = read_lock(directory / "lock")
        for run_dir in (directory / "runs").glob("*"):
            if not (run_dir / "run.json").is_file():
                continue
            try:
                record = load_run(run_dir)
            except (ValueError, TypeError, KeyError):
                continue
            if record.status == "running":
                owner_alive = lock is not None and lock.get("run_id") == record.run_id and lock_is_live(lock)
                if not owner_alive:
                    record.status = "crashed"
            runs.append(record)
    runs.sort(key=lambda r: (r.started_at, r.run_id), reverse=True)
    return runs[:limit] if limit else runs
