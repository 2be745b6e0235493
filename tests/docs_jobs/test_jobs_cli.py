"""``lakehouse jobs list|run|history`` end to end in subprocesses, with fake steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from lakehouse.jobs.spec import load_jobs


def lakehouse(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    code = "import sys; from lakehouse.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **env}, timeout=120)


def write_jobs(path: Path, jobs: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"jobs": jobs}))
    return path


def test_shipped_jobs_file_is_valid_and_covers_the_issue_steps():
    jobs = load_jobs()
    steps = [" ".join(step.args) for job in jobs.values() for step in job.steps]
    assert "source freshness" in steps and "docs generate" in steps
    assert any(s.startswith("build --select tag:") for s in steps)
    assert "ingest --once" in steps
    assert any(s.startswith("docs publish --bucket") for s in steps)
    assert all(job.trigger() is not None for job in jobs.values() if job.cron)


def test_run_and_history_through_the_cli(home, tmp_path, webhook):
    jobs_file = write_jobs(tmp_path / "jobs.yml", [
        {"name": "ok", "cron": "5 * * * *", "steps": [{"command": [sys.executable, "-c", "print('fine')"]}]},
        {"name": "broken", "retries": 0, "steps": [
            {"name": "explode", "command": [sys.executable, "-c", "import sys; print('boom: bad SQL'); sys.exit(4)"]},
        ]},
    ])
    env = {"LAKEHOUSE_HOME": str(home), "LAKEHOUSE_JOBS_FILE": str(jobs_file),
           "LAKEHOUSE_ALERT_WEBHOOK_URL": webhook.url}

    listed = lakehouse(["jobs", "list"], env)
    assert listed.returncode == 0 and "ok" in listed.stdout and "broken" in listed.stdout

    assert lakehouse(["jobs", "run", "ok"], env).returncode == 0
    failed = lakehouse(["jobs", "run", "broken"], env)
    assert failed.returncode == 1
    assert "explode" in failed.stderr

    unknown = lakehouse(["jobs", "run", "nope"], env)
    assert unknown.returncode == 2 and "no job named 'nope'" in unknown.stderr

    history = lakehouse(["jobs", "history", "--json"], env)
    runs = json.loads(history.stdout)
    assert sorted((r["job"], r["status"]) for r in runs) == [("broken", "failed"), ("ok", "success")]
    assert all(r["duration_s"] is not None and r["duration_s"] >= 0 for r in runs)
    [alert] = webhook.received
    assert alert["failed_step"] == "1: explode" and "boom: bad SQL" in alert["log_excerpt"]
    table = lakehouse(["jobs", "history", "broken"], env)
    assert "failed" in table.stdout and "job_failed" in table.stdout


def test_invalid_jobs_file_names_the_file_and_the_problem(tmp_path, home):
    jobs_file = write_jobs(tmp_path / "bad.yml", [{"name": "x", "cron": "61 * * * *", "steps": [{"dbt": "run"}]}])
    result = lakehouse(["jobs", "list"], {"LAKEHOUSE_HOME": str(home), "LAKEHOUSE_JOBS_FILE": str(jobs_file)})
    assert result.returncode == 1
    assert str(jobs_file) in result.stderr and "job 'x'" in result.stderr and "61 * * * *" in result.stderr
