"""Run dbt with the project's profile and environment (used by the CLI, jobs and demo)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from lakehouse.config import PROJECT_DIR, Settings, load_settings


def dbt_executable() -> str:
    """The dbt of this interpreter's environment (falls back to PATH)."""
    candidate = Path(sys.executable).parent / "dbt"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("dbt")
    if not found:
        raise FileNotFoundError("dbt is not installed in this environment; run 'make setup'")
    return found


def dbt_env(settings: Settings | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment that makes dbt use profiles/profiles.yml and this project's Thrift server."""
    settings = settings or load_settings()
    env = dict(os.environ)
    env.setdefault("DBT_PROFILES_DIR", str(PROJECT_DIR / "profiles"))
    env.setdefault("DBT_PROJECT_DIR", str(PROJECT_DIR))
    env["LAKEHOUSE_HOME"] = str(settings.home)
    env["LAKEHOUSE_THRIFT_HOST"] = settings.thrift_host
    env["LAKEHOUSE_THRIFT_PORT"] = str(settings.thrift_port)
    env.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if extra:
        env.update(extra)
    return env


def run_dbt(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    settings: Settings | None = None,
    capture: bool = False,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    """Run ``dbt <args>`` in the project directory; never raises on a dbt failure."""
    environment = dbt_env(settings, env)
    return subprocess.run(  # noqa: S603 - dbt from this environment
        [dbt_executable(), *args],
        cwd=PROJECT_DIR,
        env=environment,
        capture_output=capture,
        text=True,
        timeout=timeout,
        check=False,
    )
