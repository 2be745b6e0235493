"""Airflow DAGs (one per job of jobs.yml) for teams on MWAA / Airflow 2.7+.

Each DAG has one task that runs ``lakehouse jobs run <job> --trigger airflow``: the same
runner as ``lakehouse scheduler``, so the job's lock (no overlap), retries with backoff,
``dbt retry``, timeout, run history and alerts all apply unchanged. Airflow's own
retries are off (the runner retries transient failures); a run refused because the job
is still running exits 3 and shows as *skipped*.

Deploy: copy this file, ``tickit_job_specs.py`` and ``jobs.yml`` into the dags folder and
install the project (``pip install lakehouse``) in the Airflow environment so the
``lakehouse`` command exists (or set LAKEHOUSE_CLI to its path).
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow import DAG
from airflow.operators.bash import BashOperator
from tickit_job_specs import AIRFLOW_TIMEOUT_MARGIN_MINUTES, EXIT_ALREADY_RUNNING, dag_specs

for spec in dag_specs():
    with DAG(
        dag_id=spec.dag_id,
        description=spec.description[:200],
        schedule=spec.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz=spec.timezone),
        catchup=False,
        max_active_runs=1,
        tags=["lakehouse", "dbt"],
        default_args={"owner": "data-engineering", "retries": 0},
    ) as dag:
        BashOperator(
            task_id="run_job",
            bash_command=spec.bash_command,
            skip_on_exit_code=EXIT_ALREADY_RUNNING,
            execution_timeout=timedelta(minutes=spec.timeout_minutes + AIRFLOW_TIMEOUT_MARGIN_MINUTES),
        )
    globals()[spec.dag_id] = dag
