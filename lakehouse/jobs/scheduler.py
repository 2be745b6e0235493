"""The long-running scheduler: fires each job at its cron times (APScheduler's CronTrigger).

The cron arithmetic (fields, time zones, DST) is APScheduler 3.x's ``CronTrigger``; this
module only keeps each job's next fire time and hands due jobs to the runner on a small
thread pool. Missed fire times (machine asleep, scheduler down) are coalesced into one
run when within ``misfire_grace`` and skipped otherwise, like APScheduler's
``coalesce=True``. ``clock`` (aware UTC datetimes) and ``wait`` are injectable, so tests
drive it with a fake clock and no sleeping.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from lakehouse.config import Settings
from lakehouse.jobs.lock import JobLockedError
from lakehouse.jobs.runner import JobRunner
from lakehouse.jobs.spec import JobSpec
from lakehouse.services import registry

log = logging.getLogger(__name__)

MAX_SLEEP_SECONDS = 30.0  # wake up at least this often (clock changes, shutdown)


def aware_utc_now() -> datetime:
    return datetime.now(UTC)


class Scheduler:
    def __init__(
        self,
        jobs: dict[str, JobSpec],
        runner: JobRunner,
        clock: Callable[[], datetime] = aware_utc_now,
        max_workers: int = 4,
        misfire_grace: timedelta = timedelta(minutes=10),
        inline: bool = False,
    ):
        """``inline=True`` runs due jobs in the calling thread (tests)."""
        self.jobs = {name: job for name, job in jobs.items() if job.enabled and job.cron}
        self.runner = runner
        self.clock = clock
        self.misfire_grace = misfire_grace
        self.inline = inline
        self._pool = None if inline else ThreadPoolExecutor(max_workers, thread_name_prefix="job")
        self._stop = threading.Event()
        self._running: dict[str, Future] = {}
        now = self.clock()
        self._triggers = {name: trigger for name, job in self.jobs.items() if (trigger := job.trigger()) is not None}
        self.next_fire: dict[str, datetime | None] = {
            name: trigger.get_next_fire_time(None, now) for name, trigger in self._triggers.items()
        }

    def _catch_up(self, name: str, fire_time: datetime, now: datetime) -> datetime:
        """Move ``name``'s next fire time past ``now``; returns the latest fire time <= now."""
        trigger = self._triggers[name]
        latest = fire_time
        next_time = trigger.get_next_fire_time(fire_time, now)
        while next_time is not None and next_time <= now:
            latest = next_time
            next_time = trigger.get_next_fire_time(next_time, now)
        self.next_fire[name] = next_time
        return latest

    def due(self) -> list[tuple[JobSpec, datetime]]:
        """Jobs whose fire time has come, with that fire time; advances their schedules.

        Several missed fire times coalesce into one run for the latest of them, if that
        one is within ``misfire_grace``.
        """
        now = self.clock()
        fired = []
        for name, fire_time in list(self.next_fire.items()):
            if fire_time is None or fire_time > now:
                continue
            latest = self._catch_up(name, fire_time, now)
            if now - latest > self.misfire_grace:
                log.warning("job %s: missed its %s run by %s (beyond the grace time); skipped",
                            name, latest.isoformat(), now - latest)
                continue
            fired.append((self.jobs[name], latest))
        return fired

    def tick(self) -> list[str]:
        """Start every due job; returns their names."""
        started = []
        for job, fire_time in self.due():
            log.info("job %s: firing (scheduled for %s)", job.name, fire_time.isoformat())
            started.append(job.name)
            if self.inline:
                self._run(job)
            else:
                assert self._pool is not None
                self._running[job.name] = self._pool.submit(self._run, job)
        return started

    def _run(self, job: JobSpec) -> None:
        try:
            record = self.runner.run(job, trigger="schedule")
            log.info("job %s: run %s finished %s in %.1fs", job.name, record.run_id, record.status,
                     record.duration_s or 0)
        except JobLockedError as exc:
            log.warning("job %s: not started, the previous run is still going (%s)", job.name, exc)
        except Exception:  # noqa: BLE001 - one job's crash must not stop the scheduler
            log.exception("job %s: runner error", job.name)

    def seconds_until_next(self) -> float:
        upcoming = [t for t in self.next_fire.values() if t is not None]
        if not upcoming:
            return MAX_SLEEP_SECONDS
        delta = (min(upcoming) - self.clock()).total_seconds()
        return max(0.0, min(delta, MAX_SLEEP_SECONDS))

    def run_forever(self) -> None:
        log.info("scheduler: %d job(s): %s", len(self.jobs), ", ".join(
            f"{name} next {t.isoformat() if t else 'never'}" for name, t in self.next_fire.items()
        ))
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.seconds_until_next() + 0.01)
        log.info("scheduler: stopping; waiting for running jobs to finish")
        if self._pool:
            self._pool.shutdown(wait=True)

    def stop(self) -> None:
        self._stop.set()


# -- PID file ($LAKEHOUSE_HOME/run/scheduler.pid, lakehouse.services.registry) so `lakehouse down` stops it --

SERVICE_NAME = "scheduler"


def register_service(settings: Settings) -> None:
    """Record this process as the home's scheduler; refuses if another one is alive."""
    existing = registry.read(settings, SERVICE_NAME)
    if existing and existing.alive and existing.pid != os.getpid():
        raise RuntimeError(
            f"a scheduler already runs for {settings.home} (pid {existing.pid}, {existing.pid_file})"
        )
    registry.register(settings, SERVICE_NAME)


def unregister_service(settings: Settings) -> None:
    existing = registry.read(settings, SERVICE_NAME)
    if existing and existing.pid == os.getpid():
        registry.unregister(settings, SERVICE_NAME)


def stop(settings: Settings, timeout: float = 60.0) -> str:
    """Stop the scheduler of ``settings.home`` (SIGTERM: it lets running jobs finish)."""
    return registry.stop(settings, SERVICE_NAME, timeout=timeout)
