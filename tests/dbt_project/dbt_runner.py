"""Run the project's dbt CLI against one Thrift server, isolated from other runs.

Each call gets its own ``--target-path`` and ``--log-path`` (dbt otherwise writes
``target/`` and ``logs/`` in the project, shared by everyone working in the tree).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
DBT = Path(sys.executable).with_name("dbt")


class DbtFailed(AssertionError):
    """A dbt command exited non-zero; the message holds the command and its output's tail."""


@dataclass
class DbtRunner:
    """dbt commands against the Thrift server described by `env` (LAKEHOUSE_* variables)."""

    env: dict[str, str]
    work_dir: Path

    def command(self, *args: str) -> list[str]:
        return [str(DBT), *args, "--project-dir", str(PROJECT_DIR),
                "--profiles-dir", str(PROJECT_DIR / "profiles"),
                "--target-path", str(self.work_dir / "target"), "--log-path", str(self.work_dir / "logs")]

    def environment(self) -> dict[str, str]:
        env = {**os.environ, **self.env, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
        env.pop("DBT_PROFILES_DIR", None)
        env.pop("LAKEHOUSE_DBT_TARGET", None)
        return env

    def run(self, *args: str, timeout: float = 1800, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(self.command(*args), cwd=PROJECT_DIR, env=self.environment(),
                                capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
            raise DbtFailed(f"dbt {' '.join(args)} exited {result.returncode}:\n{tail}")
        return result

    def start(self, *args: str) -> subprocess.Popen:
        """Start a dbt command without waiting (for kill-midway tests)."""
        return subprocess.Popen(self.command(*args), cwd=PROJECT_DIR, env=self.environment(),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
