"""The project's own generic tests fail on the data they exist to catch; the cluster-only variant compiles."""

from __future__ import annotations

import json

from tests.dbt_project.conftest import DbtLakehouse


def _failures(lakehouse: DbtLakehouse) -> dict[str, int]:
    results = json.loads((lakehouse.dbt.work_dir / "target" / "run_results.json").read_text())
    return {r["unique_id"].split(".")[2]: r["failures"] for r in results["results"] if r["status"] == "fail"}


def test_not_null_columns_names_each_column_holding_a_null(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")
    assert lakehouse.dbt.run("test", "-s", "sales_cdc_state").returncode == 0
    columns = [row[0] for row in lakehouse.sql("describe silver.sales_cdc_state")
               if row[0] and not row[0].startswith("#")]
    columns = list(dict.fromkeys(columns))  # describe repeats the partition column
    nulled = {"bronze_commit_time", "is_truncate"}
    select = ", ".join(f"cast(null as {dict(_types(lakehouse))[c]}) as {c}" if c in nulled else c
                       for c in columns if c != "state_layer")
    lakehouse.sql(f"insert into silver.sales_cdc_state partition (state_layer = 'delta') "
                  f"select {select} from silver.sales_cdc_state where state_key = '1'")
    result = lakehouse.dbt.run("test", "-s", "sales_cdc_state", check=False)
    assert result.returncode != 0
    failures = _failures(lakehouse)
    (name,) = [n for n in failures if n.startswith("not_null_columns_sales_cdc_state")]
    assert failures[name] == len(nulled)  # one failing row per column holding a null
    assert set(failures) == {name}, failures


def _types(lakehouse: DbtLakehouse) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in lakehouse.sql("describe silver.sales_cdc_state")
            if row[0] and not row[0].startswith("#")]


def test_hudi_variant_compiles_with_merge_on_the_state_key(lakehouse: DbtLakehouse) -> None:
    """The cluster-only hudi variant cannot run here; it must keep compiling (incremental branch included)."""
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")  # the relation exists, so is_incremental() is true
    lakehouse.dbt.run("compile", "-s", "+tag:silver", "--vars", "{table_format: hudi}")
    target = lakehouse.dbt.work_dir / "target"
    manifest = json.loads((target / "manifest.json").read_text())
    state = manifest["nodes"]["model.lakehouse.sales_cdc_state"]
    assert (state["config"]["file_format"], state["config"]["incremental_strategy"]) == ("hudi", "merge")
    assert state["config"]["unique_key"] == "state_key"
    compiled = next((target / "compiled").rglob("sales_cdc_state.sql")).read_text()
    assert "changed_keys" in compiled and "'base' as state_layer" in compiled
    assert "state_layer = 'delta'" not in compiled  # no delta layer on hudi: merge upserts the winners
