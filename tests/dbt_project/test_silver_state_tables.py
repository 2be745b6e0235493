"""The silver state tables: Hudi merge-on-read tables merged on state_key (the small entities: views), and clear
stops for column changes they cannot follow."""

from __future__ import annotations

import json

import pytest
from hudi import HudiTableBuilder

from tests.dbt_project.conftest import DbtLakehouse
from tests.dbt_project.dbt_runner import DbtFailed


def test_state_tables_are_hudi_tables_keyed_by_state_key(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+events", "+categories")
    ddl = lakehouse.sql("show create table silver.events_cdc_state")[0][0]
    assert "USING hudi" in ddl
    for option in ("'primaryKey' = 'state_key'", "'preCombineField' = 'cdc_order'", "'type' = 'mor'",
                   "'hoodie.index.type' = 'BUCKET'"):
        assert option in ddl, (option, ddl)
    # the small entities are views over their change log
    assert "CREATE VIEW" in lakehouse.sql("show create table silver.categories_cdc_state")[0][0]
    location = next(row[1] for row in lakehouse.sql("describe table extended silver.events_cdc_state")
                    if row[0] == "Location")
    # read by hudi-rs, the independent reader: table version 6, the rows dbt wrote
    table = HudiTableBuilder.from_base_uri(location.replace("file:", "", 1)).build()
    assert table.hudi_options()["hoodie.table.version"] == "6"
    rows = sum(batch.num_rows for batch in table.read())
    assert rows == lakehouse.sql("select count(*) from silver.events_cdc_state")[0][0] > 0
    manifest = json.loads((lakehouse.dbt.work_dir / "target" / "manifest.json").read_text())
    config = manifest["nodes"]["model.lakehouse.events_cdc_state"]["config"]
    assert (config["materialized"], config["incremental_strategy"], config["file_format"]) == (
        "incremental", "merge", "hudi")


def test_a_column_the_model_dropped_stops_the_run_until_a_full_refresh(lakehouse: DbtLakehouse) -> None:
    """on_schema_change sync_all_columns adds and widens columns; a column only the table has (a
    renamed or removed model column) cannot be dropped by Spark: a clear stop naming the rebuild."""
    lakehouse.dbt.run("run", "-s", "+events")
    lakehouse.sql("alter table silver.events_cdc_state add columns (renamed_later string)")
    with pytest.raises(DbtFailed, match="does not support dropping columns from tables \\(renamed_later\\)"
                                        "(.|\n)*full-refresh"):
        lakehouse.dbt.run("run", "-s", "events_cdc_state")
    lakehouse.dbt.run("run", "-s", "events_cdc_state", "--full-refresh")
    columns = [row[0] for row in lakehouse.sql("describe silver.events_cdc_state")]
    assert "renamed_later" not in columns
    assert lakehouse.silver_differences(("event",)) == {}


@pytest.mark.slow
def test_a_state_table_without_cdc_order_stops_the_run_until_a_full_refresh(lakehouse: DbtLakehouse) -> None:
    """A state table of an older version (ordered by cdc_position, no cdc_order): sync_all_columns
    would add the column, but Hudi keeps the ordering field a table was created with."""
    lakehouse.dbt.run("run", "-s", "+events")
    columns = [row[0] for row in lakehouse.sql("describe silver.events_cdc_state")
               if row[0] and not row[0].startswith(("#", "_hoodie_")) and row[0] != "cdc_order"]
    lakehouse.sql("create table silver.old_state using parquet as select * from silver.events_cdc_state")
    lakehouse.sql("drop table silver.events_cdc_state")
    lakehouse.sql("create table silver.events_cdc_state using hudi tblproperties (primaryKey = 'state_key', "
                  "preCombineField = 'cdc_position', type = 'mor', 'hoodie.write.table.version' = '6') "
                  f"as select {', '.join(dict.fromkeys(columns))} from silver.old_state")
    lakehouse.sql("drop table silver.old_state")
    with pytest.raises(DbtFailed, match="predates the cdc_order ordering field(.|\n)*--full-refresh"):
        lakehouse.dbt.run("run", "-s", "events_cdc_state")
    lakehouse.dbt.run("run", "-s", "events_cdc_state", "--full-refresh")
    assert "'preCombineField' = 'cdc_order'" in lakehouse.sql("show create table silver.events_cdc_state")[0][0]
    assert lakehouse.silver_differences(("event",)) == {}
