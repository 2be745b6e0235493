"""jobs.yml validation messages, step command lines, and the atomic docs-site install."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse.docs_site.site import DocsBuildError, build_site, install_site, statistics_args
from lakehouse.jobs import commands
from lakehouse.jobs.spec import JobSpecError, parse_jobs


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ({"name": "a", "cron": "0 25 * * *", "steps": [{"dbt": "run"}]}, "invalid cron '0 25 * * *'"),
        ({"name": "a", "cron": "0 2 * * *", "timezone": "Mars/Olympus", "steps": [{"dbt": "run"}]}, "Mars/Olympus"),
        ({"name": "a", "steps": []}, "'steps' must be a non-empty list"),
        ({"name": "a", "steps": [{"dbt": "run", "command": ["x"]}]}, "step 1: exactly one of"),
        ({"name": "a", "steps": [{"dbt": "run", "retry": 3}]}, "unknown keys ['retry']"),
        ({"name": "a", "retries": -1, "steps": [{"dbt": "run"}]}, "'retries' must be an integer >= 0"),
        ({"name": "bad name!", "steps": [{"dbt": "run"}]}, "'name' must match"),
        ({"name": "a", "steps": ["make build"]}, "must start with 'dbt' or 'lakehouse'"),
    ],
)
def test_invalid_jobs_are_rejected_with_the_job_and_problem(job, message):
    with pytest.raises(JobSpecError) as raised:
        parse_jobs({"jobs": [job]}, "my-jobs.yml")
    assert str(raised.value).startswith("my-jobs.yml: ")
    assert message in str(raised.value)


def test_duplicate_job_names_are_rejected():
    job = {"name": "a", "steps": [{"dbt": "run"}]}
    with pytest.raises(JobSpecError, match="job 'a': defined twice"):
        parse_jobs({"jobs": [job, job]})


def test_step_command_lines_and_variable_expansion(monkeypatch):
    jobs = parse_jobs({"jobs": [{"name": "a", "steps": [
        "dbt build --select tag:gold",
        {"lakehouse": "docs publish --bucket ${BUCKET} --prefix ${PREFIX:-docs}"},
    ]}]})
    dbt_step, publish_step = jobs["a"].steps
    assert dbt_step.dbt_command == "build" and dbt_step.supports_dbt_retry
    argv = commands.step_argv(dbt_step, {})
    assert argv[-4:] == ["dbt", "build", "--select", "tag:gold"]
    assert commands.step_argv(dbt_step, {}, Path("/runs/1/artifacts"))[-4:] == [
        "dbt", "retry", "--state", "/runs/1/artifacts"
    ]
    assert commands.step_argv(publish_step, {"BUCKET": "b1"})[-6:] == [
        "docs", "publish", "--bucket", "b1", "--prefix", "docs"
    ]
    with pytest.raises(commands.StepConfigError, match="BUCKET is not set"):
        commands.step_argv(publish_step, {})


def test_backoff_doubles_and_is_capped():
    job = parse_jobs({"jobs": [{"name": "a", "backoff_seconds": 10, "backoff_max_seconds": 35,
                                "steps": [{"dbt": "run"}]}]})["a"]
    assert [job.backoff(n) for n in (1, 2, 3, 4)] == [10, 20, 35, 35]


def write_target(target, overview: bool = True):
    target.mkdir(parents=True, exist_ok=True)
    docs = {"doc.lakehouse.__overview__": {"name": "__overview__", "package_name": "lakehouse"}}
    manifest = {
        "nodes": {"model.p.a": {"resource_type": "model"}, "test.p.t": {"resource_type": "test"}},
        "sources": {"source.p.s.t": {}}, "exposures": {"exposure.p.e": {}}, "docs": docs if overview else {},
    }
    (target / "manifest.json").write_text(json.dumps(manifest))
    (target / "index.html").write_text("<html>app</html>")
    (target / "static_index.html").write_text("<html>static</html>")
    (target / "catalog.json").write_text("{}")


def test_install_site_replaces_the_previous_site_whole(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "leftover.txt").write_text("old")
    write_target(tmp_path / "target")

    summary = install_site(tmp_path / "target", site)

    assert sorted(p.name for p in site.iterdir()) == ["catalog.json", "index.html", "manifest.json",
                                                       "static_index.html"]
    assert (summary.models, summary.sources, summary.exposures, summary.has_overview) == (1, 1, 1, True)
    assert not any(p.name.startswith("site.") for p in tmp_path.iterdir())


def test_build_site_runs_dbt_docs_generate_static_and_reports_failure(tmp_path, monkeypatch, home):
    import dataclasses

    from lakehouse.config import load_settings

    settings = dataclasses.replace(load_settings(), home=home)
    target = tmp_path / "target"
    monkeypatch.setenv("DBT_TARGET_PATH", str(target))
    calls = []

    def fake_dbt(args):
        calls.append(list(args))
        write_target(target)
        return 0

    summary = build_site(settings, dbt=fake_dbt)
    assert calls == [["run-operation", "compute_table_statistics", "--target-path", str(target)],
                     ["docs", "generate", "--static", "--no-partial-parse", "--target-path", str(target)]]
    assert summary.site_dir == home / "docs/site" and (home / "docs/site/static_index.html").is_file()

    with pytest.raises(DocsBuildError, match="exit code 2"):
        build_site(settings, dbt=lambda args: 2)


def test_statistics_pass_on_the_connection_options_only(tmp_path):
    args = statistics_args(tmp_path, ["--select", "fct_sales", "--target", "cluster", "--vars={a: 1}", "-t", "x"])
    assert args == ["run-operation", "compute_table_statistics", "--target-path", str(tmp_path),
                    "--target", "cluster", "--vars={a: 1}", "-t", "x"]
