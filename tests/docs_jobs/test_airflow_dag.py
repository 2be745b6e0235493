"""The Airflow DAG: checked statically by default; imported for real by Airflow in the slow suite."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lakehouse.config import PROJECT_DIR
from lakehouse.jobs.spec import load_jobs

ORCHESTRATION = PROJECT_DIR / "orchestration"
DAG_FILE = ORCHESTRATION / "tickit_jobs_dag.py"
SPECS_FILE = ORCHESTRATION / "tickit_job_specs.py"
#: The project's Python packages (every folder of the repository with an __init__.py at its top)
PROJECT_PACKAGES = {p.parent.name for p in PROJECT_DIR.glob("*/__init__.py")}


def load_specs_module():
    spec = importlib.util.spec_from_file_location("tickit_job_specs", SPECS_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def test_dag_file_parses_and_runs_jobs_through_the_project_runner():
    tree = ast.parse(DAG_FILE.read_text(), str(DAG_FILE))
    imported = {
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert {"airflow", "airflow.operators.bash", "tickit_job_specs"} <= imported
    assert not any(name and name.split(".")[0] in PROJECT_PACKAGES for name in imported)  # the CLI is the interface
    calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert {"DAG", "BashOperator", "dag_specs"} <= calls
    keywords = {kw.arg: kw.value for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords}
    assert ast.literal_eval(keywords["max_active_runs"]) == 1
    assert ast.literal_eval(keywords["catchup"]) is False


def test_dag_specs_name_every_job_of_jobs_yml_with_its_schedule():
    jobs = load_jobs()  # the project's own parser is the oracle for the plain-YAML reader
    specs = {spec.job: spec for spec in load_specs_module().dag_specs(PROJECT_DIR / "jobs.yml")}
    assert set(specs) == set(jobs)
    for name, job in jobs.items():
        spec = specs[name]
        assert spec.schedule == (job.cron if job.enabled else None)
        assert spec.timezone == job.timezone
        assert spec.timeout_minutes * 60 == pytest.approx(job.timeout_seconds)
        assert spec.bash_command == f"lakehouse jobs run {name} --trigger airflow"
    assert len({spec.dag_id for spec in specs.values()}) == len(specs)


AIRFLOW_VERSION = "2.10.5"


@pytest.mark.slow
def test_airflow_dagbag_imports_the_dags_without_errors(tmp_path_factory):
    """Creates an Airflow venv (cached under .lakehouse/airflow-venv) and loads the DagBag."""
    venv = PROJECT_DIR / ".lakehouse" / "airflow-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        py = f"{sys.version_info.major}.{sys.version_info.minor}"
        constraints = (
            f"https://raw.githubusercontent.com/apache/airflow/constraints-{AIRFLOW_VERSION}/constraints-{py}.txt"
        )
        install = [str(python), "-m", "pip", "install", "-q", f"apache-airflow=={AIRFLOW_VERSION}"]
        result = subprocess.run([*install, "-c", constraints], capture_output=True, text=True)
        if result.returncode != 0:  # constraints URL unreachable offline: plain install
            subprocess.run(install, check=True)
    airflow_home = tmp_path_factory.mktemp("airflow-home")
    script = (
        "import sys\n"
        "from airflow.models import DagBag\n"
        f"bag = DagBag(dag_folder={str(ORCHESTRATION)!r}, include_examples=False)\n"
        "print('ERRORS', bag.import_errors)\n"
        "print('DAGS', sorted(bag.dag_ids))\n"
        "sys.exit(1 if bag.import_errors else 0)\n"
    )
    env = {**os.environ, "AIRFLOW_HOME": str(airflow_home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__DAGS_FOLDER": str(ORCHESTRATION),  # on sys.path, as in a deployment
           "AIRFLOW__CORE__UNIT_TEST_MODE": "True"}
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    expected = sorted(f"lakehouse__{name.replace('-', '_')}" for name in load_jobs())
    assert f"DAGS {expected}" in result.stdout


def test_specs_module_has_no_project_imports():
    tree = ast.parse(Path(SPECS_FILE).read_text())
    modules = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not any(m.split(".")[0] in {*PROJECT_PACKAGES, "airflow"} for m in modules if m), modules
