"""The silver state tables: Hudi tables merged on state_key, and a clear stop when their columns changed."""

from __future__ import annotations

import json

import pytest
from hudi import HudiTableBuilder

from tests.dbt_project.conftest import DbtLakehouse
from tests.dbt_project.dbt_runner import DbtFailed


def test_state_tables_are_hudi_tables_keyed_by_state_key(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+categories")
    ddl = lakehouse.sql("show create table silver.categories_cdc_state")[0][0]
    assert "USING hudi" in ddl
    for option in ("'primaryKey' = 'state_key'", "'preCombineField' = 'cdc_order'", "'type' = 'cow'"):
        assert option in ddl, (option, ddl)
    location = next(row[1] for row in lakehouse.sql("describe table extended silver.categories_cdc_state")
                    if row[0] == "Location")
    # read by hudi-rs, the independent reader: table version 6, the rows dbt wrote
    table = HudiTableBuilder.from_base_uri(location.replace("file:", "", 1)).build()
    assert table.hudi_options()["hoodie.table.version"] == "6"
    rows = sum(batch.num_rows for batch in table.read())
    assert rows == lakehouse.sql("select count(*) from silver.categories_cdc_state")[0][0] > 0
    manifest = json.loads((lakehouse.dbt.work_dir / "target" / "manifest.json").read_text())
    config = manifest["nodes"]["model.lakehouse.categories_cdc_state"]["config"]
    assert (config["materialized"], config["incremental_strategy"], config["file_format"]) == (
        "incremental", "merge", "hudi")


def test_changed_columns_stop_the_run_until_a_full_refresh(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+categories")
    lakehouse.sql("alter table silver.categories_cdc_state add columns (renamed_later string)")
    with pytest.raises(DbtFailed, match="out of sync(.|\n)*full_refresh"):
        lakehouse.dbt.run("run", "-s", "categories_cdc_state")
    lakehouse.dbt.run("run", "-s", "categories_cdc_state", "--full-refresh")
    columns = [row[0] for row in lakehouse.sql("describe silver.categories_cdc_state")]
    assert "renamed_later" not in columns
    assert lakehouse.silver_differences(("category",)) == {}
