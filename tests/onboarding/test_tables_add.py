"""``lakehouse tables add``: a new source table onboarded end to end in a copy of the project.

The table is the ``customers`` table of a real Debezium PostgreSQL event (with its schema),
added to the ``ems`` system of a copy of this repository. The judge is the project's own
rule and drift tests (``tests/dbt_project/test_project_contracts.py``, ``test_dbt_rules.py``:
the dbt source equals the contract, every model and column described, key tests, the
staging grain, one staging model per source, `dbt parse`), run inside the copy, so the
generated files must satisfy every rule the hand-written tables do; and the contract entry
must be what Debezium's schema says.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lakehouse.onboarding import PLACEHOLDER, plural

ROOT = Path(__file__).resolve().parents[2]
LAKEHOUSE = str(Path(sys.executable).with_name("lakehouse"))
EVENT = ROOT / "tests" / "fixtures" / "debezium" / "postgres" / "pg_docs_create_with_schema.json"
MYSQL_EVENT = ROOT / "tests" / "fixtures" / "debezium" / "mysql" / "mysql_real_snapshot_with_schema.json"
COPIED = ("ingestion", "lakehouse", "simulator", "models", "macros", "seeds", "snapshots", "analyses", "tests",
          "profiles", "dbt_project.yml", "pyproject.toml")


def copy_project(copy: Path) -> Path:
    """The project's code, models and tests, copied to ``copy`` (not the lake, the jars, the docs)."""
    ignore = shutil.ignore_patterns("__pycache__", "target", "logs", "dbt_packages", ".lakehouse")
    copy.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore)
        else:
            shutil.copy2(source, copy / name)
    # the JVM dependency lists (the resolved jars stay where they are: LAKEHOUSE_JVM_LIB)
    shutil.copytree(ROOT / "jvm", copy / "jvm", ignore=shutil.ignore_patterns("lib", "target"))
    return copy


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return copy_project(tmp_path_factory.mktemp("project"))


def _add(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([LAKEHOUSE, "tables", "add", "--project-dir", str(project), *args],
                          capture_output=True, text=True, timeout=120, check=False)


def _snapshot(project: Path) -> dict[str, str]:
    return {str(p.relative_to(project)): p.read_text() for folder in ("models", "ingestion/cdc/contracts", "tests/dbt")
            for p in sorted((project / folder).rglob("*")) if p.is_file()}


def test_a_table_from_another_connector_is_refused_and_nothing_is_written(project: Path) -> None:
    before = _snapshot(project)
    refused = _add(project, "--system", "ems", "--from-event", str(MYSQL_EVENT), "--primary-key", "id")
    assert refused.returncode == 1 and "ems.yml: connector 'postgres', the table's events are 'mysql'" in refused.stderr
    assert _snapshot(project) == before


def test_the_added_table_passes_every_project_rule(project: Path) -> None:
    done = _add(project, "--system", "ems", "--from-event", str(EVENT), "--primary-key", "id")
    assert done.returncode == 0, done.stderr
    assert "models/silver/customers.sql" in done.stdout
    # the contract entry is what Debezium's schema says: id int32, the others string; the topic
    # is the connector's server name, schema and table
    entry = yaml.safe_load((project / "ingestion/cdc/contracts/ems.yml").read_text())["tables"]["customers"]
    assert [(c["name"], c["type"]) for c in entry["columns"]] == [
        ("id", "int"), ("first_name", "string"), ("last_name", "string"), ("email", "string")]
    assert (entry["topics"], entry["primary_key"]) == (["PostgreSQL_server.public.customers"], ["id"])
    assert all(c["description"].startswith(PLACEHOLDER) for c in entry["columns"])
    # the project's own rule and drift tests, run in the copy (its contracts, its models)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "LAKEHOUSE_DBT_TARGET")}
    rules = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/dbt_project/test_project_contracts.py",
         "tests/dbt_project/test_dbt_rules.py"],
        cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert rules.returncode == 0, rules.stdout[-3000:]
    assert "[customers]" in subprocess.run(  # the parametrized contract tests saw the new table
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/dbt_project/test_project_contracts.py"], cwd=project, env=env, capture_output=True, text=True,
        timeout=300, check=False).stdout
    assert "customers" in subprocess.run(
        [sys.executable, "-c", "from ingestion.cdc.contracts import load_contracts; print(sorted(load_contracts()))"],
        cwd=project, capture_output=True, text=True, check=True).stdout  # the copy's contracts were judged


def test_adding_it_again_is_refused(project: Path) -> None:
    again = _add(project, "--system", "ems", "--from-event", str(EVENT), "--primary-key", "id")
    assert again.returncode == 1 and "exists already" in again.stderr


@pytest.mark.parametrize(("name", "entity"), [("performer", "performers"), ("category", "categories"),
                                              ("customers", "customers"), ("day", "days"), ("box", "boxes")])
def test_the_default_silver_name_is_the_plural(name: str, entity: str) -> None:
    assert plural(name) == entity
