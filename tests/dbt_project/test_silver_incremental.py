"""The silver layer against a plain-Python replay oracle, through a real Thrift server.

Default suite: silver built, then incremental after changes (updates, deletes, a
delete + re-insert, late events, a truncate), compared row by row with the oracle each
time. Slow suite: full `dbt build` twice, full-refresh equality, a killed run, snapshots,
docs.
"""

from __future__ import annotations

import json
import re
import signal
import time

import pytest

from tests.dbt_project.conftest import DbtLakehouse

SILVER = ("+tag:silver",)


def test_silver_equals_oracle_before_and_after_incremental_changes(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", *SILVER)
    assert lakehouse.silver_differences() == {}

    changes_commit = lakehouse.commit(lakehouse.fixture.change_events())
    lakehouse.dbt.run("run", "-s", *SILVER)
    assert lakehouse.silver_differences() == {}

    # the watermark of every state model advanced to the changes' commit
    for state in ("users_cdc_state", "venues_cdc_state", "sales_cdc_state"):
        properties = dict(lakehouse.sql(f"show tblproperties silver.{state}"))
        assert properties["lakehouse.cdc_watermark"] == changes_commit, state


def _files_per_layer(lakehouse: DbtLakehouse) -> dict[str, frozenset[str]]:
    files: dict[str, set[str]] = {}
    rows = lakehouse.sql("select distinct state_layer, input_file_name() from silver.sales_cdc_state")
    for layer, path in rows:
        files.setdefault(layer, set()).add(path)
    return {layer: frozenset(paths) for layer, paths in files.items()}


def _delta_keys(lakehouse: DbtLakehouse) -> list[str]:
    rows = lakehouse.sql("select state_key from silver.sales_cdc_state where state_layer = 'delta'")
    return sorted(key for (key,) in rows)


def _change_sale(lakehouse: DbtLakehouse, sale_id: int) -> None:
    row = dict(lakehouse.fixture.rows["sale"][sale_id])
    lakehouse.fixture._put("sale", "u", dict(row, qtysold=row["qtysold"] % 8 + 1))
    lakehouse.commit(lakehouse.fixture.log.take())


def test_incremental_run_writes_only_the_changed_keys(lakehouse: DbtLakehouse) -> None:
    """A change to one sale leaves the base layer's files alone and writes that sale alone to the delta."""
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")
    before = _files_per_layer(lakehouse)
    assert set(before) == {"base"}
    _change_sale(lakehouse, 1)
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")
    after = _files_per_layer(lakehouse)
    assert after["base"] == before["base"]
    assert _delta_keys(lakehouse) == ["1"]

    _change_sale(lakehouse, 2)  # the next run keeps the earlier delta row and adds the new one
    lakehouse.dbt.run("run", "-s", "+sales", "+sales_cdc_state")
    assert _files_per_layer(lakehouse)["base"] == before["base"]
    assert _delta_keys(lakehouse) == ["1", "2"]
    assert lakehouse.silver_differences(("sale",)) == {}


def test_compaction_folds_the_delta_into_the_base(lakehouse: DbtLakehouse) -> None:
    """With a compaction ratio of 0 the run's post-hook folds the delta into base; silver stays equal to the oracle."""
    lakehouse.dbt.run("run", "-s", "+sales")
    _change_sale(lakehouse, 1)
    lakehouse.dbt.run("run", "-s", "+sales")
    base_before = _files_per_layer(lakehouse)["base"]
    assert _delta_keys(lakehouse) == ["1"]
    _change_sale(lakehouse, 3)
    changes_commit = lakehouse.sql("select max(_hoodie_commit_time) from bronze.sale")[0][0]
    lakehouse.dbt.run("run", "-s", "+sales", "--vars", "{silver_compaction_ratio: 0, silver_compaction_check_every: 1}")
    layers = _files_per_layer(lakehouse)
    assert set(layers) == {"base"} and layers["base"] != base_before
    for key in ("1", "3"):
        (count,) = lakehouse.sql(f"select count(*) from silver.sales_cdc_state where state_key = '{key}'")[0]
        assert count == 1, key
    properties = dict(lakehouse.sql("show tblproperties silver.sales_cdc_state"))
    assert properties["lakehouse.cdc_watermark"] == changes_commit
    (rows,) = lakehouse.sql("select count(*) from silver.sales_cdc_state")[0]
    assert properties["lakehouse.cdc_base_rows"] == str(rows)
    assert lakehouse.silver_differences(("sale",)) == {}


def test_compaction_is_checked_every_nth_run_with_a_known_window(lakehouse: DbtLakehouse) -> None:
    """With a window (synced instant) the delta is counted only every `silver_compaction_check_every` runs."""
    every_second_run = "{silver_compaction_ratio: 0, silver_compaction_check_every: 2}"
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")
    _change_sale(lakehouse, 1)
    lakehouse.dbt.run("run", "-s", "sales_cdc_state", "--vars", every_second_run)
    assert _delta_keys(lakehouse) == ["1"]  # not checked: the delta stays
    assert dict(lakehouse.sql("show tblproperties silver.sales_cdc_state"))["lakehouse.cdc_unchecked_runs"] == "1"
    _change_sale(lakehouse, 2)
    lakehouse.dbt.run("run", "-s", "sales_cdc_state", "sales", "--vars", every_second_run)
    assert set(_files_per_layer(lakehouse)) == {"base"}  # checked and compacted
    assert dict(lakehouse.sql("show tblproperties silver.sales_cdc_state"))["lakehouse.cdc_unchecked_runs"] == "0"
    assert lakehouse.silver_differences(("sale",)) == {}


def _run_log(lakehouse: DbtLakehouse) -> str:
    log = (lakehouse.dbt.work_dir / "logs" / "dbt.log").read_text(errors="replace")
    return log[log.rindex("Running with dbt="):]


def test_a_model_without_new_bronze_commits_runs_no_query(lakehouse: DbtLakehouse) -> None:
    """No commit after the watermark (by the bronze synced instant): no insert, no post-hook, watermark kept."""
    lakehouse.dbt.run("run", "-s", "+sales", "+users")
    before = {state: dict(lakehouse.sql(f"show tblproperties silver.{state}"))
              for state in ("sales_cdc_state", "users_cdc_state")}
    _change_sale(lakehouse, 1)  # a commit to bronze.sale only
    output = re.sub(r"\x1b\[[0-9;]*m", "", lakehouse.dbt.run("run", "-s", "sales_cdc_state", "users_cdc_state").stdout)
    log = _run_log(lakehouse)
    assert "insert overwrite table silver.sales_cdc_state" in log
    assert "insert overwrite table silver.users_cdc_state" not in log
    assert "alter table silver.users_cdc_state" not in log
    assert re.search(r"users_cdc_state .*\[OK \(no new commits\)", output), output
    after = {state: dict(lakehouse.sql(f"show tblproperties silver.{state}"))
             for state in ("sales_cdc_state", "users_cdc_state")}
    assert after["users_cdc_state"]["lakehouse.cdc_watermark"] == before["users_cdc_state"]["lakehouse.cdc_watermark"]
    sale_commit = dict(lakehouse.sql("show tblproperties bronze.sale"))["lakehouse.synced_instant"]
    assert after["sales_cdc_state"]["lakehouse.cdc_watermark"] == sale_commit
    assert lakehouse.silver_differences(("sale", "user")) == {}


def test_the_window_stops_at_the_synced_instant(lakehouse: DbtLakehouse) -> None:
    """Rows committed above the bronze view's synced instant (a sync still under way) wait for the next run."""
    lakehouse.dbt.run("run", "-s", "+sales")
    synced = dict(lakehouse.sql("show tblproperties bronze.sale"))["lakehouse.synced_instant"]
    _change_sale(lakehouse, 1)
    # as if the view's properties had not caught up with its files yet
    lakehouse.sql(f"alter table bronze.sale set tblproperties ('lakehouse.synced_instant' = '{synced}')")
    lakehouse.dbt.run("run", "-s", "sales_cdc_state")
    assert _delta_keys(lakehouse) == []
    assert dict(lakehouse.sql("show tblproperties silver.sales_cdc_state"))["lakehouse.cdc_watermark"] == synced
    _change_sale(lakehouse, 2)  # the next sync shows both changes
    lakehouse.dbt.run("run", "-s", "sales_cdc_state", "sales")
    assert _delta_keys(lakehouse) == ["1", "2"]
    assert lakehouse.silver_differences(("sale",)) == {}


def test_an_incremental_run_lists_bronze_once(lakehouse: DbtLakehouse) -> None:
    """The synced instants of every state model's bronze view come from one listing at run start."""
    lakehouse.dbt.run("run", "-s", "+sales", "+users", "+venues")
    _change_sale(lakehouse, 1)
    lakehouse.dbt.run("run", "-s", "sales_cdc_state", "users_cdc_state", "venues_cdc_state")
    log = _run_log(lakehouse)
    listing = re.compile(r"^\s*show table extended in bronze like", re.MULTILINE)
    assert len(listing.findall(log)) == 1, log
    assert "show tblproperties bronze." not in log
    assert log.index("on-run-start") < log.index("Began running node")  # before any model
    sale_commit = dict(lakehouse.sql("show tblproperties bronze.sale"))["lakehouse.synced_instant"]
    assert dict(lakehouse.sql("show tblproperties silver.sales_cdc_state"))["lakehouse.cdc_watermark"] == sale_commit
    assert lakehouse.silver_differences(("sale", "user", "venue")) == {}


def test_a_full_refresh_does_not_list_bronze(lakehouse: DbtLakehouse) -> None:
    """No window is read in a full refresh, so the on-run-start hook lists nothing."""
    lakehouse.dbt.run("run", "-s", "+sales", "--full-refresh")
    assert "show table extended in bronze" not in _run_log(lakehouse)


def test_bronze_without_a_synced_instant_is_read_from_the_watermark_on(lakehouse: DbtLakehouse) -> None:
    """A bronze relation without `lakehouse.synced_instant` (not synced by the ingestion): no window, same result."""
    lakehouse.dbt.run("run", "-s", "+sales")
    lakehouse.sql("alter table bronze.sale unset tblproperties ('lakehouse.synced_instant')")
    _change_sale(lakehouse, 1)
    lakehouse.sql("alter table bronze.sale unset tblproperties ('lakehouse.synced_instant')")
    changes_commit = lakehouse.sql("select max(_hoodie_commit_time) from bronze.sale")[0][0]
    lakehouse.dbt.run("run", "-s", "sales_cdc_state", "sales")
    assert "lakehouse.cdc_window" not in _run_log(lakehouse)
    assert _delta_keys(lakehouse) == ["1"]
    assert dict(lakehouse.sql("show tblproperties silver.sales_cdc_state"))["lakehouse.cdc_watermark"] == changes_commit
    assert lakehouse.silver_differences(("sale",)) == {}


@pytest.mark.slow
def test_dbt_build_twice_with_changes_between_passes_every_test(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("build")
    assert lakehouse.silver_differences() == {}
    lakehouse.commit(lakehouse.fixture.change_events())
    lakehouse.dbt.run("build")
    assert lakehouse.silver_differences() == {}


@pytest.mark.slow
def test_full_refresh_gives_identical_silver_and_gold(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("seed")  # gold dimensions join the seeds
    lakehouse.dbt.run("run")
    lakehouse.commit(lakehouse.fixture.change_events())
    lakehouse.dbt.run("run")
    relations = [f"silver.{t}" for t in ("users", "venues", "categories", "dates", "events", "listings", "sales")]
    relations += ["gold.fct_sales", "gold.fct_listings", "gold.dim_users", "gold.dim_venues",
                  "gold.rpt_event_sell_through", "gold.rpt_monthly_revenue_and_commission"]
    incremental = {r: lakehouse.relation_rows(r) for r in relations}
    lakehouse.dbt.run("run", "--full-refresh")
    refreshed = {r: lakehouse.relation_rows(r) for r in relations}
    for relation in relations:
        assert refreshed[relation] == incremental[relation], relation


@pytest.mark.slow
def test_killed_run_then_rerun_ends_in_the_same_silver(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", *SILVER)
    lakehouse.commit(lakehouse.fixture.change_events())
    process = lakehouse.dbt.start("run", "-s", *SILVER, "--threads", "1")
    output = []
    deadline = time.monotonic() + 900
    for line in process.stdout:  # kill right after the first state model committed
        output.append(line)
        if "OK created sql incremental model" in line or time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert any("OK created" in line for line in output), "".join(output[-20:])
    lakehouse.dbt.run("run", "-s", *SILVER)
    assert lakehouse.silver_differences() == {}


@pytest.mark.slow
def test_snapshot_twice_records_changed_rows_as_new_versions(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+users", "+venues")
    lakehouse.dbt.run("snapshot")
    fixture = lakehouse.fixture
    fixture._put("user", "u", dict(fixture.rows["user"][10], city="Elsewhere"))
    fixture.log.delete("user", fixture.rows["user"].pop(11))
    fixture._put("venue", "u", dict(fixture.rows["venue"][2], venueseats=4321))
    lakehouse.commit(fixture.log.take())
    lakehouse.dbt.run("run", "-s", "+users", "+venues")
    lakehouse.dbt.run("snapshot")
    users = lakehouse.sql("select user_id, city, dbt_valid_to is null from snapshots.users_history "
                          "where user_id in (10, 11, 12) order by user_id, dbt_valid_from")
    assert [(user_id, is_open) for user_id, _, is_open in users] == [(10, False), (10, True), (11, False), (12, True)]
    assert users[1][1] == "Elsewhere" and users[0][1] != "Elsewhere"
    venues = lakehouse.sql("select venue_seats, dbt_valid_to is null from snapshots.venues_history "
                           "where venue_id = 2 order by dbt_valid_from")
    assert venues == [(venues[0][0], False), (4321, True)]
    assert venues[0][0] != 4321


@pytest.mark.slow
def test_docs_generate_lists_every_model_with_its_columns(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("seed")
    lakehouse.dbt.run("run")
    lakehouse.dbt.run("docs", "generate")
    catalog = json.loads((lakehouse.dbt.work_dir / "target" / "catalog.json").read_text())
    manifest = json.loads((lakehouse.dbt.work_dir / "target" / "manifest.json").read_text())
    models = {k for k, v in manifest["nodes"].items() if v["resource_type"] == "model"}
    assert models <= set(catalog["nodes"]), models - set(catalog["nodes"])
    for key in models:
        documented = set(manifest["nodes"][key]["columns"])
        assert documented <= set(catalog["nodes"][key]["columns"]), key
