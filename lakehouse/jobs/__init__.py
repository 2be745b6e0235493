"""Scheduled dbt jobs: ``jobs.yml`` specs, the unattended runner, run history, the scheduler.

Public API::

    from lakehouse.jobs import load_jobs, JobRunner, Alerter, Scheduler, list_runs
    runner = JobRunner(settings.home, Alerter(settings.alert_webhook_url))
    record = runner.run(load_jobs()["nightly"])          # RunRecord (status, steps, alerts)
"""

from lakehouse.jobs.alerts import Alerter
from lakehouse.jobs.history import RunRecord, list_runs
from lakehouse.jobs.lock import JobLockedError
from lakehouse.jobs.runner import JobRunner
from lakehouse.jobs.scheduler import Scheduler
from lakehouse.jobs.spec import JobSpec, JobSpecError, StepSpec, load_jobs

__all__ = [
    "Alerter", "JobLockedError", "JobRunner", "JobSpec", "JobSpecError", "RunRecord", "Scheduler",
    "StepSpec", "list_runs", "load_jobs",
]
