"""Turn a job step into a command line and its environment (the one place that does so).

dbt steps go through ``lakehouse dbt`` (the project's dbt runner: venv dbt, ``profiles/``,
project env) when that subcommand exists, else straight to the venv's ``dbt`` with the
same ``--profiles-dir``/``--project-dir``. Each job gets its own dbt target path, so parallel
jobs never share artifacts; ``dbt retry`` is pointed (``--state``) at the archived results it
starts from.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

from lakehouse.config import PROJECT_DIR
from lakehouse.jobs.spec import StepSpec

_LAKEHOUSE_MAIN = "import sys; from lakehouse.cli import main; sys.exit(main())"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class StepConfigError(ValueError):
    """A step cannot be turned into a command (e.g. a ``${VAR}`` without value)."""


def lakehouse_argv(args: list[str]) -> list[str]:
    """``lakehouse <args>`` run with this interpreter (no reliance on PATH)."""
    return [sys.executable, "-c", _LAKEHOUSE_MAIN, *args]


def _has_lakehouse_dbt() -> bool:
    return importlib.util.find_spec("lakehouse.cli.dbt") is not None


def dbt_argv(args: list[str]) -> list[str]:
    if _has_lakehouse_dbt():
        return lakehouse_argv(["dbt", *args])
    dbt = Path(sys.executable).with_name("dbt")
    return [
        str(dbt), *args,
        "--profiles-dir", str(PROJECT_DIR / "profiles"),
        "--project-dir", str(PROJECT_DIR),
    ]


def expand(value: str, env: dict[str, str]) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``; an unset VAR without default is an error."""

    def substitute(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        if env.get(name):
            return env[name]
        if default is not None:
            return default
        raise StepConfigError(f"environment variable {name} is not set (used as ${{{name}}})")

    return _VAR.sub(substitute, value)


def step_argv(step: StepSpec, env: dict[str, str], retry_state: Path | None = None) -> list[str]:
    """The command line of one attempt of ``step``.

    With ``retry_state`` (the directory of an earlier attempt's ``run_results.json``) the
    attempt is ``dbt retry --state <dir>``: it re-runs what that attempt left failed or skipped.
    """
    args = [expand(a, env) for a in step.args]
    if retry_state is not None:
        return dbt_argv(["retry", "--state", str(retry_state)])
    if step.kind == "dbt":
        return dbt_argv(args)
    if step.kind == "lakehouse":
        return lakehouse_argv(args)
    return args


def step_env(target_path: Path, log_path: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["DBT_TARGET_PATH"] = str(target_path)
    env["DBT_LOG_PATH"] = str(log_path)
    env.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env
