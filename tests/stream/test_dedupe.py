"""In-batch dedupe keeps the first row of every record key, judged by a plain-Python replay."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.stream.batch import dedupe


def first_per_key(rows: list[dict], keys: list[str]) -> list[dict]:
    seen, kept = set(), []
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key not in seen:
            seen.add(key)
            kept.append(row)
    return kept


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 5)), st.sampled_from(["p1", "p2", "p3"]),
                          st.integers(-(2**63), 2**63 - 1)), max_size=40))
def test_dedupe_matches_plain_python(triples):
    rows = [{"id": a, "pos": b, "payload": c} for a, b, c in triples]
    table = pa.Table.from_pylist(rows, schema=pa.schema([("id", pa.int32()), ("pos", pa.string()),
                                                         ("payload", pa.int64())]))
    assert dedupe(table, ["id", "pos"]).to_pylist() == first_per_key(rows, ["id", "pos"])
