"""What the Airflow DAGs need from ``jobs.yml``, read with plain PyYAML (no project imports).

Kept free of Airflow and of the ``ingestion`` package so it imports in any Airflow
environment (MWAA included) and in the project's own test suite. The jobs themselves
run through the project's runner (``lakehouse jobs run NAME``), so locks, retries,
timeouts, history and alerts are the same as under ``lakehouse scheduler``.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

#: jobs.yml: $LAKEHOUSE_JOBS_FILE, else next to this file (MWAA dags folder), else the project root.
CANDIDATE_JOBS_FILES = (
    Path(__file__).with_name("jobs.yml"),
    Path(__file__).resolve().parent.parent / "jobs.yml",
)
#: Exit code of ``lakehouse jobs run`` when the job is already running (the DAG marks the task skipped).
EXIT_ALREADY_RUNNING = 3
#: Head-room over the job's own timeout before Airflow kills the task (the runner times out first).
AIRFLOW_TIMEOUT_MARGIN_MINUTES = 10


@dataclass(frozen=True)
class DagSpec:
    dag_id: str
    job: str
    description: str
    schedule: str | None
    timezone: str
    timeout_minutes: float
    bash_command: str


def jobs_file() -> Path:
    configured = os.environ.get("LAKEHOUSE_JOBS_FILE")
    if configured:
        return Path(configured)
    for candidate in CANDIDATE_JOBS_FILES:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"jobs.yml not found (set LAKEHOUSE_JOBS_FILE); looked in {CANDIDATE_JOBS_FILES}")


def dag_specs(path: Path | None = None) -> list[DagSpec]:
    """One DAG per job of jobs.yml (disabled jobs and manual ones get ``schedule=None``)."""
    path = path or jobs_file()
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    cli = os.environ.get("LAKEHOUSE_CLI", "lakehouse")
    specs = []
    for job in document["jobs"]:
        name = job["name"]
        enabled = job.get("enabled", True)
        specs.append(DagSpec(
            dag_id=f"lakehouse__{name.replace('-', '_')}",
            job=name,
            description=str(job.get("description", f"lakehouse job {name}")).strip(),
            schedule=job.get("cron") if enabled else None,
            timezone=job.get("timezone", "UTC"),
            timeout_minutes=float(job.get("timeout_minutes", 60)),
            bash_command=f"{cli} jobs run {shlex.quote(name)} --trigger airflow",
        ))
    return specs
