"""Run one job unattended: lock, steps with retries and backoff, timeout, history, alerts.

Behaviour (issue 7):

- **No overlap**: a PID-checked lock per job (lock.py); a refused run is recorded as
  ``skipped`` and raises :class:`JobLockedError`.
- **Retries**: a failed attempt whose log looks like a dropped connection (Thrift server
  gone, connection refused/reset) is retried after an exponential backoff, up to the
  job's ``retries``. A dbt step one of whose attempts got as far as writing
  ``run_results.json`` is retried with ``dbt retry --state`` on the latest such results
  (from the failure point), otherwise re-run whole.
- **Timeout**: one deadline per job; a step still running at the deadline is killed
  (its whole process group) and the run ends ``timed_out``; timeouts are not retried.
- **Resume**: ``resume=True`` re-runs the job's latest failed run from its failed step
  (``dbt retry`` where that step is a dbt build/run/test one of whose attempts wrote
  results, even if its last attempt, refused by a dead server, wrote none).
- **History**: run.json, per-attempt logs and the dbt artifacts of every attempt.
- **Alerts**: exactly one ``job_failed`` alert per run on final failure (failing step
  plus a log excerpt), one ``stale_sources`` alert when ``dbt source freshness`` finds
  stale sources.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lakehouse.config import PROJECT_DIR, load_settings
from lakehouse.jobs import commands
from lakehouse.jobs.alerts import Alerter, failure_payload, stale_payload
from lakehouse.jobs.changes import Built, BuiltRecord, bronze_sources, narrow
from lakehouse.jobs.history import (
    AttemptRecord,
    RunRecord,
    RunStore,
    StepRecord,
    artifact_stamps,
    group_lock_path,
    job_dir,
    list_runs,
)
from lakehouse.jobs.lock import JobLock, JobLockedError
from lakehouse.jobs.spec import JobSpec, StepSpec

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]

#: Log lines that mark a failure as transient: the Thrift/HiveServer2 connection dropped
#: or could not be opened. Anything else (SQL errors, test failures) is permanent.
TRANSIENT_PATTERNS = re.compile(
    r"TTransportException|TSocket read 0 bytes|Could not connect to any of|Connection refused"
    r"|Connection reset|Broken pipe|\[Errno 11[01]\]|\[Errno 104\]|Could not establish connection"
    r"|Failed to open a connection|thrift.*(?:closed|EOF)|Connection timed out|Read timed out",
    re.IGNORECASE,
)
LOG_EXCERPT_LINES = 40
LOG_EXCERPT_CHARS = 3000
KILL_GRACE_SECONDS = 10.0
#: status of a step that only builds changed sources when no bronze table has a new commit
NOTHING_NEW = "skipped (nothing new)"


def utc_now() -> datetime:
    """Naive UTC now (the project's timestamp rule)."""
    return datetime.now(UTC).replace(tzinfo=None)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


def new_run_id(moment: datetime) -> str:
    return f"{moment:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def log_excerpt(path: Path, lines: int = LOG_EXCERPT_LINES, chars: int = LOG_EXCERPT_CHARS) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    tail = "\n".join(text.rstrip().splitlines()[-lines:])
    return tail[-chars:]


def stale_sources(sources_json: Path) -> list[str]:
    """Sources ``dbt source freshness`` found stale (warn/error) in ``sources_json``."""
    try:
        results = json.loads(sources_json.read_text()).get("results", [])
    except ValueError:
        return []
    stale = []
    for result in results:
        if result.get("status") in ("warn", "error"):
            unique_id = result.get("unique_id", "?")
            stale.append(".".join(unique_id.split(".")[-2:]))  # source.<project>.<source>.<table>
    return sorted(stale)


@dataclass
class ProcessResult:
    exit_code: int | None
    timed_out: bool
    error: str | None = None
    stalled: bool = False  # killed after printing nothing for the stall timeout


def run_process(
    argv: list[str], env: dict[str, str], log_path: Path, timeout: float, stall_timeout: float | None = None
) -> ProcessResult:
    """Run ``argv`` with output to ``log_path``; kill its process group after ``timeout`` seconds,
    or after ``stall_timeout`` seconds without any new output (a client hung on a dead connection)."""
    with open(log_path, "ab") as out:
        out.write(f"$ {' '.join(argv)}\n".encode())
        out.flush()
        try:
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, cwd=PROJECT_DIR, start_new_session=True,
            )
        except OSError as exc:
            message = f"cannot start {argv[0]!r}: {exc}"
            out.write(f"{message}\n".encode())
            return ProcessResult(exit_code=None, timed_out=False, error=message)
        deadline = time.monotonic() + max(timeout, 0.001)
        last_size, last_growth = -1, time.monotonic()
        try:
            while True:
                poll = min(1.0, max(deadline - time.monotonic(), 0.001))
                try:
                    return ProcessResult(exit_code=process.wait(timeout=poll), timed_out=False)
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if now >= deadline:
                    _kill_group(process)
                    out.write(f"\n[lakehouse jobs] killed at the job timeout ({timeout:.0f}s)\n".encode())
                    return ProcessResult(exit_code=process.returncode, timed_out=True)
                size = log_path.stat().st_size
                if size != last_size:
                    last_size, last_growth = size, now
                elif stall_timeout is not None and now - last_growth >= stall_timeout:
                    _kill_group(process)
                    out.write(f"\n[lakehouse jobs] stalled: no output for {stall_timeout:.0f}s; "
                              "killed (treated as a dropped connection)\n".encode())
                    return ProcessResult(exit_code=process.returncode, timed_out=False, stalled=True)
        except BaseException:  # KeyboardInterrupt / scheduler shutdown: never orphan the step
            _kill_group(process)
            raise


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _latest_results(step: StepRecord, run_dir: Path) -> Path | None:
    """The archived artifacts of ``step``'s latest attempt that wrote ``run_results.json``."""
    for attempt in reversed(step.attempts):
        for artifact in attempt.artifacts:
            if artifact.endswith("run_results.json"):
                return (run_dir / artifact).parent
    return None


class JobRunner:
    """Runs jobs for one ``LAKEHOUSE_HOME``. ``clock`` and ``sleep`` are injectable for tests."""

    def __init__(
        self,
        home: Path,
        alerter: Alerter | None = None,
        clock: Clock = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        env: dict[str, str] | None = None,
        progress: Callable[[str], None] | None = None,
    ):
        """``progress`` receives one line per step start, retry and end (the CLI prints them)."""
        self.home = Path(home)
        self.progress = progress or (lambda message: None)
        self.alerter = alerter or Alerter(None)
        self.clock = clock
        self.sleep = sleep
        self.base_env = env

    # -- public -------------------------------------------------------------------------------

    def run(self, job: JobSpec, trigger: str = "manual", resume: bool = False) -> RunRecord:
        """Run ``job`` once; returns its history record.

        Raises JobLockedError when another run of the job holds the lock (recorded as
        ``skipped``), ValueError when ``resume`` finds no failed run to resume.
        """
        resume_point = self._resume_point(job) if resume else None
        started = self.clock()
        record = RunRecord(
            job=job.name, run_id=new_run_id(started), trigger=trigger, status="running",
            started_at=_iso(started), steps=[StepRecord(i + 1, s.name) for i, s in enumerate(job.steps)],
            resumed_from=resume_point[2] if resume_point else None,
        )
        lock = JobLock(job_dir(self.home, job.name) / "lock", record.run_id, record.started_at, job=job.name)
        group = JobLock(group_lock_path(self.home, job.lock_group), record.run_id, record.started_at, job=job.name)
        try:
            lock.acquire()
            try:
                group.acquire()
            except JobLockedError:
                lock.release()
                raise
        except JobLockedError as exc:
            record.status, record.error = "skipped", str(exc)
            self._finish(RunStore(self.home, record), started)
            log.warning("job %s: run refused: %s", job.name, exc)
            raise
        store = RunStore(self.home, record)
        try:
            if lock.took_over:
                record.lock_taken_over_from = lock.took_over
                log.warning("job %s: reclaimed the lock of a crashed run %s", job.name, lock.took_over)
            store.save()
            self._run_steps(job, store, resume_point)
        except Exception as exc:
            record.status = "failed"
            record.error = f"runner error: {type(exc).__name__}: {exc}"
            record.alerts.append(self.alerter.send(failure_payload(
                job.name, record.run_id, "failed", record.failed_step, record.error, ""
            )))
            raise
        finally:
            self._finish(store, started)
            group.release()
            lock.release()
        return record

    # -- internals ----------------------------------------------------------------------------

    def _resume_point(self, job: JobSpec) -> tuple[int, Path | None, str]:
        """(index of the step to start at, the results its ``dbt retry`` starts from, the failed run's id)."""
        previous = next((r for r in list_runs(self.home, job.name) if r.status != "skipped"), None)
        if previous is None or previous.status not in ("failed", "timed_out", "crashed"):
            raise ValueError(f"job '{job.name}' has no failed run to resume (latest: "
                             f"{previous.status if previous else 'none'})")
        done = ("success", "failed (continued)", "skipped (resumed)", NOTHING_NEW)
        failed = next((s for s in previous.steps if s.status not in done), None)
        if failed is None or len(previous.steps) != len(job.steps):
            raise ValueError(f"job '{job.name}': run {previous.run_id} does not match the job's steps; "
                             "run it afresh")
        step = job.steps[failed.index - 1]
        results = _latest_results(failed, job_dir(self.home, job.name) / "runs" / previous.run_id)
        return failed.index - 1, results if step.supports_dbt_retry else None, previous.run_id

    def _run_steps(self, job: JobSpec, store: RunStore, resume_point: tuple[int, Path | None, str] | None) -> None:
        record = store.record
        deadline = time.monotonic() + job.timeout_seconds
        target = job_dir(self.home, job.name) / "target"
        dbt_logs = job_dir(self.home, job.name) / "dbt-logs"
        target.mkdir(parents=True, exist_ok=True)
        env = commands.step_env(target, dbt_logs, self.base_env)
        first, first_retry_state, _ = resume_point or (0, None, None)
        for index, step in enumerate(job.steps):
            step_record = record.steps[index]
            if index < first:
                step_record.status = "skipped (resumed)"
                continue
            retry_state = first_retry_state if index == first else None
            built = None
            if step.only_changed_sources and retry_state is None:
                narrowed = self._changed_sources(job, step, index)
                if narrowed is None:
                    step_record.status = NOTHING_NEW
                    self.progress(f"step {step_record.index}/{len(job.steps)} '{step.name}': no bronze table has a "
                                  "new commit since its last success: not run")
                    store.save()
                    continue
                step, built = narrowed
            outcome = self._run_step(job, step, step_record, store, env, target, deadline, retry_state)
            store.save()
            if outcome == "success":
                if built is not None:
                    built[0].save(built[1], target / "manifest.json")
                continue
            if outcome == "failed" and step.continue_on_failure:
                step_record.status = "failed (continued)"
                continue
            record.status = outcome
            record.failed_step = f"{index + 1}: {step.name}"
            last = step_record.attempts[-1] if step_record.attempts else None
            excerpt = log_excerpt(store.dir / last.log) if last else ""
            record.error = (
                f"step '{step.name}' timed out (job timeout {job.timeout_seconds:.0f}s)"
                if outcome == "timed_out"
                else f"step '{step.name}' failed with exit code {last.exit_code if last else '?'}"
            )
            record.alerts.append(self.alerter.send(failure_payload(
                job.name, record.run_id, outcome, record.failed_step, record.error, excerpt
            )))
            return
        record.status = "success"

    def _changed_sources(
        self, job: JobSpec, step: StepSpec, index: int,
    ) -> tuple[StepSpec, tuple[BuiltRecord, Built]] | None:
        """The step narrowed to the bronze tables with new commits and what to record on its success;
        None when no table changed since its last success."""
        lake = load_settings().lake
        record = BuiltRecord(job_dir(self.home, job.name), index + 1, lake)
        narrowing = narrow(list(step.args), lake, bronze_sources(PROJECT_DIR), record.load(), record.state())
        if narrowing is None:
            return None
        if narrowing.args != list(step.args):
            reshaped = f"; columns changed in {', '.join(narrowing.reshaped)}" if narrowing.reshaped else ""
            self.progress(f"step {index + 1}/{len(job.steps)} '{step.name}': new commits in "
                          f"{', '.join(narrowing.changed)}{reshaped}")
        return dataclasses.replace(step, args=tuple(narrowing.args)), (record, narrowing.built)

    def _run_step(
        self, job: JobSpec, step: StepSpec, step_record: StepRecord, store: RunStore,
        env: dict[str, str], target: Path, deadline: float, retry_state: Path | None,
    ) -> str:
        step_record.status = "running"
        max_attempts = 1 + (0 if step.retry_on == "never" else job.retries)
        for attempt in range(1, max_attempts + 1):
            artifacts_before = artifact_stamps(target)
            started = self.clock()
            log_path = store.log_path(step_record.index, attempt)
            try:
                argv = commands.step_argv(step, env, retry_state)
            except commands.StepConfigError as exc:
                log_path.write_text(f"{exc}\n")
                step_record.attempts.append(AttemptRecord(
                    attempt, "run", [], _iso(started), 0.0, None, "failed", log_path.name
                ))
                step_record.status = "failed"
                return "failed"
            self.progress(f"step {step_record.index}/{len(job.steps)} '{step.name}': "
                          f"{'dbt retry' if retry_state else 'attempt'} {attempt} started")
            attempt_record = AttemptRecord(
                number=attempt, mode="dbt retry" if retry_state else "run", command=argv,
                started_at=_iso(started), log=log_path.name,
            )
            step_record.attempts.append(attempt_record)
            store.save()
            remaining = deadline - time.monotonic()
            t0 = time.monotonic()
            result = (
                run_process(argv, env, log_path, remaining, job.stall_timeout_seconds)
                if remaining > 0
                else ProcessResult(exit_code=None, timed_out=True)
            )
            attempt_record.duration_s = round(time.monotonic() - t0, 3)
            attempt_record.exit_code = result.exit_code
            attempt_record.artifacts = store.archive_artifacts(
                target, step_record.index, attempt, artifacts_before
            )
            sources = next((a for a in attempt_record.artifacts if a.endswith("sources.json")), None)
            if step.is_source_freshness and sources:
                self._check_freshness(job, store, store.dir / sources)
            if result.timed_out:
                attempt_record.outcome = step_record.status = "timed_out"
                return "timed_out"
            if result.exit_code == 0:
                attempt_record.outcome = step_record.status = "success"
                return "success"
            transient = step.retry_on == "any" or (
                step.retry_on == "transient"
                and (result.stalled or bool(TRANSIENT_PATTERNS.search(log_excerpt(log_path, 200, 20000))))
            )
            attempt_record.outcome = "transient" if transient else "failed"
            if not transient or attempt == max_attempts:
                break
            # Resume a dbt build/run/test from its failure point when an attempt recorded results.
            if step.supports_dbt_retry:
                retry_state = _latest_results(step_record, store.dir) or retry_state
            wait = job.backoff(attempt)
            log.warning("job %s step '%s' attempt %d failed transiently; retrying in %.0fs%s",
                        job.name, step.name, attempt, wait, " with dbt retry" if retry_state else "")
            store.save()
            self.progress(f"step {step_record.index} '{step.name}' failed transiently; retry in {wait:.0f}s")
            if time.monotonic() + wait >= deadline:
                step_record.status = "timed_out"
                return "timed_out"
            self.sleep(wait)
        step_record.status = "failed"
        return "failed"

    def _check_freshness(self, job: JobSpec, store: RunStore, sources_json: Path) -> None:
        """Alert once per run on the stale sources in this attempt's ``sources.json``."""
        record = store.record
        stale = stale_sources(sources_json)
        if not stale or record.stale_sources:
            return  # nothing stale, or already alerted in this run
        record.stale_sources = stale
        if job.alert_on_stale_sources:
            record.alerts.append(self.alerter.send(stale_payload(job.name, record.run_id, stale)))

    def _finish(self, store: RunStore, started: datetime) -> None:
        record = store.record
        if record.status == "running":  # an exception escaped the step loop
            record.status = "failed"
            record.error = record.error or "the runner stopped unexpectedly (see the scheduler log)"
        finished = self.clock()
        record.finished_at = _iso(finished)
        record.duration_s = round((finished - started).total_seconds(), 3)
        store.save()
