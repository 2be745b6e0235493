"""The cdc_state materialization: one insert per incremental run, and a clear stop when the columns changed."""

from __future__ import annotations

import json
import re

import pytest

from tests.dbt_project.conftest import DbtLakehouse
from tests.dbt_project.dbt_runner import DbtFailed


def _statements(lakehouse: DbtLakehouse, node: str) -> list[str]:
    """The SQL statements dbt ran for `node` in its last command (from dbt's debug log)."""
    log = (lakehouse.dbt.work_dir / "logs" / "dbt.log").read_text(errors="replace")
    lines = log[log.rindex("Running with dbt="):].splitlines()
    statements = []
    for index, line in enumerate(lines):
        if f": On model.lakehouse.{node}:" not in line:
            continue
        text = [line.split(f"{node}:", 1)[1]]
        for following in lines[index + 1:]:
            if re.match(r"\S*\d\d:\d\d:\d\d", following):  # the next log record
                break
            text.append(following)
        statements.append(re.sub(r"/\*.*?\*/", "", " ".join(text), flags=re.S).strip())
    return statements


def test_incremental_run_is_one_insert_into_the_delta_layer(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+categories")
    lakehouse.commit(lakehouse.fixture.change_events())  # renames a category
    # no compaction in this run (the fixture's tables are tiny), so every write is the model's
    lakehouse.dbt.run("run", "-s", "categories_cdc_state", "--vars", "{silver_compaction_ratio: 1000}")
    statements = _statements(lakehouse, "categories_cdc_state")
    writes = [s for s in statements if any(w in s.lower() for w in ("insert", "create", "drop", "describe"))]
    assert len(writes) == 1, statements
    assert writes[0].lower().startswith("insert overwrite table silver.categories_cdc_state partition (state_layer)")
    assert lakehouse.sql("select count(*) from silver.categories_cdc_state where state_layer = 'delta'")[0][0] > 0
    assert lakehouse.silver_differences(("category",)) == {}
    manifest = json.loads((lakehouse.dbt.work_dir / "target" / "manifest.json").read_text())
    assert manifest["nodes"]["model.lakehouse.categories_cdc_state"]["config"]["materialized"] == "cdc_state"


def test_changed_columns_stop_the_run_until_a_full_refresh(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+categories")
    lakehouse.sql("alter table silver.categories_cdc_state add columns (renamed_later string)")
    with pytest.raises(DbtFailed, match="--full-refresh"):
        lakehouse.dbt.run("run", "-s", "categories_cdc_state")
    lakehouse.dbt.run("run", "-s", "categories_cdc_state", "--full-refresh")
    columns = [row[0] for row in lakehouse.sql("describe silver.categories_cdc_state")]
    assert "renamed_later" not in columns
    assert lakehouse.silver_differences(("category",)) == {}
