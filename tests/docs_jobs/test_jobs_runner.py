"""The unattended job runner with fake steps: retries, timeout, overlap lock, alerts, history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakehouse.config import PROJECT_DIR
from lakehouse.jobs import commands
from lakehouse.jobs.alerts import Alerter
from lakehouse.jobs.changes import ChangedSourcesError, bronze_sources, latest_instant, narrowed_args
from lakehouse.jobs.history import list_runs
from lakehouse.jobs.lock import JobLockedError
from lakehouse.jobs.runner import JobRunner
from lakehouse.jobs.spec import parse_jobs

from .conftest import FakeClock


def one_job(steps: list, **options) -> object:
    document = {"jobs": [{"name": "demo", "cron": "0 2 * * *", "backoff_seconds": 5, **options, "steps": steps}]}
    return parse_jobs(document, "test-jobs.yml")["demo"]


def runner_for(home: Path, webhook_url: str | None, clock: FakeClock) -> JobRunner:
    return JobRunner(home, Alerter(webhook_url), clock=clock.now, sleep=clock.sleep)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 11, 22, 2, 0, tzinfo=UTC))


COUNTER_SCRIPT = """
import pathlib, sys
counter = pathlib.Path(sys.argv[1]); fail_times = int(sys.argv[2])
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
if n < fail_times:
    print("connecting to 127.0.0.1:10000 ...")
    print("thrift.transport.TTransport.TTransportException: TSocket read 0 bytes")
    sys.exit(1)
print("step done")
"""


def counter_step(counter: Path, fail_times: int, **extra) -> dict:
    return {"command": [sys.executable, "-c", COUNTER_SCRIPT, str(counter), str(fail_times)], **extra}


def test_transient_failure_is_retried_with_backoff_then_succeeds(home, tmp_path, clock, webhook, python_step):
    counter = tmp_path / "calls"
    job = one_job([python_step("print('first step')"), counter_step(counter, fail_times=2)], retries=3)

    record = runner_for(home, webhook.url, clock).run(job)

    assert record.status == "success", record.error
    assert counter.read_text() == "3"  # failed twice, third attempt passed
    step = record.steps[1]
    assert [a.outcome for a in step.attempts] == ["transient", "transient", "success"]
    assert clock.slept == [5, 10]  # exponential backoff from backoff_seconds=5
    assert webhook.received == []  # success: no alert
    log = (home / "jobs/demo/runs" / record.run_id / step.attempts[0].log).read_text()
    assert "TTransportException" in log
    [stored] = list_runs(home, "demo")
    assert stored.status == "success" and stored.steps[1].attempts[2].exit_code == 0


def test_permanent_failure_alerts_once_with_step_and_log_excerpt(home, tmp_path, clock, webhook, python_step):
    marker = tmp_path / "third-step-ran"
    failing = python_step(
        "import sys; print('compiling model fct_sales'); "
        "print('AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] bronze.sale cannot be found', file=sys.stderr); "
        "sys.exit(2)",
        name="build gold",
    )
    job = one_job(
        [python_step("print('ok')"), failing, python_step(f"open({str(marker)!r}, 'w')")], retries=3
    )

    record = runner_for(home, webhook.url, clock).run(job)

    assert record.status == "failed"
    assert record.failed_step == "2: build gold"
    assert len(record.steps[1].attempts) == 1  # not transient: no retry
    assert clock.slept == []
    assert not marker.exists()  # later steps do not run
    assert record.steps[2].status == "pending"
    [alert] = webhook.received  # exactly one alert
    assert alert["event"] == "job_failed"
    assert alert["job"] == "demo" and alert["run_id"] == record.run_id
    assert alert["failed_step"] == "2: build gold"
    assert "TABLE_OR_VIEW_NOT_FOUND" in alert["log_excerpt"]
    assert "build gold" in alert["text"]
    [stored] = list_runs(home, "demo")
    assert stored.status == "failed" and stored.alerts == [{"event": "job_failed", "sent": True, "error": None}]


def test_transient_failures_exhausting_retries_alert_once(home, tmp_path, clock, webhook):
    job = one_job([counter_step(tmp_path / "calls", fail_times=99)], retries=2)

    record = runner_for(home, webhook.url, clock).run(job)

    assert record.status == "failed"
    assert len(record.steps[0].attempts) == 3
    assert len(webhook.events("job_failed")) == 1
    assert "TSocket read 0 bytes" in webhook.received[0]["log_excerpt"]


def test_job_timeout_kills_the_step_and_is_not_retried(home, tmp_path, clock, webhook, python_step):
    pid_file = tmp_path / "step.pid"
    sleeper = python_step(
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)", retry_on="any"
    )
    job = one_job([sleeper], timeout_minutes=1.5 / 60, retries=3)

    began = time.monotonic()
    record = runner_for(home, webhook.url, clock).run(job)

    assert time.monotonic() - began < 20
    assert record.status == "timed_out"
    assert len(record.steps[0].attempts) == 1
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    [alert] = webhook.received
    assert alert["status"] == "timed_out"


def test_overlapping_run_is_refused_and_recorded(home, tmp_path, clock, webhook, python_step):
    release = tmp_path / "release"
    started = tmp_path / "started"
    waiting = python_step(
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)"
    )
    job = one_job([waiting])
    runner = runner_for(home, webhook.url, clock)
    results = {}
    first = threading.Thread(target=lambda: results.setdefault("first", runner.run(job)))
    first.start()
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists()

    with pytest.raises(JobLockedError):
        runner.run(job)
    release.touch()
    first.join(20)

    assert results["first"].status == "success"
    statuses = sorted(r.status for r in list_runs(home, "demo"))
    assert statuses == ["skipped", "success"]
    assert webhook.received == []
    assert not (home / "jobs/demo/lock").exists()


def test_lock_of_a_crashed_run_is_taken_over(home, clock, python_step):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = home / "jobs/demo/lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": dead.pid, "run_id": "crashed-run", "acquired_at": "2026-11-21T02:00"}))

    record = runner_for(home, None, clock).run(one_job([python_step("print('hi')")]))

    assert record.status == "success"
    assert record.lock_taken_over_from["run_id"] == "crashed-run"
    assert not lock.exists()


def test_lock_held_by_a_live_process_refuses(home, clock, python_step):
    lock = home / "jobs/demo/lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock.write_text(json.dumps({"pid": holder.pid, "run_id": "other", "acquired_at": "x"}))
        with pytest.raises(JobLockedError, match=f"pid {holder.pid}"):
            runner_for(home, None, clock).run(one_job([python_step("print('hi')")]))
    finally:
        holder.kill()
        holder.wait()
    assert lock.exists()  # someone else's lock is never removed


FAKE_DBT = r"""
import json, os, pathlib, sys
args = sys.argv[1:]
target = pathlib.Path(os.environ["DBT_TARGET_PATH"])
calls = pathlib.Path(os.environ["FAKE_DBT_CALLS"])
with calls.open("a") as fh:
    fh.write(json.dumps(args) + "\n")
n = len(calls.read_text().splitlines())
if args[:2] == ["source", "freshness"]:
    results = [
        {"unique_id": "source.lakehouse.ecomm.sale", "status": "warn"},
        {"unique_id": "source.lakehouse.ems.venue", "status": "pass"},
    ]
    (target / "sources.json").write_text(json.dumps({"results": results}))
    sys.exit(0)
which, retried = args[0], None
if args[0] == "retry":  # like dbt: the previous results come from --state, else the target
    state = pathlib.Path(args[args.index("--state") + 1]) if "--state" in args else target
    if not (state / "run_results.json").is_file():
        print(f"Could not find previous run in '{state}' target directory")
        sys.exit(2)
    previous = json.loads((state / "run_results.json").read_text())
    which, retried = previous["args"]["which"], previous["call"]
if n in [int(c) for c in os.environ.get("FAKE_DBT_NO_RESULTS_AT", "").split(",") if c]:
    print("Database Error: TTransportException: Could not connect to any of [('127.0.0.1', 10000)]")
    sys.exit(1)
from importlib.metadata import version
(target / "manifest.json").write_text(json.dumps({"call": n, "metadata": {"dbt_version": version("dbt-core")}}))
status = "error" if n == int(os.environ.get("FAKE_DBT_FAIL_AT", "0")) else "success"
(target / "run_results.json").write_text(json.dumps({"args": {"which": which}, "call": n, "retried": retried,
                                                     "results": [{"status": status}]}))
if status == "error":
    print(os.environ.get("FAKE_DBT_ERROR", "Database Error: TTransportException: Could not connect"))
    sys.exit(1)
"""


@pytest.fixture
def fake_dbt(tmp_path, monkeypatch):
    script = tmp_path / "fake_dbt.py"
    script.write_text(FAKE_DBT)
    calls = tmp_path / "dbt-calls.jsonl"
    monkeypatch.setattr(commands, "dbt_argv", lambda args: [sys.executable, str(script), *args])
    monkeypatch.setenv("FAKE_DBT_CALLS", str(calls))
    return lambda: [json.loads(line) for line in calls.read_text().splitlines()]


def test_dbt_step_is_retried_from_the_failure_point_and_artifacts_archived(home, clock, fake_dbt, monkeypatch):
    monkeypatch.setenv("FAKE_DBT_FAIL_AT", "1")
    job = one_job([{"dbt": "build --select tag:gold"}], retries=2)

    record = runner_for(home, None, clock).run(job)

    assert record.status == "success"
    run_dir = home / "jobs/demo/runs" / record.run_id
    first_results = run_dir / "artifacts/step-1-attempt-1"
    assert fake_dbt() == [["build", "--select", "tag:gold"], ["retry", "--state", str(first_results)]]
    attempts = record.steps[0].attempts
    assert [a.mode for a in attempts] == ["run", "dbt retry"]
    for number, attempt in enumerate(attempts, start=1):
        assert sorted(Path(a).name for a in attempt.artifacts) == ["manifest.json", "run_results.json"]
        archived = json.loads((run_dir / f"artifacts/step-1-attempt-{number}/run_results.json").read_text())
        assert archived["call"] == number


def test_resume_reruns_the_failed_dbt_step_with_dbt_retry(home, clock, fake_dbt, monkeypatch, webhook):
    monkeypatch.setenv("FAKE_DBT_FAIL_AT", "2")  # second dbt call: the build step
    monkeypatch.setenv("FAKE_DBT_ERROR", "Compilation Error in model fct_sales")
    job = one_job([{"dbt": "seed"}, {"dbt": "build"}, {"dbt": "docs generate"}])
    runner = runner_for(home, webhook.url, clock)
    failed = runner.run(job)
    assert failed.status == "failed" and failed.failed_step.startswith("2:")

    clock.advance(hours=1)
    resumed = runner.run(job, resume=True)

    assert resumed.status == "success" and resumed.resumed_from == failed.run_id
    failed_results = home / "jobs/demo/runs" / failed.run_id / "artifacts/step-2-attempt-1"
    assert fake_dbt() == [["seed"], ["build"], ["retry", "--state", str(failed_results)], ["docs", "generate"]]
    assert [s.status for s in resumed.steps] == ["skipped (resumed)", "success", "success"]
    assert len(webhook.events("job_failed")) == 1
    with pytest.raises(ValueError, match="no failed run"):
        runner.run(job, resume=True)


def test_resume_retries_from_the_results_of_an_earlier_attempt_when_the_last_wrote_none(
    home, clock, fake_dbt, monkeypatch
):
    # call 1: the build fails mid-way and writes its results; call 2: its dbt retry cannot reach
    # the server and writes none (the server is still down); the resume must still start from
    # call 1's failure point, not rebuild everything
    monkeypatch.setenv("FAKE_DBT_FAIL_AT", "1")
    monkeypatch.setenv("FAKE_DBT_NO_RESULTS_AT", "2")
    job = one_job([{"dbt": "build"}], retries=1)
    runner = runner_for(home, None, clock)
    failed = runner.run(job)
    assert failed.status == "failed"
    assert [(a.mode, a.outcome) for a in failed.steps[0].attempts] == [("run", "transient"), ("dbt retry", "transient")]
    assert failed.steps[0].attempts[1].artifacts == []

    clock.advance(hours=1)
    resumed = runner.run(job, resume=True)

    assert resumed.status == "success"
    first_results = home / "jobs/demo/runs" / failed.run_id / "artifacts/step-1-attempt-1"
    assert fake_dbt()[2] == ["retry", "--state", str(first_results)]
    [attempt] = resumed.steps[0].attempts
    assert attempt.mode == "dbt retry"
    [results_file] = [a for a in attempt.artifacts if a.endswith("run_results.json")]
    results = json.loads((home / "jobs/demo/runs" / resumed.run_id / results_file).read_text())
    assert (results["args"]["which"], results["retried"]) == ("build", 1)


def test_stale_sources_alert_once_and_the_job_goes_on(home, clock, fake_dbt, webhook):
    job = one_job([{"dbt": "source freshness", "continue_on_failure": True}, {"dbt": "build"}])

    record = runner_for(home, webhook.url, clock).run(job)

    assert record.status == "success"
    assert record.stale_sources == ["ecomm.sale"]
    [alert] = webhook.received
    assert alert["event"] == "stale_sources" and alert["stale_sources"] == ["ecomm.sale"]


def test_missing_environment_variable_fails_the_step_clearly(home, clock, webhook, monkeypatch):
    monkeypatch.delenv("LAKEHOUSE_TEST_BUCKET", raising=False)
    job = one_job([{"lakehouse": "docs publish --bucket ${LAKEHOUSE_TEST_BUCKET}"}])

    record = runner_for(home, webhook.url, clock).run(job)

    assert record.status == "failed"
    assert "LAKEHOUSE_TEST_BUCKET is not set" in webhook.received[0]["log_excerpt"]


def test_a_stalled_step_is_killed_and_retried(home, tmp_path, clock, webhook):
    """A client hung on a dead connection prints nothing: killed after the stall timeout, then retried."""
    counter = tmp_path / "calls"
    script = (
        "import pathlib, sys, time\n"
        f"counter = pathlib.Path({str(counter)!r})\n"
        "n = int(counter.read_text()) if counter.exists() else 0\n"
        "counter.write_text(str(n + 1))\n"
        "print('60 of 60 PASS unique_rpt_event_sell_through_event_id', flush=True)\n"
        "if n == 0:\n"
        "    time.sleep(120)\n"
    )
    job = one_job([{"command": [sys.executable, "-c", script]}], stall_timeout_minutes=2 / 60, retries=1)

    began = time.monotonic()
    record = runner_for(home, webhook.url, clock).run(job)

    assert time.monotonic() - began < 30
    assert record.status == "success"
    assert [a.outcome for a in record.steps[0].attempts] == ["transient", "success"]
    log = (home / "jobs/demo/runs" / record.run_id / record.steps[0].attempts[0].log).read_text()
    assert "stalled: no output" in log
    assert webhook.received == []


def test_jobs_of_one_lock_group_never_run_at_once(home, tmp_path, clock, python_step):
    """hourly and nightly write the same tables: while one runs the other is refused, naming it."""
    release, started = tmp_path / "release", tmp_path / "started"
    waiting = python_step(
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)"
    )
    document = {"jobs": [{"name": "hourly", "steps": [waiting]}, {"name": "nightly", "steps": [python_step("1")]},
                         {"name": "docs", "lock_group": "docs", "steps": [python_step("1")]}]}
    jobs = parse_jobs(document, "test-jobs.yml")
    runner = runner_for(home, None, clock)
    results = {}
    first = threading.Thread(target=lambda: results.setdefault("hourly", runner.run(jobs["hourly"])))
    first.start()
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists()

    with pytest.raises(JobLockedError, match="job 'hourly'"):
        runner.run(jobs["nightly"])
    assert runner.run(jobs["docs"]).status == "success"  # another group runs beside it
    release.touch()
    first.join(20)

    assert results["hourly"].status == "success"
    assert [r.status for r in list_runs(home, "nightly")] == ["skipped"]
    assert not (home / "jobs/nightly/lock").exists()  # the refused run left its own lock behind
    assert runner.run(jobs["nightly"]).status == "success"  # free again once hourly ended


def test_a_lock_is_never_seen_without_its_owner(home, tmp_path):
    """A lock being taken is never read as a torn (dead) record and taken over: of many processes
    racing for one lock, exactly one holds it."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from lakehouse.jobs.lock import JobLock, JobLockedError\n"
        "path, go, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]\n"
        "while not go.exists(): time.sleep(0.001)\n"
        "try:\n"
        "    JobLock(path, name, 'now').acquire()\n"
        "except JobLockedError:\n"
        "    sys.exit(3)\n"
        "print('took', name, flush=True); time.sleep(3)\n"
    )
    lock, go = home / "jobs/.lake.group-lock", tmp_path / "go"
    lock.parent.mkdir(parents=True)
    racers = [subprocess.Popen([sys.executable, "-c", script, str(lock), str(go), f"run-{i}"],
                               stdout=subprocess.PIPE, text=True) for i in range(8)]
    time.sleep(1.5)  # every racer imported and waiting
    go.touch()
    outputs = [racer.communicate(timeout=60)[0] for racer in racers]
    assert sorted(racer.returncode for racer in racers) == [0] + [3] * 7, outputs
    assert sum("took" in output for output in outputs) == 1


def test_only_changed_sources_builds_the_lineage_of_new_bronze_commits(home, tmp_path, clock, fake_dbt, monkeypatch):
    """hourly's build: skipped when no bronze table has a new commit, narrowed to the changed tables'
    lineage otherwise, and a failed build's tables built again by the next run."""
    lake = tmp_path / "lake"
    monkeypatch.setenv("LAKEHOUSE_LAKE", str(lake))
    sources = bronze_sources(PROJECT_DIR)
    assert sources["sale"] == "ecomm.sale" and sources["user"] == "crm.user"

    def commit(table: str, instant: str, state: str = "") -> None:
        timeline = lake / "bronze" / table / ".hoodie"
        timeline.mkdir(parents=True, exist_ok=True)
        (timeline / f"{instant}.commit{state}").write_text("{}")

    for table in sources:
        commit(table, "20261129010000000")
    build = "build --select tag:silver tag:gold --exclude-resource-type unit_test"
    job = one_job([{"dbt": build, "only_changed_sources": True}], retries=0)
    runner = runner_for(home, None, clock)

    assert runner.run(job).status == "success"  # no record yet: built as written
    quiet = runner.run(job)  # nothing new
    assert quiet.status == "success" and quiet.steps[0].status == "skipped (nothing new)"
    assert quiet.steps[0].attempts == []

    commit("sale", "20261129020000000")
    commit("venue", "20261129020000001", ".requested")  # not completed: no change yet
    assert runner.run(job).status == "success"
    monkeypatch.setenv("FAKE_DBT_FAIL_AT", "3")
    monkeypatch.setenv("FAKE_DBT_ERROR", "Compilation Error in model users")
    commit("user", "20261129030000000")
    assert runner.run(job).status == "failed"
    assert runner.run(job).status == "success"  # the failed run recorded nothing: user again

    calls = fake_dbt()
    assert calls[0] == build.split()
    state = str(home / "jobs/demo/built/step-1")  # the manifest of the step's last success
    for call, source in zip(calls[1:], ("ecomm.sale", "crm.user", "crm.user"), strict=True):
        assert call[:2] == ["build", "--select"] and call[-4:] == ["--exclude-resource-type", "unit_test",
                                                                   "--state", state]
        terms = call[2:-4]
        assert "tag:silver,source:" + source + "+,config.materialized:incremental" in terms
        assert "tag:gold,source:" + source + "+,resource_type:test" in terms
        assert {term.split(",")[1] for term in terms} == {f"source:{source}+", "state:modified+"}
        # views only where their definition changed (no bronze table's columns changed here)
        assert [t for t in terms if t.endswith("materialized:view")] == [
            f"+tag:{layer},state:modified+,config.materialized:view" for layer in ("silver", "gold")]
    assert json.loads((home / "jobs/demo/built/step-1/manifest.json").read_text())["call"] == 4


def test_a_step_selecting_with_a_selector_is_not_narrowed():
    with pytest.raises(ChangedSourcesError, match="--selector"):
        narrowed_args(["build", "--selector", "daily"], ["ecomm.sale"])


def test_latest_instant_agrees_with_hudi_rs_on_a_java_written_table(tmp_path):
    """The timeline listing the jobs compare is the table's newest completed write, as hudi-rs reads it
    (a table whose second commit was followed by an insert_overwrite_table: a replacecommit)."""
    import zipfile

    import hudi

    fixture = Path(__file__).parents[1] / "fixtures/hudi-tables/v6_simplekeygen_nonhivestyle_overwritetable.zip"
    zipfile.ZipFile(fixture).extractall(tmp_path)
    table = tmp_path / "v6_simplekeygen_nonhivestyle_overwritetable"
    timeline = hudi.HudiTableBuilder.from_base_uri(str(table)).build().get_timeline()
    writes = [i.timestamp for i in timeline.get_completed_commits() + timeline.get_completed_replacecommits()]
    assert latest_instant(str(table)) == max(writes)
    assert latest_instant(str(tmp_path / "missing")) is None


def test_the_alert_carries_no_secret_the_failed_step_printed(home, clock, webhook, python_step, monkeypatch):
    """A step that prints the metastore password (an environment value), a connection URL with its
    password and an AWS key: the webhook gets the excerpt with each secret masked, the rest intact.
    (The secrets are put together when they are printed, so neither this file, which the repository's
    credential scan reads, nor the step's command line holds one whole.)"""
    url_password, key_id = "url-" + "secret-93", "AKIA" + "IOSFODNN7EXAMPLE"
    secret_key = "wJalrXUtnFEMI" + "K7MDENGbPxRfiCYEXAMPLEKEY"
    monkeypatch.setenv("LAKEHOUSE_METASTORE_PASSWORD", "pw-from-the-environment-71")
    failing = python_step(
        "import os, sys\n"
        "print('connecting with ' + os.environ['LAKEHOUSE_METASTORE_PASSWORD'])\n"
        "print('jdbc postgresql://hive:' + 'url-' + 'secret-93' + '@127.0.0.1:5432/metastore refused', "
        "file=sys.stderr)\n"
        "print('AWS_SECRET_ACCESS_KEY=' + 'wJalrXUtnFEMI' + 'K7MDENGbPxRfiCYEXAMPLEKEY' + ' key ' + 'AKIA' + "
        "'IOSFODNN7EXAMPLE')\n"
        "print('AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] bronze.sale cannot be found')\n"
        "sys.exit(2)",
        name="build gold",
    )

    record = runner_for(home, webhook.url, clock).run(one_job([failing], retries=0))

    assert record.status == "failed"
    [alert] = webhook.received
    sent = json.dumps(alert)
    for secret in ("pw-from-the-environment-71", url_password, secret_key, key_id):
        assert secret not in sent, secret
    assert "TABLE_OR_VIEW_NOT_FOUND" in alert["log_excerpt"]
    assert "postgresql://hive:***@127.0.0.1:5432/metastore refused" in alert["log_excerpt"]
