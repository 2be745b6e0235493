"""Scheduled dbt jobs: ``jobs.yml`` specs, the unattended runner, run history, the scheduler.

Public API::

    from ingestion.jobs import load_jobs, JobRunner, Alerter, Scheduler, list_runs
    runner = JobRunner(settings.home, Alerter(settings.alert_webhook_url))
    record = runner.run(load_jobs()["nightly"])          # RunRecord (status, steps, alerts)
"""

from ingestion.jobs.alerts import Alerter
from ingestion.jobs.history import RunRecord, list_runs
from ingestion.jobs.lock import JobLockedError
from ingestion.jobs.runner import JobRunner
from ingestion.jobs.scheduler import Scheduler
from ingestion.jobs.spec import JobSpec, JobSpecError, StepSpec, load_jobs

__all__ = [
    "Alerter", "JobLockedError", "JobRunner", "JobSpec", "JobSpecError", "RunRecord", "Scheduler",
    "StepSpec", "list_runs", "load_jobs",
]
