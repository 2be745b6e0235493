"""``lakehouse jobs list|run|history`` and ``lakehouse scheduler``: scheduled dbt jobs (jobs.yml)."""

from __future__ import annotations

import argparse
import json
import os
import signal
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lakehouse.cli._common import EXIT_FAILED, CliError, UsageError
from lakehouse.config import load_settings
from lakehouse.jobs import scheduler as scheduler_mod
from lakehouse.jobs.alerts import Alerter
from lakehouse.jobs.history import list_runs
from lakehouse.jobs.lock import JobLockedError
from lakehouse.jobs.runner import JobRunner
from lakehouse.jobs.spec import DEFAULT_JOBS_FILE, JobSpec, JobSpecError, load_jobs

EXIT_SKIPPED = 3  # the job was already running


def _jobs_file(args: argparse.Namespace) -> Path:
    return Path(args.jobs_file or os.environ.get("LAKEHOUSE_JOBS_FILE") or DEFAULT_JOBS_FILE)


def _load(args: argparse.Namespace) -> dict[str, JobSpec]:
    try:
        return load_jobs(_jobs_file(args))
    except JobSpecError as exc:
        raise CliError(str(exc), hint="fix the jobs file; see docs/scheduling.md") from exc


def _runner(args: argparse.Namespace, console: Console | None = None) -> JobRunner:
    settings = load_settings()
    webhook = getattr(args, "webhook_url", None) or settings.alert_webhook_url
    progress = (lambda line: console.print(escape(f"  {line}"), highlight=False)) if console else None
    return JobRunner(settings.home, Alerter(webhook), progress=progress)


def _list(args: argparse.Namespace) -> int:
    jobs = _load(args)
    now = datetime.now(UTC)
    table = Table(title=f"jobs in {_jobs_file(args)}")
    for column in ("job", "schedule", "time zone", "next run (UTC)", "timeout", "retries", "steps"):
        table.add_column(column)
    for job in jobs.values():
        trigger = job.trigger() if job.enabled else None
        next_time = trigger.get_next_fire_time(None, now) if trigger else None
        table.add_row(
            job.name + ("" if job.enabled else " (disabled)"),
            job.cron or "manual",
            job.timezone,
            next_time.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if next_time else "-",
            f"{job.timeout_seconds / 60:g} min",
            str(job.retries),
            "\n".join(f"{i}. {s.name}" for i, s in enumerate(job.steps, 1)),
        )
    Console().print(table)
    return 0


def _run(args: argparse.Namespace) -> int:
    jobs = _load(args)
    if args.name not in jobs:
        raise UsageError(f"no job named '{args.name}' in {_jobs_file(args)}",
                         hint=f"known jobs: {', '.join(jobs) or 'none'}")
    console = Console(stderr=True)
    console.print(f"running job [bold]{args.name}[/bold] ({len(jobs[args.name].steps)} steps)...")
    try:
        record = _runner(args, console).run(jobs[args.name], trigger=args.trigger, resume=args.resume)
    except JobLockedError as exc:
        console.print(f"[yellow]skipped[/yellow]: {exc}")
        return EXIT_SKIPPED
    except ValueError as exc:  # --resume without a failed run
        raise CliError(str(exc), hint=f"run it afresh: lakehouse jobs run {args.name}") from exc
    for step in record.steps:
        attempts = ", ".join(f"{a.mode} {a.outcome} ({a.duration_s:.1f}s)" for a in step.attempts)
        console.print(escape(f"  {step.index}. {step.name}: {step.status}" + (f" [{attempts}]" if attempts else "")))
    colour = "green" if record.status == "success" else "red"
    console.print(f"[{colour}]{record.status}[/{colour}] run {record.run_id} in {record.duration_s:.1f}s"
                  + (f": {record.error}" if record.error else ""))
    if record.stale_sources:
        console.print(f"[yellow]stale sources[/yellow]: {', '.join(record.stale_sources)}")
    return 0 if record.status == "success" else EXIT_FAILED


def _history(args: argparse.Namespace) -> int:
    settings = load_settings()
    runs = list_runs(settings.home, args.name, args.limit)
    if args.json:
        print(json.dumps([r.to_json() for r in runs], indent=2))
        return 0
    table = Table(title=f"job runs in {settings.home / 'jobs'}")
    for column in ("job", "run", "trigger", "status", "started (UTC)", "duration", "failed step", "alerts"):
        table.add_column(column)
    for run in runs:
        table.add_row(
            run.job, run.run_id, run.trigger + (f" (resumes {run.resumed_from})" if run.resumed_from else ""),
            run.status, run.started_at,
            f"{run.duration_s:.1f}s" if run.duration_s is not None else "-",
            run.failed_step or "", ", ".join(a["event"] for a in run.alerts if a.get("sent")) or "",
        )
    Console().print(table)
    return 0


def _scheduler(args: argparse.Namespace) -> int:
    jobs = _load(args)
    settings = load_settings()
    scheduler = scheduler_mod.Scheduler(jobs, _runner(args), max_workers=args.max_workers)
    if not scheduler.jobs:
        raise CliError(f"no enabled job with a cron schedule in {_jobs_file(args)}")
    try:
        scheduler_mod.register_service(settings)
    except RuntimeError as exc:
        raise CliError(str(exc), hint="stop it first: lakehouse down") from exc
    signal.signal(signal.SIGTERM, lambda *_: scheduler.stop())
    try:
        scheduler.run_forever()
    except KeyboardInterrupt:
        scheduler.stop()
    finally:
        scheduler_mod.unregister_service(settings)
    return 0


def _add_jobs_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs-file", help=f"job definitions (env LAKEHOUSE_JOBS_FILE; default {DEFAULT_JOBS_FILE})"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    jobs = subparsers.add_parser(
        "jobs", help="scheduled dbt jobs: list, run, history",
        description="Jobs are defined in jobs.yml. Runs are locked (no overlap), retried on transient "
        "failures, time-limited, recorded under $LAKEHOUSE_HOME/jobs/ and alert the webhook on failure.",
    )
    sub = jobs.add_subparsers(dest="jobs_command", metavar="ACTION", required=True)

    list_parser = sub.add_parser("list", help="show the jobs, their schedules and next run times")
    _add_jobs_file(list_parser)
    list_parser.set_defaults(func=_list)

    run = sub.add_parser("run", help="run one job now (exit 0 success, 1 failed, 3 already running)")
    run.add_argument("name", help="job name from jobs.yml")
    run.add_argument("--resume", action="store_true",
                     help="resume the latest failed run from its failed step (dbt retry where possible)")
    run.add_argument("--trigger", default="manual", help="label recorded in the history (default: manual)")
    run.add_argument("--webhook-url", help="alert webhook (env LAKEHOUSE_ALERT_WEBHOOK_URL)")
    _add_jobs_file(run)
    run.set_defaults(func=_run)

    history = sub.add_parser("history", help="recent runs: status, duration, failed step, alerts")
    history.add_argument("name", nargs="?", help="only this job")
    history.add_argument("--limit", type=int, default=20, help="number of runs (default 20)")
    history.add_argument("--json", action="store_true", help="full records as JSON")
    history.set_defaults(func=_history)

    sched = subparsers.add_parser(
        "scheduler", help="run the jobs of jobs.yml on their cron schedules (foreground)",
        description="A long-running process: fires each job at its cron time in its time zone "
        "(APScheduler CronTrigger), through the same runner as 'lakehouse jobs run'. "
        "PID file: $LAKEHOUSE_HOME/run/scheduler.pid; stop with SIGTERM or 'lakehouse down'.",
    )
    sched.add_argument("--max-workers", type=int, default=4, help="jobs running at once (default 4)")
    sched.add_argument("--webhook-url", help="alert webhook (env LAKEHOUSE_ALERT_WEBHOOK_URL)")
    _add_jobs_file(sched)
    sched.set_defaults(func=_scheduler)
