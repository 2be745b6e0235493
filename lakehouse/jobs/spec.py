"""Job definitions: the versioned ``jobs.yml`` parsed into checked, immutable specs.

A job is a cron schedule (in a time zone) plus an ordered list of steps. Each step is
one of:

- ``dbt: <args>``        — ``lakehouse dbt <args>`` (the project's dbt runner)
- ``lakehouse: <args>``  — any other ``lakehouse`` subcommand (``ingest --once``, ``docs publish ...``)
- ``command: [argv...]`` — a plain program (for site-specific hooks and for tests)

Cron expressions are validated by APScheduler's ``CronTrigger`` (no cron parsing here).
``${VAR}`` / ``${VAR:-default}`` in step arguments are expanded from the environment when
the step runs, so secrets and bucket names stay out of the file.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from apscheduler.triggers.cron import CronTrigger

from lakehouse.config import PROJECT_DIR

DEFAULT_JOBS_FILE = PROJECT_DIR / "jobs.yml"
STEP_KINDS = ("dbt", "lakehouse", "command")
#: dbt subcommands whose failed runs ``dbt retry`` can resume from the failure point.
DBT_RETRYABLE_COMMANDS = frozenset({"build", "run", "test", "seed", "snapshot", "compile", "run-operation"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
_JOB_KEYS = {
    "name", "description", "cron", "timezone", "timeout_minutes", "retries", "backoff_seconds",
    "backoff_max_seconds", "alert_on_stale_sources", "steps", "enabled", "stall_timeout_minutes",
    "lock_group",
}
_STEP_KEYS = {"name", "retry_on", "continue_on_failure", "only_changed_sources", *STEP_KINDS}


class JobSpecError(ValueError):
    """``jobs.yml`` is invalid; the message names the file, the job/step and the problem."""


@dataclass(frozen=True)
class StepSpec:
    name: str
    kind: str  # one of STEP_KINDS
    args: tuple[str, ...]
    #: ``transient`` (default): retry only failures that look like a dropped connection;
    #: ``any``: retry every failure; ``never``: no retries.
    retry_on: str = "transient"
    #: Record the failure (and alert on stale sources) but go on with the next step.
    continue_on_failure: bool = False
    #: A dbt step built only for the bronze tables with new commits since its last success, and not
    #: run when there are none (``lakehouse.jobs.changes``).
    only_changed_sources: bool = False

    @property
    def dbt_command(self) -> str | None:
        """The dbt subcommand (``build``, ``source`` ...) of a dbt step, else None."""
        if self.kind != "dbt":
            return None
        return next((a for a in self.args if not a.startswith("-")), None)

    @property
    def is_source_freshness(self) -> bool:
        words = [a for a in self.args if not a.startswith("-")]
        return self.kind == "dbt" and words[:2] == ["source", "freshness"]

    @property
    def supports_dbt_retry(self) -> bool:
        return self.dbt_command in DBT_RETRYABLE_COMMANDS

    def display(self) -> str:
        prefix = {"dbt": "dbt", "lakehouse": "lakehouse", "command": ""}[self.kind]
        return " ".join(filter(None, [prefix, shlex.join(self.args)]))


@dataclass(frozen=True)
class JobSpec:
    name: str
    cron: str | None
    timezone: str
    steps: tuple[StepSpec, ...]
    description: str = ""
    timeout_seconds: float = 3600.0
    retries: int = 2
    backoff_seconds: float = 30.0
    backoff_max_seconds: float = 600.0
    alert_on_stale_sources: bool = True
    enabled: bool = True
    #: Kill a step that prints nothing for this long and treat it as transient (None: off).
    stall_timeout_seconds: float | None = None
    #: Jobs of one lock group never run at once (default ``lake``: every job that writes the tables)
    lock_group: str = "lake"
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def trigger(self) -> CronTrigger | None:
        """The APScheduler trigger of this job (None for a manual-only job)."""
        if not self.cron:
            return None
        return CronTrigger.from_crontab(self.cron, timezone=self.timezone)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): exponential, capped."""
        return min(self.backoff_seconds * (2 ** (attempt - 1)), self.backoff_max_seconds)


def _fail(source: str, where: str, problem: str) -> JobSpecError:
    return JobSpecError(f"{source}: {where}: {problem}")


def _number(value: Any, source: str, where: str, key: str, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise _fail(source, where, f"'{key}' must be a number >= {minimum}, got {value!r}")
    return float(value)


def _parse_step(raw: Any, index: int, source: str, job: str) -> StepSpec:
    where = f"job '{job}' step {index + 1}"
    if isinstance(raw, str):  # shorthand: "dbt build --select tag:hourly"
        head, _, rest = raw.strip().partition(" ")
        if head not in ("dbt", "lakehouse"):
            raise _fail(source, where, f"a string step must start with 'dbt' or 'lakehouse', got {raw!r}")
        raw = {head: rest}
    if not isinstance(raw, dict):
        raise _fail(source, where, f"expected a mapping, got {type(raw).__name__}")
    unknown = set(raw) - _STEP_KEYS
    if unknown:
        raise _fail(source, where, f"unknown keys {sorted(unknown)} (allowed: {sorted(_STEP_KEYS)})")
    kinds = [k for k in STEP_KINDS if k in raw]
    if len(kinds) != 1:
        raise _fail(source, where, f"exactly one of {list(STEP_KINDS)} is required, got {kinds or 'none'}")
    kind = kinds[0]
    value = raw[kind]
    if isinstance(value, str):
        args = tuple(shlex.split(value))
    elif isinstance(value, list) and all(isinstance(a, str | int | float) for a in value):
        args = tuple(str(a) for a in value)
    else:
        raise _fail(source, where, f"'{kind}' must be a string or a list of strings, got {value!r}")
    if not args:
        raise _fail(source, where, f"'{kind}' has no arguments")
    retry_on = raw.get("retry_on", "transient")
    if retry_on not in ("transient", "any", "never"):
        raise _fail(source, where, f"'retry_on' must be transient, any or never, got {retry_on!r}")
    name = str(raw.get("name") or (f"{kind} {' '.join(args)}" if kind != "command" else args[0]))
    keep_going = raw.get("continue_on_failure", False)
    if not isinstance(keep_going, bool):
        raise _fail(source, where, f"'continue_on_failure' must be true or false, got {keep_going!r}")
    narrowed = raw.get("only_changed_sources", False)
    if not isinstance(narrowed, bool):
        raise _fail(source, where, f"'only_changed_sources' must be true or false, got {narrowed!r}")
    if narrowed and (kind != "dbt" or "--selector" in args):
        raise _fail(source, where, "'only_changed_sources' applies to dbt steps that select with --select")
    return StepSpec(name=name, kind=kind, args=args, retry_on=retry_on, continue_on_failure=keep_going,
                    only_changed_sources=narrowed)


def _parse_job(raw: Any, source: str, index: int) -> JobSpec:
    if not isinstance(raw, dict):
        raise _fail(source, f"job {index + 1}", f"expected a mapping, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(source, f"job {index + 1}", f"'name' must match {_NAME.pattern}, got {name!r}")
    where = f"job '{name}'"
    unknown = set(raw) - _JOB_KEYS
    if unknown:
        raise _fail(source, where, f"unknown keys {sorted(unknown)} (allowed: {sorted(_JOB_KEYS)})")
    cron = raw.get("cron")
    timezone = raw.get("timezone", "UTC")
    if cron is not None:
        if not isinstance(cron, str):
            raise _fail(source, where, f"'cron' must be a string, got {cron!r}")
        try:
            CronTrigger.from_crontab(cron, timezone=timezone)
        except Exception as exc:  # noqa: BLE001 - APScheduler raises ValueError / ZoneInfo errors
            raise _fail(source, where, f"invalid cron {cron!r} / timezone {timezone!r}: {exc}") from exc
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise _fail(source, where, "'steps' must be a non-empty list")
    steps = tuple(_parse_step(s, i, source, name) for i, s in enumerate(steps_raw))
    retries = raw.get("retries", 2)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise _fail(source, where, f"'retries' must be an integer >= 0, got {retries!r}")
    lock_group = raw.get("lock_group", "lake")
    if not isinstance(lock_group, str) or not _NAME.match(lock_group):
        raise _fail(source, where, f"'lock_group' must match {_NAME.pattern}, got {lock_group!r}")
    return JobSpec(
        name=name,
        lock_group=lock_group,
        cron=cron,
        timezone=str(timezone),
        steps=steps,
        description=str(raw.get("description", "")),
        timeout_seconds=_number(raw.get("timeout_minutes", 60), source, where, "timeout_minutes", 0.001) * 60,
        retries=retries,
        backoff_seconds=_number(raw.get("backoff_seconds", 30), source, where, "backoff_seconds", 0),
        backoff_max_seconds=_number(
            raw.get("backoff_max_seconds", 600), source, where, "backoff_max_seconds", 0
        ),
        alert_on_stale_sources=bool(raw.get("alert_on_stale_sources", True)),
        enabled=bool(raw.get("enabled", True)),
        stall_timeout_seconds=(
            None if raw.get("stall_timeout_minutes") is None
            else _number(raw["stall_timeout_minutes"], source, where, "stall_timeout_minutes", 0.001) * 60
        ),
    )


def parse_jobs(document: Any, source: str = "jobs.yml") -> dict[str, JobSpec]:
    """Check a parsed ``jobs.yml`` document and return its jobs by name (file order)."""
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        raise JobSpecError(f"{source}: expected a top-level 'jobs:' list")
    jobs: dict[str, JobSpec] = {}
    for index, raw in enumerate(document["jobs"]):
        job = _parse_job(raw, source, index)
        if job.name in jobs:
            raise _fail(source, f"job '{job.name}'", "defined twice")
        jobs[job.name] = job
    return jobs


def load_jobs(path: Path | str | None = None) -> dict[str, JobSpec]:
    """Read and check a jobs file (default: ``jobs.yml`` at the project root)."""
    path = Path(path) if path else DEFAULT_JOBS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JobSpecError(f"{path}: jobs file not found") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise JobSpecError(f"{path}: not valid YAML: {exc}") from exc
    return parse_jobs(document, str(path))
