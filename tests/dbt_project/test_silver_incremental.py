"""The silver layer against a plain-Python replay oracle, through a real Thrift server.

Default suite: silver built, then incremental after changes (updates, deletes, a
delete + re-insert, late events, a truncate), compared row by row with the oracle each
time. Slow suite: full `dbt build` twice, full-refresh equality, a killed run, snapshots,
docs.
"""

from __future__ import annotations

import json
import signal
import time

import pytest
from hudi import HudiTableBuilder

from tests.dbt_project.conftest import DbtLakehouse

SILVER = ("+tag:silver",)


def _watermark(lakehouse: DbtLakehouse, state: str) -> str:
    return lakehouse.sql(f"select max(bronze_commit_time) from silver.{state}")[0][0]


def test_silver_equals_oracle_before_and_after_incremental_changes(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", *SILVER)
    assert lakehouse.silver_differences() == {}

    instants = lakehouse.commit(lakehouse.fixture.change_events())
    lakehouse.dbt.run("run", "-s", *SILVER)
    assert lakehouse.silver_differences() == {}

    # the state models read the changes' commits (their newest rows come from them), and each state
    # commit records the bronze instant it read up to: the next run's watermark (read by hudi-rs)
    for state, table in (("users_cdc_state", "user"), ("venues_cdc_state", "venue"), ("sales_cdc_state", "sale")):
        assert _watermark(lakehouse, state) == instants[table], state
    for state, table in (("users_cdc_state", "user"), ("sales_cdc_state", "sale")):
        assert _state_commits(lakehouse, state)[-1]["extraMetadata"]["_lakehouse_bronze_instant"] == instants[table]


def _state_commits(lakehouse: DbtLakehouse, state: str) -> list[dict]:
    """The completed writes of a silver state table (a merge-on-read table's delta commits and compactions)
    in instant order, with their write stats, read by hudi-rs."""
    location = next(row[1] for row in lakehouse.sql(f"describe table extended silver.{state}")
                    if row[0] == "Location")
    table = HudiTableBuilder.from_base_uri(location.replace("file:", "", 1)).build()
    timeline = table.get_timeline()
    instants = sorted(timeline.get_completed_commits() + timeline.get_completed_deltacommits(),
                      key=lambda instant: instant.timestamp)
    return [json.loads(timeline.get_instant_metadata_in_json(i)) for i in instants]


def _written(commit: dict) -> tuple[int, int]:
    """(inserted, updated) records of a commit."""
    stats = [s for group in commit["partitionToWriteStats"].values() for s in group]
    return sum(s["numInserts"] for s in stats), sum(s["numUpdateWrites"] for s in stats)


def _change_sale(lakehouse: DbtLakehouse, sale_id: int) -> None:
    row = dict(lakehouse.fixture.rows["sale"][sale_id])
    lakehouse.fixture._put("sale", "u", dict(row, qtysold=row["qtysold"] % 8 + 1))
    lakehouse.commit(lakehouse.fixture.log.take())


def test_the_watermark_is_read_from_the_commit_metadata_after_a_compaction(lakehouse: DbtLakehouse) -> None:
    """A compaction is a commit without the state's recorded bronze instant: the next run still takes its
    watermark from the newest delta commit's metadata, not from a scan of the state, and reads the change."""
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")
    first, sale_id = list(lakehouse.fixture.rows["sale"])[:2]
    _change_sale(lakehouse, first)
    lakehouse.dbt.run("run", "-s", "sales_cdc_state")  # a delta commit: log files to compact
    lakehouse.sql("call run_compaction(op => 'scheduleandexecute', table => 'silver.sales_cdc_state', "
                  "options => 'hoodie.compact.inline.max.delta.commits=1')")
    assert _state_commits(lakehouse, "sales_cdc_state")[-1]["operationType"] == "COMPACT"
    log = lakehouse.dbt.work_dir / "logs" / "dbt.log"
    offset = log.stat().st_size
    _change_sale(lakehouse, sale_id)
    lakehouse.dbt.run("run", "-s", "sales_cdc_state")
    statements = log.read_text()[offset:]
    assert "show_commit_extra_metadata(table => 'silver.sales_cdc_state'" in statements
    assert "max(bronze_commit_time) as watermark" not in statements
    assert lakehouse.sql(f"select qty_sold from silver.sales_cdc_state where state_key = '{sale_id}'") == [
        (lakehouse.fixture.rows["sale"][sale_id]["qtysold"],)]


def test_incremental_run_merges_only_the_changed_keys(lakehouse: DbtLakehouse) -> None:
    """A change to one sale: the incremental run reads that one change and updates that one state row."""
    lakehouse.dbt.run("run", "-s", "+sales_cdc_state")
    commits = _state_commits(lakehouse, "sales_cdc_state")
    sales = lakehouse.sql("select count(*) from silver.sales_cdc_state")[0][0]
    assert _written(commits[-1]) == (sales, 0)
    _change_sale(lakehouse, 1)
    lakehouse.dbt.run("run", "-s", "+sales", "+sales_cdc_state")
    commits = _state_commits(lakehouse, "sales_cdc_state")
    assert _written(commits[-1]) == (0, 1)
    assert lakehouse.silver_differences(("sale",)) == {}


def test_merges_keep_the_larger_offset_whatever_the_source_positions(lakehouse: DbtLakehouse) -> None:
    """Each event is the only one of its key in the run (nothing to dedupe it against), so Hudi's ordering
    field (cdc_order, the Kafka offset) decides against the stored row:

    * sale 5: a late, older event (smaller offset and position) must not overwrite the stored newer row;
    * sale 6: the update of a transaction open while Debezium's snapshot ran (a larger offset, a smaller
      position than the stored snapshot row) must replace it. The unit test
      state_orders_a_key_by_offset_not_by_source_position covers the same case within one run.
    """
    lakehouse.dbt.run("run", "-s", "+sales")
    fixture = lakehouse.fixture
    stored = {key: {"position": position, "order": order} for key, position, order in lakehouse.sql(
        "select state_key, cdc_position, cdc_order from silver.sales_cdc_state where state_key in ('5', '6')")}
    late = fixture.log.emit("sale", "u", dict(fixture.rows["sale"][5], qtysold=99), position=1)
    assert f"{late['_cdc_kafka_offset']:020d}" < stored["5"]["order"]
    changed = dict(fixture.rows["sale"][6], qtysold=fixture.rows["sale"][6]["qtysold"] % 8 + 1)
    fixture.rows["sale"][6] = changed
    in_flight = fixture.log.emit("sale", "u", changed, position=fixture.positions["sale"][6] - 1,
                                 offset=fixture.log.fresh())
    assert in_flight["_cdc_position"] < stored["6"]["position"]
    lakehouse.commit(fixture.log.take())
    lakehouse.dbt.run("run", "-s", "sales_cdc_state", "sales")
    assert lakehouse.sql("select qty_sold from silver.sales where sale_id = 5")[0][0] != 99
    assert lakehouse.sql("select qty_sold from silver.sales where sale_id = 6")[0][0] == changed["qtysold"]
    assert lakehouse.silver_differences(("sale",)) == {}


def test_a_run_without_new_bronze_commits_changes_nothing(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("run", "-s", "+sales", "+users")
    before = {r: lakehouse.relation_rows(f"silver.{r}") for r in ("sales_cdc_state", "users_cdc_state")}
    watermarks = {r: _watermark(lakehouse, r) for r in before}
    commits = {r: len(_state_commits(lakehouse, r)) for r in before}
    lakehouse.dbt.run("run", "-s", "sales_cdc_state", "users_cdc_state")
    assert {r: lakehouse.relation_rows(f"silver.{r}") for r in before} == before
    assert {r: _watermark(lakehouse, r) for r in before} == watermarks
    # nothing read: a commit the run made (if any) wrote no record; a broken watermark filter
    # re-merging the whole change log would leave the same rows but update every one of them
    written = {r: [_written(c) for c in _state_commits(lakehouse, r)[commits[r]:]] for r in before}
    assert all(w == (0, 0) for ws in written.values() for w in ws), written


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
    committed = False
    deadline = time.monotonic() + 900
    for line in process.stdout:  # kill right after the first state model committed
        output.append(line)
        committed = "OK created sql incremental model" in line
        if committed or time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    # killed mid-run: one state model merged, the others not yet
    assert committed and process.returncode == -signal.SIGKILL, "".join(output[-20:])
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
