"""Row groups of rewritten file slices: in commit order, few, and skippable by commit time.

The oracle for the data is the plain-Python ``Oracle`` of ``tests/hoodie/judge.py`` read back
with hudi-rs; the layout is checked on the parquet footers (row-group sizes and the min/max
statistics of ``_hoodie_commit_time``), not against sizes written down from the code.
"""

from __future__ import annotations

import math
import random

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.hoodie import HoodieTable, TableConfig
from ingestion.hoodie.basefile import tiered_row_groups
from tests.hoodie.data import DATA_COLUMNS, make_row, to_table
from tests.hoodie.judge import Oracle, hudi_incremental, hudi_snapshot, project


def _well_formed(groups: list[int], limit: int) -> bool:
    """Every group is over twice the next one, unless merging them would pass the limit."""
    return all(a > 2 * b or a + b > limit for a, b in zip(groups, groups[1:], strict=False))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5000), st.floats(0, 1)), min_size=1, max_size=60),
       st.sampled_from([10_000, 1_000_000]))
def test_row_groups_stay_few_and_ordered_as_commits_arrive(commits, limit):
    groups: list[int] = []
    for newest, kept_share in commits:
        carried = [math.floor(size * kept_share) for size in groups]  # rows dropped by updates/deletes
        groups = tiered_row_groups(carried, newest, limit)
        assert sum(groups) == sum(carried) + newest and all(size > 0 for size in groups)
        assert _well_formed(groups, limit)
        if limit >= sum(groups):
            assert len(groups) <= max(1, math.floor(math.log2(max(sum(groups), 1))) + 1)


def test_a_growing_file_keeps_older_commits_in_skippable_row_groups(tmp_path):
    rng = random.Random(5)
    cfg = TableConfig(name="grow", record_key_fields=("id",), precombine_field="seq", partition_fields=())
    table = HoodieTable.create_or_open(tmp_path / "grow", cfg)
    oracle = Oracle(("id",), (), "seq")
    instants, next_id, read_shares = [], 0, []
    with table.writer(small_file_bytes=64 * 1024 * 1024) as writer:
        for step in range(14):
            rows = [make_row(rng, next_id + k, step) for k in range(rng.randint(20, 400))]
            next_id += len(rows)
            if step % 5 == 4:  # an upsert of older keys too: carried row groups lose rows
                rows += [make_row(rng, k, 100 + step) for k in rng.sample(range(next_id - len(rows)), 15)]
            instant = writer.write(to_table([dict(r) for r in rows]), operation="upsert")
            oracle.apply(instant, rows, "upsert")
            instants.append(instant)
            files = table.latest_base_files()
            assert len(files) == 1, "every commit lands in the one small file group"
            metadata = pq.read_metadata(files[0].path)
            column = metadata.schema.to_arrow_schema().get_field_index("_hoodie_commit_time")
            stats = [metadata.row_group(i).column(column).statistics for i in range(metadata.num_row_groups)]
            sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
            assert _well_formed(sizes, 1_000_000) and len(sizes) <= math.log2(sum(sizes)) + 1
            # groups follow commit order: a reader of commits after any instant skips the groups before
            assert all(older.max <= newer.min for older, newer in zip(stats, stats[1:], strict=False))
            assert stats[-1].max == instant
            # rows a reader of this commit alone decodes: the groups its min/max cannot skip
            previous = instants[-2] if len(instants) > 1 else ""
            read = sum(size for size, stat in zip(sizes, stats, strict=True) if stat.max > previous)
            read_shares.append(read / sum(sizes))
    assert sorted(read_shares[3:])[len(read_shares[3:]) // 2] < 0.5, read_shares  # most reads skip most rows
    assert project(hudi_snapshot(table.base_path), DATA_COLUMNS) == project(oracle.snapshot(), DATA_COLUMNS)
    for start, end in zip(instants, instants[1:], strict=False):
        got = project(hudi_incremental(table.base_path, start, end), DATA_COLUMNS)
        assert got == project(oracle.incremental(start, end), DATA_COLUMNS)
