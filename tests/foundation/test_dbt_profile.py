"""The committed profile reaches the managed Thrift server: `lakehouse dbt debug` and a trivial build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lakehouse.config import PROJECT_DIR

LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")


def test_lakehouse_dbt_debug_connects(thrift_server):
    env = {**os.environ, **thrift_server.env}
    result = subprocess.run(
        [LAKEHOUSE, "dbt", "debug"], capture_output=True, text=True, env=env, cwd=PROJECT_DIR, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"port: {thrift_server.port}" in result.stdout
    assert "Connection test: [OK connection ok]" in result.stdout.replace("\x1b[32m", "").replace("\x1b[0m", "")


def test_trivial_build_with_the_project_profile(thrift_server, tmp_path):
    """A throw-away dbt project built through profiles/profiles.yml against the server."""
    project = tmp_path / "trivial"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: trivial\nversion: '1.0'\nconfig-version: 2\nprofile: lakehouse\n"
        "models:\n  trivial:\n    +materialized: table\n    +file_format: parquet\n"
    )
    (project / "models" / "answer.sql").write_text("select 42 as answer, 'forty-two' as spelled\n")
    env = {
        **os.environ,
        **thrift_server.env,
        "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    dbt = str(Path(sys.executable).parent / "dbt")
    result = subprocess.run(
        [dbt, "build", "--project-dir", str(project), "--target-path", str(tmp_path / "target"),
         "--log-path", str(tmp_path / "logs")],
        capture_output=True, text=True, env=env, cwd=project, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]
    assert thrift_server.sql("select answer, spelled from default.answer") == [(42, "forty-two")]
