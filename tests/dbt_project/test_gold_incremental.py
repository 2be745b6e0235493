"""Incremental gold facts (macros/incremental/fact_changes.sql): after incremental runs, every silver and gold
relation equals its full refresh, and a fact's commit writes only the rows that changed (read by hudi-rs)."""

from __future__ import annotations

import json
from decimal import Decimal

from hudi import HudiTableBuilder

from tests.dbt_project.cdc_fixture import _user
from tests.dbt_project.conftest import DbtLakehouse

SILVER = [f"silver.{t}" for t in ("users", "venues", "categories", "dates", "events", "listings", "sales")]
GOLD = [f"gold.{m}" for m in (
    "fct_sales", "fct_listings", "dim_users", "dim_events", "dim_venues", "dim_categories", "dim_dates",
    "rpt_daily_sales_by_category_and_venue_state", "rpt_event_sell_through", "rpt_monthly_revenue_and_commission",
    "rpt_top_buyers", "rpt_top_sellers",
)]


def _writes(lakehouse: DbtLakehouse, relation: str) -> list[dict]:
    """Per completed write of a Hudi table (delta commits and commits, in instant order): the records it
    wrote (inserted + updated) and deleted, from its commit metadata read by hudi-rs."""
    location = next(row[1] for row in lakehouse.sql(f"describe table extended {relation}") if row[0] == "Location")
    timeline = HudiTableBuilder.from_base_uri(location.replace("file:", "", 1)).build().get_timeline()
    instants = sorted(timeline.get_completed_commits() + timeline.get_completed_deltacommits(),
                      key=lambda instant: instant.timestamp)
    out = []
    for instant in instants:
        metadata = json.loads(timeline.get_instant_metadata_in_json(instant))
        stats = [s for group in metadata["partitionToWriteStats"].values() for s in group]
        out.append({"written": sum(s["numInserts"] + s["numUpdateWrites"] for s in stats),
                    "deleted": sum(s["numDeletes"] for s in stats),
                    "operation": metadata.get("operationType")})
    return out


def test_incremental_silver_and_gold_equal_a_full_refresh(lakehouse: DbtLakehouse) -> None:
    """Updates, deletes, a delete + re-insert, late events, a truncate and renames (the fixture's change
    events); then a compaction of the facts; then a sale of a user that does not exist yet, the user's
    arrival (a run where no sale changed: no fact row written), the sale's delete, a truncate of sales and
    a late sale event from before it: each incremental run
    leaves every relation as a full refresh builds it, and a fact commit writes only the changed sale. One
    test, one lake: the default suite stays under its 20 minutes."""
    lakehouse.dbt.run("seed")
    lakehouse.dbt.run("run", "--select", "tag:staging")  # silver's staging views (not in the job's selection)
    created = lakehouse.scheduled_run("tag:silver", "tag:gold")  # the job's first run: as written
    assert "rpt_event_sell_through" in created and "dim_users" in created
    lakehouse.commit(lakehouse.fixture.change_events())
    # the later runs are the hourly job's: the changed tables' lineage, no view re-created
    assert lakehouse.scheduled_run("tag:silver", "tag:gold") == []
    assert lakehouse.silver_differences() == {}
    for fact in ("gold.fct_sales", "gold.fct_listings"):
        lakehouse.sql(f"call run_compaction(op => 'scheduleandexecute', table => '{fact}')")

    fixture = lakehouse.fixture
    sale = dict(fixture.rows["sale"][1], salesid=9001, buyerid=9999)
    fixture._put("sale", "c", sale)
    lakehouse.commit(fixture.log.take())
    assert lakehouse.scheduled_run("tag:silver", "tag:gold") == []
    # a sale of a user silver does not hold keeps the source's key: the user is an inferred member
    assert lakehouse.sql("select buyer_id from gold.fct_sales where sale_id = 9001") == [(9999,)]
    assert lakehouse.sql("select is_inferred_member from gold.dim_users where user_id = 9999") == [(True,)]
    assert [w["written"] for w in _writes(lakehouse, "gold.fct_sales")][-1] == 1
    writes = len(_writes(lakehouse, "gold.fct_sales"))

    fixture._put("user", "c", _user(9999, fixture.rng))
    lakehouse.commit(fixture.log.take())
    assert lakehouse.scheduled_run("tag:silver", "tag:gold") == []
    # the late-arriving buyer replaces the inferred member, and no fact row is written
    assert lakehouse.sql("select is_inferred_member from gold.dim_users where user_id = 9999") == [(False,)]
    assert [(w["written"], w["deleted"]) for w in _writes(lakehouse, "gold.fct_sales")[writes:]] in ([], [(0, 0)])

    fixture.log.delete("sale", fixture.rows["sale"].pop(9001))
    lakehouse.commit(fixture.log.take())
    assert lakehouse.scheduled_run("tag:silver", "tag:gold") == []
    assert lakehouse.sql("select count(*) from gold.fct_sales where sale_id = 9001") == [(0,)]
    assert _writes(lakehouse, "gold.fct_sales")[-1]["deleted"] == 1

    # a truncate of sales and one new sale: every fact row recomputed, the new one left
    late = dict(fixture.rows["sale"][8], pricepaid=Decimal("1.00"))
    fixture.log.truncate("sale")
    fixture.rows["sale"].clear()
    fixture._put("sale", "c", dict(late, salesid=9002))
    lakehouse.commit(fixture.log.take())
    assert lakehouse.scheduled_run("tag:silver", "tag:gold") == []
    assert lakehouse.sql("select sale_id from gold.fct_sales") == [(9002,)]
    # then a sale event from before the truncate arrives late (a new offset, an older position): the state
    # keeps it (later offset), silver and the fact do not (the truncate's rule); the new sale changes
    fixture.log.emit("sale", "u", late, position=3, offset=fixture.log.fresh())
    fixture._put("sale", "u", dict(late, salesid=9002, qtysold=2))
    lakehouse.commit(fixture.log.take())
    assert lakehouse.scheduled_run("tag:silver", "tag:gold") == []
    assert lakehouse.sql("select cdc_position from silver.sales_cdc_state where sale_id = 8") == [(f"{3:024d}",)]
    assert lakehouse.sql("select sale_id, qty_sold from gold.fct_sales") == [(9002, 2)]

    incremental = {relation: lakehouse.relation_rows(relation) for relation in SILVER + GOLD}
    lakehouse.dbt.run("run", "--select", "tag:silver", "tag:gold", "--full-refresh")
    for relation in SILVER + GOLD:
        assert lakehouse.relation_rows(relation) == incremental[relation], relation

    # dbt's unit tests take the column types of inputs given without rows from the built parents
    lakehouse.dbt.run("test", "--select", "test_type:unit")
