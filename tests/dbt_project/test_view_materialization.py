"""The project's view materialization leaves unchanged views alone and re-creates everything else."""

from __future__ import annotations

import json

from tests.dbt_project.conftest import DbtLakehouse


def _messages(lakehouse: DbtLakehouse) -> dict[str, str]:
    results = json.loads((lakehouse.dbt.work_dir / "target" / "run_results.json").read_text())
    return {r["unique_id"].split(".")[2]: r["message"] for r in results["results"]}


def _created_time(lakehouse: DbtLakehouse, relation: str) -> str:
    rows = lakehouse.sql(f"describe table extended {relation}")
    return next(row[1] for row in rows if row[0] == "Created Time")


def test_unchanged_view_is_skipped_and_any_other_is_recreated(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+categories")
    expected = lakehouse.relation_rows("silver.categories")
    assert expected, "the fixture has categories"
    created = _created_time(lakehouse, "silver.categories")

    # same definition: no statement, the view is the one created before
    lakehouse.dbt.run("run", "-s", "categories")
    assert _messages(lakehouse)["categories"] == "OK (unchanged)"
    assert _created_time(lakehouse, "silver.categories") == created

    # a different definition in the metastore: re-created from the model
    lakehouse.sql("create or replace view silver.categories as select 1 as category_id")
    lakehouse.dbt.run("run", "-s", "categories")
    assert _messages(lakehouse)["categories"] != "OK (unchanged)"
    assert lakehouse.relation_rows("silver.categories") == expected

    # dropped: created again
    lakehouse.sql("drop view silver.categories")
    lakehouse.dbt.run("run", "-s", "categories")
    assert _messages(lakehouse)["categories"] != "OK (unchanged)"
    assert lakehouse.relation_rows("silver.categories") == expected

    # --full-refresh always re-creates views
    lakehouse.dbt.run("run", "-s", "categories", "--full-refresh")
    assert _messages(lakehouse)["categories"] != "OK (unchanged)"
    assert lakehouse.relation_rows("silver.categories") == expected


def test_skipped_views_still_show_new_rows(lakehouse: DbtLakehouse) -> None:
    """A skipped view reads its tables by name: changes that land in them are visible."""
    lakehouse.dbt.run("run", "-s", "+users")
    before = lakehouse.relation_rows("silver.users")
    lakehouse.commit(lakehouse.fixture.change_events())  # updates, deletes, a re-insert, late events
    lakehouse.dbt.run("run", "-s", "+users")
    assert _messages(lakehouse)["users"] == "OK (unchanged)"
    assert _messages(lakehouse)["stg_crm__users"] == "OK (unchanged)"
    assert lakehouse.relation_rows("silver.users") != before
    assert lakehouse.silver_differences(("user",)) == {}
