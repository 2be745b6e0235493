"""The project's dbt plugin (ingestion/dbt_plugin.py): found by dbt, active only where it should be."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingestion.config import PROJECT_DIR

# Runs a dbt command in-process, as the `dbt` console script does, and prints how many
# objects are frozen once everything else (the plugin's own exit freeze included) has run,
# and which module's write_json wrote dbt's artifacts.
DBT_WITH_PLUGIN_REPORT = textwrap.dedent("""
    import atexit, gc, sys
    atexit.register(lambda: print(f"FROZEN={gc.get_freeze_count()}"))  # runs last (LIFO)
    from dbt.cli.main import cli
    sys.argv = [sys.argv[1]] + sys.argv[2:]
    try:
        cli()
    finally:
        import dbt.artifacts.schemas.base
        print(f"WRITER={dbt.artifacts.schemas.base.write_json.__module__}")
""")
SWITCHES = ("LAKEHOUSE_DBT_GC_FREEZE", "LAKEHOUSE_DBT_FAST_JSON")


def dbt_with_plugin(program: str, *args: str, **switches: str) -> tuple[int, str]:
    """(objects frozen at exit, module of the artifact writer) after `program args` in-process."""
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles")}
    for name in SWITCHES:
        env.pop(name, None)
    env.update(switches)
    result = subprocess.run(
        [sys.executable, "-c", DBT_WITH_PLUGIN_REPORT, program, *args],
        capture_output=True, text=True, env=env, cwd=PROJECT_DIR, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = dict(line.split("=", 1) for line in result.stdout.splitlines() if line.startswith(("FROZEN=", "WRITER=")))
    return int(report["FROZEN"]), report["WRITER"]


def test_a_dbt_command_of_the_project_runs_with_the_plugin(tmp_path: Path) -> None:
    target = ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
    frozen, writer = dbt_with_plugin("dbt", "ls", "-s", "tag:silver", "-q", *target)
    assert frozen > 50_000
    assert writer == "ingestion.dbt_json_writer"
    # the manifest it wrote is what dbt-common's streaming json.dump writes for the same document
    written = (tmp_path / "target" / "manifest.json").read_text(encoding="utf-8")
    assert written == dbt_common_json(json.loads(written))

    # each switch turns off its own part only; not as the dbt program: nothing at all
    assert dbt_with_plugin("dbt", "ls", "-s", "tag:silver", "-q", *target, LAKEHOUSE_DBT_GC_FREEZE="0") == (0, writer)
    frozen_off, writer_off = dbt_with_plugin("dbt", "ls", "-s", "tag:silver", "-q", *target,
                                             LAKEHOUSE_DBT_FAST_JSON="0")
    assert frozen_off > 50_000 and writer_off == "dbt_common.clients.system"
    assert dbt_with_plugin("my-service", "ls", "-s", "tag:silver", "-q", *target) == (0, "dbt_common.clients.system")


def dbt_common_json(data: object) -> str:
    """The text dbt-common's own write_json streams for `data` (json.dump with dbt's encoder)."""
    from dbt_common.utils.encoding import JSONEncoder

    out = io.StringIO()
    json.dump(data, out, cls=JSONEncoder)
    return out.getvalue()


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
