"""The scheduler fires jobs at their cron times (fake clock), coalesces misses, refuses overlap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lakehouse.jobs.alerts import Alerter
from lakehouse.jobs.history import list_runs
from lakehouse.jobs.runner import JobRunner
from lakehouse.jobs.scheduler import Scheduler
from lakehouse.jobs.spec import parse_jobs

from .conftest import FakeClock


def jobs_document(python_step, marker_dir) -> dict:
    return {"jobs": [
        {
            # 02:00 in Amsterdam: 00:00 UTC in summer (CEST, UTC+2), 01:00 UTC in winter (CET).
            "name": "nightly", "cron": "0 2 * * *", "timezone": "Europe/Amsterdam",
            "steps": [python_step(f"import pathlib; pathlib.Path({str(marker_dir)!r}, 'nightly').touch()")],
        },
        {
            "name": "quarter-hourly", "cron": "*/15 * * * *",
            "steps": [python_step("print('tick')")],
        },
        {"name": "manual-only", "steps": [python_step("print('never scheduled')")]},
    ]}


def test_job_fires_at_its_cron_time_in_its_time_zone(home, tmp_path, python_step):
    clock = FakeClock(datetime(2026, 6, 30, 23, 50, tzinfo=UTC))
    jobs = parse_jobs(jobs_document(python_step, tmp_path))
    runner = JobRunner(home, Alerter(None), clock=clock.now, sleep=clock.sleep)
    scheduler = Scheduler(jobs, runner, clock=clock.aware, inline=True)

    assert set(scheduler.next_fire) == {"nightly", "quarter-hourly"}  # manual-only is not scheduled
    assert scheduler.next_fire["nightly"].astimezone(UTC) == datetime(2026, 7, 1, 0, 0, tzinfo=UTC)
    assert scheduler.seconds_until_next() == 30.0  # capped wake-up; the next fire is 10 minutes away

    clock.advance(minutes=9, seconds=59)  # 23:59:59 UTC
    assert scheduler.tick() == []
    assert not (tmp_path / "nightly").exists()

    clock.advance(seconds=1)  # 00:00:00 UTC == 02:00 CEST
    assert sorted(scheduler.tick()) == ["nightly", "quarter-hourly"]
    assert (tmp_path / "nightly").exists()
    clock.advance(seconds=30)
    assert scheduler.tick() == []  # fired once, not again within the minute

    [run] = list_runs(home, "nightly")
    assert run.trigger == "schedule" and run.status == "success"
    assert run.started_at == "2026-07-01T00:00:00.000"
    # Winter: the next nightly after the DST change is at 01:00 UTC.
    clock.current = datetime(2026, 12, 1, 0, 30, tzinfo=UTC)
    scheduler = Scheduler(jobs, runner, clock=clock.aware, inline=True)
    assert scheduler.next_fire["nightly"].astimezone(UTC) == datetime(2026, 12, 1, 1, 0, tzinfo=UTC)


def test_missed_fire_times_coalesce_into_one_run_within_grace(home, tmp_path, python_step):
    clock = FakeClock(datetime(2026, 7, 1, 10, 1, tzinfo=UTC))
    jobs = parse_jobs(jobs_document(python_step, tmp_path))
    runner = JobRunner(home, Alerter(None), clock=clock.now, sleep=clock.sleep)
    scheduler = Scheduler(jobs, runner, clock=clock.aware, inline=True, misfire_grace=timedelta(minutes=10))

    clock.advance(minutes=35)  # 10:15 and 10:30 missed; now 10:36, 10:30 is within grace
    assert scheduler.tick() == ["quarter-hourly"]
    assert scheduler.next_fire["quarter-hourly"] == datetime(2026, 7, 1, 10, 45, tzinfo=UTC)
    assert len(list_runs(home, "quarter-hourly")) == 1

    clock.advance(hours=2)  # 12:36: the 12:30 slot is within grace again -> one run
    assert scheduler.tick() == ["quarter-hourly"]
    clock.current = datetime(2026, 7, 1, 13, 14, tzinfo=UTC)
    scheduler.next_fire["quarter-hourly"] = datetime(2026, 7, 1, 12, 45, tzinfo=UTC)  # 29 min late
    assert scheduler.tick() == []  # beyond grace: skipped, schedule moves on
    assert scheduler.next_fire["quarter-hourly"] == datetime(2026, 7, 1, 13, 15, tzinfo=UTC)


def test_scheduled_run_overlapping_a_running_one_is_refused(home, tmp_path, python_step):
    release = tmp_path / "release"
    started = tmp_path / "started"
    slow = python_step(
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)"
    )
    jobs = parse_jobs({"jobs": [{"name": "every-minute", "cron": "* * * * *", "steps": [slow]}]})
    clock = FakeClock(datetime(2026, 7, 1, 10, 0, 30, tzinfo=UTC))
    runner = JobRunner(home, Alerter(None), clock=clock.now, sleep=clock.sleep)
    scheduler = Scheduler(jobs, runner, clock=clock.aware, max_workers=2)
    try:
        clock.advance(seconds=30)
        assert scheduler.tick() == ["every-minute"]
        _wait_for(started)
        clock.advance(minutes=1)
        assert scheduler.tick() == ["every-minute"]  # fires, but the runner refuses the overlap
        scheduler._running["every-minute"].result(timeout=20)
        release.touch()
    finally:
        release.touch()
        scheduler.stop()
        scheduler._pool.shutdown(wait=True)
    statuses = sorted(r.status for r in list_runs(home, "every-minute"))
    assert statuses == ["skipped", "success"]


def _wait_for(path, timeout: float = 20.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
