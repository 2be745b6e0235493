"""sqlfluff on the SQL of the project's generic tests (macros/generic_tests/).

`sqlfluff lint` with the dbt templater lints dbt nodes, and a macro file is not one (it is
skipped, see .sqlfluffignore); a generic test's SQL only exists once dbt compiles a test
declared in YAML. So: compile the generic tests (`dbt compile`, no connection: the relation
cache is not populated and introspection is refused) and lint one compiled test per macro
and set of arguments, with the rules of .sqlfluff. A finding names the macro file.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from sqlfluff.core import FluffConfig, Linter

from tests.dbt_project.dbt_runner import DBT, PROJECT_DIR

GENERIC_TESTS_DIR = "macros/generic_tests/"


@pytest.fixture(scope="module")
def compiled_manifest(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("dbt_compile_tests")
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    env.pop("DBT_PROFILES_DIR", None)
    env.pop("LAKEHOUSE_DBT_TARGET", None)
    result = subprocess.run(
        [str(DBT), "compile", "--select", "test_type:generic", "--no-populate-cache", "--no-introspect",
         "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR / "profiles"),
         "--target-path", str(work / "target"), "--log-path", str(work / "logs")],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"dbt compile failed:\n{(result.stdout + result.stderr)[-4000:]}"
    return json.loads((work / "target" / "manifest.json").read_text())


def _samples(manifest: dict) -> dict[str, list[dict]]:
    """Macro file -> one compiled test per distinct set of arguments (each branch the project uses).

    Tests with a `where` config are left out: dbt wraps their model in its own subquery.
    """
    macro_files = {macro["name"].removeprefix("test_"): macro["original_file_path"]
                   for macro in manifest["macros"].values()
                   if macro["package_name"] == "lakehouse"
                   and macro["original_file_path"].startswith(GENERIC_TESTS_DIR)}
    samples: dict[str, dict[tuple, dict]] = {path: {} for path in macro_files.values()}
    for node in sorted(manifest["nodes"].values(), key=lambda n: n["unique_id"]):
        metadata = node.get("test_metadata") or {}
        if node["resource_type"] != "test" or metadata.get("name") not in macro_files or node["config"].get("where"):
            continue
        kwargs = metadata["kwargs"]
        shape = tuple(sorted((k, v) if isinstance(v, bool) else (k, None)
                             for k, v in kwargs.items() if k not in ("model", "column_name")))
        samples[macro_files[metadata["name"]]].setdefault(shape, node)
    return {path: list(nodes.values()) for path, nodes in samples.items()}


def test_every_generic_test_macro_is_linted(compiled_manifest) -> None:
    unused = sorted(path for path, nodes in _samples(compiled_manifest).items() if not nodes)
    assert not unused, f"generic tests with no test to lint them by (unused, or used only with where): {unused}"


def test_generic_test_sql_passes_sqlfluff(compiled_manifest) -> None:
    config = FluffConfig.from_path(str(PROJECT_DIR), overrides={"templater": "raw"})
    linter = Linter(config=config)
    problems = []
    for path, nodes in sorted(_samples(compiled_manifest).items()):
        for node in nodes:
            sql = node["compiled_code"].strip() + "\n"
            lines = sql.splitlines()
            for violation in linter.lint_string(sql, fname=node["name"]).get_violations():
                problems.append(f"{path} (as {node['name']}): {violation.rule_code()} line {violation.line_no}: "
                                f"{violation.desc()}\n      {lines[violation.line_no - 1].strip()}")
    assert not problems, "\n  " + "\n  ".join(problems)
