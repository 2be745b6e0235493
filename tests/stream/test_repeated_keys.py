"""Whether a table's rows in a batch repeat a record key, from the workers' key hashes.

Judge: the same question answered in plain Python (a set of the key tuples) over chunks of
random keys; and the cases where hashes cannot answer (key types that differ between chunks,
floating-point keys, a chunk without hashes), which must say "unknown", so that every row
goes through the deduplication.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.stream.repeated_keys import RecordKeys, RowSelection, key_hashes, key_types

KEYS = ["id", "_cdc_position"]
SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("_cdc_position", pa.string()),
                    pa.field("payload", pa.int64())])


def _chunk(rows: list[tuple[int | None, str | None]], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], schema.field("id").type),
                     "_cdc_position": pa.array([r[1] for r in rows], schema.field("_cdc_position").type),
                     "payload": pa.array(range(len(rows)), pa.int64())}, schema=schema)


def _keys_of(chunks: list[pa.Table]) -> RecordKeys:
    found = RecordKeys()
    for chunk in chunks:
        found.add(key_types(chunk.schema, KEYS), key_hashes(chunk, KEYS))
    return found


_rows = st.lists(st.tuples(st.one_of(st.none(), st.integers(-3, 40)),
                           st.one_of(st.none(), st.sampled_from(["0-1", "0-2", "1-1", "", "1,1", "1-"]))),
                 max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(_rows, min_size=1, max_size=4))
def test_repeated_matches_a_count_of_the_keys(chunks) -> None:
    keys = [row for chunk in chunks for row in chunk]
    repeats = sum(1 for count in Counter(keys).values() if count > 1)  # distinct keys found twice or more
    assert _keys_of([_chunk(c) for c in chunks]).repeated(SCHEMA, KEYS).size == repeats
    # the same chunks as slices of one table (Arrow arrays with an offset into shared buffers)
    whole, start, slices = _chunk(keys), 0, []
    for chunk in chunks:
        slices.append(whole.slice(start, len(chunk)))
        start += len(chunk)
    repeated = _keys_of(slices).repeated(SCHEMA, KEYS)
    assert repeated.size == repeats
    # the rows split by those hashes: the repeating ones are exactly the rows of keys found twice
    for piece in slices:
        rows = list(zip(piece.column("id").to_pylist(), piece.column("_cdc_position").to_pylist(), strict=True))
        kept = RowSelection(tuple(KEYS), repeated, repeating=True).rows(piece)
        rest = RowSelection(tuple(KEYS), repeated, repeating=False).rows(piece)
        assert kept.column("payload").to_pylist() == [p for p, r in zip(piece.column("payload").to_pylist(), rows,
                                                                         strict=True) if Counter(keys)[r] > 1]
        assert kept.num_rows + rest.num_rows == piece.num_rows


def test_a_key_repeated_in_another_chunk_is_found() -> None:
    first = _chunk([(i, f"0-{i}") for i in range(10_000)])
    second = _chunk([(20_000 + i, f"0-{i}") for i in range(10_000)] + [(9_999, "0-9999")])
    assert _keys_of([first]).repeated(SCHEMA, KEYS).size == 0
    assert _keys_of([_chunk([(20_000 + i, f"0-{i}") for i in range(10_000)]), first]).repeated(SCHEMA, KEYS).size == 0
    repeated = _keys_of([first, second]).repeated(SCHEMA, KEYS)
    assert repeated.size == 1
    assert RowSelection(tuple(KEYS), repeated, repeating=True).rows(second).column("id").to_pylist() == [9_999]


def test_key_columns_are_hashed_apart_not_as_one_text() -> None:
    # ("1", "1-1") and ("11", "-1") would be one text if the columns were joined without a boundary
    schema = pa.schema([pa.field("id", pa.string()), pa.field("_cdc_position", pa.string())])
    chunk = pa.table({"id": ["1", "11"], "_cdc_position": ["1-1", "-1"]}, schema=schema)
    found = RecordKeys()
    found.add(key_types(schema, KEYS), key_hashes(chunk, KEYS))
    assert found.repeated(schema, KEYS).size == 0


def test_unprovable_cases_are_unknown() -> None:
    rows = [(1, "0-1"), (2, "0-2")]
    # the chunks hold the key in different types, or in another type than the write's
    wide = pa.schema([pa.field("id", pa.int64()), *list(SCHEMA)[1:]])
    assert _keys_of([_chunk(rows), _chunk([(3, "0-3")], wide)]).repeated(SCHEMA, KEYS) is None
    assert _keys_of([_chunk(rows)]).repeated(wide, KEYS) is None
    # floating-point keys: -0.0 and 0.0 are one value in Spark and two texts
    floats = pa.schema([pa.field("id", pa.float64()), *list(SCHEMA)[1:]])
    assert _keys_of([_chunk([(0.0, "p"), (1.0, "p")], floats)]).repeated(floats, KEYS) is None
    # a chunk without key hashes (or types)
    unknown = _keys_of([_chunk(rows)])
    unknown.add(None, None)
    assert unknown.repeated(SCHEMA, KEYS) is None
