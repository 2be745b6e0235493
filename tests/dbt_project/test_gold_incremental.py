"""The incremental gold models (fct_sales, fct_listings, dim_users) against a full rebuild.

After CDC that touches them in every way a fact can be touched (sales inserted and
deleted, a listing changed, users moved, deleted and re-inserted, a category renamed,
the venues truncated), an incremental run must leave exactly the rows a `--full-refresh`
builds from the same silver, and its Hudi commit (read by hudi-rs) must hold only the
rows that changed.
"""

from __future__ import annotations

import json

from hudi import HudiTableBuilder

from tests.dbt_project.conftest import DbtLakehouse

GOLD = ("gold.fct_sales", "gold.fct_listings", "gold.dim_users")
SELECT = ("+fct_sales", "+fct_listings", "+dim_users")


def _hudi_table(lakehouse: DbtLakehouse, relation: str):
    location = next(row[1] for row in lakehouse.sql(f"describe table extended {relation}") if row[0] == "Location")
    return HudiTableBuilder.from_base_uri(location.replace("file:", "", 1)).build()


def _writes(lakehouse: DbtLakehouse, relation: str) -> list[tuple[str, int, int, int]]:
    """(action, inserts, updates, deletes) of every completed write of a table, oldest first (hudi-rs)."""
    timeline = _hudi_table(lakehouse, relation).get_timeline()
    instants = sorted(timeline.get_completed_commits() + timeline.get_completed_deltacommits(),
                      key=lambda instant: instant.timestamp)
    out = []
    for instant in instants:
        stats = [s for group in json.loads(timeline.get_instant_metadata_in_json(instant))[
            "partitionToWriteStats"].values() for s in group]
        out.append((instant.action, sum(s["numInserts"] for s in stats), sum(s["numUpdateWrites"] for s in stats),
                    sum(s["numDeletes"] for s in stats)))
    return out


def test_incremental_gold_equals_a_full_rebuild_and_writes_only_what_changed(lakehouse: DbtLakehouse) -> None:
    lakehouse.dbt.run("seed")  # the gold dimensions join the seeds
    lakehouse.dbt.run("run", "-s", *SELECT)
    writes = {relation: _writes(lakehouse, relation) for relation in GOLD}
    lakehouse.dbt.run("run", "-s", *SELECT)  # nothing changed: nothing written
    assert {relation: _writes(lakehouse, relation) for relation in GOLD} == writes

    before = {relation: {row[0]: row for row in lakehouse.relation_rows(relation)} for relation in GOLD}

    lakehouse.commit(lakehouse.fixture.change_events())
    lakehouse.dbt.run("run", "-s", *SELECT)
    incremental = {relation: lakehouse.relation_rows(relation) for relation in GOLD}
    for relation in GOLD:
        # the run wrote exactly the rows that differ (new or changed: upserted; gone: deleted),
        # counted here by comparing the table's rows before and after (the key is the first column)
        after = {row[0]: row for row in incremental[relation]}
        changed = sum(1 for key, row in after.items() if before[relation].get(key) != row)
        gone = len(before[relation].keys() - after.keys())
        new_writes = _writes(lakehouse, relation)[len(writes[relation]):]
        assert all(action == "deltacommit" for action, *_ in new_writes), (relation, new_writes)
        assert (sum(w[1] + w[2] for w in new_writes), sum(w[3] for w in new_writes)) == (changed, gone), relation
        assert changed + gone > 0, relation
    # the CDC's venue truncate and category rename touch most facts; the users it changed only a few rows
    assert 0 < sum(w[1] + w[2] for w in _writes(lakehouse, "gold.dim_users")[len(writes["gold.dim_users"]):]) < 10
    # the sale the CDC deleted is gone; a deleted user's key is gone from dim_users
    assert lakehouse.sql("select count(*) from gold.fct_sales where sale_id = 7")[0][0] == 0
    assert lakehouse.sql("select count(*) from gold.dim_users where user_id = 4")[0][0] == 0
    # hudi-rs reads the merged rows (base files + logs) the way Spark does
    for relation in GOLD:
        rows = sum(batch.num_rows for batch in _hudi_table(lakehouse, relation).read())
        assert rows == len(incremental[relation]), relation

    lakehouse.dbt.run("run", "-s", "fct_sales", "fct_listings", "dim_users", "--full-refresh")
    for relation in GOLD:
        assert lakehouse.relation_rows(relation) == incremental[relation], relation
