"""Acceptance (slow): the nightly job end to end against its own managed Thrift server.

1. bronze loaded (the dbt project's dev loader), ``lakehouse jobs run nightly`` succeeds:
   freshness, build, docs generate, with dbt artifacts archived;
2. the Thrift server is killed in the middle of the build: the run ends failed after its
   retries, with exactly one alert naming the build step;
3. the server is restarted and ``lakehouse jobs run nightly --resume`` finishes the job
   (``dbt retry`` from the failure point), recorded as a success.

It starts its own server (never the shared ``thrift_server`` fixture, which it would kill).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from lakehouse.config import PROJECT_DIR, load_settings
from lakehouse.jobs.history import list_runs, load_run
from lakehouse.services import thrift
from lakehouse.services.ports import free_port

pytestmark = pytest.mark.slow


def lakehouse_popen(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    code = "import sys; from lakehouse.cli import main; sys.exit(main())"
    return subprocess.Popen([sys.executable, "-c", code, *args], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("jobs-e2e")
    settings = dataclasses.replace(load_settings(), home=home, landing=str(home / "landing"),
                                   lake=str(home / "lake"), thrift_port=free_port())
    thrift.start(settings, timeout=300)
    try:
        yield settings
    finally:
        thrift.stop(settings)


def failure_details(home: Path, output: str) -> str:
    """The CLI output plus the error lines of the latest run's failing attempt (for assertion messages)."""
    runs = list_runs(home, "nightly")
    details = [output[-2000:]]
    if runs:
        run_dir = home / "jobs/nightly/runs" / runs[0].run_id
        for step in runs[0].steps:
            for attempt in step.attempts:
                if attempt.outcome != "success":
                    lines = (run_dir / attempt.log).read_text(errors="replace").splitlines()
                    details += [f"--- {attempt.log}"] + [
                        line for line in lines if "Error" in line or "Failure" in line or "ERROR" in line
                    ][-30:]
    return "\n".join(details)


#: The statuses ``dbt retry`` runs again (dbt-core's RETRYABLE_STATUSES, as run_results.json spells them).
DBT_RETRYABLE = {"error", "fail", "skipped", "runtime error", "partial success"}


def node_statuses(run_dir: Path, attempt) -> dict[str, str]:
    """unique_id -> status in the ``run_results.json`` one attempt archived."""
    [results] = [a for a in attempt.artifacts if a.endswith("run_results.json")]
    return {r["unique_id"]: r["status"] for r in json.loads((run_dir / results).read_text())["results"]}


def nightly_jobs_file(directory: Path) -> Path:
    """The shipped nightly job with short backoffs (the steps are unchanged)."""
    document = yaml.safe_load((PROJECT_DIR / "jobs.yml").read_text())
    [nightly] = [job for job in document["jobs"] if job["name"] == "nightly"]
    nightly.update(retries=1, backoff_seconds=2)
    path = directory / "jobs.yml"
    path.write_text(yaml.safe_dump({"jobs": [nightly]}))
    return path


def test_nightly_job_survives_a_thrift_crash(own_server, spark, tmp_path, webhook):
    from tests.dbt_project.bronze_loader import BronzeLoader
    from tests.dbt_project.cdc_fixture import TickitFixture

    settings = own_server
    loader = BronzeLoader(spark, Path(settings.lake), "127.0.0.1", settings.thrift_port)
    loader.create_all()
    loader.commit(TickitFixture().initial_events())
    env = {"LAKEHOUSE_HOME": str(settings.home), "LAKEHOUSE_THRIFT_PORT": str(settings.thrift_port),
           "LAKEHOUSE_JOBS_FILE": str(nightly_jobs_file(tmp_path)), "LAKEHOUSE_ALERT_WEBHOOK_URL": webhook.url}

    # 1. a clean run
    first = lakehouse_popen(["jobs", "run", "nightly"], env)
    output = first.communicate(timeout=1800)[0]
    assert first.returncode == 0, failure_details(settings.home, output)
    [ok] = list_runs(settings.home, "nightly")
    assert ok.status == "success"
    run_dir = settings.home / "jobs/nightly/runs" / ok.run_id
    build = ok.steps[1]
    assert {Path(a).name for a in build.attempts[-1].artifacts} >= {"run_results.json", "manifest.json"}
    assert (run_dir / build.attempts[-1].artifacts[0]).is_file()

    # 2. kill the Thrift server in the middle of the build
    second = lakehouse_popen(["jobs", "run", "nightly"], env)
    deadline = time.monotonic() + 900
    while True:
        runs = [r for r in list_runs(settings.home, "nightly") if r.run_id != ok.run_id]
        if runs and runs[0].steps[1].attempts:
            log = run_dir.parent / runs[0].run_id / runs[0].steps[1].attempts[0].log
            if log.exists() and log.read_text().count(" OK ") >= 3:
                break
        assert second.poll() is None and time.monotonic() < deadline, "the build step never got going"
        time.sleep(0.5)
    os.kill(thrift.status(settings).pid, signal.SIGKILL)
    output = second.communicate(timeout=1800)[0]
    assert second.returncode == 1, output[-4000:]
    failed = load_run(run_dir.parent / runs[0].run_id)
    assert failed.status == "failed" and failed.failed_step == "2: build all"
    assert [a.outcome for a in failed.steps[1].attempts] == ["transient", "transient"]
    [alert] = webhook.events("job_failed")
    assert alert["failed_step"] == "2: build all" and alert["log_excerpt"]

    # 3. restart the server; resume from the failure point
    thrift.start(settings, timeout=300)
    third = lakehouse_popen(["jobs", "run", "nightly", "--resume"], env)
    output = third.communicate(timeout=1800)[0]
    assert third.returncode == 0, failure_details(settings.home, output)
    resumed = list_runs(settings.home, "nightly")[0]
    assert resumed.status == "success"
    assert resumed.steps[0].status == "skipped (resumed)"
    # the first attempt wrote its results, so the retry and the resume start from its failure point
    # (a retry refused by the dead server writes none): nodes that first attempt finished are not
    # run again
    assert [a.mode for a in failed.steps[1].attempts] == ["run", "dbt retry"]
    failed_dir = run_dir.parent / failed.run_id
    first_results = node_statuses(failed_dir, failed.steps[1].attempts[0])
    left = {node for node, status in first_results.items() if status in DBT_RETRYABLE}
    assert left and len(left) < len(first_results), "the kill did not land mid-build"
    [resume_attempt] = resumed.steps[1].attempts
    assert resume_attempt.mode == "dbt retry"
    assert set(node_statuses(run_dir.parent / resumed.run_id, resume_attempt)) == left
    assert len(webhook.events("job_failed")) == 1  # no new failure alert
