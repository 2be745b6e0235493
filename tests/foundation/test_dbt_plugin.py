"""The project's dbt plugin (ingestion/dbt_plugin.py): found by dbt, active only where it should be."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingestion.config import PROJECT_DIR

# Runs a dbt command in-process, as the `dbt` console script does, and prints how many
# objects are frozen once everything else (the plugin's own exit freeze included) has run.
DBT_WITH_FREEZE_REPORT = textwrap.dedent("""
    import atexit, gc, sys
    atexit.register(lambda: print(f"FROZEN={gc.get_freeze_count()}"))  # runs last (LIFO)
    from dbt.cli.main import cli
    sys.argv = [sys.argv[1]] + sys.argv[2:]
    cli()
""")


def frozen_after_dbt(program: str, *args: str, switch: str | None = None) -> int:
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles")}
    env.pop("LAKEHOUSE_DBT_GC_FREEZE", None)
    if switch is not None:
        env["LAKEHOUSE_DBT_GC_FREEZE"] = switch
    result = subprocess.run(
        [sys.executable, "-c", DBT_WITH_FREEZE_REPORT, program, *args],
        capture_output=True, text=True, env=env, cwd=PROJECT_DIR, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    [line] = [line for line in result.stdout.splitlines() if line.startswith("FROZEN=")]
    return int(line.removeprefix("FROZEN="))


def test_a_dbt_command_of_the_project_runs_with_its_objects_frozen(tmp_path: Path) -> None:
    target = ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
    assert frozen_after_dbt("dbt", "ls", "-s", "tag:silver", "-q", *target) > 50_000
    # the same command with the switch off, or not as the dbt program: nothing frozen
    assert frozen_after_dbt("dbt", "ls", "-s", "tag:silver", "-q", *target, switch="0") == 0
    assert frozen_after_dbt("my-service", "ls", "-s", "tag:silver", "-q", *target) == 0


@pytest.mark.parametrize(
    ("project", "argv0", "switch", "wanted"),
    [
        ("tickit_lakehouse", "/x/.venv/bin/dbt", None, True),
        ("tickit_lakehouse", "dbt", "1", True),
        ("tickit_lakehouse", "dbt", "0", False),
        ("another_project", "dbt", None, False),
        ("tickit_lakehouse", "/usr/bin/python3", None, False),
    ],
)
def test_freezing_is_wanted_only_in_the_projects_dbt_process(project, argv0, switch, wanted) -> None:
    from ingestion.dbt_plugin import freezing_wanted

    environ = {} if switch is None else {"LAKEHOUSE_DBT_GC_FREEZE": switch}
    assert freezing_wanted(project, argv0=argv0, environ=environ) is wanted


def test_the_installed_shim_is_the_repositorys() -> None:
    """scripts/setup.sh installs dbt_plugin/ (not editable): a stale copy would go unnoticed otherwise."""
    spec = importlib.util.find_spec("dbt_tickit_lakehouse")
    assert spec is not None and spec.origin is not None, "dbt_plugin/ is not installed: run `make setup`"
    assert "site-packages" in spec.origin  # where dbt's module scan looks
    installed = Path(spec.origin).read_text()
    assert installed == (PROJECT_DIR / "dbt_plugin" / "dbt_tickit_lakehouse.py").read_text()
