"""The project's own generic tests fail on the data they exist to catch."""

from __future__ import annotations

import json

import pytest

from tests.dbt_project.conftest import DbtLakehouse


def _failures(lakehouse: DbtLakehouse) -> dict[str, int]:
    results = json.loads((lakehouse.dbt.work_dir / "target" / "run_results.json").read_text())
    return {r["unique_id"].split(".")[2]: r["failures"] for r in results["results"] if r["status"] == "fail"}


@pytest.mark.slow  # 45 s of dbt runs: the default suite stays under its 20 minutes
def test_not_null_columns_names_each_column_holding_a_null(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")
    assert lakehouse.dbt.run("test", "-s", "sales_cdc_state").returncode == 0
    columns = [row[0] for row in lakehouse.sql("describe silver.sales_cdc_state")
               if row[0] and not row[0].startswith(("#", "_hoodie_"))]
    nulled = {"bronze_commit_time", "is_truncate"}
    replaced = {"state_key": "'planted'", **{c: f"cast(null as {dict(_types(lakehouse))[c]})" for c in nulled}}
    select = ", ".join(f"{replaced.get(c, c)} as {c}" for c in columns)
    lakehouse.sql(f"insert into silver.sales_cdc_state select {select} from silver.sales_cdc_state "
                  f"where state_key = '1'")
    result = lakehouse.dbt.run("test", "-s", "sales_cdc_state", check=False)
    assert result.returncode != 0
    failures = _failures(lakehouse)
    (name,) = [n for n in failures if n.startswith("not_null_columns_sales_cdc_state")]
    assert set(failures) == {name}, failures
    # the failing rows, as dbt's --store-failures would keep them: each nulled column once, with its count
    rows = lakehouse.sql(_compiled_code(lakehouse, name))
    assert sorted(rows) == sorted((column, 1) for column in nulled)


def _compiled_code(lakehouse: DbtLakehouse, test_name: str) -> str:
    """The SQL dbt ran for one test (run_results.json keeps it)."""
    results = json.loads((lakehouse.dbt.work_dir / "target" / "run_results.json").read_text())
    [code] = [r["compiled_code"] for r in results["results"] if r["unique_id"].split(".")[2] == test_name]
    return code


def _types(lakehouse: DbtLakehouse) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in lakehouse.sql("describe silver.sales_cdc_state")
            if row[0] and not row[0].startswith("#")]
